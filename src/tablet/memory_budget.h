#pragma once

// MemoryBudget: process-wide accounting of the memory that tablets hold in their in-memory stores
// (MemRowSets and DeltaMemStores), and the write throttling that keeps it under a limit.
//
// Consumption is pushed, not polled: each tablet owns a MemoryBudget::Consumer and calls
// Consumer::Set(bytes) with its current MRS + DMS footprint after each write batch and after each
// flush. The budget keeps the sum in one atomic, so the checks on the write path (WriteDelay(),
// AdmitWrite()) read one word and never take a lock, however many tablets there are.
//
// Three marks, all fractions of the limit (`--memory_limit_bytes`, default 80% of physical RAM):
//
//   0 ........ pressure (60%) ........ soft (80%) ........ hard (100%)
//   normal     flushes get priority    writes are delayed  writes are refused (UNAVAILABLE)
//
//  - At or above the pressure mark, UnderPressure() is true: the maintenance manager then runs
//    the op anchoring the most memory first. Crossing the mark upwards calls the registered
//    pressure listeners at once (so the scheduler does not wait for its next poll).
//  - Between the soft limit and the hard limit, each write batch is delayed by
//    max_write_delay * f^2, where f = (used - soft) / (hard - soft): a write barely slows just
//    above the soft limit and slows hard near the limit, which gives the flushes time to catch up
//    without ever stopping writes outright.
//  - At or above the hard limit AdmitWrite() wakes the listeners, waits max_write_delay once, and
//    refuses the batch with UNAVAILABLE (retriable) only if usage is still at the limit.
//
// Only tracked memory counts (what consumers report), not the whole process heap.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/log_throttle.h"

namespace basalt {

class Histogram;

struct MemoryBudgetOptions {
  // The hard limit in bytes. 0 means DefaultMemoryLimitBytes().
  int64_t limit_bytes = 0;
  // Percentages of the limit, in [0, 100].
  int pressure_percentage = 60;
  int soft_limit_percentage = 80;
  // The delay of a write batch just below the hard limit, and the one wait at the hard limit
  // before a batch is refused.
  absl::Duration max_write_delay = absl::Milliseconds(100);
  // Time source for the write delays. Null means Clock::Default(). Not owned; must outlive the
  // budget.
  Clock* clock = nullptr;
  // Where each write delay is observed, in seconds (the tablet server's
  // basalt_tserver_write_delay_seconds). Null: nowhere. Not owned; must outlive the budget.
  Histogram* write_delay_seconds = nullptr;

  // Options from --memory_limit_bytes, --memory_pressure_percentage,
  // --memory_limit_soft_percentage and --memory_limit_max_write_delay_ms.
  static MemoryBudgetOptions FromFlags();
};

// Parses the "MemTotal:" line of /proc/meminfo text into bytes.
// Errors: INVALID_ARGUMENT when the line is missing or malformed.
absl::StatusOr<int64_t> ParseMeminfoTotalBytes(std::string_view meminfo);

// Returns the physical memory of this machine in bytes: MemTotal from /proc/meminfo, else
// sysconf(_SC_PHYS_PAGES) * page size; lowered to the cgroup v2 memory.max when one is set.
// Errors: INTERNAL when neither source is usable.
absl::StatusOr<int64_t> PhysicalMemoryBytes();

// 80% of PhysicalMemoryBytes() (CHECK-fails when the machine's memory cannot be read at all).
int64_t DefaultMemoryLimitBytes();

// See the file comment. Lifecycle: Create(), register consumers and listeners, destroy after every
// Consumer has been destroyed (checked) and every listener removed.
// Thread-safe; WriteDelay(), UnderPressure() and Consumer::Set() are lock-free.
class MemoryBudget {
 public:
  // A tracked source of memory (one per tablet). Holds the bytes it last reported; destroying it
  // releases them from the budget. Thread-safe.
  class Consumer {
   public:
    ~Consumer();
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

    // Sets this consumer's current usage. Cheap: two atomic operations, plus a call of the
    // pressure listeners when this update takes the total across the pressure mark.
    // REQUIRES: bytes >= 0.
    void Set(int64_t bytes);
    int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
    const std::string& name() const { return name_; }

   private:
    friend class MemoryBudget;
    Consumer(MemoryBudget* budget, std::string name) : budget_(budget), name_(std::move(name)) {}

    MemoryBudget* const budget_;  // Outlives this consumer.
    const std::string name_;
    std::atomic<int64_t> bytes_{0};
  };

  struct ConsumerUsage {
    std::string name;
    int64_t bytes;
  };

  // Counters for metrics and status pages.
  struct Stats {
    int64_t consumption_bytes;
    int64_t limit_bytes;
    int64_t pressure_bytes;
    int64_t soft_limit_bytes;
    int64_t writes_delayed;
    int64_t writes_rejected;
    int64_t total_delay_micros;
  };

