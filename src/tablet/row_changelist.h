#pragma once

// RowChangeList: the compact byte encoding of one mutation of one row (an UPDATE of some
// columns, a DELETE, or a REINSERT of a deleted row). MemRowSet mutation chains, DeltaMemStores
// and delta files all store mutations in this form. Byte table: docs/tablet.md, "Row change
// lists".
//
//   UPDATE:   0x01, then one or more entries
//   DELETE:   0x02 (nothing else)
//   REINSERT: 0x03, then one entry per non-key column of the row
//   entry:    varint32 tag = column_id << 1 | is_null; if !is_null: varint32 length, value bytes
//             (the serialized cell format of types.h: fixed-width little-endian, or raw bytes)
//
// Every value carries its length, so a list can be walked (and a dropped column skipped) without
// the schema it was written with; the schema is only needed to check that values fit columns.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/schema.h"

namespace basalt {

enum class RowChangeType : uint8_t {
  kUpdate = 1,
  kDelete = 2,
  kReinsert = 3,
};

// Builds one RowChangeList into a caller-owned string.
// Valid call order: SetToUpdate() then AddColumnUpdate()*; or SetToDelete(); or SetToReinsert()
// / EncodeReinsert(). Not thread-safe.
class RowChangeListEncoder {
 public:
  // `dst` is borrowed, cleared, and receives the encoding.
  explicit RowChangeListEncoder(std::string* dst) : dst_(dst) { dst_->clear(); }

  void SetToUpdate() { SetType(RowChangeType::kUpdate); }
  void SetToDelete() { SetType(RowChangeType::kDelete); }
  void SetToReinsert() { SetType(RowChangeType::kReinsert); }

  // Appends "column `id` := cell" (cell in row-buffer form of `type`; nullptr for NULL).
  // REQUIRES: SetToUpdate() or SetToReinsert() was called.
  void AddColumnUpdate(ColumnId id, DataType type, const void* cell);

  // Encodes a REINSERT of every non-key column of a row in `schema`'s layout.
  // `null_bitmap` may be nullptr when the schema has no nullable columns.
  void EncodeReinsert(const Schema& schema, const uint8_t* row_data, const uint8_t* null_bitmap);

  bool is_empty() const { return dst_->empty(); }

 private:
  void SetType(RowChangeType type);
  std::string* dst_;
};

// One decoded entry. `value` points into the decoded bytes (the serialized cell format).
struct ColumnUpdate {
  ColumnId column_id = 0;
  bool is_null = false;
  std::string_view value;
};

// Walks one RowChangeList. Init() checks the header; ReadNext() checks each entry's framing.
// Errors are DATA_LOSS with the byte offset (the bytes come from memory we wrote or from disk;
// a caller decoding bytes from the network maps the code to INVALID_ARGUMENT).
// The decoded bytes are borrowed and must outlive the decoder and the ColumnUpdates it yields.
// Not thread-safe.
class RowChangeListDecoder {
 public:
  explicit RowChangeListDecoder(std::string_view data) : data_(data), rest_(data) {}

  // DATA_LOSS for an empty list, an unknown type byte, a DELETE with trailing bytes or an UPDATE
  // without entries.
  absl::Status Init();

  RowChangeType type() const { return type_; }
  bool is_update() const { return type_ == RowChangeType::kUpdate; }
  bool is_delete() const { return type_ == RowChangeType::kDelete; }
  bool is_reinsert() const { return type_ == RowChangeType::kReinsert; }

  bool HasNext() const { return !rest_.empty(); }
  // DATA_LOSS for a truncated tag, length or value, or a value longer than kMaxCellBytes.
  absl::Status ReadNext(ColumnUpdate* update);

 private:
  std::string_view data_;
  std::string_view rest_;
  RowChangeType type_ = RowChangeType::kUpdate;
};

// Fully validates `data` against `schema`: framing as the decoder checks, every column id
// present in the schema and not a key column, a value of the column's size (fixed-width) or
// within its limits (ValidateCell), NULL only for nullable columns, no column twice, and for a
// REINSERT every non-key column present. DATA_LOSS with the offending offset or column.
absl::Status ValidateRowChangeList(const Schema& schema, std::string_view data);

// "UPDATE(col 3=NULL, col 4=<5 bytes>)", "DELETE", "REINSERT(...)", or "<corrupt: ...>".
std::string RowChangeListToString(std::string_view data);

}  // namespace basalt
