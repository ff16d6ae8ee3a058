#pragma once

// Budgeted rowset compaction policy (DESIGN.md section 4, "Compactions"): which DiskRowSets to
// merge next.
//
// The cost of a key lookup is the number of rowsets whose key range contains the key, the
// tablet's "height" at that key. A merge compaction rewrites a set of rowsets into non-overlapping
// rowsets spanning their union, so it lowers the average height by
//     quality = sum(width of each input) - width(union of the inputs),
// where a rowset's width is its share of the tablet's key space (0..1), measured by data size
// (a cumulative-size CDF over the sorted rowset boundaries; docs/tablet.md). The policy picks the
// set with the greatest quality whose total size fits an IO budget, and nothing if the best
// improves the average height by less than a threshold. The idea follows Kudu's budgeted
// compaction policy.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gflags/gflags_declare.h>

DECLARE_int32(tablet_compaction_budget_mb);
DECLARE_double(tablet_compaction_minimum_improvement);

namespace basalt {

// What the policy knows of one rowset. The tablet passes only rowsets not already being compacted.
struct CompactionCandidate {
  int64_t id = 0;
  std::string min_key;  // Encoded keys; REQUIRES min_key <= max_key.
  std::string max_key;
  uint64_t size_bytes = 0;  // On-disk size (base data, key index, bloom filter, deltas).
};

// A rowset's position in the key-space CDF: [cdf_min, cdf_max] within [0, 1]; its width is
// cdf_max - cdf_min.
struct RowSetKeySpan {
  double cdf_min = 0;
  double cdf_max = 0;
  double width() const { return cdf_max - cdf_min; }
};

// The spans of `rowsets`, in the same order. The key space is the union of all the rowsets'
// ranges, and the CDF at a key is the fraction of all bytes at or before it, estimating the bytes
// of a rowset below a key by interpolating the key within the rowset's range (the first 8 bytes
// after the common prefix of its min and max key, as a big-endian integer). The widths of
// non-overlapping rowsets sum to 1; each rowset of k fully stacked ones has width 1.
std::vector<RowSetKeySpan> ComputeRowSetKeySpans(std::span<const CompactionCandidate> rowsets);

// The average number of rowsets a lookup of an existing key consults: the sum of all widths
// (0 without rowsets).
double AverageRowSetHeight(std::span<const CompactionCandidate> rowsets);

// The policy's choice. Empty when nothing is worth doing.
struct CompactionSelection {
  std::vector<int64_t> rowset_ids;  // Ascending.
  // The reduction of AverageRowSetHeight the merge achieves; 0 when empty. A maintenance manager
  // compares it with the scores of other operations.
  double quality = 0;
  uint64_t total_bytes = 0;  // Sum of the chosen rowsets' sizes; <= the budget.
  bool empty() const { return rowset_ids.empty(); }
};

struct CompactionPolicyOptions {
  // At most this many bytes of input per compaction.
  uint64_t budget_bytes = uint64_t{128} << 20;
  // A choice must lower the average height by at least this much.
  double minimum_improvement = 0.01;

  // From --tablet_compaction_budget_mb and --tablet_compaction_minimum_improvement.
  static CompactionPolicyOptions FromFlags();
};

// Chooses the rowsets of one merge compaction.
//
// Algorithm: for each rowset A (the left edge of the union) and, in increasing max key order,
// each rowset B with min key >= A's, the rowsets inside [A.min, max(A.max, B.max)] are the items of
// a 0/1 knapsack (weight: size in units of budget/1024 but at least 1 MiB, rounded up; value:
// width) solved incrementally as B advances; quality = best value - union width. Upper bounds
// (the fractional knapsack over all rowsets right of A) prune most pairs. O(n^2 * 1024) worst case.
// Deterministic: the result depends only on the set of candidates, not their order.
//
// Immutable after construction; const methods are thread-safe.
class BudgetedCompactionPolicy {
 public:
  explicit BudgetedCompactionPolicy(CompactionPolicyOptions options = CompactionPolicyOptions());

  // REQUIRES: distinct ids; min_key <= max_key for each candidate.
  CompactionSelection PickRowSets(std::span<const CompactionCandidate> candidates) const;

  const CompactionPolicyOptions& options() const { return options_; }

 private:
  const CompactionPolicyOptions options_;
};

}  // namespace basalt
