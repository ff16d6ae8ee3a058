#pragma once

// KuduValue: a constant for predicates and column defaults. The factories return a new value the
// caller owns until it hands it to a method that takes it (KuduColumnSpec::Default,
// KuduTable::NewComparisonPredicate, NewInListPredicate). The value is converted to the column's
// type when it is used; a mismatch (a string for an INT32 column, an integer out of the column's
// range) is reported then. Immutable; thread-safe.

#include <cstdint>

#include "kudu/client/stubs.h"
#include "kudu/util/int128.h"
#include "kudu/util/kudu_export.h"
#include "kudu/util/slice.h"

namespace kudu {
namespace client {

namespace internal {
struct Access;
}  // namespace internal

class KUDU_EXPORT KuduValue {
 public:
  // A new copy, owned by the caller.
  KuduValue* Clone() const;
  static KuduValue* FromInt(int64_t val);
  static KuduValue* FromFloat(float val);
  static KuduValue* FromDouble(double val);
  static KuduValue* FromBool(bool val);
  // The decimal dv * 10^-scale; rescaled to the column's scale when used (InvalidArgument if it
  // does not fit the column exactly). Values beyond 64 bits are not supported by Basalt.
  static KuduValue* FromDecimal(int128_t dv, int8_t scale);
  // Copies the bytes.
  static KuduValue* CopyString(Slice s);
  ~KuduValue();

 private:
  friend struct internal::Access;
  class KUDU_NO_EXPORT Data;
  explicit KuduValue(Data* d);
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduValue);
};

}  // namespace client
}  // namespace kudu
