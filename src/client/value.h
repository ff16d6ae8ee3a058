#pragma once

// Value: a typed constant for predicates and column defaults (Kudu's KuduValue).
//
// A Value carries one of five kinds (integer, bool, float, double, string) and is converted to a
// column's type when it is bound to that column: an integer Value fits every integer-backed column
// (INT8..INT64, DATE, UNIXTIME_MICROS, the unscaled value of a DECIMAL) when it is in range; a
// float or double fits FLOAT and DOUBLE columns; a string fits STRING, BINARY and VARCHAR
// columns. A mismatch or an out-of-range value is INVALID_ARGUMENT when the Value is used.
//
// Copyable value type; a const Value may be shared between threads.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "client/export.h"

namespace basalt::client {

namespace internal {
struct Access;
}  // namespace internal

class BASALT_EXPORT Value {
 public:
  static Value FromInt(int64_t v);
  static Value FromBool(bool v);
  static Value FromFloat(float v);
  static Value FromDouble(double v);
  // Copies the bytes.
  static Value FromString(std::string_view v);

  Value(const Value& other);
  Value& operator=(const Value& other);
  Value(Value&& other) noexcept;
  Value& operator=(Value&& other) noexcept;
  ~Value();

  // "5", "true", "'abc'".
  std::string ToString() const;

 private:
  friend struct internal::Access;
  enum class Kind : uint8_t { kInt, kBool, kFloat, kDouble, kString };
  Value(Kind kind, int64_t i, double d, std::string_view s);

  Kind kind_;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
};

}  // namespace basalt::client
