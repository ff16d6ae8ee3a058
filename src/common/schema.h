#pragma once

// ColumnSchema and Schema (DESIGN.md section 2).
//
// A Schema is an ordered list of columns whose first num_key_columns() columns form the primary
// key. Each column has a stable ColumnId that is never reused after a drop, so data written under
// an older schema is read through a projection by id. A Schema also defines the *row layout* of
// in-memory rows: each column's cell sits at column_offset(i) in a buffer of fixed_row_size()
// bytes (variable-length cells are std::string_view pointing elsewhere); nullness and "is set"
// are kept in separate bitmaps of BitmapSize(num_columns()) bytes, bit i for column i, LSB first.
// Each cell is at its natural alignment relative to the buffer start, so in a buffer aligned to
// kRowAlignment cells may be read through typed pointers; code that cannot vouch for the buffer's
// alignment reads cells with memcpy.
//
// Schemas are immutable after construction; const methods are thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/bitmap.h"
#include "common/datum.h"
#include "common/types.h"

namespace basalt {

namespace pb {
class ColumnSchemaPB;
class SchemaPB;
}  // namespace pb

using ColumnId = uint32_t;

// Column count limit: keeps row bitmaps and per-row work bounded.
inline constexpr int kMaxColumns = 300;
inline constexpr int kMaxKeyColumns = 32;
inline constexpr size_t kMaxColumnNameLength = 256;
// Alignment a row buffer needs for typed access to its cells (that of absl::int128).
inline constexpr size_t kRowAlignment = 16;

// Storage encodings and codecs; numbering equals basalt.pb.EncodingType / CompressionType.
enum class EncodingType : uint8_t {
  kAuto = 0,
  kPlain = 1,
  kBitPacked = 2,
  kBitShuffle = 3,
  kRle = 4,
  kDict = 5,
  kPrefix = 6,
};
enum class CompressionType : uint8_t {
  kDefault = 0,
  kNone = 1,
  kSnappy = 2,
  kLz4 = 3,
  kZlib = 4,
  kZstd = 5,
};
std::string_view EncodingTypeName(EncodingType e);
std::string_view CompressionTypeName(CompressionType c);

// How a column is stored; kAuto / kDefault / 0 mean "the type's default" (decided by cfile).
struct ColumnStorageAttributes {
  EncodingType encoding = EncodingType::kAuto;
  CompressionType compression = CompressionType::kDefault;
  int32_t block_size_bytes = 0;
  bool operator==(const ColumnStorageAttributes&) const = default;
};

// One column: name, type, nullability, optional default and storage attributes.
// Copyable value type.
class ColumnSchema {
 public:
  ColumnSchema(std::string name, DataType type, bool is_nullable = false,
               std::optional<Datum> default_value = std::nullopt, TypeAttributes attributes = {},
               ColumnStorageAttributes storage = {}, std::string comment = "");

  const std::string& name() const { return name_; }
  DataType type() const { return type_; }
  const TypeInfo& type_info() const { return GetTypeInfo(type_); }
  bool is_nullable() const { return is_nullable_; }
  const TypeAttributes& attributes() const { return attributes_; }
  const ColumnStorageAttributes& storage() const { return storage_; }
  const std::string& comment() const { return comment_; }
  // The default is used for inserts that leave the column unset and for reading rows written
  // before the column was added. std::nullopt means no default.
  const std::optional<Datum>& default_value() const { return default_value_; }

  // "name INT32 NOT NULL DEFAULT 5", "price DECIMAL(10, 2) NULLABLE".
  std::string ToString() const;
  // The type with its attributes: "DECIMAL(10, 2)", "VARCHAR(20)", "INT32".
  std::string TypeToString() const;
  // Whether `other` has the same type with the same attributes, i.e. the same TypeToString(),
  // without formatting it (scans check every projected column this way).
  bool SameType(const ColumnSchema& other) const;
  // The same for a type and attributes given apart (a request's column, not built as a
  // ColumnSchema).
  bool SameType(DataType type, const TypeAttributes& attributes) const;
  bool Equals(const ColumnSchema& other) const;

  void set_name(std::string name) { name_ = std::move(name); }

 private:
  std::string name_;
  DataType type_;
  bool is_nullable_;
  std::optional<Datum> default_value_;
  TypeAttributes attributes_;
  ColumnStorageAttributes storage_;
  std::string comment_;
};

class Schema {
 public:
  // An empty schema (no columns); useful only as a placeholder.
  Schema() = default;

