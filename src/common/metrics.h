#pragma once

// A small metrics registry for the daemons' /metrics endpoint (docs/web.md): counters, gauges
// (set directly or computed by a callback at scrape time) and latency histograms with fixed
// buckets, rendered in the Prometheus text exposition format (version 0.0.4).
//
// A metric is identified by its family name plus its label set (for example
// basalt_tablet_rows_written_total{tablet_id="..."}). Families have one type and one help text.
// Counters, gauges and histograms live as long as their registry (pointers returned by the Get*
// functions stay valid and may be cached); callback gauges are removed by destroying the handle
// their registration returns, which waits for nothing and guarantees the callback is no longer
// running or called afterwards.
//
// The hot path (Counter::Increment, Gauge::Set, Histogram::Observe) is a few relaxed atomic
// operations and takes no lock. Registration and rendering take the registry's mutex.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace basalt {

// Label name/value pairs, e.g. {{"tablet_id", "abc"}}. Names must be valid Prometheus label
// names (checked); values are escaped when rendered.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing count. Thread-safe; lock-free.
class Counter {
 public:
  void Increment(uint64_t delta = 1) { value_.fetch_add(delta, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down. Thread-safe; lock-free.
class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// A distribution over fixed buckets (upper bounds, ascending; +Inf is implicit). Observations are
// in the unit of the bounds (seconds for latencies). Thread-safe; lock-free.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);
  // Observes a duration in seconds.
  void ObserveDuration(absl::Duration d) { Observe(absl::ToDoubleSeconds(d)); }

  const std::vector<double>& bounds() const { return bounds_; }
  // Count of observations <= bounds()[i]; i == bounds().size() is the +Inf bucket (the total).
  uint64_t CumulativeCount(size_t i) const;
  uint64_t count() const { return CumulativeCount(bounds_.size()); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

  // The default latency buckets, in seconds: 50us .. 10s.
  static const std::vector<double>& LatencyBuckets();

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // Per bucket, not cumulative.
  std::atomic<double> sum_{0};
};

// Records the time from construction to destruction into a histogram (nullptr: nothing).
class ScopedLatency {
 public:
  explicit ScopedLatency(Histogram* h) : h_(h), start_(absl::Now()) {}
  ~ScopedLatency() {
    if (h_ != nullptr) h_->ObserveDuration(absl::Now() - start_);
  }
  ScopedLatency(const ScopedLatency&) = delete;
  ScopedLatency& operator=(const ScopedLatency&) = delete;

 private:
  Histogram* const h_;
  const absl::Time start_;
};

class MetricRegistry;

// One value of a callback family (RegisterCallbackFamily).
struct MetricSample {
  MetricLabels labels;
  double value = 0;
};

enum class MetricType { kCounter, kGauge, kHistogram };

// Keeps a callback gauge registered; destroying it unregisters the callback (and waits for a
// scrape that is calling it to finish). Movable.
class CallbackGaugeHandle {
 public:
  CallbackGaugeHandle() = default;
  CallbackGaugeHandle(MetricRegistry* registry, uint64_t id) : registry_(registry), id_(id) {}
  CallbackGaugeHandle(CallbackGaugeHandle&& other) noexcept { *this = std::move(other); }
  CallbackGaugeHandle& operator=(CallbackGaugeHandle&& other) noexcept;
  ~CallbackGaugeHandle() { Reset(); }
  void Reset();

 private:
  MetricRegistry* registry_ = nullptr;
  uint64_t id_ = 0;
};

class MetricRegistry {
 public:
  MetricRegistry();
  ~MetricRegistry();
  MetricRegistry(const MetricRegistry&) = delete;
  MetricRegistry& operator=(const MetricRegistry&) = delete;

  // The process-wide registry the daemons expose on /metrics. Never destroyed.
  static MetricRegistry* Global();

  // Find-or-create. The first registration of a family fixes its type and help; registering a
  // family name again with another type is a programming error (CHECK).
  Counter* GetCounter(std::string_view name, std::string_view help,
                      const MetricLabels& labels = {});
  Gauge* GetGauge(std::string_view name, std::string_view help, const MetricLabels& labels = {});
  // `bounds` empty: Histogram::LatencyBuckets(). A series keeps the bounds it was created with.
  Histogram* GetHistogram(std::string_view name, std::string_view help,
                          const MetricLabels& labels = {}, std::vector<double> bounds = {});
  // A gauge whose value `fn` computes at scrape time. `fn` runs under the registry's mutex: it
  // must be quick and must not call back into the registry. Several registrations of the same
  // name and labels are summed.
  [[nodiscard]] CallbackGaugeHandle RegisterCallbackGauge(std::string_view name,
                                                          std::string_view help,
                                                          const MetricLabels& labels,
                                                          std::function<double()> fn);

  // A whole family computed at scrape time: `fn` returns one sample per label set (samples with
  // equal labels, also from other registrations or GetCounter/GetGauge series, are summed).
  // `type` is kCounter or kGauge. Same rules for `fn` as RegisterCallbackGauge.
  [[nodiscard]] CallbackGaugeHandle RegisterCallbackFamily(
      std::string_view name, std::string_view help, MetricType type,
      std::function<std::vector<MetricSample>()> fn);

  // Every family in name order, every series in label order, in the Prometheus text format.
  std::string RenderPrometheus() const;

 private:
  friend class CallbackGaugeHandle;
  using Type = MetricType;
  struct Family;
  struct Series;

  Family* FindOrCreateFamily(std::string_view name, std::string_view help, Type type)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Series* FindOrCreate(std::string_view name, std::string_view help, Type type,
                       const MetricLabels& labels) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unregister(uint64_t id);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_ ABSL_GUARDED_BY(mu_);
  uint64_t next_callback_id_ ABSL_GUARDED_BY(mu_) = 1;
};

// registry->GetCounter(name, help), or null without a registry (components whose metrics are
// optional, such as the tests' instances).
inline Counter* CounterOrNull(MetricRegistry* registry, std::string_view name,
                              std::string_view help) {
  return registry != nullptr ? registry->GetCounter(name, help) : nullptr;
}

// Prometheus label-value escaping: backslash, double quote and newline.
std::string EscapeLabelValue(std::string_view v);

}  // namespace basalt
