#include "rpc/rpc_status.h"

#include <grpcpp/support/status.h>
#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "proto/common.pb.h"

namespace basalt {
namespace {
namespace rpc_status_test_file {

TEST(RpcStatusTest, OkRoundTrips) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(RpcStatusTest, CodeMessageAndDetailCrossTheWire) {
  pb::ErrorDetailPB detail;
  detail.set_code(pb::ErrorDetailPB::NOT_THE_LEADER);
  detail.set_leader_uuid("ts-2");
  detail.mutable_leader_address()->set_host("127.0.0.1");
  detail.mutable_leader_address()->set_port(7050);
  absl::Status s = WithErrorDetail(absl::UnavailableError("not the leader"), detail);

  grpc::Status wire = ToGrpcStatus(s);
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(wire.error_message(), "not the leader");

  absl::Status back = FromGrpcStatus(wire);
  EXPECT_EQ(back.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(back.message(), "not the leader");
  std::optional<pb::ErrorDetailPB> got = GetErrorDetail(back);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->code(), pb::ErrorDetailPB::NOT_THE_LEADER);
  EXPECT_EQ(got->leader_uuid(), "ts-2");
  EXPECT_EQ(got->leader_address().port(), 7050u);
}

TEST(RpcStatusTest, NoDetailAndGarbageDetail) {
  EXPECT_FALSE(GetErrorDetail(FromGrpcStatus(ToGrpcStatus(absl::NotFoundError("x")))));
  // Details a newer or broken server sent that do not parse are dropped, not fatal.
  grpc::Status wire(grpc::StatusCode::INTERNAL, "boom", std::string("\xff\xff\xff", 3));
  absl::Status s = FromGrpcStatus(wire);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(GetErrorDetail(s));
}

TEST(RpcStatusTest, AppStatusPB) {
  pb::AppStatusPB pb;
  StatusToPB(absl::AlreadyExistsError("key 5"), &pb);
  absl::Status s = StatusFromPB(pb);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(), "key 5");
  pb.set_code(999);
  EXPECT_EQ(StatusFromPB(pb).code(), absl::StatusCode::kUnknown);
  pb.set_code(0);
  BASALT_EXPECT_OK(StatusFromPB(pb));
}

}  // namespace rpc_status_test_file
}  // namespace
}  // namespace basalt
