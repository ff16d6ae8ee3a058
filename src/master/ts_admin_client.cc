#include "master/ts_admin_client.h"

#include <chrono>
#include <map>
#include <set>
#include <utility>

#include <gflags/gflags.h>
#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/consensus.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "proto/tserver.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"

DEFINE_int32(
    master_ts_rpc_timeout_ms, 10000,
    "Deadline of each admin request (CreateTablet, DeleteTablet, AlterSchema, ChangeConfig) the "
    "master sends to a tablet server.");

namespace basalt {

namespace {

class GrpcTsAdminClient : public TsAdminClient {
 public:
  absl::Status CreateTablet(const std::string& address,
                            const pb::CreateTabletRequestPB& request) override {
    pb::CreateTabletResponsePB response;
    return Call(address, [&](Stubs* stub, grpc::ClientContext* ctx) {
      return stub->admin->CreateTablet(ctx, request, &response);
    });
  }

  absl::Status DeleteTablet(const std::string& address,
                            const pb::DeleteTabletRequestPB& request) override {
    pb::DeleteTabletResponsePB response;
    return Call(address, [&](Stubs* stub, grpc::ClientContext* ctx) {
      return stub->admin->DeleteTablet(ctx, request, &response);
    });
  }

  absl::Status ChangeConfig(const std::string& address,
                            const pb::ChangeConfigRequestPB& request) override {
    pb::ChangeConfigResponsePB response;
    return Call(address, [&](Stubs* stub, grpc::ClientContext* ctx) {
      return stub->consensus->ChangeConfig(ctx, request, &response);
    });
  }

  void Shutdown() override {
    absl::MutexLock l(&mu_);
    shut_down_ = true;
    for (grpc::ClientContext* ctx : in_flight_) ctx->TryCancel();
  }

  absl::StatusOr<uint32_t> AlterSchema(const std::string& address,
                                       const pb::AlterSchemaRequestPB& request) override {
    pb::AlterSchemaResponsePB response;
    absl::Status s = Call(address, [&](Stubs* stub, grpc::ClientContext* ctx) {
      return stub->admin->AlterSchema(ctx, request, &response);
    });
    if (!s.ok()) return s;
    return response.schema_version();
  }

 private:
  // One channel per address, shared by both services.
  struct Stubs {
    std::unique_ptr<pb::TabletServerAdminService::Stub> admin;
    std::unique_ptr<pb::ConsensusService::Stub> consensus;
  };

  template <typename Fn>
  absl::Status Call(const std::string& address, Fn fn) ABSL_LOCKS_EXCLUDED(mu_) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(FLAGS_master_ts_rpc_timeout_ms));
    std::shared_ptr<Stubs> stub;
    {
      absl::MutexLock l(&mu_);
      if (shut_down_) return absl::UnavailableError("the master is shutting down");
      auto& s = stubs_[address];
      if (s == nullptr) {
        s = std::make_shared<Stubs>();
        std::shared_ptr<grpc::Channel> channel = NewChannel(address);
        s->admin = pb::TabletServerAdminService::NewStub(channel);
        s->consensus = pb::ConsensusService::NewStub(channel);
      }
      stub = s;
      in_flight_.insert(&ctx);
    }
    absl::Status status = FromGrpcStatus(fn(stub.get(), &ctx));
    absl::MutexLock l(&mu_);
    in_flight_.erase(&ctx);
    return status;
  }

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::set<grpc::ClientContext*> in_flight_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Stubs>> stubs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<TsAdminClient> NewGrpcTsAdminClient() {
  return std::make_unique<GrpcTsAdminClient>();
}

}  // namespace basalt
