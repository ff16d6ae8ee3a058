#pragma once

// PartialRow: a row under construction against a Schema. Any subset of columns may be set; a set
// column holds a value or NULL. Used to build write operations, split rows and range bounds, and
// as the decoded form the server reads them back into.
//
// Layout: a row buffer of schema->fixed_row_size() bytes (cells at Schema::column_offset), an
// "is set" bitmap and a "is null" bitmap of BitmapSize(num_columns) bytes each. Variable-length
// cells are std::string_views into storage the row owns (values are copied on Set), so a
// PartialRow is self-contained and may outlive the caller's buffers.
//
// Lifecycle: the Schema must outlive the row. Not thread-safe; a const PartialRow may be read
// from several threads.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/datum.h"
#include "common/schema.h"

namespace basalt {

class PartialRow {
 public:
  explicit PartialRow(const Schema* schema);
  PartialRow(const PartialRow& other);
  PartialRow& operator=(const PartialRow& other);
  PartialRow(PartialRow&&) noexcept = default;
  PartialRow& operator=(PartialRow&&) noexcept = default;

  const Schema* schema() const { return schema_; }

  // Sets column `idx` (or the column named `name`) to `value`. An integer Datum of another
  // integer-backed type is converted when it fits (CastTo). INVALID_ARGUMENT for a wrong type,
  // a value out of the column's limits (decimal precision, VARCHAR length, kMaxCellBytes), or
  // NULL for a NOT NULL column; NOT_FOUND for an unknown name. On error the row is unchanged.
  absl::Status Set(int idx, const Datum& value);
  absl::Status Set(std::string_view name, const Datum& value);
  // Typed conveniences for the common types.
  absl::Status SetInt32(std::string_view name, int32_t v) { return Set(name, Datum::Int32(v)); }
  absl::Status SetInt64(std::string_view name, int64_t v) { return Set(name, Datum::Int64(v)); }
  absl::Status SetString(std::string_view name, std::string_view v);
  absl::Status SetNull(int idx);
  absl::Status SetNull(std::string_view name);
  // Marks the column unset.
  void Unset(int idx);

  bool IsSet(int idx) const { return BitmapTest(isset_.data(), idx); }
  bool IsNull(int idx) const { return BitmapTest(isnull_.data(), idx); }
  bool AllKeyColumnsSet() const;
  bool AnySet() const;
  // The value of a set column (a NULL Datum if it is NULL). REQUIRES: IsSet(idx).
  Datum Get(int idx) const;
  // The cell in row-buffer form. REQUIRES: IsSet(idx) && !IsNull(idx).
  const void* cell(int idx) const { return row_.data() + schema_->column_offset(idx); }

  // Raw views for encoders (see the file comment).
  const uint8_t* isset_bitmap() const { return isset_.data(); }
  const uint8_t* isnull_bitmap() const { return isnull_.data(); }
  const uint8_t* row_data() const { return row_.data(); }

  // Sets a cell without conversion. For decoders that have already validated the value; the
  // bytes of a variable-length cell are copied. REQUIRES: type-correct, non-NULL cell.
  void SetCellUnchecked(int idx, const void* cell);

  // "(int32 key=1, string name=\"x\", int32 v=NULL)" over the set columns.
  std::string ToString() const;

 private:
  // Copies `bytes` into row-owned storage that never moves, returning a stable view.
  std::string_view Own(std::string_view bytes);

  const Schema* schema_;
  std::vector<uint8_t> row_;
  std::vector<uint8_t> isset_;
  std::vector<uint8_t> isnull_;
  // Owned variable-length values; a deque so earlier strings never move.
  std::deque<std::string> owned_;
};

}  // namespace basalt
