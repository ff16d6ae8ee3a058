#include "common/random.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace random_test_file {

TEST(RandomTest, SameSeedSameSequence) {
  Random a(12345), b(12345), c(12346);
  bool differs_from_c = false;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t va = a.Next64();
    ASSERT_EQ(va, b.Next64());
    differs_from_c |= va != c.Next64();
  }
  EXPECT_TRUE(differs_from_c);
  EXPECT_EQ(a.Bytes(100), b.Bytes(100));
  EXPECT_EQ(a.RandomString(50), b.RandomString(50));
}

TEST(RandomTest, GoldenSequenceIsStable) {
  // Seeds are replayed across builds and machines, so the sequence for a seed must not change.
  // Expected values: xoshiro256** seeded via splitmix64 from 0 (splitmix64(0) is the reference
  // 0xe220a8397b1dcdaf).
  // Computed with an independent Python transcription of the reference algorithms.
  Random r(0);
  EXPECT_EQ(r.Next64(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(r.Next64(), 0xbf6e1f784956452aull);
  EXPECT_EQ(r.Next64(), 0x1a5f849d4933e6e0ull);
}

TEST(RandomTest, ReseedRestarts) {
  Random r(7);
  const uint64_t first = r.Next64();
  r.Next64();
  r.Reseed(7);
  EXPECT_EQ(r.seed(), 7u);
  EXPECT_EQ(r.Next64(), first);
}

TEST(RandomTest, ZeroSeedIsNotDegenerate) {
  Random r(0);
  std::set<uint64_t> seen;
  for (int i = 0; i < 100; ++i) seen.insert(r.Next64());
  EXPECT_EQ(seen.size(), 100u);
}

TEST(RandomTest, UniformStaysInBounds) {
  Random r(SeedFromEnvOrTime());
  for (uint64_t n : {1ull, 2ull, 3ull, 7ull, 1000ull, (1ull << 63) + 1, ~0ull}) {
    for (int i = 0; i < 2000; ++i) ASSERT_LT(r.Uniform(n), n) << "n=" << n;
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ(r.Uniform(1), 0u);
}

TEST(RandomTest, UniformRangeIsClosedAndHitsBothEnds) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random r(seed);
  bool saw_lo = false, saw_hi = false;
  for (int i = 0; i < 10000; ++i) {
    const int64_t v = r.UniformRange(-3, 4);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 4);
    saw_lo |= v == -3;
    saw_hi |= v == 4;
  }
  EXPECT_TRUE(saw_lo);
  EXPECT_TRUE(saw_hi);
  EXPECT_EQ(r.UniformRange(5, 5), 5);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  bool saw_negative = false, saw_positive = false;
  for (int i = 0; i < 100; ++i) {
    const int64_t v = r.UniformRange(kMin, kMax);
    saw_negative |= v < 0;
    saw_positive |= v > 0;
  }
  EXPECT_TRUE(saw_negative && saw_positive);
  for (int i = 0; i < 100; ++i) EXPECT_GE(r.UniformRange(kMax - 1, kMax), kMax - 1);
}

TEST(RandomTest, UniformIsRoughlyFlat) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random r(seed);
  constexpr int kBuckets = 10;
  constexpr int kDraws = 100000;
  int counts[kBuckets] = {};
  for (int i = 0; i < kDraws; ++i) counts[r.Uniform(kBuckets)]++;
  // Chi-square with 9 degrees of freedom; 40 is far beyond the 99.999th percentile (~33.7).
  double chi2 = 0;
  for (int c : counts) {
    const double expected = static_cast<double>(kDraws) / kBuckets;
    chi2 += (c - expected) * (c - expected) / expected;
  }
  EXPECT_LT(chi2, 40.0);
}

TEST(RandomTest, OneInFrequency) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random r(seed);
  int hits = 0;
  for (int i = 0; i < 100000; ++i) hits += r.OneIn(10);
  // Mean 10000, sd ~95: allow 6 sd.
  EXPECT_NEAR(hits, 10000, 600);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(r.OneIn(1));
}

TEST(RandomTest, NextDoubleInUnitInterval) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random r(seed);
  double sum = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double d = r.NextDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum += d;
  }
  // Mean 0.5, sd of the mean ~0.0009.
  EXPECT_NEAR(sum / kDraws, 0.5, 0.01);
}

TEST(RandomTest, BytesAndStrings) {
  Random r(99);
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 100u}) {
    EXPECT_EQ(r.Bytes(n).size(), n);
    const std::string s = r.RandomString(n);
    ASSERT_EQ(s.size(), n);
    for (char c : s) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << int(c);
  }
  // Bytes covers all byte values over enough draws.
  std::set<unsigned char> values;
  for (char c : r.Bytes(100000)) values.insert(static_cast<unsigned char>(c));
  EXPECT_EQ(values.size(), 256u);
}

TEST(RandomTest, SkewedBounds) {
  Random r(5);
  for (int i = 0; i < 10000; ++i) EXPECT_LT(r.Skewed(10), 1024u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(r.Skewed(0), 0u);
  r.Skewed(63);  // Must not overflow.
}

TEST(RandomTest, SeedFromEnvReadsVariable) {
  ASSERT_EQ(setenv("BASALT_RANDOM_TEST_SEED", "987654321", 1), 0);
  EXPECT_EQ(SeedFromEnvOrTime("BASALT_RANDOM_TEST_SEED"), 987654321u);
  ASSERT_EQ(setenv("BASALT_RANDOM_TEST_SEED", "18446744073709551615", 1), 0);
  EXPECT_EQ(SeedFromEnvOrTime("BASALT_RANDOM_TEST_SEED"), 18446744073709551615ull);
  ASSERT_EQ(unsetenv("BASALT_RANDOM_TEST_SEED"), 0);
  // Unset: time-based; two calls in a row almost surely differ (nanosecond clock, mixed).
  const uint64_t a = SeedFromEnvOrTime("BASALT_RANDOM_TEST_SEED");
  const uint64_t b = SeedFromEnvOrTime("BASALT_RANDOM_TEST_SEED");
  EXPECT_NE(a, b);
}

TEST(RandomDeathTest, SeedFromEnvRejectsGarbage) {
  ASSERT_EQ(setenv("BASALT_RANDOM_TEST_SEED_BAD", "12abc", 1), 0);
  EXPECT_DEATH(SeedFromEnvOrTime("BASALT_RANDOM_TEST_SEED_BAD"), "not an unsigned 64-bit");
  unsetenv("BASALT_RANDOM_TEST_SEED_BAD");
}

}  // namespace random_test_file
}  // namespace
}  // namespace basalt
