#pragma once

// Test-only helpers for the scan iterator tests (iterators_test.cc): a columnar table of rows
// and a fake RowBlockIterator over it that stresses the RowBlockIterator contract (random batch
// sizes, empty batches while HasNext(), variable-length bytes that die at the next call).
// Header-only: every src/tablet/*.cc goes into basalt_tablet.

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/column_block.h"
#include "common/datum.h"
#include "common/random.h"
#include "common/schema.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "tablet/row_block_util.h"
#include "tablet/row_iterator.h"

namespace basalt::iterators_test {

// One row as Datums, in projection order.
using TestRow = std::vector<Datum>;

// Reads row `i` of `blocks` (a row block of `projection`) as Datums.
inline TestRow ReadRow(const Schema& projection, absl::Span<ColumnBlock* const> blocks, size_t i) {
  TestRow row;
  for (int c = 0; c < projection.num_columns(); ++c) {
    const DataType type = projection.column(c).type();
    row.push_back(blocks[c]->is_null(i) ? Datum::Null(type)
                                        : Datum::FromCell(type, blocks[c]->cell(i)));
  }
  return row;
}

inline std::string RowToString(const TestRow& row) {
  std::string out = "(";
  for (size_t i = 0; i < row.size(); ++i) StrAppend(&out, i ? ", " : "", row[i].ToString());
  return out + ")";
}

// Rows of a projection held column-wise in RowBlockBuffers; string bytes live in the buffers'
// arenas. Not thread-safe.
class ColumnarRows {
 public:
  ColumnarRows(const Schema& projection, size_t capacity)
      : projection_(projection), buffers_(projection, capacity) {}

  void Append(const TestRow& row) {
    CHECK_LT(num_rows_, buffers_.capacity());
    CHECK_EQ(row.size(), static_cast<size_t>(projection_.num_columns()));
    for (size_t c = 0; c < row.size(); ++c) {
      ColumnBlock* b = buffers_.blocks()[c];
      if (b->null_bitmap != nullptr) b->SetNull(num_rows_, row[c].is_null());
      if (row[c].is_null()) {
        CHECK(projection_.column(static_cast<int>(c)).is_nullable());
        continue;
      }
      if (GetTypeInfo(b->type).is_variable_length()) {
        std::string_view v = b->arena->AddString(row[c].string_value());
        std::memcpy(b->cell(num_rows_), &v, sizeof(v));
      } else {
        std::memcpy(b->cell(num_rows_), row[c].cell(), b->cell_size);
      }
    }
    ++num_rows_;
  }
  size_t num_rows() const { return num_rows_; }
  absl::Span<ColumnBlock* const> blocks() const { return buffers_.blocks(); }
  TestRow Row(size_t i) const { return ReadRow(projection_, blocks(), i); }
  const Schema& projection() const { return projection_; }
  // For benchmarks that fill cells directly: declares rows [0, n) written.
  void SetNumRows(size_t n) {
    CHECK_LE(n, buffers_.capacity());
    num_rows_ = n;
  }

 private:
  const Schema projection_;
  RowBlockBuffers buffers_;
  size_t num_rows_ = 0;
};

// Knobs of FakeRowIterator.
struct FakeIteratorOptions {
  // Largest batch returned (also bounded by NextBlock's max_rows); batches are uniform in
  // [1, max_batch] unless `full_batches`.
  size_t max_batch = 64;
  bool full_batches = false;
  // Probability 1/empty_batch_one_in of an empty batch while rows remain; 0 disables.
  int empty_batch_one_in = 0;
  // After the last row, report HasNext() once more and return an empty batch.
  bool trailing_empty_batch = false;
  // Copy string bytes into per-batch storage that is overwritten with garbage at the next call,
  // and scribble over the cells of NULL rows, so callers relying on stale data fail.
  bool poison = true;
  // Fail Init() / the n-th NextBlock call (1-based) with INTERNAL; 0 disables.
  bool fail_init = false;
  int fail_at_call = 0;
};

// Serves rows [begin, end) of a ColumnarRows (borrowed, outlives the iterator) in order.
// Not thread-safe.
class FakeRowIterator : public RowBlockIterator {
 public:
  FakeRowIterator(const ColumnarRows* rows, std::vector<size_t> row_indexes,
                  FakeIteratorOptions options, uint64_t seed)
      : rows_(rows),
        indexes_(std::move(row_indexes)),
        options_(options),
        rng_(seed),
        trailing_empty_pending_(options.trailing_empty_batch) {}

