#pragma once

// ColumnBlock: the target of page decoding and the unit scans hand up the stack (DESIGN.md
// section 4, "Decoding is vectorized into column buffers").
//
// A ColumnBlock is a non-owning view of a column vector: `capacity` cells of one type laid out
// contiguously in the type's cell format (types.h): fixed-width cells are their C++ value,
// naturally aligned; variable-length cells (STRING, BINARY, VARCHAR) are std::string_view whose
// bytes live in page memory, a dictionary, or `arena`. An optional null bitmap (bit set = NULL,
// LSB first, the convention of ColumnPredicate::EvaluateVector) covers the same rows. The layout
// is exactly what ColumnPredicate::EvaluateVector takes, so a decoded block is evaluated in place.
//
// Page decoders write only cells (pages hold non-NULL values only); the cfile reader owns the null
// bitmap and spreads the decoded values over the non-NULL rows with ExpandNonNullCells().
//
// ColumnBlock is a plain struct with no allocation; ColumnBlockBuffer owns the memory of one for
// callers that need it (tests, benchmarks, scans). Neither is thread-safe; the caller serializes.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "common/arena.h"
#include "common/bitmap.h"
#include "common/types.h"

namespace basalt {

struct ColumnBlock {
  DataType type = DataType::kUnknown;
  // Bytes per cell: GetTypeInfo(type).size() (sizeof(std::string_view) for variable length).
  size_t cell_size = 0;
  // capacity * cell_size bytes, aligned to the cell type's natural alignment.
  uint8_t* cells = nullptr;
  // BitmapSize(capacity) bytes, or nullptr when the column has no NULLs.
  uint8_t* null_bitmap = nullptr;
  size_t capacity = 0;
  // Where decoders place variable-length bytes that cannot point into page memory (PREFIX
  // reconstructs each value). May be nullptr for fixed-width types. Borrowed; outlives the block's
  // use.
  Arena* arena = nullptr;

  // Typed access. REQUIRES: sizeof(T) == cell_size.
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(cells);
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(cells);
  }
  uint8_t* cell(size_t i) { return cells + i * cell_size; }
  const uint8_t* cell(size_t i) const { return cells + i * cell_size; }
  bool is_null(size_t i) const { return null_bitmap != nullptr && BitmapTest(null_bitmap, i); }
  // REQUIRES: null_bitmap != nullptr.
  void SetNull(size_t i, bool is_null) { BitmapChange(null_bitmap, i, is_null); }
};

// Spreads `num_values` dense cells stored at rows [offset, offset + num_values) over the non-NULL
// rows of [offset, offset + num_rows), as given by block->null_bitmap, moving them in place (from
// the back, so no scratch memory is needed). Cells of NULL rows are zeroed. A block without a null
// bitmap is left unchanged. REQUIRES: num_values equals the number of non-NULL rows in the range;
// offset + num_rows <= capacity.
void ExpandNonNullCells(ColumnBlock* block, size_t offset, size_t num_rows, size_t num_values);

// Owns the memory of a ColumnBlock: cells aligned to 64 bytes (so kernels may use aligned vector
// loads), a null bitmap when `nullable`, and an Arena for variable-length bytes.
// Not thread-safe.
class ColumnBlockBuffer {
 public:
  ColumnBlockBuffer(DataType type, size_t capacity, bool nullable);
  ColumnBlockBuffer(const ColumnBlockBuffer&) = delete;
  ColumnBlockBuffer& operator=(const ColumnBlockBuffer&) = delete;

  ColumnBlock* block() { return &block_; }
  const ColumnBlock& block_ref() const { return block_; }
  Arena* arena() { return &arena_; }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, FreeDeleter> cells_;
  std::unique_ptr<uint8_t[]> nulls_;
  Arena arena_;
  ColumnBlock block_;
};

}  // namespace basalt
