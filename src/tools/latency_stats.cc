#include "tools/latency_stats.h"

#include <algorithm>
#include <cmath>

namespace basalt::tools {

void LatencyStats::Merge(const LatencyStats& other) {
  samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
  sorted_ = samples_.empty();
}

double LatencyStats::Percentile(double fraction) {
  if (samples_.empty()) return 0;
  if (!sorted_) {
    std::sort(samples_.begin(), samples_.end());
    sorted_ = true;
  }
  // Nearest rank: the ceil(fraction * n)-th smallest sample (1-based).
  const double rank = std::ceil(std::clamp(fraction, 0.0, 1.0) * static_cast<double>(count()));
  const int64_t index = std::clamp<int64_t>(static_cast<int64_t>(rank) - 1, 0, count() - 1);
  return samples_[index];
}

}  // namespace basalt::tools
