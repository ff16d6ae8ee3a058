#pragma once

// GroupAggregator: hash aggregation over columnar blocks (docs/aggregates.md). A tablet server
// feeds it the rows of a scan (AddRows) and ships its groups as partial rows (EmitPartials); the
// client feeds it the partial rows of every tablet (AddPartials) and reads the final rows
// (EmitResults). Both run the same code, so a partial means the same on both sides.
//
// Work is per block, not per cell: group ids are assigned once per row (none without GROUP BY),
// then each aggregate runs one typed loop over its input column.
//
// What must stay true:
// - Groups are keyed by the order-preserving key encoding of their values (key_encoder.h), a
//   nullable column's value preceded by 0 (NULL) or 1, so sorting the keys sorts the groups by
//   value with NULL first, floating point in IEEE total order.
// - Aggregates skip NULL cells; a group whose cells were all NULL has a NULL SUM, MIN, MAX, AVG,
//   FIRST and LAST and a COUNT of 0.
// - SUM of integers and decimals is exact: partial sums are int128 whatever the order they merge
//   in, and only a result outside INT64 (integers) or 38 digits (DECIMAL) fails, with
//   OUT_OF_RANGE naming the aggregate, when it is emitted.
//
// Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/aggregate_plan.h"
#include "common/column_block.h"

namespace basalt {

namespace pb {
class ColumnarRowBlockPB;
}  // namespace pb

namespace aggregate_internal {
class Accumulator;
}  // namespace aggregate_internal

class GroupAggregator {
 public:
  // `plan` must outlive the aggregator.
  explicit GroupAggregator(const AggregatePlan* plan);
  ~GroupAggregator();
  GroupAggregator(const GroupAggregator&) = delete;
  GroupAggregator& operator=(const GroupAggregator&) = delete;

  // Rows [0, n) of a table scan: inputs[i] holds plan->input_columns()[i]; when
  // plan->needs_key(), keys[r] is row r's encoded primary key (otherwise keys may be null).
  // OUT_OF_RANGE when a sum leaves int128 (the aggregator is then unusable).
  absl::Status AddRows(absl::Span<const ColumnBlock* const> inputs, const std::string_view* keys,
                       size_t n);
  // Partial rows [0, n) in plan->partial_schema()'s columns, as EmitPartials wrote them.
  absl::Status AddPartials(absl::Span<const ColumnBlock* const> partials, size_t n);

  size_t num_groups() const { return keys_.size(); }
  // Approximate bytes the groups take (their keys and fixed-size state).
  size_t memory_bytes() const;

  // Every group as a partial row (plan->partial_schema()) into `out`, then forgets them all.
  absl::Status EmitPartials(pb::ColumnarRowBlockPB* out);
  // The number of result rows: the groups, or one row without GROUP BY even if no row came.
  // Fixes the result order (group values ascending, NULL first); call once after the last Add.
  size_t FinishResults();
  // Result rows [begin, end) of that order (plan->result_schema()) into `out`. OUT_OF_RANGE
  // naming the aggregate for a SUM outside its result type.
  absl::Status EmitResults(size_t begin, size_t end, pb::ColumnarRowBlockPB* out);

 private:
  // Sets group_ids_ for rows [0, n) from the group columns `cols` (bucketing row values when
  // `bucket`); returns null when there is no GROUP BY (every row is group 0).
  const uint32_t* AssignGroups(absl::Span<const ColumnBlock* const> cols, bool bucket, size_t n);
  uint32_t GroupOf(std::string_view key);
  absl::Status Emit(const std::vector<uint32_t>& order, bool partial, pb::ColumnarRowBlockPB* out);

  const AggregatePlan* const plan_;
  std::vector<bool> group_nullable_;
  std::vector<std::unique_ptr<aggregate_internal::Accumulator>> accumulators_;
  // Group keys by id; a deque so that the map's views stay valid as it grows.
  std::deque<std::string> keys_;
  absl::flat_hash_map<std::string_view, uint32_t> ids_;
  size_t key_bytes_ = 0;
  std::vector<uint32_t> group_ids_;
  std::vector<const ColumnBlock*> group_cols_;
  // AssignGroups: the bucket (start) of the last row whose group key was encoded, per column.
  std::vector<int64_t> bucket_starts_;
  std::vector<int64_t> bucket_widths_;  // AssignGroups' per-column facts (see there).
  std::vector<bool> variable_length_;
  std::string scratch_;
  std::vector<uint32_t> result_order_;
};

}  // namespace basalt
