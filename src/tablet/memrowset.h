#pragma once

// MemRowSet (MRS): the in-memory rowset that takes new rows (DESIGN.md section 4; docs/tablet.md
// "MemRowSet").
//
// Rows are kept in a ConcurrentBTree keyed by encoded primary key (common/key_encoder.h). Each
// row (MRSRow) lives in the MRS arena in the Schema's row layout (cells at column_offset, then a
// null bitmap; variable-length cells point at arena copies) and carries its insert timestamp and
// a singly linked REDO chain of Mutations (RowChangeList bytes + timestamp) in apply order. A
// deleted row stays in the tree; inserting its key again appends a REINSERT mutation.
//
// Publication: a row is fully written before the tree publishes it (release store); a mutation
// is fully written before it is linked (release store on the previous link). Row bytes, keys and
// mutations are immutable once published and never freed before the MRS, so readers walk them
// without locks and the cells a scan hands out (including string bytes) stay valid while the
// MRS lives.
//
// Writer protocol: the tablet serializes all mutators (Insert, MutateRow, Freeze), applying ops
// in Raft order inside MvccManager StartOp/FinishOp. Readers (iterators, CheckRowPresent, Find,
// the accessors) run concurrently from any thread and never block the writer.
//
// Flush protocol: Freeze() makes Insert of a new key fail with FAILED_PRECONDITION; MutateRow
// and reinserts of deleted rows still append to the chains of existing rows. A flusher (1) freezes
// the MRS and routes new inserts to a new MRS, (2) walks all rows with NewRawIterator() and writes
// base data plus deltas from each chain, remembering for each row the last Mutation it consumed,
// (3) with writers to this MRS blocked, walks the chains again from those points and carries the
// newer mutations into the new DiskRowSet's delta store, then swaps. Chains are append-only, so
// step 3 sees every mutation.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/arena.h"
#include "common/column_block.h"
#include "common/column_predicate.h"
#include "common/datum.h"
#include "common/hybrid_clock.h"
#include "common/schema.h"
#include "tablet/concurrent_btree.h"
#include "tablet/mvcc.h"
#include "tablet/row_iterator.h"

namespace basalt {

// One REDO mutation of an MRS row. Immutable after it is linked, except that the writer sets
// `next` once when the following mutation is appended.
class Mutation {
 public:
  HybridTime timestamp() const { return ts_; }
  // The RowChangeList bytes (row_changelist.h).
  std::string_view changelist() const { return {reinterpret_cast<const char*>(this + 1), size_}; }
  // The next (later-applied) mutation, or nullptr. Thread-safe.
  const Mutation* next() const { return next_.load(std::memory_order_acquire); }

 private:
  friend class MemRowSet;
  Mutation(HybridTime ts, uint32_t size) : ts_(ts), size_(size) {}
  HybridTime ts_;
  std::atomic<const Mutation*> next_{nullptr};
  uint32_t size_;
};

// One MRS row: a 24-byte header followed, in the same arena allocation, by the row data (the
// MRS schema's layout, aligned to kRowAlignment when a cell needs it, else to 8), its null bitmap
// (only when the schema has a nullable column) and the encoded key. One allocation per row keeps
// the MRS compact: memory, not CPU, bounds insert speed (every byte is a first touch of fresh
// memory, dear on a VM; docs/performance.md). Accessors are thread-safe.
class MRSRow {
 public:
  std::string_view key() const {
    return {reinterpret_cast<const char*>(this + 1) + key_offset_, key_size_};
  }
  HybridTime insert_timestamp() const { return insert_ts_; }
  // The row as inserted, in the MRS schema's layout; null_bitmap() follows it.
  const uint8_t* row_data() const { return reinterpret_cast<const uint8_t*>(this + 1); }
  // All zeros when the schema has no nullable column (no bitmap is stored).
  const uint8_t* null_bitmap() const {
    return bitmap_offset_ == kNoBitmap ? kNoNulls : row_data() + bitmap_offset_;
  }
  // The first REDO mutation, or nullptr.
  const Mutation* redo_head() const { return head_.load(std::memory_order_acquire); }

 private:
  friend class MemRowSet;
  MRSRow(HybridTime ts, uint16_t bitmap_offset, uint16_t key_offset, uint32_t key_size)
      : insert_ts_(ts),
        bitmap_offset_(bitmap_offset),
        key_offset_(key_offset),
        key_size_(key_size) {}
  uint8_t* mutable_row_data() { return reinterpret_cast<uint8_t*>(this + 1); }

  static constexpr uint16_t kNoBitmap = UINT16_MAX;
  static const uint8_t kNoNulls[(kMaxColumns + 7) / 8];

