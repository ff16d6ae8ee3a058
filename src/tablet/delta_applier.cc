#include "tablet/delta_applier.h"

#include <algorithm>
#include <cstring>

#include "common/bitmap.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

DeltaApplier::DeltaApplier(const Schema* projection, absl::Span<const ColumnId> key_column_ids)
    : projection_(projection) {
  ColumnId max_id = 0;
  for (int i = 0; i < projection->num_columns(); ++i) {
    max_id = std::max(max_id, projection->column_id(i));
  }
  by_id_.assign(projection->num_columns() == 0 ? 0 : size_t{max_id} + 1, -1);
  for (int i = 0; i < projection->num_columns(); ++i) {
    const ColumnSchema& col = projection->column(i);
    const ColumnId id = projection->column_id(i);
    const bool is_key =
        projection->is_key_column(i) ||
        std::find(key_column_ids.begin(), key_column_ids.end(), id) != key_column_ids.end();
    const std::optional<Datum>& def = col.default_value();
    columns_.push_back(Column{i, col.type_info().size(), col.type_info().is_variable_length(),
                              col.is_nullable(), is_key,
                              def.has_value() && !def->is_null() ? def->cell() : nullptr});
    by_id_[id] = i;
  }
}

absl::Status DeltaApplier::SetValue(const Column& c, const ColumnUpdate& u, ColumnBlock* block,
                                    size_t out) const {
  if (u.is_null) {
    if (!c.nullable) return absl::DataLossError("NULL for a NOT NULL column");
    block->SetNull(out, true);
    return absl::OkStatus();
  }
  if (c.is_variable_length) {
    std::memcpy(block->cell(out), &u.value, sizeof(u.value));
  } else {
    if (u.value.size() != c.cell_size) {
      return absl::DataLossError(StrCat("value of ", u.value.size(), " bytes for a column of ",
                                        c.cell_size, "-byte cells"));
    }
    std::memcpy(block->cell(out), u.value.data(), c.cell_size);
  }
  if (c.nullable) block->SetNull(out, false);
  return absl::OkStatus();
}

void DeltaApplier::ResetToDefaults(absl::Span<ColumnBlock* const> blocks, size_t out) const {
  for (const Column& c : columns_) {
    if (c.is_key) continue;
    ColumnBlock* b = blocks[c.index];
    if (c.default_cell != nullptr) {
      std::memcpy(b->cell(out), c.default_cell, c.cell_size);
      if (c.nullable) b->SetNull(out, false);
    } else if (c.nullable) {
      b->SetNull(out, true);
    }
  }
}

absl::Status DeltaApplier::ApplyEntry(const DeltaEntry& e, bool is_redo,
                                      absl::Span<ColumnBlock* const> blocks, size_t out,
                                      uint8_t* live) const {
  RowChangeListDecoder dec(e.changes);
  BASALT_RETURN_IF_ERROR(dec.Init());
  if (dec.is_delete()) {
    BitmapClear(live, out);
    return absl::OkStatus();
  }
  if (dec.is_reinsert()) {
    BitmapSet(live, out);
    if (is_redo) ResetToDefaults(blocks, out);
  }
  ColumnUpdate u;
  while (dec.HasNext()) {
    BASALT_RETURN_IF_ERROR(dec.ReadNext(&u));
    const Column* c = Find(u.column_id);
    if (c == nullptr) continue;
    if (c->is_key) return absl::DataLossError(StrCat("key column id ", u.column_id, " changed"));
    BASALT_RETURN_IF_ERROR_PREPEND(SetValue(*c, u, blocks[c->index], out),
                                   StrCat("column ", projection_->column(c->index).name()));
  }
  return absl::OkStatus();
}

