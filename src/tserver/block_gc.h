#pragma once

// BlockGc: deletes the blocks of the tablet server's block manager that no metadata names:
// blocks a crash left between their finalization and the superblock that would have named them
// (in a flush, a compaction, a delta flush or compaction, a tablet copy), a deletion a crash
// undid (DeleteBlock does not sync), and the blocks of a replica deleted without its superblock
// (docs/tserver.md "Block GC").
//
// A run: (1) list the block manager's blocks (of every data directory that has not failed);
// (2) keep only those of an epoch before their directory's current one (created by an earlier
// process: BlockManager::CreatedBeforeOpen); (3) read what every tablet directory names
// (tserver/block_references.h): superblock rowsets, orphaned_blocks, copy_blocks; (4) delete
// the blocks of (2) that (3) does not name. If any directory's metadata cannot be read, the run
// deletes nothing (a block it names would be unknown).
//
// Why it never deletes a block anyone needs:
//   - Blocks of the current epoch are never candidates. Every block a flush, compaction or
//     tablet copy of this process is writing, or has finalized but not yet named in a
//     superblock, is of its directory's current epoch (ids are dir << 56 | epoch << 32 |
//     counter, and each directory's epoch is new at every BlockManager::Open). So no registry of
//     blocks in flight is needed, and a copy that takes hours is as safe as a flush.
//   - A block of an earlier epoch that no superblock and no copy_blocks names at step (3) can
//     never be named again: this process writes superblocks that name the rowsets the tablet
//     already had (read from its superblock) plus blocks it created itself (current epoch), and
//     a copy names only blocks it created. A block that was named when the superblock was read
//     is kept, even if it became an orphan since.
//   - Superblocks, replica files and copy_blocks are replaced atomically; a deletion removes a
//     superblock only after the blocks it names, and after the replica file says TOMBSTONED.
//   - Readers (scans, tablet copy sources) hold open handles: a deleted block stays readable.
//   - Deleting a block the tablet deletes too is harmless: both ignore NOT_FOUND.
// Blocks of the current epoch that become garbage in this process (a flush whose superblock
// write failed) are collected after the next restart.
//
// The server runs one pass at startup, after every replica, tombstone and unfinished copy was
// opened or cleaned up (TsTabletManager::OpenAll), then one every --block_gc_interval_sec.
//
// Lifecycle: construct -> RunOnce()* / Start() -> Shutdown() (or the destructor).
// Thread-safe, except that runs must not overlap (RunOnce() is for a GC not Start()ed, or before
// Start()).

#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/log_throttle.h"
#include "common/metrics.h"
#include "gflags/gflags_declare.h"

DECLARE_int32(block_gc_interval_sec);

namespace basalt {

class BlockManager;
class Env;

struct BlockGcOptions {
  Env* env = nullptr;                     // Borrowed.
  BlockManager* block_manager = nullptr;  // Borrowed.
  // <data_dir>/tablets.
  std::string tablets_dir;
  // Between runs of the thread (--block_gc_interval_sec); zero: Start() starts no thread.
  absl::Duration interval = absl::Hours(1);
  // Where the counters go (basalt_block_gc_*); nullptr: none. Borrowed.
  MetricRegistry* metrics = nullptr;

  // interval from the flag.
  static BlockGcOptions FromFlags();
};

// What one run did.
struct BlockGcResult {
  int64_t candidates = 0;      // Blocks of earlier epochs.
  int64_t deleted_blocks = 0;  // Deleted by this run (already gone: not counted).
  int64_t deleted_bytes = 0;
};

class BlockGc {
 public:
  // REQUIRES: options.env and block_manager set.
  explicit BlockGc(BlockGcOptions options);
  ~BlockGc();
  BlockGc(const BlockGc&) = delete;
  BlockGc& operator=(const BlockGc&) = delete;

  // One run on the calling thread (see the file comment). Logs what it deleted. Errors (nothing
  // deleted, or only part): listing the blocks; FAILED_PRECONDITION naming the tablet whose
  // metadata could not be read (with its error); an error deleting a block (after the others
  // were tried).
  absl::StatusOr<BlockGcResult> RunOnce();

  // Starts a thread that runs every `interval` (none if it is zero). Errors are logged.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops the thread, waiting for a run under way. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void ThreadMain() ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  const BlockGcOptions options_;
  Counter* const deleted_blocks_counter_;  // May be null (no registry).
  Counter* const deleted_bytes_counter_;   // May be null.
  Counter* const skipped_runs_counter_;    // May be null.

  LogThrottle skip_log_;  // Thread-safe itself.

  absl::Mutex mu_;
  absl::CondVar cv_;  // Signalled by Shutdown.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // Started and joined by Start()/Shutdown() on the owner's thread.
};

}  // namespace basalt
