#include "tools/bulk_write.h"

#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "absl/time/clock.h"
#include "common/strings.h"

DEFINE_bool(progress, false,
            "Whether table load and table copy show their progress on stderr even when stderr is "
            "not a terminal.");

namespace basalt::tools {

bool ProgressEnabled() { return FLAGS_progress || isatty(STDERR_FILENO); }

ProgressBar::ProgressBar(std::ostream* err, int64_t total, bool enabled)
    : err_(err), total_(total), enabled_(enabled), start_(absl::Now()) {}

void ProgressBar::Update(int64_t done, bool final) {
  if (!enabled_) return;
  const absl::Time now = absl::Now();
  if (!final && now - last_ < absl::Milliseconds(200)) return;
  last_ = now;
  const double secs = std::max(absl::ToDoubleSeconds(now - start_), 1e-6);
  const int64_t rate = static_cast<int64_t>(done / secs);
  if (total_ < 0) {
    *err_ << "\r" << done << " rows  " << rate << " rows/s" << (final ? "\n" : "") << std::flush;
    return;
  }
  const int pct = total_ == 0 ? 100 : static_cast<int>(done * 100 / total_);
  const int width = 30, filled = pct * width / 100;
  *err_ << "\r[" << std::string(filled, '=') << std::string(width - filled, ' ') << "] " << pct
        << "%  " << done << "/" << total_ << " rows  " << rate << " rows/s" << (final ? "\n" : "")
        << std::flush;
}

absl::Status RowErrorsStatus(const std::vector<std::unique_ptr<client::Error>>& errors,
                             bool overflowed, int64_t total, std::string_view verb,
                             int max_examples) {
  if (errors.empty()) return absl::OkStatus();
  std::string msg = StrCat(errors.size(), overflowed ? "+" : "", " of ", total,
                           " row(s) failed to ", verb, "; first errors:");
  const size_t shown = std::min<size_t>(errors.size(), std::max(0, max_examples));
  for (size_t i = 0; i < shown; ++i) {
    StrAppend(&msg, "\n  ", errors[i]->status().ToString(), ": ",
              errors[i]->failed_op().ToString());
  }
  return absl::Status(errors[0]->status().code(), msg);
}

}  // namespace basalt::tools
