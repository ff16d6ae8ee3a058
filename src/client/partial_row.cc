#include "client/partial_row.h"

#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "client/client_internal.h"
#include "common/bitmap.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"

namespace basalt::client {

using internal::Access;

namespace {

size_t RoundUp16(size_t n) { return (n + 15) & ~size_t{15}; }

const basalt::Schema& Internal(const Schema* schema) { return Access::Internal(*schema); }

absl::Status TypeMismatch(const basalt::ColumnSchema& col, std::string_view what) {
  return absl::InvalidArgumentError(
      StrCat("column '", col.name(), "' is ", col.TypeToString(), ", not ", what));
}

bool IsType(basalt::DataType t, std::initializer_list<basalt::DataType> allowed) {
  for (basalt::DataType a : allowed) {
    if (a == t) return true;
  }
  return false;
}

}  // namespace

PartialRow::PartialRow(const Schema* schema) : schema_(schema) { Allocate(); }

PartialRow::PartialRow(const PartialRow& other) : schema_(other.schema_) { CopyFrom(other); }

PartialRow& PartialRow::operator=(const PartialRow& other) {
  if (this != &other) {
    schema_ = other.schema_;
    strings_.clear();
    CopyFrom(other);
  }
  return *this;
}

PartialRow::~PartialRow() = default;

void PartialRow::Allocate() {
  const basalt::Schema& s = Internal(schema_);
  row_size_ = RoundUp16(s.fixed_row_size());
  bitmap_size_ = BitmapSize(s.num_columns());
  const size_t total = row_size_ + 2 * bitmap_size_;
  if (total <= kInlineBytes) {
    heap_.reset();
    data_ = inline_[0].bytes;
  } else {
    heap_.reset(new Chunk[(total + sizeof(Chunk) - 1) / sizeof(Chunk)]);
    data_ = heap_[0].bytes;
  }
  std::memset(data_, 0, total);
}

void PartialRow::CopyFrom(const PartialRow& other) {
  Allocate();
  std::memcpy(data_, other.data_, row_size_ + 2 * bitmap_size_);
  const basalt::Schema& s = Internal(schema_);
  for (int i = 0; i < s.num_columns(); i++) {
    if (s.column(i).type_info().is_variable_length() && IsColumnSet(i) && !IsNull(i)) {
      Access::SetCell(this, i, other.data_ + s.column_offset(i));
    }
  }
}

void Access::SetCell(PartialRow* row, int idx, const void* cell) {
  const basalt::Schema& s = Access::Internal(*row->schema_);
  const TypeInfo& info = s.column(idx).type_info();
  uint8_t* dst = row->data_ + s.column_offset(idx);
  if (info.is_variable_length()) {
    std::string_view v;
    std::memcpy(&v, cell, sizeof(v));
    row->strings_.push_back(std::make_unique<std::string>(v));
    v = *row->strings_.back();
    std::memcpy(dst, &v, sizeof(v));
  } else {
    std::memcpy(dst, cell, info.size());
  }
  MarkSet(row, idx);
}

void Access::MarkSet(PartialRow* row, int idx) {
  uint8_t* isset = row->data_ + row->row_size_;
  BitmapSet(isset, idx);
  BitmapClear(isset + row->bitmap_size_, idx);
}

void Access::SetNullUnchecked(PartialRow* row, int idx) {
  uint8_t* isset = row->data_ + row->row_size_;
  BitmapSet(isset, idx);
  BitmapSet(isset + row->bitmap_size_, idx);
}

namespace {

// Resolves a column reference to an index.
absl::StatusOr<int> Resolve(const basalt::Schema& s, std::string_view name) {
  int idx = s.find_column(name);
  if (idx < 0) return absl::NotFoundError(StrCat("no column named '", name, "'"));
  return idx;
}
absl::StatusOr<int> Resolve(const basalt::Schema& s, int idx) {
  if (idx < 0 || idx >= s.num_columns()) {
    return absl::InvalidArgumentError(
        StrCat("column index ", idx, " out of range [0, ", s.num_columns(), ")"));
  }
  return idx;
}

// Checks a fixed-width or string setter's value against the column and builds its cell.
template <typename T>
absl::Status CheckedCell(const basalt::ColumnSchema& col,
                         std::initializer_list<basalt::DataType> ok, std::string_view what,
                         const T& value) {
  if (!IsType(col.type(), ok)) return TypeMismatch(col, what);
  return absl::OkStatus();
}

}  // namespace

#define BASALT_DEFINE_FIXED_SETTER(Name, CppType, WHAT, ...)              \
  absl::Status PartialRow::Name(std::string_view column, CppType value) { \
    BASALT_ASSIGN_OR_RETURN(int idx, Resolve(Internal(schema_), column)); \
    return Name(idx, value);                                              \
  }                                                                       \
  absl::Status PartialRow::Name(int column_idx, CppType value) {          \
    const basalt::Schema& s = Internal(schema_);                          \
    BASALT_ASSIGN_OR_RETURN(int idx, Resolve(s, column_idx));             \
    const basalt::ColumnSchema& col = s.column(idx);                      \
    BASALT_RETURN_IF_ERROR(CheckedCell(col, {__VA_ARGS__}, WHAT, value)); \
    DCHECK_EQ(col.type_info().size(), sizeof(CppType));                   \
    Access::SetFixedCell(this, idx, value);                               \
    return absl::OkStatus();                                              \
  }
BASALT_DEFINE_FIXED_SETTER(SetInt8, int8_t, "INT8", basalt::DataType::kInt8)
BASALT_DEFINE_FIXED_SETTER(SetInt16, int16_t, "INT16", basalt::DataType::kInt16)
BASALT_DEFINE_FIXED_SETTER(SetInt32, int32_t, "INT32", basalt::DataType::kInt32)
BASALT_DEFINE_FIXED_SETTER(SetInt64, int64_t, "INT64", basalt::DataType::kInt64)
BASALT_DEFINE_FIXED_SETTER(SetFloat, float, "FLOAT", basalt::DataType::kFloat)
BASALT_DEFINE_FIXED_SETTER(SetDouble, double, "DOUBLE", basalt::DataType::kDouble)
BASALT_DEFINE_FIXED_SETTER(SetUnixTimeMicros, int64_t, "UNIXTIME_MICROS",
                           basalt::DataType::kUnixtimeMicros)
BASALT_DEFINE_FIXED_SETTER(SetDate, int32_t, "DATE", basalt::DataType::kDate)
#undef BASALT_DEFINE_FIXED_SETTER

// Setters whose value needs conversion or validation go through a Datum.
#define BASALT_DEFINE_DATUM_SETTER(Name, CppType)                         \
  absl::Status PartialRow::Name(std::string_view column, CppType value) { \
    BASALT_ASSIGN_OR_RETURN(int idx, Resolve(Internal(schema_), column)); \
    return Name(idx, value);                                              \
  }
BASALT_DEFINE_DATUM_SETTER(SetBool, bool)
BASALT_DEFINE_DATUM_SETTER(SetUnscaledDecimal, int64_t)
BASALT_DEFINE_DATUM_SETTER(SetString, std::string_view)
BASALT_DEFINE_DATUM_SETTER(SetBinary, std::string_view)
BASALT_DEFINE_DATUM_SETTER(Set, const Value&)
#undef BASALT_DEFINE_DATUM_SETTER

namespace {

// Validates `d` against column `idx` and stores it.
absl::Status SetDatum(PartialRow* row, const basalt::ColumnSchema& col, int idx, const Datum& d) {
  BASALT_RETURN_IF_ERROR_PREPEND(ValidateCell(col.type(), col.attributes(), d.cell()),
                                 StrCat("column '", col.name(), "'"));
  Access::SetCell(row, idx, d.cell());
  return absl::OkStatus();
}

}  // namespace

absl::Status PartialRow::SetBool(int column_idx, bool value) {
  const basalt::Schema& s = Internal(schema_);
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(s, column_idx));
  if (s.column(idx).type() != basalt::DataType::kBool) return TypeMismatch(s.column(idx), "BOOL");
  return SetDatum(this, s.column(idx), idx, Datum::Bool(value));
}

