#include "common/datum.h"

#include <cstring>
#include <limits>

#include "common/strings.h"
#include "glog/logging.h"

namespace basalt {
namespace {

template <typename T>
Datum MakeFixed(DataType type, T v) {
  return Datum::FromCell(type, &v);
}

bool IsIntegerBacked(DataType type) {
  switch (GetTypeInfo(type).physical_type()) {
    case PhysicalType::kInt8:
    case PhysicalType::kInt16:
    case PhysicalType::kInt32:
    case PhysicalType::kInt64:
    case PhysicalType::kInt128:
      return true;
    default:
      return false;
  }
}

}  // namespace

Datum Datum::Null(DataType type) {
  Datum d;
  d.type_ = type;
  return d;
}

Datum Datum::FromCell(DataType type, const void* cell) {
  Datum d;
  d.type_ = type;
  d.is_null_ = false;
  const TypeInfo& info = GetTypeInfo(type);
  if (info.is_variable_length()) {
    std::string_view v;
    std::memcpy(&v, cell, sizeof(v));
    d.str_.assign(v.data(), v.size());
    d.RefreshView();
  } else {
    std::memcpy(d.fixed_, cell, info.size());
  }
  return d;
}

absl::StatusOr<Datum> Datum::FromSerializedCell(DataType type, std::string_view bytes) {
  if (!IsValidDataType(static_cast<int>(type))) {
    return absl::InvalidArgumentError(StrCat("invalid data type ", static_cast<int>(type)));
  }
  const TypeInfo& info = GetTypeInfo(type);
  if (info.is_variable_length()) {
    if (bytes.size() > kMaxCellBytes) {
      return absl::InvalidArgumentError(StrCat(info.name(), " value of ", bytes.size(),
                                               " bytes exceeds the limit of ", kMaxCellBytes));
    }
    return FromCell(type, &bytes);
  }
  if (bytes.size() != info.size()) {
    return absl::InvalidArgumentError(
        StrCat(info.name(), " value must be ", info.size(), " bytes, got ", bytes.size()));
  }
  if (type == DataType::kBool && static_cast<uint8_t>(bytes[0]) > 1) {
    return absl::InvalidArgumentError("BOOL value must be 0 or 1");
  }
  return FromCell(type, bytes.data());
}

Datum Datum::Bool(bool v) { return MakeFixed<uint8_t>(DataType::kBool, v ? 1 : 0); }
Datum Datum::Int8(int8_t v) { return MakeFixed(DataType::kInt8, v); }
Datum Datum::Int16(int16_t v) { return MakeFixed(DataType::kInt16, v); }
Datum Datum::Int32(int32_t v) { return MakeFixed(DataType::kInt32, v); }
Datum Datum::Int64(int64_t v) { return MakeFixed(DataType::kInt64, v); }
Datum Datum::Float(float v) { return MakeFixed(DataType::kFloat, v); }
Datum Datum::Double(double v) { return MakeFixed(DataType::kDouble, v); }
Datum Datum::String(std::string_view v) { return FromCell(DataType::kString, &v); }
Datum Datum::Binary(std::string_view v) { return FromCell(DataType::kBinary, &v); }
Datum Datum::Varchar(std::string_view v) { return FromCell(DataType::kVarchar, &v); }
Datum Datum::UnixtimeMicros(int64_t v) { return MakeFixed(DataType::kUnixtimeMicros, v); }
Datum Datum::Date(int32_t days) { return MakeFixed(DataType::kDate, days); }
Datum Datum::Decimal32(int32_t v) { return MakeFixed(DataType::kDecimal32, v); }
Datum Datum::Decimal64(int64_t v) { return MakeFixed(DataType::kDecimal64, v); }
Datum Datum::Decimal128(absl::int128 v) { return MakeFixed(DataType::kDecimal128, v); }

bool Datum::bool_value() const {
  DCHECK(!is_null_ && type_ == DataType::kBool);
  return fixed_[0] != 0;
}

absl::int128 Datum::int128_value() const {
  DCHECK(!is_null_);
  switch (GetTypeInfo(type_).physical_type()) {
    case PhysicalType::kBool:
    case PhysicalType::kInt8:
      return static_cast<int8_t>(fixed_[0]);
    case PhysicalType::kInt16: {
      int16_t v;
      std::memcpy(&v, fixed_, sizeof(v));
      return v;
    }
    case PhysicalType::kInt32: {
      int32_t v;
      std::memcpy(&v, fixed_, sizeof(v));
      return v;
    }
    case PhysicalType::kInt64: {
      int64_t v;
      std::memcpy(&v, fixed_, sizeof(v));
      return v;
    }
    case PhysicalType::kInt128: {
      absl::int128 v;
      std::memcpy(&v, fixed_, sizeof(v));
      return v;
    }
    default:
      LOG(FATAL) << "int128_value() on " << DataTypeName(type_);
  }
  return 0;
}

int64_t Datum::int_value() const {
  DCHECK(GetTypeInfo(type_).physical_type() != PhysicalType::kInt128);
  return static_cast<int64_t>(int128_value());
}

float Datum::float_value() const {
  DCHECK(!is_null_ && type_ == DataType::kFloat);
  float v;
  std::memcpy(&v, fixed_, sizeof(v));
  return v;
}

double Datum::double_value() const {
  DCHECK(!is_null_ && type_ == DataType::kDouble);
  double v;
  std::memcpy(&v, fixed_, sizeof(v));
  return v;
}

std::string_view Datum::string_value() const {
  DCHECK(!is_null_ && GetTypeInfo(type_).is_variable_length());
  return view_;
}

const void* Datum::cell() const {
  DCHECK(!is_null_);
  return GetTypeInfo(type_).is_variable_length() ? static_cast<const void*>(&view_)
                                                 : static_cast<const void*>(fixed_);
}

std::string Datum::SerializeCell() const {
  DCHECK(!is_null_);
  const TypeInfo& info = GetTypeInfo(type_);
  if (info.is_variable_length()) return str_;
  return std::string(fixed_, info.size());
}

absl::StatusOr<Datum> Datum::CastTo(DataType target) const {
  if (target == type_) return *this;
  if (is_null_) return Null(target);
  if (!IsValidDataType(static_cast<int>(target)) || !IsIntegerBacked(type_) ||
      !IsIntegerBacked(target)) {
    return absl::InvalidArgumentError(StrCat("cannot convert ", DataTypeName(type_), " value ",
                                             ToString(), " to ", DataTypeName(target)));
  }
  absl::int128 v = int128_value();
  absl::int128 min, max;
  IntegerStorageRange(target, &min, &max);
  if (v < min || v > max) {
    return absl::InvalidArgumentError(
        StrCat("value ", ToString(), " is out of range for ", DataTypeName(target)));
  }
  Datum d;
  d.type_ = target;
  d.is_null_ = false;
  // Little-endian: the low bytes of the int128 are the narrower value.
  std::memcpy(d.fixed_, &v, GetTypeInfo(target).size());
  return d;
}

int Datum::Compare(const Datum& other) const {
  if (is_null_ || other.is_null_) return int(other.is_null_) - int(is_null_);
  DCHECK(type_ == other.type_) << DataTypeName(type_) << " vs " << DataTypeName(other.type_);
  return GetTypeInfo(type_).Compare(cell(), other.cell());
}

std::string Datum::ToString() const {
  if (is_null_) return "NULL";
  std::string out;
  GetTypeInfo(type_).AppendDebugString(cell(), &out);
  return out;
}

void Datum::RefreshView() { view_ = std::string_view(str_); }

Datum::Datum(const Datum& o) : type_(o.type_), is_null_(o.is_null_), str_(o.str_) {
  std::memcpy(fixed_, o.fixed_, sizeof(fixed_));
  RefreshView();
}

Datum& Datum::operator=(const Datum& o) {
  if (this != &o) {
    type_ = o.type_;
    is_null_ = o.is_null_;
    std::memcpy(fixed_, o.fixed_, sizeof(fixed_));
    str_ = o.str_;
    RefreshView();
  }
  return *this;
}

Datum::Datum(Datum&& o) noexcept : type_(o.type_), is_null_(o.is_null_), str_(std::move(o.str_)) {
  std::memcpy(fixed_, o.fixed_, sizeof(fixed_));
  RefreshView();
}

Datum& Datum::operator=(Datum&& o) noexcept {
  if (this != &o) {
    type_ = o.type_;
    is_null_ = o.is_null_;
    std::memcpy(fixed_, o.fixed_, sizeof(fixed_));
    str_ = std::move(o.str_);
    RefreshView();
  }
  return *this;
}

}  // namespace basalt
