#pragma once

// A TCP port on a loopback address reserved for a daemon the test harness starts.
//
// Reserve() binds a socket to <host>:0 with SO_REUSEPORT and keeps it open, without listening,
// for the reservation's lifetime. While it is held the kernel hands the port to no other
// ephemeral bind and to no outgoing connection, so it stays free across daemon restarts, and the
// daemon (whose gRPC server binds with SO_REUSEPORT, gRPC's default on Linux) can still bind and
// listen on it. Connections go only to the listening socket.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace basalt {

// Move-only owner of the reserving socket; the destructor releases the port.
// Not thread-safe; the caller serializes.
class ReservedPort {
 public:
  // Binds `host` (an IPv4 literal) port 0. Errors: INVALID_ARGUMENT for a bad host; the socket
  // error otherwise.
  static absl::StatusOr<ReservedPort> Reserve(const std::string& host = "127.0.0.1");

  ReservedPort(ReservedPort&& other) noexcept;
  ReservedPort& operator=(ReservedPort&& other) noexcept;
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;
  ~ReservedPort();

  uint16_t port() const { return port_; }
  const std::string& host() const { return host_; }
  // "host:port".
  std::string address() const;

 private:
  ReservedPort(int fd, std::string host, uint16_t port);
  void Release();

  int fd_ = -1;
  std::string host_;
  uint16_t port_ = 0;
};

}  // namespace basalt
