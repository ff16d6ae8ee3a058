#include "tools/latency_stats.h"

#include <gtest/gtest.h>

namespace basalt::tools {
namespace {
namespace latency_stats_test_file {

TEST(LatencyStatsTest, NearestRankPercentiles) {
  LatencyStats s;
  EXPECT_EQ(s.Percentile(0.5), 0);          // No samples.
  for (int i = 100; i >= 1; --i) s.Add(i);  // Out of order on purpose.
  EXPECT_EQ(s.count(), 100);
  EXPECT_EQ(s.Percentile(0.5), 50);
  EXPECT_EQ(s.Percentile(0.99), 99);
  EXPECT_EQ(s.Percentile(0.999), 100);
  EXPECT_EQ(s.Percentile(1.0), 100);
  EXPECT_EQ(s.Percentile(0.0), 1);
  // Samples added after a percentile was asked are sorted in too.
  s.Add(0.5);
  EXPECT_EQ(s.Percentile(0.0), 0.5);
}

TEST(LatencyStatsTest, MergeCombinesThreads) {
  LatencyStats a;
  LatencyStats b;
  a.Add(1);
  a.Add(3);
  b.Add(2);
  b.Add(4);
  EXPECT_EQ(a.Percentile(1.0), 3);
  a.Merge(b);
  EXPECT_EQ(a.count(), 4);
  EXPECT_EQ(a.Percentile(0.5), 2);
  EXPECT_EQ(a.Percentile(0.75), 3);
  EXPECT_EQ(a.Percentile(1.0), 4);
}

}  // namespace latency_stats_test_file
}  // namespace
}  // namespace basalt::tools
