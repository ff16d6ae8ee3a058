#pragma once

// KuduPredicate: a condition on one column for KuduScanner::AddConjunctPredicate. Made by
// KuduTable::NewComparisonPredicate, NewInListPredicate, NewIsNullPredicate and
// NewIsNotNullPredicate. A predicate that could not be built (unknown column, a value of the
// wrong type) carries its error, which AddConjunctPredicate returns.
//
// Bloom filter predicates (KuduBloomFilter, KuduBloomFilterBuilder) are not available in Basalt.
// Immutable; thread-safe.

#include "kudu/client/hash.h"
#include "kudu/client/stubs.h"
#include "kudu/util/kudu_export.h"
#include "kudu/util/status.h"

namespace kudu {
namespace client {

namespace internal {
struct Access;
}  // namespace internal

class KUDU_EXPORT KuduPredicate {
 public:
  // Numbering as in Kudu.
  enum ComparisonOp {
    LESS_EQUAL,
    GREATER_EQUAL,
    EQUAL,
    LESS,
    GREATER,
  };
  ~KuduPredicate();
  // A new copy, owned by the caller.
  KuduPredicate* Clone() const;

  class KUDU_NO_EXPORT Data;

 private:
  friend struct internal::Access;
  explicit KuduPredicate(Data* d);
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduPredicate);
};

}  // namespace client
}  // namespace kudu
