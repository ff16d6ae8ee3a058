#pragma once

// RowState: one row being rewritten by a flush or compaction (docs/tablet.md "Flush and
// compaction").
//
// Holds a row of a Schema in its row layout (cells at Schema::column_offset, then a null bitmap;
// variable-length cells point into the RowState's own arena) plus whether the row exists. A
// compaction loads a row's base values, then applies the REDO mutations its snapshot contains,
// asking for each mutation's inverse: the UNDO that turns the new state back into the old one.
//
// Mutations are RowChangeLists; columns they name that the schema lacks (dropped since) are
// ignored, so old deltas apply cleanly to rows of a newer schema. Not thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/arena.h"
#include "common/column_block.h"
#include "common/schema.h"

namespace basalt {

class RowState {
 public:
  // `schema` is borrowed and must outlive this object.
  explicit RowState(const Schema* schema);
  RowState(const RowState&) = delete;
  RowState& operator=(const RowState&) = delete;

  const Schema& schema() const { return *schema_; }
  const uint8_t* row_data() const { return row_.data(); }
  const uint8_t* null_bitmap() const { return row_.data() + schema_->fixed_row_size(); }
  bool live() const { return live_; }

  // Loads row `row` of `blocks` (one per schema column, in schema order): a live row.
  void LoadFromBlocks(absl::Span<const ColumnBlock* const> blocks, size_t row);
  // Loads a row given in `source`'s layout, matching columns by id; columns `source` lacks get
  // their default (or NULL). `null_bitmap` may be nullptr. A live row. The column matching is
  // kept for the next call with the same `source` object: REQUIRES that a Schema passed here
  // stays alive (unchanged) while this RowState may be handed it again (a flush's MemRowSet).
  void LoadFromRow(const Schema& source, const uint8_t* row_data, const uint8_t* null_bitmap);

  // Loads a dead row with the key `encoded_key` (key_encoder.h) and default non-key values; a
  // REINSERT then brings it to life. DATA_LOSS / INVALID_ARGUMENT for a malformed key.
  absl::Status LoadKey(std::string_view encoded_key);

  // Applies a RowChangeList: UPDATE sets columns, DELETE makes the row dead, REINSERT makes it
  // live with the given non-key values (columns it lacks get their default). If `inverse` is not
  // null it receives the change list that undoes this one on the new state: UPDATE of the old
  // values; REINSERT of the old row for a DELETE or REINSERT of a live row; DELETE for a
  // REINSERT of a dead row; empty when nothing needs undoing (an UPDATE of dropped columns only,
  // a DELETE of a dead row). DATA_LOSS for malformed bytes, a value that does not fit its column,
  // or an UPDATE of a dead row.
  absl::Status Apply(std::string_view changes, std::string* inverse);

  // Writes column `idx` of this row into row `row` of `block` (cell and null bit); string bytes
  // are copied into block->arena (REQUIRES: set for variable-length columns), so the block stays
  // valid after this RowState moves on.
  void CopyCellTo(int idx, ColumnBlock* block, size_t row) const;

 private:
  uint8_t* mutable_cell(int idx) { return row_.data() + schema_->column_offset(idx); }
  const uint8_t* cell(int idx) const { return row_.data() + schema_->column_offset(idx); }
  bool is_null(int idx) const;
  void SetNull(int idx, bool is_null);
  // Sets column `idx` from a cell in row-buffer form (nullptr: NULL), copying string bytes.
  void SetCell(int idx, const void* cell);
  void SetDefault(int idx);
  // Resets the arena when it has grown past what one row needs.
  void ResetStorage();
  absl::Status ApplyUpdate(std::string_view changes, bool reinsert, std::string* inverse);

  const Schema* const schema_;
  std::vector<uint8_t> row_;    // fixed_row_size bytes, then the null bitmap.
  std::vector<int> id_to_idx_;  // Column id → index in schema_, -1 if absent.
  // LoadFromRow's column matching: index in *matched_source_ of each column of schema_, or -1.
  const Schema* matched_source_ = nullptr;
  std::vector<int> source_idx_;
  Arena arena_;
  bool live_ = true;
};

}  // namespace basalt
