#include "common/row_operations.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/arena.h"
#include "common/coding.h"
#include "common/partial_row.h"
#include "common/status_macros.h"
#include "glog/logging.h"
#include "proto/common.pb.h"

namespace basalt {

#define BASALT_CHECK_OP_NUMBER(cpp, proto) \
  static_assert(static_cast<int>(RowOperationType::cpp) == pb::RowOperationsPB::proto)
BASALT_CHECK_OP_NUMBER(kInsert, INSERT);
BASALT_CHECK_OP_NUMBER(kUpdate, UPDATE);
BASALT_CHECK_OP_NUMBER(kDelete, DELETE);
BASALT_CHECK_OP_NUMBER(kUpsert, UPSERT);
BASALT_CHECK_OP_NUMBER(kInsertIgnore, INSERT_IGNORE);
BASALT_CHECK_OP_NUMBER(kUpdateIgnore, UPDATE_IGNORE);
BASALT_CHECK_OP_NUMBER(kDeleteIgnore, DELETE_IGNORE);
BASALT_CHECK_OP_NUMBER(kSplitRow, SPLIT_ROW);
BASALT_CHECK_OP_NUMBER(kRangeLowerBound, RANGE_LOWER_BOUND);
BASALT_CHECK_OP_NUMBER(kRangeUpperBound, RANGE_UPPER_BOUND);
BASALT_CHECK_OP_NUMBER(kExclusiveRangeLowerBound, EXCLUSIVE_RANGE_LOWER_BOUND);
BASALT_CHECK_OP_NUMBER(kInclusiveRangeUpperBound, INCLUSIVE_RANGE_UPPER_BOUND);
#undef BASALT_CHECK_OP_NUMBER
static_assert(kMaxRowOperationType == pb::RowOperationsPB::Type_MAX);

namespace {

// A variable-length cell on the wire: uint32 offset and uint32 length into indirect_data.
constexpr size_t kVarCellWireSize = 8;

size_t RoundUp16(size_t n) { return (n + 15) & ~size_t{15}; }

// "column 'name' (VARCHAR(10))", for error messages.
std::string ColumnDesc(const Schema& schema, int idx) {
  const ColumnSchema& col = schema.column(idx);
  return absl::StrCat("column '", col.name(), "' (", col.TypeToString(), ")");
}

// Types whose cells need ValidateCell beyond their size: BOOL (0/1), decimals (precision) and
// VARCHAR (character length, UTF-8). STRING/BINARY only need the kMaxCellBytes check.
bool CellNeedsValidation(DataType type) {
  return type == DataType::kBool || type == DataType::kVarchar || GetTypeInfo(type).is_decimal();
}

// Checks that no bit at or beyond `num_bits` is set in a bitmap of BitmapSize(num_bits) bytes.
bool PaddingBitsClear(const uint8_t* bitmap, int num_bits) {
  int rem = num_bits % 8;
  if (rem == 0) return true;
  return (bitmap[num_bits / 8] & static_cast<uint8_t>(0xFF << rem)) == 0;
}

}  // namespace

// ---- RowOperationType ---------------------------------------------------------------------------

std::string RowOperationTypeName(RowOperationType type) {
  static constexpr std::string_view kNames[] = {"UNKNOWN",  // 0, never valid on the wire.
                                                "INSERT",
                                                "UPDATE",
                                                "DELETE",
                                                "UPSERT",
                                                "INSERT_IGNORE",
                                                "UPDATE_IGNORE",
                                                "DELETE_IGNORE",
                                                "SPLIT_ROW",
                                                "RANGE_LOWER_BOUND",
                                                "RANGE_UPPER_BOUND",
                                                "EXCLUSIVE_RANGE_LOWER_BOUND",
                                                "INCLUSIVE_RANGE_UPPER_BOUND"};
  static_assert(std::size(kNames) == kMaxRowOperationType + 1);
  const int t = static_cast<int>(type);
  if (!IsValidRowOperationType(t)) return absl::StrCat("UNKNOWN(", t, ")");
  return std::string(kNames[t]);
}

// ---- Column rules -------------------------------------------------------------------------------

namespace {

// The rule for one column of an op; `set`/`null` are its bits.
absl::Status CheckColumn(RowOperationType type, const Schema& schema, int idx, bool set,
                         bool null) {
  const ColumnSchema& col = schema.column(idx);
  if (null && !set) {
    return absl::InvalidArgumentError(
        absl::StrCat(ColumnDesc(schema, idx), ": NULL bit set for a column that is not set"));
  }
  if (null && !col.is_nullable()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ColumnDesc(schema, idx), " is NOT NULL but was set to NULL"));
  }
  if (schema.is_key_column(idx)) {
    if (!set && RowOperationTypeNeedsFullKey(type)) {
      return absl::InvalidArgumentError(absl::StrCat("missing key ", ColumnDesc(schema, idx), "; ",
                                                     RowOperationTypeName(type),
                                                     " needs every key column"));
    }
    return absl::OkStatus();
  }
  if (set && (RowOperationIsDeleteLike(type) || RowOperationIsPartitionBound(type))) {
    return absl::InvalidArgumentError(absl::StrCat("non-key ", ColumnDesc(schema, idx), " is set; ",
                                                   RowOperationTypeName(type),
                                                   " may set only key columns"));
  }
  if (!set && RowOperationIsInsertLike(type) && !col.is_nullable() &&
      !col.default_value().has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("missing ", ColumnDesc(schema, idx),
                                                   ", which is NOT NULL and has no default; ",
                                                   RowOperationTypeName(type), " must set it"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRowOperationColumns(RowOperationType type, const Schema& schema,
                                      const uint8_t* isset, const uint8_t* isnull) {
  const int n = schema.num_columns();
  if (!PaddingBitsClear(isset, n) || (isnull != nullptr && !PaddingBitsClear(isnull, n))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a column bitmap has bits set beyond the last of the schema's ", n, " columns"));
  }
  bool any_non_key_set = false;
  for (int i = 0; i < n; ++i) {
    const bool set = BitmapTest(isset, i);
    const bool null = isnull != nullptr && BitmapTest(isnull, i);
    BASALT_RETURN_IF_ERROR(CheckColumn(type, schema, i, set, null));
    any_non_key_set |= set && !schema.is_key_column(i);
  }
  if (RowOperationIsUpdateLike(type) && !any_non_key_set) {
    return absl::InvalidArgumentError(absl::StrCat(
        RowOperationTypeName(type), " sets no non-key column; it must set at least one"));
  }
  return absl::OkStatus();
}

absl::Status CheckRowOperationColumns(RowOperationType type, const PartialRow& row) {
  return CheckRowOperationColumns(type, *row.schema(), row.isset_bitmap(), row.isnull_bitmap());
}

// ---- DecodedRowOperation ------------------------------------------------------------------------

Datum DecodedRowOperation::Get(int idx) const {
  DataType t = schema->column(idx).type();
  return IsNull(idx) ? Datum::Null(t) : Datum::FromCell(t, cell(idx));
}

PartialRow DecodedRowOperation::ToPartialRow() const {
  PartialRow row(schema);
  for (int i = 0; i < schema->num_columns(); ++i) {
    if (!IsSet(i)) continue;
    if (IsNull(i)) {
      absl::Status s = row.SetNull(i);
      DCHECK(s.ok()) << s;  // The decoder only accepts NULL for nullable columns.
    } else {
      row.SetCellUnchecked(i, cell(i));
    }
  }
  return row;
}

std::string DecodedRowOperation::ToString() const {
  return absl::StrCat(RowOperationTypeName(type), " ", ToPartialRow().ToString());
}

// ---- RowOperationsEncoder -----------------------------------------------------------------------

RowOperationsEncoder::RowOperationsEncoder(pb::RowOperationsPB* pb)
    : RowOperationsEncoder(pb->mutable_rows(), pb->mutable_indirect_data()) {}

RowOperationsEncoder::RowOperationsEncoder(std::string* rows, std::string* indirect_data)
    : rows_(rows), indirect_(indirect_data) {}

void RowOperationsEncoder::Add(RowOperationType type, const PartialRow& row) {
  AddRow(type, *row.schema(), row.isset_bitmap(), row.isnull_bitmap(), row.row_data());
}

void RowOperationsEncoder::Add(RowOperationType type, const DecodedRowOperation& op) {
  AddRow(type, *op.schema, op.isset, op.isnull, op.row_data);
}

void RowOperationsEncoder::AddRow(RowOperationType type, const Schema& schema, const uint8_t* isset,
                                  const uint8_t* isnull, const uint8_t* row_data) {
  const int n = schema.num_columns();
  const size_t bm = BitmapSize(n);
  const bool nullables = schema.has_nullables();
  // The row is sized once and written through a pointer: appending byte by byte was a fifth of a
  // client's CPU per row in bulk loads (docs/performance.md, change 30). A cell takes at most its
  // row-buffer size on the wire (a variable-length one 8 bytes for its 16-byte string_view).
  const size_t start = rows_->size();
  rows_->resize(start + 1 + bm * (nullables ? 2 : 1) + schema.fixed_row_size());
  char* out = rows_->data() + start;
  *out++ = static_cast<char>(type);
  // Canonical bitmaps: no padding bits, NULL bits only on set columns.
  const uint8_t last_byte_mask = n % 8 == 0 ? 0xFF : static_cast<uint8_t>((1u << (n % 8)) - 1);
  for (size_t b = 0; b < bm; ++b) {
    const uint8_t mask = b + 1 == bm ? last_byte_mask : 0xFF;
    out[b] = static_cast<char>(isset[b] & mask);
    if (nullables) out[bm + b] = static_cast<char>(isnull[b] & isset[b] & mask);
  }
  out += bm * (nullables ? 2 : 1);
  for (int i = 0; i < n; ++i) {
    if (!BitmapTest(isset, i) || (nullables && BitmapTest(isnull, i))) continue;
    const TypeInfo& info = schema.column(i).type_info();
    const uint8_t* cell = row_data + schema.column_offset(i);
    if (!info.is_variable_length()) {
      std::memcpy(out, cell, info.size());
      out += info.size();
      continue;
    }
    std::string_view value;
    std::memcpy(&value, cell, sizeof(value));
    CHECK_LE(indirect_->size() + value.size(), std::numeric_limits<uint32_t>::max())
        << "row operations indirect_data would exceed 4 GiB; split the batch";
    EncodeFixed32(out, static_cast<uint32_t>(indirect_->size()));
    EncodeFixed32(out + 4, static_cast<uint32_t>(value.size()));
    out += 8;
    indirect_->append(value);
  }
  rows_->resize(out - rows_->data());
}

// ---- RowOperationsDecoder -----------------------------------------------------------------------

struct RowOperationsDecoder::ColumnLayout {
  size_t row_offset;  // Schema::column_offset.
  size_t wire_size;   // Bytes of the cell in `rows`.
  bool is_variable_length;
  bool needs_validation;
  // Fixed width and any bit pattern is valid: the cell is copied as is.
  bool is_plain() const { return !is_variable_length && !needs_validation; }
};

namespace {

// memcpy with the common cell sizes as constants, so they compile to single moves.
inline void CopyCell(uint8_t* dst, const char* src, size_t size) {
  switch (size) {
    case 1:
      std::memcpy(dst, src, 1);
      break;
    case 2:
      std::memcpy(dst, src, 2);
      break;
    case 4:
      std::memcpy(dst, src, 4);
      break;
    case 8:
      std::memcpy(dst, src, 8);
      break;
    case 16:
      std::memcpy(dst, src, 16);
      break;
    default:
      std::memcpy(dst, src, size);
      break;
  }
}

}  // namespace

RowOperationsDecoder::RowOperationsDecoder(const Schema* schema, Arena* arena,
                                           RowOperationsDecoderOptions options)
    : schema_(schema), arena_(arena), options_(options) {
  const int n = schema_->num_columns();
  bitmap_size_ = BitmapSize(n);
  for (auto* mask : {&valid_mask_, &key_mask_, &not_null_mask_, &insert_required_mask_}) {
    mask->assign(bitmap_size_, 0);
  }
  columns_.reserve(n);
  for (int i = 0; i < n; ++i) {
    const ColumnSchema& col = schema_->column(i);
    const TypeInfo& info = col.type_info();
    columns_.push_back(ColumnLayout{
        .row_offset = schema_->column_offset(i),
        .wire_size = info.is_variable_length() ? kVarCellWireSize : info.size(),
        .is_variable_length = info.is_variable_length(),
        .needs_validation = CellNeedsValidation(col.type()),
    });
    BitmapSet(valid_mask_.data(), i);
    if (schema_->is_key_column(i)) BitmapSet(key_mask_.data(), i);
    if (!col.is_nullable()) BitmapSet(not_null_mask_.data(), i);
    if (schema_->is_key_column(i) || (!col.is_nullable() && !col.default_value().has_value())) {
      BitmapSet(insert_required_mask_.data(), i);
    }
  }
  op_header_size_ = 1 + bitmap_size_ * (schema_->has_nullables() ? 2 : 1);
  bitmaps_alloc_size_ = RoundUp16(2 * bitmap_size_);
  op_decoded_size_ =
      bitmaps_alloc_size_ + RoundUp16(schema_->fixed_row_size()) + sizeof(DecodedRowOperation);
}

RowOperationsDecoder::~RowOperationsDecoder() = default;

absl::Status RowOperationsDecoder::Decode(const pb::RowOperationsPB& pb,
                                          std::vector<DecodedRowOperation>* ops) {
  return Decode(pb.rows(), pb.indirect_data(), ops);
}

absl::Status RowOperationsDecoder::Decode(std::string_view rows, std::string_view indirect_data,
                                          std::vector<DecodedRowOperation>* ops) {
  ops->clear();
  absl::Status s = DecodeAll(rows, indirect_data, ops);
  if (!s.ok()) ops->clear();
  return s;
}

absl::Status RowOperationsDecoder::DecodeAll(std::string_view rows, std::string_view indirect_data,
                                             std::vector<DecodedRowOperation>* ops) {
  const size_t payload = rows.size() + indirect_data.size();
  if (payload > options_.max_payload_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("row operations payload of ", payload, " bytes (rows ", rows.size(),
                     ", indirect_data ", indirect_data.size(), ") exceeds the limit of ",
                     options_.max_payload_bytes, " bytes; split the batch"));
  }
  const char* p = rows.data();
  const char* const end = p + rows.size();
  while (p != end) {
    const size_t index = ops->size();
    if (index >= options_.max_operations ||
        (index + 1) * op_decoded_size_ > options_.max_decoded_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "row operation ", index,
          ": too many operations in one payload (limits: ", options_.max_operations,
          " operations, ", options_.max_decoded_bytes, " decoded bytes); split the batch"));
    }
    DecodedRowOperation op;
    BASALT_RETURN_IF_ERROR(DecodeOp(index, &p, end, indirect_data, &op));
    ops->push_back(op);
  }
  return absl::OkStatus();
}

