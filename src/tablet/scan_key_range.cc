#include "tablet/scan_key_range.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/key_encoder.h"

namespace basalt {
namespace {

// Narrows `range` to its intersection with [lower, upper) (an empty upper means unbounded).
void Intersect(const std::string& lower, const std::string& upper, EncodedKeyRange* range) {
  range->lower = std::max(range->lower, lower);
  if (!upper.empty() && (range->upper.empty() || upper < range->upper)) range->upper = upper;
}

std::string WithColumn(const Schema& schema, std::vector<Datum> prefix, const Datum& value) {
  prefix.push_back(value);
  return EncodeKeyPrefix(schema, prefix);
}

}  // namespace

void NarrowKeyRange(const Schema& schema, ScanSpec* spec) {
  // The predicates on key column k (a spec may hold several on one column).
  auto on_column = [&](int k) {
    std::vector<const ColumnPredicate*> out;
    for (const ColumnPredicate& p : spec->predicates) {
      if (p.column().name() == schema.column(k).name()) out.push_back(&p);
    }
    return out;
  };
  // The longest prefix of key columns fixed by equalities.
  std::vector<Datum> prefix;
  int k = 0;
  for (; k < schema.num_key_columns(); ++k) {
    const ColumnPredicate* eq = nullptr;
    for (const ColumnPredicate* p : on_column(k)) {
      if (p->kind() == PredicateKind::kEquality) eq = p;
    }
    if (eq == nullptr) break;
    prefix.push_back(*eq->lower());
  }
  if (k == schema.num_key_columns()) {
    const std::string key = EncodeKeyPrefix(schema, prefix);
    Intersect(key, KeySuccessor(key), &spec->range);
    // The range now holds at most the one key whose columns equal `prefix`, and every store
    // reads exactly its range: an equality on a key column with that same value holds for every
    // row the scan can see, so evaluating it again per row is wasted (for a point lookup it was
    // most of the predicate work, and it made the stores read the key columns). What must stay
    // true: equal cells encode alike and only they do. Floats included: predicates compare them
    // in IEEE total order (-0.0 < 0.0, each NaN its own value), the order the key encoding keeps.
    std::erase_if(spec->predicates, [&](const ColumnPredicate& p) {
      if (p.kind() != PredicateKind::kEquality) return false;
      const int c = schema.find_column(p.column().name());
      return c >= 0 && c < schema.num_key_columns() && *p.lower() == prefix[c];
    });
    return;
  }
  // Every key that starts with the prefix: [prefix, PrefixSuccessor(prefix)).
  if (!prefix.empty()) {
    const std::string base = EncodeKeyPrefix(schema, prefix);
    Intersect(base, PrefixSuccessor(base), &spec->range);
  }
  // Column k's own bounds after the prefix. An encoded prefix ending in column k's value v is
  // <= every key whose column k is >= v, and > every key whose column k is < v, whatever the
  // columns after it hold; PrefixSuccessor of it is > every key whose column k is v.
  for (const ColumnPredicate* p : on_column(k)) {
    if (p->kind() == PredicateKind::kRange) {
      Intersect(p->lower().has_value() ? WithColumn(schema, prefix, *p->lower()) : std::string(),
                p->upper().has_value() ? WithColumn(schema, prefix, *p->upper()) : std::string(),
                &spec->range);
    } else if (p->kind() == PredicateKind::kInList && !p->values().empty()) {
      Intersect(WithColumn(schema, prefix, p->values().front()),
                PrefixSuccessor(WithColumn(schema, prefix, p->values().back())), &spec->range);
    }
  }
}

bool IsSingleKeyRange(const EncodedKeyRange& range) {
  return !range.upper.empty() && range.upper == KeySuccessor(range.lower);
}

}  // namespace basalt
