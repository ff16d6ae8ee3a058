#pragma once

// Tombstones (docs/tablet_copy.md "Tombstones"): a replica whose data is deleted but whose
// directory keeps the replica file (data state TOMBSTONED) and the consensus metadata, so that a
// later tablet copy onto this server continues from its term and vote (a replica never votes
// twice in one term) and the server still knows which tablets it held.
//
// Crash safety: the replica file's state is the commit point. Tombstoning rewrites it first and
// then deletes the data; a restart that finds a TOMBSTONED replica file next to leftover data
// (a superblock, a WAL) finishes the deletion. An incomplete copy (state COPYING) is turned into a
// tombstone the same way, after deleting the blocks it recorded in copy_blocks.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cfile/block_manager.h"
#include "tserver/replica_wal.h"

namespace basalt {

class Env;

// Marks the replica in `tablet_dir` TOMBSTONED, recording the newest last op of its log and of
// what an earlier tombstone recorded (tombstone_last_logged, which the tombstone votes with), then
// deletes its data (FinishTombstone). The replica must not be running. Errors: reading or writing
// the replica file (DATA_LOSS if corrupt), I/O errors deleting.
absl::Status TombstoneReplica(Env* env, BlockManager* block_manager, const std::string& tablet_dir,
                              const ReplicaWal& wal);

// Deletes what a TOMBSTONED replica directory may still hold besides its replica file and cmeta:
// the blocks its superblock names (rowsets and orphans), the superblock and `wal`. A no-op
// when there is nothing left. I/O errors (NOT_FOUND blocks are skipped).
absl::Status FinishTombstone(Env* env, BlockManager* block_manager, const std::string& tablet_dir,
                             const ReplicaWal& wal);

// The block ids an unfinished tablet copy recorded in <tablet_dir>/copy_blocks (one per line).
// Lines that are not block ids are skipped with a warning: the file is written atomically, so
// such a line is corruption, and its block becomes an orphan for the block GC. NOT_FOUND without
// the file; I/O errors.
absl::StatusOr<std::vector<BlockId>> ReadCopyBlocks(Env* env, const std::string& tablet_dir);

// Turns the directory of an incomplete tablet copy (state COPYING) into a tombstone: deletes the
// blocks listed in copy_blocks, then as TombstoneReplica. Used after a failed copy and at start.
absl::Status CleanUpIncompleteCopy(Env* env, BlockManager* block_manager,
                                   const std::string& tablet_dir, const ReplicaWal& wal);

}  // namespace basalt