absl::Status RowOperationsDecoder::DecodeOp(size_t index, const char** pp, const char* end,
                                            std::string_view indirect_data,
                                            DecodedRowOperation* op) {
  const char* p = *pp;
  const size_t remaining = end - p;
  if (remaining < op_header_size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "row operation ", index, ": truncated: its header (type and column bitmaps) needs ",
        op_header_size_, " bytes but only ", remaining, " remain in rows"));
  }
  const int type_number = static_cast<uint8_t>(*p);
  if (!IsValidRowOperationType(type_number)) {
    return absl::InvalidArgumentError(
        absl::StrCat("row operation ", index, ": unknown operation type ", type_number));
  }
  op->type = static_cast<RowOperationType>(type_number);
  op->schema = schema_;
  const size_t row_size = schema_->fixed_row_size();
  uint8_t* mem =
      reinterpret_cast<uint8_t*>(arena_->AllocateAligned(bitmaps_alloc_size_ + row_size, 16));
  uint8_t* isset = mem;
  uint8_t* isnull = mem + bitmap_size_;
  uint8_t* row = mem + bitmaps_alloc_size_;
  std::memcpy(isset, p + 1, bitmap_size_);
  if (schema_->has_nullables()) {
    std::memcpy(isnull, p + 1 + bitmap_size_, bitmap_size_);
  } else {
    std::memset(isnull, 0, bitmap_size_);
  }
  std::memset(row, 0, row_size);
  op->isset = isset;
  op->isnull = isnull;
  op->row_data = row;
  p += op_header_size_;

