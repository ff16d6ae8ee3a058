#include "master/master_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <vector>

#include "common/strings.h"
#include "consensus/raft_config.h"
#include "consensus/raft_role_pb.h"
#include "master/catalog_manager.h"
#include "master/master.h"
#include "master/master_peers.h"
#include "master/sys_catalog.h"
#include "proto/master.grpc.pb.h"
#include "proto/master.pb.h"
#include "rpc/rpc_status.h"

namespace basalt {

namespace {

class MasterServiceImpl final : public pb::MasterService::Service {
 public:
  explicit MasterServiceImpl(Master* master)
      : master_(master), catalog_(master->catalog_manager()) {}

  grpc::Status CreateTable(grpc::ServerContext*, const pb::CreateTableRequestPB* req,
                           pb::CreateTableResponsePB* resp) override {
    return Serve([&] { return catalog_->CreateTable(*req, resp); });
  }
  grpc::Status IsCreateTableDone(grpc::ServerContext*, const pb::IsCreateTableDoneRequestPB* req,
                                 pb::IsCreateTableDoneResponsePB* resp) override {
    return Serve([&] { return catalog_->IsCreateTableDone(*req, resp); });
  }
  grpc::Status DeleteTable(grpc::ServerContext*, const pb::DeleteTableRequestPB* req,
                           pb::DeleteTableResponsePB* resp) override {
    return Serve([&] { return catalog_->DeleteTable(*req, resp); });
  }
  grpc::Status AlterTable(grpc::ServerContext*, const pb::AlterTableRequestPB* req,
                          pb::AlterTableResponsePB* resp) override {
    return Serve([&] { return catalog_->AlterTable(*req, resp); });
  }
  grpc::Status IsAlterTableDone(grpc::ServerContext*, const pb::IsAlterTableDoneRequestPB* req,
                                pb::IsAlterTableDoneResponsePB* resp) override {
    return Serve([&] { return catalog_->IsAlterTableDone(*req, resp); });
  }
  grpc::Status ListTables(grpc::ServerContext*, const pb::ListTablesRequestPB* req,
                          pb::ListTablesResponsePB* resp) override {
    return Serve([&] { return catalog_->ListTables(*req, resp); });
  }
  grpc::Status GetTableSchema(grpc::ServerContext*, const pb::GetTableSchemaRequestPB* req,
                              pb::GetTableSchemaResponsePB* resp) override {
    return Serve([&] { return catalog_->GetTableSchema(*req, resp); });
  }
  grpc::Status GetTableLocations(grpc::ServerContext*, const pb::GetTableLocationsRequestPB* req,
                                 pb::GetTableLocationsResponsePB* resp) override {
    return Serve([&] { return catalog_->GetTableLocations(*req, resp); });
  }
  grpc::Status ChangeTServerState(grpc::ServerContext*, const pb::ChangeTServerStateRequestPB* req,
                                  pb::ChangeTServerStateResponsePB*) override {
    return Serve([&] { return catalog_->ChangeTServerState(*req); });
  }
  grpc::Status ListTabletServers(grpc::ServerContext*, const pb::ListTabletServersRequestPB*,
                                 pb::ListTabletServersResponsePB* resp) override {
    return Serve([&] {
      catalog_->ListTabletServers(resp);
      return absl::OkStatus();
    });
  }
  grpc::Status ListMasters(grpc::ServerContext*, const pb::ListMastersRequestPB*,
                           pb::ListMastersResponsePB* resp) override {
    std::vector<MasterPeer> peers = master_->peers();
    if (peers.empty()) peers.push_back({master_->uuid(), master_->rpc_address()});
    // The others are asked one after another, each for at most 2 s and all within 4 s: a down
    // master is listed with its error instead of delaying the answer much.
    const absl::Time deadline = absl::Now() + absl::Seconds(4);
    for (const MasterPeer& p : peers) {
      pb::ListMastersResponsePB::MasterPB* m = resp->add_masters();
      m->set_uuid(p.uuid);
      p.address.ToPB(m->mutable_rpc_address());
      if (p.uuid == master_->uuid()) {
        m->set_role(OwnRole());
        FillHttpAddress(m->mutable_http_address());
        continue;
      }
      auto reg = ::basalt::GetMasterRegistration(
          p.address,
          std::max(absl::ZeroDuration(), std::min(absl::Seconds(2), deadline - absl::Now())));
      if (reg.ok() && reg->uuid() != m->uuid()) {
        m->set_role(pb::UNKNOWN_ROLE);
        m->set_error(StrCat("address answers as master ", reg->uuid(), ", expected ", m->uuid(),
                            " (data directory replaced?)"));
      } else if (reg.ok()) {
        m->set_role(reg->role());
        if (reg->has_http_address()) *m->mutable_http_address() = reg->http_address();
      } else {
        m->set_role(pb::UNKNOWN_ROLE);
        m->set_error(std::string(reg.status().message()));
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status GetMasterRegistration(grpc::ServerContext*,
                                     const pb::GetMasterRegistrationRequestPB*,
                                     pb::GetMasterRegistrationResponsePB* resp) override {
    resp->set_uuid(master_->uuid());
    master_->rpc_address().ToPB(resp->mutable_rpc_address());
    resp->set_role(OwnRole());
    if (master_->webserver_port() > 0) FillHttpAddress(resp->mutable_http_address());
    for (const HostPort& a : master_->configured_masters()) a.ToPB(resp->add_master_addresses());
    resp->set_joining(master_->joining());
    for (const MasterPeer& p : master_->peers()) {
      // A single master forms no group; a joining one is in none yet.
      if (master_->joining() ||
          (master_->configured_masters().size() <= 1 && master_->peers().size() <= 1)) {
        break;
      }
      pb::RaftPeerPB* peer = resp->add_peers();
      peer->set_uuid(p.uuid);
      p.address.ToPB(peer->mutable_address());
    }
    return grpc::Status::OK;
  }
  grpc::Status AddMaster(grpc::ServerContext*, const pb::AddMasterRequestPB* req,
                         pb::AddMasterResponsePB* resp) override {
    return Serve([&]() -> absl::Status {
      if (!req->has_rpc_address()) {
        return absl::InvalidArgumentError("rpc_address: the new master's address is required");
      }
      absl::StatusOr<std::string> uuid = master_->AddMaster(HostPort::FromPB(req->rpc_address()));
      if (uuid.ok()) resp->set_uuid(*uuid);
      return uuid.status();
    });
  }
  grpc::Status RemoveMaster(grpc::ServerContext*, const pb::RemoveMasterRequestPB* req,
                            pb::RemoveMasterResponsePB* resp) override {
    return Serve([&]() -> absl::Status {
      std::optional<HostPort> address;
      if (req->has_rpc_address()) address = HostPort::FromPB(req->rpc_address());
      absl::StatusOr<std::string> uuid = master_->RemoveMaster(req->uuid(), address);
      if (uuid.ok()) resp->set_uuid(*uuid);
      return uuid.status();
    });
  }
  grpc::Status InstallCatalogSnapshot(grpc::ServerContext*,
                                      const pb::InstallCatalogSnapshotRequestPB* req,
                                      pb::InstallCatalogSnapshotResponsePB*) override {
    return ToGrpcStatus(
        master_->InstallCatalogSnapshot(req->leader_uuid(), req->dest_uuid(), req->snapshot()));
  }
  grpc::Status TSHeartbeat(grpc::ServerContext*, const pb::TSHeartbeatRequestPB* req,
                           pb::TSHeartbeatResponsePB* resp) override {
    // Every master with a loaded catalog keeps the soft state, so a new leader has it at once.
    absl::Status s = catalog_->CheckLoaded();
    if (s.ok()) {
      resp->set_master_uuid(master_->uuid());
      resp->set_leader_master(master_->is_leader());
      s = catalog_->ProcessHeartbeat(*req, resp);
      for (const MasterPeer& p : master_->peers()) {
        pb::RaftPeerPB* m = resp->add_masters();
        m->set_uuid(p.uuid);
        p.address.ToPB(m->mutable_address());
      }
    }
    return ToGrpcStatus(s);
  }

 private:
  pb::RaftRolePB OwnRole() const {
    if (!master_->catalog_open() || master_->joining()) return pb::UNKNOWN_ROLE;
    std::shared_ptr<RaftNode> node = master_->sys_catalog()->node();
    if (node != nullptr && IsLearner(node->config(), master_->uuid())) return pb::LEARNER;
    return RaftRoleToPB(master_->role());
  }

  // The web server's address: the RPC host with the web port.
  void FillHttpAddress(pb::HostPortPB* out) const {
    if (master_->webserver_port() <= 0) return;
    HostPort{master_->rpc_address().host, static_cast<uint16_t>(master_->webserver_port())}.ToPB(
        out);
  }

  template <typename Fn>
  grpc::Status Serve(Fn fn) {
    absl::Status s = catalog_->CheckReady();
    if (s.ok()) s = fn();
    return ToGrpcStatus(s);
  }

  Master* const master_;
  CatalogManager* const catalog_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewMasterService(Master* master) {
  return std::make_unique<MasterServiceImpl>(master);
}

}  // namespace basalt
