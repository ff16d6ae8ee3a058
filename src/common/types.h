#pragma once

// Column data types and their traits (DESIGN.md section 2).
//
// Every type has a *cell format*: the bytes of one value as it sits in a row buffer, a default
// value, a predicate bound or a split row. Fixed-width types are their physical C++ value in
// little-endian order (BOOL one byte, 0 or 1). Variable-length types (STRING, BINARY, VARCHAR)
// are held in a row buffer as a std::string_view pointing at the bytes, and serialized as the raw
// bytes. The numbering of DataType equals basalt.pb.DataType (proto/common.proto); it is a wire and
// on-disk contract.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt {

enum class DataType : uint8_t {
  kUnknown = 0,
  kBool = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kFloat = 6,
  kDouble = 7,
  kString = 8,
  kBinary = 9,
  kUnixtimeMicros = 10,  // int64 microseconds since the Unix epoch, UTC.
  kDate = 11,            // int32 days since 1970-01-01.
  kDecimal32 = 12,       // DECIMAL(p, s) with 1 <= p <= 9, unscaled value as int32.
  kDecimal64 = 13,       // DECIMAL(p, s) with 10 <= p <= 18, unscaled value as int64.
  kDecimal128 = 14,      // DECIMAL(p, s) with 19 <= p <= 38, unscaled value as int128.
  kVarchar = 15,         // STRING of at most `length` UTF-8 characters.
};
inline constexpr int kMaxDataType = 15;

// How a type is stored: the C++ representation of its cells.
enum class PhysicalType : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kInt128,
  kFloat,
  kDouble,
  kBinary,  // Variable length; a std::string_view in row buffers.
};

// Limits of the parameterized types.
inline constexpr int kMaxDecimal32Precision = 9;
inline constexpr int kMaxDecimal64Precision = 18;
inline constexpr int kMaxDecimal128Precision = 38;
inline constexpr int kMaxVarcharLength = 65535;
// Largest STRING/BINARY cell accepted anywhere (rows, defaults, predicates), so one value can
// never exhaust memory on its own. VARCHAR is also bounded by its character length.
inline constexpr size_t kMaxCellBytes = 64 * 1024;

// Precision and scale of DECIMAL columns; the maximum character length of VARCHAR columns.
// Zero for every other type.
struct TypeAttributes {
  int precision = 0;
  int scale = 0;
  int length = 0;
  bool operator==(const TypeAttributes&) const = default;
};

// Static facts about one DataType. Instances are immutable singletons from GetTypeInfo().
// Thread-safe.
class TypeInfo {
 public:
  constexpr DataType type() const { return type_; }
  PhysicalType physical_type() const { return physical_; }
  // The SQL-ish name: "INT32", "UNIXTIME_MICROS", "DECIMAL", "VARCHAR", ...
  std::string_view name() const { return name_; }
  // Bytes a cell of this type takes in a row buffer (sizeof(std::string_view) for
  // variable-length types).
  size_t size() const { return size_; }
  bool is_variable_length() const { return physical_ == PhysicalType::kBinary; }
  bool is_decimal() const;
  bool is_integer() const;  // INT8..INT64 (not DATE, UNIXTIME_MICROS or DECIMAL).
  bool is_floating_point() const {
    return physical_ == PhysicalType::kFloat || physical_ == PhysicalType::kDouble;
  }

  // Three-way comparison of two cells in row-buffer form. Floating point values use the IEEE
  // total order (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN), which is also the order
  // of their encoded keys.
  int Compare(const void* a, const void* b) const;

  // Appends a human-readable rendering of a cell (strings quoted, binary hex-escaped, dates as
  // YYYY-MM-DD, timestamps as RFC 3339 in UTC, decimals need the scale and so use
  // FormatDecimal).
  void AppendDebugString(const void* cell, std::string* out) const;

 private:
  friend struct TypeInfoTable;
  constexpr TypeInfo(DataType type, PhysicalType physical, std::string_view name, size_t size)
      : type_(type), physical_(physical), name_(name), size_(size) {}

  DataType type_;
  PhysicalType physical_;
  std::string_view name_;
  size_t size_;
};

// The TypeInfo of every DataType, by its number (types.cc). GetTypeInfo is inline because rows
// are encoded, decoded and compared cell by cell: an out-of-line call per cell was 1-4% of a
// client's and a tablet server's CPU in bulk loads (docs/performance.md, change 30).
struct TypeInfoTable {
  static const TypeInfo kInfos[kMaxDataType + 1];
  [[noreturn]] static void BadType(int type);
};

// REQUIRES: IsValidDataType(type) or kUnknown; anything else is a crash (a CHECK).
inline const TypeInfo& GetTypeInfo(DataType type) {
  const auto idx = static_cast<unsigned>(type);
  if (idx > static_cast<unsigned>(kMaxDataType)) TypeInfoTable::BadType(static_cast<int>(type));
  return TypeInfoTable::kInfos[idx];
}
bool IsValidDataType(int type);
std::string_view DataTypeName(DataType type);
// Parses a type name as printed by DataTypeName ("INT32", case-insensitive; "DECIMAL" maps to
// kDecimal128 and must be resolved with DecimalTypeForPrecision).
absl::StatusOr<DataType> ParseDataTypeName(std::string_view name);

// The storage type a DECIMAL of `precision` uses. INVALID_ARGUMENT outside 1..38.
absl::StatusOr<DataType> DecimalTypeForPrecision(int precision);
// Checks that `attrs` fit `type`: precision/scale for decimals (1 <= p <= max of the storage
// type, 0 <= s <= p), length for VARCHAR (1..kMaxVarcharLength), all zero otherwise.
absl::Status ValidateTypeAttributes(DataType type, const TypeAttributes& attrs);

// Checks a cell value against its type's limits: a DECIMAL's unscaled value has at most
// `precision` digits; a VARCHAR has at most `length` UTF-8 characters and is valid UTF-8;
// STRING/BINARY at most kMaxCellBytes; BOOL is 0 or 1. INVALID_ARGUMENT otherwise.
absl::Status ValidateCell(DataType type, const TypeAttributes& attrs, const void* cell);

// The inclusive value range of an integer-backed type's storage (INT8..INT64, DATE,
// UNIXTIME_MICROS, DECIMAL*), widened to int128. REQUIRES: the type is integer-backed.
void IntegerStorageRange(DataType type, absl::int128* min, absl::int128* max);

// Renders an unscaled decimal with `scale` digits after the point ("-12.340").
std::string FormatDecimal(absl::int128 unscaled, int scale);
// Number of UTF-8 code points in `s`, or -1 if `s` is not valid UTF-8.
int64_t Utf8Length(std::string_view s);

}  // namespace basalt
