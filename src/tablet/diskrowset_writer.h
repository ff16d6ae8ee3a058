#pragma once

// DiskRowSetWriter: writes the base data of one DiskRowSet (docs/tablet.md "DiskRowSet").
//
// A DiskRowSet's base data is one column file per column of the tablet schema (by column id), a
// key index (a BINARY key column file of the encoded primary keys, PREFIX encoded, with a value
// index; none when the key is one integer column, whose column file is then written as a sorted
// key file and serves as the index) and a bloom filter block over the encoded keys. Rows are
// appended in strictly ascending key order and numbered from 0 (their ordinal, rowid_t).
//
// Lifecycle: construct, Open(), AppendBlock()*, FinishWithoutFinalize(). The returned blocks are
// written but not finalized: the caller finalizes them together with its delta files in one
// BlockManager::FinalizeBlocks and only then records the returned metadata in a superblock.
// After an error the writer is unusable; destroying an unfinished writer aborts its blocks.
// Not thread-safe; the caller serializes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cfile/block_manager.h"
#include "common/column_block.h"
#include "common/schema.h"
#include "tablet/rowset_metadata.h"

namespace basalt {

class BloomFilterBuilder;
class CFileWriter;

class DiskRowSetWriter {
 public:
  // `bm` and `schema` (the tablet schema: every column is written, by column id) are borrowed and
  // must outlive the writer. The bloom filter targets --cfile_bloom_fpr (0.001): up to 2^20 rows
  // it is sized for the rows written; beyond, for max(expected_rows, twice the rows at that
  // point), and writing more rows than that raises the false-positive rate. When the key is one
  // integer column and an exact bitmap over [min key, max key] takes no more pages than that
  // bloom filter, the filter block is the bitmap instead (cfile/bloom_filter.h, kKeyBitmap).
  DiskRowSetWriter(BlockManager* bm, const Schema* schema, int64_t rowset_id,
                   uint64_t expected_rows);
  ~DiskRowSetWriter();
  DiskRowSetWriter(const DiskRowSetWriter&) = delete;
  DiskRowSetWriter& operator=(const DiskRowSetWriter&) = delete;

  // Creates the blocks and starts the column writers. INVALID_ARGUMENT for a schema without key
  // columns or a column a column file cannot store (cfile's checks); I/O errors from the block
  // manager; FAILED_PRECONDITION if called twice.
  absl::Status Open();

  // Appends rows [0, n): columns[i] holds schema column i (key columns too) in cell format with a
  // null bitmap when nullable (nullptr: no NULLs); keys[j] is row j's encoded primary key
  // (key_encoder.h), strictly ascending across all calls. Cells are copied.
  // INVALID_ARGUMENT (nothing written) for a wrong number of columns or keys, a block of the wrong
  // type or too small, or keys out of order; INVALID_ARGUMENT (writer failed) for a NULL in a NOT
  // NULL column; I/O errors. FAILED_PRECONDITION before Open() or after a failure / Finish.
  absl::Status AppendBlock(absl::Span<const ColumnBlock* const> columns,
                           absl::Span<const std::string_view> keys, size_t n);

  uint64_t rows_written() const { return rows_written_; }
  // Bytes of every file written so far (column files and key index; the bloom filter once
  // finished), for rolling at --rowset_target_size_mb.
  uint64_t bytes_written() const;

  // Finishes every column file, the key index and the bloom filter, and appends the written,
  // unfinalized blocks to *blocks (ownership passes to the caller, who finalizes them). Returns
  // the metadata: deltas empty, base_snapshot_before left invalid for the caller to set.
  // FAILED_PRECONDITION with zero rows (nothing is handed back; the blocks are aborted) or when
  // not open; I/O errors. The writer is done afterwards.
  absl::StatusOr<RowSetMetadata> FinishWithoutFinalize(
      std::vector<std::unique_ptr<WritableBlock>>* blocks);

 private:
  absl::Status CheckAppend(absl::Span<const ColumnBlock* const> columns,
                           absl::Span<const std::string_view> keys, size_t n) const;
  absl::Status Fail(absl::Status s);
  void AddToBloom(absl::Span<const std::string_view> keys);
  // Sets the keys' bits in key_bits_, or turns to the bloom filter once it cannot beat it.
  void AddToKeyBitmap(absl::Span<const std::string_view> keys);
  // Feeds every key of the bitmap to the bloom filter (built now, for the rows written, when
  // `finishing`) and drops the bitmap.
  void KeyBitmapToBloom(bool finishing);
  // Calls fn with the offset of each key in key_bits_, ascending.
  void ForEachKeyBitmapOffset(absl::FunctionRef<void(uint64_t)> fn) const;
  // The filter block's bytes: the key bitmap when it is no larger than the bloom filter.
  std::string FinishFilter();
  // Finishes the column writers and the key index into *blocks, filling meta's block ids.
  absl::Status FinishFiles(RowSetMetadata* meta,
                           std::vector<std::unique_ptr<WritableBlock>>* blocks);

  // Constant after construction.
  BlockManager* const bm_;
  const Schema* const schema_;
  const int64_t rowset_id_;
  const uint64_t expected_rows_;

  enum class State { kNew, kWriting, kDone, kFailed };
  State state_ = State::kNew;
  std::vector<std::unique_ptr<CFileWriter>> column_writers_;  // One per schema column.
  std::unique_ptr<CFileWriter> key_writer_;  // nullptr when column 0 is the key index.
  // Hashes of the keys so far, until there are too many (then bloom_ takes them).
  std::vector<uint64_t> bloom_hashes_;
  std::unique_ptr<BloomFilterBuilder> bloom_;
  // For a key of one integer column, the exact bitmap of the keys (bit i: the key min + i) while
  // it may still end up smaller than the bloom filter (no key is hashed meanwhile); its keys go
  // to the bloom filter once it cannot.
  bool key_bitmap_live_ = false;
  std::vector<uint64_t> key_bits_;
  uint64_t bloom_bytes_ = 0;
  uint64_t rows_written_ = 0;
  std::string min_key_;
  std::string last_key_;  // The last key appended (the max key).
};

}  // namespace basalt
