#include "tablet/merge_iterator.h"

#include <algorithm>
#include <utility>

#include "common/status_macros.h"
#include "glog/logging.h"

namespace basalt {

struct MergeIterator::Child {
  std::unique_ptr<RowBlockIterator> iter;
  std::unique_ptr<RowBlockBuffers> buffers;
  size_t num_rows = 0;  // Rows in the current batch.
  size_t pos = 0;       // The head: the next row to emit.
  bool done = false;    // Exhausted and out of the heap; released at the next call.
  // Cells of the first key column (stable: the buffers never move), for the single-key fast path.
  const uint8_t* key_cells = nullptr;

  bool has_rows() const { return pos < num_rows; }
  absl::Span<ColumnBlock* const> blocks() const { return buffers->blocks(); }
};

MergeIterator::MergeIterator(std::vector<std::unique_ptr<RowBlockIterator>> children,
                             const Schema* projection, size_t child_batch_rows)
    : projection_(projection), child_batch_rows_(child_batch_rows) {
  CHECK_GT(child_batch_rows, 0u);
  for (auto& it : children) {
    children_.push_back(std::make_unique<Child>());
    children_.back()->iter = std::move(it);
  }
}

MergeIterator::~MergeIterator() = default;

absl::Status MergeIterator::Init() {
  if (initialized_) return absl::FailedPreconditionError("MergeIterator initialized twice");
  if (projection_->num_key_columns() == 0) {
    return absl::InvalidArgumentError(
        "a merge needs a projection that starts with the primary key columns in key order");
  }
  comparator_ = std::make_unique<RowKeyComparator>(*projection_);
  if (projection_->num_key_columns() == 1) {
    const PhysicalType p = projection_->column(0).type_info().physical_type();
    if (p == PhysicalType::kInt32) key_fast_path_ = KeyFastPath::kInt32;
    if (p == PhysicalType::kInt64) key_fast_path_ = KeyFastPath::kInt64;
  }
  refill_mid_batch_ = true;
  for (const ColumnSchema& col : projection_->columns()) {
    if (col.type_info().is_variable_length()) refill_mid_batch_ = false;
  }
  for (auto& c : children_) {
    BASALT_RETURN_IF_ERROR(c->iter->Init());
    if (!c->iter->HasNext()) {
      c->done = true;
      continue;
    }
    c->buffers = std::make_unique<RowBlockBuffers>(*projection_, child_batch_rows_);
    c->key_cells = c->blocks()[0]->cells;
    heap_.push_back(c.get());
  }
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status MergeIterator::Refill(Child* c) {
  c->pos = c->num_rows = 0;
  // The rows of the previous batch are no longer referenced.
  c->buffers->ResetArenas();
  while (c->num_rows == 0 && c->iter->HasNext()) {
    BASALT_ASSIGN_OR_RETURN(c->num_rows, c->iter->NextBlock(c->blocks(), child_batch_rows_));
  }
  return absl::OkStatus();
}

absl::Status MergeIterator::PrepareHeap() {
  // Children dropped during the previous call are no longer referenced by its output.
  for (auto& c : children_) {
    if (c->done && c->iter != nullptr) {
      c->iter.reset();
      c->buffers.reset();
    }
  }
  size_t kept = 0;
  for (Child* c : heap_) {
    if (!c->has_rows()) BASALT_RETURN_IF_ERROR(Refill(c));
    if (c->has_rows()) {
      heap_[kept++] = c;
    } else {
      c->done = true;
    }
  }
  heap_.resize(kept);
  for (size_t i = heap_.size() / 2; i-- > 0;) SiftDown(i);
  return absl::OkStatus();
}

namespace {

template <typename T>
inline int CompareAt(const uint8_t* a, size_t ra, const uint8_t* b, size_t rb) {
  const T x = reinterpret_cast<const T*>(a)[ra];
  const T y = reinterpret_cast<const T*>(b)[rb];
  return (x > y) - (x < y);
}

}  // namespace

inline int MergeIterator::CompareRows(const Child& a, size_t ra, const Child& b, size_t rb) const {
  int c;
  switch (key_fast_path_) {
    case KeyFastPath::kInt32:
      c = CompareAt<int32_t>(a.key_cells, ra, b.key_cells, rb);
      break;
    case KeyFastPath::kInt64:
      c = CompareAt<int64_t>(a.key_cells, ra, b.key_cells, rb);
      break;
    default:
      c = comparator_->Compare(a.blocks(), ra, b.blocks(), rb);
  }
  DCHECK_NE(c, 0) << "duplicate key across merged rowsets";
  return c;
}

inline bool MergeIterator::HeadLess(const Child* a, const Child* b) const {
  return CompareRows(*a, a->pos, *b, b->pos) < 0;
}

void MergeIterator::SiftDown(size_t i) {
  const size_t n = heap_.size();
  Child* const moving = heap_[i];
  while (true) {
    size_t smallest = 2 * i + 1;
    if (smallest >= n) break;
    if (smallest + 1 < n && HeadLess(heap_[smallest + 1], heap_[smallest])) ++smallest;
    if (!HeadLess(heap_[smallest], moving)) break;
    heap_[i] = heap_[smallest];
    i = smallest;
  }
  heap_[i] = moving;
}

void MergeIterator::PopTop() {
  heap_[0] = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) SiftDown(0);
}

size_t MergeIterator::RunBound() const {
  if (heap_.size() < 2) return 0;
  if (heap_.size() == 2) return 1;
  return HeadLess(heap_[2], heap_[1]) ? 2 : 1;
}

size_t MergeIterator::RunLength(const Child& m, const Child* bound, size_t avail) const {
  if (bound == nullptr || avail == 1) return avail;
  // below(i): row m.pos + i sorts before bound's head. below(0) holds (m is the heap's root).
  auto below = [&](size_t i) { return CompareRows(m, m.pos + i, *bound, bound->pos) < 0; };
  // Interleaved children: runs of one row. Disjoint children: the whole batch.
  if (!below(1)) return 1;
  if (below(avail - 1)) return avail;
  // Gallop, then binary search, keeping below(lo) && !below(hi).
  size_t lo = 1;
  size_t hi = avail - 1;
  for (size_t step = 2; lo + step < hi; step *= 2) {
    if (!below(lo + step)) {
      hi = lo + step;
      break;
    }
    lo += step;
  }
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    (below(mid) ? lo : hi) = mid;
  }
  return hi;
}

