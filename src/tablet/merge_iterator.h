#pragma once

// MergeIterator: the key-ordered union of several key-ordered iterators, for ordered scans and
// rowset compaction.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/column_block.h"
#include "common/schema.h"
#include "tablet/row_block_util.h"
#include "tablet/row_iterator.h"

namespace basalt {

// Merges children that each yield rows of `projection` in primary-key order into one stream in
// primary-key order.
//
// REQUIREMENT on the projection: its first num_key_columns() columns are the primary key
// columns of the rowsets, in key order (Schema::Project keeps them so exactly when the
// projection starts with all key columns in order). Init() checks that the projection has key
// columns; the caller vouches that they are the rowsets' key. Keys are unique across children
// (the tablet guarantees that a key lives in one rowset); a duplicate is a broken invariant
// (DCHECK), and the order of duplicates is unspecified in release builds.
//
// How: each child fills its own RowBlockBuffers with up to `child_batch_rows` rows. The children
// with buffered rows form a min-heap on their current row's key (RowKeyComparator). The smallest
// child's rows are emitted in runs: every row below the next smallest child's current key is
// copied at once (CopyRows), found by probing the next row, then the batch's last row, then
// galloping. Children whose ranges do not overlap (the common case after compaction) are thus
// copied a whole batch per run; interleaved children cost about one key comparison per row plus
// a heap sift.
//
// Validity of variable-length cells: output cells are copies of the children's views, so their
// bytes live in a child's memory or its batch buffers, which stay valid until the next
// NextBlock call (or destruction). To keep that promise a child is refilled only at the start
// of a call: when the projection has variable-length columns, a batch ends as soon as a child
// that has more rows runs out of buffered ones, so NextBlock may return fewer than max_rows rows.
// Without variable-length columns children are refilled mid-batch and batches are full. Either
// way NextBlock returns n > 0 unless the merge is exhausted (children's empty batches are
// skipped).
//
// Lifecycle: Init() once, then NextBlock() while HasNext(). Not thread-safe (one per thread).
class MergeIterator : public RowBlockIterator {
 public:
  static constexpr size_t kDefaultChildBatchRows = 1024;

  // `projection` is borrowed and must outlive the iterator. REQUIRES: child_batch_rows > 0.
  MergeIterator(std::vector<std::unique_ptr<RowBlockIterator>> children, const Schema* projection,
                size_t child_batch_rows = kDefaultChildBatchRows);
  ~MergeIterator() override;

  // INVALID_ARGUMENT if the projection has no key columns; the first child Init error as it is.
  absl::Status Init() override;
  bool HasNext() const override { return !heap_.empty(); }
  // INVALID_ARGUMENT when `blocks` does not fit the projection and max_rows (see
  // CheckBlocksFitProjection); children's errors as they are.
  absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks, size_t max_rows) override;

  // Number of runs copied so far (each one CopyRows call), for tests and metrics.
  int64_t num_runs() const { return num_runs_; }

 private:
  struct Child;

  // Refills children without buffered rows, drops exhausted ones and rebuilds the heap.
  absl::Status PrepareHeap();
  // Pulls the child's next non-empty batch, or leaves it empty when it is exhausted.
  absl::Status Refill(Child* c);
  // Three-way comparison of the keys of row `ra` of a's batch and row `rb` of b's batch.
  int CompareRows(const Child& a, size_t ra, const Child& b, size_t rb) const;
  bool HeadLess(const Child* a, const Child* b) const;
  // The heap index (1 or 2) of the child whose head is the second smallest, or 0 if none.
  size_t RunBound() const;
  // How many rows of `m`, from its head and at most `avail` (<= its buffered rows), are below
  // `bound`'s head (all `avail` if bound is nullptr).
  size_t RunLength(const Child& m, const Child* bound, size_t avail) const;
  void SiftDown(size_t i);
  void PopTop();

  const Schema* const projection_;
  const size_t child_batch_rows_;
  std::vector<std::unique_ptr<Child>> children_;
  // Filled by Init().
  std::unique_ptr<RowKeyComparator> comparator_;
  // Keys of one INT32-backed or INT64-backed column are compared inline; others by comparator_.
  enum class KeyFastPath : uint8_t { kNone, kInt32, kInt64 };
  KeyFastPath key_fast_path_ = KeyFastPath::kNone;
  bool refill_mid_batch_ = false;
  bool initialized_ = false;
  // Children that may still yield rows; a min-heap on head keys within NextBlock. Between calls
  // the root may have no buffered rows (it ran out and awaits a refill).
  std::vector<Child*> heap_;
  int64_t num_runs_ = 0;
};

}  // namespace basalt
