#pragma once

// What every daemon (basalt-master, basalt-tserver) does the same way at startup and shutdown:
// its identity on disk, the info file test harnesses wait for, and signal handling.

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/env.h"

namespace basalt {

// A new random server uuid: 32 lowercase hex digits.
std::string GenerateUuid();

// A daemon's data directory: created if missing, locked for this process (a second daemon on the
// same directory fails with FAILED_PRECONDITION naming it), and holding the file "instance" with
// the server's uuid, created once (fsynced) and never changed.
class ServerInstance {
 public:
  // Opens or initializes `dir`. `kind` ("master", "tserver") is written into a new instance file
  // and checked on later opens, so a tablet server cannot start on a master's directory.
  // DATA_LOSS for an unreadable instance file; FAILED_PRECONDITION for a locked directory or a
  // directory of the other kind; I/O errors.
  static absl::StatusOr<std::unique_ptr<ServerInstance>> Open(Env* env, const std::string& dir,
                                                              std::string_view kind);
  ~ServerInstance();

  const std::string& uuid() const { return uuid_; }
  const std::string& dir() const { return dir_; }

 private:
  ServerInstance(Env* env, std::string dir, std::string uuid, std::unique_ptr<FileLock> lock);

  Env* const env_;
  const std::string dir_;
  const std::string uuid_;
  std::unique_ptr<FileLock> lock_;
};

// Writes `path` atomically as one JSON object
//   {"uuid": "...", "rpc_port": 7050, "http_port": 0, "pid": 1234}
// once the daemon serves. Test harnesses and `basalt local` wait for this file to learn the
// ephemeral ports (--server_dump_info_path).
absl::Status WriteServerInfo(Env* env, const std::string& path, const std::string& uuid,
                             int rpc_port, int http_port);

// Daemon process setup: parses gflags (with `usage` for --help), initializes glog to stderr
// unless --log_dir is given, and blocks SIGINT/SIGTERM/SIGHUP in every thread created later, so
// WaitForTerminationSignal can receive them. Call first thing in main().
void InitDaemon(int* argc, char*** argv, const char* usage);
// Blocks until SIGINT, SIGTERM or SIGHUP arrives; returns its number.
int WaitForTerminationSignal();

}  // namespace basalt
