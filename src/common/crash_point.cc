#include "common/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <charconv>

#include <gflags/gflags.h>
#include <glog/logging.h>

DEFINE_string(fault_crash_at_point, "",
              "For crash tests only: the process kills itself with SIGKILL when it passes the "
              "named crash point (\"NAME\": the first time; \"NAME:N\": the N-th time). Empty: "
              "never. The points are listed in docs/cfile_blocks.md.");

namespace basalt {

std::optional<CrashPointSpec> ParseCrashPointSpec(std::string_view value) {
  CrashPointSpec spec;
  const size_t colon = value.rfind(':');
  spec.name = std::string(value.substr(0, colon));
  if (colon != std::string_view::npos) {
    const std::string_view n = value.substr(colon + 1);
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), spec.hit);
    if (ec != std::errc() || end != n.data() + n.size() || spec.hit < 1) return std::nullopt;
  }
  if (spec.name.empty()) return std::nullopt;
  return spec;
}

void MaybeCrashAt(std::string_view point) {
  if (FLAGS_fault_crash_at_point.empty()) return;
  const std::optional<CrashPointSpec> spec = ParseCrashPointSpec(FLAGS_fault_crash_at_point);
  if (!spec.has_value()) {
    LOG_FIRST_N(ERROR, 1) << "ignoring malformed --fault_crash_at_point="
                          << FLAGS_fault_crash_at_point;
    return;
  }
  if (spec->name != point) return;
  // Counts the passes of the armed point only; one thread sees each count.
  static std::atomic<int64_t> passes{0};
  if (passes.fetch_add(1) + 1 != spec->hit) return;
  LOG(ERROR) << "crash point " << point << " reached (pass " << spec->hit
             << "): killing the process (--fault_crash_at_point)";
  google::FlushLogFiles(google::GLOG_INFO);
  kill(getpid(), SIGKILL);
  // SIGKILL cannot be caught or ignored: delivery to ourselves is immediate, but make sure.
  _exit(137);
}

}  // namespace basalt
