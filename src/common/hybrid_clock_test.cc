#include "common/hybrid_clock.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace hybrid_clock_test_file {

constexpr int64_t kStart = 1'700'000'000'000'000;  // Nov 2023 in microseconds.

TEST(HybridTimeTest, EncodingIsPhysicalShiftedPlusLogical) {
  const HybridTime ht = HybridTime::FromMicros(1234567, 89);
  EXPECT_EQ(ht.value(), (uint64_t{1234567} << 12) | 89);
  EXPECT_EQ(ht.physical_micros(), 1234567u);
  EXPECT_EQ(ht.logical(), 89u);
  EXPECT_TRUE(ht.is_valid());
  EXPECT_EQ(HybridTime(ht.value()), ht);
  // Golden raw value: the encoding is persisted.
  EXPECT_EQ(HybridTime::FromMicros(1, 1).value(), 4097u);
}

TEST(HybridTimeTest, OrderingIsPhysicalThenLogical) {
  EXPECT_LT(HybridTime::FromMicros(10, 4095), HybridTime::FromMicros(11, 0));
  EXPECT_LT(HybridTime::FromMicros(10, 1), HybridTime::FromMicros(10, 2));
  EXPECT_EQ(HybridTime::FromMicros(10, 4095).Next(), HybridTime::FromMicros(11, 0));
  EXPECT_LT(HybridTime::kMin, HybridTime::FromMicros(0, 1));
  EXPECT_LT(HybridTime::FromMicros(HybridTime::kMaxPhysicalMicros, 4093), HybridTime::kMax);
  EXPECT_GT(HybridTime::kMax, HybridTime::FromMicros(kStart));
}

TEST(HybridTimeTest, SpecialValues) {
  EXPECT_FALSE(HybridTime().is_valid());
  EXPECT_EQ(HybridTime(), HybridTime::kInvalid);
  EXPECT_TRUE(HybridTime::kMin.is_valid());
  EXPECT_TRUE(HybridTime::kMax.is_valid());
  EXPECT_EQ(HybridTime::kMin.ToString(), "HT_MIN");
  EXPECT_EQ(HybridTime::kMax.ToString(), "HT_MAX");
  EXPECT_EQ(HybridTime::kInvalid.ToString(), "HT_INVALID");
  EXPECT_EQ(HybridTime::FromMicros(5, 3).ToString(), "HT{P: 5 us, L: 3}");
  std::ostringstream os;
  os << HybridTime::FromMicros(7);
  EXPECT_EQ(os.str(), "HT{P: 7 us, L: 0}");
}

TEST(HybridClockTest, NowFollowsPhysicalTime) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  EXPECT_EQ(hc.Peek(), HybridTime::kMin);
  const HybridTime a = hc.Now();
  EXPECT_EQ(a, HybridTime::FromMicros(kStart));
  EXPECT_EQ(hc.Peek(), a);
  clock.AdvanceMicros(10);
  EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart + 10));
}

TEST(HybridClockTest, LogicalIncrementsWhilePhysicalStalls) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  for (uint64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart, i));
  }
  clock.AdvanceMicros(1);
  EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart + 1, 0));
}

TEST(HybridClockTest, LogicalOverflowCarriesIntoPhysical) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  HybridTime last;
  for (uint64_t i = 0; i <= HybridTime::kLogicalMask; ++i) last = hc.Now();
  EXPECT_EQ(last, HybridTime::FromMicros(kStart, HybridTime::kLogicalMask));
  EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart + 1, 0));
  EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart + 1, 1));
  // Physical time catching up to the borrowed microsecond continues from there.
  clock.AdvanceMicros(1);
  EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart + 1, 2));
  clock.AdvanceMicros(1);
  EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart + 2, 0));
}

