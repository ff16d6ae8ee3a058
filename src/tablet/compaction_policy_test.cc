#include "tablet/compaction_policy.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/coding.h"
#include "common/random.h"

namespace basalt {
namespace {
namespace compaction_policy_test_file {

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string K(uint32_t v) {
  std::string s(4, '\0');
  EncodeBigEndian32(s.data(), v);
  return s;
}

CompactionCandidate C(int64_t id, uint32_t lo, uint32_t hi, uint64_t size_mb) {
  return CompactionCandidate{id, K(lo), K(hi), size_mb * kMiB};
}

std::vector<double> Widths(const std::vector<CompactionCandidate>& c) {
  std::vector<double> w;
  for (const RowSetKeySpan& s : ComputeRowSetKeySpans(c)) w.push_back(s.width());
  return w;
}

CompactionSelection Pick(const std::vector<CompactionCandidate>& c, uint64_t budget_mb = 128,
                         double min_improvement = 0.01) {
  return BudgetedCompactionPolicy({budget_mb * kMiB, min_improvement}).PickRowSets(c);
}

// The quality of merging the rowsets `ids` of `c`, from the spans.
double QualityOf(const std::vector<CompactionCandidate>& c, const std::vector<int64_t>& ids) {
  const std::vector<RowSetKeySpan> spans = ComputeRowSetKeySpans(c);
  double widths = 0, lo = 1, hi = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::find(ids.begin(), ids.end(), c[i].id) == ids.end()) continue;
    widths += spans[i].width();
    lo = std::min(lo, spans[i].cdf_min);
    hi = std::max(hi, spans[i].cdf_max);
  }
  return widths - (hi - lo);
}

TEST(RowSetKeySpansTest, NonOverlappingWidthsFollowSizes) {
  const std::vector<CompactionCandidate> c = {C(1, 200, 299, 60), C(2, 0, 99, 10),
                                              C(3, 100, 199, 30)};
  const std::vector<RowSetKeySpan> s = ComputeRowSetKeySpans(c);
  EXPECT_NEAR(s[1].cdf_min, 0.0, 1e-12);
  EXPECT_NEAR(s[1].cdf_max, 0.1, 1e-12);
  EXPECT_NEAR(s[2].cdf_min, 0.1, 1e-12);
  EXPECT_NEAR(s[2].cdf_max, 0.4, 1e-12);
  EXPECT_NEAR(s[0].cdf_min, 0.4, 1e-12);
  EXPECT_NEAR(s[0].cdf_max, 1.0, 1e-12);
  EXPECT_NEAR(AverageRowSetHeight(c), 1.0, 1e-12);
}

TEST(RowSetKeySpansTest, StackedRowSetsEachSpanEverything) {
  const std::vector<CompactionCandidate> c = {C(1, 0, 1000, 5), C(2, 0, 1000, 50),
                                              C(3, 0, 1000, 20)};
  for (double w : Widths(c)) EXPECT_NEAR(w, 1.0, 1e-12);
  EXPECT_NEAR(AverageRowSetHeight(c), 3.0, 1e-12);
  EXPECT_EQ(AverageRowSetHeight({}), 0.0);
}

TEST(RowSetKeySpansTest, PartialOverlapInterpolates) {
  // Half of each rowset's bytes lie in the shared [50, 100]: 5 + 10 + 5 MB.
  const std::vector<CompactionCandidate> c = {C(1, 0, 100, 10), C(2, 50, 150, 10)};
  const std::vector<RowSetKeySpan> s = ComputeRowSetKeySpans(c);
  EXPECT_NEAR(s[0].cdf_min, 0.0, 1e-9);
  EXPECT_NEAR(s[0].cdf_max, 0.75, 1e-9);
  EXPECT_NEAR(s[1].cdf_min, 0.25, 1e-9);
  EXPECT_NEAR(s[1].cdf_max, 1.0, 1e-9);
}

TEST(RowSetKeySpansTest, SingleKeyRowSetPlacesItsBytesAtItsKey) {
  const std::vector<CompactionCandidate> c = {C(1, 0, 10, 10), C(2, 5, 5, 10)};
  const std::vector<RowSetKeySpan> s = ComputeRowSetKeySpans(c);
  EXPECT_NEAR(s[0].width(), 1.0, 1e-9);
  EXPECT_NEAR(s[1].cdf_min, 0.25, 1e-9);
  EXPECT_NEAR(s[1].cdf_max, 0.75, 1e-9);
}

TEST(RowSetKeySpansTest, DegenerateRangeIsPlacedAtItsMaxKey) {
  // "b" and "b\0\0" differ only by trailing zero bytes: interpolation cannot tell them apart.
  const std::vector<CompactionCandidate> c = {{1, "b", std::string("b\0\0", 3), 10 * kMiB},
                                              {2, "a", "c", 10 * kMiB}};
  const std::vector<RowSetKeySpan> s = ComputeRowSetKeySpans(c);
  EXPECT_NEAR(s[0].cdf_min, 0.25, 1e-9);
  EXPECT_NEAR(s[0].cdf_max, 0.75, 1e-9);
  EXPECT_NEAR(s[1].cdf_min, 0.0, 1e-9);
  EXPECT_NEAR(s[1].cdf_max, 1.0, 1e-9);
}

TEST(CompactionPolicyTest, NothingToDoWithoutOverlap) {
  std::vector<CompactionCandidate> c;
  for (int i = 0; i < 20; ++i) c.push_back(C(i, 1000 * i, 1000 * i + 999, 32));
  const CompactionSelection s = Pick(c);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.quality, 0.0);
  EXPECT_TRUE(Pick({}).empty());
  EXPECT_TRUE(Pick({C(1, 0, 100, 1)}).empty());
}