  // Errors: INVALID_ARGUMENT for a negative limit, a percentage outside [0, 100], a pressure
  // mark above the soft limit, or a negative max_write_delay.
  static absl::StatusOr<std::unique_ptr<MemoryBudget>> Create(const MemoryBudgetOptions& options);

  // The process-wide budget built from the flags on first use. Never null; never destroyed.
  static MemoryBudget* Process();

  ~MemoryBudget();
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Registers a consumer that starts at 0 bytes. `name` is for status pages (e.g. the tablet id).
  std::unique_ptr<Consumer> RegisterConsumer(std::string name) ABSL_LOCKS_EXCLUDED(mu_);

  // Adds `listener`, called (on the thread whose update crossed the mark, or in AdmitWrite at the
  // hard limit) whenever tracked memory rises to the pressure mark. It runs on the write path,
  // possibly under tablet locks: it must be quick, take only leaf locks, and not call back into
  // this budget. Returns an id for RemovePressureListener.
  int AddPressureListener(std::function<void()> listener) ABSL_LOCKS_EXCLUDED(listeners_mu_);
  // Removes a listener; when it returns, the listener is not running and will not be called
  // again. REQUIRES: not called from inside a listener.
  void RemovePressureListener(int id) ABSL_LOCKS_EXCLUDED(listeners_mu_);

  int64_t consumption() const { return total_.load(std::memory_order_relaxed); }
  int64_t limit_bytes() const { return limit_bytes_; }
  int64_t pressure_bytes() const { return pressure_bytes_; }
  int64_t soft_limit_bytes() const { return soft_limit_bytes_; }

  // True when tracked memory is at or above the pressure mark.
  bool UnderPressure() const { return consumption() >= pressure_bytes_; }
  // Percentage of the hard limit in use (may exceed 100).
  double UsedPercentage() const;

  // The delay a write batch should take before it applies: zero below the soft limit,
  // max_write_delay * f^2 between the soft and the hard limit (see the file comment), and
  // max_write_delay at or above the hard limit. Lock-free; computes, never sleeps.
  absl::Duration WriteDelay() const;

  // Admission of one write batch: sleeps WriteDelay() on the clock. At or above the hard limit it
  // first wakes the pressure listeners, sleeps max_write_delay, and re-checks.
  // Call it before taking any tablet lock: it may sleep.
  // Errors: UNAVAILABLE (retriable; the client backs off) when tracked memory is still at or
  // above the hard limit after that wait.
  absl::Status AdmitWrite() ABSL_LOCKS_EXCLUDED(listeners_mu_);

  Stats GetStats() const;
  // Every registered consumer with its current bytes, in registration order.
  std::vector<ConsumerUsage> ListConsumers() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit MemoryBudget(const MemoryBudgetOptions& options, int64_t limit_bytes);

  // Adds `delta` to the total; calls the listeners when the total crosses the pressure mark.
  void Adjust(int64_t delta) ABSL_LOCKS_EXCLUDED(listeners_mu_);
  void UnregisterConsumer(Consumer* consumer) ABSL_LOCKS_EXCLUDED(mu_);
  void NotifyPressure() ABSL_LOCKS_EXCLUDED(listeners_mu_);

  // Constant after construction.
  const int64_t limit_bytes_;
  const int64_t pressure_bytes_;
  const int64_t soft_limit_bytes_;
  const absl::Duration max_write_delay_;
  Clock* const clock_;
  Histogram* const write_delay_seconds_;
  // Throttled warnings (one line a minute at most each) when writes are delayed or refused, so
  // that an operator sees throttling in the log, not only on /metrics.
  LogThrottle delay_log_;
  LogThrottle refusal_log_;

  // The sum of the consumers' bytes. An atomic is enough: each consumer adds exactly the
  // difference between the value it publishes and the one it replaced, so the sum is exact once
  // concurrent updates have landed, and readers only need a recent value.
  std::atomic<int64_t> total_{0};
  // Counters; relaxed atomics (statistics only).
  std::atomic<int64_t> writes_delayed_{0};
  std::atomic<int64_t> writes_rejected_{0};
  std::atomic<int64_t> total_delay_micros_{0};

  // Lock order: listeners_mu_ is held while a listener runs, so it comes before any lock the
  // listeners take (e.g. the maintenance manager's). mu_ and listeners_mu_ are never held
  // together.
  mutable absl::Mutex mu_;
  std::vector<Consumer*> consumers_ ABSL_GUARDED_BY(mu_);

  absl::Mutex listeners_mu_;
  int next_listener_id_ ABSL_GUARDED_BY(listeners_mu_) = 0;
  std::vector<std::pair<int, std::function<void()>>> listeners_ ABSL_GUARDED_BY(listeners_mu_);
};

}  // namespace basalt
