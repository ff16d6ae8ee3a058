#include "common/rate_limiter.h"

#include <cstdint>

#include <gtest/gtest.h>

#include "common/random.h"

namespace basalt {
namespace {
namespace rate_limiter_test_file {

constexpr int64_t kStart = 1'000'000'000;

TEST(RateLimiterTest, WithinTheBurstNothingWaits) {
  RateLimiter r(/*bytes_per_sec=*/1000, /*burst_bytes=*/500);
  EXPECT_EQ(r.Charge(200, kStart), absl::ZeroDuration());
  EXPECT_EQ(r.Charge(300, kStart), absl::ZeroDuration());
  // 100 bytes beyond the burst at 1000 bytes/s: 100 ms.
  EXPECT_EQ(r.Charge(100, kStart), absl::Milliseconds(100));
}

TEST(RateLimiterTest, ASteadyReaderIsHeldToTheRate) {
  RateLimiter r(1000, 0);
  int64_t now = kStart;
  // Each 100-byte read waits 100 ms after the previous one was paid for.
  EXPECT_EQ(r.Charge(100, now), absl::Milliseconds(100));
  now += 100'000;
  EXPECT_EQ(r.Charge(100, now), absl::Milliseconds(100));
  // A reader that comes back late pays only for its own bytes.
  now += 5'000'000;
  EXPECT_EQ(r.Charge(100, now), absl::Milliseconds(100));
}

TEST(RateLimiterTest, AnIdleReaderKeepsNoMoreThanTheBurst) {
  RateLimiter r(1000, 100);
  EXPECT_EQ(r.Charge(100, kStart), absl::ZeroDuration());
  // An hour idle: still only the burst is free.
  const int64_t later = kStart + 3600LL * 1'000'000;
  EXPECT_EQ(r.Charge(100, later), absl::ZeroDuration());
  EXPECT_EQ(r.Charge(100, later), absl::Milliseconds(100));
}

// Whatever the read sizes, a reader that waits as told reads at most rate * T + burst in any
// time T from its start (the property the scrubber's --scrub_bytes_per_sec relies on), and a
// reader that never idles is not held below the rate.
TEST(RateLimiterTest, RandomReadSizesStayWithinRateTimesTimePlusBurst) {
  const uint64_t seed = 20261201;
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  Random rng(seed);
  constexpr int64_t kRate = 8 << 20;
  constexpr int64_t kBurst = 1 << 20;
  for (bool idles : {false, true}) {
    RateLimiter r(kRate, kBurst);
    int64_t now = kStart;
    int64_t bytes = 0;
    for (int i = 0; i < 10000; ++i) {
      const int64_t n = 1 + static_cast<int64_t>(rng.Uniform(4 << 20));
      now += absl::ToInt64Microseconds(r.Charge(n, now));
      bytes += n;  // Read at `now`, after the wait.
      const double allowed = static_cast<double>(now - kStart) / 1e6 * kRate + kBurst;
      ASSERT_LE(static_cast<double>(bytes), allowed + 1) << "read " << i << " idles " << idles;
      if (idles && rng.OneIn(10)) now += static_cast<int64_t>(rng.Uniform(200'000));
    }
    if (!idles) {
      // Busy all along: within a microsecond per read of exactly rate * T + burst.
      const double used = static_cast<double>(now - kStart) / 1e6 * kRate + kBurst;
      EXPECT_GE(static_cast<double>(bytes), used - 10000.0 * kRate / 1e6);
    }
  }
}

}  // namespace rate_limiter_test_file
}  // namespace
}  // namespace basalt
