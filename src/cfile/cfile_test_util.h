#pragma once

// Helpers for the column file tests: an in-memory block manager, writing a model column to a
// file, and checking a file's rows against the model.

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cfile/block_manager.h"
#include "cfile/cfile_reader.h"
#include "cfile/cfile_writer.h"
#include "cfile/encoding_test_util.h"
#include "common/bitmap.h"
#include "common/env_memory.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "gtest/gtest.h"

namespace basalt::cfile_test {

// Writes `bytes` as a new finalized block (corruption tests write rewritten files this way).
inline BlockId WriteBlockBytes(BlockManager* bm, std::string_view bytes) {
  auto block = bm->CreateBlock().value();
  const BlockId id = block->id();
  BASALT_EXPECT_OK(block->Append(bytes));
  BASALT_EXPECT_OK(block->Finalize());
  return id;
}

// The whole content of block `id`.
inline std::string ReadBlockBytes(BlockManager* bm, BlockId id) {
  auto block = bm->OpenBlock(id).value();
  std::string out;
  BASALT_EXPECT_OK(block->ReadAt(0, block->size(), &out));
  return out;
}

using encoding_test::CellsEqual;
using encoding_test::CellString;
using encoding_test::Values;

// A model column: values plus a null bitmap (bit set = NULL) over the same rows.
struct Column {
  Column(Values v, bool nullable_column) : values(std::move(v)), nullable(nullable_column) {
    nulls.assign(BitmapSize(values.size()) + 1, 0);
  }
  Values values;
  bool nullable;
  std::vector<uint8_t> nulls;
  size_t size() const { return values.size(); }
  bool is_null(size_t i) const { return BitmapTest(nulls.data(), i); }
  const void* cell(size_t i) const { return values.block().cell(i); }
};

class CFileTestBase : public ::testing::Test {
 protected:
  void SetUp() override { bm_ = BlockManager::Open(&env_, "/data").value(); }

  // Writes `col` in chunks of random sizes; returns the block id.
  BlockId WriteColumn(const CFileWriterOptions& options, const Column& col, Random* rng) {
    auto block = bm_->CreateBlock().value();
    const BlockId id = block->id();
    CFileWriter writer(options, std::move(block));
    BASALT_EXPECT_OK(writer.Start());
    const ColumnBlock& b = col.values.block();
    size_t i = 0;
    std::vector<uint8_t> chunk_nulls;
    while (i < col.size()) {
      const size_t n = std::min<size_t>(col.size() - i, 1 + rng->Skewed(12));
      chunk_nulls.assign(BitmapSize(n) + 1, 0);
      for (size_t j = 0; j < n; ++j) BitmapChange(chunk_nulls.data(), j, col.is_null(i + j));
      absl::Status s =
          writer.AppendValues(b.cell(i), col.nullable ? chunk_nulls.data() : nullptr, n);
      BASALT_EXPECT_OK(s);
      i += n;
    }
    absl::Status s = writer.Finish();
    BASALT_EXPECT_OK(s);
    EXPECT_EQ(writer.num_rows(), col.size());
    return id;
  }

  absl::StatusOr<std::unique_ptr<CFileReader>> OpenFile(BlockId id, BlockCache* cache = nullptr) {
    auto block = bm_->OpenBlock(id);
    if (!block.ok()) return block.status();
    CFileReaderOptions opts;
    opts.block_cache = cache;
    return CFileReader::Open(std::move(*block), opts);
  }

  // Writes `bytes` as a new block (for corruption tests).
  BlockId WriteBytes(std::string_view bytes) { return WriteBlockBytes(bm_.get(), bytes); }
  std::string ReadAll(BlockId id) { return ReadBlockBytes(bm_.get(), id); }

  MemoryEnv env_;
  std::unique_ptr<BlockManager> bm_;
};

// Expects rows [first, first + n) of `col` in `out` rows [0, n).
inline void ExpectRows(const Column& col, size_t first, const ColumnBlock& out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const size_t r = first + i;
    const bool null = out.null_bitmap != nullptr && BitmapTest(out.null_bitmap, i);
    ASSERT_EQ(col.is_null(r), null) << "row " << r;
    if (!null) {
      ASSERT_TRUE(CellsEqual(col.values.block(), r, out, i))
          << "row " << r << ": want " << CellString(col.values.block(), r) << " got "
          << CellString(out, i);
    }
  }
}

// Scans the whole file in chunks of random sizes and compares with the model.
inline void ExpectScanMatches(CFileReader* reader, const Column& col, Random* rng) {
  ASSERT_EQ(reader->num_rows(), col.size());
  auto it = reader->NewIterator();
  size_t row = 0;
  while (row < col.size()) {
    const size_t n = 1 + rng->Skewed(12);
    ColumnBlockBuffer buf(reader->type(), n, true);
    size_t got = 0;
    absl::Status s = it->Scan(n, buf.block(), &got);
    BASALT_ASSERT_OK(s);
    ASSERT_EQ(got, std::min(n, col.size() - row));
    ExpectRows(col, row, buf.block_ref(), got);
    row += got;
  }
  size_t got = 1;
  ColumnBlockBuffer buf(reader->type(), 1, true);
  BASALT_ASSERT_OK(it->Scan(1, buf.block(), &got));
  EXPECT_EQ(got, 0u);
}

}  // namespace basalt::cfile_test
