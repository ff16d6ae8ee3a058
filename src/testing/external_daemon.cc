#include "testing/external_daemon.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/time/clock.h"
#include "common/env.h"
#include "common/fd_util.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"

extern char** environ;

namespace basalt {
namespace {

// Writes all of `data` to `fd`, ignoring errors (log headers are best effort).
void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// In the forked child: only async-signal-safe calls until exec. Reports an exec (or setns)
// failure's errno through `err_fd` and exits 127. `netns_fd` >= 0: enter that network namespace.
[[noreturn]] void ExecChild(pid_t parent, int log_fd, int null_fd, int netns_fd, int err_fd,
                            char* const* argv) {
  // Die with the thread that started us: no daemon outlives a killed test.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // The parent died before prctl took effect.
  // Changes only the network namespace (the parent-death signal stays armed).
  if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) {
    int err = errno;
    ssize_t ignored = write(err_fd, &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  dup2(null_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  execve(argv[0], argv, environ);
  int err = errno;
  ssize_t ignored = write(err_fd, &err, sizeof(err));
  (void)ignored;
  _exit(127);
}

// Reads the exec-error pipe until EOF: returns the child's errno, or 0 if exec succeeded (the
// close-on-exec pipe closed without data).
int ReadExecErrno(int fd) { return ReadIntFromPipe(fd); }

}  // namespace

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return StrCat("exited with code ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return StrCat("killed by signal ", sig, " (", strsignal(sig), ")");
  }
  return StrCat("wait status ", wait_status);
}

std::string ReadLogTail(const std::string& path, uint64_t offset, int max_lines) {
  constexpr uint64_t kMaxTailBytes = 64 << 10;
  std::string data;
  absl::Status s = ReadFileToString(Env::Default(), path, &data);
  if (!s.ok()) return StrCat("(cannot read the log: ", s.ToString(), ")\n");
  if (offset > data.size()) offset = 0;  // The file was replaced.
  uint64_t start =
      std::max<uint64_t>(offset, data.size() > kMaxTailBytes ? data.size() - kMaxTailBytes : 0);
  std::string_view tail(data.data() + start, data.size() - start);
  size_t pos = tail.size();
  if (pos > 0 && tail[pos - 1] == '\n') --pos;
  for (int lines = 0; pos > 0; --pos) {
    if (tail[pos - 1] == '\n' && ++lines == max_lines) break;
  }
  std::string out(tail.substr(pos));
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  return out;
}

ExternalDaemon::ExternalDaemon(ExternalDaemonOptions options)
    : options_(std::move(options)),
      rpc_address_(StrCat(options_.host, ":", options_.rpc_port)),
      data_dir_(JoinPath(options_.dir, "data")),
      info_path_(JoinPath(options_.dir, "info.json")),
      log_path_(JoinPath(options_.dir, StrCat(options_.name, ".log"))) {
  CHECK_NE(options_.rpc_port, 0) << options_.name << ": the rpc port must be reserved up front";
}

ExternalDaemon::~ExternalDaemon() { Kill(); }

std::vector<std::string> ExternalDaemon::CommandLine() const {
  std::vector<std::string> args = {
      options_.exe,
      StrCat("--fs_data_dir=", data_dir_),
      StrCat("--rpc_bind_addresses=", rpc_address_),
      StrCat("--server_dump_info_path=", info_path_),
  };
  args.insert(args.end(), options_.flags.begin(), options_.flags.end());
  return args;
}

absl::Status ExternalDaemon::Start() {
  BASALT_RETURN_IF_ERROR(BeginStart());
  return FinishStart();
}

absl::Status ExternalDaemon::BeginStart() {
  if (IsRunning()) {
    return absl::FailedPreconditionError(StrCat(options_.name, " is already running"));
  }
  if (access(options_.exe.c_str(), X_OK) != 0) {
    return absl::NotFoundError(StrCat(options_.name, ": program ", options_.exe,
                                      " does not exist or is not executable (is it built?)"));
  }
  Env* env = Env::Default();
  BASALT_RETURN_IF_ERROR(env->CreateDirs(data_dir_));
  if (env->FileExists(info_path_)) BASALT_RETURN_IF_ERROR(env->DeleteFile(info_path_));
  return Spawn();
}

absl::Status ExternalDaemon::FinishStart() {
  absl::Status s = WaitForInfoFile();
  if (!s.ok()) {
    Kill();
    return WithLogTail(s);
  }
  LOG(INFO) << options_.name << " started: pid " << pid_ << ", uuid " << info_.uuid << ", "
            << rpc_address_;
  return absl::OkStatus();
}

absl::Status ExternalDaemon::Spawn() {
  int log_fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return PosixError(StrCat("open ", log_path_), errno);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int err_pipe[2];
  if (null_fd < 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return PosixError("opening /dev/null or a pipe", err);
  }
  int netns_fd = -1;
  if (!options_.netns_path.empty()) {
    netns_fd = open(options_.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) {
      int err = errno;
      close(log_fd);
      close(null_fd);
      close(err_pipe[0]);
      close(err_pipe[1]);
      return PosixError(StrCat(options_.name, ": open network namespace ", options_.netns_path),
                        err);
    }
  }
  struct stat st;
  log_start_offset_ = fstat(log_fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  std::vector<std::string> args = CommandLine();
  std::string header = "==== start:";
  for (const std::string& a : args) StrAppend(&header, " ", a);
  if (netns_fd >= 0) StrAppend(&header, "    (in network namespace ", options_.netns_path, ")");
  header.push_back('\n');
  WriteAll(log_fd, header);

  // Everything the child needs is prepared before fork (the child may not allocate).
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) ExecChild(parent, log_fd, null_fd, netns_fd, err_pipe[1], argv.data());
  int fork_errno = errno;
  close(log_fd);
  close(null_fd);
  if (netns_fd >= 0) close(netns_fd);
  close(err_pipe[1]);
  if (pid < 0) {
    close(err_pipe[0]);
    return PosixError(StrCat(options_.name, ": fork"), fork_errno);
  }
  int exec_errno = ReadExecErrno(err_pipe[0]);
  close(err_pipe[0]);
  pid_ = pid;
  paused_ = false;
  exited_unexpectedly_ = false;
  info_ = ServerInfo();
  if (exec_errno != 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    Reaped(status, /*expected=*/true);
    return PosixError(
        StrCat(options_.name, ": exec ", options_.exe,
               options_.netns_path.empty() ? ""
                                           : StrCat(" in network namespace ", options_.netns_path)),
        exec_errno);
  }
  return absl::OkStatus();
}

absl::Status ExternalDaemon::WaitForInfoFile() {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  absl::Duration pause = absl::Milliseconds(5);
  while (true) {
    if (!IsRunning()) {
      return absl::InternalError(
          StrCat(options_.name, " ", last_exit_, " before writing ", info_path_));
    }
    auto info = ReadServerInfo(Env::Default(), info_path_);
    if (info.ok()) {
      if (info->pid != pid_ || info->rpc_port != options_.rpc_port) {
        return absl::InternalError(StrCat(options_.name, ": ", info_path_, " names pid ", info->pid,
                                          " port ", info->rpc_port, " but the daemon is pid ", pid_,
                                          " on port ", options_.rpc_port));
      }
      info_ = *std::move(info);
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(info.status())) return info.status();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(StrCat(options_.name, " did not write ", info_path_,
                                                " within ",
                                                absl::FormatDuration(options_.start_timeout)));
    }
    absl::SleepFor(pause);
    pause = std::min(pause * 2, absl::Milliseconds(50));
  }
}

void ExternalDaemon::Reaped(int wait_status, bool expected) {
  last_exit_ = DescribeWaitStatus(wait_status);
  exited_unexpectedly_ = !expected;
  if (!expected) {
    LOG(WARNING) << options_.name << " (pid " << pid_ << ") " << last_exit_ << "\n" << LogTail();
  }
  pid_ = 0;
  paused_ = false;
}

bool ExternalDaemon::IsRunning() {
  if (pid_ == 0) return false;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return true;
  if (r == pid_) {
    Reaped(status, /*expected=*/shutdown_started_.has_value());
  } else {
    // Someone else reaped it (should not happen); treat it as gone.
    last_exit_ = StrCat("vanished (waitpid: ", strerror(errno), ")");
    exited_unexpectedly_ = true;
    pid_ = 0;
    paused_ = false;
  }
  return false;
}

void ExternalDaemon::Kill() {
  if (!IsRunning()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  Reaped(status, /*expected=*/true);
}

absl::Status ExternalDaemon::Pause() {
  if (!IsRunning()) {
    return absl::FailedPreconditionError(StrCat(options_.name, " is not running"));
  }
  if (paused_) return absl::OkStatus();
  kill(pid_, SIGSTOP);
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WUNTRACED);
  } while (r < 0 && errno == EINTR);
  if (r == pid_ && !WIFSTOPPED(status)) {
    Reaped(status, /*expected=*/false);
    return WithLogTail(absl::InternalError(StrCat(options_.name, " ", last_exit_)));
  }
  paused_ = true;
  return absl::OkStatus();
}

