#pragma once

// Helpers shared by the benchmark programs in bench/.

#include <algorithm>
#include <chrono>
#include <functional>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/status/status.h"

// CHECKs that an absl::Status is OK (benchmarks stop at the first failure).
#define BENCH_CHECK_OK(expr)         \
  do {                               \
    const absl::Status _s = (expr);  \
    CHECK(_s.ok()) << _s.ToString(); \
  } while (0)

namespace basalt {

// The fastest of `repeats` runs of `fn`, in seconds (the least disturbed by a noisy machine).
inline double BestSeconds(int repeats, const std::function<void()>& fn) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// The main() of a benchmark program that prints its own JSON: flags, logging, then `run`.
inline int BenchMain(int argc, char** argv, void (*run)()) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  run();
  return 0;
}

}  // namespace basalt
