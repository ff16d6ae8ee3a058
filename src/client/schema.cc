#include "client/schema.h"

#include <utility>

#include "client/client_internal.h"
#include "client/partial_row.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt::client {

using internal::Access;

struct Schema::Data {
  basalt::Schema schema;
};

namespace {

absl::StatusOr<basalt::DataType> ToInternalType(ColumnSchema::DataType type, int precision) {
  switch (type) {
    case ColumnSchema::DECIMAL:
      return DecimalTypeForPrecision(precision);
    case ColumnSchema::VARCHAR:
      return basalt::DataType::kVarchar;
    default:
      if (type >= ColumnSchema::BOOL && type <= ColumnSchema::DATE) {
        return static_cast<basalt::DataType>(type);
      }
      return absl::InvalidArgumentError(StrCat("unknown column type ", static_cast<int>(type)));
  }
}

ColumnSchema::DataType ToPublicType(basalt::DataType type) {
  if (GetTypeInfo(type).is_decimal()) return ColumnSchema::DECIMAL;
  if (type == basalt::DataType::kVarchar) return ColumnSchema::VARCHAR;
  return static_cast<ColumnSchema::DataType>(type);
}

bool IsIntegerBacked(basalt::DataType type) {
  const TypeInfo& info = GetTypeInfo(type);
  return info.is_integer() || info.is_decimal() || type == basalt::DataType::kDate ||
         type == basalt::DataType::kUnixtimeMicros;
}

Value DatumToValue(const Datum& d) {
  const TypeInfo& info = GetTypeInfo(d.type());
  if (d.type() == basalt::DataType::kBool) return Value::FromBool(d.bool_value());
  if (d.type() == basalt::DataType::kFloat) return Value::FromFloat(d.float_value());
  if (d.type() == basalt::DataType::kDouble) return Value::FromDouble(d.double_value());
  if (info.is_variable_length()) return Value::FromString(d.string_value());
  if (info.physical_type() == PhysicalType::kInt128) {
    return Value::FromInt(static_cast<int64_t>(d.int128_value()));
  }
  return Value::FromInt(d.int_value());
}

}  // namespace

// ---- Value
// ---------------------------------------------------------------------------------------

Value::Value(Kind kind, int64_t i, double d, std::string_view s)
    : kind_(kind), int_(i), double_(d), string_(s) {}
Value Value::FromInt(int64_t v) { return Value(Kind::kInt, v, 0, {}); }
Value Value::FromBool(bool v) { return Value(Kind::kBool, v ? 1 : 0, 0, {}); }
Value Value::FromFloat(float v) { return Value(Kind::kFloat, 0, v, {}); }
Value Value::FromDouble(double v) { return Value(Kind::kDouble, 0, v, {}); }
Value Value::FromString(std::string_view v) { return Value(Kind::kString, 0, 0, v); }
Value::Value(const Value& other) = default;
Value& Value::operator=(const Value& other) = default;
Value::Value(Value&& other) noexcept = default;
Value& Value::operator=(Value&& other) noexcept = default;
Value::~Value() = default;

std::string Value::ToString() const {
  switch (kind_) {
    case Kind::kInt:
      return StrCat(int_);
    case Kind::kBool:
      return int_ ? "true" : "false";
    case Kind::kFloat:
    case Kind::kDouble:
      return StrCat(double_);
    case Kind::kString:
      return StrCat("'", string_, "'");
  }
  return "?";
}

absl::StatusOr<Datum> Access::ToDatum(const Value& value, const basalt::ColumnSchema& col) {
  const basalt::DataType type = col.type();
  auto mismatch = [&]() {
    return absl::InvalidArgumentError(StrCat("value ", value.ToString(), " does not fit column '",
                                             col.name(), "' of type ", col.TypeToString()));
  };
  Datum d;
  switch (value.kind_) {
    case Value::Kind::kInt: {
      if (!IsIntegerBacked(type)) return mismatch();
      auto cast = Datum::Int64(value.int_).CastTo(type);
      if (!cast.ok()) return mismatch();
      d = *std::move(cast);
      break;
    }
    case Value::Kind::kBool:
      if (type != basalt::DataType::kBool) return mismatch();
      d = Datum::Bool(value.int_ != 0);
      break;
    case Value::Kind::kFloat:
    case Value::Kind::kDouble:
      if (type == basalt::DataType::kFloat) {
        d = Datum::Float(static_cast<float>(value.double_));
      } else if (type == basalt::DataType::kDouble) {
        d = Datum::Double(value.double_);
      } else {
        return mismatch();
      }
      break;
    case Value::Kind::kString:
      if (type == basalt::DataType::kString) {
        d = Datum::String(value.string_);
      } else if (type == basalt::DataType::kBinary) {
        d = Datum::Binary(value.string_);
      } else if (type == basalt::DataType::kVarchar) {
        d = Datum::Varchar(value.string_);
      } else {
        return mismatch();
      }
      break;
  }
  BASALT_RETURN_IF_ERROR_PREPEND(ValidateCell(type, col.attributes(), d.cell()),
                                 StrCat("column '", col.name(), "'"));
  return d;
}

