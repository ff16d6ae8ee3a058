#pragma once

// Tablet: one replica's rows (DESIGN.md section 4; docs/tablet.md "Tablet").
//
// A tablet is a set of rowsets: the MemRowSet (MRS) taking new rows, while a flush runs the frozen
// MRS being written out, and DiskRowSets (DRS) found through a RowSetTree. Every key lives in
// exactly one rowset (a deleted row's key is reinserted in place), so a write finds its row by
// asking the tree for candidates, then each candidate's bloom filter and key index.
//
// Concurrency:
//   - Writes (ApplyRowOperations) are serialized by write_mu_ and applied in op order, each op
//     inside MvccManager StartOp/FinishOp. Op timestamps must increase from op to op.
//   - Scans take an immutable snapshot of the rowsets (Components, a shared_ptr swapped under
//     components_mu_) and an MVCC snapshot; they never block writers and see exactly one
//     snapshot even while flushes and compactions swap rowsets.
//   - Maintenance (FlushMemRowSet, FlushDeltas, Compact*) runs on any thread: one MRS flush at a
//     time; a rowset is in at most one maintenance op at a time (busy set). They block writers only
//     briefly, to freeze inputs and to carry over mutations (compaction.h protocol).
//   - The superblock is rewritten after every change of the rowset set (metadata_mu_).
//   - History GC (flushes, compactions, GcAncientUndoFiles) raises history_gc_mark() before any
//     history below it becomes unreachable to new scans; NewIterator checks the mark after its
//     iterators pinned their delta stores (tablet_history.cc explains why that order is exact).
//
// Durability: with a WAL, DurableOpIndex() says which ops the rowsets hold durably; replaying the
// ops above it with `replay` set skips mutations the rowsets already reflect.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gflags/gflags_declare.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "cfile/block_manager.h"
#include "common/env.h"
#include "common/hybrid_clock.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "tablet/compaction.h"
#include "tablet/compaction_policy.h"
#include "tablet/memory_budget.h"
#include "tablet/mvcc.h"
#include "tablet/row_iterator.h"
#include "tablet/row_outcome.h"
#include "tablet/tablet_metadata.h"

DECLARE_int32(rowset_target_size_mb);
DECLARE_int32(tablet_history_max_age_sec);

namespace basalt {

class BlockCache;
class DiskRowSet;
class MemRowSet;
class MemoryBudget;
class RowSetTree;

struct TabletOptions {
  Env* env = nullptr;                     // Borrowed.
  BlockManager* block_manager = nullptr;  // Borrowed.
  BlockCache* block_cache = nullptr;      // Borrowed; may be nullptr.
  // The superblock file (its directory must exist).
  std::string superblock_path;
  // Assigns timestamps for Write() and reads the time for the history mark. Borrowed.
  HybridClock* clock = nullptr;
  // Size at which flushes and compactions roll to a new DiskRowSet; 0: --rowset_target_size_mb.
  uint64_t rowset_target_bytes = 0;
  // Where the tablet reports its MemRowSet and DeltaMemStore bytes and asks before each write
  // (slowing writes under memory pressure). Borrowed; may be nullptr.
  MemoryBudget* memory_budget = nullptr;
};

// Figures for maintenance scheduling, tests and benchmarks.
struct TabletStats {
  size_t mrs_bytes = 0;
  int64_t mrs_rows = 0;
  HybridTime mrs_oldest = HybridTime::kInvalid;
  size_t dms_bytes = 0;
  int num_rowsets = 0;
  uint64_t on_disk_bytes = 0;
  int64_t flushes = 0;
  int64_t compactions = 0;
  // On-disk bytes of the REDO and UNDO delta files (parts of on_disk_bytes).
  uint64_t redo_bytes = 0;
  uint64_t undo_bytes = 0;
  HybridTime dms_oldest = HybridTime::kInvalid;
  // The rowset with the most REDO files, and the largest ratio of REDO bytes to base bytes.
  size_t max_redo_files = 0;
  double max_redo_ratio = 0;
};

class Tablet {
 public:
  // Creates a new, empty tablet and writes its first superblock.
  static absl::StatusOr<std::unique_ptr<Tablet>> Create(TabletOptions options,
                                                        std::string tablet_id,
                                                        const Schema& schema);
  // Opens the tablet from its superblock, deleting blocks it lists as orphaned.
  static absl::StatusOr<std::unique_ptr<Tablet>> Open(TabletOptions options);
  ~Tablet();
  Tablet(const Tablet&) = delete;
  Tablet& operator=(const Tablet&) = delete;

