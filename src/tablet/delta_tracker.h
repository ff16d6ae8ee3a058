#pragma once

// DeltaTracker: every delta store of one DiskRowSet (docs/tablet.md "Deltas").
//
// Holds the REDO DeltaMemStore (DMS) that takes new mutations, the immutable REDO files (flushed
// DMSs, oldest first) and the UNDO files (written with the base data by a flush or compaction).
// Readers take a StoreSet, an immutable view of the stores at one instant whose stores stay alive
// while the view does, so a flush or minor compaction swapping stores never disturbs a scan.
//
// DMS flush protocol (FlushDMS): (1) under the lock, the DMS is frozen (moved to the flushing
// slot, still part of every new StoreSet) and a fresh DMS takes updates; (2) without the lock, the
// frozen DMS is written to a new REDO file and the block finalized (fsynced); (3) under the lock,
// the file replaces the frozen DMS. A failure in (2) puts nothing at risk: the frozen DMS stays
// in the set and the next flush retries. The caller persists the new block list (the tablet
// superblock) afterwards; until then a crash loses only what the WAL replays.
//
// Thread safety: Update is called by one writer at a time (the tablet's apply thread); FlushDMS
// and MinorCompactRedoFiles by one maintenance thread at a time per tracker; everything else is
// thread-safe and may run concurrently with both.

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cfile/block_manager.h"
#include "common/arena.h"
#include "common/hybrid_clock.h"
#include "tablet/delta_store.h"
#include "tablet/mvcc.h"

namespace basalt {

class BlockCache;
class DeltaFileReader;
class DeltaMemStore;

struct DeltaTrackerOptions {
  // Borrowed; outlive the tracker.
  BlockManager* block_manager = nullptr;
  BlockCache* block_cache = nullptr;  // May be nullptr.
  // The owning rowset, for messages ("rowset 12").
  std::string name;
  // Rows in the rowset's base data; Update of a row >= num_rows is INVALID_ARGUMENT.
  rowid_t num_rows = 0;
};

class DeltaTracker {
 public:
  // An immutable view of the stores. UNDO files in any order; REDO stores oldest first (files,
  // then the flushing DMS if any, then the current DMS).
  struct StoreSet {
    std::vector<std::shared_ptr<const DeltaStore>> undos;
    std::vector<std::shared_ptr<const DeltaStore>> redos;
  };

  // Opens the given REDO (oldest first) and UNDO files. DATA_LOSS / NOT_FOUND from opening a
  // file, naming it.
  static absl::StatusOr<std::unique_ptr<DeltaTracker>> Open(
      DeltaTrackerOptions options, const std::vector<BlockId>& redo_blocks,
      const std::vector<BlockId>& undo_blocks);
  ~DeltaTracker();
  DeltaTracker(const DeltaTracker&) = delete;
  DeltaTracker& operator=(const DeltaTracker&) = delete;

  // Appends a REDO (UPDATE, DELETE or REINSERT RowChangeList) for base row `row` to the DMS.
  // `op_index` is the Raft index of the op (0 when there is no WAL), kept for WAL retention.
  // INVALID_ARGUMENT for a row out of range or a malformed change list. A second update of one
  // row at one timestamp (two ops of a batch) is merged into the first
  // (MergeSameTimestampRedos); an impossible pair is INVALID_ARGUMENT. Writer only.
  absl::Status Update(HybridTime ts, rowid_t row, std::string_view changes, int64_t op_index);

  StoreSet GetStores() const ABSL_LOCKS_EXCLUDED(mu_);

  // Merges the entries of rows [start, start + n) of `stores` into *out in DeltaKey order
  // (entries with equal keys keep the order of `stores`). Appends; does not clear *out.
  static absl::Status CollectMerged(std::span<const std::shared_ptr<const DeltaStore>> stores,
                                    rowid_t start, size_t n, Arena* arena,
                                    std::vector<DeltaEntry>* out);

  // Whether base row `row` is deleted once every REDO is applied (a base row starts live; UNDOs
  // do not matter for the latest state). Used by key lookups of writes.
  absl::StatusOr<bool> IsDeletedLatest(rowid_t row) const;
  // Whether base row `row` exists at `snap` (UNDOs not in snap, then REDOs in snap).
  absl::StatusOr<bool> IsLiveAt(rowid_t row, const MvccSnapshot& snap) const;
  // The latest timestamp of any REDO of `row`, or kInvalid if none (used by WAL replay to skip
  // mutations already applied).
  absl::StatusOr<HybridTime> LatestRedoTimestamp(rowid_t row) const;

