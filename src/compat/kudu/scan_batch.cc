// KuduScanBatch (with RowPtr) and KuduColumnarScanBatch over Basalt's columnar ScanBatch. Both
// read the batch in place; the columnar one converts Basalt's null bitmap (bit set = NULL) into
// Kudu's non-null bitmap (bit set = not NULL) on first request per column.

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

namespace bc = basalt::client;
using internal::Access;

// ---- KuduScanBatch ----------------------------------------------------------------------------

class KuduScanBatch::Data {
 public:
  bc::ScanBatch batch;
  KuduSchema schema;
  bool has_schema = false;
};

KuduScanBatch::KuduScanBatch() : data_(new Data) {}
KuduScanBatch::~KuduScanBatch() { delete data_; }
int KuduScanBatch::NumRows() const { return static_cast<int>(data_->batch.NumRows()); }
KuduScanBatch::RowPtr KuduScanBatch::Row(int idx) const { return RowPtr(data_, idx); }
const KuduSchema* KuduScanBatch::projection_schema() const {
  return data_->has_schema ? &data_->schema : nullptr;
}
Slice KuduScanBatch::direct_data() const { return Slice(); }
Slice KuduScanBatch::indirect_data() const { return Slice(); }

// Getters forwarded to Basalt's RowPtr, by name and by index.
#define KUDU_COMPAT_ROW_GETTER(Name, CppType)                                     \
  Status KuduScanBatch::RowPtr::Name(const Slice& col_name, CppType* val) const { \
    return FromAbsl(batch_->batch.Row(row_).Name(View(col_name), val));           \
  }                                                                               \
  Status KuduScanBatch::RowPtr::Name(int col_idx, CppType* val) const {           \
    return FromAbsl(batch_->batch.Row(row_).Name(col_idx, val));                  \
  }
KUDU_COMPAT_ROW_GETTER(GetBool, bool)
KUDU_COMPAT_ROW_GETTER(GetInt8, int8_t)
KUDU_COMPAT_ROW_GETTER(GetInt16, int16_t)
KUDU_COMPAT_ROW_GETTER(GetInt32, int32_t)
KUDU_COMPAT_ROW_GETTER(GetInt64, int64_t)
KUDU_COMPAT_ROW_GETTER(GetUnixTimeMicros, int64_t)
KUDU_COMPAT_ROW_GETTER(GetDate, int32_t)
KUDU_COMPAT_ROW_GETTER(GetFloat, float)
KUDU_COMPAT_ROW_GETTER(GetDouble, double)
#undef KUDU_COMPAT_ROW_GETTER

// String getters: the slice points into the batch.
#define KUDU_COMPAT_ROW_STRING_GETTER(KuduName, BasaltName)                               \
  Status KuduScanBatch::RowPtr::KuduName(const Slice& col_name, Slice* val) const {       \
    std::string_view v;                                                                   \
    KUDU_RETURN_NOT_OK(FromAbsl(batch_->batch.Row(row_).BasaltName(View(col_name), &v))); \
    *val = ToSlice(v);                                                                    \
    return Status::OK();                                                                  \
  }                                                                                       \
  Status KuduScanBatch::RowPtr::KuduName(int col_idx, Slice* val) const {                 \
    std::string_view v;                                                                   \
    KUDU_RETURN_NOT_OK(FromAbsl(batch_->batch.Row(row_).BasaltName(col_idx, &v)));        \
    *val = ToSlice(v);                                                                    \
    return Status::OK();                                                                  \
  }
KUDU_COMPAT_ROW_STRING_GETTER(GetString, GetString)
KUDU_COMPAT_ROW_STRING_GETTER(GetVarchar, GetString)
KUDU_COMPAT_ROW_STRING_GETTER(GetBinary, GetBinary)
#undef KUDU_COMPAT_ROW_STRING_GETTER

Status KuduScanBatch::RowPtr::GetUnscaledDecimal(const Slice& col_name, int128_t* val) const {
  const int idx = batch_->batch.projection_schema().FindColumn(View(col_name));
  if (idx < 0) return Status::NotFound("no such column", col_name);
  return GetUnscaledDecimal(idx, val);
}

Status KuduScanBatch::RowPtr::GetUnscaledDecimal(int col_idx, int128_t* val) const {
  // Read from the columnar view: Basalt's typed getter stops at 64 bits.
  const bc::Schema& schema = batch_->batch.projection_schema();
  if (col_idx < 0 || col_idx >= schema.num_columns()) {
    return Status::InvalidArgument("column index out of range", std::to_string(col_idx));
  }
  const bc::ScanBatch::ColumnView v = batch_->batch.Column(col_idx);
  if (v.type != bc::ColumnSchema::DECIMAL) {
    return Status::InvalidArgument("column is not DECIMAL", schema.Column(col_idx).name());
  }
  if (v.IsNull(row_)) return Status::NotFound("column is NULL", schema.Column(col_idx).name());
  const auto* cell = static_cast<const uint8_t*>(v.data) + v.cell_size * row_;
  if (v.cell_size == 4) {
    int32_t x;
    std::memcpy(&x, cell, 4);
    *val = x;
  } else if (v.cell_size == 8) {
    int64_t x;
    std::memcpy(&x, cell, 8);
    *val = x;
  } else {
    std::memcpy(val, cell, sizeof(int128_t));
  }
  return Status::OK();
}

