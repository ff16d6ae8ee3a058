#include "client/request_tracker.h"

#include <random>

#include "absl/strings/str_format.h"

namespace basalt::client::internal {

namespace {

std::string RandomClientId() {
  std::random_device rd;
  const uint64_t hi = (uint64_t{rd()} << 32) | rd();
  const uint64_t lo = (uint64_t{rd()} << 32) | rd();
  return absl::StrFormat("%016x%016x", hi, lo);
}

}  // namespace

RequestTracker::RequestTracker() : client_id_(RandomClientId()) {}

uint64_t RequestTracker::Start() {
  absl::MutexLock l(&mu_);
  const uint64_t seq = next_++;
  incomplete_.insert(seq);
  return seq;
}

uint64_t RequestTracker::FirstIncomplete() const {
  absl::MutexLock l(&mu_);
  return incomplete_.empty() ? next_ : *incomplete_.begin();
}

void RequestTracker::Complete(uint64_t seq) {
  absl::MutexLock l(&mu_);
  incomplete_.erase(seq);
}

}  // namespace basalt::client::internal
