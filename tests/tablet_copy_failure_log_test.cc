// A tablet copy that keeps failing costs its leader little (docs/tablet_copy.md "Retries and
// logging"), with real processes: a follower that fell behind the leader's log and whose copies
// fail on the receiving side (--tablet_copy_inject_failures) is retried with backoff, many times
// in the window watched, yet the leader's log grows by at most a few lines a minute about it
// (LogThrottle) and the leader's CPU stays low; once copies can succeed again the leader's next
// retry repairs the follower without any command, and its log gives the count of failures.

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/tserver.pb.h"
#include "server/webserver.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/cli_test_util.h"
#include "tests/client_test_util.h"
#include "tests/client_writer_util.h"

namespace basalt::client_test {
namespace {
namespace tablet_copy_failure_log_test_file {

// How long the test watches the leader while every copy fails: shorter than the throttle's
// minute, so each throttled message may appear once at most.
constexpr absl::Duration kWindow = absl::Seconds(15);
// The leader's retry delays (flags below): 250 ms doubling to 1 s, +-25%. In the window that is
// about 15 attempts, so the log stays small because of the throttle, not because attempts are rare.
constexpr int kRetryBaseMs = 250;
constexpr int kRetryMaxMs = 1000;
// At least this many attempts in the window, or the test would prove nothing about the log.
constexpr int kMinAttempts = 5;
// At most the window over the shortest delay at the cap (0.75 x the cap), plus a few for the ramp
// up to it: the retries back off (a loop without backoff would make hundreds).
int MaxAttempts(double window_sec) {
  return static_cast<int>(window_sec * 1000 / (kRetryMaxMs * 0.75)) + 4;
}
// Lines about the copy the leader may write in the window: each of its throttled messages
// (asking the follower to copy, a session's start, its end, the failed copy) once at most. Before
// the throttle it wrote three or four lines per attempt.
constexpr int kMaxCopyLines = 4;
// Everything the leader logs in the window (nothing else happens in the cluster meanwhile).
constexpr int kMaxLines = 20;
// The leader's average CPU use over the window, as a share of one core: generous, the machine is
// shared; a busy retry loop would use about a whole core.
constexpr double kMaxCpuShare = 0.2;
constexpr char kInjectFlag[] = "--tablet_copy_inject_failures=1000000";

// CPU seconds (user + system) process `pid` has used, from /proc/<pid>/stat.
absl::StatusOr<double> CpuSeconds(pid_t pid) {
  const std::string path = StrCat("/proc/", pid, "/stat");
  const std::string stat = ReadAll(path);
  // The command name (field 2) is in parentheses and may hold spaces: fields count from the last
  // ')', which is followed by field 3 (state); utime and stime are fields 14 and 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 > stat.size()) {
    return absl::NotFoundError(StrCat("cannot read ", path));
  }
  std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ', absl::SkipEmpty());
  double utime = 0;
  double stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtod(fields[11], &utime) ||
      !absl::SimpleAtod(fields[12], &stime)) {
    return absl::DataLossError(StrCat(path, ": ", stat));
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The lines of file `path` from byte `offset` on.
std::vector<std::string> LinesFrom(const std::string& path, uint64_t offset) {
  const std::string all = ReadAll(path);
  if (offset >= all.size()) return {};
  return absl::StrSplit(all.substr(offset), '\n', absl::SkipEmpty());
}

// The lines of `lines` that contain `part`.
std::vector<std::string> Matching(const std::vector<std::string>& lines, const std::string& part) {
  std::vector<std::string> out;
  for (const std::string& line : lines) {
    if (absl::StrContains(line, part)) out.push_back(line);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) StrAppend(&out, l, "\n");
  return out;
}

// Copy sessions the source served: one per attempt (each fails after its first block).
const std::string kSessions =
    "basalt_rpc_requests_total{method=\"/basalt.pb.TabletCopyService/BeginTabletCopySession\"}";

// Three servers; a leader with small log segments of which it keeps at most two for a lagging
// follower (as LaggingFollowerTest), and short copy retry delays.
class TabletCopyFailureLogTest : public ClientClusterTestBase {
 protected:
  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = ClientClusterTestBase::ClusterOptions();
    for (const std::string& f :
         {std::string("--log_segment_size_mb=1"), std::string("--log_max_segments_to_retain=2"),
          std::string("--flush_threshold_mb=1"), std::string("--flush_threshold_secs=1"),
          std::string("--follower_unavailable_considered_failed_sec=300"),
          StrCat("--tablet_copy_retry_base_ms=", kRetryBaseMs),
          StrCat("--tablet_copy_retry_max_ms=", kRetryMaxMs)}) {
      o.extra_tserver_flags.push_back(f);
    }
    return o;
  }

  void SetUp() override {
    scratch_ = ::testing::TempDir() + "tablet_copy_failure_log_test.XXXXXX";
    ASSERT_NE(mkdtemp(scratch_.data()), nullptr);
    ClientClusterTestBase::SetUp();
  }
  void TearDown() override {
    ClientClusterTestBase::TearDown();
    (void)Env::Default()->DeleteDirRecursively(scratch_);
  }

  std::string scratch_;
};

TEST_F(TabletCopyFailureLogTest, FailingCopiesLogLittleAndCostLittleCpu) {
  std::shared_ptr<client::Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("fail", 0, {}, &table));
  const std::vector<std::string> tablets = TabletIds("fail");
  ASSERT_EQ(tablets.size(), 1u);
  absl::StatusOr<TabletLeader> leader =
      cluster_->WaitForTabletLeader(tablets[0], absl::Seconds(30));
  BASALT_ASSERT_OK(leader);
  ExternalDaemon* const leader_ts = cluster_->tablet_server(leader->ts_index);
  const int follower = (leader->ts_index + 1) % 3;
  ExternalDaemon* const follower_ts = cluster_->tablet_server(follower);
  const std::string follower_uuid = follower_ts->uuid();

