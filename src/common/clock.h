#pragma once

// Clock: the source of physical time for everything in Basalt that reads the time or sleeps
// (hybrid clock, leader leases, election timeouts, maintenance scheduling, retries).
//
// Components take a `Clock*` instead of calling the system directly so tests and simulations can
// substitute a ManualClock and control time exactly.

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace basalt {

// Interface to wall-clock time, monotonic time and sleeping. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns wall-clock time in microseconds since the Unix epoch. May jump backwards or forwards
  // when the system clock is adjusted.
  virtual int64_t NowMicros() = 0;

  // Returns microseconds from an arbitrary fixed origin; never decreases. Use it for timeouts and
  // durations.
  virtual int64_t MonotonicMicros() = 0;

  // Blocks the calling thread for `micros` of this clock's time (no-op when micros <= 0).
  virtual void SleepForMicros(int64_t micros) = 0;

  // Returns the process-wide real clock (CLOCK_REALTIME, CLOCK_MONOTONIC, nanosleep). Never
  // null; the object lives for the whole process and must not be deleted.
  static Clock* Default();
};

// Wall-clock nanoseconds since the Unix epoch from CLOCK_REALTIME_COARSE: up to one kernel tick
// (1-4 ms) behind the precise time, and several times cheaper to read (7 ns against 58 for
// absl::GetCurrentTimeNanos() on this project's VMs). For checks made per row or per call
// against expiry times seconds or minutes away (the client's cached tablet locations); never for
// timestamps, ordering or deadlines.
int64_t CoarseWallNanos();

// A Clock whose time only moves when told to, for deterministic tests.
//
// Wall time and monotonic time are separate values. SetNowMicros() may move wall time anywhere
// (including backwards, to simulate an NTP step); monotonic time only moves forward, through
// AdvanceMicros() or sleeping.
//
// SleepForMicros(d) behaviour depends on the SleepMode chosen at construction:
//  - kAdvance (default): advances both wall and monotonic time by d and returns at once, as if
//    the thread slept exactly d. Good for single-threaded code that sleeps between retries.
//  - kBlock: blocks until another thread has advanced monotonic time by at least d (through
//    AdvanceMicros), then returns. Good for tests driving a background thread step by step.
//
// Thread-safe.
class ManualClock : public Clock {
 public:
  enum class SleepMode { kAdvance, kBlock };

  // An arbitrary but realistic default start: 2023-01-01T00:00:00Z.
  static constexpr int64_t kDefaultStartMicros = 1672531200LL * 1000000;

  explicit ManualClock(int64_t start_micros = kDefaultStartMicros,
                       SleepMode sleep_mode = SleepMode::kAdvance);

  int64_t NowMicros() override ABSL_LOCKS_EXCLUDED(mu_);
  int64_t MonotonicMicros() override ABSL_LOCKS_EXCLUDED(mu_);
  void SleepForMicros(int64_t micros) override ABSL_LOCKS_EXCLUDED(mu_);

  // Sets the wall-clock time; monotonic time is unchanged.
  void SetNowMicros(int64_t micros) ABSL_LOCKS_EXCLUDED(mu_);
  // Advances wall and monotonic time by `delta_micros`, waking sleepers whose time has come.
  // REQUIRES: delta_micros >= 0.
  void AdvanceMicros(int64_t delta_micros) ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the number of threads currently blocked in SleepForMicros (kBlock mode), so a test can
  // wait for a background thread to reach its sleep before advancing time.
  int num_sleepers() const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until at least `n` threads are blocked in SleepForMicros (kBlock mode).
  void WaitForSleepers(int n) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Constant after construction.
  const SleepMode sleep_mode_;

  mutable absl::Mutex mu_;
  int64_t now_micros_ ABSL_GUARDED_BY(mu_);
  int64_t monotonic_micros_ ABSL_GUARDED_BY(mu_);
  int num_sleepers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace basalt
