#include "tablet/row_changelist.h"

#include <cstring>
#include <vector>

#include <glog/logging.h>

#include "common/bitmap.h"
#include "common/coding.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

// ---- Encoder ------------------------------------------------------------------------------------

void RowChangeListEncoder::SetType(RowChangeType type) {
  DCHECK(dst_->empty()) << "RowChangeListEncoder type set twice";
  dst_->push_back(static_cast<char>(type));
}

void RowChangeListEncoder::AddColumnUpdate(ColumnId id, DataType type, const void* cell) {
  DCHECK(!dst_->empty() && (*dst_)[0] != static_cast<char>(RowChangeType::kDelete));
  PutVarint32(dst_, (id << 1) | (cell == nullptr ? 1u : 0u));
  if (cell == nullptr) return;
  const TypeInfo& info = GetTypeInfo(type);
  if (info.is_variable_length()) {
    std::string_view s;
    std::memcpy(&s, cell, sizeof(s));
    PutLengthPrefixed(dst_, s);
  } else {
    PutLengthPrefixed(dst_, std::string_view(static_cast<const char*>(cell), info.size()));
  }
}

void RowChangeListEncoder::EncodeReinsert(const Schema& schema, const uint8_t* row_data,
                                          const uint8_t* null_bitmap) {
  SetToReinsert();
  for (int i = schema.num_key_columns(); i < schema.num_columns(); ++i) {
    bool is_null = null_bitmap != nullptr && BitmapTest(null_bitmap, i);
    AddColumnUpdate(schema.column_id(i), schema.column(i).type(),
                    is_null ? nullptr : row_data + schema.column_offset(i));
  }
}

// ---- Decoder ------------------------------------------------------------------------------------

namespace {

absl::Status Corrupt(std::string_view data, std::string_view rest, std::string_view what) {
  return absl::DataLossError(StrCat("corrupt row change list at byte ", data.size() - rest.size(),
                                    " of ", data.size(), ": ", what));
}

}  // namespace

absl::Status RowChangeListDecoder::Init() {
  if (data_.empty()) return Corrupt(data_, rest_, "empty");
  uint8_t t = static_cast<uint8_t>(data_[0]);
  if (t < 1 || t > 3) return Corrupt(data_, rest_, StrCat("unknown change type ", int{t}));
  type_ = static_cast<RowChangeType>(t);
  rest_ = data_.substr(1);
  if (is_delete() && !rest_.empty()) return Corrupt(data_, rest_, "DELETE with trailing bytes");
  if (is_update() && rest_.empty()) return Corrupt(data_, rest_, "UPDATE without columns");
  return absl::OkStatus();
}

absl::Status RowChangeListDecoder::ReadNext(ColumnUpdate* update) {
  uint32_t tag;
  if (!GetVarint32(&rest_, &tag)) return Corrupt(data_, rest_, "truncated column tag");
  update->column_id = tag >> 1;
  update->is_null = (tag & 1) != 0;
  update->value = {};
  if (update->is_null) return absl::OkStatus();
  uint32_t len;
  std::string_view before = rest_;
  if (!GetVarint32(&rest_, &len)) return Corrupt(data_, before, "truncated value length");
  if (len > kMaxCellBytes) return Corrupt(data_, before, StrCat("value length ", len, " too big"));
  if (len > rest_.size()) return Corrupt(data_, before, "truncated value");
  update->value = rest_.substr(0, len);
  rest_.remove_prefix(len);
  return absl::OkStatus();
}

// ---- Validation ---------------------------------------------------------------------------------

namespace {

absl::Status ValidateValue(const ColumnSchema& col, ColumnId id, const ColumnUpdate& u) {
  auto bad = [&](std::string_view why) {
    return absl::DataLossError(
        StrCat("corrupt row change list: column ", col.name(), " (id ", id, "): ", why));
  };
  if (u.is_null) return col.is_nullable() ? absl::OkStatus() : bad("NULL in a NOT NULL column");
  const TypeInfo& info = col.type_info();
  absl::Status s;
  if (info.is_variable_length()) {
    s = ValidateCell(col.type(), col.attributes(), &u.value);
  } else {
    if (u.value.size() != info.size()) {
      return bad(StrCat("value of ", u.value.size(), " bytes for ", info.name()));
    }
    alignas(16) char cell[16];
    std::memcpy(cell, u.value.data(), u.value.size());
    s = ValidateCell(col.type(), col.attributes(), cell);
  }
  return s.ok() ? s : bad(std::string(s.message()));
}

}  // namespace

absl::Status ValidateRowChangeList(const Schema& schema, std::string_view data) {
  RowChangeListDecoder dec(data);
  BASALT_RETURN_IF_ERROR(dec.Init());
  std::vector<bool> seen(schema.num_columns(), false);
  int num_seen = 0;
  while (dec.HasNext()) {
    ColumnUpdate u;
    BASALT_RETURN_IF_ERROR(dec.ReadNext(&u));
    int idx = schema.find_column_by_id(u.column_id);
    if (idx < 0 || schema.is_key_column(idx)) {
      return absl::DataLossError(StrCat("corrupt row change list: column id ", u.column_id,
                                        idx < 0 ? " is not in the schema" : " is a key column"));
    }
    if (seen[idx]) {
      return absl::DataLossError(
          StrCat("corrupt row change list: column ", schema.column(idx).name(), " appears twice"));
    }
    seen[idx] = true;
    ++num_seen;
    BASALT_RETURN_IF_ERROR(ValidateValue(schema.column(idx), u.column_id, u));
  }
  if (dec.is_reinsert() && num_seen != schema.num_columns() - schema.num_key_columns()) {
    return absl::DataLossError(StrCat("corrupt row change list: REINSERT has ", num_seen, " of ",
                                      schema.num_columns() - schema.num_key_columns(),
                                      " non-key columns"));
  }
  return absl::OkStatus();
}

std::string RowChangeListToString(std::string_view data) {
  RowChangeListDecoder dec(data);
  absl::Status s = dec.Init();
  if (!s.ok()) return StrCat("<corrupt: ", s.message(), ">");
  if (dec.is_delete()) return "DELETE";
  std::string out = dec.is_update() ? "UPDATE(" : "REINSERT(";
  bool first = true;
  while (dec.HasNext()) {
    ColumnUpdate u;
    s = dec.ReadNext(&u);
    if (!s.ok()) return StrCat(out, "<corrupt: ", s.message(), ">)");
    StrAppend(&out, first ? "" : ", ", "col ", u.column_id, "=",
              u.is_null ? std::string("NULL") : StrCat("<", u.value.size(), " bytes>"));
    first = false;
  }
  return out + ")";
}

}  // namespace basalt
