#pragma once

// Hybrid logical clock (HLC) timestamps for MVCC and replication.
//
// A HybridTime packs a physical time in microseconds since the Unix epoch and a 12-bit logical
// counter into one uint64: value = physical_micros << 12 | logical. Ordering by the raw value
// orders first by physical time, then by logical counter. The encoding is persisted (row
// versions, WAL entries, snapshots) and sent on the wire, so it must not change.
//
//   bits 63..12  physical microseconds since the epoch (52 bits: good until about year 2112)
//   bits 11..0   logical counter
//
// HybridClock issues strictly increasing HybridTimes on one node and folds in timestamps seen
// from other nodes (Update) so causally later events get later timestamps across the cluster.

#include <compare>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

#include <gflags/gflags_declare.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"

DECLARE_int64(hybrid_clock_max_error_us);

namespace basalt {

// A hybrid timestamp value type. Comparisons order by raw value; kInvalid is the largest raw
// value, so compare only valid timestamps. Trivially copyable; thread-compatible.
class HybridTime {
 public:
  static constexpr int kBitsForLogical = 12;
  static constexpr uint64_t kLogicalMask = (uint64_t{1} << kBitsForLogical) - 1;
  static constexpr uint64_t kMaxPhysicalMicros = UINT64_MAX >> kBitsForLogical;

  static const HybridTime kMin;      // Earlier than any real timestamp (raw 0).
  static const HybridTime kMax;      // Later than any real timestamp (raw UINT64_MAX - 1).
  static const HybridTime kInvalid;  // "No timestamp" (raw UINT64_MAX); the default value.

  // Constructs kInvalid.
  constexpr HybridTime() : value_(UINT64_MAX) {}
  // Wraps a raw encoded value (as read from disk or the wire).
  constexpr explicit HybridTime(uint64_t value) : value_(value) {}

  // REQUIRES: micros <= kMaxPhysicalMicros, logical <= kLogicalMask.
  static constexpr HybridTime FromMicros(uint64_t micros, uint64_t logical = 0) {
    return HybridTime((micros << kBitsForLogical) | (logical & kLogicalMask));
  }

  constexpr uint64_t value() const { return value_; }
  constexpr uint64_t physical_micros() const { return value_ >> kBitsForLogical; }
  constexpr uint64_t logical() const { return value_ & kLogicalMask; }
  constexpr bool is_valid() const { return value_ != UINT64_MAX; }

  // Returns the smallest HybridTime greater than this one (logical + 1, carrying into physical).
  // REQUIRES: *this < kMax.
  constexpr HybridTime Next() const { return HybridTime(value_ + 1); }

  // "HT{P: <micros> us, L: <logical>}", or "HT_MIN" / "HT_MAX" / "HT_INVALID".
  std::string ToString() const;

  friend constexpr auto operator<=>(HybridTime a, HybridTime b) = default;

 private:
  uint64_t value_;
};

inline constexpr HybridTime HybridTime::kMin{0};
inline constexpr HybridTime HybridTime::kMax{UINT64_MAX - 1};
inline constexpr HybridTime HybridTime::kInvalid{UINT64_MAX};

std::ostream& operator<<(std::ostream& os, HybridTime ht);

// Issues hybrid timestamps from a physical Clock.
//
// Guarantees:
//  - Now() is strictly monotonic across all threads: each call returns a value greater than every
//    value previously returned by Now() or adopted by Update(), even if the physical clock stalls
//    or steps backwards. When physical time has not advanced past the last timestamp, the logical
//    counter is incremented; a logical overflow carries into the physical part.
//  - Update(observed) makes every later Now() greater than `observed`, unless `observed` is more
//    than max_error_us ahead of local physical time, in which case it is rejected and not adopted:
//    such a timestamp indicates a badly skewed clock on the sender (or corruption), and adopting it
//    would drag this node's timestamps into the future.
//
// Lock order: HybridClock::mu_ is taken before anything the underlying Clock locks.
// Thread-safe.
class HybridClock {
 public:
  // `clock` is borrowed and must outlive this object. `max_error_us` bounds how far ahead of local
  // physical time an observed timestamp may be (see Update) and is the error NowWithError reports.
  // REQUIRES: max_error_us >= 0.
  explicit HybridClock(Clock* clock, int64_t max_error_us = FLAGS_hybrid_clock_max_error_us);

  HybridClock(const HybridClock&) = delete;
  HybridClock& operator=(const HybridClock&) = delete;

  // Returns a timestamp greater than any previously returned or adopted.
  HybridTime Now() ABSL_LOCKS_EXCLUDED(mu_);

  // Returns Now() and the maximum error of its physical part in microseconds: the true time is
  // within [physical - error, physical + error] if the local clock's error bound holds.
  std::pair<HybridTime, uint64_t> NowWithError() ABSL_LOCKS_EXCLUDED(mu_);

  // Advances the clock so later Now() calls exceed `observed` (a timestamp from another node).
  // Returns INVALID_ARGUMENT, leaving the clock unchanged, if `observed` is invalid or its physical
  // time is more than max_error_us ahead of local physical time.
  absl::Status Update(HybridTime observed) ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the last timestamp issued or adopted (kMin before the first), without advancing.
  HybridTime Peek() const ABSL_LOCKS_EXCLUDED(mu_);

  int64_t max_error_us() const { return max_error_us_; }

 private:
  HybridTime NowLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  Clock* const clock_;
  const int64_t max_error_us_;

  mutable absl::Mutex mu_;
  HybridTime last_ ABSL_GUARDED_BY(mu_) = HybridTime::kMin;
};

}  // namespace basalt
