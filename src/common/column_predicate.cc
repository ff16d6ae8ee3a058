#include "common/column_predicate.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/numeric/int128.h"
#include "absl/strings/escaping.h"
#include "common/bitmap.h"
#include "common/coding.h"
#include "common/predicate_kernels.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/common.pb.h"

namespace basalt {
namespace {

using predicate_internal::OrderedKey;
using predicate_internal::OrderedKeyType;

int Compare(const ColumnSchema& col, const Datum& a, const Datum& b) {
  return col.type_info().Compare(a.cell(), b.cell());
}

// ---- The domain of a column's values: minimum, maximum, successor ------------------------------
//
// Integer-backed types are bounded by their storage type and, for DECIMAL, by the precision
// (|v| <= 10^p - 1), so "d <= 10^p - 1" and "d IS NOT NULL" normalize alike. FLOAT/DOUBLE use
// the IEEE total order, whose extremes are the NaNs with every payload bit set. Strings have
// minimum "" and no maximum.

void IntDomain(const ColumnSchema& col, absl::int128* min, absl::int128* max) {
  IntegerStorageRange(col.type(), min, max);
  int precision = col.attributes().precision;
  if (col.type_info().is_decimal() && precision >= 1 && precision <= kMaxDecimal128Precision) {
    absl::int128 bound = 1;
    for (int i = 0; i < precision; i++) bound *= 10;
    *min = std::max(*min, -(bound - 1));
    *max = std::min(*max, bound - 1);
  }
}

Datum IntDatum(DataType type, absl::int128 v) {
  alignas(16) char cell[sizeof(v)];
  std::memcpy(cell, &v, sizeof(v));  // Little-endian: the low bytes are the narrower value.
  return Datum::FromCell(type, cell);
}

template <typename T>
Datum FloatFromKey(DataType type, OrderedKeyType<T> key) {
  T v = OrderedKey<T>::FromKey(key);
  return Datum::FromCell(type, &v);
}

Datum StringDatum(DataType type, std::string_view v) { return Datum::FromCell(type, &v); }

Datum DomainMin(const ColumnSchema& col) {
  switch (col.type_info().physical_type()) {
    case PhysicalType::kBool:
      return Datum::Bool(false);
    case PhysicalType::kFloat:
      return FloatFromKey<float>(col.type(), std::numeric_limits<int32_t>::min());
    case PhysicalType::kDouble:
      return FloatFromKey<double>(col.type(), std::numeric_limits<int64_t>::min());
    case PhysicalType::kBinary:
      return StringDatum(col.type(), "");
    default: {
      absl::int128 min, max;
      IntDomain(col, &min, &max);
      return IntDatum(col.type(), min);
    }
  }
}

// std::nullopt when the type has no maximum.
std::optional<Datum> DomainMax(const ColumnSchema& col) {
  switch (col.type_info().physical_type()) {
    case PhysicalType::kBool:
      return Datum::Bool(true);
    case PhysicalType::kFloat:
      return FloatFromKey<float>(col.type(), std::numeric_limits<int32_t>::max());
    case PhysicalType::kDouble:
      return FloatFromKey<double>(col.type(), std::numeric_limits<int64_t>::max());
    case PhysicalType::kBinary:
      return std::nullopt;
    default: {
      absl::int128 min, max;
      IntDomain(col, &min, &max);
      return IntDatum(col.type(), max);
    }
  }
}

template <typename T>
std::optional<Datum> FloatSuccessor(DataType type, const Datum& v) {
  OrderedKeyType<T> key = OrderedKey<T>::Of(UnalignedLoad<T>(v.cell()));
  if (key == std::numeric_limits<OrderedKeyType<T>>::max()) return std::nullopt;
  return FloatFromKey<T>(type, key + 1);
}

// The smallest value greater than `v`, or std::nullopt when no value of the domain is greater.
std::optional<Datum> Successor(const ColumnSchema& col, const Datum& v) {
  switch (col.type_info().physical_type()) {
    case PhysicalType::kBool:
      if (v.bool_value()) return std::nullopt;
      return Datum::Bool(true);
    case PhysicalType::kFloat:
      return FloatSuccessor<float>(col.type(), v);
    case PhysicalType::kDouble:
      return FloatSuccessor<double>(col.type(), v);
    case PhysicalType::kBinary: {
      std::string s(v.string_value());
      s.push_back('\0');
      return StringDatum(col.type(), s);
    }
    default: {
      absl::int128 min, max;
      IntDomain(col, &min, &max);
      absl::int128 x = v.int128_value();
      if (x >= max) return std::nullopt;
      return IntDatum(col.type(), x + 1);
    }
  }
}

bool InDomain(const ColumnSchema& col, const Datum& v) {
  if (Compare(col, v, DomainMin(col)) < 0) return false;
  std::optional<Datum> max = DomainMax(col);
  return !max || Compare(col, v, *max) <= 0;
}

// Converts a predicate value to the column's type: integer-backed values with CastTo, and
// STRING/BINARY/VARCHAR values between each other.
absl::StatusOr<Datum> Coerce(const ColumnSchema& col, const Datum& v) {
  if (v.is_null()) {
    return absl::InvalidArgumentError(
        StrCat("predicate on column ", col.name(), ": value must not be NULL"));
  }
  if (v.type() == col.type()) return v;
  if (col.type_info().is_variable_length() && GetTypeInfo(v.type()).is_variable_length()) {
    return StringDatum(col.type(), v.string_value());
  }
  absl::StatusOr<Datum> cast = v.CastTo(col.type());
  if (!cast.ok()) {
    return PrependToStatus(cast.status(), StrCat("predicate on column ", col.name()));
  }
  return cast;
}

absl::StatusOr<std::optional<Datum>> CoerceOptional(const ColumnSchema& col,
                                                    const std::optional<Datum>& v) {
  if (!v) return std::optional<Datum>();
  BASALT_ASSIGN_OR_RETURN(Datum d, Coerce(col, *v));
  return std::optional<Datum>(std::move(d));
}

ColumnPredicate Unwrap(absl::StatusOr<ColumnPredicate> p) {
  CHECK(p.ok()) << p.status();  // Only called with values already of the column's type.
  return *std::move(p);
}

// A RANGE or EQUALITY predicate as [lower, upper); std::nullopt is unbounded.
std::pair<std::optional<Datum>, std::optional<Datum>> RangeOf(const ColumnPredicate& p) {
  if (p.kind() == PredicateKind::kEquality) {
    return {p.lower(), Successor(p.column(), *p.lower())};
  }
  return {p.lower(), p.upper()};
}

// The tighter of two optional bounds: the larger lower bound or the smaller upper bound.
std::optional<Datum> Tighter(const ColumnSchema& col, const std::optional<Datum>& a,
                             const std::optional<Datum>& b, bool is_lower) {
  if (!a) return b;
  if (!b) return a;
  int c = Compare(col, *a, *b);
  return (is_lower ? c >= 0 : c <= 0) ? a : b;
}

// ---- Vector evaluation -----------------------------------------------------------------------

template <typename T>
void EvaluateFixed(const ColumnPredicate& p, const void* cells, const uint8_t* nulls, size_t n,
                   uint8_t* sel) {
  using K = OrderedKeyType<T>;
  auto key = [](const Datum& d) { return OrderedKey<T>::Of(UnalignedLoad<T>(d.cell())); };
  const T* typed = static_cast<const T*>(cells);
  DCHECK_EQ(reinterpret_cast<uintptr_t>(cells) % alignof(T), 0u) << "misaligned column vector";
  switch (p.kind()) {
    case PredicateKind::kEquality: {
      K k = key(*p.lower());
      return predicate_internal::RangeVector<T>(typed, nulls, n, k, k, sel);
    }
    case PredicateKind::kRange: {
      // Normalization guarantees upper > lower >= the type's minimum, so upper - 1 is exact.
      K lo = p.lower() ? key(*p.lower()) : std::numeric_limits<K>::min();
      K hi = p.upper() ? static_cast<K>(key(*p.upper()) - 1) : std::numeric_limits<K>::max();
      return predicate_internal::RangeVector<T>(typed, nulls, n, lo, hi, sel);
    }
    case PredicateKind::kInList: {
      // The values are sorted by TypeInfo::Compare, which is the order of their keys.
      absl::InlinedVector<K, 16> keys;
      for (const Datum& v : p.values()) keys.push_back(key(v));
      return predicate_internal::InListVector<T>(typed, nulls, n, keys.data(), keys.size(), sel);
    }
    default:
      LOG(FATAL) << "not a value predicate: " << p.ToString();
  }
}

void EvaluateStrings(const ColumnPredicate& p, const void* cells, const uint8_t* nulls, size_t n,
                     uint8_t* sel) {
  const auto* typed = static_cast<const std::string_view*>(cells);
  switch (p.kind()) {
    case PredicateKind::kEquality: {
      std::string_view v = p.lower()->string_value();
      return predicate_internal::StringInListVector(typed, nulls, n, &v, 1, sel);
    }
    case PredicateKind::kRange: {
      std::string_view lo = p.lower() ? p.lower()->string_value() : std::string_view();
      std::string_view hi = p.upper() ? p.upper()->string_value() : std::string_view();
      return predicate_internal::StringRangeVector(typed, nulls, n, p.lower() ? &lo : nullptr,
                                                   p.upper() ? &hi : nullptr, sel);
    }
    case PredicateKind::kInList: {
      absl::InlinedVector<std::string_view, 16> views;
      for (const Datum& v : p.values()) views.push_back(v.string_value());
      return predicate_internal::StringInListVector(typed, nulls, n, views.data(), views.size(),
                                                    sel);
    }
    default:
      LOG(FATAL) << "not a value predicate: " << p.ToString();
  }
}

void EvaluateValues(const ColumnPredicate& p, const void* cells, const uint8_t* nulls, size_t n,
                    uint8_t* sel) {
  switch (p.column().type_info().physical_type()) {
    case PhysicalType::kBool:
      return EvaluateFixed<uint8_t>(p, cells, nulls, n, sel);
    case PhysicalType::kInt8:
      return EvaluateFixed<int8_t>(p, cells, nulls, n, sel);
    case PhysicalType::kInt16:
      return EvaluateFixed<int16_t>(p, cells, nulls, n, sel);
    case PhysicalType::kInt32:
      return EvaluateFixed<int32_t>(p, cells, nulls, n, sel);
    case PhysicalType::kInt64:
      return EvaluateFixed<int64_t>(p, cells, nulls, n, sel);
    case PhysicalType::kInt128:
      return EvaluateFixed<absl::int128>(p, cells, nulls, n, sel);
    case PhysicalType::kFloat:
      return EvaluateFixed<float>(p, cells, nulls, n, sel);
    case PhysicalType::kDouble:
      return EvaluateFixed<double>(p, cells, nulls, n, sel);
    case PhysicalType::kBinary:
      return EvaluateStrings(p, cells, nulls, n, sel);
  }
}

// ---- Rendering -------------------------------------------------------------------------------

std::string ValueToString(const ColumnSchema& col, const Datum& v) {
  switch (col.type()) {
    case DataType::kDecimal32:
    case DataType::kDecimal64:
    case DataType::kDecimal128:
      return FormatDecimal(v.int128_value(), col.attributes().scale);
    case DataType::kString:
    case DataType::kVarchar:
      return StrCat("'", absl::CHexEscape(ToAbsl(v.string_value())), "'");
    default:
      return v.ToString();
  }
}

}  // namespace

ColumnPredicate::ColumnPredicate(const ColumnSchema& column, PredicateKind kind)
    : column_(column), kind_(kind) {}

absl::StatusOr<ColumnPredicate> ColumnPredicate::Range(const ColumnSchema& column,
                                                       std::optional<Datum> lower_inclusive,
                                                       std::optional<Datum> upper_exclusive) {
  BASALT_ASSIGN_OR_RETURN(std::optional<Datum> lower, CoerceOptional(column, lower_inclusive));
  BASALT_ASSIGN_OR_RETURN(std::optional<Datum> upper, CoerceOptional(column, upper_exclusive));
  // Drop bounds that exclude nothing, then detect empty and single-value ranges.
  Datum min = DomainMin(column);
  std::optional<Datum> max = DomainMax(column);
  if (lower && Compare(column, *lower, min) <= 0) lower.reset();
  if (upper && max && Compare(column, *upper, *max) > 0) upper.reset();
  const Datum& effective_lower = lower ? *lower : min;
  if ((max && Compare(column, effective_lower, *max) > 0) ||
      (upper && Compare(column, *upper, effective_lower) <= 0)) {
    return None(column);
  }
  std::optional<Datum> succ = Successor(column, effective_lower);
  if (upper ? (succ && Compare(column, *succ, *upper) == 0) : !succ) {
    ColumnPredicate p(column, PredicateKind::kEquality);
    p.lower_ = effective_lower;
    return p;
  }
  if (!lower && !upper) return IsNotNull(column);
  ColumnPredicate p(column, PredicateKind::kRange);
  p.lower_ = std::move(lower);
  p.upper_ = std::move(upper);
  return p;
}

absl::StatusOr<ColumnPredicate> ColumnPredicate::Equality(const ColumnSchema& column,
                                                          const Datum& value) {
  BASALT_ASSIGN_OR_RETURN(Datum v, Coerce(column, value));
  if (!InDomain(column, v)) return None(column);
  ColumnPredicate p(column, PredicateKind::kEquality);
  p.lower_ = std::move(v);
  return p;
}

absl::StatusOr<ColumnPredicate> ColumnPredicate::InList(const ColumnSchema& column,
                                                        std::vector<Datum> values) {
  std::vector<Datum> list;
  list.reserve(values.size());
  for (const Datum& v : values) {
    BASALT_ASSIGN_OR_RETURN(Datum d, Coerce(column, v));
    if (InDomain(column, d)) list.push_back(std::move(d));
  }
  std::sort(list.begin(), list.end(),
            [&](const Datum& a, const Datum& b) { return Compare(column, a, b) < 0; });
  list.erase(
      std::unique(list.begin(), list.end(),
                  [&](const Datum& a, const Datum& b) { return Compare(column, a, b) == 0; }),
      list.end());
  if (list.empty()) return None(column);
  if (list.size() == 1) return Equality(column, list[0]);
  if (column.type() == DataType::kBool) return IsNotNull(column);  // Both values listed.
  ColumnPredicate p(column, PredicateKind::kInList);
  p.values_ = std::move(list);
  return p;
}

ColumnPredicate ColumnPredicate::IsNull(const ColumnSchema& column) {
  return ColumnPredicate(column, PredicateKind::kIsNull);
}

ColumnPredicate ColumnPredicate::IsNotNull(const ColumnSchema& column) {
  return ColumnPredicate(column, PredicateKind::kIsNotNull);
}

ColumnPredicate ColumnPredicate::None(const ColumnSchema& column) {
  return ColumnPredicate(column, PredicateKind::kNone);
}

absl::StatusOr<ColumnPredicate> ColumnPredicate::Comparison(const ColumnSchema& column, Op op,
                                                            const Datum& value) {
  BASALT_ASSIGN_OR_RETURN(Datum v, Coerce(column, value));
  switch (op) {
    case Op::kLess:
      return Range(column, std::nullopt, std::move(v));
    case Op::kLessEqual:
      return Range(column, std::nullopt, Successor(column, v));  // No successor: unbounded.
    case Op::kEqual:
      return Equality(column, v);
    case Op::kGreaterEqual:
      return Range(column, std::move(v), std::nullopt);
    case Op::kGreater: {
      std::optional<Datum> succ = Successor(column, v);
      if (!succ) return None(column);
      return Range(column, std::move(succ), std::nullopt);
    }
  }
  return absl::InvalidArgumentError(StrCat("bad comparison operator ", static_cast<int>(op)));
}

ColumnPredicate ColumnPredicate::Merge(const ColumnPredicate& other) const {
  DCHECK_EQ(column_.name(), other.column_.name());
  DCHECK(column_.type() == other.column_.type());
  if (kind_ == PredicateKind::kNone || other.kind_ == PredicateKind::kNone) return None(column_);
  if (kind_ == PredicateKind::kIsNull || other.kind_ == PredicateKind::kIsNull) {
    return kind_ == other.kind_ ? *this : None(column_);
  }
  if (kind_ == PredicateKind::kIsNotNull) return other;
  if (other.kind_ == PredicateKind::kIsNotNull) return *this;
  if (kind_ == PredicateKind::kInList || other.kind_ == PredicateKind::kInList) {
    const ColumnPredicate& list = kind_ == PredicateKind::kInList ? *this : other;
    const ColumnPredicate& filter = kind_ == PredicateKind::kInList ? other : *this;
    std::vector<Datum> kept;
    for (const Datum& v : list.values_) {
      if (filter.Evaluate(v.cell())) kept.push_back(v);
    }
    return Unwrap(InList(column_, std::move(kept)));
  }
  // Both are RANGE or EQUALITY: intersect the half-open intervals.
  auto [lower1, upper1] = RangeOf(*this);
  auto [lower2, upper2] = RangeOf(other);
  return Unwrap(Range(column_, Tighter(column_, lower1, lower2, /*is_lower=*/true),
                      Tighter(column_, upper1, upper2, /*is_lower=*/false)));
}

bool ColumnPredicate::Evaluate(const void* cell) const {
  if (cell == nullptr) return kind_ == PredicateKind::kIsNull;
  const TypeInfo& type = column_.type_info();
  switch (kind_) {
    case PredicateKind::kRange:
      return (!lower_ || type.Compare(cell, lower_->cell()) >= 0) &&
             (!upper_ || type.Compare(cell, upper_->cell()) < 0);
    case PredicateKind::kEquality:
      return type.Compare(cell, lower_->cell()) == 0;
    case PredicateKind::kInList: {
      auto it = std::lower_bound(
          values_.begin(), values_.end(), cell,
          [&](const Datum& v, const void* c) { return type.Compare(v.cell(), c) < 0; });
      return it != values_.end() && type.Compare(it->cell(), cell) == 0;
    }
    case PredicateKind::kIsNull:
    case PredicateKind::kNone:
      return false;
    case PredicateKind::kIsNotNull:
      return true;
  }
  return false;
}

void ColumnPredicate::EvaluateVector(const void* cells, const uint8_t* null_bitmap, size_t n,
                                     uint8_t* selection) const {
  switch (kind_) {
    case PredicateKind::kNone:
      return predicate_internal::ClearVector(n, selection);
    case PredicateKind::kIsNull:
      return predicate_internal::IsNullVector(null_bitmap, n, selection);
    case PredicateKind::kIsNotNull:
      return predicate_internal::IsNotNullVector(null_bitmap, n, selection);
    case PredicateKind::kRange:
    case PredicateKind::kEquality:
    case PredicateKind::kInList:
      return EvaluateValues(*this, cells, null_bitmap, n, selection);
  }
}

bool ColumnPredicate::MayMatchRange(const void* min_cell, const void* max_cell, bool may_have_nulls,
                                    bool may_have_values) const {
  switch (kind_) {
    case PredicateKind::kNone:
      return false;
    case PredicateKind::kIsNull:
      return may_have_nulls;
    case PredicateKind::kIsNotNull:
      return may_have_values;
    default:
      break;
  }
  if (!may_have_values) return false;
  const TypeInfo& type = column_.type_info();
  // Values of the predicate lie in [first, last] (inclusive) or [first, upper) for ranges.
  auto below_min = [&](const void* v) { return min_cell && type.Compare(v, min_cell) < 0; };
  auto above_max = [&](const void* v) { return max_cell && type.Compare(v, max_cell) > 0; };
  switch (kind_) {
    case PredicateKind::kRange:
      return !(lower_ && above_max(lower_->cell())) &&
             !(upper_ && min_cell && type.Compare(upper_->cell(), min_cell) <= 0);
    case PredicateKind::kEquality:
      return !below_min(lower_->cell()) && !above_max(lower_->cell());
    case PredicateKind::kInList: {
      auto it = values_.begin();
      if (min_cell != nullptr) {
        it = std::lower_bound(
            values_.begin(), values_.end(), min_cell,
            [&](const Datum& v, const void* c) { return type.Compare(v.cell(), c) < 0; });
      }
      return it != values_.end() && !above_max(it->cell());
    }
    default:
      return true;
  }
}

void ColumnPredicate::ToPB(pb::ColumnPredicatePB* pb) const {
  pb->Clear();
  pb->set_column(column_.name());
  switch (kind_) {
    case PredicateKind::kRange: {
      pb::ColumnPredicatePB::RangePB* range = pb->mutable_range();
      if (lower_) range->set_lower(lower_->SerializeCell());
      if (upper_) range->set_upper(upper_->SerializeCell());
      return;
    }
    case PredicateKind::kEquality:
      pb->mutable_equality()->set_value(lower_->SerializeCell());
      return;
    case PredicateKind::kInList:
      for (const Datum& v : values_) pb->mutable_in_list()->add_values(v.SerializeCell());
      return;
    case PredicateKind::kIsNull:
      pb->mutable_is_null();
      return;
    case PredicateKind::kIsNotNull:
      pb->mutable_is_not_null();
      return;
    case PredicateKind::kNone:
      pb->mutable_in_list();  // An empty IN list: FromPB normalizes it back to NONE.
      return;
  }
}

absl::StatusOr<ColumnPredicate> ColumnPredicate::FromPB(const Schema& schema,
                                                        const pb::ColumnPredicatePB& pb) {
  int idx = schema.find_column(pb.column());
  if (idx < 0) {
    return absl::NotFoundError(StrCat("predicate on unknown column '", pb.column(), "'"));
  }
  const ColumnSchema& col = schema.column(idx);
  auto parse = [&](const std::string& bytes) -> absl::StatusOr<Datum> {
    absl::StatusOr<Datum> d = Datum::FromSerializedCell(col.type(), bytes);
    if (!d.ok()) return PrependToStatus(d.status(), StrCat("predicate on column ", col.name()));
    return d;
  };
  using PB = pb::ColumnPredicatePB;
  switch (pb.predicate_case()) {
    case PB::kRange: {
      std::optional<Datum> lower, upper;
      if (pb.range().has_lower()) {
        BASALT_ASSIGN_OR_RETURN(lower, parse(pb.range().lower()));
      }
      if (pb.range().has_upper()) {
        BASALT_ASSIGN_OR_RETURN(upper, parse(pb.range().upper()));
      }
      return Range(col, std::move(lower), std::move(upper));
    }
    case PB::kEquality: {
      BASALT_ASSIGN_OR_RETURN(Datum v, parse(pb.equality().value()));
      return Equality(col, v);
    }
    case PB::kInList: {
      std::vector<Datum> values;
      values.reserve(pb.in_list().values_size());
      for (const std::string& bytes : pb.in_list().values()) {
        BASALT_ASSIGN_OR_RETURN(Datum v, parse(bytes));
        values.push_back(std::move(v));
      }
      return InList(col, std::move(values));
    }
    case PB::kIsNull:
      return IsNull(col);
    case PB::kIsNotNull:
      return IsNotNull(col);
    case PB::PREDICATE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      StrCat("predicate on column ", col.name(), " has no condition"));
}

bool ColumnPredicate::operator==(const ColumnPredicate& other) const {
  return column_.name() == other.column_.name() && column_.type() == other.column_.type() &&
         kind_ == other.kind_ && lower_ == other.lower_ && upper_ == other.upper_ &&
         values_ == other.values_;
}

std::string ColumnPredicate::ToString() const {
  const std::string& name = column_.name();
  switch (kind_) {
    case PredicateKind::kRange: {
      std::string out;
      if (lower_) StrAppend(&out, name, " >= ", ValueToString(column_, *lower_));
      if (lower_ && upper_) out.append(" AND ");
      if (upper_) StrAppend(&out, name, " < ", ValueToString(column_, *upper_));
      return out;
    }
    case PredicateKind::kEquality:
      return StrCat(name, " = ", ValueToString(column_, *lower_));
    case PredicateKind::kInList: {
      std::string out = StrCat(name, " IN (");
      for (size_t i = 0; i < values_.size(); i++) {
        StrAppend(&out, i ? ", " : "", ValueToString(column_, values_[i]));
      }
      out.append(")");
      return out;
    }
    case PredicateKind::kIsNull:
      return StrCat(name, " IS NULL");
    case PredicateKind::kIsNotNull:
      return StrCat(name, " IS NOT NULL");
    case PredicateKind::kNone:
      return StrCat(name, " NONE");
  }
  return name;
}

}  // namespace basalt
