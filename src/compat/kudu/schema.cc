// KuduColumnTypeAttributes, KuduColumnStorageAttributes, KuduColumnSchema, KuduSchema, and the
// Kudu <-> Basalt numbering of types and storage attributes.

#include <strings.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compat/kudu/internal.h"

// This file constructs KuduColumnStorageAttributes, whose constructor Kudu marks deprecated for
// callers outside the library.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace kudu {
namespace client {

namespace bc = basalt::client;
using internal::Access;

namespace {

struct TypeName {
  KuduColumnSchema::DataType kudu;
  bc::ColumnSchema::DataType basalt;  // 0 when Basalt has no such type.
  const char* name;
};
constexpr TypeName kTypes[] = {
    {KuduColumnSchema::INT8, bc::ColumnSchema::INT8, "INT8"},
    {KuduColumnSchema::INT16, bc::ColumnSchema::INT16, "INT16"},
    {KuduColumnSchema::INT32, bc::ColumnSchema::INT32, "INT32"},
    {KuduColumnSchema::INT64, bc::ColumnSchema::INT64, "INT64"},
    {KuduColumnSchema::STRING, bc::ColumnSchema::STRING, "STRING"},
    {KuduColumnSchema::BOOL, bc::ColumnSchema::BOOL, "BOOL"},
    {KuduColumnSchema::FLOAT, bc::ColumnSchema::FLOAT, "FLOAT"},
    {KuduColumnSchema::DOUBLE, bc::ColumnSchema::DOUBLE, "DOUBLE"},
    {KuduColumnSchema::BINARY, bc::ColumnSchema::BINARY, "BINARY"},
    {KuduColumnSchema::UNIXTIME_MICROS, bc::ColumnSchema::UNIXTIME_MICROS, "UNIXTIME_MICROS"},
    {KuduColumnSchema::DECIMAL, bc::ColumnSchema::DECIMAL, "DECIMAL"},
    {KuduColumnSchema::VARCHAR, bc::ColumnSchema::VARCHAR, "VARCHAR"},
    {KuduColumnSchema::DATE, bc::ColumnSchema::DATE, "DATE"},
    {KuduColumnSchema::SERIAL, static_cast<bc::ColumnSchema::DataType>(0), "SERIAL"},
};

struct EncodingName {
  KuduColumnStorageAttributes::EncodingType kudu;
  bc::ColumnStorageAttributes::EncodingType basalt;
  const char* name;
};
// GROUP_VARINT has no Basalt counterpart: written as AUTO_ENCODING.
constexpr EncodingName kEncodings[] = {
    {KuduColumnStorageAttributes::AUTO_ENCODING, bc::ColumnStorageAttributes::AUTO_ENCODING,
     "AUTO_ENCODING"},
    {KuduColumnStorageAttributes::PLAIN_ENCODING, bc::ColumnStorageAttributes::PLAIN_ENCODING,
     "PLAIN_ENCODING"},
    {KuduColumnStorageAttributes::PREFIX_ENCODING, bc::ColumnStorageAttributes::PREFIX_ENCODING,
     "PREFIX_ENCODING"},
    {KuduColumnStorageAttributes::GROUP_VARINT, bc::ColumnStorageAttributes::AUTO_ENCODING,
     "GROUP_VARINT"},
    {KuduColumnStorageAttributes::RLE, bc::ColumnStorageAttributes::RLE, "RLE"},
    {KuduColumnStorageAttributes::DICT_ENCODING, bc::ColumnStorageAttributes::DICT_ENCODING,
     "DICT_ENCODING"},
    {KuduColumnStorageAttributes::BIT_SHUFFLE, bc::ColumnStorageAttributes::BIT_SHUFFLE,
     "BIT_SHUFFLE"},
};

// Kudu and Basalt number compressions alike up to ZLIB; Basalt adds ZSTD.
constexpr const char* kCompressionNames[] = {"DEFAULT_COMPRESSION", "NO_COMPRESSION", "SNAPPY",
                                             "LZ4", "ZLIB"};

}  // namespace

bc::ColumnSchema::DataType ToBasaltType(KuduColumnSchema::DataType type) {
  for (const TypeName& t : kTypes) {
    if (t.kudu == type) return t.basalt;
  }
  return static_cast<bc::ColumnSchema::DataType>(0);
}

KuduColumnSchema::DataType FromBasaltType(bc::ColumnSchema::DataType type) {
  for (const TypeName& t : kTypes) {
    if (t.basalt == type) return t.kudu;
  }
  return KuduColumnSchema::STRING;  // Unreachable: every Basalt type has a Kudu name.
}

bc::ColumnStorageAttributes::EncodingType ToBasaltEncoding(
    KuduColumnStorageAttributes::EncodingType e) {
  for (const EncodingName& n : kEncodings) {
    if (n.kudu == e) return n.basalt;
  }
  return bc::ColumnStorageAttributes::AUTO_ENCODING;
}

bc::ColumnStorageAttributes::CompressionType ToBasaltCompression(
    KuduColumnStorageAttributes::CompressionType c) {
  return static_cast<bc::ColumnStorageAttributes::CompressionType>(c);
}

// ---- KuduColumnTypeAttributes -----------------------------------------------------------------

class KuduColumnTypeAttributes::Data {
 public:
  int8_t precision = 0;
  int8_t scale = 0;
  uint16_t length = 0;
};

KuduColumnTypeAttributes::KuduColumnTypeAttributes() : data_(new Data) {}
KuduColumnTypeAttributes::KuduColumnTypeAttributes(const KuduColumnTypeAttributes& other)
    : data_(new Data(*other.data_)) {}
KuduColumnTypeAttributes::KuduColumnTypeAttributes(int8_t precision, int8_t scale)
    : KuduColumnTypeAttributes(precision, scale, 0) {}
KuduColumnTypeAttributes::KuduColumnTypeAttributes(uint16_t length)
    : KuduColumnTypeAttributes(0, 0, length) {}
KuduColumnTypeAttributes::KuduColumnTypeAttributes(int8_t precision, int8_t scale, uint16_t length)
    : data_(new Data{precision, scale, length}) {}
KuduColumnTypeAttributes::~KuduColumnTypeAttributes() { delete data_; }
KuduColumnTypeAttributes& KuduColumnTypeAttributes::operator=(
    const KuduColumnTypeAttributes& other) {
  CopyFrom(other);
  return *this;
}
void KuduColumnTypeAttributes::CopyFrom(const KuduColumnTypeAttributes& other) {
  *data_ = *other.data_;
}
int8_t KuduColumnTypeAttributes::precision() const { return data_->precision; }
int8_t KuduColumnTypeAttributes::scale() const { return data_->scale; }
uint16_t KuduColumnTypeAttributes::length() const { return data_->length; }

// ---- KuduColumnStorageAttributes --------------------------------------------------------------

std::string KuduColumnStorageAttributes::ToString() const {
  std::string enc = "UNKNOWN";
  for (const EncodingName& n : kEncodings) {
    if (n.kudu == encoding_) enc = n.name;
  }
  const int c = static_cast<int>(compression_);
  const std::string comp = c >= 0 && c <= ZLIB ? kCompressionNames[c] : "UNKNOWN";
  return "encoding=" + enc + ", compression=" + comp +
         ", block_size=" + std::to_string(block_size_);
}

Status KuduColumnStorageAttributes::StringToEncodingType(const std::string& encoding,
                                                         EncodingType* type) {
  for (const EncodingName& n : kEncodings) {
    if (strcasecmp(encoding.c_str(), n.name) == 0) {
      *type = n.kudu;
      return Status::OK();
    }
  }
  return Status::InvalidArgument("encoding type not available", encoding);
}

Status KuduColumnStorageAttributes::StringToCompressionType(const std::string& compression,
                                                            CompressionType* type) {
  for (int c = DEFAULT_COMPRESSION; c <= ZLIB; c++) {
    if (strcasecmp(compression.c_str(), kCompressionNames[c]) == 0) {
      *type = static_cast<CompressionType>(c);
      return Status::OK();
    }
  }
  return Status::InvalidArgument("compression type not available", compression);
}

KuduColumnStorageAttributes Access::MakeStorage(const bc::ColumnStorageAttributes& storage) {
  auto enc = KuduColumnStorageAttributes::AUTO_ENCODING;
  for (const EncodingName& n : kEncodings) {
    if (n.basalt == storage.encoding && n.kudu != KuduColumnStorageAttributes::GROUP_VARINT) {
      enc = n.kudu;
    }
  }
  const int c = static_cast<int>(storage.compression);
  const auto comp = c <= KuduColumnStorageAttributes::ZLIB
                        ? static_cast<KuduColumnStorageAttributes::CompressionType>(c)
                        : KuduColumnStorageAttributes::DEFAULT_COMPRESSION;
  return KuduColumnStorageAttributes(enc, comp, storage.block_size);
}

// ---- KuduColumnSchema -------------------------------------------------------------------------

std::string KuduColumnSchema::DataTypeToString(DataType type) {
  for (const TypeName& t : kTypes) {
    if (t.kudu == type) return t.name;
  }
  return "UNKNOWN_TYPE";
}

Status KuduColumnSchema::StringToDataType(const std::string& type_str, DataType* type) {
  for (const TypeName& t : kTypes) {
    if (strcasecmp(type_str.c_str(), t.name) == 0) {
      *type = t.kudu;
      return Status::OK();
    }
  }
  if (strcasecmp(type_str.c_str(), "TIMESTAMP") == 0) {
    *type = UNIXTIME_MICROS;
    return Status::OK();
  }
  return Status::InvalidArgument("data type not available", type_str);
}

KuduColumnSchema::KuduColumnSchema() : data_(new Data) {}
KuduColumnSchema::KuduColumnSchema(const KuduColumnSchema& other) : data_(new Data(*other.data_)) {}
KuduColumnSchema::~KuduColumnSchema() { delete data_; }
KuduColumnSchema& KuduColumnSchema::operator=(const KuduColumnSchema& other) {
  CopyFrom(other);
  return *this;
}
void KuduColumnSchema::CopyFrom(const KuduColumnSchema& other) { *data_ = *other.data_; }
bool KuduColumnSchema::Equals(const KuduColumnSchema& other) const { return *this == other; }

bool KuduColumnSchema::operator==(const KuduColumnSchema& rhs) const {
  const bc::ColumnSchema& a = data_->column;
  const bc::ColumnSchema& b = rhs.data_->column;
  const auto& da = a.default_value();
  const auto& db = b.default_value();
  const bool same_default =
      da.has_value() == db.has_value() && (!da.has_value() || da->ToString() == db->ToString());
  return a.name() == b.name() && a.type() == b.type() && a.is_nullable() == b.is_nullable() &&
         a.precision() == b.precision() && a.scale() == b.scale() && a.length() == b.length() &&
         a.storage_attributes().encoding == b.storage_attributes().encoding &&
         a.storage_attributes().compression == b.storage_attributes().compression &&
         a.storage_attributes().block_size == b.storage_attributes().block_size &&
         a.comment() == b.comment() && same_default;
}
bool KuduColumnSchema::operator!=(const KuduColumnSchema& rhs) const { return !(*this == rhs); }

const std::string& KuduColumnSchema::name() const { return data_->column.name(); }
KuduColumnSchema::DataType KuduColumnSchema::type() const {
  return FromBasaltType(data_->column.type());
}
bool KuduColumnSchema::is_nullable() const { return data_->column.is_nullable(); }
bool KuduColumnSchema::is_immutable() const { return false; }
KuduColumnTypeAttributes KuduColumnSchema::type_attributes() const {
  const bc::ColumnSchema& c = data_->column;
  return Access::MakeTypeAttributes(c.precision(), c.scale(), c.length());
}
KuduColumnStorageAttributes KuduColumnSchema::storage_attributes() const {
  return Access::MakeStorage(data_->column.storage_attributes());
}
const std::string& KuduColumnSchema::comment() const { return data_->column.comment(); }

KuduColumnSchema Access::MakeColumn(const bc::ColumnSchema& column) {
  KuduColumnSchema out;
  out.data_->column = column;
  return out;
}

// ---- KuduSchema -------------------------------------------------------------------------------

KuduSchema::KuduSchema() : data_(new Data) {}
KuduSchema::KuduSchema(const KuduSchema& other) : data_(new Data(*other.data_)) {}
KuduSchema::~KuduSchema() { delete data_; }
KuduSchema& KuduSchema::operator=(const KuduSchema& other) {
  CopyFrom(other);
  return *this;
}
void KuduSchema::CopyFrom(const KuduSchema& other) {
  if (this != &other) data_->schema = other.data_->schema;
}

Status KuduSchema::Reset(const std::vector<KuduColumnSchema>& columns, int key_columns) {
  if (key_columns < 0 || static_cast<size_t>(key_columns) > columns.size()) {
    return Status::InvalidArgument("bad number of key columns", std::to_string(key_columns));
  }
  bc::SchemaBuilder b;
  std::vector<std::string> keys;
  for (size_t i = 0; i < columns.size(); i++) {
    const bc::ColumnSchema& c = Access::Basalt(columns[i]);
    bc::ColumnSpec* spec = b.AddColumn(c.name())->Type(c.type())->Comment(c.comment());
    if (c.is_nullable()) {
      spec->Nullable();
    } else {
      spec->NotNull();
    }
    if (c.type() == bc::ColumnSchema::DECIMAL) spec->Precision(c.precision())->Scale(c.scale());
    if (c.type() == bc::ColumnSchema::VARCHAR) spec->Length(c.length());
    spec->Encoding(c.storage_attributes().encoding)
        ->Compression(c.storage_attributes().compression)
        ->BlockSize(c.storage_attributes().block_size);
    if (c.default_value().has_value()) spec->Default(*c.default_value());
    if (static_cast<int>(i) < key_columns) keys.push_back(c.name());
  }
  b.SetPrimaryKey(std::move(keys));
  return FromAbsl(b.Build(&data_->schema));
}

bool KuduSchema::Equals(const KuduSchema& other) const { return *this == other; }
bool KuduSchema::operator==(const KuduSchema& rhs) const {
  return data_->schema.Equals(rhs.data_->schema);
}
bool KuduSchema::operator!=(const KuduSchema& rhs) const { return !(*this == rhs); }

KuduColumnSchema KuduSchema::Column(size_t idx) const {
  return Access::MakeColumn(data_->schema.Column(static_cast<int>(idx)));
}

bool KuduSchema::HasColumn(const std::string& col_name, KuduColumnSchema* col_schema) const {
  const int idx = data_->schema.FindColumn(col_name);
  if (idx < 0) return false;
  if (col_schema != nullptr) *col_schema = Column(idx);
  return true;
}

size_t KuduSchema::num_columns() const { return data_->schema.num_columns(); }
size_t KuduSchema::num_key_columns() const { return data_->schema.num_key_columns(); }

void KuduSchema::GetPrimaryKeyColumnIndexes(std::vector<int>* indexes) const {
  indexes->clear();
  for (int i = 0; i < data_->schema.num_key_columns(); i++) indexes->push_back(i);
}

int KuduSchema::GetAutoIncrementingColumnIndex() const { return -1; }
const char* KuduSchema::GetAutoIncrementingColumnName() { return "auto_incrementing_id"; }

KuduPartialRow* KuduSchema::NewRow() const { return Access::MakeRow(data_->schema.NewRow()); }

std::string KuduSchema::ToString() const { return data_->schema.ToString(); }

KuduSchema Access::MakeSchema(const bc::Schema& schema) {
  KuduSchema out;
  out.data_->schema = schema;
  return out;
}

}  // namespace client
}  // namespace kudu
