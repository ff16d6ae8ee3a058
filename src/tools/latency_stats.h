#pragma once

// Latency samples of a `basalt perf` workload and their percentiles (docs/cli.md, "perf").
//
// Each worker thread records into its own LatencyStats; the caller merges them after the threads
// joined. Samples are kept exactly (8 bytes each: 80 MB for 10 M operations), so percentiles are
// exact rather than bucketed. Not thread-safe.

#include <cstdint>
#include <vector>

namespace basalt::tools {

class LatencyStats {
 public:
  void Add(double millis) {
    samples_.push_back(millis);
    sorted_ = false;
  }
  void Merge(const LatencyStats& other);
  int64_t count() const { return static_cast<int64_t>(samples_.size()); }
  // The smallest sample that at least `fraction` (0 < fraction <= 1) of the samples do not exceed
  // (nearest-rank); 0 without samples. Sorts the samples on first use after an Add or Merge.
  double Percentile(double fraction);

 private:
  std::vector<double> samples_;
  bool sorted_ = true;
};

}  // namespace basalt::tools
