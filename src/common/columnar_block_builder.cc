#include "common/columnar_block_builder.h"

#include <cstring>
#include <string_view>

#include "common/bitmap.h"
#include "common/coding.h"
#include "common/types.h"
#include "proto/common.pb.h"

namespace basalt {

ColumnarBlockBuilder::ColumnarBlockBuilder(std::vector<DataType> types, std::vector<int> inputs) {
  columns_.resize(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    Column& c = columns_[i];
    c.type = types[i];
    c.cell_size = GetTypeInfo(types[i]).size();
    c.variable_length = GetTypeInfo(types[i]).is_variable_length();
    c.input = inputs[i];
    if (c.variable_length) PutFixed32(&c.offsets, 0);
  }
}

void ColumnarBlockBuilder::Append(absl::Span<ColumnBlock* const> blocks, size_t n) {
  if (n == 0) return;
  for (Column& c : columns_) AppendColumn(&c, *blocks[c.input], n);
  num_rows_ += n;
}

void ColumnarBlockBuilder::AppendColumn(Column* col, const ColumnBlock& block, size_t n) {
  const size_t before = col->data.size() + col->offsets.size() + col->nulls.size();
  if (block.null_bitmap != nullptr) {
    col->nulls.resize(BitmapSize(num_rows_ + n), '\0');
    uint8_t* bits = reinterpret_cast<uint8_t*>(col->nulls.data());
    for (size_t i = 0; i < n; ++i) {
      if (BitmapTest(block.null_bitmap, i)) {
        BitmapSet(bits, num_rows_ + i);
        col->any_null = true;
      }
    }
  }
  if (!col->variable_length) {
    // The host is little-endian (coding.h), so cells are already in wire order.
    col->data.append(reinterpret_cast<const char*>(block.cells), n * col->cell_size);
  } else {
    const auto* cells = reinterpret_cast<const std::string_view*>(block.cells);
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += block.is_null(i) ? 0 : cells[i].size();
    col->data.reserve(col->data.size() + total);
    const size_t off_start = col->offsets.size();
    col->offsets.resize(off_start + 4 * n);
    char* off = col->offsets.data() + off_start;
    for (size_t i = 0; i < n; ++i) {
      if (!block.is_null(i)) col->data.append(cells[i].data(), cells[i].size());
      EncodeFixed32(off + 4 * i, static_cast<uint32_t>(col->data.size()));
    }
  }
  bytes_ += col->data.size() + col->offsets.size() + col->nulls.size() - before;
}

void ColumnarBlockBuilder::Finish(pb::ColumnarRowBlockPB* out) {
  out->Clear();
  out->set_num_rows(static_cast<int64_t>(num_rows_));
  for (Column& c : columns_) {
    pb::ColumnarRowBlockPB::ColumnPB* col = out->add_columns();
    *col->mutable_data() = std::move(c.data);
    if (c.variable_length) *col->mutable_offsets() = std::move(c.offsets);
    if (c.any_null) {
      c.nulls.resize(BitmapSize(num_rows_), '\0');
      *col->mutable_null_bitmap() = std::move(c.nulls);
    }
  }
}

}  // namespace basalt
