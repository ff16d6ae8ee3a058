#pragma once

// RateLimiter: paces a background reader (the block scrubber) to a byte rate.
//
// A virtual schedule (the generic cell rate algorithm): every charge of n bytes moves a "paid
// until" time forward by n / rate, starting from now if it lies in the past. The caller waits
// until the bytes it charged are paid for, less a burst allowance, before it uses them. So over
// any period of length T the bytes charged are at most rate * T + burst, whatever the sizes of
// the charges, and an idle reader cannot save up more than the burst.
//
//   absl::Duration wait = limiter.Charge(n, clock->MonotonicMicros());
//   <wait `wait` (interruptibly)>; <read n bytes>
//
// Time is passed in, never read, so tests drive it without sleeping.
// Not thread-safe; the caller serializes (one reader owns a limiter).

#include <cstdint>

#include "absl/time/time.h"

namespace basalt {

class RateLimiter {
 public:
  // REQUIRES: bytes_per_sec > 0, burst_bytes >= 0.
  RateLimiter(int64_t bytes_per_sec, int64_t burst_bytes);

  // Charges `bytes` at monotonic time `now_micros` and returns how long the caller must wait
  // before using them (zero while within the burst). Times passed must not decrease.
  absl::Duration Charge(int64_t bytes, int64_t now_micros);

  int64_t bytes_per_sec() const { return bytes_per_sec_; }

 private:
  const int64_t bytes_per_sec_;
  const double burst_micros_;  // The burst expressed as time at the rate.
  // When every byte charged so far is paid for; meaningful once charged_ is set.
  double paid_until_micros_ = 0;
  bool charged_ = false;
};

}  // namespace basalt
