// basalt-test-daemon: a stand-in for basalt-master / basalt-tserver used by the harness's own
// tests (testing_test). It takes the flags the harness passes to real daemons, opens its data
// directory like them (ServerInstance: stable uuid, directory lock), listens on
// --rpc_bind_addresses with SO_REUSEPORT as gRPC does, writes --server_dump_info_path, and waits
// for SIGTERM. --test_daemon_mode makes it misbehave in the ways the harness must report.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/env.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "rpc/net_util.h"
#include "server/server_instance.h"

DEFINE_string(fs_data_dir, "", "Directory where the test daemon keeps its instance file.");
DEFINE_string(rpc_bind_addresses, "127.0.0.1:0", "Address the test daemon listens on.");
DEFINE_string(server_dump_info_path, "", "Where the test daemon writes its info file.");
DEFINE_string(master_addresses, "", "Ignored; accepted like basalt-tserver does.");
DEFINE_int32(heartbeat_interval_ms, 1000, "Ignored; accepted like basalt-tserver does.");
DEFINE_int64(tserver_unresponsive_timeout_ms, 15000, "Ignored; accepted like basalt-master does.");
DEFINE_int32(webserver_port, 0, "Ignored; accepted like both daemons do.");
DEFINE_string(test_daemon_mode, "normal",
              "Selects how the test daemon behaves: normal, exit_before_info (exits with code 3), "
              "never_write_info, malformed_info, wrong_pid, ignore_sigterm, exit_on_sigterm_with_"
              "code_2.");

namespace basalt {
namespace {

// Listens on `address` with SO_REUSEPORT; returns the port, or dies (a test helper).
int Listen(const std::string& address) {
  auto hp = ParseHostPort(address, 0);
  CHECK(hp.ok()) << hp.status();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(hp->port);
  CHECK_EQ(inet_pton(AF_INET, hp->host.c_str(), &addr.sin_addr), 1) << hp->host;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  PCHECK(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == 0);
  PCHECK(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) << "bind " << address;
  PCHECK(listen(fd, 16) == 0);
  socklen_t len = sizeof(addr);
  PCHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  return ntohs(addr.sin_port);
}

int Main(int argc, char** argv) {
  InitDaemon(&argc, &argv, "A stand-in daemon for the test harness's tests.");
  const std::string mode = FLAGS_test_daemon_mode;
  LOG(INFO) << "test daemon starting, mode " << mode;
  Env* env = Env::Default();
  auto instance = ServerInstance::Open(env, FLAGS_fs_data_dir, "test");
  CHECK(instance.ok()) << instance.status();
  if (mode == "exit_before_info") {
    LOG(ERROR) << "exiting before writing the info file, as asked";
    return 3;
  }
  int port = Listen(FLAGS_rpc_bind_addresses);
  if (mode == "malformed_info") {
    CHECK(WriteFileAtomically(env, FLAGS_server_dump_info_path, "{\"uuid\": 12").ok());
  } else if (mode == "wrong_pid") {
    CHECK(WriteFileAtomically(env, FLAGS_server_dump_info_path,
                              StrCat("{\"uuid\": \"", (*instance)->uuid(),
                                     "\", \"rpc_port\": ", port, ", \"http_port\": 0, \"pid\": 1}"))
              .ok());
  } else if (mode != "never_write_info") {
    CHECK(WriteServerInfo(env, FLAGS_server_dump_info_path, (*instance)->uuid(), port, 0).ok());
  }
  LOG(INFO) << "serving on port " << port;
  while (true) {
    int sig = WaitForTerminationSignal();
    LOG(INFO) << "got signal " << sig;
    if (mode == "ignore_sigterm") continue;
    if (mode == "exit_on_sigterm_with_code_2") return 2;
    return 0;
  }
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) { return basalt::Main(argc, argv); }