absl::StatusOr<size_t> MergeIterator::NextBlock(absl::Span<ColumnBlock* const> blocks,
                                                size_t max_rows) {
  if (!initialized_) return absl::FailedPreconditionError("MergeIterator not initialized");
  BASALT_RETURN_IF_ERROR(CheckBlocksFitProjection(*projection_, blocks, max_rows));
  BASALT_RETURN_IF_ERROR(PrepareHeap());
  size_t out = 0;
  while (out < max_rows && !heap_.empty()) {
    Child* m = heap_[0];
    const size_t b = RunBound();
    const size_t limit = std::min(m->num_rows - m->pos, max_rows - out);
    const size_t run = RunLength(*m, b == 0 ? nullptr : heap_[b], limit);
    if (run == 1) {
      CopyRow(m->blocks(), m->pos, blocks, out);
    } else {
      CopyRows(m->blocks(), m->pos, blocks, out, run);
    }
    ++num_runs_;
    m->pos += run;
    out += run;
    if (!m->has_rows()) {
      if (m->iter->HasNext()) {
        // Refilling would invalidate the variable-length cells just copied: end the batch.
        if (!refill_mid_batch_) break;
        BASALT_RETURN_IF_ERROR(Refill(m));
      }
      if (!m->has_rows()) {
        m->done = true;
        PopTop();
        continue;
      }
      SiftDown(0);
    } else if (run < limit) {
      // The run stopped at a row above the bound's head: the bound becomes the root without
      // comparing, and m sinks from the bound's place.
      heap_[0] = heap_[b];
      heap_[b] = m;
      SiftDown(b);
    } else {
      SiftDown(0);
    }
  }
  return out;
}

}  // namespace basalt
