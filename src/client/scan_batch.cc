#include "client/scan_batch.h"

#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "client/client_internal.h"
#include "client/scan_batch_internal.h"
#include "common/bitmap.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"

namespace basalt::client {

using internal::Access;
using internal::ScanBatchData;

namespace internal {

ScanBatchData::ScanBatchData() = default;
ScanBatchData::~ScanBatchData() = default;

void ScanBatchData::Clear() {
  block.reset();
  num_rows = 0;
  columns.clear();
  realigned.clear();
}

const void* ScanBatchData::Aligned(const std::string& bytes, size_t alignment) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignment == 0) return bytes.data();
  const size_t chunks = bytes.size() / sizeof(AlignedChunk) + 1;
  realigned.push_back(std::unique_ptr<AlignedChunk[]>(new AlignedChunk[chunks]));
  std::memcpy(realigned.back()[0].bytes, bytes.data(), bytes.size());
  return realigned.back()[0].bytes;
}

absl::Status ScanBatchData::ValidateColumn(int idx, int64_t rows) {
  const basalt::ColumnSchema& col = schema->column(idx);
  const pb::ColumnarRowBlockPB::ColumnPB& c = block->columns(idx);
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(
        StrCat("malformed scan response: column '", col.name(), "': ", what));
  };
  ScanBatch::ColumnView v;
  v.type = Access::MakeColumn(col).type();
  const TypeInfo& info = col.type_info();
  const size_t bitmap_bytes = BitmapSize(static_cast<size_t>(rows));
  if (!c.null_bitmap().empty()) {
    if (c.null_bitmap().size() < bitmap_bytes) return bad("null bitmap too short");
    const auto* nb = reinterpret_cast<const uint8_t*>(c.null_bitmap().data());
    if (!col.is_nullable() && BitmapCountSet(nb, rows) != 0)
      return bad("NULL in a NOT NULL column");
    v.null_bitmap = nb;
  }
  if (info.is_variable_length()) {
    if (c.offsets().size() != static_cast<size_t>(rows + 1) * sizeof(uint32_t)) {
      return bad(StrCat("expected ", rows + 1, " offsets, got ", c.offsets().size(), " bytes"));
    }
    v.offsets = static_cast<const uint32_t*>(Aligned(c.offsets(), alignof(uint32_t)));
    for (int64_t i = 0; i < rows; i++) {
      if (v.offsets[i] > v.offsets[i + 1]) return bad(StrCat("offsets decrease at row ", i));
    }
    if (v.offsets[rows] > c.data().size()) return bad("offsets point past the data");
    v.data = c.data().data();
  } else {
    v.cell_size = info.size();
    if (c.data().size() != static_cast<size_t>(rows) * v.cell_size) {
      return bad(StrCat("expected ", rows, " cells of ", v.cell_size, " bytes, got ",
                        c.data().size(), " bytes"));
    }
    v.data = Aligned(c.data(), v.cell_size);
  }
  columns.push_back(v);
  return absl::OkStatus();
}

absl::Status ScanBatchData::Reset(const Schema& proj, std::unique_ptr<pb::ColumnarRowBlockPB> b,
                                  int64_t max_rows) {
  Clear();
  projection = proj;
  schema = &Access::Internal(projection);
  block = std::move(b);
  const int64_t rows = block->num_rows();
  absl::Status s;
  if (rows < 0 || rows > (int64_t{1} << 32)) {
    s = absl::DataLossError(StrCat("malformed scan response: ", rows, " rows"));
  } else if (block->columns_size() != schema->num_columns()) {
    s = absl::DataLossError(StrCat("malformed scan response: ", block->columns_size(),
                                   " columns for a projection of ", schema->num_columns()));
  }
  for (int i = 0; s.ok() && i < schema->num_columns(); i++) s = ValidateColumn(i, rows);
  if (!s.ok()) {
    Clear();
    return s;
  }
  num_rows = std::min(rows, std::max<int64_t>(max_rows, 0));
  return absl::OkStatus();
}

}  // namespace internal

// ---- ScanBatch
// -----------------------------------------------------------------------------------

ScanBatch::ScanBatch() : data_(std::make_unique<ScanBatchData>()) {}
ScanBatch::~ScanBatch() = default;

