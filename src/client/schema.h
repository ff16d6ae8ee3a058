#pragma once

// Table schemas in the client API (Kudu's KuduColumnSchema / KuduSchema / KuduSchemaBuilder).
//
// A Schema is an ordered list of columns whose leading columns form the primary key. Users build
// one with SchemaBuilder for CreateTable; Table::schema() returns the table's current schema as
// the master knows it (with column ids, so rows built against it can be written).
//
//   SchemaBuilder b;
//   b.AddColumn("key")->Type(ColumnSchema::INT32)->NotNull()->PrimaryKey();
//   b.AddColumn("v")->Type(ColumnSchema::STRING)->Nullable();
//   Schema schema;
//   absl::Status s = b.Build(&schema);

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "client/export.h"
#include "client/value.h"

namespace basalt::client {

class PartialRow;

namespace internal {
struct Access;
}  // namespace internal

// How a column is stored. AUTO_ENCODING / DEFAULT_COMPRESSION / 0 mean the type's default.
struct BASALT_EXPORT ColumnStorageAttributes {
  enum EncodingType {
    AUTO_ENCODING = 0,
    PLAIN_ENCODING = 1,
    BIT_PACKED = 2,
    BIT_SHUFFLE = 3,
    RLE = 4,
    DICT_ENCODING = 5,
    PREFIX_ENCODING = 6,
  };
  enum CompressionType {
    DEFAULT_COMPRESSION = 0,
    NO_COMPRESSION = 1,
    SNAPPY = 2,
    LZ4 = 3,
    ZLIB = 4,
    ZSTD = 5,
  };
  EncodingType encoding = AUTO_ENCODING;
  CompressionType compression = DEFAULT_COMPRESSION;
  int32_t block_size = 0;
};

// One column as the client sees it. Copyable value type.
class BASALT_EXPORT ColumnSchema {
 public:
  enum DataType {
    BOOL = 1,
    INT8 = 2,
    INT16 = 3,
    INT32 = 4,
    INT64 = 5,
    FLOAT = 6,
    DOUBLE = 7,
    STRING = 8,
    BINARY = 9,
    UNIXTIME_MICROS = 10,
    DATE = 11,
    DECIMAL = 12,  // DECIMAL(precision, scale), unscaled value in 32, 64 or 128 bits.
    VARCHAR = 13,  // STRING of at most length() characters.
  };
  // "INT32", "DECIMAL", ...
  static std::string DataTypeToString(DataType type);

  const std::string& name() const { return name_; }
  DataType type() const { return type_; }
  bool is_nullable() const { return nullable_; }
  int precision() const { return precision_; }  // DECIMAL only.
  int scale() const { return scale_; }          // DECIMAL only.
  int length() const { return length_; }        // VARCHAR only.
  const ColumnStorageAttributes& storage_attributes() const { return storage_; }
  const std::string& comment() const { return comment_; }
  const std::optional<Value>& default_value() const { return default_; }
  // "v STRING NULLABLE", "key INT32 NOT NULL".
  std::string ToString() const;

 private:
  friend struct internal::Access;
  std::string name_;
  DataType type_ = INT32;
  bool nullable_ = false;
  int precision_ = 0;
  int scale_ = 0;
  int length_ = 0;
  ColumnStorageAttributes storage_;
  std::string comment_;
  std::optional<Value> default_;
};

// A table schema. Copying is cheap (the columns are shared, immutable).
// Const methods are thread-safe.
class BASALT_EXPORT Schema {
 public:
  // An empty schema (no columns); a placeholder to Build() or assign into.
  Schema();
  Schema(const Schema& other);
  Schema& operator=(const Schema& other);
  ~Schema();

  int num_columns() const;
  int num_key_columns() const;
  // REQUIRES: 0 <= idx < num_columns().
  ColumnSchema Column(int idx) const;
  // The index of the named column, or -1.
  int FindColumn(std::string_view name) const;
  // Same columns, types, nullability, key and defaults.
  bool Equals(const Schema& other) const;
  // A new, empty row against this schema. The schema must outlive the row.
  std::unique_ptr<PartialRow> NewRow() const;
  // "(\n  key INT32 NOT NULL,\n  ...\n  PRIMARY KEY (key)\n)".
  std::string ToString() const;

 private:
  friend struct internal::Access;
  struct Data;
  std::shared_ptr<const Data> data_;
};

// Describes one column for SchemaBuilder::AddColumn, or a change to one column for
// TableAlterer::AlterColumn (only RenameTo is supported there). Methods return `this` for
// chaining; mistakes are reported by SchemaBuilder::Build / TableAlterer::Alter.
// Owned by the builder or alterer that handed it out. Not thread-safe.
class BASALT_EXPORT ColumnSpec {
 public:
  ColumnSpec* Type(ColumnSchema::DataType type);
  ColumnSpec* NotNull();
  ColumnSpec* Nullable();
  // Makes this column the (single-column) primary key; it must be the first column. Use
  // SchemaBuilder::SetPrimaryKey for a compound key.
  ColumnSpec* PrimaryKey();
  ColumnSpec* Default(const Value& value);
  ColumnSpec* Encoding(ColumnStorageAttributes::EncodingType encoding);
  ColumnSpec* Compression(ColumnStorageAttributes::CompressionType compression);
  ColumnSpec* BlockSize(int32_t block_size);
  ColumnSpec* Precision(int precision);  // DECIMAL.
  ColumnSpec* Scale(int scale);          // DECIMAL.
  ColumnSpec* Length(int length);        // VARCHAR.
  ColumnSpec* Comment(std::string comment);
  // TableAlterer::AlterColumn only.
  ColumnSpec* RenameTo(std::string new_name);

  ~ColumnSpec();

 private:
  friend struct internal::Access;
  friend class SchemaBuilder;
  friend class TableAlterer;
  explicit ColumnSpec(std::string name);

  std::string name_;
  std::optional<ColumnSchema::DataType> type_;
  std::optional<bool> nullable_;
  bool primary_key_ = false;
  std::optional<Value> default_;
  ColumnStorageAttributes storage_;
  bool storage_set_ = false;
  int precision_ = 0;
  int scale_ = 0;
  int length_ = 0;
  std::string comment_;
  std::optional<std::string> rename_to_;
};

// Builds a Schema from column specs. Not thread-safe.
class BASALT_EXPORT SchemaBuilder {
 public:
  SchemaBuilder();
  ~SchemaBuilder();
  SchemaBuilder(const SchemaBuilder&) = delete;
  SchemaBuilder& operator=(const SchemaBuilder&) = delete;

  // Adds a column; the returned spec is owned by the builder.
  ColumnSpec* AddColumn(std::string name);
  // A compound primary key: these columns, which must be the leading columns in this order.
  SchemaBuilder* SetPrimaryKey(std::vector<std::string> key_columns);

  // INVALID_ARGUMENT naming the column for: a column without a type; no primary key or more
  // than one way of giving it; key columns that are not the leading columns or are nullable;
  // duplicate names; a default of the wrong type; bad DECIMAL/VARCHAR attributes; RenameTo.
  absl::Status Build(Schema* schema);

 private:
  std::vector<std::unique_ptr<ColumnSpec>> columns_;
  std::vector<std::string> key_columns_;
};

}  // namespace basalt::client
