#pragma once

// The blocks a tablet server's metadata names, read from disk: for each directory under
// <data_dir>/tablets/, the blocks of its superblock's rowsets (with what each holds), the
// superblock's orphaned blocks and the blocks an unfinished tablet copy listed in copy_blocks.
// The block GC deletes what none of them names; the scrubber verifies the rowsets' blocks.
//
// Reading is done from the files, never from a live replica, so that replicas that failed to
// open, tombstones and unfinished copies count as much as running replicas, and nothing here
// takes a replica's lock. Every file read is replaced atomically by its writers (superblock,
// replica file, copy_blocks), so a read sees an old or a new version, never a mix.
//
// What a directory names, and when its entry carries an error instead (a GC must then delete
// nothing: it cannot prove a block unreferenced):
//   - superblock present: its rowsets' blocks and orphaned_blocks. Unreadable or corrupt: error.
//   - copy_blocks present: its block ids. Unreadable: error.
//   - no superblock: fine for a tombstone, an unfinished copy, or a directory without a replica
//     file (a creation that has written nothing yet, or a deletion at its end); an error for a
//     READY replica or an unreadable replica file (a ready replica's blocks would be unknown).
// A file that disappears between listing and reading counts as absent: deletion and tombstoning
// remove the superblock only after the blocks it names and after the replica file says
// TOMBSTONED.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cfile/block_manager.h"
#include "tserver/replica_file.h"

namespace basalt {

class Env;

// What a block of a DiskRowSet holds (tablet/rowset_metadata.h), hence how it is verified.
enum class RowSetBlockKind {
  kColumn,    // A column file (cfile).
  kKeyIndex,  // The key index: a column file of encoded keys.
  kBloom,     // The bloom filter over the encoded keys.
  kRedo,      // A REDO delta file.
  kUndo,      // An UNDO delta file.
};
const char* RowSetBlockKindName(RowSetBlockKind kind);

struct RowSetBlock {
  BlockId id;
  RowSetBlockKind kind = RowSetBlockKind::kColumn;
};

// What one directory tablets/<tablet_id>/ names.
struct TabletBlockRefs {
  std::string tablet_id;
  // OK, or why the lists below may be incomplete (see the file comment).
  absl::Status status;
  // The replica file's state; nullopt without a replica file or when it cannot be read.
  std::optional<ReplicaDataState> state;
  std::vector<RowSetBlock> rowset_blocks;  // The superblock's rowsets, in superblock order.
  std::vector<BlockId> orphaned_blocks;    // The superblock's orphaned_blocks.
  std::vector<BlockId> copy_blocks;        // copy_blocks of an unfinished copy.
};

// Reads what the directory `tablets_dir`/`tablet_id` names (see the file comment). Errors go to
// the result's status.
TabletBlockRefs ReadTabletBlockRefs(Env* env, const std::string& tablets_dir,
                                    const std::string& tablet_id);

// ReadTabletBlockRefs for every directory under `tablets_dir` (<data_dir>/tablets), by tablet id.
// Entries that are not directories are skipped. Errors: listing `tablets_dir` (NOT_FOUND if it
// does not exist).
absl::StatusOr<std::vector<TabletBlockRefs>> ReadAllTabletBlockRefs(Env* env,
                                                                    const std::string& tablets_dir);

}  // namespace basalt