TEST(CompactionPolicyTest, StackedRowSetsAreMerged) {
  const std::vector<CompactionCandidate> c = {C(7, 0, 1000, 32), C(3, 0, 1000, 32),
                                              C(5, 0, 1000, 32)};
  const CompactionSelection s = Pick(c);
  EXPECT_EQ(s.rowset_ids, (std::vector<int64_t>{3, 5, 7}));
  EXPECT_NEAR(s.quality, 2.0, 1e-9);  // Height 3 -> 1.
  EXPECT_EQ(s.total_bytes, 96 * kMiB);
}

TEST(CompactionPolicyTest, BudgetIsRespected) {
  std::vector<CompactionCandidate> c;
  for (int i = 0; i < 10; ++i) c.push_back(C(i, 0, 1000, 32));
  CompactionSelection s = Pick(c, /*budget_mb=*/128);
  EXPECT_EQ(s.rowset_ids.size(), 4u);
  EXPECT_EQ(s.total_bytes, 128 * kMiB);
  EXPECT_NEAR(s.quality, 3.0, 1e-9);
  s = Pick(c, /*budget_mb=*/127);
  EXPECT_EQ(s.rowset_ids.size(), 3u);
  EXPECT_NEAR(s.quality, 2.0, 1e-9);
  // A byte over a MiB counts as a whole MiB: sizes are rounded up, never down.
  c[0].size_bytes += 1;
  c[1].size_bytes += 1;
  c[2].size_bytes += 1;
  c[3].size_bytes += 1;
  s = Pick(c, /*budget_mb=*/128);
  EXPECT_LE(s.total_bytes, 128 * kMiB);
  EXPECT_EQ(s.rowset_ids.size(), 4u);  // Four of the six still exactly 32 MiB.
  // Rowsets larger than the budget are never chosen.
  EXPECT_TRUE(Pick({C(1, 0, 1000, 200), C(2, 0, 1000, 200)}).empty());
  EXPECT_TRUE(Pick(c, /*budget_mb=*/0).empty());
}

TEST(CompactionPolicyTest, MinimumImprovement) {
  // Two rowsets sharing 1% of their bytes: quality ~0.01.
  const std::vector<CompactionCandidate> c = {C(1, 0, 1000, 32), C(2, 990, 1990, 32)};
  const double q = QualityOf(c, {1, 2});
  EXPECT_GT(q, 0.0);
  EXPECT_TRUE(Pick(c, 128, q + 0.001).empty());
  const CompactionSelection s = Pick(c, 128, q - 0.001);
  EXPECT_EQ(s.rowset_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_NEAR(s.quality, q, 1e-9);
}

TEST(CompactionPolicyTest, PrefersTheMostOverlappedRegion) {
  // A compacted layer of 8 rowsets; three fresh flushes all land in [2000, 3000).
  std::vector<CompactionCandidate> c;
  for (int i = 0; i < 8; ++i) c.push_back(C(i, 1000 * i, 1000 * i + 999, 32));
  for (int i = 0; i < 3; ++i) c.push_back(C(100 + i, 2000 + i, 2990 + i, 8));
  const CompactionSelection s = Pick(c, /*budget_mb=*/64);
  EXPECT_EQ(s.rowset_ids, (std::vector<int64_t>{2, 100, 101, 102}));
  EXPECT_LE(s.total_bytes, 64 * kMiB);
}

TEST(CompactionPolicyTest, FlagsSetTheOptions) {
  gflags::FlagSaver saver;
  FLAGS_tablet_compaction_budget_mb = 64;
  FLAGS_tablet_compaction_minimum_improvement = 0.5;
  const CompactionPolicyOptions o = CompactionPolicyOptions::FromFlags();
  EXPECT_EQ(o.budget_bytes, 64 * kMiB);
  EXPECT_EQ(o.minimum_improvement, 0.5);
}

std::vector<CompactionCandidate> RandomCandidates(Random* rng, int n) {
  std::vector<CompactionCandidate> c;
  const uint32_t range = 100 + static_cast<uint32_t>(rng->Uniform(10000));
  for (int i = 0; i < n; ++i) {
    const uint32_t lo = static_cast<uint32_t>(rng->Uniform(range));
    const uint32_t len = static_cast<uint32_t>(rng->OneIn(8) ? 0 : rng->Uniform(range / 2 + 1));
    c.push_back(C(1000 - 3 * i, lo, lo + len, 1 + rng->Uniform(rng->OneIn(2) ? 8 : 64)));
  }
  return c;
}

// Exhaustive search over all subsets within the budget; returns the best quality.
double BruteForceBest(const std::vector<CompactionCandidate>& c, uint64_t budget_bytes) {
  double best = 0;
  for (uint32_t mask = 1; mask < (1u << c.size()); ++mask) {
    std::vector<int64_t> ids;
    uint64_t bytes = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      if (mask & (1u << i)) {
        ids.push_back(c[i].id);
        bytes += c[i].size_bytes;
      }
    }
    if (ids.size() >= 2 && bytes <= budget_bytes) best = std::max(best, QualityOf(c, ids));
  }
  return best;
}

