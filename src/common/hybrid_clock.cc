#include "common/hybrid_clock.h"

#include <algorithm>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/strings/str_cat.h"

DEFINE_int64(hybrid_clock_max_error_us, 500000,
             "Maximum error of the local physical clock in microseconds. A timestamp received "
             "from another node more than this far ahead of local time is rejected.");

namespace basalt {

std::string HybridTime::ToString() const {
  if (*this == kMin) return "HT_MIN";
  if (*this == kMax) return "HT_MAX";
  if (*this == kInvalid) return "HT_INVALID";
  return absl::StrCat("HT{P: ", physical_micros(), " us, L: ", logical(), "}");
}

std::ostream& operator<<(std::ostream& os, HybridTime ht) { return os << ht.ToString(); }

HybridClock::HybridClock(Clock* clock, int64_t max_error_us)
    : clock_(clock), max_error_us_(max_error_us) {
  CHECK(clock != nullptr);
  CHECK_GE(max_error_us, 0);
}

HybridTime HybridClock::NowLocked() {
  const int64_t physical = clock_->NowMicros();
  CHECK_GE(physical, 0) << "wall clock reads before the Unix epoch";
  CHECK_LE(static_cast<uint64_t>(physical), HybridTime::kMaxPhysicalMicros);
  const HybridTime candidate = HybridTime::FromMicros(static_cast<uint64_t>(physical));
  if (candidate > last_) {
    last_ = candidate;
  } else {
    // Physical time has not advanced past the last timestamp (or went backwards): bump the
    // logical part; the raw increment carries a logical overflow into the physical part.
    CHECK_LT(last_.value() + 1, HybridTime::kMax.value()) << "hybrid clock exhausted";
    last_ = last_.Next();
  }
  return last_;
}

HybridTime HybridClock::Now() {
  absl::MutexLock l(&mu_);
  return NowLocked();
}

std::pair<HybridTime, uint64_t> HybridClock::NowWithError() {
  absl::MutexLock l(&mu_);
  return {NowLocked(), static_cast<uint64_t>(max_error_us_)};
}

absl::Status HybridClock::Update(HybridTime observed) {
  if (!observed.is_valid() || observed == HybridTime::kMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot update hybrid clock to ", observed.ToString()));
  }
  absl::MutexLock l(&mu_);
  if (observed <= last_) return absl::OkStatus();
  const int64_t physical = clock_->NowMicros();
  const uint64_t limit = static_cast<uint64_t>(std::max<int64_t>(physical, 0)) + max_error_us_;
  if (observed.physical_micros() > limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "observed hybrid time ", observed.ToString(), " is ",
        static_cast<int64_t>(observed.physical_micros()) - physical,
        " us ahead of local physical time ", physical, " us, more than the maximum clock error ",
        max_error_us_, " us (--hybrid_clock_max_error_us); the sender's clock is skewed"));
  }
  last_ = observed;
  return absl::OkStatus();
}

HybridTime HybridClock::Peek() const {
  absl::MutexLock l(&mu_);
  return last_;
}

}  // namespace basalt
