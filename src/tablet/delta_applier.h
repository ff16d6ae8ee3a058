#pragma once

// Applying deltas to a batch of base rows read from a DiskRowSet (docs/tablet.md "Deltas",
// "Applying deltas").
//
// A scan reads base values of rows [start, start + n) into column blocks, collects the delta
// entries of those rows (DeltaTracker::CollectMerged, one span of UNDOs and one of REDOs, each
// in DeltaKey order), and calls ApplyDeltas to turn the base values into the values at its MVCC
// snapshot. Per row:
//
//   1. UNDO entries whose timestamp the snapshot does NOT contain, newest first: UPDATE sets the
//      old values; DELETE means the row did not exist yet (clear its live bit); REINSERT means
//      the row existed (set the live bit) with the listed values.
//   2. REDO entries whose timestamp the snapshot contains, oldest first: UPDATE sets values;
//      DELETE clears the live bit; REINSERT sets the live bit and every non-key projected column:
//      the listed value, else the column's default, else NULL.
//
// Columns are matched by id; ids not in the projection (other columns, dropped columns) are
// skipped. Fixed-width values are copied into the cells; variable-length cells become
// string_views pointing into the change bytes, so the change bytes must outlive the blocks' use.
//
// A scan whose rows have no deltas skips ApplyDeltas altogether (both spans empty): the no-delta
// path costs nothing.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/column_block.h"
#include "common/schema.h"
#include "tablet/delta_store.h"
#include "tablet/mvcc.h"
#include "tablet/row_changelist.h"

namespace basalt {

// Applies deltas for one projection; build once per scan, use for every batch.
// Key columns are the projection's key columns (Schema::is_key_column) plus `key_column_ids`
// (for projections that hold key columns without leading with them); they are never changed.
// Const methods are thread-safe. The projection is borrowed and must outlive the applier (its
// defaults are what REINSERTs point string cells at).
class DeltaApplier {
 public:
  explicit DeltaApplier(const Schema* projection, absl::Span<const ColumnId> key_column_ids = {});

  // See the file comment. blocks[i] is projection column i with capacity >= n (and a null bitmap
  // if the column is nullable); rows [0, n) hold the base values of rows start..start + n - 1.
  // `live` is a bitmap of n bits (bit set = the row exists at the snapshot) that the caller
  // initializes, normally to all-set. Every entry's row must lie in [start, start + n) and each
  // span must be in DeltaKey order (INVALID_ARGUMENT otherwise). DATA_LOSS (naming the row and
  // timestamp) for a malformed change list, a value whose size does not fit the projected
  // type, a NULL for a NOT NULL column, or a key column in a change list. On error the blocks
  // and bitmap hold partial results.
  absl::Status Apply(const MvccSnapshot& snap, rowid_t start, size_t n,
                     absl::Span<const DeltaEntry> undos, absl::Span<const DeltaEntry> redos,
                     absl::Span<ColumnBlock* const> blocks, uint8_t* live) const;

 private:
  struct Column {
    int index;  // In the projection.
    size_t cell_size;
    bool is_variable_length;
    bool nullable;
    bool is_key;
    const void* default_cell;  // nullptr: NULL (or no default for a NOT NULL column).
  };
  absl::Status ApplyEntry(const DeltaEntry& e, bool is_redo, absl::Span<ColumnBlock* const> blocks,
                          size_t out, uint8_t* live) const;
  absl::Status SetValue(const Column& c, const ColumnUpdate& u, ColumnBlock* block,
                        size_t out) const;
  void ResetToDefaults(absl::Span<ColumnBlock* const> blocks, size_t out) const;
  const Column* Find(ColumnId id) const {
    return id < by_id_.size() && by_id_[id] >= 0 ? &columns_[by_id_[id]] : nullptr;
  }

  const Schema* const projection_;
  std::vector<Column> columns_;  // In projection order.
  std::vector<int> by_id_;       // Column id -> index into columns_, or -1.
};

// One-shot form of DeltaApplier(&projection).Apply(...).
absl::Status ApplyDeltas(const Schema& projection, const MvccSnapshot& snap, rowid_t start,
                         size_t n, absl::Span<const DeltaEntry> undos,
                         absl::Span<const DeltaEntry> redos, absl::Span<ColumnBlock* const> blocks,
                         uint8_t* live);

// Whether any entry is a REINSERT or an UPDATE of one of `ids`: if not, columns `ids` need no
// delta application (a scan can then evaluate predicates on those columns' base values). A
// malformed entry counts as touching (the apply reports it).
bool AnyEntryTouches(absl::Span<const DeltaEntry> entries, absl::Span<const ColumnId> ids);

// Whether any entry would be applied at `snap`: for kRedo an entry whose timestamp `snap`
// contains, for kUndo one whose timestamp it does not contain.
bool AnyEntryAffects(absl::Span<const DeltaEntry> entries, const MvccSnapshot& snap,
                     DeltaType type);

}  // namespace basalt