absl::Status PartialRow::SetUnscaledDecimal(int column_idx, int64_t value) {
  const basalt::Schema& s = Internal(schema_);
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(s, column_idx));
  const basalt::ColumnSchema& col = s.column(idx);
  if (!col.type_info().is_decimal()) return TypeMismatch(col, "DECIMAL");
  auto d = Datum::Int64(value).CastTo(col.type());
  if (!d.ok()) {
    return absl::InvalidArgumentError(
        StrCat("column '", col.name(), "': ", value, " out of range for ", col.TypeToString()));
  }
  return SetDatum(this, col, idx, *d);
}

absl::Status PartialRow::SetString(int column_idx, std::string_view value) {
  const basalt::Schema& s = Internal(schema_);
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(s, column_idx));
  const basalt::ColumnSchema& col = s.column(idx);
  if (col.type() == basalt::DataType::kString)
    return SetDatum(this, col, idx, Datum::String(value));
  if (col.type() == basalt::DataType::kVarchar) {
    return SetDatum(this, col, idx, Datum::Varchar(value));
  }
  return TypeMismatch(col, "STRING");
}

absl::Status PartialRow::SetBinary(int column_idx, std::string_view value) {
  const basalt::Schema& s = Internal(schema_);
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(s, column_idx));
  const basalt::ColumnSchema& col = s.column(idx);
  if (col.type() != basalt::DataType::kBinary) return TypeMismatch(col, "BINARY");
  return SetDatum(this, col, idx, Datum::Binary(value));
}

