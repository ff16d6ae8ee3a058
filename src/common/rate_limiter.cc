#include "common/rate_limiter.h"

#include <algorithm>
#include <cmath>

#include <glog/logging.h>

namespace basalt {

RateLimiter::RateLimiter(int64_t bytes_per_sec, int64_t burst_bytes)
    : bytes_per_sec_(bytes_per_sec),
      burst_micros_(static_cast<double>(burst_bytes) * 1e6 / static_cast<double>(bytes_per_sec)) {
  CHECK_GT(bytes_per_sec, 0);
  CHECK_GE(burst_bytes, 0);
}

absl::Duration RateLimiter::Charge(int64_t bytes, int64_t now_micros) {
  const double now = static_cast<double>(now_micros);
  // An idle period pays nothing forward: the schedule restarts from now (the burst is the only
  // credit an idle reader keeps).
  const double start = charged_ ? std::max(paid_until_micros_, now) : now;
  charged_ = true;
  paid_until_micros_ =
      start + static_cast<double>(std::max<int64_t>(bytes, 0)) * 1e6 / bytes_per_sec_;
  const double wait = paid_until_micros_ - burst_micros_ - now;
  return wait > 0 ? absl::Microseconds(std::ceil(wait)) : absl::ZeroDuration();
}

}  // namespace basalt
