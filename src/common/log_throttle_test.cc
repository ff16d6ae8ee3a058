#include "common/log_throttle.h"

#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace log_throttle_test_file {

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

TEST(LogThrottleTest, FirstEventLogsThenOneLinePerIntervalWithTheCount) {
  LogThrottle t(absl::Seconds(60));
  EXPECT_EQ(t.Record(kStart), 1);
  // One event a second for two minutes: a line at 60 s and at 120 s, each for 60 events.
  std::vector<std::pair<int, int64_t>> lines;
  for (int sec = 1; sec <= 120; ++sec) {
    if (int64_t n = t.Record(kStart + absl::Seconds(sec)); n > 0) lines.push_back({sec, n});
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], std::make_pair(60, int64_t{60}));
  EXPECT_EQ(lines[1], std::make_pair(120, int64_t{60}));
  EXPECT_EQ(t.suppressed(), 0);
}

TEST(LogThrottleTest, TheIntervalRunsFromTheLastLineNotTheLastEvent) {
  LogThrottle t(absl::Seconds(10));
  EXPECT_EQ(t.Record(kStart), 1);
  EXPECT_EQ(t.Record(kStart + absl::Seconds(9)), 0);
  EXPECT_EQ(t.suppressed(), 1);
  // Rare events (each more than the interval apart) all log, each for itself.
  EXPECT_EQ(t.Record(kStart + absl::Seconds(10)), 2);
  EXPECT_EQ(t.Record(kStart + absl::Seconds(25)), 1);
  EXPECT_EQ(t.Record(kStart + absl::Seconds(40)), 1);
}

TEST(LogThrottleTest, ResetReturnsTheUnreportedCountAndTheNextEventLogsAtOnce) {
  LogThrottle t(absl::Seconds(60));
  EXPECT_EQ(t.Record(kStart), 1);
  EXPECT_EQ(t.Record(kStart + absl::Seconds(1)), 0);
  EXPECT_EQ(t.Record(kStart + absl::Seconds(2)), 0);
  EXPECT_EQ(t.Reset(), 2);
  EXPECT_EQ(t.suppressed(), 0);
  EXPECT_EQ(t.Record(kStart + absl::Seconds(3)), 1);
  EXPECT_EQ(t.Reset(), 0);
}

TEST(LogThrottleTest, AClockStepBackCostsOneLine) {
  LogThrottle t(absl::Seconds(60));
  EXPECT_EQ(t.Record(kStart), 1);
  EXPECT_EQ(t.Record(kStart - absl::Hours(1)), 1);
  // The interval restarts from the new reading.
  EXPECT_EQ(t.Record(kStart - absl::Hours(1) + absl::Seconds(30)), 0);
  EXPECT_EQ(t.Record(kStart - absl::Hours(1) + absl::Seconds(60)), 2);
}

TEST(LogThrottleTest, ZeroIntervalLogsEveryEvent) {
  LogThrottle t(absl::ZeroDuration());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.Record(kStart), 1);
}

TEST(LogThrottleTest, TimesSuffix) {
  EXPECT_EQ(LogThrottle::Times(0), "");
  EXPECT_EQ(LogThrottle::Times(1), "");
  EXPECT_EQ(LogThrottle::Times(7), " (7 times since the last report)");
}

TEST(LogThrottleTest, ConcurrentEventsAreAllCounted) {
  LogThrottle t(absl::Hours(1));
  constexpr int kThreads = 4;
  constexpr int kEach = 10000;
  std::vector<std::thread> threads;
  std::vector<int64_t> reported(kThreads, 0);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&t, &reported, i] {
      for (int j = 0; j < kEach; ++j) reported[i] += t.Record(kStart);
    });
  }
  for (std::thread& th : threads) th.join();
  int64_t total = t.suppressed();
  for (int64_t r : reported) total += r;
  EXPECT_EQ(total, kThreads * kEach);
  EXPECT_EQ(t.suppressed(), kThreads * kEach - 1);  // One line, the first event.
}

}  // namespace log_throttle_test_file
}  // namespace
}  // namespace basalt