int64_t ScanBatch::NumRows() const { return data_->num_rows; }
ScanBatch::RowPtr ScanBatch::Row(int64_t idx) const { return RowPtr(data_.get(), idx); }
ScanBatch::ColumnView ScanBatch::Column(int column_idx) const { return data_->columns[column_idx]; }
const Schema& ScanBatch::projection_schema() const { return data_->projection; }

ScanBatchData* Access::Data(ScanBatch* batch) { return batch->data_.get(); }

// ---- RowPtr
// --------------------------------------------------------------------------------------

namespace {

absl::StatusOr<int> ResolveColumn(const ScanBatchData* b, std::string_view name) {
  int idx = b->schema == nullptr ? -1 : b->schema->find_column(name);
  if (idx < 0) return absl::NotFoundError(StrCat("no column named '", name, "' in the projection"));
  return idx;
}

// The cell of row `row`, column `idx`, checked against the allowed types and for NULL.
absl::StatusOr<const void*> CellOf(const ScanBatchData* b, int64_t row, int idx,
                                   std::initializer_list<basalt::DataType> ok,
                                   std::string_view what) {
  if (b->schema == nullptr || idx < 0 || idx >= b->schema->num_columns()) {
    return absl::InvalidArgumentError(StrCat("column index ", idx, " out of range"));
  }
  const basalt::ColumnSchema& col = b->schema->column(idx);
  bool type_ok = false;
  for (basalt::DataType t : ok) type_ok |= t == col.type();
  if (!type_ok) {
    return absl::InvalidArgumentError(
        StrCat("column '", col.name(), "' is ", col.TypeToString(), ", not ", what));
  }
  const ScanBatch::ColumnView& v = b->columns[idx];
  if (v.IsNull(row)) return absl::NotFoundError(StrCat("column '", col.name(), "' is NULL"));
  return static_cast<const void*>(static_cast<const char*>(v.data) + row * v.cell_size);
}

}  // namespace

#define BASALT_DEFINE_ROW_GETTER(Name, CppType, WHAT, ...)                            \
  absl::Status ScanBatch::RowPtr::Name(std::string_view column, CppType* out) const { \
    BASALT_ASSIGN_OR_RETURN(int idx, ResolveColumn(batch_, column));                  \
    return Name(idx, out);                                                            \
  }                                                                                   \
  absl::Status ScanBatch::RowPtr::Name(int column_idx, CppType* out) const {          \
    BASALT_ASSIGN_OR_RETURN(const void* cell,                                         \
                            CellOf(batch_, row_, column_idx, {__VA_ARGS__}, WHAT));   \
    std::memcpy(out, cell, sizeof(CppType));                                          \
    return absl::OkStatus();                                                          \
  }
BASALT_DEFINE_ROW_GETTER(GetInt8, int8_t, "INT8", basalt::DataType::kInt8)
BASALT_DEFINE_ROW_GETTER(GetInt16, int16_t, "INT16", basalt::DataType::kInt16)
BASALT_DEFINE_ROW_GETTER(GetInt32, int32_t, "INT32", basalt::DataType::kInt32)
BASALT_DEFINE_ROW_GETTER(GetInt64, int64_t, "INT64", basalt::DataType::kInt64)
BASALT_DEFINE_ROW_GETTER(GetFloat, float, "FLOAT", basalt::DataType::kFloat)
BASALT_DEFINE_ROW_GETTER(GetDouble, double, "DOUBLE", basalt::DataType::kDouble)
BASALT_DEFINE_ROW_GETTER(GetUnixTimeMicros, int64_t, "UNIXTIME_MICROS",
                         basalt::DataType::kUnixtimeMicros)
BASALT_DEFINE_ROW_GETTER(GetDate, int32_t, "DATE", basalt::DataType::kDate)
#undef BASALT_DEFINE_ROW_GETTER

