#pragma once

// Helpers shared by the scan iterators (filter_iterator.h, union_iterator.h, merge_iterator.h):
// a set of owned ColumnBlocks for a projection, copying and gathering rows between sets of
// ColumnBlocks, checking a caller's blocks against a projection, and comparing or encoding the
// primary key of a row held in ColumnBlocks.
//
// A "row block" here is a span of ColumnBlock*, one per projected column in projection order,
// as RowBlockIterator::NextBlock takes it (row_iterator.h). Row i is cell i of every block plus
// bit i of each null bitmap. Cells of NULL rows are unspecified and never read for comparison;
// they are copied like any other cell.
//
// All functions are stateless and thread-safe on distinct data; RowBlockBuffers is not
// thread-safe.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/column_block.h"
#include "common/schema.h"
#include "common/types.h"

namespace basalt {

// Owns one ColumnBlockBuffer per column of a projection, each of `capacity` rows, with a null
// bitmap for nullable columns only. blocks() is the span iterators write into. The projection
// is only read in the constructor. Not thread-safe.
class RowBlockBuffers {
 public:
  RowBlockBuffers(const Schema& projection, size_t capacity);
  RowBlockBuffers(const RowBlockBuffers&) = delete;
  RowBlockBuffers& operator=(const RowBlockBuffers&) = delete;

  absl::Span<ColumnBlock* const> blocks() const { return blocks_; }
  size_t capacity() const { return capacity_; }
  // Frees the variable-length bytes decoders placed in the blocks' arenas. Invalidates every
  // variable-length cell that points there.
  void ResetArenas();

 private:
  size_t capacity_;
  std::vector<std::unique_ptr<ColumnBlockBuffer>> buffers_;
  std::vector<ColumnBlock*> blocks_;
};

// Checks that `blocks` can receive `max_rows` rows of `projection`: one block per column, of the
// column's type, with capacity >= max_rows, and a null bitmap if the column is nullable.
// INVALID_ARGUMENT naming the first misfit otherwise.
absl::Status CheckBlocksFitProjection(const Schema& projection,
                                      absl::Span<ColumnBlock* const> blocks, size_t max_rows);

// Copies bits [src_offset, src_offset + n) of `src` to bits [dst_offset, dst_offset + n) of
// `dst`, leaving the other bits of `dst` unchanged. The ranges may overlap only if
// dst_offset <= src_offset within the same bitmap. Works a byte of output at a time.
void CopyBits(const uint8_t* src, size_t src_offset, uint8_t* dst, size_t dst_offset, size_t n);

// Copies rows [src_row, src_row + n) of `src` to rows [dst_row, dst_row + n) of `dst`: cells
// (variable-length cells as views, not their bytes) and NULL bits. A dst block without a null
// bitmap receives no NULL bits; a src block without one counts as all non-NULL. REQUIRES:
// src.size() == dst.size(), matching cell sizes, both ranges within capacity, and the two
// ranges distinct or dst_row <= src_row when src and dst are the same blocks.
void CopyRows(absl::Span<ColumnBlock* const> src, size_t src_row,
              absl::Span<ColumnBlock* const> dst, size_t dst_row, size_t n);
// CopyRows of one row, inline, with constant-size copies for the usual cell sizes (the merge of
// interleaved rowsets copies one row at a time).
inline void CopyRow(absl::Span<ColumnBlock* const> src, size_t src_row,
                    absl::Span<ColumnBlock* const> dst, size_t dst_row) {
  for (size_t j = 0; j < src.size(); ++j) {
    const ColumnBlock& s = *src[j];
    ColumnBlock* d = dst[j];
    const uint8_t* from = s.cell(src_row);
    uint8_t* to = d->cell(dst_row);
    switch (s.cell_size) {
      case 4:
        std::memcpy(to, from, 4);
        break;
      case 8:
        std::memcpy(to, from, 8);
        break;
      case 16:
        std::memcpy(to, from, 16);
        break;
      default:
        std::memmove(to, from, s.cell_size);
    }
    if (d->null_bitmap != nullptr) d->SetNull(dst_row, s.is_null(src_row));
  }
}

// Appends to `rows` the index of every set bit among the first `n` bits of `selection`, in
// increasing order. Returns the number appended.
size_t SelectedRows(const uint8_t* selection, size_t n, std::vector<uint32_t>* rows);

// Copies rows rows[0], rows[1], ... of `src` densely to rows dst_row, dst_row + 1, ... of `dst`.
// `src` and `dst` may be the same blocks if rows[i] >= dst_row + i for every i (true for
// increasing `rows` with dst_row <= rows[0]), which compacts in place. REQUIRES: as CopyRows.
void GatherRows(absl::Span<ColumnBlock* const> src, absl::Span<const uint32_t> rows,
                absl::Span<ColumnBlock* const> dst, size_t dst_row);

// Compacts the rows among [0, n) of `blocks` whose bit is set in `selection` to rows [0, k), in
// order, and returns k. `scratch` is reused working memory. Rows up to the first unselected row
// are not touched.
size_t GatherSelectedInPlace(absl::Span<ColumnBlock* const> blocks, const uint8_t* selection,
                             size_t n, std::vector<uint32_t>* scratch);
// Copies the rows among [0, n) of `src` whose bit is set in `selection` densely, in order, to
// rows [dst_row, dst_row + k) of `dst` (other blocks), and returns k. REQUIRES: dst has room.
size_t GatherSelected(absl::Span<ColumnBlock* const> src, const uint8_t* selection, size_t n,
                      absl::Span<ColumnBlock* const> dst, size_t dst_row,
                      std::vector<uint32_t>* scratch);

// Three-way comparison of the primary keys of two rows held in row blocks of one projection
// whose first num_key_columns() columns are the key columns, in key order. Compares column by
// column as TypeInfo::Compare does (strings as std::string_view, floats in IEEE total order).
// Key cells are never NULL. Immutable after construction; thread-safe.
class RowKeyComparator {
 public:
  // REQUIRES: projection.num_key_columns() > 0.
  explicit RowKeyComparator(const Schema& projection);

