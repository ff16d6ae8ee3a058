#pragma once

// RowSetMetadata: what the tablet superblock records about one DiskRowSet (docs/tablet.md
// "DiskRowSet layout"). Every block named here is finalized (durable) before a superblock that
// names it is written.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cfile/block_manager.h"
#include "common/hybrid_clock.h"
#include "common/schema.h"

namespace basalt {

struct RowSetMetadata {
  int64_t id = 0;
  // Base data: one column file per column of the schema the rowset was written with, by id.
  std::vector<std::pair<ColumnId, BlockId>> column_blocks;
  // The key index: a key column file (BINARY, sorted, value index) of the encoded primary keys.
  // Invalid (0) when the key is one integer column: that column's file (column_blocks[0]) is
  // written as a sorted key file and serves as the index.
  BlockId key_index_block;
  // The key filter (cfile/bloom_filter.h): a bloom filter over the encoded keys, or a key bitmap
  // over [min_key, max_key] for a key of one integer column.
  BlockId bloom_block;
  // Delta files: REDO oldest first; UNDO in any order.
  std::vector<BlockId> redo_blocks;
  std::vector<BlockId> undo_blocks;
  // Encoded keys of the first and last base rows.
  std::string min_key;
  std::string max_key;
  uint64_t num_rows = 0;
  // Every op with a timestamp below this is reflected in the base data and UNDOs (the snapshot the
  // rowset was written at). WAL replay skips mutations of this rowset's rows below it.
  HybridTime base_snapshot_before;

  // Every block the rowset owns.
  std::vector<BlockId> AllBlocks() const;
  bool operator==(const RowSetMetadata&) const = default;
};

}  // namespace basalt
