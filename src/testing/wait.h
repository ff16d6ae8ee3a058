#pragma once

// Waiting for a condition with a deadline: the only way harness code and cluster tests wait
// (never a bare sleep).

#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace basalt {

// Calls `check` until it returns OK or `timeout` has passed, sleeping between calls (starting at
// 10 ms, growing to 200 ms). Returns OK as soon as `check` does; otherwise DEADLINE_EXCEEDED
// "timed out after <timeout> waiting for <what>; last status: <the last error of check>".
// `check` runs at least once, even with a zero timeout.
absl::Status WaitFor(absl::Duration timeout, std::string_view what,
                     const std::function<absl::Status()>& check);

}  // namespace basalt
