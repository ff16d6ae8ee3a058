#pragma once

// ExternalDaemon: one real daemon process (basalt-master, basalt-tserver, or a stand-in program
// that honours the same flags) started by a test harness.
//
// The daemon lives in its own directory `dir`:
//   dir/data/        --fs_data_dir (kept across restarts, so the server keeps its uuid and data)
//   dir/info.json    --server_dump_info_path (removed before every start)
//   dir/<name>.log   stdout and stderr of every run, appended, one "==== start" line per run
// and is started as
//   <exe> --fs_data_dir=dir/data --rpc_bind_addresses=<host>:<rpc_port>
//         --server_dump_info_path=dir/info.json <flags...>
// (gflags lets a later flag override an earlier one, so `flags` may override the standard ones).
// With ExternalDaemonOptions::netns_path the process runs in that network namespace.
// The port is fixed by the caller (see reserved_port.h), so the address survives restarts.
//
// Start() forks and execs the program and waits, with a deadline, until the daemon has written
// its info file; if the process dies first or the deadline passes it is killed and the error
// carries the tail of its log. The child gets PR_SET_PDEATHSIG(SIGKILL): when the thread that
// started it dies (for instance a test process killed by ctest's timeout) the daemon is killed
// too, so no daemon outlives its test. Hence the thread calling Start()/Restart() must outlive
// the daemon's run (gtest's main thread does).
//
// Lifecycle: constructed stopped; Start() → running; Pause()/Resume() toggle SIGSTOP/SIGCONT;
// Kill() (SIGKILL) or Shutdown() (SIGTERM, then SIGKILL after the shutdown timeout) → stopped;
// Start()/Restart() again reuse the same directory, port and flags. The destructor kills a
// daemon that is still running. Every process started is reaped.
//
// Not thread-safe; the caller serializes. name(), rpc_address(), rpc_port(), log_path(),
// data_dir() and netns_path() are constant after construction and may be read from any thread.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "testing/server_info.h"

namespace basalt {

struct ExternalDaemonOptions {
  // Names the log file and appears in every message ("master-0", "ts-2").
  std::string name;
  // Absolute path of the program.
  std::string exe;
  // The daemon's directory (created if missing).
  std::string dir;
  std::string host = "127.0.0.1";
  // A network namespace file (/run/netns/<name>) the process runs in (setns(2) in the child
  // before exec), so that `host` can be an address of that namespace; empty: this process's
  // namespace. See netns.h.
  std::string netns_path;
  // REQUIRES: nonzero (reserved by the caller, so it is stable across restarts).
  uint16_t rpc_port = 0;
  // Appended after the standard flags, as "--name=value" strings.
  std::vector<std::string> flags;
  // How long Start() waits for the info file.
  absl::Duration start_timeout = absl::Seconds(60);
  // How long Shutdown() waits after SIGTERM before SIGKILL.
  absl::Duration shutdown_timeout = absl::Seconds(15);
};

class ExternalDaemon {
 public:
  explicit ExternalDaemon(ExternalDaemonOptions options);
  ~ExternalDaemon();
  ExternalDaemon(const ExternalDaemon&) = delete;
  ExternalDaemon& operator=(const ExternalDaemon&) = delete;

