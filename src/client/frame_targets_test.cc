#include "client/frame_targets.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/time/clock.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "proto/tserver.pb.h"
#include "rpc/frame_server.h"

namespace basalt::client::internal {
namespace {
namespace frame_targets_test_file {

constexpr int kMethod = 7;

// A frame server answering kMethod with the scanner id of a ScannerKeepAliveRequestPB, reversed.
std::unique_ptr<FrameServer> StartServer(uint16_t port = 0) {
  FrameServerOptions o;
  o.bind_address = StrCat("127.0.0.1:", port);
  auto server = std::make_unique<FrameServer>(o);
  server->Register(kMethod, [](std::string_view request, absl::Time, std::string* response) {
    pb::ScannerKeepAliveRequestPB req;
    if (!req.ParseFromArray(request.data(), static_cast<int>(request.size()))) {
      return absl::InvalidArgumentError("does not parse");
    }
    pb::ScannerKeepAliveRequestPB out;
    out.set_scanner_id(std::string(req.scanner_id().rbegin(), req.scanner_id().rend()));
    out.SerializeToString(response);
    return absl::OkStatus();
  });
  absl::Status s = server->Start();
  EXPECT_TRUE(s.ok()) << s;
  return server;
}

// Calls kMethod on the server at gRPC address `address`; std::nullopt: the caller must use gRPC.
std::optional<absl::Status> Echo(FrameTargets* targets, const std::string& address,
                                 std::string* answer) {
  pb::ScannerKeepAliveRequestPB req;
  req.set_scanner_id("abc");
  std::string bytes;
  std::optional<absl::Status> s =
      targets->Call(address, kMethod, req, absl::Now() + absl::Seconds(10), &bytes);
  if (s.has_value() && s->ok()) {
    pb::ScannerKeepAliveRequestPB out;
    EXPECT_TRUE(out.ParseFromString(bytes));
    *answer = out.scanner_id();
  }
  return s;
}

TEST(FrameTargetsTest, CallsLearnedServersAndLeavesTheOthersToGrpc) {
  auto server = StartServer();
  FrameTargets targets(/*enabled=*/true);
  std::string answer;
  EXPECT_FALSE(Echo(&targets, "ts-a:7050", &answer).has_value()) << "nothing learned yet";

  targets.Learn("ts-a:7050", StrCat("127.0.0.1:", server->port()));
  std::optional<absl::Status> s = Echo(&targets, "ts-a:7050", &answer);
  ASSERT_TRUE(s.has_value());
  BASALT_EXPECT_OK(*s);
  EXPECT_EQ(answer, "cba");
  EXPECT_FALSE(Echo(&targets, "ts-b:7050", &answer).has_value()) << "another server";

  // The server stops advertising a frame port: gRPC again.
  targets.Learn("ts-a:7050", "");
  EXPECT_FALSE(Echo(&targets, "ts-a:7050", &answer).has_value());
}

TEST(FrameTargetsTest, DisabledTargetsNeverCall) {
  auto server = StartServer();
  FrameTargets targets(/*enabled=*/false);
  targets.Learn("ts-a:7050", StrCat("127.0.0.1:", server->port()));
  std::string answer;
  EXPECT_FALSE(Echo(&targets, "ts-a:7050", &answer).has_value());
  EXPECT_EQ(server->connections_accepted(), 0);
}

TEST(FrameTargetsTest, AnUnreachablePortMeansGrpcForAWhile) {
  // A port nobody listens on: bound once, then released.
  uint16_t port = 0;
  {
    auto probe = StartServer();
    port = static_cast<uint16_t>(probe->port());
  }
  FrameTargets targets(/*enabled=*/true);
  targets.Learn("ts-a:7050", StrCat("127.0.0.1:", port));
  std::string answer;
  EXPECT_FALSE(Echo(&targets, "ts-a:7050", &answer).has_value()) << "connect refused: gRPC";

  // Within FrameTargets::kRetryAfter the port is not tried again, even once it listens.
  auto server = StartServer(port);
  EXPECT_FALSE(Echo(&targets, "ts-a:7050", &answer).has_value());
  EXPECT_EQ(server->connections_accepted(), 0);

  // A new address (the server restarted on another port) is used at once.
  auto moved = StartServer();
  targets.Learn("ts-a:7050", StrCat("127.0.0.1:", moved->port()));
  std::optional<absl::Status> s = Echo(&targets, "ts-a:7050", &answer);
  ASSERT_TRUE(s.has_value());
  BASALT_EXPECT_OK(*s);
  EXPECT_EQ(answer, "cba");
}

TEST(FrameTargetsTest, ServerErrorsAreTheCallsStatus) {
  auto server = StartServer();
  FrameTargets targets(/*enabled=*/true);
  targets.Learn("ts-a:7050", StrCat("127.0.0.1:", server->port()));
  pb::ScannerKeepAliveRequestPB req;
  std::string bytes;
  // A method the server does not serve: its UNIMPLEMENTED, not a fallback to gRPC.
  std::optional<absl::Status> s =
      targets.Call("ts-a:7050", kMethod + 1, req, absl::Now() + absl::Seconds(10), &bytes);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->code(), absl::StatusCode::kUnimplemented) << *s;
}

}  // namespace frame_targets_test_file
}  // namespace
}  // namespace basalt::client::internal
