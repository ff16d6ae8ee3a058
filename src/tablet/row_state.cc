#include "tablet/row_state.h"

#include <cstring>

#include <glog/logging.h>

#include "common/bitmap.h"
#include "common/datum.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/types.h"
#include "tablet/row_changelist.h"

namespace basalt {

RowState::RowState(const Schema* schema)
    : schema_(schema),
      row_(schema->fixed_row_size() + BitmapSize(schema->num_columns())),
      id_to_idx_(schema->next_column_id(), -1) {
  for (int i = 0; i < schema->num_columns(); ++i) {
    ColumnId id = schema->column_id(i);
    if (id >= id_to_idx_.size()) id_to_idx_.resize(id + 1, -1);
    id_to_idx_[id] = i;
  }
}

bool RowState::is_null(int idx) const { return BitmapTest(null_bitmap(), idx); }

void RowState::SetNull(int idx, bool is_null) {
  BitmapChange(row_.data() + schema_->fixed_row_size(), idx, is_null);
}

void RowState::SetCell(int idx, const void* cell) {
  SetNull(idx, cell == nullptr);
  const TypeInfo& info = schema_->column(idx).type_info();
  if (cell == nullptr) {
    std::memset(mutable_cell(idx), 0, info.size());
    return;
  }
  if (info.is_variable_length()) {
    std::string_view s;
    std::memcpy(&s, cell, sizeof(s));
    s = arena_.AddString(s);
    std::memcpy(mutable_cell(idx), &s, sizeof(s));
  } else {
    std::memcpy(mutable_cell(idx), cell, info.size());
  }
}

void RowState::SetDefault(int idx) {
  const std::optional<Datum>& def = schema_->column(idx).default_value();
  SetCell(idx, def.has_value() && !def->is_null() ? def->cell() : nullptr);
}

void RowState::ResetStorage() {
  // One row's strings are small; reusing the arena's first block keeps loads allocation-free.
  if (arena_.bytes_allocated() > (64 << 10)) arena_.Reset();
}

void RowState::LoadFromBlocks(absl::Span<const ColumnBlock* const> blocks, size_t row) {
  DCHECK_EQ(blocks.size(), static_cast<size_t>(schema_->num_columns()));
  ResetStorage();
  live_ = true;
  for (int i = 0; i < schema_->num_columns(); ++i) {
    const ColumnBlock* b = blocks[i];
    SetCell(i, b->is_null(row) ? nullptr : b->cell(row));
  }
}

void RowState::LoadFromRow(const Schema& source, const uint8_t* row_data,
                           const uint8_t* null_bitmap) {
  ResetStorage();
  live_ = true;
  if (matched_source_ != &source) {
    // Once per source schema, not per cell of every row (a flush loads millions of rows).
    source_idx_.resize(schema_->num_columns());
    for (int i = 0; i < schema_->num_columns(); ++i) {
      source_idx_[i] = source.find_column_by_id(schema_->column_id(i));
    }
    matched_source_ = &source;
  }
  for (int i = 0; i < schema_->num_columns(); ++i) {
    const int src = source_idx_[i];
    if (src < 0) {
      SetDefault(i);
      continue;
    }
    bool null = null_bitmap != nullptr && BitmapTest(null_bitmap, src);
    SetCell(i, null ? nullptr : row_data + source.column_offset(src));
  }
}

absl::Status RowState::LoadKey(std::string_view encoded_key) {
  ResetStorage();
  BASALT_ASSIGN_OR_RETURN(std::vector<Datum> key, DecodeKey(*schema_, encoded_key));
  for (int i = 0; i < schema_->num_key_columns(); ++i) SetCell(i, key[i].cell());
  for (int i = schema_->num_key_columns(); i < schema_->num_columns(); ++i) SetDefault(i);
  live_ = false;
  return absl::OkStatus();
}

void RowState::CopyCellTo(int idx, ColumnBlock* block, size_t row) const {
  bool null = is_null(idx);
  if (block->null_bitmap != nullptr) block->SetNull(row, null);
  if (!null && schema_->column(idx).type_info().is_variable_length()) {
    std::string_view s;
    std::memcpy(&s, cell(idx), sizeof(s));
    s = block->arena->AddString(s);
    std::memcpy(block->cell(row), &s, sizeof(s));
    return;
  }
  std::memcpy(block->cell(row), cell(idx), block->cell_size);
}

absl::Status RowState::Apply(std::string_view changes, std::string* inverse) {
  if (inverse != nullptr) inverse->clear();
  RowChangeListDecoder dec(changes);
  BASALT_RETURN_IF_ERROR(dec.Init());
  if (dec.is_update() && !live_) {
    return absl::DataLossError("UPDATE of a deleted row");
  }
  // The inverse depends on whether the row existed before: a DELETE or REINSERT of a live row
  // is undone by a REINSERT of its old values; a REINSERT of a dead row by a DELETE; a DELETE of
  // a dead row (a same-timestamp REINSERT + DELETE merged) needs no undo.
  if (inverse != nullptr && !dec.is_update()) {
    RowChangeListEncoder enc(inverse);
    if (live_) {
      enc.EncodeReinsert(*schema_, row_data(), null_bitmap());
    } else if (dec.is_reinsert()) {
      enc.SetToDelete();
    }
  }
  if (dec.is_delete()) {
    live_ = false;
    return absl::OkStatus();
  }
  return ApplyUpdate(changes, dec.is_reinsert(), inverse);
}

absl::Status RowState::ApplyUpdate(std::string_view changes, bool reinsert, std::string* inverse) {
  RowChangeListDecoder dec(changes);
  BASALT_RETURN_IF_ERROR(dec.Init());
  // The inverse of a REINSERT was written by Apply; an UPDATE's is built column by column.
  std::optional<RowChangeListEncoder> enc;
  if (inverse != nullptr && !reinsert) {
    enc.emplace(inverse);
    enc->SetToUpdate();
  }
  bool any_inverse = reinsert;
  if (reinsert) {
    // Columns the REINSERT does not name (added after it was written) read as their default.
    for (int i = schema_->num_key_columns(); i < schema_->num_columns(); ++i) SetDefault(i);
    live_ = true;
  }
  while (dec.HasNext()) {
    ColumnUpdate u;
    BASALT_RETURN_IF_ERROR(dec.ReadNext(&u));
    int idx = u.column_id < id_to_idx_.size() ? id_to_idx_[u.column_id] : -1;
    if (idx < 0) continue;  // Dropped since the mutation was written.
    if (idx < schema_->num_key_columns()) {
      return absl::DataLossError(StrCat("mutation changes key column ", u.column_id));
    }
    const ColumnSchema& col = schema_->column(idx);
    if (enc.has_value()) {
      enc->AddColumnUpdate(u.column_id, col.type(), is_null(idx) ? nullptr : cell(idx));
      any_inverse = true;
    }
    if (u.is_null) {
      SetCell(idx, nullptr);
      continue;
    }
    const TypeInfo& info = col.type_info();
    if (info.is_variable_length()) {
      SetCell(idx, &u.value);
    } else if (u.value.size() == info.size()) {
      SetCell(idx, u.value.data());
    } else {
      return absl::DataLossError(StrCat("value of ", u.value.size(), " bytes for column ",
                                        col.name(), " of ", info.size(), " bytes"));
    }
  }
  if (inverse != nullptr && !any_inverse) inverse->clear();
  return absl::OkStatus();
}

}  // namespace basalt
