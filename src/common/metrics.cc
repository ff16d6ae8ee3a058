#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <glog/logging.h>

#include "common/strings.h"

namespace basalt {

namespace {

bool IsValidName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

// Shortest round-tripping decimal form; integers without a fraction; "+Inf"/"-Inf"/"NaN".
std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  DCHECK(ec == std::errc());
  return std::string(buf, end);
}

std::string RenderLabels(const MetricLabels& labels, std::string_view extra_name = {},
                         std::string_view extra_value = {}) {
  if (labels.empty() && extra_name.empty()) return "";
  std::string out = "{";
  bool first = true;
  auto add = [&](std::string_view n, std::string_view v) {
    if (!first) out += ',';
    first = false;
    StrAppend(&out, n, "=\"", EscapeLabelValue(v), "\"");
  };
  for (const auto& [n, v] : labels) add(n, v);
  if (!extra_name.empty()) add(extra_name, extra_value);
  out += '}';
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// ---- Histogram ----

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  CHECK(std::is_sorted(bounds_.begin(), bounds_.end())) << "histogram bounds must ascend";
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

uint64_t Histogram::CumulativeCount(size_t i) const {
  uint64_t total = 0;
  for (size_t b = 0; b <= i && b <= bounds_.size(); ++b) {
    total += buckets_[b].load(std::memory_order_relaxed);
  }
  return total;
}

const std::vector<double>& Histogram::LatencyBuckets() {
  static const std::vector<double>* const kBuckets =
      new std::vector<double>{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                              0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,     10};
  return *kBuckets;
}

// ---- Registry ----

struct MetricRegistry::Series {
  MetricLabels labels;
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
  std::map<uint64_t, std::function<double()>> callbacks;
};

struct MetricRegistry::Family {
  std::string help;
  Type type;
  // Keyed by the rendered label set, so rendering is in label order.
  std::map<std::string, std::unique_ptr<Series>> series;
  std::map<uint64_t, std::function<std::vector<MetricSample>()>> callbacks;
};

MetricRegistry::MetricRegistry() = default;
MetricRegistry::~MetricRegistry() = default;

MetricRegistry* MetricRegistry::Global() {
  static MetricRegistry* const kGlobal = new MetricRegistry();
  return kGlobal;
}

MetricRegistry::Family* MetricRegistry::FindOrCreateFamily(std::string_view name,
                                                           std::string_view help, Type type) {
  CHECK(IsValidName(name)) << "invalid metric name: " << name;
  auto it = families_.find(name);
  if (it == families_.end()) {
    auto family = std::make_unique<Family>();
    family->help = std::string(help);
    family->type = type;
    it = families_.emplace(std::string(name), std::move(family)).first;
  }
  CHECK(it->second->type == type) << "metric " << name << " registered with two types";
  return it->second.get();
}

MetricRegistry::Series* MetricRegistry::FindOrCreate(std::string_view name, std::string_view help,
                                                     Type type, const MetricLabels& labels) {
  for (const auto& [n, v] : labels) CHECK(IsValidName(n)) << "invalid label name: " << n;
  Family* family = FindOrCreateFamily(name, help, type);
  std::unique_ptr<Series>& series = family->series[RenderLabels(labels)];
  if (series == nullptr) {
    series = std::make_unique<Series>();
    series->labels = labels;
  }
  return series.get();
}

Counter* MetricRegistry::GetCounter(std::string_view name, std::string_view help,
                                    const MetricLabels& labels) {
  absl::MutexLock l(&mu_);
  Series* s = FindOrCreate(name, help, Type::kCounter, labels);
  if (s->counter == nullptr) s->counter = std::make_unique<Counter>();
  return s->counter.get();
}

Gauge* MetricRegistry::GetGauge(std::string_view name, std::string_view help,
                                const MetricLabels& labels) {
  absl::MutexLock l(&mu_);
  Series* s = FindOrCreate(name, help, Type::kGauge, labels);
  if (s->gauge == nullptr) s->gauge = std::make_unique<Gauge>();
  return s->gauge.get();
}

Histogram* MetricRegistry::GetHistogram(std::string_view name, std::string_view help,
                                        const MetricLabels& labels, std::vector<double> bounds) {
  absl::MutexLock l(&mu_);
  Series* s = FindOrCreate(name, help, Type::kHistogram, labels);
  if (s->histogram == nullptr) {
    if (bounds.empty()) bounds = Histogram::LatencyBuckets();
    s->histogram = std::make_unique<Histogram>(std::move(bounds));
  }
  return s->histogram.get();
}

CallbackGaugeHandle MetricRegistry::RegisterCallbackGauge(std::string_view name,
                                                          std::string_view help,
                                                          const MetricLabels& labels,
                                                          std::function<double()> fn) {
  absl::MutexLock l(&mu_);
  Series* s = FindOrCreate(name, help, Type::kGauge, labels);
  const uint64_t id = next_callback_id_++;
  s->callbacks.emplace(id, std::move(fn));
  return CallbackGaugeHandle(this, id);
}

CallbackGaugeHandle MetricRegistry::RegisterCallbackFamily(
    std::string_view name, std::string_view help, MetricType type,
    std::function<std::vector<MetricSample>()> fn) {
  CHECK(type != MetricType::kHistogram) << "callback histograms are not supported";
  absl::MutexLock l(&mu_);
  Family* family = FindOrCreateFamily(name, help, type);
  const uint64_t id = next_callback_id_++;
  family->callbacks.emplace(id, std::move(fn));
  return CallbackGaugeHandle(this, id);
}

void MetricRegistry::Unregister(uint64_t id) {
  absl::MutexLock l(&mu_);
  for (auto fit = families_.begin(); fit != families_.end(); ++fit) {
    if (fit->second->callbacks.erase(id) > 0) {
      if (fit->second->callbacks.empty() && fit->second->series.empty()) families_.erase(fit);
      return;
    }
    auto& series_map = fit->second->series;
    for (auto sit = series_map.begin(); sit != series_map.end(); ++sit) {
      Series* s = sit->second.get();
      if (s->callbacks.erase(id) == 0) continue;
      // A series that only ever held callbacks disappears with its last one.
      if (s->callbacks.empty() && s->gauge == nullptr) series_map.erase(sit);
      if (series_map.empty() && fit->second->callbacks.empty()) families_.erase(fit);
      return;
    }
  }
}

namespace {

void RenderHistogram(std::string_view name, const MetricLabels& labels,
                     const std::string& label_str, const Histogram& h, std::string* out) {
  const auto& bounds = h.bounds();
  for (size_t i = 0; i <= bounds.size(); ++i) {
    const std::string le = i < bounds.size() ? FormatDouble(bounds[i]) : "+Inf";
    StrAppend(out, name, "_bucket", RenderLabels(labels, "le", le), " ", h.CumulativeCount(i),
              "\n");
  }
  StrAppend(out, name, "_sum", label_str, " ", FormatDouble(h.sum()), "\n");
  StrAppend(out, name, "_count", label_str, " ", h.count(), "\n");
}

}  // namespace

std::string MetricRegistry::RenderPrometheus() const {
  absl::MutexLock l(&mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    const char* type = family->type == Type::kCounter     ? "counter"
                       : family->type == Type::kHistogram ? "histogram"
                                                          : "gauge";
    // Scalar values by rendered label set: series, their callbacks and family callbacks summed.
    std::map<std::string, double> values;
    for (const auto& [label_str, s] : family->series) {
      if (family->type == Type::kHistogram) continue;
      double v = 0;
      if (s->counter != nullptr) v += static_cast<double>(s->counter->value());
      if (s->gauge != nullptr) v += static_cast<double>(s->gauge->value());
      for (const auto& [id, fn] : s->callbacks) v += fn();
      values[label_str] += v;
    }
    for (const auto& [id, fn] : family->callbacks) {
      for (const MetricSample& sample : fn()) values[RenderLabels(sample.labels)] += sample.value;
    }
    if (values.empty() && family->type != Type::kHistogram) continue;
    StrAppend(&out, "# HELP ", name, " ", EscapeHelp(family->help), "\n");
    StrAppend(&out, "# TYPE ", name, " ", type, "\n");
    for (const auto& [label_str, v] : values) {
      StrAppend(&out, name, label_str, " ", FormatDouble(v), "\n");
    }
    if (family->type != Type::kHistogram) continue;
    for (const auto& [label_str, s] : family->series) {
      RenderHistogram(name, s->labels, label_str, *s->histogram, &out);
    }
  }
  return out;
}

// ---- CallbackGaugeHandle ----

CallbackGaugeHandle& CallbackGaugeHandle::operator=(CallbackGaugeHandle&& other) noexcept {
  if (this != &other) {
    Reset();
    registry_ = other.registry_;
    id_ = other.id_;
    other.registry_ = nullptr;
    other.id_ = 0;
  }
  return *this;
}

void CallbackGaugeHandle::Reset() {
  if (registry_ != nullptr) registry_->Unregister(id_);
  registry_ = nullptr;
  id_ = 0;
}

}  // namespace basalt
