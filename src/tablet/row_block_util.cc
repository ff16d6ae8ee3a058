#include "tablet/row_block_util.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/bitmap.h"
#include "common/key_encoder.h"
#include "common/strings.h"
#include "glog/logging.h"

namespace basalt {

RowBlockBuffers::RowBlockBuffers(const Schema& projection, size_t capacity) : capacity_(capacity) {
  buffers_.reserve(projection.num_columns());
  blocks_.reserve(projection.num_columns());
  for (const ColumnSchema& col : projection.columns()) {
    buffers_.push_back(
        std::make_unique<ColumnBlockBuffer>(col.type(), capacity, col.is_nullable()));
    blocks_.push_back(buffers_.back()->block());
  }
}

void RowBlockBuffers::ResetArenas() {
  for (auto& b : buffers_) b->arena()->Reset();
}

absl::Status CheckBlocksFitProjection(const Schema& projection,
                                      absl::Span<ColumnBlock* const> blocks, size_t max_rows) {
  if (blocks.size() != static_cast<size_t>(projection.num_columns())) {
    return absl::InvalidArgumentError(StrCat(blocks.size(), " column blocks for ",
                                             projection.num_columns(), " projected columns"));
  }
  for (size_t j = 0; j < blocks.size(); ++j) {
    const ColumnSchema& col = projection.column(static_cast<int>(j));
    const ColumnBlock* b = blocks[j];
    if (b == nullptr || b->type != col.type() || b->capacity < max_rows ||
        (col.is_nullable() && b->null_bitmap == nullptr)) {
      return absl::InvalidArgumentError(StrCat("column block ", j, " does not fit column ",
                                               col.ToString(), " and ", max_rows, " rows"));
    }
  }
  return absl::OkStatus();
}

namespace {

// The k <= 8 bits of `p` starting at bit `offset`, in the low bits of the result.
inline uint32_t LoadBits(const uint8_t* p, size_t offset, size_t k) {
  const size_t byte = offset >> 3;
  const size_t shift = offset & 7;
  uint32_t v = p[byte] >> shift;
  if (shift + k > 8) v |= static_cast<uint32_t>(p[byte + 1]) << (8 - shift);
  return v & ((1u << k) - 1);
}

// Sets bits [offset, offset + n) of `dst` to `value`.
void FillBits(uint8_t* dst, size_t offset, size_t n, bool value) {
  while (n > 0) {
    const size_t shift = offset & 7;
    const size_t k = std::min<size_t>(n, 8 - shift);
    const uint8_t mask = static_cast<uint8_t>(((1u << k) - 1) << shift);
    uint8_t& d = dst[offset >> 3];
    d = value ? static_cast<uint8_t>(d | mask) : static_cast<uint8_t>(d & ~mask);
    offset += k;
    n -= k;
  }
}

// A 16-byte cell (std::string_view, int128) moved as two words.
struct Cell16 {
  uint64_t lo;
  uint64_t hi;
};

template <typename T>
void GatherCellsT(const uint8_t* src, absl::Span<const uint32_t> rows, uint8_t* dst) {
  // memcpy of a constant size compiles to one move and keeps the access free of type punning.
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(dst + i * sizeof(T), src + static_cast<size_t>(rows[i]) * sizeof(T), sizeof(T));
  }
}

void GatherCells(const ColumnBlock& src, absl::Span<const uint32_t> rows, ColumnBlock* dst,
                 size_t dst_row) {
  DCHECK_EQ(src.cell_size, dst->cell_size);
  uint8_t* out = dst->cell(dst_row);
  switch (src.cell_size) {
    case 1:
      return GatherCellsT<uint8_t>(src.cells, rows, out);
    case 2:
      return GatherCellsT<uint16_t>(src.cells, rows, out);
    case 4:
      return GatherCellsT<uint32_t>(src.cells, rows, out);
    case 8:
      return GatherCellsT<uint64_t>(src.cells, rows, out);
    case 16:
      return GatherCellsT<Cell16>(src.cells, rows, out);
    default:
      for (size_t i = 0; i < rows.size(); ++i) {
        std::memmove(out + i * src.cell_size, src.cell(rows[i]), src.cell_size);
      }
  }
}

}  // namespace

void CopyBits(const uint8_t* src, size_t src_offset, uint8_t* dst, size_t dst_offset, size_t n) {
  if ((src_offset & 7) == 0 && (dst_offset & 7) == 0) {
    const size_t bytes = n / 8;
    std::memmove(dst + dst_offset / 8, src + src_offset / 8, bytes);
    src_offset += bytes * 8;
    dst_offset += bytes * 8;
    n -= bytes * 8;
  }
  while (n > 0) {
    const size_t shift = dst_offset & 7;
    const size_t k = std::min<size_t>(n, 8 - shift);
    const uint32_t bits = LoadBits(src, src_offset, k);
    const uint8_t mask = static_cast<uint8_t>(((1u << k) - 1) << shift);
    uint8_t& d = dst[dst_offset >> 3];
    d = static_cast<uint8_t>((d & ~mask) | ((bits << shift) & mask));
    src_offset += k;
    dst_offset += k;
    n -= k;
  }
}

