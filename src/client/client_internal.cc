#include "client/client_internal.h"

#include <algorithm>
#include <functional>
#include <thread>

#include "absl/time/clock.h"
#include "client/elastic_thread_pool.h"
#include "client/frame_targets.h"
#include "client/master_proxy.h"
#include "client/meta_cache.h"
#include "client/thread_pool.h"
#include "common/random.h"
#include "common/strings.h"
#include "rpc/net_util.h"

namespace basalt::client::internal {

ClientData::ClientData() = default;

ClientData::~ClientData() {
  if (pool != nullptr) pool->Shutdown();
}

std::shared_ptr<grpc::Channel> ClientData::Channel(const std::string& address) {
  absl::MutexLock l(&mu);
  auto& ch = channels[address];
  if (ch == nullptr) ch = NewChannel(address);
  return ch;
}

void ClientData::ObserveTimestamp(uint64_t ts) {
  uint64_t cur = latest_observed_timestamp.load(std::memory_order_relaxed);
  while (ts > cur && !latest_observed_timestamp.compare_exchange_weak(cur, ts)) {
  }
}

absl::Duration AttemptTimeout(absl::Duration total, absl::Duration floor) {
  return std::min(total, std::max(total / 3, floor));
}

bool Backoff::Sleep() {
  const absl::Time now = absl::Now();
  if (now >= deadline_) return false;
  attempts_++;
  const int shift = std::min(attempts_ - 1, 8);
  absl::Duration delay = std::min(absl::Milliseconds(5) * (1 << shift), max_delay_);
  // Jitter: 50% to 100% of the delay, so that many clients do not retry in lockstep.
  static thread_local Random rng(static_cast<uint64_t>(absl::GetCurrentTimeNanos()) ^
                                 std::hash<std::thread::id>{}(std::this_thread::get_id()));
  delay = delay / 2 + delay / 2 * (rng.Uniform(1000) / 1000.0);
  const absl::Duration left = deadline_ - now;
  absl::SleepFor(std::min(delay, left));
  return absl::Now() < deadline_;
}

absl::Status TimedOut(std::string_view what, int attempts, const absl::Status& last) {
  return absl::DeadlineExceededError(
      StrCat(what, " timed out after ", attempts, " attempt(s); last error: ", last.ToString()));
}

}  // namespace basalt::client::internal
