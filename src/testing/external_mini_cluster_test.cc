// ExternalMiniCluster with stand-in daemons (basalt-test-daemon): process management, layout,
// flags and cleanup. The real daemons are exercised by the cluster tests in tests/.

#include "testing/external_mini_cluster.h"

#include <signal.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/status_test_util.h"
#include "testing/testing_test_util.h"

namespace basalt {
namespace {
namespace external_mini_cluster_test_file {

using testing_util::ProcessState;
using testing_util::ScopedEnvVar;
using testing_util::ScopedTestDir;

ExternalMiniClusterOptions StandInOptions() {
  ExternalMiniClusterOptions o;
  o.master_exe = "basalt-test-daemon";
  o.tserver_exe = "basalt-test-daemon";
  o.wait_for_tablet_servers = false;
  o.daemon_shutdown_timeout = absl::Seconds(10);
  o.extra_tserver_flags = {"--heartbeat_interval_ms=77"};
  return o;
}

std::string ReadFile(const std::string& path) {
  std::string s;
  BASALT_EXPECT_OK(ReadFileToString(Env::Default(), path, &s)) << path;
  return s;
}

TEST(ExternalMiniClusterTest, StartsEveryDaemonWithStableAddressesAndCleansUp) {
  ScopedTestDir tmp("emc_test");
  ScopedEnvVar test_tmpdir("TEST_TMPDIR", tmp.path().c_str());
  std::vector<pid_t> pids;
  std::string root;
  {
    ExternalMiniCluster cluster(StandInOptions());
    BASALT_ASSERT_OK(cluster.Start());
    root = cluster.root_dir();
    EXPECT_EQ(root.rfind(getenv("TEST_TMPDIR"), 0), 0u) << root;
    ASSERT_EQ(cluster.num_masters(), 1);
    ASSERT_EQ(cluster.num_tablet_servers(), 3);
    EXPECT_EQ(cluster.master_addresses(), cluster.master(0)->rpc_address());
    std::set<std::string> addresses = {cluster.master(0)->rpc_address()};
    std::vector<std::string> uuids;
    for (int i = 0; i < 3; ++i) {
      ExternalDaemon* ts = cluster.tablet_server(i);
      EXPECT_TRUE(ts->IsRunning());
      EXPECT_EQ(ts->name(), "ts-" + std::to_string(i));
      EXPECT_EQ(ts->data_dir(), JoinPath(root, "ts-" + std::to_string(i) + "/data"));
      EXPECT_TRUE(addresses.insert(ts->rpc_address()).second);
      EXPECT_EQ(cluster.TabletServerIndexByUuid(ts->uuid()), i);
      uuids.push_back(ts->uuid());
      std::string log = ReadFile(ts->log_path());
      EXPECT_NE(log.find("--master_addresses=" + cluster.master_addresses()), std::string::npos);
      // The extra flag comes after the harness's default, so it wins.
      EXPECT_LT(log.find("--heartbeat_interval_ms=200"), log.find("--heartbeat_interval_ms=77"));
    }
    EXPECT_NE(ReadFile(cluster.master(0)->log_path()).find("--tserver_unresponsive_timeout_ms="),
              std::string::npos);
    EXPECT_EQ(cluster.TabletServerIndexByUuid("nope"), -1);

    BASALT_ASSERT_OK(cluster.Restart());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(cluster.tablet_server(i)->uuid(), uuids[i]);
      EXPECT_EQ(cluster.tablet_server(i)->info().rpc_port, cluster.tablet_server(i)->rpc_port());
      pids.push_back(cluster.tablet_server(i)->pid());
    }
    pids.push_back(cluster.master(0)->pid());
  }
  for (pid_t pid : pids) EXPECT_EQ(ProcessState(pid), 'X') << pid;
  EXPECT_FALSE(Env::Default()->FileExists(root)) << root;
}

TEST(ExternalMiniClusterTest, KeepsTheRootDirWhenAsked) {
  ExternalMiniClusterOptions o = StandInOptions();
  o.num_tablet_servers = 1;
  ScopedTestDir tmp("emc_keep");
  o.root_dir = JoinPath(tmp.path(), "cluster");
  {
    ExternalMiniCluster cluster(o);
    BASALT_ASSERT_OK(cluster.Start());
  }
  // A root dir the caller chose is never removed.
  EXPECT_TRUE(Env::Default()->FileExists(JoinPath(o.root_dir, "ts-0/ts-0.log")));

  o.root_dir.clear();
  std::string root;
  {
    ExternalMiniCluster cluster(o);
    BASALT_ASSERT_OK(cluster.Start());
    root = cluster.root_dir();
    cluster.set_keep_root_dir(true);
  }
  EXPECT_TRUE(Env::Default()->FileExists(JoinPath(root, "master-0/master-0.log")));
  Env::Default()->DeleteDirRecursively(root).IgnoreError();
}

TEST(ExternalMiniClusterTest, ReportsDaemonsThatDied) {
  ExternalMiniClusterOptions o = StandInOptions();
  ExternalMiniCluster cluster(o);
  BASALT_ASSERT_OK(cluster.Start());
  BASALT_EXPECT_OK(cluster.CheckNoDaemonDied());
  cluster.tablet_server(0)->Kill();  // Stopped by the harness: not a death.
  BASALT_ASSERT_OK(cluster.tablet_server(2)->Pause());
  BASALT_EXPECT_OK(cluster.CheckNoDaemonDied());
  ASSERT_EQ(kill(cluster.tablet_server(1)->pid(), SIGKILL), 0);
  absl::Status s;
  for (int i = 0; i < 500 && s.ok(); ++i) {
    s = cluster.CheckNoDaemonDied();
    if (s.ok()) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("ts-1 killed by signal 9"), absl::string_view::npos) << s;
  EXPECT_EQ(s.message().find("ts-0 "), absl::string_view::npos) << s;
  // Start() brings back only what is not running.
  BASALT_ASSERT_OK(cluster.Start());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(cluster.tablet_server(i)->IsRunning());
  BASALT_EXPECT_OK(cluster.CheckNoDaemonDied());
  BASALT_ASSERT_OK(cluster.Shutdown());  // Including the paused one.
}

TEST(ExternalMiniClusterTest, WaitsReportTheMastersLogWhenTheMasterDoesNotAnswer) {
  ExternalMiniClusterOptions o = StandInOptions();
  o.num_tablet_servers = 1;
  o.rpc_timeout = absl::Milliseconds(200);
  ExternalMiniCluster cluster(o);
  BASALT_ASSERT_OK(cluster.Start());
  // The stand-in master accepts connections but speaks no gRPC.
  absl::Status s = cluster.WaitForTabletServerCount(1, absl::Milliseconds(600));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("master-0.log"), absl::string_view::npos) << s;
  auto leader = cluster.FindTabletLeader("some-tablet");
  EXPECT_EQ(leader.status().code(), absl::StatusCode::kNotFound) << leader.status();
  EXPECT_NE(leader.status().message().find("ts-0"), absl::string_view::npos) << leader.status();
}

TEST(ExternalMiniClusterTest, FailedStartLeavesNothingRunning) {
  ExternalMiniClusterOptions o = StandInOptions();
  o.extra_tserver_flags = {"--test_daemon_mode=exit_before_info"};
  ExternalMiniCluster cluster(o);
  absl::Status s = cluster.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("ts-0"), absl::string_view::npos) << s;
  EXPECT_FALSE(cluster.master(0)->IsRunning());

  ExternalMiniClusterOptions bad = StandInOptions();
  bad.num_masters = 0;
  EXPECT_EQ(ExternalMiniCluster(bad).Start().code(), absl::StatusCode::kInvalidArgument);
  ExternalMiniClusterOptions missing = StandInOptions();
  missing.bin_dir = "/nonexistent";
  s = ExternalMiniCluster(missing).Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("/nonexistent/basalt-test-daemon"), absl::string_view::npos) << s;
}

TEST(ExternalMiniClusterTest, BinDirComesFromOptionsThenEnvironmentThenBuild) {
  {
    ScopedEnvVar unset("BASALT_BIN_DIR", nullptr);
    const std::string built = ExternalMiniCluster::ResolveBinDir("");
    EXPECT_TRUE(Env::Default()->FileExists(JoinPath(built, "basalt-test-daemon"))) << built;
  }
  ScopedEnvVar from_env("BASALT_BIN_DIR", "/from/env");
  EXPECT_EQ(ExternalMiniCluster::ResolveBinDir(""), "/from/env");
  EXPECT_EQ(ExternalMiniCluster::ResolveBinDir("/from/options"), "/from/options");
}

}  // namespace external_mini_cluster_test_file
}  // namespace
}  // namespace basalt
