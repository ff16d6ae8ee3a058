#include "testing/external_daemon.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/env.h"
#include "common/status_test_util.h"
#include "testing/external_mini_cluster.h"
#include "testing/reserved_port.h"
#include "testing/testing_test_util.h"
#include "testing/wait.h"

namespace basalt {
namespace {
namespace external_daemon_test_file {

using testing_util::ProcessState;
using testing_util::ScopedTestDir;
using testing_util::TestDaemonPath;

class ExternalDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto port = ReservedPort::Reserve();
    BASALT_ASSERT_OK(port);
    port_ = std::make_unique<ReservedPort>(*std::move(port));
    dir_ = test_dir_.path();
  }

  std::unique_ptr<ExternalDaemon> NewDaemon(std::vector<std::string> flags = {}) {
    ExternalDaemonOptions o;
    o.name = "d";
    o.exe = TestDaemonPath();
    o.dir = dir_;
    o.rpc_port = port_->port();
    o.flags = std::move(flags);
    o.start_timeout = absl::Seconds(20);
    o.shutdown_timeout = absl::Seconds(10);
    return std::make_unique<ExternalDaemon>(std::move(o));
  }

  std::string ReadLog(const ExternalDaemon& d) {
    std::string log;
    BASALT_EXPECT_OK(ReadFileToString(Env::Default(), d.log_path(), &log));
    return log;
  }

  ScopedTestDir test_dir_{"external_daemon_test"};
  std::unique_ptr<ReservedPort> port_;
  std::string dir_;
};

int CountOccurrences(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST_F(ExternalDaemonTest, StartShutdownRestartKeepUuidAndPort) {
  auto d = NewDaemon({"--heartbeat_interval_ms=5"});
  BASALT_ASSERT_OK(d->Start());
  EXPECT_TRUE(d->IsRunning());
  EXPECT_EQ(d->uuid().size(), 32u);
  EXPECT_EQ(d->info().pid, d->pid());
  EXPECT_EQ(d->info().rpc_port, port_->port());
  EXPECT_EQ(d->rpc_address(), port_->address());
  const std::string uuid = d->uuid();
  const pid_t first_pid = d->pid();
  EXPECT_EQ(d->Start().code(), absl::StatusCode::kFailedPrecondition);

  BASALT_ASSERT_OK(d->Shutdown());
  EXPECT_FALSE(d->IsRunning());
  EXPECT_EQ(d->pid(), 0);
  EXPECT_EQ(d->last_exit(), "exited with code 0");
  EXPECT_FALSE(d->ExitedUnexpectedly());
  EXPECT_EQ(ProcessState(first_pid), 'X');

  BASALT_ASSERT_OK(d->Restart());
  EXPECT_EQ(d->uuid(), uuid);
  EXPECT_NE(d->pid(), first_pid);
  EXPECT_EQ(d->info().rpc_port, port_->port());
  std::string log = ReadLog(*d);
  EXPECT_EQ(CountOccurrences(log, "==== start:"), 2) << log;
  EXPECT_EQ(CountOccurrences(log, "--heartbeat_interval_ms=5"), 2) << log;
  EXPECT_NE(log.find("--rpc_bind_addresses=" + port_->address()), std::string::npos) << log;
  // The log tail covers only the latest run.
  EXPECT_EQ(CountOccurrences(d->LogTail(1000), "==== start:"), 1);
}

TEST_F(ExternalDaemonTest, KillPauseResume) {
  auto d = NewDaemon();
  BASALT_ASSERT_OK(d->Start());
  const pid_t pid = d->pid();
  BASALT_ASSERT_OK(d->Pause());
  EXPECT_TRUE(d->IsPaused());
  EXPECT_TRUE(d->IsRunning());
  EXPECT_EQ(ProcessState(pid), 'T');
  BASALT_ASSERT_OK(d->Resume());
  EXPECT_FALSE(d->IsPaused());
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(5), "the daemon to run again", [&] {
    return ProcessState(pid) != 'T' ? absl::OkStatus() : absl::UnavailableError("still stopped");
  }));
  d->Kill();
  EXPECT_FALSE(d->IsRunning());
  EXPECT_EQ(d->last_exit(), "killed by signal 9 (Killed)");
  EXPECT_FALSE(d->ExitedUnexpectedly());
  EXPECT_EQ(ProcessState(pid), 'X');
  EXPECT_EQ(d->Pause().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(d->Resume().code(), absl::StatusCode::kFailedPrecondition);
  d->Kill();  // No-op.
  BASALT_ASSERT_OK(d->Shutdown());
}

TEST_F(ExternalDaemonTest, ShutdownOfAPausedDaemon) {
  auto d = NewDaemon();
  BASALT_ASSERT_OK(d->Start());
  BASALT_ASSERT_OK(d->Pause());
  BASALT_ASSERT_OK(d->Shutdown());
  EXPECT_FALSE(d->IsRunning());
  EXPECT_FALSE(d->IsPaused());
}

TEST_F(ExternalDaemonTest, CrashIsDetectedAndReported) {
  auto d = NewDaemon();
  BASALT_ASSERT_OK(d->Start());
  ASSERT_EQ(kill(d->pid(), SIGKILL), 0);
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(5), "the daemon to die", [&] {
    return d->IsRunning() ? absl::UnavailableError("running") : absl::OkStatus();
  }));
  EXPECT_TRUE(d->ExitedUnexpectedly());
  EXPECT_EQ(d->last_exit(), "killed by signal 9 (Killed)");
  // It can be started again, and a new run clears the flag.
  BASALT_ASSERT_OK(d->Start());
  EXPECT_FALSE(d->ExitedUnexpectedly());
}

