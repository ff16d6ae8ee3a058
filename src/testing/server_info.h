#pragma once

// The info file a daemon writes once it serves (--server_dump_info_path; written by
// WriteServerInfo in server/server_instance.h): one flat JSON object
//   {"uuid": "<32 hex digits>", "rpc_port": 7050, "http_port": 0, "pid": 1234}
// Test harnesses wait for it to learn a daemon's identity and ports.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace basalt {

class Env;

struct ServerInfo {
  std::string uuid;
  int rpc_port = 0;
  int http_port = 0;
  int64_t pid = 0;
};

// Parses the contents of an info file. The object may list its keys in any order, with any JSON
// whitespace, and may carry other keys with string or integer values (ignored). DATA_LOSS naming
// the problem for anything else: not a flat JSON object, a missing or repeated key, a value of the
// wrong type, an empty uuid, a port outside 0..65535, a pid <= 0, trailing bytes.
absl::StatusOr<ServerInfo> ParseServerInfo(std::string_view json);

// Reads and parses the info file at `path`: NOT_FOUND if it does not exist (yet); DATA_LOSS as
// ParseServerInfo, prefixed with the path.
absl::StatusOr<ServerInfo> ReadServerInfo(Env* env, const std::string& path);

}  // namespace basalt
