#include "common/partial_row.h"

#include <cstring>

#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

PartialRow::PartialRow(const Schema* schema)
    : schema_(schema),
      row_(schema->fixed_row_size(), 0),
      isset_(BitmapSize(schema->num_columns()), 0),
      isnull_(BitmapSize(schema->num_columns()), 0) {}

PartialRow::PartialRow(const PartialRow& other) : PartialRow(other.schema_) { *this = other; }

PartialRow& PartialRow::operator=(const PartialRow& other) {
  if (this == &other) return *this;
  schema_ = other.schema_;
  row_ = other.row_;
  isset_ = other.isset_;
  isnull_ = other.isnull_;
  owned_.clear();
  // Variable-length cells point into other's storage: re-own them.
  for (int i = 0; i < schema_->num_columns(); i++) {
    if (IsSet(i) && !IsNull(i) && schema_->column(i).type_info().is_variable_length()) {
      SetCellUnchecked(i, other.cell(i));
    }
  }
  return *this;
}

std::string_view PartialRow::Own(std::string_view bytes) {
  owned_.emplace_back(bytes);
  return owned_.back();
}

void PartialRow::SetCellUnchecked(int idx, const void* cell) {
  const TypeInfo& info = schema_->column(idx).type_info();
  uint8_t* dst = row_.data() + schema_->column_offset(idx);
  if (info.is_variable_length()) {
    std::string_view v;
    std::memcpy(&v, cell, sizeof(v));
    v = Own(v);
    std::memcpy(dst, &v, sizeof(v));
  } else {
    std::memcpy(dst, cell, info.size());
  }
  BitmapSet(isset_.data(), idx);
  BitmapClear(isnull_.data(), idx);
}

absl::Status PartialRow::Set(int idx, const Datum& value) {
  if (idx < 0 || idx >= schema_->num_columns()) {
    return absl::InvalidArgumentError(StrCat("column index ", idx, " is out of range"));
  }
  const ColumnSchema& col = schema_->column(idx);
  if (value.is_null()) return SetNull(idx);
  auto cast = value.CastTo(col.type());
  if (!cast.ok() || cast->type() != col.type()) {
    return absl::InvalidArgumentError(StrCat("column '", col.name(), "' is ", col.TypeToString(),
                                             "; cannot set it to ", DataTypeName(value.type()),
                                             " value ", value.ToString()));
  }
  BASALT_RETURN_IF_ERROR_PREPEND(ValidateCell(col.type(), col.attributes(), cast->cell()),
                                 StrCat("column '", col.name(), "'"));
  SetCellUnchecked(idx, cast->cell());
  return absl::OkStatus();
}

absl::Status PartialRow::Set(std::string_view name, const Datum& value) {
  int idx = schema_->find_column(name);
  if (idx < 0) return absl::NotFoundError(StrCat("no column named '", name, "'"));
  return Set(idx, value);
}

absl::Status PartialRow::SetString(std::string_view name, std::string_view v) {
  int idx = schema_->find_column(name);
  if (idx < 0) return absl::NotFoundError(StrCat("no column named '", name, "'"));
  // STRING, BINARY and VARCHAR all take a string value.
  DataType type = schema_->column(idx).type();
  if (!GetTypeInfo(type).is_variable_length()) type = DataType::kString;
  return Set(idx, Datum::FromCell(type, &v));
}

absl::Status PartialRow::SetNull(int idx) {
  if (idx < 0 || idx >= schema_->num_columns()) {
    return absl::InvalidArgumentError(StrCat("column index ", idx, " is out of range"));
  }
  const ColumnSchema& col = schema_->column(idx);
  if (!col.is_nullable()) {
    return absl::InvalidArgumentError(
        StrCat("column '", col.name(), "' is NOT NULL; cannot set it to NULL"));
  }
  BitmapSet(isset_.data(), idx);
  BitmapSet(isnull_.data(), idx);
  return absl::OkStatus();
}

absl::Status PartialRow::SetNull(std::string_view name) {
  int idx = schema_->find_column(name);
  if (idx < 0) return absl::NotFoundError(StrCat("no column named '", name, "'"));
  return SetNull(idx);
}

void PartialRow::Unset(int idx) {
  BitmapClear(isset_.data(), idx);
  BitmapClear(isnull_.data(), idx);
}

bool PartialRow::AllKeyColumnsSet() const {
  for (int i = 0; i < schema_->num_key_columns(); i++) {
    if (!IsSet(i)) return false;
  }
  return true;
}

bool PartialRow::AnySet() const {
  return BitmapCountSet(isset_.data(), schema_->num_columns()) > 0;
}

Datum PartialRow::Get(int idx) const {
  DataType type = schema_->column(idx).type();
  if (IsNull(idx)) return Datum::Null(type);
  return Datum::FromCell(type, cell(idx));
}

std::string PartialRow::ToString() const {
  std::string out = "(";
  bool first = true;
  for (int i = 0; i < schema_->num_columns(); i++) {
    if (!IsSet(i)) continue;
    const ColumnSchema& col = schema_->column(i);
    StrAppend(&out, first ? "" : ", ", col.TypeToString(), " ", col.name(), "=");
    first = false;
    if (IsNull(i)) {
      out.append("NULL");
    } else if (col.type_info().is_decimal()) {
      out.append(FormatDecimal(Get(i).int128_value(), col.attributes().scale));
    } else {
      col.type_info().AppendDebugString(cell(i), &out);
    }
  }
  out.append(")");
  return out;
}

}  // namespace basalt
