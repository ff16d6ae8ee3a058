#include "master/master_service.h"

#include <grpcpp/grpcpp.h>

#include "master/catalog_manager.h"
#include "master/master.h"
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
  grpc::Status ListTabletServers(grpc::ServerContext*, const pb::ListTabletServersRequestPB*,
                                 pb::ListTabletServersResponsePB* resp) override {
    return Serve([&] {
      catalog_->ListTabletServers(resp);
      return absl::OkStatus();
    });
  }
  grpc::Status ListMasters(grpc::ServerContext*, const pb::ListMastersRequestPB*,
                           pb::ListMastersResponsePB* resp) override {
    auto* m = resp->add_masters();
    m->set_uuid(master_->uuid());
    master_->rpc_address().ToPB(m->mutable_rpc_address());
    m->set_role(master_->is_leader() ? pb::LEADER : pb::FOLLOWER);
    return grpc::Status::OK;
  }
  grpc::Status TSHeartbeat(grpc::ServerContext*, const pb::TSHeartbeatRequestPB* req,
                           pb::TSHeartbeatResponsePB* resp) override {
    return Serve([&] {
      resp->set_master_uuid(master_->uuid());
      resp->set_leader_master(true);
      return catalog_->ProcessHeartbeat(*req, resp);
    });
  }

 private:
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
