#include "testing/reserved_port.h"
#include "common/status_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace basalt {
namespace {
namespace reserved_port_test_file {

// Binds a TCP socket to 127.0.0.1:port, with or without SO_REUSEPORT. Returns the fd or -1.
int BindLoopback(uint16_t port, bool reuseport) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool Connects(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

TEST(ReservedPortTest, ReservationsAreDistinctAndHeld) {
  std::vector<ReservedPort> ports;
  std::set<uint16_t> seen;
  for (int i = 0; i < 20; ++i) {
    auto p = ReservedPort::Reserve();
    BASALT_ASSERT_OK(p);
    EXPECT_NE(p->port(), 0);
    EXPECT_EQ(p->address(), "127.0.0.1:" + std::to_string(p->port()));
    EXPECT_TRUE(seen.insert(p->port()).second) << "port handed out twice: " << p->port();
    ports.push_back(*std::move(p));
  }
  // A plain bind (no SO_REUSEPORT) of a reserved port fails: nobody else gets it.
  EXPECT_EQ(BindLoopback(ports[0].port(), /*reuseport=*/false), -1);
  // Nobody listens on a reservation, so nothing connects to it.
  EXPECT_FALSE(Connects(ports[0].port()));
}

TEST(ReservedPortTest, ADaemonCanListenOnTheReservedPortAcrossRestarts) {
  auto p = ReservedPort::Reserve();
  BASALT_ASSERT_OK(p);
  for (int run = 0; run < 3; ++run) {
    int fd = BindLoopback(p->port(), /*reuseport=*/true);
    ASSERT_GE(fd, 0) << "run " << run;
    ASSERT_EQ(listen(fd, 4), 0);
    EXPECT_TRUE(Connects(p->port()));
    close(fd);  // The "daemon" exits; the reservation keeps the port.
    EXPECT_EQ(BindLoopback(p->port(), /*reuseport=*/false), -1);
  }
}

TEST(ReservedPortTest, ReleaseFreesThePortAndMoveTransfersOwnership) {
  auto p = ReservedPort::Reserve();
  BASALT_ASSERT_OK(p);
  uint16_t port = p->port();
  ReservedPort moved = *std::move(p);
  EXPECT_EQ(moved.port(), port);
  EXPECT_EQ(BindLoopback(port, /*reuseport=*/false), -1);
  { ReservedPort gone = std::move(moved); }
  int fd = BindLoopback(port, /*reuseport=*/false);
  EXPECT_GE(fd, 0) << "port " << port << " still held after release";
  if (fd >= 0) close(fd);
}

TEST(ReservedPortTest, BadHost) {
  EXPECT_EQ(ReservedPort::Reserve("not-an-ip").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReservedPort::Reserve("::1").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace reserved_port_test_file
}  // namespace
}  // namespace basalt
