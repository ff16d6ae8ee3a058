#pragma once

// PartialRow: a row under construction against a Schema (Kudu's KuduPartialRow). Any subset of
// columns may be set; a set column holds a value or NULL. Used for write operations, split rows,
// range bounds and scan key bounds.
//
// Setters are strictly typed: SetInt32 needs an INT32 column, SetDate a DATE column, SetString a
// STRING or VARCHAR column, SetBinary a BINARY column, SetUnscaledDecimal a DECIMAL column, and
// so on. Errors: NOT_FOUND for an unknown column name; INVALID_ARGUMENT for an index out of range,
// a type mismatch, a value outside the column's limits (VARCHAR length, DECIMAL precision, 64 KiB
// per value) or NULL for a NOT NULL column. On error the row is unchanged. Getters return NOT_FOUND
// for a column that is unset or NULL.
//
// Strings are copied into the row, so a row never points into the caller's buffers. Rows of up to
// a few columns keep their cells inline (no allocation).
//
// Lifecycle: the Schema must outlive the row. Not thread-safe; a const row may be read from
// several threads.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "client/export.h"

namespace basalt::client {

class Schema;
class Value;

namespace internal {
struct Access;
}  // namespace internal

class BASALT_EXPORT PartialRow {
 public:
  explicit PartialRow(const Schema* schema);
  PartialRow(const PartialRow& other);
  PartialRow& operator=(const PartialRow& other);
  ~PartialRow();

  const Schema* schema() const { return schema_; }

#define BASALT_PARTIAL_ROW_SETTER(Name, CppType)             \
  absl::Status Name(std::string_view column, CppType value); \
  absl::Status Name(int column_idx, CppType value);
  BASALT_PARTIAL_ROW_SETTER(SetBool, bool)
  BASALT_PARTIAL_ROW_SETTER(SetInt8, int8_t)
  BASALT_PARTIAL_ROW_SETTER(SetInt16, int16_t)
  BASALT_PARTIAL_ROW_SETTER(SetInt32, int32_t)
  BASALT_PARTIAL_ROW_SETTER(SetInt64, int64_t)
  BASALT_PARTIAL_ROW_SETTER(SetFloat, float)
  BASALT_PARTIAL_ROW_SETTER(SetDouble, double)
  BASALT_PARTIAL_ROW_SETTER(SetUnixTimeMicros, int64_t)
  BASALT_PARTIAL_ROW_SETTER(SetDate, int32_t)             // Days since 1970-01-01.
  BASALT_PARTIAL_ROW_SETTER(SetUnscaledDecimal, int64_t)  // Any DECIMAL precision.
  BASALT_PARTIAL_ROW_SETTER(SetString, std::string_view)  // STRING or VARCHAR; copied.
  BASALT_PARTIAL_ROW_SETTER(SetBinary, std::string_view)  // BINARY; copied.
  BASALT_PARTIAL_ROW_SETTER(Set, const Value&)            // Converted as Value describes.
#undef BASALT_PARTIAL_ROW_SETTER
  absl::Status SetNull(std::string_view column);
  absl::Status SetNull(int column_idx);
  absl::Status Unset(std::string_view column);
  absl::Status Unset(int column_idx);

#define BASALT_PARTIAL_ROW_GETTER(Name, CppType)                  \
  absl::Status Name(std::string_view column, CppType* out) const; \
  absl::Status Name(int column_idx, CppType* out) const;
  BASALT_PARTIAL_ROW_GETTER(GetBool, bool)
  BASALT_PARTIAL_ROW_GETTER(GetInt8, int8_t)
  BASALT_PARTIAL_ROW_GETTER(GetInt16, int16_t)
  BASALT_PARTIAL_ROW_GETTER(GetInt32, int32_t)
  BASALT_PARTIAL_ROW_GETTER(GetInt64, int64_t)
  BASALT_PARTIAL_ROW_GETTER(GetFloat, float)
  BASALT_PARTIAL_ROW_GETTER(GetDouble, double)
  BASALT_PARTIAL_ROW_GETTER(GetUnixTimeMicros, int64_t)
  BASALT_PARTIAL_ROW_GETTER(GetDate, int32_t)
  // INVALID_ARGUMENT for a DECIMAL128 value outside the int64 range.
  BASALT_PARTIAL_ROW_GETTER(GetUnscaledDecimal, int64_t)
  // The view points into the row; valid until the column is set again or the row dies.
  BASALT_PARTIAL_ROW_GETTER(GetString, std::string_view)
  BASALT_PARTIAL_ROW_GETTER(GetBinary, std::string_view)
#undef BASALT_PARTIAL_ROW_GETTER

  // False for an unknown column.
  bool IsColumnSet(std::string_view column) const;
  bool IsColumnSet(int column_idx) const;
  bool IsNull(std::string_view column) const;
  bool IsNull(int column_idx) const;
  bool IsKeySet() const;  // Every primary key column is set.

  // "(int32 key=1, string name=\"x\", int32 v=NULL)" over the set columns.
  std::string ToString() const;

 private:
  friend struct internal::Access;
  // Row buffer layout: cells at the internal schema's column offsets (fixed_row_size bytes rounded
  // up to 16), then the "is set" bitmap, then the "is null" bitmap.
  static constexpr size_t kInlineBytes = 64;
  struct alignas(16) Chunk {
    unsigned char bytes[16];
  };

  void Allocate();
  void CopyFrom(const PartialRow& other);

  const Schema* schema_;
  size_t row_size_ = 0;     // Cell bytes, rounded up to 16.
  size_t bitmap_size_ = 0;  // Bytes of each bitmap.
  uint8_t* data_ = nullptr;
  std::unique_ptr<Chunk[]> heap_;
  Chunk inline_[kInlineBytes / sizeof(Chunk)];
  // Owned copies of variable-length values; the cells are std::string_views into them.
  std::vector<std::unique_ptr<std::string>> strings_;
};

}  // namespace basalt::client
