#include "common/metrics.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace metrics_test_file {

TEST(MetricsTest, CountersGaugesHistogramsUnderConcurrency) {
  MetricRegistry r;
  constexpr int kThreads = 8;
  constexpr int kIters = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&r, t] {
      // Every thread looks the series up itself: the registry must hand out one instance.
      Counter* c = r.GetCounter("ops_total", "Ops.", {{"tablet_id", "t1"}});
      Gauge* g = r.GetGauge("level", "Level.");
      Histogram* h = r.GetHistogram("lat_seconds", "Latency.", {}, {1, 2, 3});
      for (int i = 0; i < kIters; ++i) {
        c->Increment();
        g->Add(t % 2 == 0 ? 1 : -1);
        h->Observe(static_cast<double>(i % 4));  // 0, 1, 2, 3 in equal shares.
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(r.GetCounter("ops_total", "", {{"tablet_id", "t1"}})->value(),
            uint64_t{kThreads} * kIters);
  EXPECT_EQ(r.GetGauge("level", "")->value(), 0);
  Histogram* h = r.GetHistogram("lat_seconds", "");
  const uint64_t total = uint64_t{kThreads} * kIters;
  EXPECT_EQ(h->count(), total);
  EXPECT_EQ(h->CumulativeCount(0), total / 2);  // 0 and 1 are <= 1.
  EXPECT_EQ(h->CumulativeCount(1), total * 3 / 4);
  EXPECT_EQ(h->CumulativeCount(2), total);
  EXPECT_DOUBLE_EQ(h->sum(), static_cast<double>(total / 4 * (0 + 1 + 2 + 3)));
}

TEST(MetricsTest, ExactPrometheusText) {
  MetricRegistry r;
  r.GetCounter("basalt_writes_total", "Write requests.", {{"tablet_id", "b"}})->Increment(3);
  r.GetCounter("basalt_writes_total", "Write requests.", {{"tablet_id", "a"}})->Increment();
  r.GetGauge("basalt_mem_bytes", "Memory\\used\nnow.")->Set(-7);
  Histogram* h = r.GetHistogram("basalt_lat_seconds", "Latency.", {}, {0.5, 1});
  h->Observe(0.25);
  h->Observe(0.75);
  h->Observe(4);
  CallbackGaugeHandle cb =
      r.RegisterCallbackGauge("basalt_term", "Term.", {{"tablet_id", "x"}}, [] { return 1.5; });
  const std::string expected =
      "# HELP basalt_lat_seconds Latency.\n"
      "# TYPE basalt_lat_seconds histogram\n"
      "basalt_lat_seconds_bucket{le=\"0.5\"} 1\n"
      "basalt_lat_seconds_bucket{le=\"1\"} 2\n"
      "basalt_lat_seconds_bucket{le=\"+Inf\"} 3\n"
      "basalt_lat_seconds_sum 5\n"
      "basalt_lat_seconds_count 3\n"
      "# HELP basalt_mem_bytes Memory\\\\used\\nnow.\n"
      "# TYPE basalt_mem_bytes gauge\n"
      "basalt_mem_bytes -7\n"
      "# HELP basalt_term Term.\n"
      "# TYPE basalt_term gauge\n"
      "basalt_term{tablet_id=\"x\"} 1.5\n"
      "# HELP basalt_writes_total Write requests.\n"
      "# TYPE basalt_writes_total counter\n"
      "basalt_writes_total{tablet_id=\"a\"} 1\n"
      "basalt_writes_total{tablet_id=\"b\"} 3\n";
  EXPECT_EQ(r.RenderPrometheus(), expected);
}

TEST(MetricsTest, CallbackGaugesSumAndUnregister) {
  MetricRegistry r;
  int calls = 0;
  {
    CallbackGaugeHandle a = r.RegisterCallbackGauge("g", "G.", {}, [&] {
      ++calls;
      return 2.0;
    });
    CallbackGaugeHandle b = r.RegisterCallbackGauge("g", "G.", {}, [] { return 3.0; });
    EXPECT_NE(r.RenderPrometheus().find("\ng 5\n"), std::string::npos);
    CallbackGaugeHandle moved = std::move(b);
    b.Reset();  // A moved-from handle owns nothing.
    EXPECT_NE(r.RenderPrometheus().find("\ng 5\n"), std::string::npos);
    moved.Reset();
    EXPECT_NE(r.RenderPrometheus().find("\ng 2\n"), std::string::npos);
  }
  const int calls_before = calls;
  EXPECT_EQ(r.RenderPrometheus(), "");  // The family disappears with its last callback.
  EXPECT_EQ(calls, calls_before);
}

TEST(MetricsTest, CallbackFamiliesMergeWithSeries) {
  MetricRegistry r;
  r.GetCounter("flushes_total", "Flushes.", {{"tablet_id", "a"}})->Increment(2);
  CallbackGaugeHandle h =
      r.RegisterCallbackFamily("flushes_total", "Flushes.", MetricType::kCounter, [] {
        return std::vector<MetricSample>{{{{"tablet_id", "b"}}, 5}, {{{"tablet_id", "a"}}, 1}};
      });
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP flushes_total Flushes.\n"
            "# TYPE flushes_total counter\n"
            "flushes_total{tablet_id=\"a\"} 3\n"
            "flushes_total{tablet_id=\"b\"} 5\n");
  h.Reset();
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP flushes_total Flushes.\n"
            "# TYPE flushes_total counter\n"
            "flushes_total{tablet_id=\"a\"} 2\n");
  CallbackGaugeHandle empty = r.RegisterCallbackFamily("tablets", "Tablets.", MetricType::kGauge,
                                                       [] { return std::vector<MetricSample>{}; });
  EXPECT_EQ(r.RenderPrometheus().find("tablets"), std::string::npos);
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  MetricRegistry r;
  r.GetCounter("c_total", "C.", {{"table", "we\"ird\\name\n"}, {"k", "v"}})->Increment();
  EXPECT_NE(r.RenderPrometheus().find("c_total{table=\"we\\\"ird\\\\name\\n\",k=\"v\"} 1\n"),
            std::string::npos)
      << r.RenderPrometheus();
}

TEST(MetricsTest, ScopedLatencyRecordsOnce) {
  MetricRegistry r;
  Histogram* h = r.GetHistogram("op_seconds", "Op.");
  { ScopedLatency l(h); }
  { ScopedLatency l(nullptr); }
  EXPECT_EQ(h->count(), 1u);
  EXPECT_GE(h->sum(), 0.0);
  EXPECT_EQ(h->bounds(), Histogram::LatencyBuckets());
}

TEST(MetricsDeathTest, TypeConflictIsAProgrammingError) {
  MetricRegistry r;
  r.GetCounter("x", "X.");
  EXPECT_DEATH(r.GetGauge("x", "X."), "two types");
  EXPECT_DEATH(r.GetCounter("bad-name", "X."), "invalid metric name");
}

}  // namespace metrics_test_file
}  // namespace
}  // namespace basalt