  int Compare(absl::Span<ColumnBlock* const> a, size_t row_a, absl::Span<ColumnBlock* const> b,
              size_t row_b) const {
    for (const KeyColumn& c : cols_) {
      const int r = CompareCells(c, a[c.idx]->cell(row_a), b[c.idx]->cell(row_b));
      if (r != 0) return r;
    }
    return 0;
  }

 private:
  struct KeyColumn {
    int idx;
    PhysicalType physical;
    const TypeInfo* type_info;
  };
  template <typename T>
  static int Cmp(const void* a, const void* b) {
    const T x = *static_cast<const T*>(a);
    const T y = *static_cast<const T*>(b);
    return (x > y) - (x < y);
  }
  // Inline fast paths for the common key types; TypeInfo::Compare for the rest.
  static int CompareCells(const KeyColumn& c, const void* a, const void* b) {
    switch (c.physical) {
      case PhysicalType::kInt32:
        return Cmp<int32_t>(a, b);
      case PhysicalType::kInt64:
        return Cmp<int64_t>(a, b);
      case PhysicalType::kBinary: {
        const int r = static_cast<const std::string_view*>(a)->compare(
            *static_cast<const std::string_view*>(b));
        return (r > 0) - (r < 0);
      }
      default:
        return c.type_info->Compare(a, b);
    }
  }

  std::vector<KeyColumn> cols_;
};

// The encoded primary key (common/key_encoder.h) of row `row` of `blocks`, a row block of
// `projection` whose first num_key_columns() columns are the key columns in key order; equal to
// EncodeKey() of the same row. REQUIRES: projection.num_key_columns() > 0.
std::string EncodeKeyOfRow(const Schema& projection, absl::Span<ColumnBlock* const> blocks,
                           size_t row);

}  // namespace basalt
