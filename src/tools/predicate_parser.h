#pragma once

// The predicate expressions of `basalt table scan --predicates` (syntax: docs/cli.md), e.g.
//   key >= 5 AND key <= 600 AND host IN ('a', 'b') AND v IS NULL
// A conjunction of column predicates. Pure: values are bound to column types by the caller with
// LiteralToValue (table_spec.h).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/predicate.h"
#include "tools/table_spec.h"

namespace basalt::tools {

struct PredicateDef {
  enum Kind { kComparison, kInList, kIsNull, kIsNotNull };
  std::string column;
  Kind kind = kComparison;
  client::Predicate::ComparisonOp op = client::Predicate::EQUAL;  // kComparison only.
  std::vector<Literal> values;  // One for kComparison; the list for kInList.
  size_t pos = 0;
};

class TokenStream;

// Parses `term (AND term)*` from `ts`, stopping before the first token that does not continue
// it (the SQL parser's WHERE clause).
absl::Status ParsePredicateConjunction(TokenStream* ts, std::vector<PredicateDef>* out);

// Parses `expr` (empty or blank: no predicates). Errors are INVALID_ARGUMENT with a caret line.
// "a BETWEEN x AND y" is read as a >= x AND a <= y.
absl::StatusOr<std::vector<PredicateDef>> ParsePredicates(std::string_view expr);

}  // namespace basalt::tools
