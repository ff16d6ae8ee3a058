#pragma once

// UnionIterator: the rows of several iterators one after another, for unordered scans.

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/column_block.h"
#include "tablet/row_iterator.h"

namespace basalt {

// Yields every row of children[0], then of children[1], and so on: key order within each child,
// none across them. All children produce the same projection, and each NextBlock call is served
// by one child, so the batch's variable-length cells follow that child's validity rule (until
// the next NextBlock call). A child is destroyed at the first NextBlock call after it is
// exhausted, so rowsets are released as the scan passes them.
//
// NextBlock returns n > 0 unless every remaining child is exhausted (it skips children's empty
// batches).
//
// Lifecycle: Init() once (initializes every child), then NextBlock() while HasNext(). Not
// thread-safe (one per thread).
class UnionIterator : public RowBlockIterator {
 public:
  explicit UnionIterator(std::vector<std::unique_ptr<RowBlockIterator>> children);

  // The first child error, as it is.
  absl::Status Init() override;
  bool HasNext() const override { return current_ < children_.size(); }
  // Blocks are passed to the children as they are, so their checks apply. The child's errors as
  // they are.
  absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks, size_t max_rows) override;

 private:
  // Advances current_ past exhausted children.
  void SkipExhausted();

  std::vector<std::unique_ptr<RowBlockIterator>> children_;
  // Children before current_ are exhausted (and destroyed once their rows are no longer
  // referenced); current_ == children_.size() when all are.
  size_t current_ = 0;
  bool initialized_ = false;
};

}  // namespace basalt