  // The current schema (changes only through AlterSchema).
  Schema schema() const ABSL_LOCKS_EXCLUDED(components_mu_);
  const std::string& tablet_id() const { return tablet_id_; }
  MvccManager* mvcc() { return &mvcc_; }

  // Applies `ops` (decoded against the current schema) as one op at timestamp `ts` with Raft
  // index `op_index` (0 without a WAL). (*results)[i] is op i's outcome (row_outcome.h):
  // kKeyExists for an INSERT of a live key, kKeyNotFound for an UPDATE/DELETE of an absent key;
  // the *_IGNORE forms turn those into kApplied. UPSERT of an existing row updates the columns
  // the op sets. With `replay` (WAL replay at startup, before the tablet serves reads: ops above
  // DurableOpIndex(), in index order) mutations the rowsets already reflect are skipped.
  // Errors returned: INVALID_ARGUMENT (nothing applied) for ops of another schema or, unless
  // replaying, a timestamp not above the previous op's; any other error is one of the storage
  // (row_outcome.h StorageError: an I/O error, a corrupt block): part of the op may be applied
  // in memory, and the tablet is failed (Fail) before it returns.
  absl::Status ApplyRowOperations(HybridTime ts, int64_t op_index,
                                  absl::Span<const DecodedRowOperation> ops,
                                  std::vector<RowOutcome>* results, bool replay = false)
      ABSL_LOCKS_EXCLUDED(write_mu_);
  // ApplyRowOperations at a timestamp taken from the clock under the write lock (so timestamps
  // increase in apply order); returns it in *ts if not null.
  absl::Status Write(absl::Span<const DecodedRowOperation> ops, std::vector<RowOutcome>* results,
                     HybridTime* ts = nullptr) ABSL_LOCKS_EXCLUDED(write_mu_);

  // Rowsets are released by maintenance ops (a compaction holding a rowset keeps its in-memory
  // deltas until it ends): busy_releases() counts releases; AwaitRowSetRelease waits until the
  // count differs from `since` (true) or the deadline passes (false).
  uint64_t busy_releases() const ABSL_LOCKS_EXCLUDED(busy_mu_);
  bool AwaitRowSetRelease(uint64_t since, absl::Time deadline) const ABSL_LOCKS_EXCLUDED(busy_mu_);

  // Fails the tablet for good (the first error sticks): it applies nothing more and persists
  // nothing more (every later superblock write fails with the error), so a state that may differ
  // from its peers' (a partly applied op, a store it could not read) never becomes durable. Its
  // replica fails with it. Any thread.
  void Fail(const absl::Status& error) ABSL_LOCKS_EXCLUDED(failure_mu_);
  // OK, or the error the tablet failed with.
  absl::Status health() const ABSL_LOCKS_EXCLUDED(failure_mu_);

  // Called before every superblock write with the durable op index it will record (under the
  // metadata lock); an error fails that write. The replica saves there what a restart, which
  // replays only the ops above that index, must not lose (its remembered answers). Set once,
  // before any flush.
  void SetBeforeSuperBlockWrite(std::function<absl::Status(int64_t durable_op_index)> hook)
      ABSL_LOCKS_EXCLUDED(metadata_mu_);

  // A scan of `projection` (columns of the current schema, by id) at `snap`, restricted by
  // `spec` (predicates on any column of the current schema, projected or not). With `ordered`
  // rows come in primary-key order, otherwise in any order. The tablet must outlive the iterator.
  // INVALID_ARGUMENT ("snapshot ... is too old") when `snap` lacks an applied op older than
  // history_gc_mark(): history it would need may be gone, and wrong rows are never returned.
  // READ_LATEST snapshots hold every applied op and always pass.
  absl::StatusOr<std::unique_ptr<RowBlockIterator>> NewIterator(const Schema& projection,
                                                                const MvccSnapshot& snap,
                                                                const ScanSpec& spec,
                                                                bool ordered) const;