TEST(HybridClockTest, MonotonicWhenWallClockStepsBackwards) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  const HybridTime before = hc.Now();
  clock.SetNowMicros(kStart - 1'000'000);
  HybridTime prev = before;
  for (int i = 0; i < 50; ++i) {
    const HybridTime t = hc.Now();
    EXPECT_GT(t, prev);
    EXPECT_EQ(t.physical_micros(), static_cast<uint64_t>(kStart));
    prev = t;
  }
  clock.SetNowMicros(kStart + 5);
  EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart + 5));
}

TEST(HybridClockTest, UpdateFromRemoteAheadMovesClockForward) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  hc.Now();
  const HybridTime remote = HybridTime::FromMicros(kStart + 100000, 7);
  BASALT_ASSERT_OK(hc.Update(remote));
  EXPECT_EQ(hc.Peek(), remote);
  EXPECT_EQ(hc.Now(), remote.Next());
  // Once physical time passes the remote timestamp, the physical part takes over again.
  clock.AdvanceMicros(200000);
  EXPECT_EQ(hc.Now(), HybridTime::FromMicros(kStart + 200000));
}

TEST(HybridClockTest, UpdateWithOlderTimestampIsNoOp) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  const HybridTime now = hc.Now();
  BASALT_ASSERT_OK(hc.Update(HybridTime::FromMicros(kStart - 10)));
  BASALT_ASSERT_OK(hc.Update(now));
  EXPECT_EQ(hc.Peek(), now);
  EXPECT_EQ(hc.Now(), now.Next());
}

TEST(HybridClockTest, UpdateRejectsTimestampTooFarAhead) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  const HybridTime before = hc.Now();
  // Exactly at the bound (any logical) is accepted; one microsecond beyond is not.
  const HybridTime too_far = HybridTime::FromMicros(kStart + 500001);
  const absl::Status s = hc.Update(too_far);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("ahead of local physical time"), std::string::npos) << s;
  EXPECT_EQ(hc.Peek(), before);  // Not adopted.
  EXPECT_EQ(hc.Now(), before.Next());
  const HybridTime at_bound = HybridTime::FromMicros(kStart + 500000, 4095);
  BASALT_ASSERT_OK(hc.Update(at_bound));
  EXPECT_EQ(hc.Peek(), at_bound);
  // As local time advances, the previously rejected timestamp becomes acceptable.
  clock.AdvanceMicros(1);
  BASALT_EXPECT_OK(hc.Update(too_far));
}

TEST(HybridClockTest, UpdateRejectsInvalidTimestamps) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  EXPECT_EQ(hc.Update(HybridTime::kInvalid).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(hc.Update(HybridTime::kMax).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(hc.Peek(), HybridTime::kMin);
}

TEST(HybridClockTest, NowWithErrorReportsConfiguredBound) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 1234);
  const auto [now, error] = hc.NowWithError();
  EXPECT_EQ(now, HybridTime::FromMicros(kStart));
  EXPECT_EQ(error, 1234u);
  EXPECT_GT(hc.NowWithError().first, now);
  EXPECT_EQ(hc.max_error_us(), 1234);
}

TEST(HybridClockTest, DefaultMaxErrorComesFromFlag) {
  EXPECT_EQ(FLAGS_hybrid_clock_max_error_us, 500000);
  ManualClock clock(kStart);
  HybridClock hc(&clock);
  EXPECT_EQ(hc.max_error_us(), 500000);
}

TEST(HybridClockTest, ConcurrentNowValuesAreUniqueAndIncreasingPerThread) {
  ManualClock clock(kStart);
  HybridClock hc(&clock, 500000);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::vector<HybridTime>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      results[t].reserve(kPerThread);
      for (int i = 0; i < kPerThread; ++i) {
        if (t == 0 && i % 100 == 0) clock.AdvanceMicros(1);  // Mix physical and logical steps.
        results[t].push_back(hc.Now());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> all;
  for (const auto& r : results) {
    for (size_t i = 1; i < r.size(); ++i) ASSERT_LT(r[i - 1], r[i]);
    for (HybridTime ht : r) all.push_back(ht.value());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "duplicate timestamp";
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
}

}  // namespace hybrid_clock_test_file
}  // namespace
}  // namespace basalt
