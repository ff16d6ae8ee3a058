#include "common/group_aggregator.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>

#include "absl/numeric/int128.h"
#include "common/columnar_block_builder.h"
#include "common/datum.h"
#include "common/key_encoder.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/common.pb.h"

namespace basalt {
namespace aggregate_internal {
namespace {

// The C++ type of a cell in a ColumnBlock, by physical type; BOOL cells are one byte 0/1.
template <typename T>
struct Tag {
  using type = T;
};

template <typename F>
auto DispatchPhysical(PhysicalType p, F&& f) {
  switch (p) {
    case PhysicalType::kBool:
      return f(Tag<uint8_t>{});
    case PhysicalType::kInt8:
      return f(Tag<int8_t>{});
    case PhysicalType::kInt16:
      return f(Tag<int16_t>{});
    case PhysicalType::kInt32:
      return f(Tag<int32_t>{});
    case PhysicalType::kInt64:
      return f(Tag<int64_t>{});
    case PhysicalType::kInt128:
      return f(Tag<absl::int128>{});
    case PhysicalType::kFloat:
      return f(Tag<float>{});
    case PhysicalType::kDouble:
      return f(Tag<double>{});
    case PhysicalType::kBinary:
      break;
  }
  return f(Tag<std::string_view>{});
}

// Floating point in IEEE total order (-NaN < -inf < ... < -0.0 < +0.0 < ... < +NaN), the order
// of TypeInfo::Compare and of encoded keys; everything else in its natural order.
template <typename T>
auto OrderValue(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    U u;
    std::memcpy(&u, &v, sizeof(u));
    constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
    return (u & kSign) ? ~u : (u | kSign);
  } else {
    return v;
  }
}
template <typename T>
bool Less(const T& a, const T& b) {
  return OrderValue(a) < OrderValue(b);
}

// State storage of a value of physical type T: strings own their bytes.
template <typename T>
using Stored = std::conditional_t<std::is_same_v<T, std::string_view>, std::string, T>;

inline uint32_t Gid(const uint32_t* gids, size_t r) { return gids == nullptr ? 0 : gids[r]; }

}  // namespace

class Accumulator {
 public:
  virtual ~Accumulator() = default;
  virtual void Resize(size_t groups) = 0;
  // Rows [0, n) of the input column (null for COUNT(*)), keys as GroupAggregator::AddRows.
  virtual absl::Status AddRows(const ColumnBlock* in, const std::string_view* keys,
                               const uint32_t* gids, size_t n) = 0;
  // Partial rows [0, n): in[0 .. num_partial) are this aggregate's partial columns.
  virtual absl::Status AddPartials(const ColumnBlock* const* in, const uint32_t* gids,
                                   size_t n) = 0;
  // Groups order[0 .. n) into rows [0, n) of the partial / result columns.
  // OUT_OF_RANGE when a result leaves its type's range.
  virtual absl::Status WritePartials(const uint32_t* order, size_t n,
                                     ColumnBlock* const* out) const = 0;
  virtual absl::Status WriteResults(const uint32_t* order, size_t n, ColumnBlock* out) const = 0;
  // Variable-length bytes the state holds beyond its fixed size per group.
  virtual size_t extra_bytes() const { return 0; }
};

namespace {

// Writes `value(g)` or NULL (when !has(g)) for each group of `order` into `out`.
template <typename T, typename Has, typename Value>
void WriteCells(const uint32_t* order, size_t n, ColumnBlock* out, Has has, Value value) {
  T* cells = out->data<T>();
  for (size_t i = 0; i < n; i++) {
    const uint32_t g = order[i];
    if (has(g)) {
      cells[i] = value(g);
    } else {
      cells[i] = T{};
      out->SetNull(i, true);
    }
  }
}

// COUNT(*) and COUNT(column).
class CountAccumulator final : public Accumulator {
 public:
  explicit CountAccumulator(bool all) : all_(all) {}
  void Resize(size_t groups) override { counts_.resize(groups, 0); }
  absl::Status AddRows(const ColumnBlock* in, const std::string_view*, const uint32_t* gids,
                       size_t n) override {
    const uint8_t* nulls = all_ ? nullptr : in->null_bitmap;
    if (gids == nullptr) {
      counts_[0] += static_cast<int64_t>(n - (nulls ? BitmapCountSet(nulls, n) : 0));
    } else if (nulls == nullptr) {
      for (size_t r = 0; r < n; r++) counts_[gids[r]]++;
    } else {
      for (size_t r = 0; r < n; r++) counts_[gids[r]] += !BitmapTest(nulls, r);
    }
    return absl::OkStatus();
  }
  absl::Status AddPartials(const ColumnBlock* const* in, const uint32_t* gids, size_t n) override {
    const int64_t* c = in[0]->data<int64_t>();
    for (size_t r = 0; r < n; r++) {
      // Counts from the wire are not trusted: wrap instead of overflowing.
      int64_t& count = counts_[Gid(gids, r)];
      count = static_cast<int64_t>(static_cast<uint64_t>(count) + static_cast<uint64_t>(c[r]));
    }
    return absl::OkStatus();
  }
  absl::Status WritePartials(const uint32_t* order, size_t n,
                             ColumnBlock* const* out) const override {
    return WriteResults(order, n, out[0]);
  }
  absl::Status WriteResults(const uint32_t* order, size_t n, ColumnBlock* out) const override {
    WriteCells<int64_t>(
        order, n, out, [](uint32_t) { return true; }, [&](uint32_t g) { return counts_[g]; });
    return absl::OkStatus();
  }