namespace {

// Checks that entries[i] is in order and within the rows of the batch.
absl::Status CheckEntry(absl::Span<const DeltaEntry> entries, size_t i, rowid_t start, size_t n) {
  const DeltaKey& k = entries[i].key;
  if (k.row < start || k.row - start >= n) {
    return absl::InvalidArgumentError(
        StrCat("delta of row ", k.row, " outside the batch [", start, ", +", n, ")"));
  }
  if (i > 0 && k < entries[i - 1].key) {
    return absl::InvalidArgumentError(StrCat("deltas out of order at row ", k.row));
  }
  return absl::OkStatus();
}

absl::Status EntryError(const absl::Status& s, const DeltaEntry& e, DeltaType type) {
  return PrependToStatus(
      s, StrCat(DeltaTypeName(type), " of row ", e.key.row, " at ", e.key.ts.ToString()));
}

}  // namespace

absl::Status DeltaApplier::Apply(const MvccSnapshot& snap, rowid_t start, size_t n,
                                 absl::Span<const DeltaEntry> undos,
                                 absl::Span<const DeltaEntry> redos,
                                 absl::Span<ColumnBlock* const> blocks, uint8_t* live) const {
  if (blocks.size() != columns_.size()) {
    return absl::InvalidArgumentError(
        StrCat(blocks.size(), " column blocks for ", columns_.size(), " projected columns"));
  }
  size_t u = 0;
  size_t r = 0;
  while (u < undos.size() || r < redos.size()) {
    // The next row with deltas; its UNDOs go first (newest first), then its REDOs.
    const rowid_t row = std::min(u < undos.size() ? undos[u].key.row : UINT32_MAX,
                                 r < redos.size() ? redos[r].key.row : UINT32_MAX);
    size_t u_end = u;
    for (; u_end < undos.size() && undos[u_end].key.row == row; ++u_end) {
      BASALT_RETURN_IF_ERROR(CheckEntry(undos, u_end, start, n));
    }
    size_t r_end = r;
    for (; r_end < redos.size() && redos[r_end].key.row == row; ++r_end) {
      BASALT_RETURN_IF_ERROR(CheckEntry(redos, r_end, start, n));
    }
    const size_t out = row - start;
    for (size_t i = u_end; i > u; --i) {
      const DeltaEntry& e = undos[i - 1];
      if (snap.IsCommitted(e.key.ts)) continue;
      absl::Status s = ApplyEntry(e, /*is_redo=*/false, blocks, out, live);
      if (!s.ok()) return EntryError(s, e, DeltaType::kUndo);
    }
    for (size_t i = r; i < r_end; ++i) {
      const DeltaEntry& e = redos[i];
      if (!snap.IsCommitted(e.key.ts)) continue;
      absl::Status s = ApplyEntry(e, /*is_redo=*/true, blocks, out, live);
      if (!s.ok()) return EntryError(s, e, DeltaType::kRedo);
    }
    u = u_end;
    r = r_end;
  }
  return absl::OkStatus();
}

absl::Status ApplyDeltas(const Schema& projection, const MvccSnapshot& snap, rowid_t start,
                         size_t n, absl::Span<const DeltaEntry> undos,
                         absl::Span<const DeltaEntry> redos, absl::Span<ColumnBlock* const> blocks,
                         uint8_t* live) {
  if (undos.empty() && redos.empty()) return absl::OkStatus();
  return DeltaApplier(&projection).Apply(snap, start, n, undos, redos, blocks, live);
}

bool AnyEntryTouches(absl::Span<const DeltaEntry> entries, absl::Span<const ColumnId> ids) {
  for (const DeltaEntry& e : entries) {
    RowChangeListDecoder dec(e.changes);
    if (!dec.Init().ok() || dec.is_reinsert()) return true;
    ColumnUpdate u;
    while (dec.HasNext()) {
      if (!dec.ReadNext(&u).ok()) return true;
      if (std::find(ids.begin(), ids.end(), u.column_id) != ids.end()) return true;
    }
  }
  return false;
}

bool AnyEntryAffects(absl::Span<const DeltaEntry> entries, const MvccSnapshot& snap,
                     DeltaType type) {
  const bool want_committed = type == DeltaType::kRedo;
  for (const DeltaEntry& e : entries) {
    if (snap.IsCommitted(e.key.ts) == want_committed) return true;
  }
  return false;
}

}  // namespace basalt
