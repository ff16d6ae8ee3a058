#pragma once

// ColumnarBlockBuilder: turns the ColumnBlocks a tablet iterator fills into the columnar wire
// form of a scan batch, ColumnarRowBlockPB (proto/common.proto; docs/tserver.md "Scan
// batches"): per column its fixed-width cells back to back little-endian, or for variable-length
// types the concatenated values plus num_rows + 1 little-endian uint32 offsets; a null bitmap
// (LSB first, bit set = NULL) only when some cell is NULL.
//
// Lifecycle: construct per batch -> Append* -> Finish once. Not thread-safe.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/column_block.h"
#include "common/schema.h"

namespace basalt {

namespace pb {
class ColumnarRowBlockPB;
}  // namespace pb

class ColumnarBlockBuilder {
 public:
  // `types` of the output columns; `inputs[i]` is the index of output column i among the blocks
  // passed to Append.
  ColumnarBlockBuilder(std::vector<DataType> types, std::vector<int> inputs);

  // Appends rows [0, n) of `blocks` (the iterator's blocks, in its projection order).
  void Append(absl::Span<ColumnBlock* const> blocks, size_t n);

  size_t num_rows() const { return num_rows_; }
  // Bytes appended so far (data, offsets and bitmaps).
  size_t bytes() const { return bytes_; }

  // Moves the batch into `out` (replacing its columns).
  void Finish(pb::ColumnarRowBlockPB* out);

 private:
  struct Column {
    DataType type;
    size_t cell_size = 0;
    bool variable_length = false;
    int input = 0;
    std::string data;
    std::string offsets;
    std::string nulls;
    bool any_null = false;
  };

  void AppendColumn(Column* col, const ColumnBlock& block, size_t n);

  std::vector<Column> columns_;
  size_t num_rows_ = 0;
  size_t bytes_ = 0;
};

}  // namespace basalt
