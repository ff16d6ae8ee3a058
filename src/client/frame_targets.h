#pragma once

// The frame RPC ports of the tablet servers a client talks to (docs/frame_rpc.md). Write, Scan
// and ScannerKeepAlive go over a server's frame port when it advertises one: one TCP round trip
// with the calling thread doing the I/O, against gRPC's ~100 µs of CPU per call on each side.
//
// Servers are keyed by their gRPC address ("host:port", as in ReplicaLocation). The meta cache
// teaches the frame address from the master's locations (Learn); callers ask Call() first and use
// gRPC when it returns std::nullopt: the server has no frame port, the client was built without
// frame RPC, or the port could not be connected lately (a firewall, a port not published): then
// the server's calls go over gRPC for kRetryAfter before the frame port is tried again.
//
// Thread-safe.

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace basalt {

class FrameCancel;
class FrameChannel;

namespace client::internal {

class FrameTargets {
 public:
  // How long a server whose frame port could not be connected is called over gRPC only.
  static constexpr absl::Duration kRetryAfter = absl::Seconds(30);

  // `enabled` false: Call() always returns std::nullopt. `reply_spin`: the channels' polling
  // for replies (FrameChannel).
  explicit FrameTargets(bool enabled, absl::Duration reply_spin = absl::ZeroDuration())
      : enabled_(enabled), reply_spin_(reply_spin) {}
  ~FrameTargets();
  FrameTargets(const FrameTargets&) = delete;
  FrameTargets& operator=(const FrameTargets&) = delete;

  // The server at gRPC `address` answers frame RPC at `frame_address` ("host:port"; empty: it
  // does not). A changed address gets a new channel.
  void Learn(const std::string& address, const std::string& frame_address) ABSL_LOCKS_EXCLUDED(mu_);

  // Sends `request` as frame method `method` to the server at gRPC `address` and waits for the
  // answer until `deadline`; on OK `*response` holds the serialized response message. Returns
  // the call's status (the server's, or UNAVAILABLE / DEADLINE_EXCEEDED / DATA_LOSS from the
  // transport, as a gRPC call would), or std::nullopt when the caller must use gRPC: nothing was
  // sent.
  // `cancel` (may be null) aborts the call from another thread (FrameCancel).
  std::optional<absl::Status> Call(const std::string& address, int method,
                                   const google::protobuf::MessageLite& request,
                                   absl::Time deadline, std::string* response,
                                   FrameCancel* cancel = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Target {
    std::string frame_address;
    std::shared_ptr<FrameChannel> channel;
    absl::Time grpc_only_until = absl::InfinitePast();
  };

  const bool enabled_;
  const absl::Duration reply_spin_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Target> targets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace client::internal
}  // namespace basalt
