#include "common/column_block.h"

#include <cstdlib>

#include "glog/logging.h"

namespace basalt {

void ExpandNonNullCells(ColumnBlock* block, size_t offset, size_t num_rows, size_t num_values) {
  if (block->null_bitmap == nullptr) {
    DCHECK_EQ(num_rows, num_values);
    return;
  }
  CHECK_LE(offset + num_rows, block->capacity);
  const size_t size = block->cell_size;
  size_t src = offset + num_values;  // One past the next dense cell to move.
  for (size_t row = offset + num_rows; row > offset;) {
    --row;
    if (BitmapTest(block->null_bitmap, row)) {
      std::memset(block->cell(row), 0, size);
      continue;
    }
    DCHECK_GT(src, offset);
    --src;
    // Then as many values as rows remain below: all are non-NULL and already in place.
    if (src == row) break;
    std::memmove(block->cell(row), block->cell(src), size);
  }
}

void ColumnBlockBuffer::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

ColumnBlockBuffer::ColumnBlockBuffer(DataType type, size_t capacity, bool nullable) {
  const size_t cell_size = GetTypeInfo(type).size();
  // aligned_alloc needs a size that is a multiple of the alignment; never zero.
  const size_t bytes = ((capacity * cell_size + 63) / 64 + 1) * 64;
  cells_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
  CHECK(cells_ != nullptr) << "out of memory allocating " << bytes << " bytes";
  std::memset(cells_.get(), 0, bytes);
  block_.type = type;
  block_.cell_size = cell_size;
  block_.cells = cells_.get();
  block_.capacity = capacity;
  block_.arena = &arena_;
  if (nullable) {
    // Rounded up to whole 64-bit words so word-at-a-time kernels may touch the last word.
    const size_t nbytes = (BitmapSize(capacity) + 7) / 8 * 8 + 8;
    nulls_.reset(new uint8_t[nbytes]());
    block_.null_bitmap = nulls_.get();
  }
}

}  // namespace basalt
