#pragma once

// Table schemas: KuduColumnSchema (one column), KuduSchema (the ordered columns, the leading ones
// forming the primary key), KuduSchemaBuilder and KuduColumnSpec (to describe a new schema or,
// through KuduTableAlterer, a change to a column), and the column attributes.
//
//   KuduSchemaBuilder b;
//   b.AddColumn("key")->Type(KuduColumnSchema::INT32)->NotNull()->PrimaryKey();
//   b.AddColumn("v")->Type(KuduColumnSchema::STRING)->Nullable();
//   KuduSchema schema;
//   KUDU_CHECK_OK(b.Build(&schema));
//
// Basalt has neither immutable columns nor non-unique primary keys (auto-incrementing columns):
// asking for them makes Build/Alter return NotSupported. Schemas and column schemas are copyable
// values; const methods are thread-safe. Builders and specs are not thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kudu/client/stubs.h"
#include "kudu/util/kudu_export.h"
#include "kudu/util/status.h"

namespace kudu {

class KuduPartialRow;

namespace client {

namespace internal {
struct Access;
}  // namespace internal

class KuduSchema;
class KuduValue;

// DECIMAL precision and scale, VARCHAR length. Copyable.
class KUDU_EXPORT KuduColumnTypeAttributes {
 public:
  KuduColumnTypeAttributes();
  KuduColumnTypeAttributes(const KuduColumnTypeAttributes& other);
  KuduColumnTypeAttributes(int8_t precision, int8_t scale);
  explicit KuduColumnTypeAttributes(uint16_t length);
  ~KuduColumnTypeAttributes();
  KuduColumnTypeAttributes& operator=(const KuduColumnTypeAttributes& other);
  void CopyFrom(const KuduColumnTypeAttributes& other);

  int8_t precision() const;
  int8_t scale() const;
  uint16_t length() const;

 private:
  friend struct internal::Access;
  KuduColumnTypeAttributes(int8_t precision, int8_t scale, uint16_t length);
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
};

// Encoding, compression and block size of a column. Basalt has no GROUP_VARINT encoding (read as
// AUTO_ENCODING); Basalt's BIT_PACKED encoding and ZSTD compression read back as AUTO_ENCODING
// and DEFAULT_COMPRESSION.
class KUDU_EXPORT KuduColumnStorageAttributes {
 public:
  enum EncodingType {
    AUTO_ENCODING = 0,
    PLAIN_ENCODING = 1,
    PREFIX_ENCODING = 2,
    RLE = 4,
    DICT_ENCODING = 5,
    BIT_SHUFFLE = 6,
    GROUP_VARINT = 3  // Deprecated in Kudu; not in Basalt.
  };
  enum CompressionType {
    DEFAULT_COMPRESSION = 0,
    NO_COMPRESSION = 1,
    SNAPPY = 2,
    LZ4 = 3,
    ZLIB = 4,
  };

  explicit KuduColumnStorageAttributes(EncodingType encoding = AUTO_ENCODING,
                                       CompressionType compression = DEFAULT_COMPRESSION,
                                       int32_t block_size = 0)
      ATTRIBUTE_DEPRECATED("will become private")
      : encoding_(encoding), compression_(compression), block_size_(block_size) {}

  EncodingType encoding() const { return encoding_; }
  CompressionType compression() const { return compression_; }
  // "encoding=PLAIN_ENCODING, compression=LZ4, block_size=0".
  std::string ToString() const;
  // Case-insensitive name ("plain_encoding", "LZ4") to enum; InvalidArgument for an unknown one.
  static Status StringToEncodingType(const std::string& encoding, EncodingType* type);
  static Status StringToCompressionType(const std::string& compression, CompressionType* type);

 private:
  friend struct internal::Access;
  EncodingType encoding_;
  CompressionType compression_;
  int32_t block_size_;
};

// One column of a schema. Obtained from KuduSchema::Column or HasColumn. Copyable.
class KUDU_EXPORT KuduColumnSchema {
 public:
  // Numbering as in Kudu. SERIAL (auto-incrementing) columns do not exist in Basalt.
  enum DataType {
    INT8 = 0,
    INT16 = 1,
    INT32 = 2,
    INT64 = 3,
    STRING = 4,
    BOOL = 5,
    FLOAT = 6,
    DOUBLE = 7,
    BINARY = 8,
    UNIXTIME_MICROS = 9,
    DECIMAL = 10,
    VARCHAR = 11,
    TIMESTAMP = UNIXTIME_MICROS,  // Deprecated name.
    DATE = 12,
    SERIAL = 13
  };
  // "INT32", "UNIXTIME_MICROS", ...
  static std::string DataTypeToString(DataType type);
  // Case-insensitive inverse of DataTypeToString; InvalidArgument for an unknown name.
  static Status StringToDataType(const std::string& type_str, DataType* type);