TEST(CompactionPolicyTest, RandomAgainstBruteForce) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE(testing::Message() << "round " << round);
    const std::vector<CompactionCandidate> c =
        RandomCandidates(&rng, 2 + static_cast<int>(rng.Uniform(9)));
    const uint64_t budget_mb = 4 + rng.Uniform(200);
    const double min_improvement = rng.OneIn(2) ? 0.01 : 0.2;
    const double best = BruteForceBest(c, budget_mb * kMiB);
    const CompactionSelection s = Pick(c, budget_mb, min_improvement);
    if (best < min_improvement - 1e-9) {
      EXPECT_TRUE(s.empty()) << "best " << best;
    } else if (best > min_improvement + 1e-9) {
      ASSERT_FALSE(s.empty()) << "best " << best;
      EXPECT_NEAR(s.quality, best, 1e-9);
    }
    if (!s.empty()) {
      EXPECT_GE(s.rowset_ids.size(), 2u);
      EXPECT_LE(s.total_bytes, budget_mb * kMiB);
      EXPECT_NEAR(QualityOf(c, s.rowset_ids), s.quality, 1e-9);
      EXPECT_TRUE(std::is_sorted(s.rowset_ids.begin(), s.rowset_ids.end()));
    }
  }
}

TEST(CompactionPolicyTest, DeterministicWhateverTheOrder) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  std::mt19937_64 shuffler(seed);
  for (int round = 0; round < 50; ++round) {
    std::vector<CompactionCandidate> c =
        RandomCandidates(&rng, 2 + static_cast<int>(rng.Uniform(40)));
    // Include exact ties: duplicated ranges and sizes.
    c.push_back(c[0]);
    c.back().id = 5000;
    const CompactionSelection first = Pick(c);
    for (int k = 0; k < 3; ++k) {
      std::shuffle(c.begin(), c.end(), shuffler);
      const CompactionSelection again = Pick(c);
      ASSERT_EQ(again.rowset_ids, first.rowset_ids) << "round " << round;
      ASSERT_EQ(again.quality, first.quality);
      ASSERT_EQ(again.total_bytes, first.total_bytes);
    }
  }
}

TEST(CompactionPolicyTest, ManyRowSetsStayFast) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  // 500 rowsets: a compacted layer plus many overlapping flushes.
  std::vector<CompactionCandidate> c;
  for (int i = 0; i < 300; ++i) c.push_back(C(i, 1000 * i, 1000 * i + 999, 32));
  for (int i = 0; i < 200; ++i) {
    const uint32_t lo = static_cast<uint32_t>(rng.Uniform(300000));
    c.push_back(
        C(1000 + i, lo, lo + static_cast<uint32_t>(rng.Uniform(50000)), 1 + rng.Uniform(32)));
  }
  const auto start = std::chrono::steady_clock::now();
  const CompactionSelection s = Pick(c);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  LOG(INFO) << "picked " << s.rowset_ids.size() << " of " << c.size() << " rowsets, quality "
            << s.quality << ", in " << ms << " ms";
  ASSERT_FALSE(s.empty());
  EXPECT_LE(s.total_bytes, 128 * kMiB);
  EXPECT_NEAR(QualityOf(c, s.rowset_ids), s.quality, 1e-9);
}

}  // namespace compaction_policy_test_file
}  // namespace
}  // namespace basalt