  // Maintenance. Each returns OK with nothing done when there is nothing to do.
  // Writes the MRS out as DiskRowSets; writes continue meanwhile.
  absl::Status FlushMemRowSet() ABSL_LOCKS_EXCLUDED(write_mu_);
  // Flushes every DeltaMemStore to a REDO file.
  absl::Status FlushDeltas();
  // Merges the DiskRowSets the compaction policy picks (budget --tablet_compaction_budget_mb);
  // with `all`, every DiskRowSet.
  absl::Status Compact(bool all = false);
  // Minor delta compaction: merges each rowset's REDO files.
  absl::Status MinorCompactDeltas();
  // Major delta compaction: rewrites rowset `rowset_id` (any rowset with REDOs when -1) with its
  // REDOs folded into the base data.
  absl::Status MajorCompactDeltas(int64_t rowset_id = -1);

  // Changes the schema (add, drop, rename columns; see Schema). Flushes the MRS first, with
  // writes blocked, so every MRS row is in the schema it was written with.
  absl::Status AlterSchema(const Schema& new_schema) ABSL_LOCKS_EXCLUDED(write_mu_);

  // ---- History (docs/tablet.md "History GC") ----
  // A READ_AT_SNAPSHOT scan at `snapshot_time` (every op at or before it) may run only if the
  // time is at or above both the ancient history mark (now - --tablet_history_max_age_sec) and
  // history_gc_mark(). INVALID_ARGUMENT saying the snapshot is too old (naming the time, the mark
  // and the flag) otherwise. Above the mark, reads are exact whatever GC runs meanwhile. The
  // tablet server calls this for READ_AT_SNAPSHOT scans after NewIterator (which refuses the
  // snapshots GC has actually made inexact).
  absl::Status CheckSnapshotNotTooOld(HybridTime snapshot_time) const;
  // The highest ancient history mark a history GC (flush, compaction, GcAncientUndoFiles) has
  // used on this tablet, persisted in the superblock; kMin before any. Nothing at or above it
  // was ever removed.
  HybridTime history_gc_mark() const;
  // History GC of UNDO files: every UNDO delta file whose entries are all older than the ancient
  // history mark is dropped from its rowset; the superblock is persisted, then the blocks are
  // deleted. Files straddling the mark stay (see docs). Rowsets busy with another maintenance op
  // are skipped (a later run takes them). OK with nothing done when nothing is ancient; errors
  // from writing the superblock (the blocks are then not deleted: they stay pending).
  absl::Status GcAncientUndoFiles();
  // The on-disk bytes GcAncientUndoFiles would free now (the history GC op's
  // data_retained_bytes).
  uint64_t AncientUndoBytes() const;

  // How much a merge compaction chosen by the policy would lower the average number of rowsets
  // a key lookup consults (0: nothing worth doing).
  double MergeCompactionQuality() const;

  // Every op with index <= this is in the rowsets, which the next superblock write makes durable.
  int64_t DurableOpIndex() const;
  // Every op with index <= this is durable: the durable op index of the last superblock written
  // (or read at open). What log GC and copy anchors may rely on: DurableOpIndex() runs ahead of it
  // while a flush's superblock write has not happened (or failed).
  int64_t PersistedDurableOpIndex() const { return persisted_durable_op_index_.load(); }
  TabletStats GetStats() const;
  // The rowset ids and metadata as of now (tests, tools).
  std::vector<RowSetMetadata> RowSetsForTests() const;

 private:
  struct MemStore;
  struct Components;
  class Iterator;

  Tablet(TabletOptions options, std::string tablet_id, Schema schema);
  absl::Status InitFromSuperBlock(const TabletSuperBlock& sb);

  std::shared_ptr<const Components> GetComponents() const ABSL_LOCKS_EXCLUDED(components_mu_);
  void SetComponents(std::shared_ptr<const Components> c) ABSL_LOCKS_EXCLUDED(components_mu_);

