#include "tools/local_cluster.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/env.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "gtest/gtest.h"

namespace basalt::tools {
namespace {
namespace local_cluster_test_file {

namespace fs = std::filesystem;

// Where basalt-master and basalt-tserver are: $BASALT_BIN_DIR, else the build's bin/ (this test
// is build/src/tools/tools_test).
std::string TestBinDir() {
  const char* env = getenv("BASALT_BIN_DIR");
  if (env != nullptr && *env != '\0') return env;
  return (fs::read_symlink("/proc/self/exe").parent_path() / ".." / ".." / "bin")
      .lexically_normal()
      .string();
}

// A port that is free right now (tests never use the well-known 7051).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string ReadFile(const std::string& path) {
  std::string data;
  BASALT_EXPECT_OK(ReadFileToString(Env::Default(), path, &data)) << path;
  return data;
}

// Pids of every process whose command line mentions `dir`.
std::vector<int> ProcessesMentioning(const std::string& dir) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline;
    if (!ReadFileToString(Env::Default(), entry.path() / "cmdline", &cmdline).ok()) continue;
    if (cmdline.find(dir) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

int ParentPid(int pid) {
  std::string stat = ReadFile(StrCat("/proc/", pid, "/stat"));
  // "pid (comm) state ppid ..."; comm may hold spaces, so parse after the last ')'.
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::string state;
  int ppid = 0;
  in >> state >> ppid;
  return ppid;
}

class LocalClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    std::string parent = tmp != nullptr && *tmp != '\0' ? tmp : ::testing::TempDir();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = (fs::path(parent) / StrCat("local_cluster_test-", info->name(), "-", getpid()))
                .lexically_normal()
                .string();
    fs::remove_all(root_);
    fs::create_directories(root_);
    dir_ = JoinPath(root_, "cluster");
  }

  void TearDown() override {
    // Never leave daemons behind, whatever failed.
    if (fs::exists(JoinPath(dir_, "cluster.json"))) {
      StopLocalCluster(dir_, nullptr).IgnoreError();
    }
    for (int pid : ProcessesMentioning(root_)) kill(pid, SIGKILL);
    fs::remove_all(root_);
  }

  LocalClusterOptions Options(int num_tablet_servers = 2) {
    LocalClusterOptions o;
    o.dir = dir_;
    o.num_tablet_servers = num_tablet_servers;
    o.bin_dir = TestBinDir();
    o.master_rpc_port = FreePort();
    o.extra_tserver_flags = {"--heartbeat_interval_ms=200"};
    return o;
  }