  // Starts the process and waits for its info file. FAILED_PRECONDITION if already running;
  // NOT_FOUND if the program does not exist; INTERNAL if the process exits before serving or
  // writes an info file that does not match it (pid, port); DEADLINE_EXCEEDED after
  // start_timeout; DATA_LOSS for a malformed info file. Every error names the daemon and ends with
  // the tail of its log, and leaves no process behind.
  absl::Status Start();
  // Start() in two halves, so a harness can start daemons that wait for each other (the masters
  // of a forming catalog group): BeginStart spawns the process, FinishStart waits for its info
  // file. The thread that calls BeginStart (it forks) must outlive the daemon: the child's
  // parent-death signal fires when that thread exits. The same holds for Start and Restart.
  absl::Status BeginStart();
  absl::Status FinishStart();
  // SIGKILL and reap. No-op when not running.
  void Kill();
  // SIGSTOP; returns once the process is stopped. FAILED_PRECONDITION if not running.
  absl::Status Pause();
  // SIGCONT. FAILED_PRECONDITION if not running.
  absl::Status Resume();
  // SIGTERM (and SIGCONT if paused), then waits up to shutdown_timeout for the process to exit,
  // then SIGKILL. OK if it exited with code 0 (or died of the SIGTERM); DEADLINE_EXCEEDED if it
  // had to be killed; INTERNAL for another exit status (with the log tail). The process is gone
  // in every case. OK when not running.
  absl::Status Shutdown();
  // Shutdown() in two halves, so a harness can stop several daemons at once: BeginShutdown sends
  // the signals (no-op when not running); FinishShutdown waits (up to shutdown_timeout from
  // BeginShutdown) and returns what Shutdown() would (OK if no shutdown was begun).
  void BeginShutdown();
  absl::Status FinishShutdown();
  // Shutdown() if running (its error is ignored: a restart is about the next run), then Start().
  absl::Status Restart();
  // The same with `added_flags` appended to the flags, for this and every later run.
  absl::Status Restart(const std::vector<std::string>& added_flags);

  // True while the process started by this object has not exited (paused counts as running).
  // A process found dead is reaped and its exit recorded (last_exit()).
  bool IsRunning();
  bool IsPaused() const { return paused_; }
  // True if the last run ended without Kill()/Shutdown(): the daemon crashed or exited by itself.
  bool ExitedUnexpectedly() const { return exited_unexpectedly_; }

  const std::string& name() const { return options_.name; }
  // From the info file of the latest successful start; empty before.
  const std::string& uuid() const { return info_.uuid; }
  const ServerInfo& info() const { return info_; }
  uint16_t rpc_port() const { return options_.rpc_port; }
  // "host:port".
  const std::string& rpc_address() const { return rpc_address_; }
  // 0 when not running.
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // Empty unless the daemon runs in a network namespace of its own.
  const std::string& netns_path() const { return options_.netns_path; }
  const std::string& data_dir() const { return data_dir_; }
  const std::string& info_path() const { return info_path_; }
  const std::vector<std::string>& flags() const { return options_.flags; }
  void set_flags(std::vector<std::string> flags) { options_.flags = std::move(flags); }
  // "exited with code 1", "killed by signal 9", or empty if no run has ended.
  const std::string& last_exit() const { return last_exit_; }

  // The last `max_lines` lines of the log written since the latest start (the whole log if the
  // daemon never started), prefixed by a header line naming the daemon and the log file.
  std::string LogTail(int max_lines = 40) const;

 private:
  // The full command line of a run.
  std::vector<std::string> CommandLine() const;
  // Forks and execs; on success pid_ is set. Does not wait for the info file.
  absl::Status Spawn();
  // Polls for the info file until the deadline, the process dying, or a bad file.
  absl::Status WaitForInfoFile();
  // Records how a reaped process ended (wait status) and clears pid_.
  void Reaped(int wait_status, bool expected);
  // `s` with " [<name>]" context and the log tail appended.
  absl::Status WithLogTail(const absl::Status& s) const;

  ExternalDaemonOptions options_;
  const std::string rpc_address_;
  const std::string data_dir_;
  const std::string info_path_;
  const std::string log_path_;

  pid_t pid_ = 0;
  bool paused_ = false;
  bool exited_unexpectedly_ = false;
  // Set by BeginShutdown until FinishShutdown.
  std::optional<absl::Time> shutdown_started_;
  // Size of the log file when the latest run started (where LogTail starts).
  uint64_t log_start_offset_ = 0;
  ServerInfo info_;
  std::string last_exit_;
};

// Describes a waitpid() status: "exited with code 1", "killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status);

// The last `max_lines` lines of file `path` at or after byte `offset` (at most the last 64 KiB);
// a note instead if the file cannot be read.
std::string ReadLogTail(const std::string& path, uint64_t offset, int max_lines);

}  // namespace basalt