  absl::Status Init() override {
    if (options_.fail_init) return absl::InternalError("injected Init failure");
    initialized_ = true;
    return absl::OkStatus();
  }
  bool HasNext() const override { return pos_ < indexes_.size() || trailing_empty_pending_; }

  absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks,
                                   size_t max_rows) override {
    CHECK(initialized_) << "NextBlock before Init";
    CHECK(HasNext()) << "NextBlock after the end";
    ++calls_;
    if (options_.fail_at_call == calls_) return absl::InternalError("injected NextBlock failure");
    absl::Status s = CheckBlocksFitProjection(rows_->projection(), blocks, max_rows);
    if (!s.ok()) return s;
    PoisonPreviousBatch();
    const size_t remaining = indexes_.size() - pos_;
    if (remaining == 0) {
      trailing_empty_pending_ = false;
      return 0;
    }
    if (options_.empty_batch_one_in > 0 && rng_.OneIn(options_.empty_batch_one_in)) return 0;
    size_t n = std::min({remaining, max_rows, options_.max_batch});
    if (!options_.full_batches && n > 1) n = 1 + rng_.Uniform(n);
    CopyBatch(blocks, n);
    pos_ += n;
    return n;
  }

  int calls() const { return calls_; }

 private:
  void CopyBatch(absl::Span<ColumnBlock* const> blocks, size_t n) {
    // Runs of consecutive source rows are copied at once.
    size_t i = 0;
    while (i < n) {
      size_t j = i + 1;
      while (j < n && indexes_[pos_ + j] == indexes_[pos_ + i] + (j - i)) ++j;
      CopyRows(rows_->blocks(), indexes_[pos_ + i], blocks, i, j - i);
      i = j;
    }
    if (!options_.poison) return;
    for (size_t c = 0; c < blocks.size(); ++c) {
      ColumnBlock* b = blocks[c];
      const bool varlen = GetTypeInfo(b->type).is_variable_length();
      for (size_t r = 0; r < n; ++r) {
        if (b->is_null(r)) {
          std::memset(b->cell(r), 0xAB, b->cell_size);
        } else if (varlen) {
          std::string_view v;
          std::memcpy(&v, b->cell(r), sizeof(v));
          storage_.push_back(std::make_unique<std::string>(v));
          v = *storage_.back();
          std::memcpy(b->cell(r), &v, sizeof(v));
        }
      }
    }
  }
  // Bytes handed out by the previous call are overwritten (kept allocated, so a stale read sees
  // garbage rather than freed memory), and freed one call later.
  void PoisonPreviousBatch() {
    poisoned_.clear();
    for (auto& s : storage_) {
      std::fill(s->begin(), s->end(), '\x7f');
      poisoned_.push_back(std::move(s));
    }
    storage_.clear();
  }

  const ColumnarRows* const rows_;
  const std::vector<size_t> indexes_;
  const FakeIteratorOptions options_;
  Random rng_;
  size_t pos_ = 0;
  bool trailing_empty_pending_;
  bool initialized_ = false;
  int calls_ = 0;
  std::vector<std::unique_ptr<std::string>> storage_;
  std::vector<std::unique_ptr<std::string>> poisoned_;
};

// Drains `it` (after Init) in batches of at most `max_rows` into `out`, reading each batch
// before the next call (the variable-length validity contract). Checks that no batch exceeds
// max_rows. `batch_sizes`, if given, receives each batch's size.
inline absl::Status Drain(RowBlockIterator* it, const Schema& projection, size_t max_rows,
                          std::vector<TestRow>* out, std::vector<size_t>* batch_sizes = nullptr) {
  RowBlockBuffers buffers(projection, max_rows);
  while (it->HasNext()) {
    absl::StatusOr<size_t> n = it->NextBlock(buffers.blocks(), max_rows);
    if (!n.ok()) return n.status();
    CHECK_LE(*n, max_rows);
    for (size_t i = 0; i < *n; ++i) out->push_back(ReadRow(projection, buffers.blocks(), i));
    if (batch_sizes != nullptr) batch_sizes->push_back(*n);
  }
  return absl::OkStatus();
}

}  // namespace basalt::iterators_test