bool KuduScanBatch::RowPtr::IsNull(const Slice& col_name) const {
  return batch_->batch.Row(row_).IsNull(View(col_name));
}
bool KuduScanBatch::RowPtr::IsNull(int col_idx) const {
  return batch_->batch.Row(row_).IsNull(col_idx);
}

const void* KuduScanBatch::RowPtr::cell(int col_idx) const {
  if (col_idx < 0 || col_idx >= batch_->batch.projection_schema().num_columns()) return nullptr;
  const bc::ScanBatch::ColumnView v = batch_->batch.Column(col_idx);
  if (v.cell_size == 0) return nullptr;
  return static_cast<const uint8_t*>(v.data) + v.cell_size * row_;
}

std::string KuduScanBatch::RowPtr::ToString() const { return batch_->batch.Row(row_).ToString(); }

// ---- KuduColumnarScanBatch --------------------------------------------------------------------

class KuduColumnarScanBatch::Data {
 public:
  bc::ScanBatch batch;
  // Kudu's non-null bitmap per column, built on first request; empty until then.
  mutable std::vector<std::vector<uint8_t>> non_null;

  Status CheckIndex(int idx) const {
    if (idx < 0 || idx >= batch.projection_schema().num_columns()) {
      return Status::InvalidArgument("column index out of range", std::to_string(idx));
    }
    return Status::OK();
  }
};

KuduColumnarScanBatch::KuduColumnarScanBatch() : data_(new Data) {}
KuduColumnarScanBatch::~KuduColumnarScanBatch() { delete data_; }
int KuduColumnarScanBatch::NumRows() const { return static_cast<int>(data_->batch.NumRows()); }

Status KuduColumnarScanBatch::GetFixedLengthColumn(int idx, Slice* data) const {
  KUDU_RETURN_NOT_OK(data_->CheckIndex(idx));
  const bc::ScanBatch::ColumnView v = data_->batch.Column(idx);
  if (v.cell_size == 0) {
    return Status::InvalidArgument("column is variable-length", std::to_string(idx));
  }
  *data = Slice(static_cast<const uint8_t*>(v.data), v.cell_size * NumRows());
  return Status::OK();
}

Status KuduColumnarScanBatch::GetVariableLengthColumn(int idx, Slice* offsets, Slice* data) const {
  KUDU_RETURN_NOT_OK(data_->CheckIndex(idx));
  const bc::ScanBatch::ColumnView v = data_->batch.Column(idx);
  if (v.cell_size != 0) {
    return Status::InvalidArgument("column is fixed-length", std::to_string(idx));
  }
  const int n = NumRows();
  if (n == 0) {
    *offsets = Slice();
    *data = Slice();
    return Status::OK();
  }
  *offsets = Slice(reinterpret_cast<const uint8_t*>(v.offsets), sizeof(uint32_t) * (n + 1));
  *data = Slice(static_cast<const uint8_t*>(v.data), v.offsets[n]);
  return Status::OK();
}

Status KuduColumnarScanBatch::GetNonNullBitmapForColumn(int idx, Slice* data) const {
  KUDU_RETURN_NOT_OK(data_->CheckIndex(idx));
  const bc::ColumnSchema col = data_->batch.projection_schema().Column(idx);
  if (!col.is_nullable()) return Status::InvalidArgument("column is not nullable", col.name());
  std::vector<std::vector<uint8_t>>& cache = data_->non_null;
  if (cache.empty()) cache.resize(data_->batch.projection_schema().num_columns());
  std::vector<uint8_t>& bits = cache[idx];
  const size_t bytes = (static_cast<size_t>(NumRows()) + 7) / 8;
  if (bits.size() != bytes) {
    const uint8_t* nulls = data_->batch.Column(idx).null_bitmap;
    bits.resize(bytes);
    for (size_t i = 0; i < bytes; i++) bits[i] = nulls == nullptr ? 0xFF : ~nulls[i];
  }
  *data = Slice(bits.data(), bits.size());
  return Status::OK();
}

namespace internal {

bc::ScanBatch* Access::Basalt(KuduScanBatch* batch) { return &batch->data_->batch; }
void Access::SetSchema(KuduScanBatch* batch, const KuduSchema& schema) {
  batch->data_->schema = schema;  // Cheap: the columns are shared.
  batch->data_->has_schema = true;
}
bc::ScanBatch* Access::Basalt(KuduColumnarScanBatch* batch) { return &batch->data_->batch; }
void Access::ResetBitmaps(KuduColumnarScanBatch* batch) { batch->data_->non_null.clear(); }

}  // namespace internal
}  // namespace client
}  // namespace kudu