  const HybridTime insert_ts_;
  // The chain's tail is not kept here (8 bytes on every row): MemRowSet::tails_ has it for the
  // rows that have mutations.
  std::atomic<const Mutation*> head_{nullptr};
  // Offsets from row_data(): the null bitmap (= fixed_row_size; kNoBitmap: none) and the key.
  const uint16_t bitmap_offset_;
  const uint16_t key_offset_;
  const uint32_t key_size_;
};
// Row data is 8-byte aligned after the header; MemRowSet::NewRow places the header 8 bytes into
// a 16-byte aligned block when the schema needs 16 (kRowAlignment).
static_assert(sizeof(MRSRow) == 24 && alignof(MRSRow) == 8, "see MemRowSet::NewRow");

using MRSTree = ConcurrentBTree<MRSRow>;

class MemRowSetIterator;

// See the file comment. Thread safety: mutators are serialized by the caller; everything else
// is thread-safe.
class MemRowSet {
 public:
  // `schema` is copied. REQUIRES: schema has key columns.
  MemRowSet(int64_t mrs_id, const Schema& schema);
  MemRowSet(const MemRowSet&) = delete;
  MemRowSet& operator=(const MemRowSet&) = delete;

  // Inserts a row given in the MRS schema's layout (every column set; unset columns already
  // resolved to defaults by the caller) with its null bitmap (may be nullptr without nullable
  // columns). Variable-length cells are copied. If the key exists as a deleted row, appends a
  // REINSERT mutation instead. ALREADY_EXISTS if a live row (as of the latest mutation) has the
  // key; FAILED_PRECONDITION when frozen, unless the key is a deleted row of this MRS (reinserted
  // in place); INVALID_ARGUMENT for a NULL in a NOT NULL column.
  absl::Status Insert(HybridTime ts, const uint8_t* row_data, const uint8_t* null_bitmap);
  // As above, with the row's key already encoded by the caller (the tablet encodes it to find
  // the row's rowset). REQUIRES: key == EncodeKey(schema(), row_data).
  absl::Status Insert(HybridTime ts, const uint8_t* row_data, const uint8_t* null_bitmap,
                      std::string_view key);

  // Appends an UPDATE or DELETE RowChangeList to the row with `key`. NOT_FOUND if the row is
  // absent or deleted (as of the latest mutation); INVALID_ARGUMENT if `changelist` is malformed,
  // a REINSERT, or names a column missing from (or a key column of) the MRS schema. Accepted
  // when frozen (see the flush protocol).
  absl::Status MutateRow(HybridTime ts, std::string_view key, std::string_view changelist);

  // Whether a live row with `key` is visible in `snap`.
  bool CheckRowPresent(std::string_view key, const MvccSnapshot& snap) const;
  // Whether a live row with `key` exists as of the latest mutation.
  bool CheckRowPresentLatest(std::string_view key) const;
  // The row with `key` (live or deleted), or nullptr.
  const MRSRow* FindRow(std::string_view key) const { return tree_.Find(key); }

  // The greatest key in the MRS (live or deleted), or "" when empty. Writer only (or after
  // Freeze(), when no key can be added).
  std::string MaxKey() const {
    const MRSRow* row = tree_.LastEntryForWriter();
    return row == nullptr ? std::string() : std::string(row->key());
  }
  // After Freeze(), Insert fails with FAILED_PRECONDITION. Called by the writer.
  void Freeze() { frozen_.store(true, std::memory_order_release); }
  bool frozen() const { return frozen_.load(std::memory_order_acquire); }

  int64_t id() const { return id_; }
  const Schema& schema() const { return schema_; }
  // Bytes held by the arena (rows, keys, mutations, tree nodes) and the chains' tails.
  size_t memory_footprint() const { return footprint_.load(std::memory_order_relaxed); }
  // Rows in the tree, including deleted ones.
  int64_t entry_count() const { return tree_.num_entries(); }
  // Earliest / latest op timestamp applied (kInvalid while empty); for flush scheduling.
  HybridTime min_timestamp() const { return HybridTime(min_ts_.load(std::memory_order_relaxed)); }
  const MRSTree& tree() const { return tree_; }

  // A scan of `projection` at `snap` over `range` (see MemRowSetIterator). `projection` is
  // borrowed and must outlive the iterator, as must this MRS.
  std::unique_ptr<MemRowSetIterator> NewIterator(const Schema* projection, MvccSnapshot snap,
                                                 EncodedKeyRange range = {}) const;
  // Every row in key order, deleted or not, with full history (for flush).
  MRSTree::Iterator NewRawIterator() const { return MRSTree::Iterator(&tree_); }

  // Whether `row` is deleted after applying the mutations `snap` contains (or all mutations
  // when `snap` is null), and whether its insert is visible at all.
  static bool IsLive(const MRSRow* row, const MvccSnapshot* snap);

 private:
  MRSRow* NewRow(HybridTime ts, std::string_view key, const uint8_t* row_data,
                 const uint8_t* null_bitmap);
  // Makes the variable-length cells of a freshly copied row point at arena copies, or, for key
  // columns, into `key` (the row's copy of its encoded key).
  void CopyIndirectCells(uint8_t* data, std::string_view key);
  void AppendMutation(MRSRow* row, HybridTime ts, std::string_view changelist);
  absl::Status ValidateMutation(std::string_view changelist) const;
  void NoteWrite(HybridTime ts);