// ---- ColumnSchema
// --------------------------------------------------------------------------------

std::string ColumnSchema::DataTypeToString(DataType type) {
  static constexpr const char* kNames[] = {
      "UNKNOWN", "BOOL",   "INT8",   "INT16",           "INT32", "INT64",   "FLOAT",
      "DOUBLE",  "STRING", "BINARY", "UNIXTIME_MICROS", "DATE",  "DECIMAL", "VARCHAR"};
  int i = static_cast<int>(type);
  return i > 0 && i < static_cast<int>(std::size(kNames)) ? kNames[i] : "UNKNOWN";
}

std::string ColumnSchema::ToString() const {
  std::string out = StrCat(name_, " ", DataTypeToString(type_));
  if (type_ == DECIMAL) StrAppend(&out, "(", precision_, ", ", scale_, ")");
  if (type_ == VARCHAR) StrAppend(&out, "(", length_, ")");
  StrAppend(&out, nullable_ ? " NULLABLE" : " NOT NULL");
  if (default_.has_value()) StrAppend(&out, " DEFAULT ", default_->ToString());
  return out;
}

ColumnSchema Access::MakeColumn(const basalt::ColumnSchema& col) {
  ColumnSchema c;
  c.name_ = col.name();
  c.type_ = ToPublicType(col.type());
  c.nullable_ = col.is_nullable();
  c.precision_ = col.attributes().precision;
  c.scale_ = col.attributes().scale;
  c.length_ = col.attributes().length;
  c.storage_.encoding = static_cast<ColumnStorageAttributes::EncodingType>(col.storage().encoding);
  c.storage_.compression =
      static_cast<ColumnStorageAttributes::CompressionType>(col.storage().compression);
  c.storage_.block_size = col.storage().block_size_bytes;
  c.comment_ = col.comment();
  if (col.default_value().has_value() && !col.default_value()->is_null()) {
    c.default_ = DatumToValue(*col.default_value());
  }
  return c;
}

// ---- Schema
// --------------------------------------------------------------------------------------

Schema::Schema() : data_(std::make_shared<Data>()) {}
Schema::Schema(const Schema& other) = default;
Schema& Schema::operator=(const Schema& other) = default;
Schema::~Schema() = default;

int Schema::num_columns() const { return data_->schema.num_columns(); }
int Schema::num_key_columns() const { return data_->schema.num_key_columns(); }
ColumnSchema Schema::Column(int idx) const { return Access::MakeColumn(data_->schema.column(idx)); }
int Schema::FindColumn(std::string_view name) const { return data_->schema.find_column(name); }
bool Schema::Equals(const Schema& other) const { return data_->schema.Equals(other.data_->schema); }
std::unique_ptr<PartialRow> Schema::NewRow() const { return std::make_unique<PartialRow>(this); }
std::string Schema::ToString() const { return data_->schema.ToString(); }

const basalt::Schema& Access::Internal(const Schema& schema) { return schema.data_->schema; }

Schema Access::MakeSchema(basalt::Schema schema) {
  Schema s;
  auto data = std::make_shared<Schema::Data>();
  data->schema = std::move(schema);
  s.data_ = std::move(data);
  return s;
}

// ---- ColumnSpec
// ----------------------------------------------------------------------------------

ColumnSpec::ColumnSpec(std::string name) : name_(std::move(name)) {}
ColumnSpec::~ColumnSpec() = default;
ColumnSpec* ColumnSpec::Type(ColumnSchema::DataType type) {
  type_ = type;
  return this;
}
ColumnSpec* ColumnSpec::NotNull() {
  nullable_ = false;
  return this;
}
ColumnSpec* ColumnSpec::Nullable() {
  nullable_ = true;
  return this;
}
ColumnSpec* ColumnSpec::PrimaryKey() {
  primary_key_ = true;
  return this;
}
ColumnSpec* ColumnSpec::Default(const Value& value) {
  default_ = value;
  return this;
}
ColumnSpec* ColumnSpec::Encoding(ColumnStorageAttributes::EncodingType encoding) {
  storage_.encoding = encoding;
  storage_set_ = true;
  return this;
}
ColumnSpec* ColumnSpec::Compression(ColumnStorageAttributes::CompressionType compression) {
  storage_.compression = compression;
  storage_set_ = true;
  return this;
}
ColumnSpec* ColumnSpec::BlockSize(int32_t block_size) {
  storage_.block_size = block_size;
  storage_set_ = true;
  return this;
}
ColumnSpec* ColumnSpec::Precision(int precision) {
  precision_ = precision;
  return this;
}
ColumnSpec* ColumnSpec::Scale(int scale) {
  scale_ = scale;
  return this;
}
ColumnSpec* ColumnSpec::Length(int length) {
  length_ = length;
  return this;
}
ColumnSpec* ColumnSpec::Comment(std::string comment) {
  comment_ = std::move(comment);
  return this;
}
ColumnSpec* ColumnSpec::RenameTo(std::string new_name) {
  rename_to_ = std::move(new_name);
  return this;
}

