#include "tablet/rowset_tree.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/coding.h"
#include "common/random.h"

namespace basalt {
namespace {
namespace rowset_tree_test_file {

using Interval = RowSetTree::Interval;

// A 4-byte big-endian key, like an encoded INT32 key without the sign flip.
std::string K(uint32_t v) {
  std::string s(4, '\0');
  EncodeBigEndian32(s.data(), v);
  return s;
}

std::vector<int> Containing(const RowSetTree& t, std::string_view key) {
  std::vector<int> out = {-1};  // Must be replaced, not appended to.
  t.FindContaining(key, &out);
  return out;
}

std::vector<int> Overlapping(const RowSetTree& t, std::string_view lo, std::string_view hi) {
  std::vector<int> out = {-1};
  t.FindOverlapping(lo, hi, &out);
  return out;
}

std::vector<int> BruteContaining(const std::vector<Interval>& iv, std::string_view key) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(iv.size()); ++i) {
    if (iv[i].min_key <= key && key <= iv[i].max_key) out.push_back(i);
  }
  return out;
}

std::vector<int> BruteOverlapping(const std::vector<Interval>& iv, std::string_view lo,
                                  std::string_view hi) {
  std::vector<int> out;
  if (!hi.empty() && hi <= lo) return out;
  for (int i = 0; i < static_cast<int>(iv.size()); ++i) {
    if (iv[i].max_key >= lo && (hi.empty() || iv[i].min_key < hi)) out.push_back(i);
  }
  return out;
}

TEST(KeyPrefix64Test, OrderAgreesWithMemcmp) {
  EXPECT_EQ(KeyPrefix64(""), 0u);
  EXPECT_EQ(KeyPrefix64("\x01"), uint64_t{1} << 56);
  EXPECT_EQ(KeyPrefix64("abcdefghZZZ"), KeyPrefix64("abcdefgh"));
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  for (int i = 0; i < 100000; ++i) {
    // Short strings over a small alphabet, so prefixes and embedded zeros are common.
    std::string a, b;
    for (size_t n = rng.Uniform(11); n > 0; --n) a.push_back("\0\1a\xff"[rng.Uniform(4)]);
    for (size_t n = rng.Uniform(11); n > 0; --n) b.push_back("\0\1a\xff"[rng.Uniform(4)]);
    if (KeyPrefix64(a) < KeyPrefix64(b)) {
      ASSERT_LT(a, b);
    }
    if (a <= b) {
      ASSERT_LE(KeyPrefix64(a), KeyPrefix64(b));
    }
  }
}

TEST(RowSetTreeTest, Empty) {
  RowSetTree t({});
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(Containing(t, "a").empty());
  EXPECT_TRUE(Overlapping(t, "", "").empty());
}

TEST(RowSetTreeTest, NonOverlapping) {
  // Given out of order: index 0 is the rightmost.
  RowSetTree t({{K(300), K(399)}, {K(100), K(199)}, {K(200), K(250)}});
  EXPECT_TRUE(t.non_overlapping());
  EXPECT_EQ(Containing(t, K(99)), std::vector<int>{});
  EXPECT_EQ(Containing(t, K(100)), std::vector<int>{1});
  EXPECT_EQ(Containing(t, K(199)), std::vector<int>{1});
  EXPECT_EQ(Containing(t, K(251)), std::vector<int>{});
  EXPECT_EQ(Containing(t, K(399)), std::vector<int>{0});
  EXPECT_EQ(Containing(t, K(400)), std::vector<int>{});
  EXPECT_EQ(Overlapping(t, "", ""), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Overlapping(t, K(199), K(200)), std::vector<int>{1});
  EXPECT_EQ(Overlapping(t, K(199), K(201)), (std::vector<int>{1, 2}));
  EXPECT_EQ(Overlapping(t, K(251), K(300)), std::vector<int>{});
  EXPECT_EQ(Overlapping(t, K(251), ""), std::vector<int>{0});
  EXPECT_EQ(Overlapping(t, "", K(100)), std::vector<int>{});
  EXPECT_EQ(Overlapping(t, "", K(101)), std::vector<int>{1});
  EXPECT_EQ(Overlapping(t, K(300), K(300)), std::vector<int>{});  // Empty range.
  EXPECT_EQ(Overlapping(t, K(301), K(300)), std::vector<int>{});
}

TEST(RowSetTreeTest, Overlapping) {
  RowSetTree t({{K(0), K(1000)}, {K(100), K(200)}, {K(150), K(150)}, {K(200), K(300)}});
  EXPECT_FALSE(t.non_overlapping());
  EXPECT_EQ(Containing(t, K(150)), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Containing(t, K(200)), (std::vector<int>{0, 1, 3}));  // Inclusive at both ends.
  EXPECT_EQ(Containing(t, K(301)), std::vector<int>{0});
  EXPECT_EQ(Containing(t, K(1001)), std::vector<int>{});
  EXPECT_EQ(Overlapping(t, K(151), K(200)), (std::vector<int>{0, 1}));
  EXPECT_EQ(Overlapping(t, K(151), K(201)), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(Overlapping(t, K(150), ""), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Overlapping(t, K(301), ""), std::vector<int>{0});
}

TEST(RowSetTreeTest, TouchingIntervalsOverlap) {
  // Sharing one key is an overlap: a lookup of that key must consult both.
  RowSetTree t({{"a", "m"}, {"m", "z"}});
  EXPECT_FALSE(t.non_overlapping());
  EXPECT_EQ(Containing(t, "m"), (std::vector<int>{0, 1}));
}

TEST(RowSetTreeTest, LongKeysWithCommonPrefixes) {
  const std::string p(20, 'p');
  RowSetTree t({{p + "b", p + "d"}, {p + "a", p + "b"}, {p, p + "a"}});
  EXPECT_EQ(Containing(t, p + "a"), (std::vector<int>{1, 2}));
  EXPECT_EQ(Containing(t, p + "c"), std::vector<int>{0});
  EXPECT_EQ(Containing(t, p + std::string("d\0", 2)), std::vector<int>{});
  EXPECT_EQ(Containing(t, p), std::vector<int>{2});
  EXPECT_EQ(Containing(t, std::string(19, 'p')), std::vector<int>{});
}

// Random intervals of random density against brute force.
TEST(RowSetTreeTest, RandomAgainstBruteForce) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  auto random_key = [&](uint32_t range) {
    // Mix 4-byte keys with variable-length ones sharing prefixes.
    std::string k = K(static_cast<uint32_t>(rng.Uniform(range)));
    if (rng.OneIn(3)) k += std::string(rng.Uniform(12), "\0a\xff"[rng.Uniform(3)]);
    return k;
  };
  for (int round = 0; round < 300; ++round) {
    const int n = static_cast<int>(rng.Skewed(9));
    const uint32_t range = 1 + static_cast<uint32_t>(rng.Uniform(4 * n + 10));
    const uint32_t max_len = 1 + static_cast<uint32_t>(rng.Uniform(rng.OneIn(2) ? 3 : range));
    std::vector<Interval> iv;
    const bool disjoint = rng.OneIn(3);
    for (int i = 0; i < n; ++i) {
      if (disjoint) {
        iv.push_back({K(10 * i), K(10 * i + static_cast<uint32_t>(rng.Uniform(10)))});
        continue;
      }
      std::string a = random_key(range);
      std::string b = rng.OneIn(10) ? a : K(DecodeBigEndian32(a.data()) + rng.Uniform(max_len));
      if (b < a) std::swap(a, b);
      iv.push_back({a, b});
    }
    if (disjoint) std::shuffle(iv.begin(), iv.end(), std::mt19937_64(rng.Next64()));
    RowSetTree t(iv);
    if (disjoint) {
      ASSERT_TRUE(t.non_overlapping());
    }
    for (int q = 0; q < 50; ++q) {
      const std::string key = rng.OneIn(4) && n > 0 ? iv[rng.Uniform(n)].max_key
                                                    : random_key(disjoint ? 10 * n + 10 : range);
      ASSERT_EQ(Containing(t, key), BruteContaining(iv, key)) << "round " << round;
      std::string lo = rng.OneIn(5) ? "" : random_key(range);
      std::string hi = rng.OneIn(5) ? "" : random_key(range);
      if (rng.OneIn(4) && !hi.empty() && hi < lo) std::swap(lo, hi);
      ASSERT_EQ(Overlapping(t, lo, hi), BruteOverlapping(iv, lo, hi)) << "round " << round;
    }
  }
}

// Lookup speed; run with --gtest_also_run_disabled_tests to print the figures.
double NanosPerLookup(const RowSetTree& t, const std::vector<std::string>& keys) {
  std::vector<int> out;
  size_t found = 0;
  const int kReps = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < kReps; ++r) {
    for (const std::string& k : keys) {
      t.FindContaining(k, &out);
      found += out.size();
    }
  }
  const auto ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start);
  CHECK_GT(found, 0u);
  return ns.count() / (kReps * keys.size());
}

TEST(RowSetTreeTest, DISABLED_Benchmark) {
  Random rng(42);
  for (int n : {10, 10000}) {
    std::vector<std::string> keys;
    for (int i = 0; i < 100000; ++i)
      keys.push_back(K(static_cast<uint32_t>(rng.Uniform(n * 1000))));
    std::vector<Interval> disjoint;
    std::vector<Interval> overlapping;
    for (int i = 0; i < n; ++i) {
      disjoint.push_back({K(i * 1000), K(i * 1000 + 999)});
      // Each interval covers ~4 others' worth of key space: a lookup finds ~4 candidates.
      const uint32_t start = static_cast<uint32_t>(rng.Uniform(n * 1000));
      overlapping.push_back({K(start), K(start + 4000)});
    }
    RowSetTree d(disjoint);
    RowSetTree o(overlapping);
    printf(
        "RowSetTree n=%d: non-overlapping %.1f ns/lookup, overlapping (~4 hits) %.1f ns/lookup\n",
        n, NanosPerLookup(d, keys), NanosPerLookup(o, keys));
  }
}

}  // namespace rowset_tree_test_file
}  // namespace
}  // namespace basalt
