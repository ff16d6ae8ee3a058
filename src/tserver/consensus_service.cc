#include "tserver/consensus_service.h"

#include <optional>

#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/grpc_transport.h"
#include "consensus/raft_config.h"
#include "consensus/raft_role_pb.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/consensus.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "tserver/address_book.h"
#include "tserver/request_checks.h"
#include "tserver/ts_tablet_manager.h"

namespace basalt {
namespace {

absl::Status CheckPeerUuid(const std::string& uuid) {
  if (uuid.empty()) return absl::InvalidArgumentError("peer_uuid: empty");
  if (uuid.size() > 1024) return absl::InvalidArgumentError("peer_uuid: too long");
  return absl::OkStatus();
}

absl::StatusOr<HostPort> CheckAddress(const pb::HostPortPB& pb, const char* field) {
  if (pb.host().empty()) return absl::InvalidArgumentError(ToAbsl(StrCat(field, ": no host")));
  if (pb.port() == 0 || pb.port() > 65535) {
    return absl::InvalidArgumentError(ToAbsl(StrCat(field, ": bad port ", pb.port())));
  }
  return HostPort::FromPB(pb);
}

// The Raft change a request asks for. INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<ConfigChange> ToConfigChange(const pb::ChangeConfigRequestPB& request) {
  BASALT_RETURN_IF_ERROR(CheckPeerUuid(request.peer_uuid()));
  ConfigChange change;
  change.peer = request.peer_uuid();
  const auto type = request.member_type();
  const bool typed = type == pb::RaftPeerPB::VOTER || type == pb::RaftPeerPB::NON_VOTER;
  switch (request.type()) {
    case pb::ADD_PEER:
      if (!typed) return absl::InvalidArgumentError("member_type: VOTER or NON_VOTER expected");
      change.type = ConfigChange::Type::kAddLearner;
      change.promote = type == pb::RaftPeerPB::VOTER;
      return change;
    case pb::REMOVE_PEER:
      change.type = ConfigChange::Type::kRemovePeer;
      return change;
    case pb::MODIFY_PEER:
      if (!typed) return absl::InvalidArgumentError("member_type: VOTER or NON_VOTER expected");
      change.type = type == pb::RaftPeerPB::VOTER ? ConfigChange::Type::kPromoteLearner
                                                  : ConfigChange::Type::kDemoteVoter;
      return change;
    default:
      return absl::InvalidArgumentError(
          ToAbsl(StrCat("type: unknown change type ", static_cast<int>(request.type()))));
  }
}

class ConsensusServiceImpl final : public pb::ConsensusService::Service {
 public:
  explicit ConsensusServiceImpl(const ConsensusServiceContext& ctx) : ctx_(ctx) {}

  grpc::Status UpdateConsensus(grpc::ServerContext* context,
                               const pb::UpdateConsensusRequestPB* request,
                               pb::UpdateConsensusResponsePB* response) override {
    // The request belongs to this call: the transport moves the entries' data out of it.
    return ToGrpcStatus(
        ctx_.transport->HandleUpdate(const_cast<pb::UpdateConsensusRequestPB*>(request), response));
  }

  grpc::Status ChangeConfig(grpc::ServerContext* context, const pb::ChangeConfigRequestPB* request,
                            pb::ChangeConfigResponsePB* response) override {
    return ToGrpcStatus(DoChangeConfig(context, *request, response));
  }

  grpc::Status GetConsensusState(grpc::ServerContext* context,
                                 const pb::GetConsensusStateRequestPB* request,
                                 pb::GetConsensusStateResponsePB* response) override {
    return ToGrpcStatus(DoGetConsensusState(*request, response));
  }

  grpc::Status StartTabletCopy(grpc::ServerContext* context,
                               const pb::StartTabletCopyRequestPB* request,
                               pb::StartTabletCopyResponsePB* response) override {
    return ToGrpcStatus(DoStartTabletCopy(*request, response));
  }

 private:
  absl::Status DoChangeConfig(grpc::ServerContext* context,
                              const pb::ChangeConfigRequestPB& request,
                              pb::ChangeConfigResponsePB* response) {
    BASALT_RETURN_IF_ERROR(CheckDestUuid(request.dest_uuid(), ctx_.server_uuid));
    BASALT_RETURN_IF_ERROR(CheckTabletId(request.tablet_id()));
    BASALT_ASSIGN_OR_RETURN(ConfigChange change, ToConfigChange(request));
    std::optional<HostPort> address;
    if (request.type() == pb::ADD_PEER) {
      BASALT_ASSIGN_OR_RETURN(address, CheckAddress(request.peer_address(), "peer_address"));
    }
    std::optional<uint64_t> cas;
    if (request.has_cas_config_index()) cas = request.cas_config_index();
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<TabletReplica> replica,
                            ctx_.tablet_manager->Lookup(request.tablet_id()));
    // A new peer's address is needed as soon as its entry is appended (to reach it); one already
    // known is not replaced by a request that may yet be refused.
    if (address.has_value() && ctx_.address_book != nullptr &&
        !ctx_.address_book->Get(change.peer).has_value()) {
      ctx_.address_book->Set(change.peer, *address);
    }
    BASALT_ASSIGN_OR_RETURN(
        uint64_t index,
        replica->ChangeConfig(change, cas, RpcDeadline(context, ctx_.default_rpc_timeout)));
    if (address.has_value() && ctx_.address_book != nullptr) {
      ctx_.address_book->Set(change.peer, *address);
    }
    response->set_config_index(index);
    return absl::OkStatus();
  }

  absl::Status DoGetConsensusState(const pb::GetConsensusStateRequestPB& request,
                                   pb::GetConsensusStateResponsePB* response) {
    BASALT_RETURN_IF_ERROR(CheckDestUuid(request.dest_uuid(), ctx_.server_uuid));
    BASALT_RETURN_IF_ERROR(CheckTabletId(request.tablet_id()));
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<TabletReplica> replica,
                            ctx_.tablet_manager->Lookup(request.tablet_id()));
    RaftCore::Role role;
    BASALT_RETURN_IF_ERROR(replica->GetConsensusState(response->mutable_cstate(), &role));
    response->set_role(RaftRoleToPB(role));
    return absl::OkStatus();
  }

  absl::Status DoStartTabletCopy(const pb::StartTabletCopyRequestPB& request,
                                 pb::StartTabletCopyResponsePB* response) {
    BASALT_RETURN_IF_ERROR(CheckDestUuid(request.dest_uuid(), ctx_.server_uuid));
    BASALT_RETURN_IF_ERROR(CheckTabletId(request.tablet_id()));
    if (request.copy_peer_uuid().empty()) {
      return absl::InvalidArgumentError("copy_peer_uuid: empty");
    }
    if (request.copy_peer_uuid() == ctx_.server_uuid) {
      return absl::InvalidArgumentError("copy_peer_uuid: this server itself");
    }
    BASALT_ASSIGN_OR_RETURN(HostPort source,
                            CheckAddress(request.copy_peer_address(), "copy_peer_address"));
    BASALT_ASSIGN_OR_RETURN(
        uint64_t last, ctx_.tablet_manager->StartTabletCopy(
                           request.tablet_id(), request.copy_peer_uuid(), source.ToString(),
                           request.caller_term(), request.leader_log_first_index(),
                           request.caller_config_index(), request.leader_log_first_prev_term()));
    response->set_copied_last_index(last);
    return absl::OkStatus();
  }

  const ConsensusServiceContext ctx_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewConsensusService(const ConsensusServiceContext& ctx) {
  return std::make_unique<ConsensusServiceImpl>(ctx);
}

}  // namespace basalt
