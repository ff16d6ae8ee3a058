#pragma once

// Test-only helpers for the DiskRowSet tests (diskrowset_writer_test.cc, diskrowset_test.cc):
// an in-memory block manager, writing rows given as Datums to a rowset, and scanning a rowset
// back into Datums. Header-only: every src/tablet/*.cc goes into basalt_tablet.

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cfile/block_manager.h"
#include "common/env_memory.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/schema.h"
#include "common/status_test_util.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "tablet/diskrowset.h"
#include "tablet/diskrowset_writer.h"
#include "tablet/iterators_test_util.h"
#include "tablet/row_block_util.h"

namespace basalt::drs_test {

using iterators_test::ColumnarRows;
using iterators_test::RowToString;
using iterators_test::TestRow;

// The encoded primary key of a row of `schema`.
inline std::string KeyOf(const Schema& schema, const TestRow& row) {
  return EncodeKey(schema, std::vector<Datum>(row.begin(), row.begin() + schema.num_key_columns()));
}

// Reads every remaining row of `it` (a scan of `projection`) in batches of `max_rows`.
inline absl::StatusOr<std::vector<TestRow>> Drain(RowBlockIterator* it, const Schema& projection,
                                                  size_t max_rows = 1000) {
  RowBlockBuffers buffers(projection, max_rows);
  std::vector<TestRow> rows;
  while (it->HasNext()) {
    buffers.ResetArenas();
    auto n = it->NextBlock(buffers.blocks(), max_rows);
    if (!n.ok()) return n.status();
    for (size_t i = 0; i < *n; ++i) {
      rows.push_back(iterators_test::ReadRow(projection, buffers.blocks(), i));
    }
  }
  return rows;
}

class DiskRowSetTestBase : public ::testing::Test {
 protected:
  void SetUp() override { bm_ = BlockManager::Open(&env_, "/data").value(); }

  DiskRowSetOptions Options(BlockCache* cache = nullptr) {
    DiskRowSetOptions o;
    o.block_manager = bm_.get();
    o.block_cache = cache;
    return o;
  }

  // Writes `rows` (sorted by key) in AppendBlock calls of random sizes up to `max_chunk`, then
  // finalizes the blocks. Returns the metadata.
  absl::StatusOr<RowSetMetadata> WriteRowSet(const Schema& schema, const std::vector<TestRow>& rows,
                                             int64_t id, Random* rng, size_t max_chunk = 500) {
    DiskRowSetWriter writer(bm_.get(), &schema, id, rows.size());
    absl::Status s = writer.Open();
    if (!s.ok()) return s;
    size_t i = 0;
    while (i < rows.size()) {
      const size_t n = std::min<size_t>(rows.size() - i, 1 + rng->Uniform(max_chunk));
      ColumnarRows chunk(schema, n);
      std::vector<std::string> keys;
      for (size_t j = 0; j < n; ++j) {
        chunk.Append(rows[i + j]);
        keys.push_back(KeyOf(schema, rows[i + j]));
      }
      std::vector<std::string_view> key_views(keys.begin(), keys.end());
      std::vector<const ColumnBlock*> cols(chunk.blocks().begin(), chunk.blocks().end());
      s = writer.AppendBlock(cols, key_views, n);
      if (!s.ok()) return s;
      i += n;
    }
    EXPECT_EQ(writer.rows_written(), rows.size());
    std::vector<std::unique_ptr<WritableBlock>> blocks;
    auto meta = writer.FinishWithoutFinalize(&blocks);
    if (!meta.ok()) return meta.status();
    std::vector<WritableBlock*> ptrs;
    for (auto& b : blocks) ptrs.push_back(b.get());
    s = bm_->FinalizeBlocks(ptrs);
    if (!s.ok()) return s;
    return meta;
  }

  // Scans `rs` at `snap` and returns the rows.
  absl::StatusOr<std::vector<TestRow>> Scan(const DiskRowSet& rs, const Schema& projection,
                                            const MvccSnapshot& snap, const ScanSpec& spec = {},
                                            size_t max_rows = 1000) {
    auto it = rs.NewIterator(&projection, snap, spec);
    if (!it.ok()) return it.status();
    return Drain(it->get(), projection, max_rows);
  }

  // Overwrites byte `offset` (from the end when negative) of block `id` with its complement.
  void FlipByte(BlockId id, int64_t offset) {
    std::string path = bm_->BlockPath(id);
    std::string data;
    BASALT_ASSERT_OK(ReadFileToString(&env_, path, &data));
    size_t pos = offset >= 0 ? static_cast<size_t>(offset) : data.size() + offset;
    ASSERT_LT(pos, data.size());
    data[pos] = static_cast<char>(~data[pos]);
    BASALT_ASSERT_OK(WriteStringToFile(&env_, path, data, false));
  }
  void Truncate(BlockId id, size_t size) {
    std::string path = bm_->BlockPath(id);
    std::string data;
    BASALT_ASSERT_OK(ReadFileToString(&env_, path, &data));
    data.resize(std::min(size, data.size()));
    BASALT_ASSERT_OK(WriteStringToFile(&env_, path, data, false));
  }

  MemoryEnv env_;
  std::unique_ptr<BlockManager> bm_;
};

}  // namespace basalt::drs_test
