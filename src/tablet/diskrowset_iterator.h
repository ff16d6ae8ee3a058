#pragma once

// DiskRowSetIterator: the scan of one DiskRowSet (docs/tablet.md "DiskRowSet", "Scans").
//
// Reads the projection's columns from the rowset's column files (matched by column id; columns
// the rowset lacks read as their default, or NULL) over the ordinal range the key index gives for
// spec.range, in chunks of at most max_rows ordinals. Per chunk:
//   1. collect the chunk's UNDO and REDO deltas from the StoreSet taken at Init (only stores that
//      can matter to the snapshot);
//   2. if no delta touches a predicate column (an UPDATE of it or a REINSERT), evaluate the
//      predicates inside the column files (CFileIterator::ScanWithPredicate: zone maps skip
//      pages, DICT pages are evaluated on codes) into a selection bitmap; a chunk with nothing
//      selected costs no further decoding;
//   3. decode the remaining columns; with deltas, apply them (delta_applier.h), which also clears
//      the rows that do not exist at the snapshot, and evaluate the predicates on the result if
//      step 2 was skipped;
//   4. copy the selected rows densely to the caller's blocks; when every row is selected and no
//      delta applies, columns are decoded straight into the caller's blocks with no copy.
// A base iterator (no snapshot) returns every base row with no deltas and no filtering.
//
// Variable-length cells point into pinned column-file pages, delta memory or this iterator's
// arenas, valid until the next NextBlock call; a batch with variable-length columns therefore
// ends after the first chunk that produced rows.
//
// Lifecycle: Init() (idempotent; DiskRowSet::NewIterator already calls it), then NextBlock()
// while HasNext(). The rowset and the projection must outlive the iterator.
// Not thread-safe (one per thread).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cfile/cfile_reader.h"
#include "common/arena.h"
#include "common/column_block.h"
#include "common/column_predicate.h"
#include "common/datum.h"
#include "common/schema.h"
#include "tablet/delta_applier.h"
#include "tablet/delta_store.h"
#include "tablet/delta_tracker.h"
#include "tablet/mvcc.h"
#include "tablet/row_iterator.h"

namespace basalt {

class DiskRowSet;

// Counters of one iterator, for tests and scan metrics.
struct DiskRowSetIteratorStats {
  int64_t rows_examined = 0;       // Ordinals processed.
  int64_t chunks = 0;              // Chunks processed.
  int64_t chunks_with_deltas = 0;  // Chunks that had deltas to apply.
  // Chunks whose predicates were evaluated on decoded (and delta-applied) values because a delta
  // may change a predicate column, instead of inside the column files.
  int64_t chunks_evaluated_after_deltas = 0;
  int64_t chunks_all_selected = 0;  // Chunks decoded straight into the caller's blocks.
};

class DiskRowSetIterator : public RowBlockIterator {
 public:
  // `snap` nullopt makes a base iterator (see the file comment; `spec` must then be empty).
  // `rowset` and `projection` are borrowed and must outlive the iterator.
  DiskRowSetIterator(const DiskRowSet* rowset, const Schema* projection,
                     std::optional<MvccSnapshot> snap, ScanSpec spec);
  ~DiskRowSetIterator() override;

  // INVALID_ARGUMENT when a projected column the rowset lacks has neither a default nor
  // nullability, a column's type differs from the rowset's (or the rowset's is nullable and the
  // projection's is not), or a predicate names no projected column or has another type;
  // DATA_LOSS / I/O errors from the key index. A second call does nothing.
  absl::Status Init() override;
  bool HasNext() const override { return initialized_ && next_ < end_; }
  // See RowBlockIterator. INVALID_ARGUMENT when `blocks` do not fit the projection;
  // FAILED_PRECONDITION before Init(); DATA_LOSS for corrupt pages or deltas.
  absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks, size_t max_rows) override;

  const DiskRowSetIteratorStats& stats() const { return stats_; }
  // The file-level stats summed over the projected columns' iterators.
  CFileIteratorStats file_stats() const;

 private:
  // One projected column.
  struct Column {
    ColumnId id = 0;
    size_t cell_size = 0;
    bool var_len = false;
    const CFileReader* reader = nullptr;  // nullptr: the rowset lacks the column.
    std::unique_ptr<CFileIterator> iter;
    uint64_t iter_pos = 0;  // The ordinal `iter` is positioned at.
    Datum default_value;    // reader == nullptr: the value read (NULL when is_null()).
    std::optional<ColumnPredicate> predicate;  // Every predicate on the column, merged.
    bool default_matches = true;               // reader == nullptr: predicate on the default.
    // Chunk rows (always with a null bitmap; its arena also takes PREFIX bytes of direct
    // decodes). `decoded`: holds the current chunk's rows.
    std::unique_ptr<ColumnBlockBuffer> scratch;
    bool decoded = false;
  };

