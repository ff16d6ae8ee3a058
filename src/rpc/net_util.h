#pragma once

// Addresses: "host:port" strings, HostPortPB, and the gRPC channels and servers every daemon and
// client builds the same way (message size limits, keepalive).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace grpc {
class Channel;
class ServerBuilder;
}  // namespace grpc

namespace basalt {

namespace pb {
class HostPortPB;
}  // namespace pb

// The largest RPC message either side accepts: well above the row-operations decoder's 64 MiB
// payload limit, so that limit (with its clear error) is what a too large write hits, and above
// the largest Raft batch a transport sends (an APPEND of such writes).
inline constexpr int kMaxRpcMessageBytes = 256 << 20;

struct HostPort {
  std::string host;
  uint16_t port = 0;

  // "host:port"; IPv6 hosts in brackets.
  std::string ToString() const;
  void ToPB(pb::HostPortPB* pb) const;
  static HostPort FromPB(const pb::HostPortPB& pb);
  bool operator==(const HostPort& other) const = default;
};

// Parses "host:port", "host" (default_port), "[v6]:port". INVALID_ARGUMENT for an empty host,
// a port that is not a number in 0..65535, or stray characters.
absl::StatusOr<HostPort> ParseHostPort(std::string_view s, uint16_t default_port);
// A comma-separated list ("a:1,b:2"); INVALID_ARGUMENT for an empty list or a bad entry.
absl::StatusOr<std::vector<HostPort>> ParseHostPortList(std::string_view s, uint16_t default_port);

// An insecure channel to `address` ("host:port") with Basalt's message size limits, its own
// connection (not shared with other channels to the address, so one channel's reconnect backoff
// never delays another), and reconnect backoff capped at 2 s, so a restarted server is found again
// within a few heartbeats rather than after gRPC's default of up to two minutes. Channels connect
// lazily; creating one never blocks.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address);
// Applies Basalt's server-side limits to a builder.
void ConfigureServerBuilder(grpc::ServerBuilder* builder);

}  // namespace basalt
