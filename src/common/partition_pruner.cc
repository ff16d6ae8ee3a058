#include "common/partition_pruner.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "common/key_encoder.h"
#include "common/strings.h"
#include "glog/logging.h"

namespace basalt {

namespace {

// The scan's predicates merged per column of the schema.
struct Constraints {
  std::vector<std::optional<ColumnPredicate>> by_column;
  bool matches_nothing = false;
};

Constraints CollectPredicates(const Schema& schema,
                              const std::vector<ColumnPredicate>& predicates) {
  Constraints c;
  c.by_column.resize(schema.num_columns());
  for (const ColumnPredicate& p : predicates) {
    const int idx = schema.find_column(p.column().name());
    if (idx < 0 || schema.column(idx).type() != p.column().type()) continue;
    std::optional<ColumnPredicate>& slot = c.by_column[idx];
    slot = slot.has_value() ? slot->Merge(p) : p;
    if (slot->kind() == PredicateKind::kNone ||
        (slot->kind() == PredicateKind::kIsNull && !schema.column(idx).is_nullable())) {
      c.matches_nothing = true;
    }
  }
  return c;
}

// The values a predicate allows for a column when it is a finite set (EQUALITY or IN_LIST).
const std::vector<Datum>* FiniteValues(const std::optional<ColumnPredicate>& p,
                                       std::vector<Datum>* scratch) {
  if (!p.has_value()) return nullptr;
  if (p->kind() == PredicateKind::kInList) return &p->values();
  if (p->kind() == PredicateKind::kEquality) {
    *scratch = {*p->lower()};
    return scratch;
  }
  return nullptr;
}

// The buckets of hash level `level` that rows matching `c` can hash to, or nullopt when the
// level is unconstrained (or has too many value combinations to enumerate).
std::optional<std::vector<int32_t>> ConstrainedBuckets(const PartitionSchema& ps, int level,
                                                       const Constraints& c) {
  const std::vector<int>& cols = ps.hash_levels()[level].column_indexes;
  std::vector<std::vector<Datum>> scratch(cols.size());
  std::vector<const std::vector<Datum>*> values;
  size_t combinations = 1;
  for (size_t i = 0; i < cols.size(); i++) {
    const std::vector<Datum>* v = FiniteValues(c.by_column[cols[i]], &scratch[i]);
    if (v == nullptr || v->empty()) return std::nullopt;
    combinations *= v->size();
    if (combinations > kMaxHashValueCombinations) return std::nullopt;
    values.push_back(v);
  }
  // Odometer over the value lists.
  std::set<int32_t> buckets;
  std::vector<size_t> pos(cols.size(), 0);
  std::vector<const void*> cells(cols.size());
  while (true) {
    for (size_t i = 0; i < cols.size(); i++) cells[i] = (*values[i])[pos[i]].cell();
    buckets.insert(ps.HashBucketForCells(level, cells));
    size_t i = cols.size();
    while (i > 0 && ++pos[i - 1] == values[i - 1]->size()) pos[--i] = 0;
    if (i == 0) break;
  }
  return std::vector<int32_t>(buckets.begin(), buckets.end());
}

// A range-key interval, or nullopt when it is empty.
using OptionalInterval = std::optional<RangeKeyInterval>;

// The range-key interval implied by predicates on a leading run of range columns (see the file
// comment of the header and docs/partitioning.md for why each step is sound).
OptionalInterval RangeFromPredicates(const PartitionSchema& ps, const Constraints& c) {
  const std::vector<int>& cols = ps.range_column_indexes();
  std::vector<const void*> lower_cells;
  for (int idx : cols) {
    const std::optional<ColumnPredicate>& p = c.by_column[idx];
    if (!p.has_value()) break;
    const PredicateKind kind = p->kind();
    if (kind == PredicateKind::kEquality || (kind == PredicateKind::kRange && p->lower())) {
      lower_cells.push_back(p->lower()->cell());
    } else if (kind == PredicateKind::kInList) {
      lower_cells.push_back(p->values().front().cell());
    } else {
      break;
    }
  }
  std::vector<const void*> upper_cells;
  bool upper_exclusive = false;
  for (int idx : cols) {
    const std::optional<ColumnPredicate>& p = c.by_column[idx];
    if (!p.has_value()) break;
    const PredicateKind kind = p->kind();
    if (kind == PredicateKind::kEquality) {
      upper_cells.push_back(p->lower()->cell());
    } else if (kind == PredicateKind::kInList) {
      upper_cells.push_back(p->values().back().cell());
    } else if (kind == PredicateKind::kRange && p->upper()) {
      upper_cells.push_back(p->upper()->cell());
      upper_exclusive = true;
      break;
    } else {
      break;
    }
  }
  RangeKeyInterval out;
  ps.AppendRangeKeyPrefix(lower_cells, &out.lower);
  if (upper_exclusive) {
    ps.AppendRangeKeyPrefix(upper_cells, &out.upper);
    // Nothing lies below the empty key (e.g. "s < ''" on a last STRING column).
    if (out.upper.empty()) return std::nullopt;
  } else if (!upper_cells.empty()) {
    std::string inclusive;
    ps.AppendRangeKeyPrefix(upper_cells, &inclusive);
    out.upper =
        upper_cells.size() == cols.size() ? KeySuccessor(inclusive) : PrefixSuccessor(inclusive);
  }
  return out;
}

// The range-key interval implied by primary-key bounds; unbounded unless the range columns are
// a leading prefix of the primary key columns, in key order.
OptionalInterval RangeFromKeyBounds(const PartitionSchema& ps, const Schema& schema,
                                    std::string_view lower_key, std::string_view upper_key) {
  const std::vector<int>& cols = ps.range_column_indexes();
  RangeKeyInterval out;
  for (size_t i = 0; i < cols.size(); i++) {
    if (cols[i] != static_cast<int>(i)) return out;
  }
  if (cols.empty()) return out;
  auto encode_prefix = [&](std::string_view key, std::string* encoded) {
    absl::StatusOr<std::vector<Datum>> values = DecodeKey(schema, key);
    if (!values.ok()) {
      LOG(WARNING) << "ignoring undecodable primary key bound: " << values.status();
      return false;
    }
    std::vector<const void*> cells;
    for (size_t i = 0; i < cols.size(); i++) cells.push_back((*values)[i].cell());
    ps.AppendRangeKeyPrefix(cells, encoded);
    return true;
  };
  if (!lower_key.empty() && !encode_prefix(lower_key, &out.lower)) out.lower.clear();
  std::string upper;
  if (!upper_key.empty() && encode_prefix(upper_key, &upper)) {
    // With every key column in the range, the range key is the primary key and the bound stays
    // exclusive; a shorter prefix of the upper bound itself may still match.
    if (cols.size() == static_cast<size_t>(schema.num_key_columns())) {
      if (upper.empty()) return std::nullopt;
      out.upper = std::move(upper);
    } else {
      out.upper = KeySuccessor(upper);
    }
  }
  return out;
}

// The intersection of two intervals (empty upper = unbounded), or nullopt when it is empty.
OptionalInterval Intersect(const OptionalInterval& a, const OptionalInterval& b) {
  if (!a || !b) return std::nullopt;
  RangeKeyInterval out;
  out.lower = std::max(a->lower, b->lower);
  if (a->upper.empty() || b->upper.empty()) {
    out.upper = a->upper.empty() ? b->upper : a->upper;
  } else {
    out.upper = std::min(a->upper, b->upper);
  }
  if (!out.upper.empty() && out.lower >= out.upper) return std::nullopt;
  return out;
}

// The bucket lists of the leading hash levels to expand into separate partition-key prefixes.
// Levels are expanded only as far as needed: through the last constrained level, or through all
// levels when the range key is bounded (it follows the whole hash prefix). Expansion stops before
// the number of prefixes exceeds kMaxPrunerRanges; a shorter prefix only widens the ranges.
std::vector<std::vector<int32_t>> BucketsToExpand(const PartitionSchema& ps, const Constraints& c,
                                                  bool range_bounded) {
  const auto& levels = ps.hash_levels();
  std::vector<std::optional<std::vector<int32_t>>> constrained(levels.size());
  size_t constrained_end = 0;
  for (size_t l = 0; l < levels.size(); l++) {
    constrained[l] = ConstrainedBuckets(ps, static_cast<int>(l), c);
    if (constrained[l]) constrained_end = l + 1;
  }
  const size_t wanted = range_bounded ? levels.size() : constrained_end;
  std::vector<std::vector<int32_t>> out;
  size_t count = 1;
  for (size_t l = 0; l < wanted; l++) {
    const size_t n = constrained[l] ? constrained[l]->size() : levels[l].num_buckets;
    if (count * n > kMaxPrunerRanges) break;  // No overflow: count, n < 2^32.
    count *= n;
    if (constrained[l]) {
      out.push_back(std::move(*constrained[l]));
    } else {
      out.emplace_back(n);
      for (size_t b = 0; b < n; b++) out.back()[b] = static_cast<int32_t>(b);
    }
  }
  return out;
}

// Appends `r`, merging it into the previous range when they touch. REQUIRES: ranges arrive
// sorted by start.
void AppendMerged(PartitionKeyRange r, std::vector<PartitionKeyRange>* out) {
  if (!out->empty()) {
    PartitionKeyRange& last = out->back();
    if (last.end.empty()) return;  // Already unbounded.
    if (last.end >= r.start) {
      if (r.end.empty() || r.end > last.end) last.end = std::move(r.end);
      return;
    }
  }
  out->push_back(std::move(r));
}

}  // namespace

PartitionPruner::PartitionPruner(const PartitionSchema& partition_schema, const Schema& schema,
                                 const std::vector<ColumnPredicate>& predicates,
                                 std::string_view lower_bound_key,
                                 std::string_view exclusive_upper_bound_key) {
  const Constraints c = CollectPredicates(schema, predicates);
  if (c.matches_nothing) return;
  const OptionalInterval range = Intersect(
      RangeFromPredicates(partition_schema, c),
      RangeFromKeyBounds(partition_schema, schema, lower_bound_key, exclusive_upper_bound_key));
  if (!range) return;

  const bool range_bounded = !range->lower.empty() || !range->upper.empty();
  const std::vector<std::vector<int32_t>> buckets =
      BucketsToExpand(partition_schema, c, range_bounded);
  const size_t expanded = buckets.size();
  const size_t num_levels = partition_schema.hash_levels().size();
  for (HashPrefix& p : HashPrefixes(buckets)) {
    PartitionKeyRange r;
    if (expanded == num_levels) {
      r.start = StrCat(p.key, range->lower);
      r.end = PartitionKeyEnd(p.key, range->upper);
    } else {
      r.end = PrefixSuccessor(p.key);
      r.start = std::move(p.key);
    }
    AppendMerged(std::move(r), &ranges_);
  }
}

void PartitionPruner::RemovePartitionKeyRange(std::string_view upper_bound) {
  if (upper_bound.empty()) {
    ranges_.clear();
    return;
  }
  auto first_kept = std::find_if(ranges_.begin(), ranges_.end(), [&](const PartitionKeyRange& r) {
    return r.end.empty() || r.end > upper_bound;
  });
  ranges_.erase(ranges_.begin(), first_kept);
  if (!ranges_.empty() && ranges_.front().start < upper_bound) {
    ranges_.front().start = std::string(upper_bound);
  }
}

bool PartitionPruner::ShouldPrune(const Partition& partition) const {
  const std::string& start = partition.partition_key_start();
  const std::string& end = partition.partition_key_end();
  // Ranges are sorted and disjoint, so their ends are sorted too (an empty end last).
  auto it = std::partition_point(ranges_.begin(), ranges_.end(), [&](const PartitionKeyRange& r) {
    return !r.end.empty() && r.end <= start;
  });
  if (it == ranges_.end()) return true;
  return !end.empty() && it->start >= end;
}

std::string PartitionPruner::ToString() const {
  if (ranges_.empty()) return "<none>";
  auto hex = [](const std::string& k, const char* empty) {
    return k.empty() ? std::string(empty) : "0x" + absl::BytesToHexString(k);
  };
  std::vector<std::string> parts;
  for (const PartitionKeyRange& r : ranges_) {
    parts.push_back(StrCat("[", hex(r.start, "<start>"), ", ", hex(r.end, "<end>"), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace basalt