TEST_F(ExternalDaemonTest, ExitBeforeServingReportsExitStatusAndLogTail) {
  auto d = NewDaemon({"--test_daemon_mode=exit_before_info"});
  absl::Status s = d->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("exited with code 3"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("exiting before writing the info file"), absl::string_view::npos) << s;
  EXPECT_FALSE(d->IsRunning());
}

TEST_F(ExternalDaemonTest, NoInfoFileTimesOutAndKillsTheProcess) {
  ExternalDaemonOptions o;
  o.name = "slow";
  o.exe = TestDaemonPath();
  o.dir = dir_;
  o.rpc_port = port_->port();
  o.flags = {"--test_daemon_mode=never_write_info"};
  o.start_timeout = absl::Milliseconds(700);
  ExternalDaemon d(o);
  absl::Status s = d.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("slow.log"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("serving on port"), absl::string_view::npos) << s;
  EXPECT_FALSE(d.IsRunning());
  EXPECT_EQ(d.last_exit(), "killed by signal 9 (Killed)");
}

TEST_F(ExternalDaemonTest, MalformedOrForeignInfoFileFailsTheStart) {
  auto d = NewDaemon({"--test_daemon_mode=malformed_info"});
  absl::Status s = d->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_FALSE(d->IsRunning());

  auto d2 = NewDaemon({"--test_daemon_mode=wrong_pid"});
  s = d2->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("names pid 1"), absl::string_view::npos) << s;
  EXPECT_FALSE(d2->IsRunning());
}

TEST_F(ExternalDaemonTest, MissingProgram) {
  ExternalDaemonOptions o;
  o.name = "missing";
  o.exe = JoinPath(dir_, "no-such-daemon");
  o.dir = dir_;
  o.rpc_port = port_->port();
  ExternalDaemon d(o);
  absl::Status s = d.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("no-such-daemon"), absl::string_view::npos) << s;
}

TEST_F(ExternalDaemonTest, ShutdownEscalatesToSigkillAndReportsBadExits) {
  ExternalDaemonOptions o;
  o.name = "stubborn";
  o.exe = TestDaemonPath();
  o.dir = dir_;
  o.rpc_port = port_->port();
  o.flags = {"--test_daemon_mode=ignore_sigterm"};
  o.shutdown_timeout = absl::Milliseconds(500);
  ExternalDaemon d(o);
  BASALT_ASSERT_OK(d.Start());
  absl::Status s = d.Shutdown();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_FALSE(d.IsRunning());

  // Restart with an added flag (later flags win): exits with code 2 on SIGTERM.
  BASALT_ASSERT_OK(d.Restart({"--test_daemon_mode=exit_on_sigterm_with_code_2"}));
  s = d.Shutdown();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("exited with code 2"), absl::string_view::npos) << s;
  EXPECT_EQ(d.flags().back(), "--test_daemon_mode=exit_on_sigterm_with_code_2");
}

// A daemon dies with the process that started it, even when that process is SIGKILLed.
TEST_F(ExternalDaemonTest, DaemonDiesWithItsParent) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    ExternalDaemon* d = NewDaemon().release();  // Never destroyed: the child is killed.
    pid_t daemon_pid = d->Start().ok() ? d->pid() : 0;
    ssize_t n = write(pipe_fds[1], &daemon_pid, sizeof(daemon_pid));
    (void)n;
    pause();
    _exit(0);
  }
  close(pipe_fds[1]);
  pid_t daemon_pid = 0;
  ASSERT_EQ(read(pipe_fds[0], &daemon_pid, sizeof(daemon_pid)),
            static_cast<ssize_t>(sizeof(daemon_pid)));
  close(pipe_fds[0]);
  ASSERT_GT(daemon_pid, 0);
  EXPECT_NE(ProcessState(daemon_pid), 'X');
  kill(child, SIGKILL);
  int status;
  waitpid(child, &status, 0);
  absl::Status s = WaitFor(absl::Seconds(10), "the orphaned daemon to die", [&] {
    char state = ProcessState(daemon_pid);
    return state == 'X' || state == 'Z' ? absl::OkStatus()
                                        : absl::UnavailableError(std::string(1, state));
  });
  BASALT_EXPECT_OK(s);
}

TEST(ReadLogTailTest, LastLinesAfterOffset) {
  ScopedTestDir dir("read_log_tail_test");
  std::string path = JoinPath(dir.path(), "log");
  BASALT_ASSERT_OK(WriteStringToFile(Env::Default(), path, "a\nb\nc\nd\n", false));
  EXPECT_EQ(ReadLogTail(path, 0, 2), "c\nd\n");
  EXPECT_EQ(ReadLogTail(path, 0, 10), "a\nb\nc\nd\n");
  EXPECT_EQ(ReadLogTail(path, 4, 10), "c\nd\n");
  EXPECT_EQ(ReadLogTail(path, 1000, 1), "d\n");  // An offset past the end: the file was replaced.
  BASALT_ASSERT_OK(WriteStringToFile(Env::Default(), path, "x\ny", false));
  EXPECT_EQ(ReadLogTail(path, 0, 1), "y\n");
  EXPECT_NE(ReadLogTail(path + ".missing", 0, 1).find("cannot read"), std::string::npos);
}

TEST(DescribeWaitStatusTest, ExitAndSignal) {
  EXPECT_EQ(DescribeWaitStatus(3 << 8), "exited with code 3");
  EXPECT_EQ(DescribeWaitStatus(SIGKILL), "killed by signal 9 (Killed)");
}

}  // namespace external_daemon_test_file
}  // namespace
}  // namespace basalt
