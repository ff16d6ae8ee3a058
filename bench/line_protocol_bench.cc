// Benchmark of basalt-tsdbd's line protocol parser (src/tsdb/line_protocol.h): bodies shaped like
// the TSBS devops cpu-only load of bench/tsbs (10 tags in TSBS's order, which is not sorted; 10
// float fields with two decimals; a timestamp in seconds), parsed whole as /write parses them.
// Reports lines/second as items_per_second and body bytes/second.
//   ./build/bench/line_protocol_bench --benchmark_min_time=0.2

#include <benchmark/benchmark.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "glog/logging.h"
#include "tsdb/line_protocol.h"

namespace basalt::tsdb {
namespace {

// A body of `lines` points of `hosts` hosts, deterministic.
std::string TsbsLikeBody(int lines, int hosts) {
  static const char* kFields[] = {"usage_user",   "usage_system",    "usage_idle",    "usage_nice",
                                  "usage_iowait", "usage_irq",       "usage_softirq", "usage_steal",
                                  "usage_guest",  "usage_guest_nice"};
  std::string body;
  char line[1024];
  for (int i = 0; i < lines; i++) {
    const int h = i % hosts;
    int n = std::snprintf(line, sizeof(line),
                          "cpu,hostname=host_%d,region=us-west-%d,datacenter=us-west-%da,rack=%d,"
                          "os=Ubuntu16.04LTS,arch=x64,team=SF,service=%d,service_version=%d,"
                          "service_environment=production ",
                          h, h % 3, h % 3, h % 100, h % 20, h % 2);
    for (int f = 0; f < 10; f++) {
      n += std::snprintf(line + n, sizeof(line) - n, "%s%s=%d.%02d", f ? "," : "", kFields[f],
                         (i * 7 + f * 13) % 100, (i + f) % 100);
    }
    n += std::snprintf(line + n, sizeof(line) - n, " %" PRId64 "\n",
                       int64_t{1451606400} + (i / hosts) * 10);
    body.append(line, n);
  }
  return body;
}

void BM_ParseTsbsBody(benchmark::State& state) {
  const int lines = static_cast<int>(state.range(0));
  const std::string body = TsbsLikeBody(lines, 100);
  std::vector<Point> points;
  for (auto _ : state) {
    const absl::Status s = ParseLineProtocol(body, Precision::kSeconds, &points);
    CHECK(s.ok()) << s;
    CHECK_EQ(points.size(), static_cast<size_t>(lines));
    benchmark::DoNotOptimize(points.data());
  }
  state.SetItemsProcessed(state.iterations() * lines);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_ParseTsbsBody)->Arg(10000);

}  // namespace
}  // namespace basalt::tsdb

BENCHMARK_MAIN();
