#include "master/ts_admin_client.h"

#include <atomic>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/status_test_util.h"
#include "proto/tserver.grpc.pb.h"
#include "proto/tserver.pb.h"
#include "rpc/rpc_status.h"

namespace basalt {
namespace {
namespace ts_admin_client_test_file {

// Answers CreateTablet with ALREADY_EXISTS, DeleteTablet after its caller gives up, and
// AlterSchema with the requested version.
class FakeAdminService final : public pb::TabletServerAdminService::Service {
 public:
  grpc::Status CreateTablet(grpc::ServerContext*, const pb::CreateTabletRequestPB* req,
                            pb::CreateTabletResponsePB*) override {
    return ToGrpcStatus(absl::AlreadyExistsError("tablet " + req->tablet_id() + " exists"));
  }
  grpc::Status DeleteTablet(grpc::ServerContext* ctx, const pb::DeleteTabletRequestPB*,
                            pb::DeleteTabletResponsePB*) override {
    entered_.Notify();
    while (!ctx->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return grpc::Status::OK;
  }
  grpc::Status AlterSchema(grpc::ServerContext*, const pb::AlterSchemaRequestPB* req,
                           pb::AlterSchemaResponsePB* resp) override {
    resp->set_schema_version(req->schema().version());
    return grpc::Status::OK;
  }
  absl::Notification entered_;
};

TEST(TsAdminClientTest, GrpcCallsAndShutdownCancelsInFlight) {
  FakeAdminService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);

  auto client = NewGrpcTsAdminClient();
  pb::CreateTabletRequestPB create;
  create.set_tablet_id("t1");
  absl::Status s = client->CreateTablet(address, create);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("t1"), std::string_view::npos);
  pb::AlterSchemaRequestPB alter;
  alter.mutable_schema()->set_version(4);
  auto v = client->AlterSchema(address, alter);
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(*v, 4u);

  // A request that hangs is cancelled by Shutdown; later requests fail at once.
  std::atomic<int> code{-1};
  std::thread t([&] {
    code = static_cast<int>(client->DeleteTablet(address, pb::DeleteTabletRequestPB()).code());
  });
  service.entered_.WaitForNotification();
  client->Shutdown();
  t.join();
  EXPECT_EQ(code.load(), static_cast<int>(absl::StatusCode::kCancelled));
  EXPECT_EQ(client->CreateTablet(address, create).code(), absl::StatusCode::kUnavailable);
  server->Shutdown();
}

TEST(TsAdminClientTest, UnreachableServerIsAnError) {
  auto client = NewGrpcTsAdminClient();
  // Port 1 on loopback: nothing listens there.
  absl::Status s = client->DeleteTablet("127.0.0.1:1", pb::DeleteTabletRequestPB());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}

}  // namespace ts_admin_client_test_file
}  // namespace
}  // namespace basalt
