#pragma once

// Helpers of the CLI actions that write many rows (`table load`, `table copy`): a progress line
// on stderr, and turning the failed rows of sessions into one error.

#include <cstdint>
#include <memory>
#include <ostream>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/session.h"

namespace basalt::tools {

// Whether progress is shown: stderr is a terminal, or --progress.
bool ProgressEnabled();

// A progress line on stderr, redrawn in place at most every 200 ms: with a known total a bar,
// percent, rows and rows/s ("[=====     ] 45%  450/1000 rows  8500 rows/s"); with an unknown
// total (< 0) rows and rows/s. Not thread-safe.
class ProgressBar {
 public:
  ProgressBar(std::ostream* err, int64_t total, bool enabled);

  // Shows `done` rows; `final` draws regardless of the rate limit and ends the line.
  void Update(int64_t done, bool final = false);

 private:
  std::ostream* const err_;
  const int64_t total_;
  const bool enabled_;
  const absl::Time start_;
  absl::Time last_ = absl::InfinitePast();
};

// One error for the failed rows of a write: "<n>[+] of <total> row(s) failed to <verb>; first
// errors:" and the first `max_examples` errors, each with its row, one per line. The code is the
// first error's. OK when `errors` is empty. `overflowed`: some errors were dropped.
absl::Status RowErrorsStatus(const std::vector<std::unique_ptr<client::Error>>& errors,
                             bool overflowed, int64_t total, std::string_view verb,
                             int max_examples);

}  // namespace basalt::tools
