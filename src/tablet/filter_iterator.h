#pragma once

// FilterIterator: applies column predicates to the batches of a child iterator, for rowsets
// that do not evaluate predicates themselves (the MemRowSet).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/column_block.h"
#include "common/column_predicate.h"
#include "common/schema.h"
#include "tablet/row_iterator.h"

namespace basalt {

// Returns the rows of `child` for which every predicate holds, densely and in the child's
// order. Each predicate is resolved to the projected column of the same name (its type must
// match) and evaluated with ColumnPredicate::EvaluateVector over the whole batch into a
// selection bitmap; the selected rows are then compacted in place in the caller's blocks, into
// which the child wrote. Without predicates the child's batches pass through unchanged.
//
// NextBlock returns n > 0 unless the child is exhausted: it pulls child batches until one has a
// matching row. Variable-length cells are the child's and keep the child's validity (until the
// next NextBlock call).
//
// Lifecycle: Init() once, then NextBlock() while HasNext(). Not thread-safe (one per thread).
class FilterIterator : public RowBlockIterator {
 public:
  // `projection` is borrowed and must outlive the iterator; it is the child's projection.
  FilterIterator(std::unique_ptr<RowBlockIterator> child, const Schema* projection,
                 std::vector<ColumnPredicate> predicates);

  // Initializes the child and resolves the predicates. NOT_FOUND if a predicate names a column
  // the projection lacks, INVALID_ARGUMENT if its type differs from the projected column's;
  // the child's Init errors as they are.
  absl::Status Init() override;
  bool HasNext() const override { return child_->HasNext(); }
  // INVALID_ARGUMENT when `blocks` does not fit the projection and max_rows (see
  // CheckBlocksFitProjection); the child's errors as they are.
  absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks, size_t max_rows) override;

  // Rows the child returned and rows that passed, for scan metrics.
  int64_t rows_examined() const { return rows_examined_; }
  int64_t rows_returned() const { return rows_returned_; }

 private:
  // Evaluates the predicates over rows [0, n) and compacts the matching ones; returns how many.
  size_t Filter(absl::Span<ColumnBlock* const> blocks, size_t n);

  const std::unique_ptr<RowBlockIterator> child_;
  const Schema* const projection_;
  const std::vector<ColumnPredicate> predicates_;
  // Projection index of each predicate's column; filled by Init().
  std::vector<int> predicate_columns_;
  bool initialized_ = false;
  std::vector<uint8_t> selection_;
  std::vector<uint32_t> scratch_;
  int64_t rows_examined_ = 0;
  int64_t rows_returned_ = 0;
};

}  // namespace basalt
