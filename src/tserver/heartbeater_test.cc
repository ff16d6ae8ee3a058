#include "tserver/heartbeater.h"

#include <climits>

#include <gtest/gtest.h>

#include "common/random.h"

namespace basalt {
namespace {
namespace heartbeater_test_file {

constexpr double kMiddle = 0.5;  // The jitter draw that scales by exactly 1.

TEST(HeartbeatRetryDelayTest, StartsAtTheIntervalAndDoublesUpToTheCap) {
  const absl::Duration interval = absl::Seconds(1);
  const absl::Duration cap = absl::Seconds(10);
  const absl::Duration expected[] = {absl::Seconds(1), absl::Seconds(2),  absl::Seconds(4),
                                     absl::Seconds(8), absl::Seconds(10), absl::Seconds(10)};
  for (int failures = 1; failures <= 6; ++failures) {
    EXPECT_EQ(HeartbeatRetryDelay(interval, cap, failures, kMiddle), expected[failures - 1])
        << failures;
  }
}

TEST(HeartbeatRetryDelayTest, JitterIsPlusMinusAQuarter) {
  const absl::Duration interval = absl::Milliseconds(200);
  const absl::Duration cap = absl::Seconds(10);
  EXPECT_EQ(HeartbeatRetryDelay(interval, cap, 1, 0.0), absl::Milliseconds(150));
  EXPECT_EQ(HeartbeatRetryDelay(interval, cap, 3, 0.0), absl::Milliseconds(600));
  EXPECT_EQ(HeartbeatRetryDelay(interval, cap, 100, 0.0), absl::Milliseconds(7500));
  EXPECT_LT(HeartbeatRetryDelay(interval, cap, 1, 0.999999), absl::Milliseconds(250));
  EXPECT_GT(HeartbeatRetryDelay(interval, cap, 1, 0.999999), absl::Milliseconds(249));
  EXPECT_LT(HeartbeatRetryDelay(interval, cap, 100, 0.999999), absl::Milliseconds(12500));
}

TEST(HeartbeatRetryDelayTest, RandomDrawsStayWithinTheBoundsAndSpread) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  const absl::Duration interval = absl::Milliseconds(500);
  const absl::Duration cap = absl::Seconds(10);
  absl::Duration lowest = absl::InfiniteDuration();
  absl::Duration highest = absl::ZeroDuration();
  for (int i = 0; i < 1000; ++i) {
    const absl::Duration d = HeartbeatRetryDelay(interval, cap, 50, rng.NextDouble());
    ASSERT_GE(d, cap * 0.75) << "seed=" << seed;
    ASSERT_LT(d, cap * 1.25) << "seed=" << seed;
    lowest = std::min(lowest, d);
    highest = std::max(highest, d);
  }
  // Servers that lost the same master spread their retries over the jitter range.
  EXPECT_GT(highest - lowest, cap * 0.4) << "seed=" << seed;
}

TEST(HeartbeatRetryDelayTest, AnIntervalAboveTheCapWins) {
  EXPECT_EQ(HeartbeatRetryDelay(absl::Seconds(20), absl::Seconds(10), 1, kMiddle),
            absl::Seconds(20));
  EXPECT_EQ(HeartbeatRetryDelay(absl::Seconds(20), absl::Seconds(10), 5, kMiddle),
            absl::Seconds(20));
}

TEST(HeartbeatRetryDelayTest, ALongOutageDoesNotOverflow) {
  EXPECT_EQ(HeartbeatRetryDelay(absl::Milliseconds(1), absl::Hours(24 * 24), INT_MAX, kMiddle),
            absl::Hours(24 * 24));
  EXPECT_EQ(HeartbeatRetryDelay(absl::Seconds(1), absl::Seconds(10), INT_MAX, kMiddle),
            absl::Seconds(10));
}

}  // namespace heartbeater_test_file
}  // namespace
}  // namespace basalt
