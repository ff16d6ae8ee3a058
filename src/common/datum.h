#pragma once

// Datum: one typed value that owns its bytes, or NULL. Used wherever a single value travels on
// its own: column defaults, predicate bounds, split rows, range bounds, tests and the CLI. Hot
// paths (row buffers, column vectors) use raw cells instead; Datum converts to and from them.
//
// A Datum carries its DataType but not TypeAttributes, so DECIMAL scale and VARCHAR length are
// checked against a column (ValidateCell) when a Datum is bound to one.
// Thread safety: a const Datum may be shared between threads.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "common/types.h"

namespace basalt {

class Datum {
 public:
  // A NULL of unknown type; compares below every value.
  Datum() = default;
  static Datum Null(DataType type);

  static Datum Bool(bool v);
  static Datum Int8(int8_t v);
  static Datum Int16(int16_t v);
  static Datum Int32(int32_t v);
  static Datum Int64(int64_t v);
  static Datum Float(float v);
  static Datum Double(double v);
  static Datum String(std::string_view v);
  static Datum Binary(std::string_view v);
  static Datum Varchar(std::string_view v);
  static Datum UnixtimeMicros(int64_t v);
  static Datum Date(int32_t days_since_epoch);
  // A decimal's unscaled value; the storage type must fit the column's precision.
  static Datum Decimal32(int32_t unscaled);
  static Datum Decimal64(int64_t unscaled);
  static Datum Decimal128(absl::int128 unscaled);

  // Builds a Datum from a cell in row-buffer form (see types.h). REQUIRES: `cell` points at a
  // valid cell of `type`.
  static Datum FromCell(DataType type, const void* cell);
  // Parses the serialized cell format (fixed-width little-endian bytes, or the raw bytes of a
  // variable-length value). INVALID_ARGUMENT when the size does not match the type or a
  // variable-length value exceeds kMaxCellBytes.
  static absl::StatusOr<Datum> FromSerializedCell(DataType type, std::string_view bytes);

  DataType type() const { return type_; }
  bool is_null() const { return is_null_; }

  // Typed accessors. REQUIRES: !is_null() and a matching physical type.
  bool bool_value() const;
  int64_t int_value() const;  // Any integer-backed type up to 64 bits, sign-extended.
  absl::int128 int128_value() const;
  float float_value() const;
  double double_value() const;
  std::string_view string_value() const;  // STRING, BINARY, VARCHAR.

  // Pointer to the value in row-buffer form (for variable-length types a std::string_view that
  // points into this Datum). Valid while this Datum lives and is not modified.
  // REQUIRES: !is_null().
  const void* cell() const;
  // The serialized cell format; the inverse of FromSerializedCell. REQUIRES: !is_null().
  std::string SerializeCell() const;

  // Converts an integer Datum to another integer-backed type of the same family (INT8..INT64,
  // DATE, UNIXTIME_MICROS, DECIMAL*) when the value fits; INVALID_ARGUMENT otherwise. Lets
  // callers write Datum::Int64(5) for an INT16 column.
  absl::StatusOr<Datum> CastTo(DataType target) const;

  // Three-way comparison with NULL first. REQUIRES: same type (or either is NULL).
  int Compare(const Datum& other) const;
  bool operator==(const Datum& other) const { return Compare(other) == 0 && type_ == other.type_; }

  std::string ToString() const;

 private:
  DataType type_ = DataType::kUnknown;
  bool is_null_ = true;
  // The fixed-width value, little-endian in its low bytes; unused for variable-length types.
  alignas(16) char fixed_[16] = {};
  std::string str_;
  // For variable-length types, a view of str_, so cell() can hand out a row-buffer cell.
  // Refreshed by every constructor and copy (see the special members below).
  std::string_view view_;

  void RefreshView();

 public:
  Datum(const Datum& o);
  Datum& operator=(const Datum& o);
  Datum(Datum&& o) noexcept;
  Datum& operator=(Datum&& o) noexcept;
  ~Datum() = default;
};

}  // namespace basalt