  std::string root_;
  std::string dir_;
};

int CountRunning(const LocalClusterStatus& st) {
  int n = 0;
  for (const auto& d : st.daemons) n += d.running ? 1 : 0;
  return n;
}

TEST_F(LocalClusterTest, StartStopRestartDestroyRoundTrip) {
  LocalClusterOptions options = Options();
  std::ostringstream progress;
  auto started = StartLocalCluster(options, &progress);
  BASALT_ASSERT_OK(started);
  EXPECT_EQ(started->master_addresses, StrCat("127.0.0.1:", options.master_rpc_port));
  EXPECT_NE(progress.str().find(started->master_addresses), std::string::npos) << progress.str();

  // A later "CLI process" sees it through cluster.json.
  auto status = GetLocalClusterStatus(dir_);
  BASALT_ASSERT_OK(status);
  EXPECT_EQ(status->master_addresses, started->master_addresses);
  ASSERT_EQ(status->daemons.size(), 3u);
  EXPECT_EQ(status->daemons[0].name, "master-0");
  EXPECT_EQ(status->daemons[2].name, "ts-1");
  std::set<std::string> addresses;
  for (const auto& d : status->daemons) {
    EXPECT_TRUE(d.running) << d.name;
    EXPECT_TRUE(fs::exists(d.log_path)) << d.log_path;
    addresses.insert(d.rpc_address);
    // Detached: not our child, and in a session of its own.
    EXPECT_NE(ParentPid(d.pid), getpid()) << d.name;
    EXPECT_NE(getsid(d.pid), getsid(0)) << d.name;
  }
  EXPECT_EQ(addresses.size(), 3u);
  const std::string ts0_uuid = ReadFile(JoinPath(dir_, "ts-0/data/instance"));

  // A second start on the same directory fails clearly and disturbs nothing.
  auto again = StartLocalCluster(options, nullptr);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
  EXPECT_NE(again.status().message().find("local stop --dir"), std::string::npos);
  EXPECT_EQ(CountRunning(*GetLocalClusterStatus(dir_)), 3);

  BASALT_ASSERT_OK(StopLocalCluster(dir_, &progress));
  status = GetLocalClusterStatus(dir_);
  BASALT_ASSERT_OK(status);
  EXPECT_EQ(CountRunning(*status), 0);
  for (const auto& d : started->daemons) {
    EXPECT_FALSE(fs::exists(StrCat("/proc/", d.pid, "/cmdline")) &&
                 !ReadFile(StrCat("/proc/", d.pid, "/cmdline")).empty())
        << d.name << " pid " << d.pid << " still runs";
  }
  BASALT_EXPECT_OK(StopLocalCluster(dir_, nullptr));  // Idempotent.

  // Restart from the same data and ports, whatever the options say now.
  LocalClusterOptions other = Options(/*num_tablet_servers=*/5);
  auto restarted = StartLocalCluster(other, &progress);
  BASALT_ASSERT_OK(restarted);
  EXPECT_EQ(restarted->master_addresses, started->master_addresses);
  ASSERT_EQ(restarted->daemons.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(restarted->daemons[i].rpc_address, started->daemons[i].rpc_address);
    EXPECT_TRUE(restarted->daemons[i].running);
    EXPECT_NE(restarted->daemons[i].pid, started->daemons[i].pid);
  }
  EXPECT_EQ(ReadFile(JoinPath(dir_, "ts-0/data/instance")), ts0_uuid);

  BASALT_ASSERT_OK(DestroyLocalCluster(dir_, &progress));
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_TRUE(ProcessesMentioning(dir_).empty());
}

TEST_F(LocalClusterTest, DaemonThatFailsToStartFailsStartWithItsLogAndLeavesNothingRunning) {
  LocalClusterOptions options = Options(/*num_tablet_servers=*/1);
  options.extra_tserver_flags.push_back("--no_such_flag_for_local_cluster_test=1");
  auto started = StartLocalCluster(options, nullptr);
  ASSERT_FALSE(started.ok());
  const std::string msg(started.status().message());
  EXPECT_NE(msg.find("ts-0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ts-0.log"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no_such_flag_for_local_cluster_test"), std::string::npos) << msg;
  EXPECT_TRUE(ProcessesMentioning(dir_).empty());
  auto status = GetLocalClusterStatus(dir_);
  BASALT_ASSERT_OK(status);
  EXPECT_EQ(CountRunning(*status), 0);

  // A cluster that never came up is laid out anew by the next start, so fixing the flags works.
  auto fixed = StartLocalCluster(Options(/*num_tablet_servers=*/1), nullptr);
  BASALT_ASSERT_OK(fixed);
  EXPECT_EQ(CountRunning(*fixed), 2);
  BASALT_ASSERT_OK(DestroyLocalCluster(dir_, nullptr));
}

TEST_F(LocalClusterTest, MissingProgramsAreNamed) {
  LocalClusterOptions options = Options(1);
  options.bin_dir = root_;  // Holds no programs.
  auto started = StartLocalCluster(options, nullptr);
  EXPECT_EQ(started.status().code(), absl::StatusCode::kNotFound) << started.status();
  EXPECT_NE(started.status().message().find(JoinPath(root_, "basalt-master")), std::string::npos)
      << started.status();
  EXPECT_TRUE(ProcessesMentioning(dir_).empty());
}

// Three masters form one catalog group; the start waits for the group's leader to list the tablet
// servers, and a stop and restart bring the same group back.
TEST_F(LocalClusterTest, ThreeMasters) {
  LocalClusterOptions options = Options(/*num_tablet_servers=*/1);
  options.num_masters = 3;
  auto started = StartLocalCluster(options, nullptr);
  BASALT_ASSERT_OK(started);
  ASSERT_EQ(started->daemons.size(), 4u);
  EXPECT_EQ(CountRunning(*started), 4);
  std::vector<std::string> masters = absl::StrSplit(started->master_addresses, ',');
  ASSERT_EQ(masters.size(), 3u);
  EXPECT_EQ(masters[0], StrCat("127.0.0.1:", options.master_rpc_port));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(started->daemons[i].name, StrCat("master-", i));
    EXPECT_EQ(started->daemons[i].rpc_address, masters[i]);
    EXPECT_TRUE(fs::exists(JoinPath(dir_, StrCat("master-", i, "/data/master_peers"))));
  }
  BASALT_ASSERT_OK(StopLocalCluster(dir_, nullptr));
  auto restarted = StartLocalCluster(options, nullptr);
  BASALT_ASSERT_OK(restarted);
  EXPECT_EQ(restarted->master_addresses, started->master_addresses);
  EXPECT_EQ(CountRunning(*restarted), 4);
  BASALT_ASSERT_OK(DestroyLocalCluster(dir_, nullptr));
}

TEST_F(LocalClusterTest, BadOptionsAreInvalidArguments) {
  LocalClusterOptions options = Options();
  options.num_masters = 10;
  EXPECT_EQ(StartLocalCluster(options, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = Options(0);
  EXPECT_EQ(StartLocalCluster(options, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = Options();
  options.dir = "";
  EXPECT_EQ(StartLocalCluster(options, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(LocalClusterTest, DestroyRefusesDirectoriesThatAreNotClusters) {
  EXPECT_EQ(DestroyLocalCluster(dir_, nullptr).code(), absl::StatusCode::kNotFound);
  fs::create_directories(dir_);
  BASALT_ASSERT_OK(
      WriteStringToFile(Env::Default(), JoinPath(dir_, "precious.txt"), "data", false));
  absl::Status s = DestroyLocalCluster(dir_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("cluster.json"), std::string::npos) << s;
  EXPECT_TRUE(fs::exists(JoinPath(dir_, "precious.txt")));
  EXPECT_EQ(GetLocalClusterStatus(dir_).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(StopLocalCluster(dir_, nullptr).code(), absl::StatusCode::kNotFound);
}

TEST_F(LocalClusterTest, CorruptClusterJsonGivesCleanErrors) {
  const std::string good =
      StrCat(R"({"version": 1, "came_up": true, "master_addresses": "127.0.0.1:1", "daemons": [)",
             R"({"name": "master-0", "kind": "master", "rpc_port": 1, "http_port": 2, "pid": 0,)",
             R"( "args": ["/x"]}]})");
  fs::create_directories(dir_);
  const std::string path = JoinPath(dir_, "cluster.json");
  BASALT_ASSERT_OK(WriteStringToFile(Env::Default(), path, good, false));
  BASALT_ASSERT_OK(GetLocalClusterStatus(dir_)) << GetLocalClusterStatus(dir_).status();

  std::vector<std::string> bad = {
      "",
      "garbage",
      "[1, 2]",
      R"({"version": 2, "came_up": true, "master_addresses": "", "daemons": []})",
      R"({"version": 1, "came_up": true, "master_addresses": "", "daemons": []})",
      R"({"version": 1, "came_up": 1, "master_addresses": "", "daemons": []})",
  };
  for (const char* field :
       {"\"rpc_port\": 1", "\"http_port\": 2", "\"pid\": 0", "\"kind\": \"master\""}) {
    std::string s = good;
    s.replace(s.find(field), strlen(field), StrCat(std::string(field).substr(0, 6), "x\": 1"));
    bad.push_back(s);
  }
  bad.push_back(std::string(good).replace(good.find("\"rpc_port\": 1"), 13, "\"rpc_port\": 1.5"));
  bad.push_back(std::string(good).replace(good.find("\"master-0\""), 10, "\"../etc\""));
  Random rng(SeedFromEnvOrTime());
  for (int i = 0; i < 30; ++i) {
    std::string s = good;
    if (i % 2 == 0) {
      s.resize(rng.Uniform(static_cast<uint32_t>(good.size())));
    } else {
      s[rng.Uniform(static_cast<uint32_t>(s.size()))] = static_cast<char>(rng.Uniform(256));
    }
    bad.push_back(s);
  }
  for (const std::string& contents : bad) {
    SCOPED_TRACE(contents);
    BASALT_ASSERT_OK(WriteStringToFile(Env::Default(), path, contents, false));
    auto status = GetLocalClusterStatus(dir_);
    if (status.ok()) continue;  // A random byte may land in a string and keep the file valid.
    EXPECT_EQ(status.status().code(), absl::StatusCode::kDataLoss) << status.status();
    EXPECT_NE(status.status().message().find(path), std::string::npos) << status.status();
    EXPECT_EQ(StopLocalCluster(dir_, nullptr).code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(DestroyLocalCluster(dir_, nullptr).code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(fs::exists(path));
  }
  BASALT_ASSERT_OK(WriteStringToFile(Env::Default(), path, "{", false));
  EXPECT_EQ(StartLocalCluster(Options(1), nullptr).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(ProcessesMentioning(dir_).empty());

  // A valid record of another directory (a moved or copied one) is not restarted.
  BASALT_ASSERT_OK(WriteStringToFile(Env::Default(), path, good, false));
  auto moved = StartLocalCluster(Options(1), nullptr);
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kFailedPrecondition) << moved.status();
  EXPECT_NE(moved.status().message().find("moved or copied"), std::string::npos) << moved.status();
}

}  // namespace local_cluster_test_file
}  // namespace
}  // namespace basalt::tools
