#pragma once

// RequestTracker: the client's half of exactly-once writes (docs/client.md "Retries"). A client
// has a random id; each write request gets the next sequence number, which all its attempts
// carry, so that a tablet server answers a retry of a request it applied with the first answer
// instead of applying it again. The watermark, the lowest sequence number not yet completed,
// tells servers which answers the client will never ask for again. Private to src/client.
//
// Thread-safe.

#include <cstdint>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace basalt::client::internal {

class RequestTracker {
 public:
  // A new client id: 128 random bits in hex.
  RequestTracker();
  explicit RequestTracker(std::string client_id) : client_id_(std::move(client_id)) {}

  const std::string& client_id() const { return client_id_; }
  // The sequence number of a new request, incomplete until Complete.
  uint64_t Start() ABSL_LOCKS_EXCLUDED(mu_);
  // The lowest sequence number not completed (the next one if none is in flight).
  uint64_t FirstIncomplete() const ABSL_LOCKS_EXCLUDED(mu_);
  // The request got its final answer (or its caller gave up on it).
  void Complete(uint64_t seq) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string client_id_;
  mutable absl::Mutex mu_;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 1;
  std::set<uint64_t> incomplete_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::client::internal
