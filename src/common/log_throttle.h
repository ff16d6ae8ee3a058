#pragma once

// LogThrottle: decides when an event that may repeat for a long time (a heartbeat to a master
// that is down, a tablet copy that keeps failing, a peer that keeps sending bad batches) is worth
// a log line. The first event of a run logs at once; after that at most one line per interval,
// and each line reports how many events it stands for (itself and those suppressed since the
// previous line), so nothing is lost from the count while the log grows by a line per interval
// at most:
//
//   if (int64_t n = throttle.Record(absl::Now()); n > 0) {
//     LOG(WARNING) << "heartbeat to " << master << " failed" << LogThrottle::Times(n) << ": " << s;
//   }
//
// Reset() ends a run (the operation succeeded): the next event logs at once again. Time is passed
// in, never read, so tests drive it; callers pass absl::Now().
//
// Thread-safe (the events of a peer's bad batches arrive on any RPC thread); the lock is held
// only to update three fields.

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace basalt {

class LogThrottle {
 public:
  // One line a minute: a few hundred lines a day for an event that never stops.
  static constexpr absl::Duration kDefaultInterval = absl::Seconds(60);

  // REQUIRES: interval >= 0 (0: every event logs).
  explicit LogThrottle(absl::Duration interval = kDefaultInterval) : interval_(interval) {}
  LogThrottle(const LogThrottle&) = delete;
  LogThrottle& operator=(const LogThrottle&) = delete;

  // Records one event at `now`. Returns 0 if it is suppressed, else the number of events the
  // caller's line reports: this one and those suppressed since the previous line (>= 1). A line
  // is due for the first event after construction or Reset(), for the first one at least
  // `interval` after the previous line, and for one earlier than the previous line (the wall
  // clock stepped back: a step costs one extra line, never a long silence).
  int64_t Record(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the run: returns the events suppressed since the last line (never reported) and makes
  // the next event log at once.
  int64_t Reset() ABSL_LOCKS_EXCLUDED(mu_);

  // Events suppressed since the last line.
  int64_t suppressed() const ABSL_LOCKS_EXCLUDED(mu_);

  // " (n times since the last report)" for n > 1, "" for n <= 1: the suffix that turns a
  // one-event message into a line that stands for n events.
  static std::string Times(int64_t n);

 private:
  const absl::Duration interval_;

  mutable absl::Mutex mu_;
  bool logged_ ABSL_GUARDED_BY(mu_) = false;   // A line was logged since construction or Reset().
  absl::Time last_line_ ABSL_GUARDED_BY(mu_);  // When; meaningful only if logged_.
  int64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace basalt