absl::Status ExternalDaemon::Resume() {
  if (!IsRunning()) {
    return absl::FailedPreconditionError(StrCat(options_.name, " is not running"));
  }
  // SIGCONT resumes the process when it is sent; there is nothing to wait for.
  kill(pid_, SIGCONT);
  paused_ = false;
  return absl::OkStatus();
}

void ExternalDaemon::BeginShutdown() {
  if (!IsRunning() || shutdown_started_.has_value()) return;
  kill(pid_, SIGTERM);
  if (paused_) kill(pid_, SIGCONT);
  shutdown_started_ = absl::Now();
}

absl::Status ExternalDaemon::FinishShutdown() {
  if (!shutdown_started_.has_value()) return absl::OkStatus();
  const absl::Time started = *shutdown_started_;
  shutdown_started_.reset();
  if (pid_ == 0) return absl::OkStatus();  // Reaped meanwhile (IsRunning): it exited.
  const absl::Time deadline = started + options_.shutdown_timeout;
  absl::Duration pause = absl::Milliseconds(2);
  while (absl::Now() < deadline) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      Reaped(status, /*expected=*/true);
      LOG(INFO) << options_.name << " " << last_exit_ << " "
                << absl::FormatDuration(absl::Now() - started) << " after SIGTERM";
      bool clean = (WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
                   (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
      if (clean) return absl::OkStatus();
      return WithLogTail(
          absl::InternalError(StrCat(options_.name, " ", last_exit_, " after SIGTERM")));
    }
    absl::SleepFor(pause);
    pause = std::min(pause * 2, absl::Milliseconds(50));
  }
  Kill();
  return WithLogTail(absl::DeadlineExceededError(
      StrCat(options_.name, " did not exit within ",
             absl::FormatDuration(options_.shutdown_timeout), " of SIGTERM; killed")));
}

absl::Status ExternalDaemon::Shutdown() {
  BeginShutdown();
  return FinishShutdown();
}

absl::Status ExternalDaemon::Restart() {
  Shutdown().IgnoreError();
  return Start();
}

absl::Status ExternalDaemon::Restart(const std::vector<std::string>& added_flags) {
  options_.flags.insert(options_.flags.end(), added_flags.begin(), added_flags.end());
  return Restart();
}

std::string ExternalDaemon::LogTail(int max_lines) const {
  return StrCat("---- last lines of ", options_.name, "'s log ", log_path_, " ----\n",
                ReadLogTail(log_path_, log_start_offset_, max_lines), "---- end of ", options_.name,
                "'s log ----");
}

absl::Status ExternalDaemon::WithLogTail(const absl::Status& s) const {
  return absl::Status(s.code(), StrCat(s.message(), "\n", LogTail()));
}

}  // namespace basalt