absl::Status PartialRow::Set(int column_idx, const Value& value) {
  const basalt::Schema& s = Internal(schema_);
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(s, column_idx));
  BASALT_ASSIGN_OR_RETURN(Datum d, Access::ToDatum(value, s.column(idx)));
  return SetDatum(this, s.column(idx), idx, d);
}

absl::Status PartialRow::SetNull(std::string_view column) {
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(Internal(schema_), column));
  return SetNull(idx);
}

absl::Status PartialRow::SetNull(int column_idx) {
  const basalt::Schema& s = Internal(schema_);
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(s, column_idx));
  if (!s.column(idx).is_nullable()) {
    return absl::InvalidArgumentError(
        StrCat("column '", s.column(idx).name(), "' is NOT NULL; it cannot be set to NULL"));
  }
  std::memset(data_ + s.column_offset(idx), 0, s.column(idx).type_info().size());
  Access::SetNullUnchecked(this, idx);
  return absl::OkStatus();
}

absl::Status PartialRow::Unset(std::string_view column) {
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(Internal(schema_), column));
  return Unset(idx);
}

absl::Status PartialRow::Unset(int column_idx) {
  const basalt::Schema& s = Internal(schema_);
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(s, column_idx));
  std::memset(data_ + s.column_offset(idx), 0, s.column(idx).type_info().size());
  BitmapClear(data_ + row_size_, idx);
  BitmapClear(data_ + row_size_ + bitmap_size_, idx);
  return absl::OkStatus();
}

// ---- Getters
// -------------------------------------------------------------------------------------

namespace {

// Finds a set, non-NULL cell of one of the `ok` types.
absl::StatusOr<const void*> GetCell(const PartialRow& row, int idx,
                                    std::initializer_list<basalt::DataType> ok,
                                    std::string_view what) {
  const basalt::Schema& s = Internal(row.schema());
  BASALT_ASSIGN_OR_RETURN(idx, Resolve(s, idx));
  const basalt::ColumnSchema& col = s.column(idx);
  if (!IsType(col.type(), ok)) return TypeMismatch(col, what);
  if (!row.IsColumnSet(idx)) {
    return absl::NotFoundError(StrCat("column '", col.name(), "' is not set"));
  }
  if (row.IsNull(idx)) return absl::NotFoundError(StrCat("column '", col.name(), "' is NULL"));
  return static_cast<const void*>(Access::RowData(row) + s.column_offset(idx));
}

}  // namespace

#define BASALT_DEFINE_GETTER(Name, CppType, WHAT, ...)                                          \
  absl::Status PartialRow::Name(std::string_view column, CppType* out) const {                  \
    BASALT_ASSIGN_OR_RETURN(int idx, Resolve(Internal(schema_), column));                       \
    return Name(idx, out);                                                                      \
  }                                                                                             \
  absl::Status PartialRow::Name(int column_idx, CppType* out) const {                           \
    BASALT_ASSIGN_OR_RETURN(const void* cell, GetCell(*this, column_idx, {__VA_ARGS__}, WHAT)); \
    std::memcpy(out, cell, sizeof(CppType));                                                    \
    return absl::OkStatus();                                                                    \
  }
