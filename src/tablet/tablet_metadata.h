#pragma once

// The tablet superblock: the one file that says what a tablet is made of on disk (its schema, its
// DiskRowSets and their blocks) and how far the WAL has been made durable in them.
//
// The tablet keeps a TabletSuperBlock in memory and replaces the file with WriteSuperBlock after
// every change to its rowsets (flush, compaction, delta flush or compaction, schema change). The
// file is replaced atomically (temporary file, fsync, rename, fsync of the directory), so after a
// crash it holds either the previous or the new superblock, never a mix. Every block a superblock
// names must be finalized (durable) before the superblock is written; blocks a new superblock no
// longer needs are listed in `orphaned_blocks` and deleted only after that superblock is durable,
// so a crash never leaves a superblock pointing at a deleted block.
//
// Byte layout and crash protocol: docs/tablet.md, "Superblock".

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cfile/block_manager.h"
#include "common/env.h"
#include "common/hybrid_clock.h"
#include "common/schema.h"
#include "tablet/rowset_metadata.h"

namespace basalt {

// The durable state of one tablet. Copyable value type; not thread-safe (the tablet serializes).
//
// Invariants (checked by ValidateSuperBlock, hence by WriteSuperBlock and ReadSuperBlock):
//  - tablet_id is not empty; the schema is valid (Schema::FromPB rules).
//  - Rowset ids are distinct and in [0, next_rowset_id).
//  - Each rowset: num_rows > 0; min_key <= max_key; base_snapshot_before is a valid HybridTime;
//    a valid key index (or none, block id 0, when the schema's key is one integer column) and
//    bloom block; a column block for every key column of the schema; each
//    column id at most once and either in the schema or below schema.next_column_id() (a column
//    dropped since the rowset was written: its id is never reused).
//  - Every block id is valid (non-zero) and listed once across all rowsets and orphaned_blocks.
//  - durable_op_index >= 0; max_durable_timestamp and history_gc_mark are valid HybridTimes.
struct TabletSuperBlock {
  std::string tablet_id;
  Schema schema;
  std::vector<RowSetMetadata> rowsets;
  int64_t next_rowset_id = 0;
  // Every op with Raft index <= durable_op_index is durable in the rowsets (WAL replay starts
  // above it).
  int64_t durable_op_index = 0;
  // The largest op timestamp reflected in the rowsets (restores MVCC/clock on open).
  HybridTime max_durable_timestamp = HybridTime::kMin;
  // Blocks no longer referenced that must be deleted (after a compaction or delta compaction);
  // deleted at the next open.
  std::vector<BlockId> orphaned_blocks;
  // Incremented by each write. WriteSuperBlock stores it as given: the caller increments it.
  uint64_t version = 0;
  // The highest ancient history mark any history GC applied to these rowsets (kMin: none): no
  // UNDO or deleted row at or above it was ever removed, so snapshots at or above it are exact.
  HybridTime history_gc_mark = HybridTime::kMin;

  // Field-by-field equality (the schema by Schema::Equals, plus its version and next column id).
  bool operator==(const TabletSuperBlock& other) const;
};

// Checks the invariants listed on TabletSuperBlock. Returns INVALID_ARGUMENT naming the first
// violation.
absl::Status ValidateSuperBlock(const TabletSuperBlock& sb);

// Returns the file contents for `sb` (envelope + TabletSuperBlockPB). Does not validate: callers
// that write to disk use WriteSuperBlock, which does. Used by tools and tablet copy.
std::string EncodeSuperBlock(const TabletSuperBlock& sb);

// Parses and validates file contents produced by EncodeSuperBlock. DATA_LOSS naming `filename`
// (and the byte offset where one applies) for a bad envelope (size, magic, version, length,
// checksum), an unparsable protobuf or a superblock that breaks an invariant.
absl::StatusOr<TabletSuperBlock> DecodeSuperBlock(std::string_view data, std::string_view filename);

// Durably replaces the superblock file `path` with `sb` (Env's WriteFileAtomically: `path`.tmp,
// fsync, rename, fsync of the directory). After a crash at any point `path` holds the old or the
// new superblock. Errors: INVALID_ARGUMENT if `sb` breaks an invariant (nothing is written); I/O
// errors from the Env (the file then holds the old or the new superblock; the caller must treat
// the write as failed and may retry).
absl::Status WriteSuperBlock(Env* env, const std::string& path, const TabletSuperBlock& sb);

// Reads and validates the superblock file `path`. NOT_FOUND if it does not exist; DATA_LOSS if it
// is corrupt (see DecodeSuperBlock); I/O errors from the Env.
absl::StatusOr<TabletSuperBlock> ReadSuperBlock(Env* env, const std::string& path);

}  // namespace basalt
