#pragma once

// TabletCopySource: one tablet copy session on the source server (docs/tablet_copy.md): a
// consistent snapshot of a running replica, served in chunks to the server that copies it.
//
// The snapshot is captured once, at Begin, while an anchor at 0 stops all log GC: the superblock
// file is read and every block it names is opened (an open block stays readable after a
// compaction deletes it), then the consensus metadata and replica files are read, and the log's
// first and last index are taken. With D the superblock's durable index, the entries from
// P = max(D, first - 1) to `last` complete the snapshot: superblock + blocks + entries (P, last]
// reproduce the replica as of `last`, because every entry below the log's first index is
// reflected in the superblock on disk (log GC never passes the durable index), and replaying
// the others is what a restart does. `last` is at most the commit index: committed entries never
// change, so the chunks fetched later still form one history, and the leader that asked for the
// copy (or any later one) may count the new replica as holding them. The anchor then moves to P
// for the session's life. A
// compaction between reading the superblock and opening its blocks can delete one; Begin then
// starts over (a few times).
//
// Lifecycle: Begin() -> Fetch*()... -> destroy (releases the anchor and the blocks).
// Thread-safe (Fetch* are const and read immutable state or thread-safe objects).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cfile/block_manager.h"

namespace basalt {

class TabletReplica;

namespace pb {
class BeginTabletCopySessionResponsePB;
class DataChunkPB;
}  // namespace pb

class TabletCopySource {
 public:
  // Captures the snapshot of `replica` (which must be RUNNING) and fills the session's part of
  // a BeginTabletCopySession response (everything but the id and timeout). Errors:
  // TABLET_NOT_RUNNING; DATA_LOSS / I/O errors reading the files; UNAVAILABLE when compactions
  // kept deleting blocks under it.
  static absl::StatusOr<std::unique_ptr<TabletCopySource>> Begin(
      std::shared_ptr<TabletReplica> replica, pb::BeginTabletCopySessionResponsePB* response);
  ~TabletCopySource();
  TabletCopySource(const TabletCopySource&) = delete;
  TabletCopySource& operator=(const TabletCopySource&) = delete;

  // Up to `max_length` bytes of block `block_id` from `offset`. INVALID_ARGUMENT naming block_id
  // for a block not in the snapshot, naming offset for one past the block's end; I/O errors.
  absl::Status FetchBlock(uint64_t block_id, uint64_t offset, uint64_t max_length,
                          pb::DataChunkPB* chunk) const;
  // The log entries from `first_index` (at least one, up to about `max_length` bytes), as a
  // serialized LogEntryBatchPB. INVALID_ARGUMENT naming offset outside (prev, last]; the log's
  // errors.
  absl::Status FetchLog(uint64_t first_index, uint64_t max_length, pb::DataChunkPB* chunk) const;

  const std::string& tablet_id() const;

 private:
  explicit TabletCopySource(std::shared_ptr<TabletReplica> replica);

  const std::shared_ptr<TabletReplica> replica_;
  std::optional<uint64_t> anchor_;                             // The log anchor held, if any.
  std::map<uint64_t, std::unique_ptr<ReadableBlock>> blocks_;  // By id; set by Begin.
  uint64_t log_prev_index_ = 0;
  uint64_t log_last_index_ = 0;
};

}  // namespace basalt
