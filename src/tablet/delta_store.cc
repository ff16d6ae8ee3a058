#include "tablet/delta_store.h"

#include <algorithm>

#include "common/coding.h"
#include "common/status_macros.h"
#include "tablet/row_changelist.h"

namespace basalt {

std::string_view DeltaTypeName(DeltaType type) {
  switch (type) {
    case DeltaType::kRedo:
      return "REDO";
    case DeltaType::kUndo:
      return "UNDO";
  }
  return "UNKNOWN";
}

absl::Status CheckRowChangeListFraming(std::string_view changes) {
  RowChangeListDecoder dec(changes);
  BASALT_RETURN_IF_ERROR(dec.Init());
  ColumnUpdate u;
  while (dec.HasNext()) BASALT_RETURN_IF_ERROR(dec.ReadNext(&u));
  return absl::OkStatus();
}

namespace {

void AppendColumnUpdate(const ColumnUpdate& u, std::string* out) {
  PutVarint32(out, u.column_id << 1 | (u.is_null ? 1 : 0));
  if (u.is_null) return;
  PutVarint32(out, static_cast<uint32_t>(u.value.size()));
  out->append(u.value);
}

// Appends the entries of `dec` whose column is not in `skip` (or all when skip is nullptr).
absl::Status AppendEntries(RowChangeListDecoder* dec, const std::vector<ColumnId>* skip,
                           std::vector<ColumnId>* ids, std::string* out) {
  ColumnUpdate u;
  while (dec->HasNext()) {
    BASALT_RETURN_IF_ERROR(dec->ReadNext(&u));
    if (skip != nullptr && std::find(skip->begin(), skip->end(), u.column_id) != skip->end()) {
      continue;
    }
    if (ids != nullptr) ids->push_back(u.column_id);
    AppendColumnUpdate(u, out);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MergeSameTimestampRedos(std::string_view older, std::string_view newer,
                                     std::string* out) {
  RowChangeListDecoder old_dec(older);
  RowChangeListDecoder new_dec(newer);
  BASALT_RETURN_IF_ERROR(old_dec.Init());
  BASALT_RETURN_IF_ERROR(new_dec.Init());
  out->clear();
  if (new_dec.is_delete()) {
    out->push_back(static_cast<char>(RowChangeType::kDelete));
    return absl::OkStatus();
  }
  if (new_dec.is_reinsert()) {
    // A REINSERT sets every column and leaves the row live, whatever came before it. (After an
    // UPDATE or REINSERT it comes from WAL replay re-applying an op the store already holds.)
    BASALT_RETURN_IF_ERROR(CheckRowChangeListFraming(newer));
    out->assign(newer);
    return absl::OkStatus();
  }
  if (old_dec.is_delete()) {
    return absl::InvalidArgumentError("UPDATE of a row deleted at the same timestamp");
  }
  // UPDATE or REINSERT, then UPDATE: the older entries the newer list does not override, then
  // the newer entries.
  std::string tail;
  std::vector<ColumnId> new_ids;
  BASALT_RETURN_IF_ERROR(AppendEntries(&new_dec, nullptr, &new_ids, &tail));
  out->push_back(older[0]);
  BASALT_RETURN_IF_ERROR(AppendEntries(&old_dec, &new_ids, nullptr, out));
  out->append(tail);
  return absl::OkStatus();
}

}  // namespace basalt
