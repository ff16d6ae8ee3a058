#include "client/aggregate_merge.h"

#include <string_view>
#include <utility>
#include <vector>

#include "client/client_internal.h"
#include "client/scan_batch_internal.h"
#include "client/scan_rpc.h"
#include "common/column_block.h"
#include "proto/common.pb.h"

namespace basalt::client::internal {

AggregateMerge::AggregateMerge(const AggregatePlan* plan, ScanBlockPool* pool)
    : plan_(plan),
      pool_(pool),
      partial_schema_(Access::MakeSchema(plan->partial_schema())),
      aggregator_(plan) {}

AggregateMerge::~AggregateMerge() = default;

absl::Status AggregateMerge::Add(std::unique_ptr<pb::ColumnarRowBlockPB> block) {
  // The scan batch's checks (sizes, offsets, NULLs where none may be) guard the merge.
  ScanBatchData batch;
  absl::Status s = batch.Reset(partial_schema_, std::move(block), INT64_MAX);
  if (!s.ok()) return s;
  const basalt::Schema& schema = plan_->partial_schema();
  const size_t rows = static_cast<size_t>(batch.num_rows);
  // ColumnBlock views of the answer: fixed-width cells in place, strings as views.
  std::vector<ColumnBlock> cols(schema.num_columns());
  std::vector<std::vector<std::string_view>> strings(schema.num_columns());
  std::vector<const ColumnBlock*> ptrs;
  for (int j = 0; j < schema.num_columns(); j++) {
    const ScanBatch::ColumnView& v = batch.columns[j];
    ColumnBlock& b = cols[j];
    b.type = schema.column(j).type();
    b.cell_size = schema.column(j).type_info().size();
    b.capacity = rows;
    // The aggregator only reads these.
    b.null_bitmap = const_cast<uint8_t*>(v.null_bitmap);
    if (v.offsets != nullptr) {
      strings[j].resize(rows);
      for (size_t r = 0; r < rows; r++) strings[j][r] = v.GetString(static_cast<int64_t>(r));
      b.cells = reinterpret_cast<uint8_t*>(strings[j].data());
    } else {
      b.cells = static_cast<uint8_t*>(const_cast<void*>(v.data));
    }
    ptrs.push_back(&b);
  }
  s = aggregator_.AddPartials(ptrs, rows);
  if (pool_ != nullptr) pool_->Put(std::move(batch.block));
  return s;
}

int64_t AggregateMerge::Finish() {
  finished_ = true;
  return static_cast<int64_t>(aggregator_.FinishResults());
}

absl::StatusOr<std::unique_ptr<pb::ColumnarRowBlockPB>> AggregateMerge::Results(int64_t begin,
                                                                                int64_t end) {
  auto out = std::make_unique<pb::ColumnarRowBlockPB>();
  absl::Status s =
      aggregator_.EmitResults(static_cast<size_t>(begin), static_cast<size_t>(end), out.get());
  if (!s.ok()) return s;
  return out;
}

}  // namespace basalt::client::internal
