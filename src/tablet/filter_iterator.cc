#include "tablet/filter_iterator.h"

#include <cstring>
#include <utility>

#include "common/bitmap.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/row_block_util.h"

namespace basalt {

FilterIterator::FilterIterator(std::unique_ptr<RowBlockIterator> child, const Schema* projection,
                               std::vector<ColumnPredicate> predicates)
    : child_(std::move(child)), projection_(projection), predicates_(std::move(predicates)) {}

absl::Status FilterIterator::Init() {
  if (initialized_) return absl::FailedPreconditionError("FilterIterator initialized twice");
  predicate_columns_.clear();
  for (const ColumnPredicate& pred : predicates_) {
    const int idx = projection_->find_column(pred.column().name());
    if (idx < 0) {
      return absl::NotFoundError(
          StrCat("predicate ", pred.ToString(), " names a column not in the projection"));
    }
    if (projection_->column(idx).type() != pred.column().type()) {
      return absl::InvalidArgumentError(StrCat("predicate ", pred.ToString(), " has type ",
                                               pred.column().TypeToString(), " but column ",
                                               projection_->column(idx).ToString()));
    }
    predicate_columns_.push_back(idx);
  }
  BASALT_RETURN_IF_ERROR(child_->Init());
  initialized_ = true;
  return absl::OkStatus();
}

absl::StatusOr<size_t> FilterIterator::NextBlock(absl::Span<ColumnBlock* const> blocks,
                                                 size_t max_rows) {
  if (!initialized_) return absl::FailedPreconditionError("FilterIterator not initialized");
  BASALT_RETURN_IF_ERROR(CheckBlocksFitProjection(*projection_, blocks, max_rows));
  while (child_->HasNext()) {
    BASALT_ASSIGN_OR_RETURN(size_t n, child_->NextBlock(blocks, max_rows));
    rows_examined_ += n;
    n = Filter(blocks, n);
    rows_returned_ += n;
    if (n > 0) return n;
  }
  return 0;
}

size_t FilterIterator::Filter(absl::Span<ColumnBlock* const> blocks, size_t n) {
  if (n == 0 || predicates_.empty()) return n;
  // Padded to whole words: SelectedRows reads 64 bits at a time.
  selection_.assign((BitmapSize(n) + 7) / 8 * 8, 0xff);
  for (size_t i = 0; i < predicates_.size(); ++i) {
    const int col = predicate_columns_[i];
    const ColumnBlock& b = *blocks[col];
    const uint8_t* nulls = projection_->column(col).is_nullable() ? b.null_bitmap : nullptr;
    predicates_[i].EvaluateVector(b.cells, nulls, n, selection_.data());
  }
  return GatherSelectedInPlace(blocks, selection_.data(), n, &scratch_);
}

}  // namespace basalt
