#include "tablet/union_iterator.h"

#include <utility>

#include "common/status_macros.h"

namespace basalt {

UnionIterator::UnionIterator(std::vector<std::unique_ptr<RowBlockIterator>> children)
    : children_(std::move(children)) {}

absl::Status UnionIterator::Init() {
  if (initialized_) return absl::FailedPreconditionError("UnionIterator initialized twice");
  for (auto& child : children_) BASALT_RETURN_IF_ERROR(child->Init());
  initialized_ = true;
  SkipExhausted();
  return absl::OkStatus();
}

void UnionIterator::SkipExhausted() {
  while (current_ < children_.size() && !children_[current_]->HasNext()) ++current_;
}

absl::StatusOr<size_t> UnionIterator::NextBlock(absl::Span<ColumnBlock* const> blocks,
                                                size_t max_rows) {
  if (!initialized_) return absl::FailedPreconditionError("UnionIterator not initialized");
  // The previous batch is no longer referenced: exhausted children can go.
  for (size_t i = 0; i < current_; ++i) children_[i].reset();
  while (current_ < children_.size()) {
    BASALT_ASSIGN_OR_RETURN(size_t n, children_[current_]->NextBlock(blocks, max_rows));
    SkipExhausted();
    if (n > 0) return n;
  }
  return 0;
}

}  // namespace basalt
