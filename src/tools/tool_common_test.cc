// Tests of the CLI's global --timeout_ms: every cluster action against an address where nothing
// listens fails within about the timeout, naming what it could not reach.

#include "tools/tool_common.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "tools/command.h"

DECLARE_int64(timeout_ms);

namespace basalt::tools {
namespace {
namespace tool_common_test_file {

// A loopback port bound but not listening: connections to it are refused, and no other process
// can take it while this object lives.
class DeadPort {
 public:
  DeadPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(fd_, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~DeadPort() { close(fd_); }
  std::string address() const { return StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(ToolTimeoutTest, UnreachableMasterFailsWithinTheTimeout) {
  gflags::FlagSaver saver;
  FLAGS_timeout_ms = 1000;
  DeadPort dead;
  const std::string master = dead.address();
  // Through the client library (table count), direct master RPCs (table list, master list) and
  // ksck.
  const std::vector<std::vector<std::string>> commands = {
      {"table", "count", master, "t"}, {"table", "list", master},   {"master", "list", master},
      {"tserver", "list", master},     {"cluster", "ksck", master},
  };
  for (const auto& args : commands) {
    std::ostringstream out, err;
    const absl::Time start = absl::Now();
    const int rc = RunTool(AllCommands(), args, false, &out, &err);
    const absl::Duration took = absl::Now() - start;
    SCOPED_TRACE(StrCat(args[0], " ", args[1], ": ", err.str()));
    EXPECT_EQ(rc, 1);
    EXPECT_LT(took, absl::Seconds(10));
    EXPECT_NE(err.str().find("Error: "), std::string::npos);
    EXPECT_NE(err.str().find(master), std::string::npos) << "the message names the address";
  }
}

TEST(ToolTimeoutTest, HelpListsTheGlobalFlag) {
  std::ostringstream out, err;
  ASSERT_EQ(RunTool(AllCommands(), {}, /*help=*/true, &out, &err), 0);
  EXPECT_NE(out.str().find("Global flags"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("--timeout_ms=<int64>  (default: 30000)"), std::string::npos)
      << out.str();
}

TEST(ToolTimeoutTest, DeadlineFollowsTheFlag) {
  gflags::FlagSaver saver;
  FLAGS_timeout_ms = 1234;
  EXPECT_EQ(OperationTimeout().count(), 1234);
  const auto left = OperationDeadline() - std::chrono::system_clock::now();
  EXPECT_LE(left, std::chrono::milliseconds(1234 + 50));
  EXPECT_GT(left, std::chrono::milliseconds(1000));
  FLAGS_timeout_ms = 0;  // Clamped: never an already-expired deadline.
  EXPECT_EQ(OperationTimeout().count(), 1);
}

}  // namespace tool_common_test_file
}  // namespace
}  // namespace basalt::tools