  KuduColumnSchema(const KuduColumnSchema& other);
  ~KuduColumnSchema();
  KuduColumnSchema& operator=(const KuduColumnSchema& other);
  void CopyFrom(const KuduColumnSchema& other);
  bool Equals(const KuduColumnSchema& other) const ATTRIBUTE_DEPRECATED("use operator==");
  // Same name, type, nullability, attributes and default.
  bool operator==(const KuduColumnSchema& rhs) const;
  bool operator!=(const KuduColumnSchema& rhs) const;

  const std::string& name() const;
  DataType type() const;
  bool is_nullable() const;
  bool is_immutable() const;  // Always false in Basalt.
  KuduColumnTypeAttributes type_attributes() const;
  KuduColumnStorageAttributes storage_attributes() const;
  const std::string& comment() const;

 private:
  friend struct internal::Access;
  KuduColumnSchema();
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
};

// Describes a column for KuduSchemaBuilder::AddColumn or KuduTableAlterer::AddColumn, or a change
// for KuduTableAlterer::AlterColumn (where Basalt supports only RenameTo). Methods return `this`
// for chaining; mistakes are reported by Build or Alter. Owned by the builder or alterer.
class KUDU_EXPORT KuduColumnSpec {
 public:
  // Takes ownership of `value`.
  KuduColumnSpec* Default(KuduValue* value);
  KuduColumnSpec* Compression(KuduColumnStorageAttributes::CompressionType compression);
  KuduColumnSpec* Encoding(KuduColumnStorageAttributes::EncodingType encoding);
  KuduColumnSpec* BlockSize(int32_t block_size);
  KuduColumnSpec* Precision(int8_t precision);
  KuduColumnSpec* Scale(int8_t scale);
  KuduColumnSpec* Length(uint16_t length);
  KuduColumnSpec* PrimaryKey();
  KuduColumnSpec* NonUniquePrimaryKey();  // NotSupported at Build.
  KuduColumnSpec* NotNull();
  KuduColumnSpec* Nullable();
  KuduColumnSpec* Immutable();  // NotSupported at Build/Alter.
  KuduColumnSpec* Mutable();    // Columns are always mutable: no effect.
  KuduColumnSpec* Type(KuduColumnSchema::DataType type);
  KuduColumnSpec* RemoveDefault();  // NotSupported at Alter.
  KuduColumnSpec* RenameTo(const std::string& new_name);
  KuduColumnSpec* Comment(const std::string& comment);

 private:
  friend struct internal::Access;
  friend class KuduSchemaBuilder;
  friend class KuduTableAlterer;
  class KUDU_NO_EXPORT Data;
  explicit KuduColumnSpec(Data* data);
  ~KuduColumnSpec();
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduColumnSpec);
};

// Builds a KuduSchema from column specs.
class KUDU_EXPORT KuduSchemaBuilder {
 public:
  KuduSchemaBuilder();
  ~KuduSchemaBuilder();
  // The returned spec is owned by the builder.
  KuduColumnSpec* AddColumn(const std::string& name);
  // A compound primary key: these columns, which must be the leading ones in this order.
  KuduSchemaBuilder* SetPrimaryKey(const std::vector<std::string>& key_col_names);
  // NotSupported at Build: Basalt keys are unique.
  KuduSchemaBuilder* SetNonUniquePrimaryKey(const std::vector<std::string>& key_col_names);
  // InvalidArgument naming the column for a bad schema (no type, no or a nullable key, duplicate
  // names, a default of the wrong type, bad DECIMAL/VARCHAR attributes); NotSupported for what
  // Basalt lacks.
  Status Build(KuduSchema* schema);

 private:
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduSchemaBuilder);
};

class KUDU_EXPORT KuduSchema {
 public:
  // An empty schema, to Build() or assign into.
  KuduSchema();
  KuduSchema(const KuduSchema& other);
  ~KuduSchema();
  KuduSchema& operator=(const KuduSchema& other);
  void CopyFrom(const KuduSchema& other);
  // Rebuilds this schema from columns whose first `key_columns` form the key.
  Status Reset(const std::vector<KuduColumnSchema>& columns, int key_columns)
      ATTRIBUTE_DEPRECATED("use KuduSchemaBuilder") WARN_UNUSED_RESULT;
  bool Equals(const KuduSchema& other) const ATTRIBUTE_DEPRECATED("use operator==");
  bool operator==(const KuduSchema& rhs) const;
  bool operator!=(const KuduSchema& rhs) const;

  // REQUIRES: idx < num_columns().
  KuduColumnSchema Column(size_t idx) const;
  // True, and *col_schema set (if not null), when the column exists.
  bool HasColumn(const std::string& col_name, KuduColumnSchema* col_schema) const;
  size_t num_columns() const;
  void GetPrimaryKeyColumnIndexes(std::vector<int>* indexes) const;
  int GetAutoIncrementingColumnIndex() const;  // Always -1 in Basalt.
  static const char* GetAutoIncrementingColumnName();
  // A new, empty row against this schema, owned by the caller; destroy it before the schema.
  KuduPartialRow* NewRow() const;
  std::string ToString() const;

 private:
  friend struct internal::Access;
  size_t num_key_columns() const;
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
};

}  // namespace client
}  // namespace kudu