  // Write path, under write_mu_.
  absl::Status ApplyLocked(HybridTime ts, int64_t op_index,
                           absl::Span<const DecodedRowOperation> ops,
                           std::vector<RowOutcome>* results, bool replay)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // One row: its outcome, or a storage error.
  absl::StatusOr<RowOutcome> ApplyOp(const Components& c, HybridTime ts, int64_t op_index,
                                     const DecodedRowOperation& op, bool replay)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<RowOutcome> InsertRow(const Components& c, HybridTime ts, int64_t op_index,
                                       const DecodedRowOperation& op, std::string_view key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // The DiskRowSet holding `key` as a base row (live or deleted), if any.
  struct DiskRowLocation {
    DiskRowSet* drs = nullptr;
    uint32_t row = 0;  // The key's base row (rowid_t) in *drs.
  };
  absl::StatusOr<DiskRowLocation> LocateInDiskRowSets(const Components& c, std::string_view key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<RowOutcome> MutateRow(const Components& c, HybridTime ts, int64_t op_index,
                                       std::string_view key, std::string_view changes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // WAL replay: whether the rowsets already reflect the op at `ts` for `key` (it is skipped),
  // decided at the op's first mutation of the key and kept for the rest of the op.
  absl::StatusOr<bool> ReplayFindsOpReflected(const Components& c, const std::string& key,
                                              HybridTime ts)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Inserts a row built from `key` and a REINSERT change list into the current MRS (orphaned
  // mutations of compaction).
  absl::Status ApplyOrphan(const Components& c, const OrphanedMutation& m, int64_t op_index)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void NoteMemStoreWrite(MemStore* store, int64_t op_index);

  // Flush and compaction. A job runs in steps, each with a fixed lock requirement, so that the
  // thread-safety analysis checks every caller:
  //   1. under write_mu_, PlanFlush (or CompactRowSets) fixes the inputs, snapshot and mark;
  //   2. WriteOutputs writes the output rowsets (disk I/O; write_mu_ need not be held);
  //   3. under write_mu_, InstallOutputs carries over the inputs' newer mutations and swaps the
  //      outputs in for the inputs (and for the frozen MRS of a flush);
  //   4. FinishCompaction persists the superblock.
  // RunCompaction takes write_mu_ for step 3 only (writes continue during the I/O);
  // RunCompactionWritesBlocked runs with it held throughout (AlterSchema).
  struct CompactionJob;
  // Freezes the MRS (or takes the one a failed flush left frozen) as a flush's input; nothing
  // when the MRS is empty. flush_mu_: one frozen MRS at a time.
  std::optional<CompactionJob> PlanFlush() ABSL_EXCLUSIVE_LOCKS_REQUIRED(flush_mu_, write_mu_);
  absl::Status CompactRowSets(std::vector<std::shared_ptr<DiskRowSet>> inputs)
      ABSL_LOCKS_EXCLUDED(write_mu_);
  absl::Status RunCompaction(CompactionJob* job) ABSL_LOCKS_EXCLUDED(write_mu_);
  absl::Status RunCompactionWritesBlocked(CompactionJob* job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::Status WriteOutputs(CompactionJob* job);
  absl::Status InstallOutputs(CompactionJob* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::Status FinishCompaction(const CompactionJob& job);
  absl::StatusOr<std::vector<std::shared_ptr<DiskRowSet>>> OpenOutputs(
      const std::vector<RowSetMetadata>& metas);
  // Picks DiskRowSets not busy with another op and marks them busy.
  std::vector<std::shared_ptr<DiskRowSet>> ReserveRowSets(
      const std::vector<std::shared_ptr<DiskRowSet>>& candidates) ABSL_LOCKS_EXCLUDED(busy_mu_);
  void ReleaseRowSets(const std::vector<std::shared_ptr<DiskRowSet>>& rowsets)
      ABSL_LOCKS_EXCLUDED(busy_mu_);
  // The history mark: now - --tablet_history_max_age_sec, but never above the oldest timestamp
  // held only in memory (a row dropped by GC must never be resurrected by WAL replay).
  HybridTime AncientHistoryMark(const Components& c) const;
  // now - --tablet_history_max_age_sec (kMin while now is younger than that).
  HybridTime UncappedHistoryMark() const;
  // Raises history_gc_mark_ to `mark` (never lowers it). Every history GC calls it with the mark
  // it uses before anything it removes becomes unreachable to new scans.
  void RaiseHistoryGcMark(HybridTime mark);
  // NewIterator's check, run after the iterators pinned their stores (see tablet_history.cc).
  absl::Status CheckSnapshotIsExact(const MvccSnapshot& snap) const;
  MvccSnapshot CleanSnapshot() const;

  // OK while the tablet has not failed; else its failure, saying nothing more is persisted.
  absl::Status RefuseIfFailed() const ABSL_LOCKS_EXCLUDED(failure_mu_);
  // Writes the superblock for the current components; `orphans` are blocks just unreferenced,
  // deleted once the superblock is durable.
  absl::Status PersistSuperBlock(std::vector<BlockId> orphans) ABSL_LOCKS_EXCLUDED(metadata_mu_);
  int64_t NextRowSetId();

  // The bytes the in-memory stores hold; reported to the memory budget after each write.
  static size_t InMemoryBytes(const Components& c);
  void ReportMemory(const Components& c);
  std::vector<CompactionCandidate> CompactionCandidates(
      const std::vector<std::shared_ptr<DiskRowSet>>& rowsets) const;

  const TabletOptions options_;
  const std::string tablet_id_;
  std::unique_ptr<MemoryBudget::Consumer> memory_consumer_;
  MvccManager mvcc_;

  mutable absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(components_mu_);
  HybridTime last_write_ts_ ABSL_GUARDED_BY(write_mu_) = HybridTime::kMin;
  std::string scratch_row_ ABSL_GUARDED_BY(write_mu_);
  std::string scratch_changes_ ABSL_GUARDED_BY(write_mu_);
  std::vector<int> candidates_ ABSL_GUARDED_BY(write_mu_);
  // Replay decisions of the op being applied (ReplayFindsOpReflected), by encoded key.
  absl::flat_hash_map<std::string, bool> replay_decisions_ ABSL_GUARDED_BY(write_mu_);

  mutable absl::Mutex components_mu_;
  std::shared_ptr<const Components> components_ ABSL_GUARDED_BY(components_mu_);

  absl::Mutex flush_mu_ ABSL_ACQUIRED_BEFORE(write_mu_);  // One MRS flush at a time.
  mutable absl::Mutex failure_mu_;                        // A leaf lock.
  absl::Status failure_ ABSL_GUARDED_BY(failure_mu_);
  mutable absl::Mutex busy_mu_;
  absl::flat_hash_set<int64_t> busy_ ABSL_GUARDED_BY(busy_mu_);
  uint64_t busy_releases_ ABSL_GUARDED_BY(busy_mu_) = 0;

  absl::Mutex metadata_mu_;
  int64_t superblock_version_ ABSL_GUARDED_BY(metadata_mu_) = 0;
  std::vector<BlockId> pending_orphans_ ABSL_GUARDED_BY(metadata_mu_);
  std::function<absl::Status(int64_t)> before_superblock_write_ ABSL_GUARDED_BY(metadata_mu_);

  std::atomic<int64_t> next_rowset_id_{0};
  std::atomic<int64_t> next_mrs_id_{0};
  std::atomic<int64_t> last_applied_op_index_{0};
  std::atomic<int64_t> persisted_durable_op_index_{0};  // Raised after each superblock write.
  std::atomic<uint64_t> last_applied_ts_{0};
  std::atomic<int64_t> flushes_{0};
  std::atomic<int64_t> compactions_{0};
  // Raw HybridTime; only raised (RaiseHistoryGcMark, a CAS loop). An atomic is enough: it is
  // stored before the GC publishes its removal (under another lock) and loaded by scans after
  // they pinned stores, so a scan that misses removed history sees the mark that covers it.
  std::atomic<uint64_t> history_gc_mark_{0};
};

}  // namespace basalt