  // The follower misses about 6 MB of log (1 MB segments), which the leader does not keep for it.
  follower_ts->Kill();
  BackgroundWriter writer(client_, table, BackgroundWriter::kFlatOut);
  writer.Start();
  BASALT_ASSERT_OK(writer.WaitForAcked(150000));
  BASALT_ASSERT_OK(writer.Stop());
  // Its first segment holds everything the follower has; once it is collected, only a copy helps.
  // (The server log holds only this tablet's log.)
  const std::string first_segment =
      JoinPath(JoinPath(leader_ts->data_dir(), "server-wal"), "wal-000000001");
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(60), "the leader to collect its first segment", [&] {
    return Env::Default()->FileExists(first_segment) ? absl::UnavailableError(first_segment)
                                                     : absl::OkStatus();
  }));

  // Back, but every copy it receives fails after its first block.
  BASALT_ASSERT_OK(follower_ts->Restart({kInjectFlag}));
  const std::string failed_line = "tablet copy to " + follower_uuid + " failed";
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(30), "a first copy to fail", [&] {
    return Matching(LinesFrom(leader_ts->log_path(), 0), failed_line).empty()
               ? absl::UnavailableError("not yet")
               : absl::OkStatus();
  }));

  // Watch the leader.
  const uint64_t log_start = ReadAll(leader_ts->log_path()).size();
  absl::StatusOr<int64_t> sessions_start = CounterValue(leader_ts, kSessions);
  BASALT_ASSERT_OK(sessions_start);
  absl::StatusOr<double> cpu_start = CpuSeconds(leader_ts->pid());
  BASALT_ASSERT_OK(cpu_start);
  const absl::Time window_start = absl::Now();
  absl::SleepFor(kWindow);  // Not waiting for anything: measuring over a fixed window.
  absl::StatusOr<double> cpu_end = CpuSeconds(leader_ts->pid());
  BASALT_ASSERT_OK(cpu_end);
  const double window_sec = absl::ToDoubleSeconds(absl::Now() - window_start);
  absl::StatusOr<int64_t> sessions_end = CounterValue(leader_ts, kSessions);
  BASALT_ASSERT_OK(sessions_end);
  const std::vector<std::string> lines = LinesFrom(leader_ts->log_path(), log_start);
  const std::vector<std::string> copy_lines = Matching(lines, follower_uuid);

  const int64_t attempts = *sessions_end - *sessions_start;
  const double cpu_share = (*cpu_end - *cpu_start) / window_sec;
  LOG(INFO) << "in " << window_sec << " s: " << attempts << " failed copies, leader CPU "
            << cpu_share * 100 << "% of a core, leader log " << lines.size() << " lines ("
            << copy_lines.size() << " about the copy):\n"
            << Joined(lines);
  EXPECT_GE(attempts, kMinAttempts);
  EXPECT_LE(attempts, MaxAttempts(window_sec));
  EXPECT_LE(copy_lines.size(), static_cast<size_t>(kMaxCopyLines)) << Joined(copy_lines);
  EXPECT_LE(lines.size(), static_cast<size_t>(kMaxLines)) << Joined(lines);
  EXPECT_LT(cpu_share, kMaxCpuShare);
  // The follower is still not repaired: the copies really failed all along.
  pb::ListTabletsResponsePB listing;
  BASALT_ASSERT_OK(cluster_->ListTablets(follower, &listing));
  for (const auto& t : listing.tablets()) EXPECT_NE(t.state(), pb::TABLET_RUNNING) << t.tablet_id();

  // Restarted without the injection, the follower gets the leader's next retry, which succeeds.
  std::vector<std::string> flags;
  for (const std::string& f : follower_ts->flags()) {
    if (f != kInjectFlag) flags.push_back(f);
  }
  follower_ts->set_flags(flags);
  BASALT_ASSERT_OK(follower_ts->Restart());
  // Healthy: the copy's replica runs as a voter and has applied what the leader has.
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(30), "the follower to be repaired", [&]() -> absl::Status {
    pb::ListTabletsResponsePB f;
    pb::ListTabletsResponsePB l;
    BASALT_RETURN_IF_ERROR(cluster_->ListTablets(follower, &f));
    BASALT_RETURN_IF_ERROR(cluster_->ListTablets(leader->ts_index, &l));
    if (f.tablets_size() != 1 || l.tablets_size() != 1) {
      return absl::UnavailableError(StrCat(f.tablets_size(), " replicas on the follower"));
    }
    const pb::TabletStatusPB& ft = f.tablets(0);
    if (ft.state() != pb::TABLET_RUNNING ||
        (ft.role() != pb::FOLLOWER && ft.role() != pb::LEADER) ||
        ft.last_applied_index() < l.tablets(0).last_applied_index()) {
      return absl::UnavailableError(ft.ShortDebugString());
    }
    return absl::OkStatus();
  }));
  CliResult ksck =
      RunBasalt({"cluster", "ksck", cluster_->master_addresses(), "--checksum"}, scratch_);
  EXPECT_EQ(ksck.rc, 0) << ksck.out << ksck.err;
  // The leader's last word on the copy counts every failure, those it did not log included.
  const std::vector<std::string> succeeded =
      Matching(LinesFrom(leader_ts->log_path(), log_start),
               "tablet copy to " + follower_uuid + " succeeded after ");
  ASSERT_EQ(succeeded.size(), 1u) << leader_ts->LogTail(40);
  int64_t counted = 0;
  absl::string_view rest = succeeded[0];
  rest.remove_prefix(rest.find(" succeeded after ") + strlen(" succeeded after "));
  ASSERT_TRUE(absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &counted)) << succeeded[0];
  EXPECT_GE(counted, attempts) << succeeded[0];
}

}  // namespace tablet_copy_failure_log_test_file
}  // namespace
}  // namespace basalt::client_test
