#pragma once

// The packed row-operations wire format (DESIGN.md section 3, byte table in
// docs/row_operations.md).
//
// Writes, split rows and range bounds travel as a RowOperationsPB: `rows` holds the operations
// back to back, each an op type byte, an "is set" bitmap, a null bitmap (only when the schema has
// nullable columns), and the cells of the set non-NULL columns in schema order. Fixed-width cells
// are their little-endian bytes; variable-length cells are a (uint32 offset, uint32 length) pair
// into `indirect_data`.
//
// RowOperationsEncoder builds a payload from PartialRows (client side). RowOperationsDecoder
// parses one against the schema the client wrote with (server side) and validates every byte:
// anything malformed is INVALID_ARGUMENT naming the operation index and column, never a crash.
// Decoding reports exactly what was sent; filling in defaults is the tablet's job.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/bitmap.h"
#include "common/datum.h"
#include "common/schema.h"

namespace basalt {

class Arena;
class PartialRow;

namespace pb {
class RowOperationsPB;
}  // namespace pb

// The kind of one operation. The numbering equals basalt.pb.RowOperationsPB.Type and is a wire
// contract; 0 (UNKNOWN) is never valid on the wire.
enum class RowOperationType : uint8_t {
  kInsert = 1,
  kUpdate = 2,
  kDelete = 3,
  kUpsert = 4,
  kInsertIgnore = 5,
  kUpdateIgnore = 6,
  kDeleteIgnore = 7,
  kSplitRow = 8,
  kRangeLowerBound = 9,
  kRangeUpperBound = 10,
  kExclusiveRangeLowerBound = 11,
  kInclusiveRangeUpperBound = 12,
};
inline constexpr int kMaxRowOperationType = 12;

inline bool IsValidRowOperationType(int type) { return type >= 1 && type <= kMaxRowOperationType; }
// "INSERT", "UPDATE_IGNORE", "RANGE_LOWER_BOUND", ...; "UNKNOWN(<n>)" for an invalid value.
std::string RowOperationTypeName(RowOperationType type);

// INSERT, UPSERT, INSERT_IGNORE: need every key column and every NOT NULL non-key column that has
// no default.
inline bool RowOperationIsInsertLike(RowOperationType type) {
  return type == RowOperationType::kInsert || type == RowOperationType::kUpsert ||
         type == RowOperationType::kInsertIgnore;
}
// UPDATE, UPDATE_IGNORE: need every key column and at least one non-key column.
inline bool RowOperationIsUpdateLike(RowOperationType type) {
  return type == RowOperationType::kUpdate || type == RowOperationType::kUpdateIgnore;
}
// DELETE, DELETE_IGNORE: need exactly the key columns.
inline bool RowOperationIsDeleteLike(RowOperationType type) {
  return type == RowOperationType::kDelete || type == RowOperationType::kDeleteIgnore;
}
// SPLIT_ROW and the four range bounds: any subset of the key columns, no non-key column.
inline bool RowOperationIsPartitionBound(RowOperationType type) {
  return static_cast<int>(type) >= static_cast<int>(RowOperationType::kSplitRow);
}
// True for the seven write operations (insert-, update- and delete-like).
inline bool RowOperationIsWrite(RowOperationType type) {
  return !RowOperationIsPartitionBound(type);
}
// True when the operation must set every key column (all write operations).
inline bool RowOperationTypeNeedsFullKey(RowOperationType type) {
  return RowOperationIsWrite(type);
}

// Checks which columns an operation of `type` sets against the per-type rules above and the
// bitmap rules of the format: a NULL only on a set, nullable column; no bits beyond
// schema.num_columns(). `isset` and `isnull` are bitmaps of BitmapSize(schema.num_columns())
// bytes (`isnull` may be null when no column is NULL). Cell contents are not looked at.
// INVALID_ARGUMENT naming the offending column otherwise. Clients may call this before sending
// to report a bad row early; the decoder applies the same rules.
absl::Status CheckRowOperationColumns(RowOperationType type, const Schema& schema,
                                      const uint8_t* isset, const uint8_t* isnull);
// The same, for a PartialRow.
absl::Status CheckRowOperationColumns(RowOperationType type, const PartialRow& row);

// Limits the decoder enforces; defaults documented in docs/row_operations.md.
struct RowOperationsDecoderOptions {
  // rows.size() + indirect_data.size().
  size_t max_payload_bytes = 64 << 20;
  // Number of operations in one payload.
  size_t max_operations = 1 << 20;
  // Memory the decoded rows may take in the arena (each op: two bitmaps and a row buffer of
  // schema.fixed_row_size() bytes, 16-byte aligned), which bounds how far a small payload of
  // empty operations against a wide schema can blow up.
  size_t max_decoded_bytes = 256 << 20;
};

// One decoded operation: a row in the Schema's row layout (see schema.h) plus its type. The
// bitmaps and the row buffer live in the decoder's Arena; variable-length cells are
// std::string_views into the payload's indirect_data (zero copy). Hence the arena, the payload
// and the schema must outlive it. Unset and NULL cells are zero bytes. Copyable (shallow).
// Const methods are thread-safe.
struct DecodedRowOperation {
  RowOperationType type = RowOperationType::kInsert;
  const Schema* schema = nullptr;
  const uint8_t* isset = nullptr;   // BitmapSize(num_columns) bytes.
  const uint8_t* isnull = nullptr;  // BitmapSize(num_columns) bytes; all zero if none is NULL.
  const uint8_t* row_data = nullptr;

