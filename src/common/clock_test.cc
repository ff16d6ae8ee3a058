#include "common/clock.h"

#include <atomic>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace clock_test_file {

TEST(ClockTest, DefaultClockIsSaneAndMonotonic) {
  Clock* clock = Clock::Default();
  ASSERT_NE(clock, nullptr);
  EXPECT_EQ(clock, Clock::Default());
  // After 2020-01-01 and before 2100-01-01.
  const int64_t now = clock->NowMicros();
  EXPECT_GT(now, 1577836800LL * 1000000);
  EXPECT_LT(now, 4102444800LL * 1000000);
  int64_t last = clock->MonotonicMicros();
  for (int i = 0; i < 1000; ++i) {
    const int64_t m = clock->MonotonicMicros();
    ASSERT_GE(m, last);
    last = m;
  }
}

// The coarse clock is the wall clock, at most a tick (and a little scheduling) behind it.
TEST(ClockTest, CoarseWallNanosTrailsTheWallClockByLessThanATick) {
  for (int i = 0; i < 1000; ++i) {
    const int64_t before = Clock::Default()->NowMicros();
    const int64_t coarse = CoarseWallNanos();
    const int64_t after = Clock::Default()->NowMicros();
    ASSERT_LE(coarse / 1000, after) << "ahead of the wall clock";
    // A tick is at most 10 ms (HZ=100); 100 ms more leaves room for preemption between reads.
    ASSERT_GT(coarse / 1000, before - 110000) << "more than a tick behind";
  }
}

TEST(ClockTest, DefaultClockSleepsAtLeastTheRequestedTime) {
  // This measures SleepForMicros itself; it does not wait for anything else.
  Clock* clock = Clock::Default();
  const int64_t start = clock->MonotonicMicros();
  clock->SleepForMicros(2000);
  EXPECT_GE(clock->MonotonicMicros() - start, 2000);
  clock->SleepForMicros(0);
  clock->SleepForMicros(-5);
}

TEST(ManualClockTest, StartsWhereToldAndOnlyMovesWhenTold) {
  ManualClock clock(1000);
  EXPECT_EQ(clock.NowMicros(), 1000);
  EXPECT_EQ(clock.MonotonicMicros(), 1000);
  EXPECT_EQ(clock.NowMicros(), 1000);
  clock.AdvanceMicros(250);
  EXPECT_EQ(clock.NowMicros(), 1250);
  EXPECT_EQ(clock.MonotonicMicros(), 1250);
  ManualClock default_start;
  EXPECT_EQ(default_start.NowMicros(), ManualClock::kDefaultStartMicros);
}

TEST(ManualClockTest, WallClockCanStepBackwardsMonotonicCannot) {
  ManualClock clock(10000);
  clock.SetNowMicros(5000);
  EXPECT_EQ(clock.NowMicros(), 5000);
  EXPECT_EQ(clock.MonotonicMicros(), 10000);
  clock.AdvanceMicros(10);
  EXPECT_EQ(clock.NowMicros(), 5010);
  EXPECT_EQ(clock.MonotonicMicros(), 10010);
}

TEST(ManualClockTest, SleepAdvancesInAdvanceMode) {
  ManualClock clock(0);
  clock.SleepForMicros(300);
  EXPECT_EQ(clock.NowMicros(), 300);
  EXPECT_EQ(clock.MonotonicMicros(), 300);
  clock.SleepForMicros(0);
  clock.SleepForMicros(-10);
  EXPECT_EQ(clock.MonotonicMicros(), 300);
}

TEST(ManualClockTest, SleepBlocksUntilAdvancedInBlockMode) {
  ManualClock clock(0, ManualClock::SleepMode::kBlock);
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.SleepForMicros(100);
    woke = true;
  });
  clock.WaitForSleepers(1);
  EXPECT_EQ(clock.num_sleepers(), 1);
  clock.AdvanceMicros(99);
  // Still short of the deadline: the sleeper must still be registered as sleeping.
  EXPECT_EQ(clock.num_sleepers(), 1);
  EXPECT_FALSE(woke.load());
  clock.AdvanceMicros(1);
  sleeper.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(clock.num_sleepers(), 0);
  // A blocking-mode sleep does not itself move time.
  EXPECT_EQ(clock.MonotonicMicros(), 100);
}

TEST(ManualClockTest, ConcurrentAdvancesAreNotLost) {
  ManualClock clock(0);
  std::thread threads[4];
  for (auto& t : threads) {
    t = std::thread([&] {
      for (int i = 0; i < 1000; ++i) clock.AdvanceMicros(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(clock.MonotonicMicros(), 4000);
}

}  // namespace clock_test_file
}  // namespace
}  // namespace basalt
