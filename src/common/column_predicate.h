#pragma once

// ColumnPredicate: a condition on one column, pushed down to storage and used for partition
// pruning (DESIGN.md sections 4 and 7).
//
// Kinds: RANGE [lower, upper) with either bound optional; EQUALITY; IN_LIST (sorted, unique);
// IS_NULL; IS_NOT_NULL; NONE (matches nothing, the result of contradictory merges). Every
// constructor normalizes, so equal conditions have equal representations: a range whose bounds
// admit exactly one value becomes EQUALITY, an empty range or empty IN list becomes NONE, an IN
// list of one value becomes EQUALITY. Inclusive upper bounds are stored as exclusive with the
// type's successor (integers and integer-backed types +1, floating point the next value in the
// total order of types.h, strings with '\0' appended); the successor of the type's maximum is "no
// upper bound". Range and equality predicates never
// match NULL.
//
// Immutable value type; const methods are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/datum.h"
#include "common/schema.h"

namespace basalt {

namespace pb {
class ColumnPredicatePB;
}  // namespace pb

enum class PredicateKind : uint8_t { kRange, kEquality, kInList, kIsNull, kIsNotNull, kNone };

class ColumnPredicate {
 public:
  // Factories. `column` names the column and its type; values must be of that type (integer
  // Datums are converted with Datum::CastTo). INVALID_ARGUMENT for NULL values or a type mismatch.
  static absl::StatusOr<ColumnPredicate> Range(const ColumnSchema& column,
                                               std::optional<Datum> lower_inclusive,
                                               std::optional<Datum> upper_exclusive);
  static absl::StatusOr<ColumnPredicate> Equality(const ColumnSchema& column, const Datum& value);
  static absl::StatusOr<ColumnPredicate> InList(const ColumnSchema& column,
                                                std::vector<Datum> values);
  static ColumnPredicate IsNull(const ColumnSchema& column);
  static ColumnPredicate IsNotNull(const ColumnSchema& column);
  static ColumnPredicate None(const ColumnSchema& column);
  // Comparison operators as users write them: <, <=, =, >=, >.
  enum class Op : uint8_t { kLess, kLessEqual, kEqual, kGreaterEqual, kGreater };
  static absl::StatusOr<ColumnPredicate> Comparison(const ColumnSchema& column, Op op,
                                                    const Datum& value);

  PredicateKind kind() const { return kind_; }
  const ColumnSchema& column() const { return column_; }
  // RANGE: the bounds; EQUALITY: lower() is the value.
  const std::optional<Datum>& lower() const { return lower_; }
  const std::optional<Datum>& upper() const { return upper_; }
  const std::vector<Datum>& values() const { return values_; }  // IN_LIST, sorted, unique.

  // The conjunction of two predicates on the same column (e.g. >5 AND <3 is NONE; x IN (1,2,3)
  // AND x >= 2 is x IN (2,3)). REQUIRES: same column name and type.
  ColumnPredicate Merge(const ColumnPredicate& other) const;

  // Whether one cell matches. `cell` is in row-buffer form, or nullptr for NULL.
  bool Evaluate(const void* cell) const;
  // Evaluates over a column vector of `n` cells laid out contiguously (type_info().size() bytes
  // each; std::string_view for variable-length types) with an optional null bitmap (bit set =
  // NULL). Clears the bit in `selection` of every row that does not match; rows already clear
  // stay clear. `selection` has BitmapSize(n) bytes. REQUIRES: `cells` is aligned for the
  // type (a column buffer or a row buffer aligned to kRowAlignment; checked in debug builds).
  void EvaluateVector(const void* cells, const uint8_t* null_bitmap, size_t n,
                      uint8_t* selection) const;

  // Whether a range of values [min, max] (e.g. a page's zone map) can contain a match. Either
  // bound may be nullptr for unknown. Used to skip pages and rowsets.
  bool MayMatchRange(const void* min_cell, const void* max_cell, bool may_have_nulls,
                     bool may_have_values) const;

  void ToPB(pb::ColumnPredicatePB* pb) const;
  // Resolves the column by name in `schema`. NOT_FOUND for an unknown column, INVALID_ARGUMENT
  // for malformed values.
  static absl::StatusOr<ColumnPredicate> FromPB(const Schema& schema,
                                                const pb::ColumnPredicatePB& pb);

  bool operator==(const ColumnPredicate& other) const;
  // "key >= 5 AND key < 10", "name IN ('a', 'b')", "v IS NULL", "k NONE".
  std::string ToString() const;

 private:
  ColumnPredicate(const ColumnSchema& column, PredicateKind kind);

  ColumnSchema column_;
  PredicateKind kind_;
  std::optional<Datum> lower_;
  std::optional<Datum> upper_;
  std::vector<Datum> values_;
};

}  // namespace basalt
