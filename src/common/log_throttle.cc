#include "common/log_throttle.h"

#include "common/strings.h"

namespace basalt {

int64_t LogThrottle::Record(absl::Time now) {
  absl::MutexLock l(&mu_);
  // `now < last_line_`: the clock went back; trusting it would silence the event for as long as
  // the step, so a line is due (and the interval restarts from the new reading).
  if (logged_ && now >= last_line_ && now - last_line_ < interval_) {
    ++suppressed_;
    return 0;
  }
  const int64_t n = suppressed_ + 1;
  logged_ = true;
  last_line_ = now;
  suppressed_ = 0;
  return n;
}

int64_t LogThrottle::Reset() {
  absl::MutexLock l(&mu_);
  const int64_t unreported = suppressed_;
  logged_ = false;
  suppressed_ = 0;
  return unreported;
}

int64_t LogThrottle::suppressed() const {
  absl::MutexLock l(&mu_);
  return suppressed_;
}

std::string LogThrottle::Times(int64_t n) {
  return n > 1 ? StrCat(" (", n, " times since the last report)") : std::string();
}

}  // namespace basalt