absl::StatusOr<basalt::ColumnSchema> Access::ColumnFromSpec(const ColumnSpec& spec) {
  auto err = [&](std::string_view what) {
    return absl::InvalidArgumentError(StrCat("column '", spec.name_, "': ", what));
  };
  if (!spec.type_.has_value()) return err("no type given");
  if (spec.rename_to_.has_value()) return err("RenameTo is only valid in TableAlterer");
  auto type = ToInternalType(*spec.type_, spec.precision_);
  if (!type.ok()) return err(std::string(type.status().message()));
  TypeAttributes attrs;
  if (*spec.type_ == ColumnSchema::DECIMAL) {
    attrs.precision = spec.precision_;
    attrs.scale = spec.scale_;
  } else if (*spec.type_ == ColumnSchema::VARCHAR) {
    attrs.length = spec.length_;
  } else if (spec.precision_ != 0 || spec.scale_ != 0 || spec.length_ != 0) {
    return err("precision, scale and length apply only to DECIMAL and VARCHAR");
  }
  BASALT_RETURN_IF_ERROR_PREPEND(ValidateTypeAttributes(*type, attrs),
                                 StrCat("column '", spec.name_, "'"));
  const bool nullable = spec.nullable_.value_or(!spec.primary_key_);
  basalt::ColumnStorageAttributes storage;
  storage.encoding = static_cast<basalt::EncodingType>(spec.storage_.encoding);
  storage.compression = static_cast<basalt::CompressionType>(spec.storage_.compression);
  storage.block_size_bytes = spec.storage_.block_size;
  basalt::ColumnSchema col(spec.name_, *type, nullable, std::nullopt, attrs, storage,
                           spec.comment_);
  if (spec.default_.has_value()) {
    BASALT_ASSIGN_OR_RETURN(Datum d, ToDatum(*spec.default_, col));
    col = basalt::ColumnSchema(spec.name_, *type, nullable, std::move(d), attrs, storage,
                               spec.comment_);
  }
  return col;
}

// ---- SchemaBuilder
// -------------------------------------------------------------------------------

SchemaBuilder::SchemaBuilder() = default;
SchemaBuilder::~SchemaBuilder() = default;

ColumnSpec* SchemaBuilder::AddColumn(std::string name) {
  columns_.push_back(std::unique_ptr<ColumnSpec>(new ColumnSpec(std::move(name))));
  return columns_.back().get();
}

SchemaBuilder* SchemaBuilder::SetPrimaryKey(std::vector<std::string> key_columns) {
  key_columns_ = std::move(key_columns);
  return this;
}

absl::Status SchemaBuilder::Build(Schema* schema) {
  std::vector<std::string> key = key_columns_;
  for (size_t i = 0; i < columns_.size(); i++) {
    if (!columns_[i]->primary_key_) continue;
    if (!key_columns_.empty()) {
      return absl::InvalidArgumentError(
          StrCat("column '", columns_[i]->name_, "': PrimaryKey() together with SetPrimaryKey()"));
    }
    if (i != 0 || !key.empty()) {
      return absl::InvalidArgumentError(
          StrCat("column '", columns_[i]->name_,
                 "': a single-column primary key must be the first column (use SetPrimaryKey for a "
                 "compound key)"));
    }
    key.push_back(columns_[i]->name_);
  }
  if (key.empty()) return absl::InvalidArgumentError("no primary key given");
  if (key.size() > columns_.size()) {
    return absl::InvalidArgumentError("more primary key columns than columns");
  }
  std::vector<basalt::ColumnSchema> cols;
  for (size_t i = 0; i < columns_.size(); i++) {
    const bool is_key = i < key.size();
    if (is_key && columns_[i]->name_ != key[i]) {
      return absl::InvalidArgumentError(StrCat("primary key column '", key[i], "' must be column ",
                                               i, " (found '", columns_[i]->name_,
                                               "'): key columns come first, in key order"));
    }
    if (is_key && columns_[i]->nullable_.value_or(false)) {
      return absl::InvalidArgumentError(
          StrCat("column '", columns_[i]->name_, "': a primary key column cannot be nullable"));
    }
    ColumnSpec spec = *columns_[i];
    if (is_key) spec.nullable_ = false;
    BASALT_ASSIGN_OR_RETURN(basalt::ColumnSchema col, Access::ColumnFromSpec(spec));
    cols.push_back(std::move(col));
  }
  BASALT_ASSIGN_OR_RETURN(basalt::Schema s,
                          basalt::Schema::Create(std::move(cols), static_cast<int>(key.size())));
  *schema = Access::MakeSchema(std::move(s));
  return absl::OkStatus();
}

}  // namespace basalt::client
