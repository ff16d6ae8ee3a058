// VirtualNetwork (netns.h) and ExternalMiniCluster's network_namespaces option with stand-in
// daemons. Needs root and `ip`; skips with the reason elsewhere.

#include "testing/netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/env.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "testing/external_mini_cluster.h"
#include "testing/testing_test_util.h"

namespace basalt {
namespace {
namespace netns_test_file {

using testing_util::ScopedEnvVar;
using testing_util::ScopedTestDir;

#define SKIP_WITHOUT_NAMESPACES()                                             \
  do {                                                                        \
    absl::Status available = VirtualNetwork::Available();                     \
    if (!available.ok()) GTEST_SKIP() << "network namespaces: " << available; \
  } while (0)

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

std::string ReadLog(const std::string& path) {
  std::string s;
  BASALT_EXPECT_OK(ReadFileToString(Env::Default(), path, &s)) << path;
  return s;
}

// A TCP socket created in the network namespace `netns_path` (empty: ours): a socket belongs to
// the namespace of the thread that made it, so a short-lived thread enters the namespace (setns
// changes only the calling thread's) and makes it. -1 on error.
int SocketIn(const std::string& netns_path) {
  int fd = -1;
  std::thread t([&] {
    if (!netns_path.empty()) {
      int ns = open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
      if (ns < 0) return;
      int r = setns(ns, CLONE_NEWNET);
      close(ns);
      if (r != 0) return;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  });
  t.join();
  return fd;
}

sockaddr_in Address(const std::string& host, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  CHECK_EQ(inet_pton(AF_INET, host.c_str(), &a.sin_addr), 1) << host;
  return a;
}

// A listening socket on `host`:<ephemeral port> in the namespace; returns the fd, sets *port.
int ListenIn(const std::string& netns_path, const std::string& host, uint16_t* port) {
  int fd = SocketIn(netns_path);
  CHECK_GE(fd, 0) << strerror(errno);
  sockaddr_in a = Address(host, 0);
  PCHECK(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) << host;
  PCHECK(listen(fd, 64) == 0);
  socklen_t len = sizeof(a);
  PCHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  *port = ntohs(a.sin_port);
  return fd;
}

// Connects from the namespace to host:port: OK once connected; DEADLINE_EXCEEDED if nothing
// answered within `timeout` (a silent drop); the socket error otherwise.
absl::Status ConnectFrom(const std::string& netns_path, const std::string& host, uint16_t port,
                         absl::Duration timeout) {
  int fd = SocketIn(netns_path);
  if (fd < 0) return PosixError("socket", errno);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  sockaddr_in a = Address(host, port);
  absl::Status s;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 && errno != EINPROGRESS) {
    s = PosixError(StrCat("connect to ", host), errno);
  } else {
    pollfd p{fd, POLLOUT, 0};
    int r = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (r == 0) {
      s = absl::DeadlineExceededError(StrCat("no answer from ", host));
    } else if (err != 0) {
      s = PosixError(StrCat("connect to ", host), err);
    }
  }
  close(fd);
  return s;
}

constexpr absl::Duration kAnswers = absl::Seconds(5);
constexpr absl::Duration kSilence = absl::Milliseconds(500);

TEST(RunIpCommandTest, ReturnsOutputOrTheCommandsError) {
  auto out = RunIpCommand({"-o", "link", "show", "lo"});
  if (absl::IsNotFound(out.status())) GTEST_SKIP() << out.status();
  BASALT_ASSERT_OK(out);
  EXPECT_NE(out->find("lo"), std::string::npos) << *out;
  auto bad = RunIpCommand({"link", "show", "no-such-link0"});
  ASSERT_TRUE(absl::IsInternal(bad.status())) << bad.status();
  // The command line, how it ended, and what `ip` said.
  EXPECT_NE(bad.status().message().find("`ip link show no-such-link0` exited with code 1"),
            std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("does not exist"), std::string::npos) << bad.status();
}

TEST(VirtualNetworkTest, HostsTalkUntilBlockedOneWayAndEverythingIsRemoved) {
  SKIP_WITHOUT_NAMESPACES();
  std::string bridge;
  std::vector<std::string> namespaces;
  {
    auto net = VirtualNetwork::Create();
    BASALT_ASSERT_OK(net);
    VirtualNetwork& n = **net;
    bridge = n.bridge_name();
    EXPECT_LE(bridge.size(), 15u) << bridge;
    for (const char* name : {"a", "b"}) {
      auto h = n.AddHost(name);
      BASALT_ASSERT_OK(h);
      namespaces.push_back(n.netns_path(*h));
      EXPECT_TRUE(Exists(namespaces.back())) << namespaces.back();
    }
    EXPECT_TRUE(Exists("/sys/class/net/" + bridge));
    EXPECT_EQ(n.address(0).substr(0, n.gateway_address().size() - 1),
              n.gateway_address().substr(0, n.gateway_address().size() - 1));
    EXPECT_NE(n.address(0), n.address(1));

    uint16_t port_a = 0, port_b = 0;
    int la = ListenIn(n.netns_path(0), n.address(0), &port_a);
    int lb = ListenIn(n.netns_path(1), n.address(1), &port_b);
    // Each host reaches the other, and the test process reaches both.
    BASALT_EXPECT_OK(ConnectFrom(n.netns_path(0), n.address(1), port_b, kAnswers));
    BASALT_EXPECT_OK(ConnectFrom(n.netns_path(1), n.address(0), port_a, kAnswers));
    BASALT_EXPECT_OK(ConnectFrom("", n.address(0), port_a, kAnswers));
    BASALT_EXPECT_OK(ConnectFrom("", n.address(1), port_b, kAnswers));

    BASALT_ASSERT_OK(n.Block(0, 1));
    EXPECT_TRUE(n.IsBlocked(0, 1));
    EXPECT_FALSE(n.IsBlocked(1, 0));
    BASALT_EXPECT_OK(n.Block(0, 1));  // Idempotent.
    // a's packets to b vanish silently: a's SYN, and a's SYN-ACK to b.
    absl::Status s = ConnectFrom(n.netns_path(0), n.address(1), port_b, kSilence);
    EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
    s = ConnectFrom(n.netns_path(1), n.address(0), port_a, kSilence);
    EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
    // The test process is never cut off.
    BASALT_EXPECT_OK(ConnectFrom("", n.address(0), port_a, kAnswers));
    BASALT_EXPECT_OK(ConnectFrom("", n.address(1), port_b, kAnswers));

    BASALT_ASSERT_OK(n.Unblock(0, 1));
    BASALT_EXPECT_OK(ConnectFrom(n.netns_path(0), n.address(1), port_b, kAnswers));
    BASALT_ASSERT_OK(n.Block(1, 0));
    BASALT_ASSERT_OK(n.UnblockAll());
    EXPECT_FALSE(n.IsBlocked(1, 0));
    BASALT_EXPECT_OK(ConnectFrom(n.netns_path(1), n.address(0), port_a, kAnswers));

    EXPECT_TRUE(absl::IsInvalidArgument(n.Block(0, 0)));
    EXPECT_TRUE(absl::IsInvalidArgument(n.Block(0, 2)));
    EXPECT_TRUE(absl::IsInvalidArgument(n.AddHost("x/y").status()));
    close(la);
    close(lb);
  }
  EXPECT_FALSE(Exists("/sys/class/net/" + bridge)) << bridge;
  for (const std::string& ns : namespaces) EXPECT_FALSE(Exists(ns)) << ns;
}

TEST(VirtualNetworkTest, RemovesWhatKilledTestProcessesLeftBehind) {
  SKIP_WITHOUT_NAMESPACES();
  // Names of a process that cannot exist (above the kernel's pid limit, 2^22).
  const std::string ns = "bs9999999x00-ts-0";
  const std::string bridge = "bs9999999x00br";
  BASALT_ASSERT_OK(RunIpCommand({"netns", "add", ns}).status());
  BASALT_ASSERT_OK(RunIpCommand({"link", "add", bridge, "type", "bridge"}).status());
  auto net = VirtualNetwork::Create();
  BASALT_ASSERT_OK(net);
  EXPECT_FALSE(Exists("/run/netns/" + ns));
  EXPECT_FALSE(Exists("/sys/class/net/" + bridge));
}

ExternalMiniClusterOptions StandInOptions() {
  ExternalMiniClusterOptions o;
  o.master_exe = "basalt-test-daemon";
  o.tserver_exe = "basalt-test-daemon";
  o.wait_for_tablet_servers = false;
  o.num_tablet_servers = 2;
  o.daemon_shutdown_timeout = absl::Seconds(10);
  return o;
}

TEST(ExternalMiniClusterNetnsTest, CutsNeedNamespaces) {
  ScopedTestDir tmp("emc_netns_test");
  ScopedEnvVar test_tmpdir("TEST_TMPDIR", tmp.path().c_str());
  ExternalMiniCluster cluster(StandInOptions());
  BASALT_ASSERT_OK(cluster.Start());
  EXPECT_EQ(cluster.network(), nullptr);
  EXPECT_TRUE(absl::IsFailedPrecondition(
      cluster.CutOneWay(cluster.tablet_server(0), cluster.tablet_server(1))));
  EXPECT_TRUE(absl::IsFailedPrecondition(cluster.Isolate(cluster.master())));
  EXPECT_TRUE(absl::IsFailedPrecondition(cluster.Heal()));
}

TEST(ExternalMiniClusterNetnsTest, DaemonsRunOnHostsOfTheirOwn) {
  SKIP_WITHOUT_NAMESPACES();
  ScopedTestDir tmp("emc_netns_test");
  ScopedEnvVar test_tmpdir("TEST_TMPDIR", tmp.path().c_str());
  std::string bridge;
  {
    ExternalMiniClusterOptions o = StandInOptions();
    o.network_namespaces = true;
    ExternalMiniCluster cluster(o);
    BASALT_ASSERT_OK(cluster.Start());
    VirtualNetwork* net = cluster.network();
    ASSERT_NE(net, nullptr);
    bridge = net->bridge_name();
    ASSERT_EQ(net->num_hosts(), 3);
    // master-0 is host 0, the tablet servers follow; each listens on its host's address.
    EXPECT_EQ(cluster.master()->rpc_address(), net->address(0) + ":7051");
    EXPECT_EQ(cluster.master_addresses(), cluster.master()->rpc_address());
    for (int i = 0; i < 2; ++i) {
      ExternalDaemon* ts = cluster.tablet_server(i);
      EXPECT_EQ(ts->rpc_address(), net->address(i + 1) + ":7050");
      EXPECT_EQ(ts->netns_path(), net->netns_path(i + 1));
      BASALT_EXPECT_OK(ConnectFrom("", net->address(i + 1), 7050, kAnswers));
      BASALT_EXPECT_OK(ConnectFrom(net->netns_path(0), net->address(i + 1), 7050, kAnswers));
      EXPECT_NE(ReadLog(ts->log_path()).find("(in network namespace " + ts->netns_path() + ")"),
                std::string::npos);
    }
    BASALT_ASSERT_OK(cluster.Isolate(cluster.tablet_server(0)));
    EXPECT_TRUE(net->IsBlocked(1, 0));
    EXPECT_TRUE(net->IsBlocked(0, 1));
    EXPECT_TRUE(net->IsBlocked(1, 2));
    EXPECT_FALSE(net->IsBlocked(0, 2));
    absl::Status s = ConnectFrom(net->netns_path(0), net->address(1), 7050, kSilence);
    EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
    BASALT_EXPECT_OK(ConnectFrom("", net->address(1), 7050, kAnswers));
    // Restarting keeps the host (and the cut).
    BASALT_ASSERT_OK(cluster.tablet_server(0)->Restart());
    BASALT_EXPECT_OK(ConnectFrom("", net->address(1), 7050, kAnswers));
    BASALT_ASSERT_OK(cluster.Heal());
    EXPECT_FALSE(net->IsBlocked(1, 0));
    BASALT_EXPECT_OK(ConnectFrom(net->netns_path(0), net->address(1), 7050, kAnswers));
    BASALT_ASSERT_OK(cluster.Partition({cluster.master()}, {cluster.tablet_server(1)}));
    EXPECT_TRUE(net->IsBlocked(0, 2));
    EXPECT_TRUE(net->IsBlocked(2, 0));
    EXPECT_FALSE(net->IsBlocked(0, 1));
    EXPECT_TRUE(absl::IsInvalidArgument(cluster.Isolate(nullptr)));
  }
  EXPECT_FALSE(Exists("/sys/class/net/" + bridge)) << bridge;
}

}  // namespace netns_test_file
}  // namespace
}  // namespace basalt