 private:
  const bool all_;
  std::vector<int64_t> counts_;
};

// 10^38: DECIMAL(38)'s bound.
const absl::int128 kDecimal38Limit = [] {
  absl::int128 p = 1;
  for (int i = 0; i < kMaxDecimal128Precision; i++) p *= 10;
  return p;
}();

// SUM and AVG. Integers and decimals sum exactly in int128 (Acc absl::int128), FLOAT and DOUBLE
// in double. Ranges are checked only when results are written (kResult says against what), so
// the outcome does not depend on the order partials merge in; the int128 itself fails only past
// its own range (about 1.7e38). AVG also counts and results in DOUBLE.
enum class SumResult { kDouble, kInt64, kDecimal38, kAverage };

template <typename In, typename Acc, SumResult kResult>
class SumAccumulator final : public Accumulator {
  static constexpr bool kAvg = kResult == SumResult::kAverage;

 public:
  SumAccumulator(std::string what, int scale) : what_(std::move(what)), scale_(scale) {}
  void Resize(size_t groups) override {
    sums_.resize(groups, Acc{});
    has_.resize(groups, 0);
    if constexpr (kAvg) counts_.resize(groups, 0);
  }
  absl::Status AddRows(const ColumnBlock* in, const std::string_view*, const uint32_t* gids,
                       size_t n) override {
    const In* v = in->data<In>();
    const uint8_t* nulls = in->null_bitmap;
    if constexpr (std::is_integral_v<In> && sizeof(In) <= 4) {
      // Up to 2^32 cells of 32 bits cannot overflow 64: sum the block, add once.
      if (gids == nullptr) {
        int64_t s = 0;
        int64_t cnt = 0;
        if (nulls == nullptr) {
          for (size_t r = 0; r < n; r++) s += v[r];
          cnt = static_cast<int64_t>(n);
        } else {
          for (size_t r = 0; r < n; r++) {
            const bool null = BitmapTest(nulls, r);
            s += null ? 0 : v[r];
            cnt += !null;
          }
        }
        if (cnt == 0) return absl::OkStatus();
        return Add(0, static_cast<Acc>(s), cnt);
      }
    }
    for (size_t r = 0; r < n; r++) {
      if (nulls != nullptr && BitmapTest(nulls, r)) continue;
      absl::Status s = Add(Gid(gids, r), static_cast<Acc>(v[r]), 1);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  absl::Status AddPartials(const ColumnBlock* const* in, const uint32_t* gids, size_t n) override {
    const Acc* v = in[0]->data<Acc>();
    const int64_t* c = kAvg ? in[1]->data<int64_t>() : nullptr;
    for (size_t r = 0; r < n; r++) {
      if (in[0]->is_null(r)) continue;
      absl::Status s = Add(Gid(gids, r), v[r], kAvg ? c[r] : 1);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  absl::Status WritePartials(const uint32_t* order, size_t n,
                             ColumnBlock* const* out) const override {
    WriteCells<Acc>(
        order, n, out[0], [&](uint32_t g) { return has_[g] != 0; },
        [&](uint32_t g) { return sums_[g]; });
    if constexpr (kAvg) {
      WriteCells<int64_t>(
          order, n, out[1], [](uint32_t) { return true; }, [&](uint32_t g) { return counts_[g]; });
    }
    return absl::OkStatus();
  }
  absl::Status WriteResults(const uint32_t* order, size_t n, ColumnBlock* out) const override {
    auto has = [&](uint32_t g) { return has_[g] != 0; };
    if constexpr (kAvg) {
      double unit = 1;
      for (int i = 0; i < scale_; i++) unit *= 10;
      WriteCells<double>(order, n, out, has, [&](uint32_t g) {
        return static_cast<double>(sums_[g]) / unit / static_cast<double>(counts_[g]);
      });
    } else if constexpr (kResult == SumResult::kInt64) {
      for (size_t i = 0; i < n; i++) {
        const uint32_t g = order[i];
        if (has(g) && (sums_[g] > std::numeric_limits<int64_t>::max() ||
                       sums_[g] < std::numeric_limits<int64_t>::min())) {
          return Overflow("INT64");
        }
      }
      WriteCells<int64_t>(order, n, out, has,
                          [&](uint32_t g) { return static_cast<int64_t>(sums_[g]); });
    } else if constexpr (kResult == SumResult::kDecimal38) {
      for (size_t i = 0; i < n; i++) {
        const uint32_t g = order[i];
        if (has(g) && (sums_[g] >= kDecimal38Limit || sums_[g] <= -kDecimal38Limit)) {
          return Overflow("DECIMAL(38)");
        }
      }
      WriteCells<Acc>(order, n, out, has, [&](uint32_t g) { return sums_[g]; });
    } else {
      WriteCells<Acc>(order, n, out, has, [&](uint32_t g) { return sums_[g]; });
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Add(uint32_t g, Acc v, int64_t count) {
    has_[g] = 1;
    if constexpr (kAvg) {
      // Counts from the wire are not trusted: wrap instead of overflowing.
      counts_[g] =
          static_cast<int64_t>(static_cast<uint64_t>(counts_[g]) + static_cast<uint64_t>(count));
    }
    if constexpr (std::is_same_v<Acc, absl::int128>) {
      __int128 sum;
      if (__builtin_add_overflow(static_cast<__int128>(sums_[g]), static_cast<__int128>(v), &sum)) {
        return Overflow("INT128");
      }
      sums_[g] = absl::int128(sum);
    } else {
      sums_[g] += v;
    }
    return absl::OkStatus();
  }
  absl::Status Overflow(std::string_view type) const {
    return absl::OutOfRangeError(StrCat(what_, " overflows ", type));
  }

  const std::string what_;
  const int scale_;
  std::vector<Acc> sums_;
  std::vector<uint8_t> has_;
  std::vector<int64_t> counts_;
};

// One value or none per group: the state of MIN, MAX, FIRST and LAST.
template <typename T>
class GroupValues {
 public:
  void Resize(size_t groups) {
    if (groups == 0) extra_ = 0;
    values_.resize(groups);
    has_.resize(groups, 0);
  }
  bool has(uint32_t g) const { return has_[g] != 0; }
  T get(uint32_t g) const { return T(values_[g]); }
  void Set(uint32_t g, const T& v) {
    if constexpr (std::is_same_v<T, std::string_view>) {
      extra_ = extra_ - values_[g].size() + v.size();
    }
    values_[g] = Stored<T>(v);
    has_[g] = 1;
  }
  void Write(const uint32_t* order, size_t n, ColumnBlock* out) const {
    WriteCells<T>(
        order, n, out, [&](uint32_t g) { return has(g); }, [&](uint32_t g) { return get(g); });
  }
  // Bytes of the strings held.
  size_t extra_bytes() const { return extra_; }

 private:
  std::vector<Stored<T>> values_;
  std::vector<uint8_t> has_;
  size_t extra_ = 0;
};

// MIN and MAX.
template <typename T, bool kMax>
class MinMaxAccumulator final : public Accumulator {
 public:
  void Resize(size_t groups) override { values_.Resize(groups); }
  absl::Status AddRows(const ColumnBlock* in, const std::string_view*, const uint32_t* gids,
                       size_t n) override {
    Update(in, gids, n);
    return absl::OkStatus();
  }
  absl::Status AddPartials(const ColumnBlock* const* in, const uint32_t* gids, size_t n) override {
    Update(in[0], gids, n);
    return absl::OkStatus();
  }
  absl::Status WritePartials(const uint32_t* order, size_t n,
                             ColumnBlock* const* out) const override {
    values_.Write(order, n, out[0]);
    return absl::OkStatus();
  }
  absl::Status WriteResults(const uint32_t* order, size_t n, ColumnBlock* out) const override {
    values_.Write(order, n, out);
    return absl::OkStatus();
  }
  size_t extra_bytes() const override { return values_.extra_bytes(); }

 private:
  void Update(const ColumnBlock* in, const uint32_t* gids, size_t n) {
    const T* v = in->data<T>();
    for (size_t r = 0; r < n; r++) {
      if (in->is_null(r)) continue;
      const uint32_t g = Gid(gids, r);
      if (!values_.has(g) ||
          (kMax ? Less<T>(values_.get(g), v[r]) : Less<T>(v[r], values_.get(g)))) {
        values_.Set(g, v[r]);
      }
    }
  }

  GroupValues<T> values_;
};

// FIRST and LAST: the non-NULL value of the smallest / largest primary key.
template <typename T, bool kLast>
class FirstLastAccumulator final : public Accumulator {
 public:
  void Resize(size_t groups) override {
    keys_.Resize(groups);
    values_.Resize(groups);
  }
  absl::Status AddRows(const ColumnBlock* in, const std::string_view* keys, const uint32_t* gids,
                       size_t n) override {
    // Per run of rows of one group (rows come in key order, so runs are long), find the winning
    // row first and offer only it: one copy of its key and value instead of one per row.
    const T* v = in->data<T>();
    size_t r = 0;
    while (r < n) {
      const uint32_t g = Gid(gids, r);
      size_t best = n;
      for (; r < n && Gid(gids, r) == g; r++) {
        if (in->is_null(r)) continue;
        if (best == n || (kLast ? keys[r] > keys[best] : keys[r] < keys[best])) best = r;
      }
      if (best != n) Offer(g, keys[best], v[best]);
    }
    return absl::OkStatus();
  }
  absl::Status AddPartials(const ColumnBlock* const* in, const uint32_t* gids, size_t n) override {
    const std::string_view* k = in[0]->data<std::string_view>();
    const T* v = in[1]->data<T>();
    for (size_t r = 0; r < n; r++) {
      if (!in[0]->is_null(r) && !in[1]->is_null(r)) Offer(Gid(gids, r), k[r], v[r]);
    }
    return absl::OkStatus();
  }
  absl::Status WritePartials(const uint32_t* order, size_t n,
                             ColumnBlock* const* out) const override {
    keys_.Write(order, n, out[0]);
    values_.Write(order, n, out[1]);
    return absl::OkStatus();
  }
  absl::Status WriteResults(const uint32_t* order, size_t n, ColumnBlock* out) const override {
    values_.Write(order, n, out);
    return absl::OkStatus();
  }
  size_t extra_bytes() const override { return keys_.extra_bytes() + values_.extra_bytes(); }

 private:
  void Offer(uint32_t g, std::string_view key, const T& v) {
    if (keys_.has(g) && (kLast ? key <= keys_.get(g) : key >= keys_.get(g))) return;
    keys_.Set(g, key);
    values_.Set(g, v);
  }

  GroupValues<std::string_view> keys_;  // The encoded primary key of each group's value.
  GroupValues<T> values_;
};

template <typename T, typename Acc, SumResult kSum>
std::unique_ptr<Accumulator> MakeSum(bool avg, std::string what, int scale) {
  if (avg) {
    return std::make_unique<SumAccumulator<T, Acc, SumResult::kAverage>>(std::move(what), scale);
  }
  return std::make_unique<SumAccumulator<T, Acc, kSum>>(std::move(what), scale);
}

// `scale`: the input's, for decimals (AVG divides by 10^scale).
std::unique_ptr<Accumulator> MakeAccumulator(const AggregatePlan::Aggregate& a, int scale) {
  const AggregateFunction f = a.spec.function;
  if (f == AggregateFunction::kCountAll) return std::make_unique<CountAccumulator>(true);
  if (f == AggregateFunction::kCount) return std::make_unique<CountAccumulator>(false);
  const std::string what = StrCat(AggregateFunctionName(f), "(", a.spec.column, ")");
  const TypeInfo& t = GetTypeInfo(a.input_type);
  return DispatchPhysical(t.physical_type(), [&](auto tag) -> std::unique_ptr<Accumulator> {
    using T = typename decltype(tag)::type;
    switch (f) {
      case AggregateFunction::kSum:
      case AggregateFunction::kAvg: {
        // Plans admit SUM and AVG on numbers only: never BOOL (uint8_t cells) or strings.
        const bool avg = f == AggregateFunction::kAvg;
        if constexpr (std::is_same_v<T, absl::int128>) {
          return MakeSum<T, absl::int128, SumResult::kDecimal38>(avg, what, scale);
        } else if constexpr (std::is_floating_point_v<T>) {
          return MakeSum<T, double, SumResult::kDouble>(avg, what, 0);
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) {
          // Integers and decimals of every width sum in int128.
          if (t.is_decimal()) {
            return MakeSum<T, absl::int128, SumResult::kDecimal38>(avg, what, scale);
          }
          return MakeSum<T, absl::int128, SumResult::kInt64>(avg, what, 0);
        }
        break;
      }
      case AggregateFunction::kMin:
        return std::make_unique<MinMaxAccumulator<T, false>>();
      case AggregateFunction::kMax:
        return std::make_unique<MinMaxAccumulator<T, true>>();
      case AggregateFunction::kFirst:
        return std::make_unique<FirstLastAccumulator<T, false>>();
      case AggregateFunction::kLast:
        return std::make_unique<FirstLastAccumulator<T, true>>();
      default:
        break;
    }
    return nullptr;
  });
}

}  // namespace
}  // namespace aggregate_internal

namespace {

// time_bucket: offset + floor((v - offset) / width) * width, clamped to the int64 range.
int64_t Bucket(int64_t v, int64_t width, int64_t offset) {
  const absl::int128 d = absl::int128(v) - offset;
  absl::int128 q = d / width;
  if (d % width < 0) q -= 1;
  const absl::int128 b = q * width + offset;
  if (b < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(b);
}

}  // namespace

GroupAggregator::GroupAggregator(const AggregatePlan* plan) : plan_(plan) {
  const Schema& partial = plan_->partial_schema();
  for (size_t g = 0; g < plan_->groups().size(); g++) {
    group_nullable_.push_back(partial.column(static_cast<int>(g)).is_nullable());
  }
  for (const AggregatePlan::Aggregate& a : plan_->aggregates()) {
    const int scale = partial.column(a.partial).attributes().scale;
    accumulators_.push_back(aggregate_internal::MakeAccumulator(a, scale));
    CHECK(accumulators_.back() != nullptr) << "no accumulator for " << plan_->ToString();
  }
}

GroupAggregator::~GroupAggregator() = default;

size_t GroupAggregator::memory_bytes() const {
  size_t extra = 0;
  for (const auto& a : accumulators_) extra += a->extra_bytes();
  return key_bytes_ + extra + keys_.size() * (48 + 24 * accumulators_.size());
}

uint32_t GroupAggregator::GroupOf(std::string_view key) {
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(keys_.size());
  keys_.emplace_back(key);
  key_bytes_ += key.size();
  ids_.emplace(keys_.back(), id);
  for (auto& a : accumulators_) a->Resize(keys_.size());
  return id;
}

const uint32_t* GroupAggregator::AssignGroups(absl::Span<const ColumnBlock* const> cols,
                                              bool bucket, size_t n) {
  if (plan_->groups().empty()) {
    if (n > 0 && keys_.empty()) GroupOf("");
    return nullptr;
  }
  group_ids_.resize(n);
  // Rows come in key order within a rowset, so neighbours often share their group (a time
  // series' tags, a time bucket): comparing a row's group cells with the previous row's is much
  // cheaper than encoding and hashing them.
  const size_t ng = cols.size();
  bucket_starts_.resize(ng);
  // Per column, fixed for the block: its bucket width (0: compared as is) and whether its cells
  // are string views.
  bucket_widths_.resize(ng);
  variable_length_.resize(ng);
  for (size_t g = 0; g < ng; g++) {
    bucket_widths_[g] = bucket ? plan_->groups()[g].spec.bucket_width_micros : 0;
    variable_length_[g] = GetTypeInfo(cols[g]->type).is_variable_length();
  }
  auto same_as_previous = [&](size_t r) {
    for (size_t g = 0; g < ng; g++) {
      const ColumnBlock& b = *cols[g];
      const bool null = b.is_null(r);
      if (null != b.is_null(r - 1)) return false;
      if (null) continue;
      const int64_t width = bucket_widths_[g];
      if (width > 0) {
        int64_t delta;
        if (__builtin_sub_overflow(b.data<int64_t>()[r], bucket_starts_[g], &delta) || delta < 0 ||
            delta >= width) {
          return false;
        }
      } else if (variable_length_[g]) {
        if (b.data<std::string_view>()[r] != b.data<std::string_view>()[r - 1]) return false;
      } else if (std::memcmp(b.cell(r), b.cell(r - 1), b.cell_size) != 0) {
        return false;
      }
    }
    return true;
  };
  for (size_t r = 0; r < n; r++) {
    if (r > 0 && same_as_previous(r)) {
      group_ids_[r] = group_ids_[r - 1];
      continue;
    }
    scratch_.clear();
    for (size_t g = 0; g < ng; g++) {
      const ColumnBlock& b = *cols[g];
      if (b.is_null(r)) {
        scratch_.push_back('\0');
        continue;
      }
      if (group_nullable_[g]) scratch_.push_back('\1');
      if (bucket_widths_[g] > 0) {
        const int64_t v = Bucket(b.data<int64_t>()[r], bucket_widths_[g],
                                 plan_->groups()[g].spec.bucket_offset_micros);
        bucket_starts_[g] = v;
        EncodeKeyCell(DataType::kUnixtimeMicros, &v, false, &scratch_);
      } else {
        EncodeKeyCell(b.type, b.cell(r), false, &scratch_);
      }
    }
    group_ids_[r] = GroupOf(scratch_);
  }
  return group_ids_.data();
}

absl::Status GroupAggregator::AddRows(absl::Span<const ColumnBlock* const> inputs,
                                      const std::string_view* keys, size_t n) {
  group_cols_.clear();
  for (const AggregatePlan::Group& g : plan_->groups()) group_cols_.push_back(inputs[g.input]);
  const uint32_t* gids = AssignGroups(group_cols_, true, n);
  if (n == 0) return absl::OkStatus();
  for (size_t i = 0; i < accumulators_.size(); i++) {
    const int in = plan_->aggregates()[i].input;
    absl::Status s = accumulators_[i]->AddRows(in < 0 ? nullptr : inputs[in], keys, gids, n);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status GroupAggregator::AddPartials(absl::Span<const ColumnBlock* const> partials, size_t n) {
  const uint32_t* gids = AssignGroups(partials.subspan(0, plan_->groups().size()), false, n);
  if (n == 0) return absl::OkStatus();
  for (size_t i = 0; i < accumulators_.size(); i++) {
    absl::Status s =
        accumulators_[i]->AddPartials(&partials[plan_->aggregates()[i].partial], gids, n);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status GroupAggregator::Emit(const std::vector<uint32_t>& order, bool partial,
                                   pb::ColumnarRowBlockPB* out) {
  const Schema& schema = partial ? plan_->partial_schema() : plan_->result_schema();
  const size_t n = order.size();
  std::vector<std::unique_ptr<ColumnBlockBuffer>> buffers;
  std::vector<ColumnBlock*> blocks;
  std::vector<DataType> types;
  std::vector<int> inputs;
  for (int i = 0; i < schema.num_columns(); i++) {
    const ColumnSchema& c = schema.column(i);
    buffers.push_back(
        std::make_unique<ColumnBlockBuffer>(c.type(), std::max<size_t>(n, 1), c.is_nullable()));
    blocks.push_back(buffers.back()->block());
    types.push_back(c.type());
    inputs.push_back(i);
  }
  // Group values, decoded from the keys (which hold the bucketed values).
  const size_t num_groups = plan_->groups().size();
  std::vector<Datum> values;
  values.reserve(n * num_groups);
  for (size_t i = 0; i < n && num_groups > 0; i++) {
    std::string_view key = order[i] < keys_.size() ? std::string_view(keys_[order[i]]) : "";
    for (size_t g = 0; g < num_groups; g++) {
      ColumnBlock* b = blocks[g];
      if (group_nullable_[g]) {
        const bool null = key.empty() || key[0] == '\0';
        if (!key.empty()) key.remove_prefix(1);
        if (null) {
          b->SetNull(i, true);
          continue;
        }
      }
      absl::StatusOr<Datum> d = DecodeKeyCell(schema.column(g).type(), false, &key);
      CHECK(d.ok()) << "a group key this aggregator encoded does not decode: " << d.status();
      values.push_back(std::move(*d));
      std::memcpy(b->cell(i), values.back().cell(), b->cell_size);
    }
  }
  for (size_t a = 0; a < accumulators_.size(); a++) {
    const AggregatePlan::Aggregate& agg = plan_->aggregates()[a];
    absl::Status s = partial
                         ? accumulators_[a]->WritePartials(order.data(), n, &blocks[agg.partial])
                         : accumulators_[a]->WriteResults(order.data(), n, blocks[num_groups + a]);
    if (!s.ok()) return s;
  }
  ColumnarBlockBuilder builder(std::move(types), std::move(inputs));
  builder.Append(blocks, n);
  builder.Finish(out);
  return absl::OkStatus();
}

absl::Status GroupAggregator::EmitPartials(pb::ColumnarRowBlockPB* out) {
  std::vector<uint32_t> order(keys_.size());
  std::iota(order.begin(), order.end(), 0);
  absl::Status s = Emit(order, true, out);
  ids_.clear();
  keys_.clear();
  key_bytes_ = 0;
  for (auto& a : accumulators_) a->Resize(0);
  return s;
}

size_t GroupAggregator::FinishResults() {
  if (plan_->groups().empty() && keys_.empty()) GroupOf("");  // One row, even for no rows.
  result_order_.resize(keys_.size());
  std::iota(result_order_.begin(), result_order_.end(), 0);
  std::sort(result_order_.begin(), result_order_.end(),
            [&](uint32_t a, uint32_t b) { return keys_[a] < keys_[b]; });
  return result_order_.size();
}

absl::Status GroupAggregator::EmitResults(size_t begin, size_t end, pb::ColumnarRowBlockPB* out) {
  end = std::min(end, result_order_.size());
  begin = std::min(begin, end);
  return Emit(std::vector<uint32_t>(result_order_.begin() + begin, result_order_.begin() + end),
              false, out);
}

}  // namespace basalt