  // See the file comment. FAILED_PRECONDITION if another flush is in progress; OK with nothing
  // done when the DMS is empty.
  absl::Status FlushDMS() ABSL_LOCKS_EXCLUDED(mu_);
  // Merges every REDO file into one new REDO file (minor delta compaction), then swaps it in.
  // OK with nothing done when there are fewer than two files; FAILED_PRECONDITION if another
  // minor compaction is in progress. The replaced blocks are handed out by TakeObsoleteBlocks.
  absl::Status MinorCompactRedoFiles() ABSL_LOCKS_EXCLUDED(mu_);

  // History GC of UNDO files (docs/tablet.md "History GC"). An UNDO file is *ancient* at `mark`
  // when every entry in it is older than `mark` (or it is empty): a reader whose snapshot holds
  // every timestamp below `mark` applies none of its entries, so dropping it changes no such read.
  // Files straddling the mark are kept whole.
  // The on-disk bytes of the ancient UNDO files.
  uint64_t AncientUndoBytes(HybridTime mark) const ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the ancient UNDO files from the tracker (new StoreSets lack them; StoreSets taken
  // before keep reading them) and returns their block ids, which the caller deletes once a
  // superblock that no longer lists them is durable. REQUIRES: the caller has reserved the rowset
  // (no compaction reads the tracker's UNDO list to retire it meanwhile).
  std::vector<BlockId> DropAncientUndoFiles(HybridTime mark) ABSL_LOCKS_EXCLUDED(mu_);

  // Current block ids, for the superblock.
  std::vector<BlockId> redo_blocks() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<BlockId> undo_blocks() const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks replaced by MinorCompactRedoFiles since the last call; the caller deletes them after
  // the superblock that no longer lists them is durable.
  std::vector<BlockId> TakeObsoleteBlocks() ABSL_LOCKS_EXCLUDED(mu_);

  // Scheduling and WAL-retention figures of the in-memory stores (current + flushing DMS).
  size_t dms_memory() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t dms_entries() const ABSL_LOCKS_EXCLUDED(mu_);
  HybridTime dms_min_timestamp() const ABSL_LOCKS_EXCLUDED(mu_);  // kInvalid when empty.
  // Smallest op_index held only in memory, or INT64_MAX when nothing is.
  int64_t min_unflushed_op_index() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t num_redo_files() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t redo_file_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t undo_file_bytes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit DeltaTracker(DeltaTrackerOptions options);
  // Implementation details belong to delta_tracker.cc; this section may grow.

  // Opens finalized delta file `id`, checking that it holds `expected` deltas.
  absl::StatusOr<std::shared_ptr<const DeltaFileReader>> OpenFile(BlockId id,
                                                                  DeltaType expected) const;
  // Writes the merged entries of `inputs` (REDO stores, oldest first; entries of one row at one
  // timestamp in several stores are merged) to a new finalized REDO file and opens it.
  absl::StatusOr<std::shared_ptr<const DeltaFileReader>> WriteRedoFile(
      std::span<const std::shared_ptr<const DeltaStore>> inputs) const;
  // The REDO stores only (GetStores().redos without copying the UNDOs).
  std::vector<std::shared_ptr<const DeltaStore>> GetRedoStores() const ABSL_LOCKS_EXCLUDED(mu_);
  void AppendRedosLocked(std::vector<std::shared_ptr<const DeltaStore>>* out) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Entries of `row` in `stores`, merged, into *out (change bytes in *arena or the stores).
  static absl::Status CollectRow(std::span<const std::shared_ptr<const DeltaStore>> stores,
                                 rowid_t row, Arena* arena, std::vector<DeltaEntry>* out);

  // Constant after construction.
  const DeltaTrackerOptions options_;

  // Lock order: mu_ is a leaf (no other lock is taken under it). Update holds it shared while it
  // writes the DMS, so FlushDMS's exclusive section cannot swap the DMS under a running Update.
  mutable absl::Mutex mu_;
  // The DMS taking updates; never null.
  std::shared_ptr<DeltaMemStore> dms_ ABSL_GUARDED_BY(mu_);
  // The frozen DMS being (or failed to be) written to a file; null when none.
  std::shared_ptr<DeltaMemStore> flushing_dms_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<const DeltaFileReader>> redo_files_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<const DeltaFileReader>> undo_files_ ABSL_GUARDED_BY(mu_);
  std::vector<BlockId> obsolete_blocks_ ABSL_GUARDED_BY(mu_);
  int64_t next_dms_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool flush_running_ ABSL_GUARDED_BY(mu_) = false;
  bool compaction_running_ ABSL_GUARDED_BY(mu_) = false;
  // False while no REDO store of this tracker has ever held a DELETE or REINSERT: then no base
  // row is deleted at the latest state and IsDeletedLatest answers without a lookup. Sticky
  // (flushes and compactions only move REDOs); set by Open for any non-empty REDO file and by
  // Update (release) before a DELETE or REINSERT enters the DMS.
  std::atomic<bool> redos_may_change_liveness_{false};
};

}  // namespace basalt
