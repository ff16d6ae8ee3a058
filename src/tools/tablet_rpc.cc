#include "tools/tablet_rpc.h"

#include <grpcpp/grpcpp.h>

#include <optional>

#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "tools/master_rpc.h"
#include "tools/tool_common.h"

namespace basalt::tools {

std::string TabletServerAddress(const pb::ListTabletServersResponsePB::ServerPB& server) {
  return HostPort::FromPB(server.rpc_address()).ToString();
}

absl::StatusOr<pb::ListTabletServersResponsePB> ListTabletServers(const std::string& masters) {
  pb::ListTabletServersResponsePB servers;
  BASALT_RETURN_IF_ERROR(CallMaster(masters, &pb::MasterService::Stub::ListTabletServers,
                                    pb::ListTabletServersRequestPB(), &servers));
  return servers;
}

absl::StatusOr<LeaderReplica> FindLeader(const pb::ListTabletServersResponsePB& servers,
                                         const std::string& tablet_id, Deadline deadline) {
  std::optional<LeaderReplica> best;
  bool found = false;
  for (const auto& s : servers.servers()) {
    // A server the master has not heard from lately is skipped rather than waited for: it would
    // cost the whole deadline, and a leader that cannot heartbeat the master is unlikely to lead
    // for long.
    if (!s.live()) continue;
    const std::string address = TabletServerAddress(s);
    auto resp = ListTabletsOn(address, deadline);
    if (!resp.ok()) continue;
    for (const auto& t : resp->tablets()) {
      if (t.tablet_id() != tablet_id) continue;
      // A tombstone is not a replica: a server whose replica was removed keeps the tablet id.
      if (t.state() == pb::TABLET_DELETED) continue;
      found = true;
      if (t.role() == pb::LEADER && t.state() == pb::TABLET_RUNNING &&
          (!best || t.term() > best->term)) {
        best = LeaderReplica{s.uuid(), address, t.term()};
      }
    }
  }
  if (!found) return absl::NotFoundError(StrCat("no tablet server hosts tablet ", tablet_id));
  if (!best) return absl::NotFoundError(StrCat("tablet ", tablet_id, " has no leader"));
  return *best;
}

absl::StatusOr<LeaderReplica> FindLeader(const std::string& masters, const std::string& tablet_id) {
  BASALT_ASSIGN_OR_RETURN(pb::ListTabletServersResponsePB servers, ListTabletServers(masters));
  return FindLeader(servers, tablet_id, OperationDeadline());
}

absl::StatusOr<pb::ListTabletsResponsePB> ListTabletsOn(const std::string& address,
                                                        Deadline deadline) {
  auto stub = pb::TabletServerService::NewStub(NewChannel(address));
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  pb::ListTabletsResponsePB resp;
  BASALT_RETURN_IF_ERROR_PREPEND(
      FromGrpcStatus(stub->ListTablets(&ctx, pb::ListTabletsRequestPB(), &resp)),
      StrCat("tablet server at ", address));
  return resp;
}

absl::StatusOr<pb::TabletStatusPB> GetReplicaStatus(const std::string& address,
                                                    const std::string& tablet_id,
                                                    Deadline deadline) {
  BASALT_ASSIGN_OR_RETURN(pb::ListTabletsResponsePB resp, ListTabletsOn(address, deadline));
  for (const auto& t : resp.tablets()) {
    if (t.tablet_id() == tablet_id) return t;
  }
  return absl::NotFoundError(
      StrCat("the tablet server at ", address, " has no replica of tablet ", tablet_id));
}

absl::Status StepDownLeader(const LeaderReplica& leader, const std::string& tablet_id,
                            const std::string& new_leader_uuid, Deadline deadline) {
  pb::LeaderStepDownRequestPB req;
  req.set_dest_uuid(leader.uuid);
  req.set_tablet_id(tablet_id);
  req.set_new_leader_uuid(new_leader_uuid);
  pb::LeaderStepDownResponsePB resp;
  auto stub = pb::TabletServerAdminService::NewStub(NewChannel(leader.address));
  grpc::ClientContext rpc;
  rpc.set_deadline(deadline);
  BASALT_RETURN_IF_ERROR_PREPEND(FromGrpcStatus(stub->LeaderStepDown(&rpc, req, &resp)),
                                 StrCat("leader ", leader.uuid, " (", leader.address, ")"));
  return absl::OkStatus();
}

absl::StatusOr<pb::GetConsensusStateResponsePB> GetConsensusState(const std::string& uuid,
                                                                  const std::string& address,
                                                                  const std::string& tablet_id,
                                                                  Deadline deadline) {
  pb::GetConsensusStateRequestPB req;
  req.set_dest_uuid(uuid);
  req.set_tablet_id(tablet_id);
  pb::GetConsensusStateResponsePB resp;
  auto stub = pb::ConsensusService::NewStub(NewChannel(address));
  grpc::ClientContext rpc;
  rpc.set_deadline(deadline);
  BASALT_RETURN_IF_ERROR_PREPEND(FromGrpcStatus(stub->GetConsensusState(&rpc, req, &resp)),
                                 StrCat("tablet server ", uuid, " (", address, ")"));
  return resp;
}

absl::StatusOr<pb::ChangeConfigResponsePB> SendChangeConfig(const std::string& address,
                                                            const pb::ChangeConfigRequestPB& req,
                                                            Deadline deadline) {
  pb::ChangeConfigResponsePB resp;
  auto stub = pb::ConsensusService::NewStub(NewChannel(address));
  grpc::ClientContext rpc;
  rpc.set_deadline(deadline);
  BASALT_RETURN_IF_ERROR(FromGrpcStatus(stub->ChangeConfig(&rpc, req, &resp)));
  return resp;
}

}  // namespace basalt::tools
