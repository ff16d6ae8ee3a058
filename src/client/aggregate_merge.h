#pragma once

// AggregateMerge: the client's half of an aggregate scan (docs/aggregates.md). It merges the
// partial aggregates every tablet answer carries and hands out the final rows, in group order, in
// blocks the Scanner wraps into ScanBatches. Private to src/client.
//
// Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/schema.h"
#include "common/aggregate_plan.h"
#include "common/group_aggregator.h"

namespace basalt::pb {
class ColumnarRowBlockPB;
}  // namespace basalt::pb

namespace basalt::client::internal {

class ScanBlockPool;

class AggregateMerge {
 public:
  // `plan` must outlive this object; emptied answer blocks go back to `pool` (may be null).
  AggregateMerge(const AggregatePlan* plan, ScanBlockPool* pool);
  ~AggregateMerge();

  // Merges one answer's partial rows. DATA_LOSS naming the column for a block that does not
  // match the plan's partial layout; OUT_OF_RANGE when a SUM overflows.
  absl::Status Add(std::unique_ptr<pb::ColumnarRowBlockPB> block);
  // Ends the merge; the number of result rows.
  int64_t Finish();
  bool finished() const { return finished_; }
  // Result rows [begin, end) (after Finish). OUT_OF_RANGE naming the aggregate for a SUM outside
  // its result type.
  absl::StatusOr<std::unique_ptr<pb::ColumnarRowBlockPB>> Results(int64_t begin, int64_t end);

 private:
  const AggregatePlan* const plan_;
  ScanBlockPool* const pool_;
  const Schema partial_schema_;  // The plan's partial schema, for validating answers.
  GroupAggregator aggregator_;
  bool finished_ = false;
};

}  // namespace basalt::client::internal
