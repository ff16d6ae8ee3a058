#include "common/clock.h"

#include <time.h>

#include <cerrno>

#include <glog/logging.h>

namespace basalt {
namespace {

int64_t ReadClockMicros(clockid_t id) {
  struct timespec ts;
  PCHECK(clock_gettime(id, &ts) == 0) << "clock_gettime";
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

class SystemClock : public Clock {
 public:
  int64_t NowMicros() override { return ReadClockMicros(CLOCK_REALTIME); }
  int64_t MonotonicMicros() override { return ReadClockMicros(CLOCK_MONOTONIC); }
  void SleepForMicros(int64_t micros) override {
    if (micros <= 0) return;
    struct timespec req;
    req.tv_sec = micros / 1000000;
    req.tv_nsec = (micros % 1000000) * 1000;
    // nanosleep updates `req` with the remaining time when a signal interrupts it.
    while (nanosleep(&req, &req) != 0 && errno == EINTR) {
    }
  }
};

}  // namespace

int64_t CoarseWallNanos() {
  struct timespec ts;
  PCHECK(clock_gettime(CLOCK_REALTIME_COARSE, &ts) == 0) << "clock_gettime";
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Clock* Clock::Default() {
  static SystemClock* const clock = new SystemClock();
  return clock;
}

ManualClock::ManualClock(int64_t start_micros, SleepMode sleep_mode)
    : sleep_mode_(sleep_mode), now_micros_(start_micros), monotonic_micros_(start_micros) {}

int64_t ManualClock::NowMicros() {
  absl::MutexLock l(&mu_);
  return now_micros_;
}

int64_t ManualClock::MonotonicMicros() {
  absl::MutexLock l(&mu_);
  return monotonic_micros_;
}

void ManualClock::SleepForMicros(int64_t micros) {
  if (micros <= 0) return;
  absl::MutexLock l(&mu_);
  if (sleep_mode_ == SleepMode::kAdvance) {
    now_micros_ += micros;
    monotonic_micros_ += micros;
    return;
  }
  const int64_t deadline = monotonic_micros_ + micros;
  ++num_sleepers_;
  auto reached = [this, deadline]()
                     ABSL_SHARED_LOCKS_REQUIRED(mu_) { return monotonic_micros_ >= deadline; };
  mu_.Await(absl::Condition(&reached));
  --num_sleepers_;
}

void ManualClock::SetNowMicros(int64_t micros) {
  absl::MutexLock l(&mu_);
  now_micros_ = micros;
}

void ManualClock::AdvanceMicros(int64_t delta_micros) {
  CHECK_GE(delta_micros, 0);
  absl::MutexLock l(&mu_);
  now_micros_ += delta_micros;
  monotonic_micros_ += delta_micros;
}

int ManualClock::num_sleepers() const {
  absl::MutexLock l(&mu_);
  return num_sleepers_;
}

void ManualClock::WaitForSleepers(int n) const {
  absl::MutexLock l(&mu_);
  auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return num_sleepers_ >= n; };
  mu_.Await(absl::Condition(&enough));
}

}  // namespace basalt
