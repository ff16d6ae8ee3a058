#pragma once

// PartitionPruner: which partitions a scan must visit (DESIGN.md sections 2 and 7; the rules are
// in docs/partitioning.md).
//
// From a scan's column predicates and optional primary-key bounds, the pruner computes a sorted
// list of disjoint partition-key ranges [start, end) that together contain the partition key of
// every row the scan can return. A tablet whose partition overlaps none of them is skipped.
//
//   - Hash levels: a level whose columns all have EQUALITY or IN_LIST predicates (at most
//     kMaxHashValueCombinations value combinations) is restricted to the buckets of those
//     combinations; other levels keep all buckets.
//   - Range columns: a lower and an upper range key are built from the predicates on a leading
//     run of range columns (equality values and IN-list extremes extend the run; a range bound
//     ends it), and intersected with the primary-key bounds when the range columns are a leading
//     prefix of the primary key.
//   - A NONE predicate on any column, IS_NULL on a key column, or an empty key range leaves no
//     range at all.
//
// The pruner is conservative: it may keep a partition that holds no matching row, never the
// reverse. Predicates on columns the schema does not have, or whose type differs from the
// column's, are ignored.
//
// Lifecycle: build with the scan's inputs, then consult ShouldPrune per tablet, or walk the
// ranges with NextPartitionKey / RemovePartitionKeyRange as tablets are scanned.
// Not thread-safe; const methods may be called concurrently.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/column_predicate.h"
#include "common/partition.h"
#include "common/schema.h"

namespace basalt {

// Above this many value combinations, a hash level's IN lists are not expanded (all buckets).
inline constexpr size_t kMaxHashValueCombinations = 1024;
// Above this many bucket combinations times one range, the pruner stops expanding hash levels
// and keeps whole hash prefixes instead.
inline constexpr size_t kMaxPrunerRanges = 4096;

// A half-open interval of partition keys; an empty end is unbounded.
struct PartitionKeyRange {
  std::string start;
  std::string end;
  bool operator==(const PartitionKeyRange& other) const = default;
};

class PartitionPruner {
 public:
  // `schema` is the table schema `partition_schema` was built for (any version); predicates are
  // matched to its columns by name, and several on one column are merged. The primary-key
  // bounds are encoded primary keys (common/key_encoder.h EncodeKey): `lower_bound_key`
  // inclusive, `exclusive_upper_bound_key` exclusive, "" for unbounded; a bound that does not
  // decode as a full primary key of `schema` is ignored. The pruner keeps no reference to its
  // arguments.
  PartitionPruner(const PartitionSchema& partition_schema, const Schema& schema,
                  const std::vector<ColumnPredicate>& predicates,
                  std::string_view lower_bound_key = {},
                  std::string_view exclusive_upper_bound_key = {});

  // The remaining ranges, sorted and disjoint (adjacent ranges are merged). Empty when the scan
  // can match nothing, or when every range has been removed.
  const std::vector<PartitionKeyRange>& ranges() const { return ranges_; }
  bool HasMorePartitionKeyRanges() const { return !ranges_.empty(); }
  // The smallest partition key still to be scanned. REQUIRES: HasMorePartitionKeyRanges().
  const std::string& NextPartitionKey() const { return ranges_.front().start; }
  // Drops every key below `upper_bound` (typically the end key of a tablet just scanned); an
  // empty `upper_bound` drops everything.
  void RemovePartitionKeyRange(std::string_view upper_bound);

  // Whether `partition` overlaps none of the remaining ranges, so no matching row lives there.
  bool ShouldPrune(const Partition& partition) const;

  // "[0x0001, 0x0002), [0x0003, <end>)" or "<none>".
  std::string ToString() const;

 private:
  std::vector<PartitionKeyRange> ranges_;
};

}  // namespace basalt