  // Constant after construction.
  const int64_t id_;
  const Schema schema_;
  const size_t null_bitmap_size_;  // 0 when no column is nullable.
  const size_t row_alignment_;     // kRowAlignment if a cell needs it, else alignof(MRSRow).
  std::vector<int> varlen_columns_;

  // Writer-only (the arena is not thread-safe; only the writer allocates).
  Arena arena_;
  MRSTree tree_;
  // The last mutation of each row that has any (the chains' tails, for appending).
  absl::flat_hash_map<const MRSRow*, Mutation*> tails_;
  std::string scratch_;

  // Readable by anyone; atomics because they are single words written by the writer only.
  std::atomic<bool> frozen_{false};
  std::atomic<size_t> footprint_{0};
  std::atomic<uint64_t> min_ts_{HybridTime::kInvalid.value()};
};

// A snapshot scan of a MemRowSet producing columnar batches.
//
// Columns of the projection are matched to the MRS schema by column id. A projected column the
// MRS does not have (added later) reads as its default, or NULL if it is nullable without a
// default; INVALID_ARGUMENT from Init() if it has neither or if a matched column's type differs.
// Rows whose insert is not in the snapshot, or that are deleted as of the snapshot, are skipped;
// updates in the snapshot are applied. Rows come in key order within [range.lower, range.upper).
//
// Lifecycle: Init() once, then NextBlock() while HasNext(). Not thread-safe (one per thread).
class MemRowSetIterator : public RowBlockIterator {
 public:
  MemRowSetIterator(const MemRowSet* mrs, const Schema* projection, MvccSnapshot snap,
                    EncodedKeyRange range);

  absl::Status Init() override;
  bool HasNext() const override { return !done_; }

  // Fills rows [0, n) of `blocks` (one per projected column, in projection order, each with
  // capacity >= max_rows and a null bitmap if the column is nullable) and returns n (0 < n <=
  // max_rows unless the scan ended). Variable-length cells point into the MRS or the
  // projection's defaults. INVALID_ARGUMENT for a wrong number of blocks, a block of the wrong
  // type or too small, or a nullable column without a null bitmap.
  absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks, size_t max_rows) override;

  int64_t rows_examined() const { return rows_examined_; }

  // Rows the scan may skip: a row with no mutation at all whose base cells fail one of
  // `predicates` is not returned (its cells are never copied). Rows with mutations, and
  // predicates on columns the MRS lacks, are left to the caller's own filter (FilterIterator),
  // which must still evaluate every predicate. Call before Init(). A selective predicate over
  // fresh, unflushed data (a time series query right after the load) then copies 1% of the rows
  // instead of all of them (docs/performance.md).
  void SetPrefilter(std::vector<ColumnPredicate> predicates) {
    prefilter_predicates_ = std::move(predicates);
  }

 private:
  struct ProjectedColumn {
    int mrs_idx;    // -1 when the MRS lacks the column.
    size_t offset;  // Cell offset in the MRS row.
    size_t cell_size;
    bool nullable;
    const void* default_cell;  // For mrs_idx == -1: the default, or nullptr for NULL.
  };
  absl::Status CheckBlocks(absl::Span<ColumnBlock* const> blocks, size_t max_rows) const;
  // Writes the row's state at the snapshot into output row `out`; false if not visible (or
  // dropped by the prefilter).
  bool ProjectRow(const MRSRow* row, absl::Span<ColumnBlock* const> blocks, size_t out);
  // Whether a row without mutations passes the prefilter on its base cells.
  bool PassesPrefilter(const MRSRow* row) const;
  // Asks for the cache lines of `row` that the scan reads first (header, prefilter cells).
  void Prefetch(const MRSRow* row) const;
  static constexpr size_t kPrefetchRows = 8;
  void CopyBaseRow(const MRSRow* row, absl::Span<ColumnBlock* const> blocks, size_t out);
  // Applies one UPDATE/REINSERT's columns to output row `out`.
  void ApplyChanges(std::string_view changelist, absl::Span<ColumnBlock* const> blocks, size_t out);

  const MemRowSet* mrs_;
  const Schema* projection_;
  const MvccSnapshot snap_;
  const EncodedKeyRange range_;
  std::vector<ProjectedColumn> cols_;
  std::vector<Datum> defaults_;  // Sized once in Init(); cols_ point into it.
  std::vector<ColumnPredicate> prefilter_predicates_;
  // The predicates of prefilter_predicates_ on columns the MRS has, with their cells.
  struct Prefilter {
    const ColumnPredicate* predicate;
    int mrs_idx;
    size_t offset;
  };
  std::vector<Prefilter> prefilter_;
  MRSTree::Iterator iter_;
  bool initialized_ = false;
  bool done_ = false;
  int64_t rows_examined_ = 0;
};

}  // namespace basalt