  bool IsSet(int idx) const { return BitmapTest(isset, idx); }
  bool IsNull(int idx) const { return BitmapTest(isnull, idx); }
  // The cell in row-buffer form. REQUIRES: IsSet(idx) && !IsNull(idx).
  const void* cell(int idx) const { return row_data + schema->column_offset(idx); }
  // The value of a set column (a NULL Datum if it is NULL). REQUIRES: IsSet(idx).
  Datum Get(int idx) const;
  // A self-contained copy as a PartialRow (owns its strings).
  PartialRow ToPartialRow() const;
  // "INSERT (int32 key=1, ...)".
  std::string ToString() const;
};

// Appends operations to a payload. Each Add appends one op to `rows` and its variable-length
// cells to `indirect_data`; existing content is kept, so several encoders (or calls) may append
// to the same payload as long as they all use the same schema.
//
// Add does not check the per-type column rules (use CheckRowOperationColumns); the decoder does.
// REQUIRES: indirect_data stays below 4 GiB (offsets are uint32); keep payloads within
// RowOperationsDecoderOptions::max_payload_bytes or the server rejects them.
// Not thread-safe; the caller serializes.
class RowOperationsEncoder {
 public:
  // `pb`, or `rows` and `indirect_data`, must outlive the encoder.
  explicit RowOperationsEncoder(pb::RowOperationsPB* pb);
  RowOperationsEncoder(std::string* rows, std::string* indirect_data);

  // Appends `row` as an operation of `type`. Only set columns are written; NULL bits are written
  // only for set columns.
  void Add(RowOperationType type, const PartialRow& row);
  // Re-encodes a decoded operation (same schema as the payload).
  void Add(RowOperationType type, const DecodedRowOperation& op);

  // Bytes appended so far to rows plus indirect_data (including content there before).
  size_t encoded_size() const { return rows_->size() + indirect_->size(); }

 private:
  void AddRow(RowOperationType type, const Schema& schema, const uint8_t* isset,
              const uint8_t* isnull, const uint8_t* row_data);

  std::string* rows_;
  std::string* indirect_;
};

// Decodes and validates payloads written against one Schema (the client's; the server checks
// that schema against the tablet's separately).
//
// Every error is INVALID_ARGUMENT with a message "row operation <i> (<TYPE>): ..." naming the
// column where there is one: truncated input; an unknown op type; bitmap bits beyond the last
// column; a NULL bit on an unset or NOT NULL column; a missing or extra column for the op type
// (see CheckRowOperationColumns); an indirect offset/length outside indirect_data; a cell over
// kMaxCellBytes or violating its type (ValidateCell: BOOL 0/1, decimal precision, VARCHAR
// length and UTF-8); exceeding a limit of RowOperationsDecoderOptions.
//
// Not thread-safe (it allocates from the arena); use one decoder per thread.
class RowOperationsDecoder {
 public:
  // `schema` and `arena` are borrowed and must outlive the decoder and every decoded op.
  RowOperationsDecoder(const Schema* schema, Arena* arena,
                       RowOperationsDecoderOptions options = {});
  ~RowOperationsDecoder();
  RowOperationsDecoder(const RowOperationsDecoder&) = delete;
  RowOperationsDecoder& operator=(const RowOperationsDecoder&) = delete;

  // Replaces *ops with the decoded operations, in payload order. Decoded ops point into `pb`
  // (or `indirect_data`), which must outlive them. On error *ops is cleared; arena memory
  // already used is not returned until the arena is Reset.
  absl::Status Decode(const pb::RowOperationsPB& pb, std::vector<DecodedRowOperation>* ops);
  absl::Status Decode(std::string_view rows, std::string_view indirect_data,
                      std::vector<DecodedRowOperation>* ops);

 private:
  // Per-column facts computed once from schema_ (defined in the .cc).
  struct ColumnLayout;

  absl::Status DecodeAll(std::string_view rows, std::string_view indirect_data,
                         std::vector<DecodedRowOperation>* ops);
  // Decodes the op starting at *p (before `end`), advancing *p past it.
  absl::Status DecodeOp(size_t index, const char** p, const char* end,
                        std::string_view indirect_data, DecodedRowOperation* op);
  // Checks an op's bitmaps against the column rules a byte at a time. True means they pass;
  // false means CheckRowOperationColumns will say why.
  bool ColumnsPassFastCheck(RowOperationType type, const uint8_t* isset,
                            const uint8_t* isnull) const;
  // Decodes the cell of set, non-NULL column `idx` at *p into `row`, advancing *p past it.
  absl::Status DecodeCell(int idx, const char** p, const char* end, std::string_view indirect_data,
                          uint8_t* row) const;

  const Schema* const schema_;
  Arena* const arena_;
  const RowOperationsDecoderOptions options_;
  std::vector<ColumnLayout> columns_;
  // Column classes as bitmaps of bitmap_size_ bytes (bit i for column i).
  std::vector<uint8_t> valid_mask_;            // Bits 0..n-1.
  std::vector<uint8_t> key_mask_;              // Key columns.
  std::vector<uint8_t> not_null_mask_;         // NOT NULL columns.
  std::vector<uint8_t> insert_required_mask_;  // Key columns and NOT NULL ones without default.
  size_t bitmap_size_ = 0;
  size_t op_header_size_ = 0;      // Type byte and bitmaps on the wire.
  size_t bitmaps_alloc_size_ = 0;  // Both bitmaps in the arena, rounded up to keep rows aligned.
  size_t op_decoded_size_ = 0;     // Arena and vector bytes one decoded op costs.
};

}  // namespace basalt