#define BASALT_OP_PREFIX \
  absl::StrCat("row operation ", index, " (", RowOperationTypeName(op->type), ")")
  if (!ColumnsPassFastCheck(op->type, isset, isnull)) {
    // The exact, column-by-column check finds the offending column for the message.
    absl::Status s = CheckRowOperationColumns(op->type, *schema_, isset, isnull);
    if (s.ok()) s = absl::InternalError("the fast and exact column checks disagree (a bug)");
    return PrependToStatus(s, BASALT_OP_PREFIX);
  }
  for (int i = 0; i < schema_->num_columns(); ++i) {
    if (!BitmapTest(isset, i) || BitmapTest(isnull, i)) continue;
    const ColumnLayout& c = columns_[i];
    if (c.is_plain() && static_cast<size_t>(end - p) >= c.wire_size) {
      CopyCell(row + c.row_offset, p, c.wire_size);
      p += c.wire_size;
      continue;
    }
    BASALT_RETURN_IF_ERROR_PREPEND(DecodeCell(i, &p, end, indirect_data, row), BASALT_OP_PREFIX);
  }
#undef BASALT_OP_PREFIX
  *pp = p;
  return absl::OkStatus();
}

bool RowOperationsDecoder::ColumnsPassFastCheck(RowOperationType type, const uint8_t* isset,
                                                const uint8_t* isnull) const {
  const bool insert_like = RowOperationIsInsertLike(type);
  const bool needs_key = RowOperationTypeNeedsFullKey(type);
  const bool key_only = RowOperationIsDeleteLike(type) || RowOperationIsPartitionBound(type);
  uint8_t non_key_set = 0;
  uint8_t bad = 0;
  for (size_t b = 0; b < bitmap_size_; ++b) {
    const uint8_t set = isset[b];
    const uint8_t null = isnull[b];
    const uint8_t key = key_mask_[b];
    bad |= (set | null) & ~valid_mask_[b];  // Bits beyond the last column.
    bad |= null & ~set;                     // NULL bit on an unset column.
    bad |= null & not_null_mask_[b];        // NULL in a NOT NULL column.
    if (needs_key) bad |= key & ~set;
    if (insert_like) bad |= insert_required_mask_[b] & ~set;
    non_key_set |= set & ~key;
  }
  if (key_only && non_key_set != 0) return false;
  if (RowOperationIsUpdateLike(type) && non_key_set == 0) return false;
  return bad == 0;
}

