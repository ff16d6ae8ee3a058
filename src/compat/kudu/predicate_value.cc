// KuduValue and KuduPredicate (thin owners of Basalt's Value and Predicate), and
// ResourceMetrics.

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

using basalt::client::Value;

absl::Status KuduValue::Data::ToBasalt(int column_scale, Value* out) const {
  if (!is_decimal) {
    *out = value;
    return absl::OkStatus();
  }
  // Rescale dv * 10^-scale to the column's scale, exactly.
  int128_t v = decimal;
  const int128_t kMax = static_cast<int128_t>(std::numeric_limits<int64_t>::max());
  for (int s = scale; s < column_scale; s++) {
    if (v > kMax || v < -kMax) break;  // Out of range either way; reported below.
    v *= 10;
  }
  for (int s = scale; s > column_scale; s--) {
    if (v % 10 != 0) {
      return absl::InvalidArgumentError("decimal value has more fractional digits (scale " +
                                        std::to_string(scale) + ") than the column (scale " +
                                        std::to_string(column_scale) + ")");
    }
    v /= 10;
  }
  if (v > kMax || v < -kMax - 1) {
    return absl::InvalidArgumentError("decimal value does not fit 64 bits");
  }
  *out = Value::FromInt(static_cast<int64_t>(v));
  return absl::OkStatus();
}

KuduValue::KuduValue(Data* d) : data_(d) {}
KuduValue::~KuduValue() { delete data_; }

KuduValue* KuduValue::Clone() const { return new KuduValue(new Data(*data_)); }
KuduValue* KuduValue::FromInt(int64_t val) { return new KuduValue(new Data(Value::FromInt(val))); }
KuduValue* KuduValue::FromFloat(float val) {
  return new KuduValue(new Data(Value::FromFloat(val)));
}
KuduValue* KuduValue::FromDouble(double val) {
  return new KuduValue(new Data(Value::FromDouble(val)));
}
KuduValue* KuduValue::FromBool(bool val) { return new KuduValue(new Data(Value::FromBool(val))); }
KuduValue* KuduValue::CopyString(Slice s) {
  return new KuduValue(new Data(Value::FromString(View(s))));
}

KuduValue* KuduValue::FromDecimal(int128_t dv, int8_t scale) {
  // The integer form is what a scale-0 use sees; ToBasalt rescales for the column.
  auto* d = new Data(Value::FromInt(static_cast<int64_t>(dv)));
  d->is_decimal = true;
  d->decimal = dv;
  d->scale = scale;
  return new KuduValue(d);
}

KuduPredicate::KuduPredicate(Data* d) : data_(d) {}
KuduPredicate::~KuduPredicate() { delete data_; }
KuduPredicate* KuduPredicate::Clone() const {
  return new KuduPredicate(
      new Data(data_->pred == nullptr ? nullptr : data_->pred->Clone(), data_->error));
}

class ResourceMetrics::Data {
 public:
  mutable absl::Mutex mu;
  std::map<std::string, int64_t> counters ABSL_GUARDED_BY(mu);
};

ResourceMetrics::ResourceMetrics() : data_(new Data) {}
ResourceMetrics::~ResourceMetrics() { delete data_; }

std::map<std::string, int64_t> ResourceMetrics::Get() const {
  absl::MutexLock l(&data_->mu);
  return data_->counters;
}

void ResourceMetrics::Increment(const std::string& name, int64_t amount) {
  absl::MutexLock l(&data_->mu);
  data_->counters[name] += amount;
}

int64_t ResourceMetrics::GetMetric(const std::string& name) const {
  absl::MutexLock l(&data_->mu);
  auto it = data_->counters.find(name);
  return it == data_->counters.end() ? 0 : it->second;
}

}  // namespace client
}  // namespace kudu