  // Validates and builds a schema. `ids` gives each column's id; when empty, ids 0..n-1 are
  // assigned. INVALID_ARGUMENT (with the offending column named) for: no columns; no key
  // columns or more than kMaxKeyColumns; more than kMaxColumns; an empty, too long or duplicate
  // column name; a nullable key column; an invalid type or type attributes; a default that does
  // not match the column type, violates its limits, or is NULL on a NOT NULL column; duplicate
  // ids or ids.size() != columns.size().
  static absl::StatusOr<Schema> Create(std::vector<ColumnSchema> columns, int num_key_columns,
                                       std::vector<ColumnId> ids = {}, uint32_t version = 0);

  // A schema of result columns without a primary key (aggregate results), validated like
  // Create (names, types, defaults); ids 0..n-1.
  static absl::StatusOr<Schema> CreateUnkeyed(std::vector<ColumnSchema> columns);

  int num_columns() const { return static_cast<int>(columns_.size()); }
  int num_key_columns() const { return num_key_columns_; }
  const ColumnSchema& column(int idx) const { return columns_[idx]; }
  const std::vector<ColumnSchema>& columns() const { return columns_; }
  ColumnId column_id(int idx) const { return ids_[idx]; }
  bool is_key_column(int idx) const { return idx < num_key_columns_; }
  // The id the next added column gets: greater than every id ever used by this table.
  ColumnId next_column_id() const { return next_column_id_; }
  uint32_t version() const { return version_; }
  bool has_nullables() const { return has_nullables_; }

  // Index of the column with this name / id, or -1.
  int find_column(std::string_view name) const;
  int find_column_by_id(ColumnId id) const;

  // Row layout (see the file comment).
  size_t column_offset(int idx) const { return offsets_[idx]; }
  size_t fixed_row_size() const { return fixed_row_size_; }
  // Bytes of the leading key cells, including alignment padding before the first non-key cell.
  size_t key_byte_size() const { return num_key_columns_ ? offsets_[num_key_columns_] : 0; }

  // A schema of the named columns, in the given order, keeping their ids. Key columns stay key
  // columns only if the projection starts with all of them in order; otherwise the projection
  // has no key columns. NOT_FOUND for an unknown name, INVALID_ARGUMENT for a repeated one.
  absl::StatusOr<Schema> Project(const std::vector<std::string>& names) const;
  // A schema of just the key columns.
  Schema KeyProjection() const;

  // Serialization. FromPB validates like Create and also rejects unknown types.
  void ToPB(pb::SchemaPB* pb) const;
  static absl::StatusOr<Schema> FromPB(const pb::SchemaPB& pb);
  static void ColumnToPB(const ColumnSchema& col, ColumnId id, bool is_key, pb::ColumnSchemaPB* pb);
  static absl::StatusOr<ColumnSchema> ColumnFromPB(const pb::ColumnSchemaPB& pb);

  // Same columns (names, types, attributes, nullability, defaults), ids and key.
  bool Equals(const Schema& other) const;
  // "(\n  key INT32 NOT NULL,\n  ...\n  PRIMARY KEY (key)\n)".
  std::string ToString() const;

  // Builders for schema changes. Each returns a new schema with version() + 1.
  // INVALID_ARGUMENT / ALREADY_EXISTS / NOT_FOUND as appropriate; dropping or renaming to an
  // existing name, dropping a key column, adding a NOT NULL column without a default are errors.
  absl::StatusOr<Schema> AddColumn(const ColumnSchema& col) const;
  absl::StatusOr<Schema> DropColumn(std::string_view name) const;
  absl::StatusOr<Schema> RenameColumn(std::string_view from, std::string_view to) const;

 private:
  static absl::StatusOr<Schema> CreateInternal(std::vector<ColumnSchema> columns,
                                               int num_key_columns, std::vector<ColumnId> ids,
                                               uint32_t version);
  void ComputeLayout();
  // Fills name_to_index_ and id_to_index_ for a schema of more than kLinearLookupColumns
  // columns; smaller ones are searched linearly (a point lookup builds two projections, and
  // filling the two maps was about 40% of Schema::Project, 2% of the tablet servers' CPU in W4).
  void BuildIndex();

  static constexpr int kLinearLookupColumns = 16;

  std::vector<ColumnSchema> columns_;
  std::vector<ColumnId> ids_;
  std::vector<size_t> offsets_;
  // Empty unless num_columns() > kLinearLookupColumns (BuildIndex).
  absl::flat_hash_map<std::string, int> name_to_index_;
  absl::flat_hash_map<ColumnId, int> id_to_index_;
  int num_key_columns_ = 0;
  size_t fixed_row_size_ = 0;
  ColumnId next_column_id_ = 0;
  uint32_t version_ = 0;
  bool has_nullables_ = false;
};

}  // namespace basalt