void CopyRows(absl::Span<ColumnBlock* const> src, size_t src_row,
              absl::Span<ColumnBlock* const> dst, size_t dst_row, size_t n) {
  DCHECK_EQ(src.size(), dst.size());
  if (n == 0) return;
  for (size_t j = 0; j < src.size(); ++j) {
    const ColumnBlock& s = *src[j];
    ColumnBlock* d = dst[j];
    DCHECK_EQ(s.cell_size, d->cell_size);
    DCHECK_LE(src_row + n, s.capacity);
    DCHECK_LE(dst_row + n, d->capacity);
    std::memmove(d->cell(dst_row), s.cell(src_row), n * s.cell_size);
    if (d->null_bitmap == nullptr) continue;
    if (s.null_bitmap != nullptr) {
      CopyBits(s.null_bitmap, src_row, d->null_bitmap, dst_row, n);
    } else {
      FillBits(d->null_bitmap, dst_row, n, false);
    }
  }
}

size_t SelectedRows(const uint8_t* selection, size_t n, std::vector<uint32_t>* rows) {
  const size_t before = rows->size();
  rows->reserve(before + n);
  const size_t words = n / 64;
  for (size_t w = 0; w < words; ++w) {
    uint64_t word;
    std::memcpy(&word, selection + w * 8, 8);
    while (word != 0) {
      rows->push_back(static_cast<uint32_t>(w * 64 + std::countr_zero(word)));
      word &= word - 1;
    }
  }
  for (size_t i = words * 64; i < n; ++i) {
    if (BitmapTest(selection, i)) rows->push_back(static_cast<uint32_t>(i));
  }
  return rows->size() - before;
}

void GatherRows(absl::Span<ColumnBlock* const> src, absl::Span<const uint32_t> rows,
                absl::Span<ColumnBlock* const> dst, size_t dst_row) {
  DCHECK_EQ(src.size(), dst.size());
  for (size_t j = 0; j < src.size(); ++j) {
    const ColumnBlock& s = *src[j];
    ColumnBlock* d = dst[j];
    DCHECK_LE(dst_row + rows.size(), d->capacity);
    GatherCells(s, rows, d, dst_row);
    if (d->null_bitmap == nullptr) continue;
    if (s.null_bitmap == nullptr) {
      FillBits(d->null_bitmap, dst_row, rows.size(), false);
      continue;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      BitmapChange(d->null_bitmap, dst_row + i, BitmapTest(s.null_bitmap, rows[i]));
    }
  }
}

size_t GatherSelectedInPlace(absl::Span<ColumnBlock* const> blocks, const uint8_t* selection,
                             size_t n, std::vector<uint32_t>* scratch) {
  scratch->clear();
  const size_t k = SelectedRows(selection, n, scratch);
  if (k == n) return n;
  // Rows before the first unselected one are already in place.
  size_t first = 0;
  while (first < k && (*scratch)[first] == first) ++first;
  GatherRows(blocks, absl::MakeConstSpan(*scratch).subspan(first), blocks, first);
  return k;
}

size_t GatherSelected(absl::Span<ColumnBlock* const> src, const uint8_t* selection, size_t n,
                      absl::Span<ColumnBlock* const> dst, size_t dst_row,
                      std::vector<uint32_t>* scratch) {
  scratch->clear();
  const size_t k = SelectedRows(selection, n, scratch);
  GatherRows(src, *scratch, dst, dst_row);
  return k;
}

RowKeyComparator::RowKeyComparator(const Schema& projection) {
  CHECK_GT(projection.num_key_columns(), 0);
  for (int i = 0; i < projection.num_key_columns(); ++i) {
    const TypeInfo& ti = projection.column(i).type_info();
    cols_.push_back(KeyColumn{i, ti.physical_type(), &ti});
  }
}

std::string EncodeKeyOfRow(const Schema& projection, absl::Span<ColumnBlock* const> blocks,
                           size_t row) {
  DCHECK_GT(projection.num_key_columns(), 0);
  std::string key;
  const int nkeys = projection.num_key_columns();
  for (int i = 0; i < nkeys; ++i) {
    EncodeKeyCell(projection.column(i).type(), blocks[i]->cell(row), i == nkeys - 1, &key);
  }
  return key;
}

}  // namespace basalt
