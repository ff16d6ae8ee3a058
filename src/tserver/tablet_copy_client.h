#pragma once

// The receiving side of tablet copy (docs/tablet_copy.md): downloads a replica from a source
// server's TabletCopyService into this server's directories, verifying every chunk's CRC32C,
// offsets and sizes, and installs it so that a crash at any point leaves either the complete new
// replica or a directory that CleanUpIncompleteCopy turns back into a tombstone:
//
//   1. BeginTabletCopySession; decode and check the file images (superblock, cmeta, replica).
//   2. tablets/<id>/replica := the source's replica file in state COPYING (atomically): from here
//      on, a restart cleans the directory up instead of opening it.
//   3. Every block into a new local block; its id is added to tablets/<id>/copy_blocks (written
//      atomically) before the block is finalized, so no finished block is ever unaccounted for.
//   4. The log entries (prev, last] into a new WAL in wals/<id>/ (reset to start after prev).
//   5. superblock (block ids mapped to the local ones), then cmeta: the source's configuration
//      and commit index, with term = max(source term, local tombstone term) and the tombstone's
//      vote kept if its term is that term (a replica never votes twice in one term).
//   6. tablets/<id>/replica := state READY: the commit point. Then copy_blocks is removed and the
//      session ended.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "consensus/raft_types.h"
#include "tserver/replica_wal.h"

namespace basalt {

class BlockManager;
class Env;

struct TabletCopyClientOptions {
  Env* env = nullptr;  // Borrowed.
  // Borrowed: where the blocks go (BlockManager::ForGroup of `data_dirs`).
  BlockManager* block_manager = nullptr;
  // The local data directory group, written into the replica file instead of the source's.
  std::vector<int> data_dirs = {0};
  std::string local_uuid;
  std::string tablet_id;
  std::string source_address;  // "host:port" of the source's TabletCopyService.
  // Destination: tablets/<id>/ (created if missing; may hold a tombstone) and the replica's log
  // (must not exist).
  std::string tablet_dir;
  ReplicaWal wal;
  // The term and vote of the tombstone being replaced, if any.
  std::optional<HardState> local_hard_state;
  // The local tombstone's tombstone_last_logged, kept in the COPYING replica file so that the
  // tombstone a failed copy leaves still votes with it.
  std::optional<OpId> tombstone_last_logged;
  // Deadline of each RPC.
  absl::Duration rpc_timeout = absl::Seconds(60);
  // Polled before each chunk: true makes the copy stop with CANCELLED (server shutdown).
  std::function<bool()> cancelled;
};

// Runs the copy; returns the last log index the new replica holds. On error the destination may
// hold an incomplete copy: call CleanUpIncompleteCopy (replica_tombstone.h). Errors: the source's
// (TABLET_NOT_FOUND, TABLET_NOT_RUNNING, ...), DATA_LOSS for a corrupt chunk or image (naming it),
// I/O errors.
absl::StatusOr<uint64_t> RunTabletCopy(const TabletCopyClientOptions& options);

}  // namespace basalt
