// `basalt tablet leader_step_down`: asks a tablet's current leader to step down (docs/cli.md).

#include <gflags/gflags.h>

#include <chrono>
#include <memory>

#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "tools/master_rpc.h"
#include "tools/tool_common.h"

DEFINE_string(new_leader_uuid, "",
              "UUID of the replica leader_step_down transfers leadership to; empty: any replica "
              "may win the election that follows.");

namespace basalt::tools {

namespace {

struct LeaderReplica {
  std::string uuid;
  std::string address;
  uint64_t term = 0;
};

// Asks every live tablet server of the cluster for `tablet_id`; returns the replica that reports
// itself LEADER (the highest term if several do). NOT_FOUND if none does.
absl::StatusOr<LeaderReplica> FindLeader(const std::string& masters, const std::string& tablet_id) {
  pb::ListTabletServersResponsePB servers;
  BASALT_RETURN_IF_ERROR(CallMaster(masters, &pb::MasterService::Stub::ListTabletServers,
                                    pb::ListTabletServersRequestPB(), &servers));
  std::optional<LeaderReplica> best;
  bool found = false;
  for (const auto& s : servers.servers()) {
    if (!s.live()) continue;
    const std::string address = StrCat(s.rpc_address().host(), ":", s.rpc_address().port());
    auto stub = pb::TabletServerService::NewStub(NewChannel(address));
    grpc::ClientContext ctx;
    ctx.set_deadline(OperationDeadline());
    pb::ListTabletsResponsePB resp;
    if (!stub->ListTablets(&ctx, pb::ListTabletsRequestPB(), &resp).ok()) continue;
    for (const auto& t : resp.tablets()) {
      if (t.tablet_id() != tablet_id) continue;
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

absl::Status LeaderStepDown(const ActionContext& ctx) {
  const std::string& tablet_id = ctx.args[1];
  BASALT_ASSIGN_OR_RETURN(LeaderReplica leader, FindLeader(ctx.args[0], tablet_id));
  pb::LeaderStepDownRequestPB req;
  req.set_dest_uuid(leader.uuid);
  req.set_tablet_id(tablet_id);
  req.set_new_leader_uuid(FLAGS_new_leader_uuid);
  pb::LeaderStepDownResponsePB resp;
  auto stub = pb::TabletServerAdminService::NewStub(NewChannel(leader.address));
  grpc::ClientContext rpc;
  rpc.set_deadline(OperationDeadline());
  BASALT_RETURN_IF_ERROR_PREPEND(FromGrpcStatus(stub->LeaderStepDown(&rpc, req, &resp)),
                                 StrCat("leader ", leader.uuid, " (", leader.address, "): "));
  *ctx.out << "Leader " << leader.uuid << " (" << leader.address << ", term " << leader.term
           << ") of tablet " << tablet_id << " stepped down"
           << (FLAGS_new_leader_uuid.empty() ? "" : StrCat(" in favour of ", FLAGS_new_leader_uuid))
           << "\n";
  return absl::OkStatus();
}

}  // namespace

Command TabletCommand() {
  return {"tablet",
          "Operate on tablets",
          {{"leader_step_down",
            "Make a tablet's leader step down",
            "Finds the replica that leads the tablet (asking every live tablet server) and asks "
            "it to step down; with --new_leader_uuid, to transfer leadership to that replica.",
            {MasterAddressesArg(), {"tablet_id", "The tablet's id (see table describe)"}},
            {"new_leader_uuid"},
            LeaderStepDown}}};
}

}  // namespace basalt::tools