  absl::Status InitColumn(int idx);
  absl::Status InitPredicates();
  void InitStores();
  // Whether some predicate rules out every row of the rowset at the file level.
  bool PrunedByFileStats() const;

  // Processes a chunk of at most `span` ordinals from next_ into rows [out, out + room) of
  // `blocks`; returns the rows written and sets *consumed to the chunk's ordinals.
  absl::StatusOr<size_t> ProcessChunk(size_t span, size_t room,
                                      absl::Span<ColumnBlock* const> blocks, size_t out,
                                      size_t* consumed);
  // Sizes the scratch blocks for `span` rows and resets per-chunk state.
  void PrepareChunk(size_t span, size_t out);
  // Evaluates every predicate inside the files over `span` rows into sel_. Returns the chunk's
  // length: 0 if nothing is selected, else `span`, or less so that at most `room` rows are
  // selected.
  absl::StatusOr<size_t> PushPredicates(rowid_t start, size_t span, size_t room);
  // Writes the chunk's selected rows (sel_ over k rows) to rows [out, ...) of `blocks`; returns
  // how many. With `may_decode_direct` and every row selected, decodes straight into `blocks`.
  absl::StatusOr<size_t> EmitRows(rowid_t start, size_t k, absl::Span<ColumnBlock* const> blocks,
                                  size_t out, bool may_decode_direct);
  // Drops the collected deltas of rows >= end.
  void TruncateDeltas(rowid_t end);
  absl::Status CollectDeltas(rowid_t start, size_t k);
  // Evaluates column j's predicate inside its file into sel_ (ScanWithPredicate).
  absl::Status PushPredicate(Column* c, rowid_t start, size_t k);
  // Decodes the chunk into the scratch blocks; when `apply`, applies its deltas and narrows sel_
  // to the live rows; when `evaluate`, narrows sel_ to the rows matching every predicate.
  absl::Status ApplyAndEvaluate(rowid_t start, size_t k, bool apply, bool evaluate);
  // Decodes the chunk's k rows of `c` into its scratch block (once per chunk).
  absl::Status DecodeToScratch(Column* c, rowid_t start, size_t k);
  // Decodes the chunk's k rows of `c` into rows [out, out + k) of `dst`.
  absl::Status DecodeDirect(Column* c, rowid_t start, size_t k, ColumnBlock* dst, size_t out);
  absl::Status ScanColumn(Column* c, rowid_t start, size_t k, ColumnBlock* dst);
  absl::Status SeekColumn(Column* c, rowid_t start);
  // Writes c's default (or NULL) to rows [off, off + n) of `dst`.
  static void FillDefault(const Column& c, ColumnBlock* dst, size_t off, size_t n);
  void EnsureScratch(size_t k);
  bool AnySelected(size_t k) const;
  absl::Status ShortRead(const Column& c, size_t got, size_t want) const;

  const DiskRowSet* const rowset_;
  const Schema* const projection_;
  const std::optional<MvccSnapshot> snap_;
  const ScanSpec spec_;

  bool initialized_ = false;
  bool has_var_len_ = false;
  rowid_t next_ = 0;  // The next ordinal to process.
  rowid_t end_ = 0;   // One past the last ordinal of the scan.
  std::vector<Column> cols_;
  std::vector<int> pred_cols_;      // Indexes of columns with a predicate.
  std::vector<ColumnId> pred_ids_;  // Their ids.
  // The delta stores that can matter to the snapshot (see InitStores), pinned for the scan.
  DeltaTracker::StoreSet stores_;
  std::optional<DeltaApplier> applier_;  // Snapshot scans only.

  // Per-chunk working memory.
  size_t scratch_capacity_ = 0;
  std::vector<ColumnBlock*> scratch_blocks_;
  std::vector<DeltaEntry> undos_;
  std::vector<DeltaEntry> redos_;
  Arena delta_arena_;
  std::vector<uint8_t> sel_;    // Selected rows of the chunk.
  std::vector<uint8_t> live_;   // Rows that exist at the snapshot.
  std::vector<uint32_t> rows_;  // Indexes of the selected rows.
  DiskRowSetIteratorStats stats_;
};

}  // namespace basalt
