#pragma once

// FollowerSafeTime: a follower replica's safe time, built from the (time, index) pairs its leader
// sends on appends and heartbeats (docs/cluster.md "Safe time"). A pair (T, I) from the leader of
// term t says: every entry with a timestamp <= T has an index <= I. The follower adopts T once it
// has applied index I, keeping the pair pending until then; the safe time is the maximum adopted.
//
// Invariants: the safe time never decreases; a pair is adopted only after OnApplied reported its
// index; pending pairs all belong to one term and increase in (time, index). Pairs of an older
// term than the pending ones are ignored, a newer term replaces them, and an applied entry of a
// later term than theirs drops them (their leader's uncommitted entries may have been replaced).
//
// Lifecycle: construct; OnApplied(index, 0) for what the state machine holds at open (its term
// unknown); then OnApplied for each entry applied, in log order, and OnLeaderPair as pairs
// arrive.
//
// Thread-safe. get() takes no lock.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace basalt {

class FollowerSafeTime {
 public:
  // Pending pairs kept at most; when full, the newest replaces the last (it covers more and only
  // arrives later, so at worst adoption waits for a later index).
  static constexpr size_t kMaxPending = 8;

  FollowerSafeTime() = default;

  FollowerSafeTime(const FollowerSafeTime&) = delete;
  FollowerSafeTime& operator=(const FollowerSafeTime&) = delete;

  // A pair from the leader of `term`. Returns true if the safe time rose.
  bool OnLeaderPair(uint64_t term, uint64_t time, uint64_t index) ABSL_LOCKS_EXCLUDED(mu_);
  // The entry at `index` of `term` is applied (in log order). Returns true if the safe time rose.
  bool OnApplied(uint64_t index, uint64_t term) ABSL_LOCKS_EXCLUDED(mu_);

  // The safe time (raw; 0 until the first pair is adopted).
  uint64_t get() const { return safe_time_.load(std::memory_order_acquire); }
  // Pairs waiting for their index (tests).
  size_t num_pending() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Pair {
    uint64_t time;
    uint64_t index;
  };
  bool Adopt(uint64_t time) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t applied_index_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t applied_term_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t pending_term_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Pair> pending_ ABSL_GUARDED_BY(mu_);
  // Written under mu_; an atomic so that readers need no lock.
  std::atomic<uint64_t> safe_time_{0};
};

}  // namespace basalt