absl::Status RowOperationsDecoder::DecodeCell(int idx, const char** pp, const char* end,
                                              std::string_view indirect_data, uint8_t* row) const {
  const ColumnLayout& c = columns_[idx];
  const char* p = *pp;
  const size_t remaining = end - p;
  if (remaining < c.wire_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(ColumnDesc(*schema_, idx), ": truncated: its cell needs ", c.wire_size,
                     " bytes but only ", remaining, " remain in rows"));
  }
  uint8_t* dst = row + c.row_offset;
  if (c.is_variable_length) {
    const uint64_t offset = DecodeFixed32(p);
    const uint64_t length = DecodeFixed32(p + 4);
    if (length > kMaxCellBytes) {
      return absl::InvalidArgumentError(absl::StrCat(ColumnDesc(*schema_, idx), ": cell of ",
                                                     length, " bytes exceeds the limit of ",
                                                     kMaxCellBytes, " bytes"));
    }
    if (offset + length > indirect_data.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          ColumnDesc(*schema_, idx), ": indirect data range [", offset, ", ", offset + length,
          ") lies outside indirect_data of ", indirect_data.size(), " bytes"));
    }
    const std::string_view value = indirect_data.substr(offset, length);
    std::memcpy(dst, &value, sizeof(value));
  } else {
    std::memcpy(dst, p, c.wire_size);
  }
  *pp = p + c.wire_size;
  if (c.needs_validation) {
    const ColumnSchema& col = schema_->column(idx);
    absl::Status s = ValidateCell(col.type(), col.attributes(), dst);
    if (!s.ok()) {
      // Always INVALID_ARGUMENT, whatever ValidateCell chose: the payload is at fault.
      return absl::InvalidArgumentError(
          absl::StrCat(ColumnDesc(*schema_, idx), ": invalid value: ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace basalt
