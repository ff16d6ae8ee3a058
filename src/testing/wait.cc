#include "testing/wait.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "common/strings.h"

namespace basalt {

absl::Status WaitFor(absl::Duration timeout, std::string_view what,
                     const std::function<absl::Status()>& check) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration pause = absl::Milliseconds(10);
  while (true) {
    absl::Status s = check();
    if (s.ok()) return s;
    absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(StrCat("timed out after ", absl::FormatDuration(timeout),
                                                " waiting for ", what,
                                                "; last status: ", s.ToString()));
    }
    absl::SleepFor(std::min(pause, deadline - now));
    pause = std::min(pause * 2, absl::Milliseconds(200));
  }
}

}  // namespace basalt