BASALT_DEFINE_GETTER(GetInt8, int8_t, "INT8", basalt::DataType::kInt8)
BASALT_DEFINE_GETTER(GetInt16, int16_t, "INT16", basalt::DataType::kInt16)
BASALT_DEFINE_GETTER(GetInt32, int32_t, "INT32", basalt::DataType::kInt32)
BASALT_DEFINE_GETTER(GetInt64, int64_t, "INT64", basalt::DataType::kInt64)
BASALT_DEFINE_GETTER(GetFloat, float, "FLOAT", basalt::DataType::kFloat)
BASALT_DEFINE_GETTER(GetDouble, double, "DOUBLE", basalt::DataType::kDouble)
BASALT_DEFINE_GETTER(GetUnixTimeMicros, int64_t, "UNIXTIME_MICROS",
                     basalt::DataType::kUnixtimeMicros)
BASALT_DEFINE_GETTER(GetDate, int32_t, "DATE", basalt::DataType::kDate)
BASALT_DEFINE_GETTER(GetString, std::string_view, "STRING", basalt::DataType::kString,
                     basalt::DataType::kVarchar)
BASALT_DEFINE_GETTER(GetBinary, std::string_view, "BINARY", basalt::DataType::kBinary)
#undef BASALT_DEFINE_GETTER

absl::Status PartialRow::GetBool(std::string_view column, bool* out) const {
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(Internal(schema_), column));
  return GetBool(idx, out);
}
absl::Status PartialRow::GetBool(int column_idx, bool* out) const {
  BASALT_ASSIGN_OR_RETURN(const void* cell,
                          GetCell(*this, column_idx, {basalt::DataType::kBool}, "BOOL"));
  *out = *static_cast<const uint8_t*>(cell) != 0;
  return absl::OkStatus();
}

absl::Status PartialRow::GetUnscaledDecimal(std::string_view column, int64_t* out) const {
  BASALT_ASSIGN_OR_RETURN(int idx, Resolve(Internal(schema_), column));
  return GetUnscaledDecimal(idx, out);
}
absl::Status PartialRow::GetUnscaledDecimal(int column_idx, int64_t* out) const {
  using basalt::DataType;
  BASALT_ASSIGN_OR_RETURN(
      const void* cell,
      GetCell(*this, column_idx,
              {DataType::kDecimal32, DataType::kDecimal64, DataType::kDecimal128}, "DECIMAL"));
  const basalt::ColumnSchema& col = Internal(schema_).column(column_idx);
  Datum d = Datum::FromCell(col.type(), cell);
  absl::int128 v = d.int128_value();
  if (v > INT64_MAX || v < INT64_MIN) {
    return absl::InvalidArgumentError(
        StrCat("column '", col.name(), "': the value does not fit in int64"));
  }
  *out = static_cast<int64_t>(v);
  return absl::OkStatus();
}

bool PartialRow::IsColumnSet(std::string_view column) const {
  int idx = Internal(schema_).find_column(column);
  return idx >= 0 && IsColumnSet(idx);
}
bool PartialRow::IsColumnSet(int column_idx) const {
  return column_idx >= 0 && column_idx < Internal(schema_).num_columns() &&
         BitmapTest(data_ + row_size_, column_idx);
}
bool PartialRow::IsNull(std::string_view column) const {
  int idx = Internal(schema_).find_column(column);
  return idx >= 0 && IsNull(idx);
}
bool PartialRow::IsNull(int column_idx) const {
  return column_idx >= 0 && column_idx < Internal(schema_).num_columns() &&
         BitmapTest(data_ + row_size_ + bitmap_size_, column_idx);
}
bool PartialRow::IsKeySet() const {
  const int n = Internal(schema_).num_key_columns();
  for (int i = 0; i < n; i++) {
    if (!IsColumnSet(i)) return false;
  }
  return true;
}

std::string PartialRow::ToString() const {
  const basalt::Schema& s = Internal(schema_);
  std::string out = "(";
  bool first = true;
  for (int i = 0; i < s.num_columns(); i++) {
    if (!IsColumnSet(i)) continue;
    const basalt::ColumnSchema& col = s.column(i);
    StrAppend(&out, first ? "" : ", ", absl::AsciiStrToLower(ToAbsl(col.type_info().name())), " ",
              col.name(), "=");
    first = false;
    if (IsNull(i)) {
      out += "NULL";
    } else if (col.type_info().is_decimal()) {
      Datum d = Datum::FromCell(col.type(), data_ + s.column_offset(i));
      out += FormatDecimal(d.int128_value(), col.attributes().scale);
    } else {
      col.type_info().AppendDebugString(data_ + s.column_offset(i), &out);
    }
  }
  out += ")";
  return out;
}

}  // namespace basalt::client
