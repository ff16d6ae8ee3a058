#pragma once

// Predicate: a condition on one column for Scanner::AddConjunctPredicate (Kudu's KuduPredicate).
// Made by Table::NewComparisonPredicate, NewInListPredicate, NewIsNullPredicate and
// NewIsNotNullPredicate. A predicate that could not be built (unknown column, a value of the wrong
// type) carries its error, which AddConjunctPredicate returns.
//
// Immutable after construction; const methods are thread-safe.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "client/export.h"

namespace basalt::client {

namespace internal {
struct Access;
}  // namespace internal

class BASALT_EXPORT Predicate {
 public:
  enum ComparisonOp { LESS, LESS_EQUAL, EQUAL, GREATER_EQUAL, GREATER };

  ~Predicate();
  Predicate(const Predicate&) = delete;
  Predicate& operator=(const Predicate&) = delete;

  std::unique_ptr<Predicate> Clone() const;
  // OK, or why the predicate could not be built.
  const absl::Status& status() const;
  // "key >= 5", "name IN ('a', 'b')", "v IS NULL".
  std::string ToString() const;

 private:
  friend struct internal::Access;
  struct Data;
  explicit Predicate(std::unique_ptr<Data> data);
  std::unique_ptr<Data> data_;
};

}  // namespace basalt::client