absl::Status ScanBatch::RowPtr::GetBool(std::string_view column, bool* out) const {
  BASALT_ASSIGN_OR_RETURN(int idx, ResolveColumn(batch_, column));
  return GetBool(idx, out);
}
absl::Status ScanBatch::RowPtr::GetBool(int column_idx, bool* out) const {
  BASALT_ASSIGN_OR_RETURN(const void* cell,
                          CellOf(batch_, row_, column_idx, {basalt::DataType::kBool}, "BOOL"));
  *out = *static_cast<const uint8_t*>(cell) != 0;
  return absl::OkStatus();
}

absl::Status ScanBatch::RowPtr::GetUnscaledDecimal(std::string_view column, int64_t* out) const {
  BASALT_ASSIGN_OR_RETURN(int idx, ResolveColumn(batch_, column));
  return GetUnscaledDecimal(idx, out);
}
absl::Status ScanBatch::RowPtr::GetUnscaledDecimal(int column_idx, int64_t* out) const {
  using basalt::DataType;
  BASALT_ASSIGN_OR_RETURN(
      const void* cell,
      CellOf(batch_, row_, column_idx,
             {DataType::kDecimal32, DataType::kDecimal64, DataType::kDecimal128}, "DECIMAL"));
  Datum d = Datum::FromCell(batch_->schema->column(column_idx).type(), cell);
  absl::int128 v = d.int128_value();
  if (v > INT64_MAX || v < INT64_MIN) {
    return absl::InvalidArgumentError("the decimal value does not fit in int64");
  }
  *out = static_cast<int64_t>(v);
  return absl::OkStatus();
}

namespace {
absl::Status GetVarlen(const ScanBatchData* b, int64_t row, int idx,
                       std::initializer_list<basalt::DataType> ok, std::string_view what,
                       std::string_view* out) {
  BASALT_RETURN_IF_ERROR(CellOf(b, row, idx, ok, what).status());
  *out = b->columns[idx].GetString(row);
  return absl::OkStatus();
}
}  // namespace

absl::Status ScanBatch::RowPtr::GetString(std::string_view column, std::string_view* out) const {
  BASALT_ASSIGN_OR_RETURN(int idx, ResolveColumn(batch_, column));
  return GetString(idx, out);
}
absl::Status ScanBatch::RowPtr::GetString(int column_idx, std::string_view* out) const {
  return GetVarlen(batch_, row_, column_idx,
                   {basalt::DataType::kString, basalt::DataType::kVarchar}, "STRING", out);
}
absl::Status ScanBatch::RowPtr::GetBinary(std::string_view column, std::string_view* out) const {
  BASALT_ASSIGN_OR_RETURN(int idx, ResolveColumn(batch_, column));
  return GetBinary(idx, out);
}
absl::Status ScanBatch::RowPtr::GetBinary(int column_idx, std::string_view* out) const {
  return GetVarlen(batch_, row_, column_idx, {basalt::DataType::kBinary}, "BINARY", out);
}

bool ScanBatch::RowPtr::IsNull(std::string_view column) const {
  auto idx = ResolveColumn(batch_, column);
  return idx.ok() && IsNull(*idx);
}
bool ScanBatch::RowPtr::IsNull(int column_idx) const {
  return column_idx >= 0 && column_idx < static_cast<int>(batch_->columns.size()) &&
         batch_->columns[column_idx].IsNull(row_);
}

std::string ScanBatch::RowPtr::ToString() const {
  std::string out = "(";
  for (int i = 0; i < static_cast<int>(batch_->columns.size()); i++) {
    const basalt::ColumnSchema& col = batch_->schema->column(i);
    const ColumnView& v = batch_->columns[i];
    StrAppend(&out, i == 0 ? "" : ", ", absl::AsciiStrToLower(ToAbsl(col.type_info().name())), " ",
              col.name(), "=");
    if (v.IsNull(row_)) {
      out += "NULL";
    } else if (v.offsets != nullptr) {
      std::string_view s = v.GetString(row_);
      col.type_info().AppendDebugString(&s, &out);
    } else {
      const void* cell = static_cast<const char*>(v.data) + row_ * v.cell_size;
      if (col.type_info().is_decimal()) {
        out +=
            FormatDecimal(Datum::FromCell(col.type(), cell).int128_value(), col.attributes().scale);
      } else {
        col.type_info().AppendDebugString(cell, &out);
      }
    }
  }
  out += ")";
  return out;
}

}  // namespace basalt::client
