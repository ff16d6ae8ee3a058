#pragma once

// ReplicaWal: where a tablet replica's write-ahead log lives and what can be done with it while
// the replica is not running (tombstoning, tablet copy, cleanup at start): either a directory of
// its own (wals/<id>/ under the WAL directory) or a group of the server's shared log
// (server_log.h; --log_per_server).

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt {

// The server log's directory under a tablet server's WAL directory.
inline constexpr char kServerLogDirName[] = "server-wal";

class Env;
class Log;
class ServerLog;

// A value (copy it freely); its calls are as thread-safe as the directory or server log behind
// it, and must not run while the replica's log is open (Delete) or written (Open).
struct ReplicaWal {
  Env* env = nullptr;
  std::string dir;                  // The log's own directory, when server_log is null.
  ServerLog* server_log = nullptr;  // Borrowed; null: the log has a directory of its own.
  std::string tablet_id;            // The group of server_log.

  // "WAL directory <dir>" or "server WAL group <id>", for messages.
  std::string ToString() const;
  // Whether the log exists (its directory, or a group the server log holds).
  bool Exists() const;
  // Opens the log (creating an empty one if it does not exist); it needs Start() to be written.
  absl::StatusOr<std::unique_ptr<Log>> Open() const;
  // Deletes the log durably; a no-op if it does not exist. The log must not be open.
  absl::Status Delete() const;
};

}  // namespace basalt
