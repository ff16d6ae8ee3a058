#include "common/schema.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"

namespace basalt {

std::string_view EncodingTypeName(EncodingType e) {
  static constexpr std::string_view kNames[] = {"AUTO", "PLAIN", "BIT_PACKED", "BIT_SHUFFLE",
                                                "RLE",  "DICT",  "PREFIX"};
  auto i = static_cast<size_t>(e);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
}

std::string_view CompressionTypeName(CompressionType c) {
  static constexpr std::string_view kNames[] = {"DEFAULT", "NONE", "SNAPPY", "LZ4", "ZLIB", "ZSTD"};
  auto i = static_cast<size_t>(c);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
}

// ---- ColumnSchema ---------------------------------------------------------------------------

ColumnSchema::ColumnSchema(std::string name, DataType type, bool is_nullable,
                           std::optional<Datum> default_value, TypeAttributes attributes,
                           ColumnStorageAttributes storage, std::string comment)
    : name_(std::move(name)),
      type_(type),
      is_nullable_(is_nullable),
      default_value_(std::move(default_value)),
      attributes_(attributes),
      storage_(storage),
      comment_(std::move(comment)) {}

std::string ColumnSchema::TypeToString() const {
  const TypeInfo& info = GetTypeInfo(type_);
  if (info.is_decimal()) {
    return StrCat("DECIMAL(", attributes_.precision, ", ", attributes_.scale, ")");
  }
  if (type_ == DataType::kVarchar) return StrCat("VARCHAR(", attributes_.length, ")");
  return std::string(info.name());
}

bool ColumnSchema::SameType(const ColumnSchema& other) const {
  return SameType(other.type_, other.attributes_);
}

bool ColumnSchema::SameType(DataType type, const TypeAttributes& attributes) const {
  if (type_ != type) return false;
  // The attributes TypeToString shows, and only those.
  if (GetTypeInfo(type_).is_decimal()) {
    return attributes_.precision == attributes.precision && attributes_.scale == attributes.scale;
  }
  if (type_ == DataType::kVarchar) return attributes_.length == attributes.length;
  return true;
}

std::string ColumnSchema::ToString() const {
  std::string out = StrCat(name_, " ", TypeToString(), is_nullable_ ? " NULLABLE" : " NOT NULL");
  if (default_value_.has_value()) {
    std::string value = default_value_->ToString();
    if (GetTypeInfo(type_).is_decimal() && !default_value_->is_null()) {
      value = FormatDecimal(default_value_->int128_value(), attributes_.scale);
    }
    StrAppend(&out, " DEFAULT ", value);
  }
  return out;
}

bool ColumnSchema::Equals(const ColumnSchema& other) const {
  if (name_ != other.name_ || type_ != other.type_ || is_nullable_ != other.is_nullable_ ||
      attributes_ != other.attributes_ || storage_ != other.storage_ ||
      default_value_.has_value() != other.default_value_.has_value()) {
    return false;
  }
  return !default_value_.has_value() || *default_value_ == *other.default_value_;
}

// ---- Schema ---------------------------------------------------------------------------------

namespace {

absl::Status ValidateColumn(const ColumnSchema& col, bool is_key) {
  if (col.name().empty()) return absl::InvalidArgumentError("column name must not be empty");
  if (col.name().size() > kMaxColumnNameLength) {
    return absl::InvalidArgumentError(StrCat("column name '", col.name().substr(0, 32),
                                             "...' is longer than ", kMaxColumnNameLength,
                                             " bytes"));
  }
  if (!IsValidDataType(static_cast<int>(col.type()))) {
    return absl::InvalidArgumentError("invalid data type");
  }
  BASALT_RETURN_IF_ERROR(ValidateTypeAttributes(col.type(), col.attributes()));
  if (is_key && col.is_nullable()) {
    return absl::InvalidArgumentError("primary key columns must be NOT NULL");
  }
  if (col.default_value().has_value()) {
    const Datum& d = *col.default_value();
    if (d.is_null()) {
      if (!col.is_nullable()) {
        return absl::InvalidArgumentError("NOT NULL column cannot have a NULL default");
      }
    } else {
      if (d.type() != col.type()) {
        return absl::InvalidArgumentError(StrCat("default value ", d.ToString(), " is ",
                                                 DataTypeName(d.type()), ", not ",
                                                 col.TypeToString()));
      }
      BASALT_RETURN_IF_ERROR_PREPEND(ValidateCell(col.type(), col.attributes(), d.cell()),
                                     "bad default value");
    }
  }
  if (col.storage().block_size_bytes < 0) {
    return absl::InvalidArgumentError("block size must not be negative");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Schema> Schema::Create(std::vector<ColumnSchema> columns, int num_key_columns,
                                      std::vector<ColumnId> ids, uint32_t version) {
  if (num_key_columns < 1 && !columns.empty()) {
    return absl::InvalidArgumentError(StrCat("a schema needs 1..", kMaxKeyColumns,
                                             " primary key columns, got ", num_key_columns));
  }
  return CreateInternal(std::move(columns), num_key_columns, std::move(ids), version);
}

absl::StatusOr<Schema> Schema::CreateUnkeyed(std::vector<ColumnSchema> columns) {
  return CreateInternal(std::move(columns), 0, {}, 0);
}

absl::StatusOr<Schema> Schema::CreateInternal(std::vector<ColumnSchema> columns,
                                              int num_key_columns, std::vector<ColumnId> ids,
                                              uint32_t version) {
  if (columns.empty()) return absl::InvalidArgumentError("a schema needs at least one column");
  if (columns.size() > static_cast<size_t>(kMaxColumns)) {
    return absl::InvalidArgumentError(
        StrCat("too many columns: ", columns.size(), " (the limit is ", kMaxColumns, ")"));
  }
  if (num_key_columns < 0 || num_key_columns > kMaxKeyColumns ||
      num_key_columns > static_cast<int>(columns.size())) {
    return absl::InvalidArgumentError(StrCat("a schema needs 1..", kMaxKeyColumns,
                                             " primary key columns, got ", num_key_columns));
  }
  if (ids.empty()) {
    for (size_t i = 0; i < columns.size(); i++) ids.push_back(static_cast<ColumnId>(i));
  } else if (ids.size() != columns.size()) {
    return absl::InvalidArgumentError(
        StrCat("got ", ids.size(), " column ids for ", columns.size(), " columns"));
  }
  Schema s;
  s.version_ = version;
  absl::flat_hash_set<std::string_view> names;
  absl::flat_hash_set<ColumnId> seen_ids;
  for (size_t i = 0; i < columns.size(); i++) {
    const ColumnSchema& col = columns[i];
    bool is_key = static_cast<int>(i) < num_key_columns;
    BASALT_RETURN_IF_ERROR_PREPEND(ValidateColumn(col, is_key),
                                   StrCat("column '", col.name(), "'"));
    if (!names.insert(col.name()).second) {
      return absl::InvalidArgumentError(StrCat("duplicate column name '", col.name(), "'"));
    }
    if (!seen_ids.insert(ids[i]).second) {
      return absl::InvalidArgumentError(StrCat("duplicate column id ", ids[i]));
    }
    s.next_column_id_ = std::max<ColumnId>(s.next_column_id_, ids[i] + 1);
    s.has_nullables_ |= col.is_nullable();
  }
  s.columns_ = std::move(columns);
  s.ids_ = std::move(ids);
  s.num_key_columns_ = num_key_columns;
  s.BuildIndex();
  s.ComputeLayout();
  return s;
}

void Schema::BuildIndex() {
  name_to_index_.clear();
  id_to_index_.clear();
  if (num_columns() <= kLinearLookupColumns) return;
  for (int i = 0; i < num_columns(); i++) {
    name_to_index_.emplace(columns_[i].name(), i);
    id_to_index_.emplace(ids_[i], i);
  }
}

namespace {

size_t CellAlignment(const TypeInfo& info) {
  if (info.is_variable_length()) return alignof(std::string_view);
  if (info.physical_type() == PhysicalType::kInt128) return alignof(absl::int128);
  return info.size();
}

}  // namespace

void Schema::ComputeLayout() {
  offsets_.clear();
  size_t offset = 0;
  for (const ColumnSchema& col : columns_) {
    // Natural alignment, so a row buffer whose base is aligned to kRowAlignment can be read
    // through typed pointers as well as with memcpy.
    size_t align = CellAlignment(col.type_info());
    offset = (offset + align - 1) / align * align;
    offsets_.push_back(offset);
    offset += col.type_info().size();
  }
  // One extra entry so key_byte_size() works when every column is a key column.
  offsets_.push_back(offset);
  fixed_row_size_ = offset;
}

int Schema::find_column(std::string_view name) const {
  if (num_columns() <= kLinearLookupColumns) {
    for (int i = 0; i < num_columns(); i++) {
      if (columns_[i].name() == name) return i;
    }
    return -1;
  }
  auto it = name_to_index_.find(ToAbsl(name));
  return it == name_to_index_.end() ? -1 : it->second;
}

int Schema::find_column_by_id(ColumnId id) const {
  if (num_columns() <= kLinearLookupColumns) {
    for (int i = 0; i < num_columns(); i++) {
      if (ids_[i] == id) return i;
    }
    return -1;
  }
  auto it = id_to_index_.find(id);
  return it == id_to_index_.end() ? -1 : it->second;
}

absl::StatusOr<Schema> Schema::Project(const std::vector<std::string>& names) const {
  std::vector<ColumnSchema> cols;
  std::vector<ColumnId> ids;
  for (const std::string& name : names) {
    int idx = find_column(name);
    if (idx < 0) return absl::NotFoundError(StrCat("no column named '", name, "'"));
    if (std::find(ids.begin(), ids.end(), ids_[idx]) != ids.end()) {
      return absl::InvalidArgumentError(StrCat("column '", name, "' projected twice"));
    }
    cols.push_back(columns_[idx]);
    ids.push_back(ids_[idx]);
  }
  int num_key = 0;
  while (num_key < num_key_columns_ && num_key < static_cast<int>(ids.size()) &&
         ids[num_key] == ids_[num_key]) {
    num_key++;
  }
  if (num_key != num_key_columns_) num_key = 0;
  // A projection may have no key columns, which Create rejects, so build it directly. The
  // columns were validated when this schema was created.
  Schema s;
  s.columns_ = std::move(cols);
  s.ids_ = std::move(ids);
  s.num_key_columns_ = num_key;
  s.version_ = version_;
  s.next_column_id_ = next_column_id_;
  for (int i = 0; i < s.num_columns(); i++) s.has_nullables_ |= s.columns_[i].is_nullable();
  s.BuildIndex();
  s.ComputeLayout();
  return s;
}

Schema Schema::KeyProjection() const {
  std::vector<std::string> names;
  for (int i = 0; i < num_key_columns_; i++) names.push_back(columns_[i].name());
  return Project(names).value();
}

bool Schema::Equals(const Schema& other) const {
  if (num_key_columns_ != other.num_key_columns_ || ids_ != other.ids_ ||
      columns_.size() != other.columns_.size()) {
    return false;
  }
  for (size_t i = 0; i < columns_.size(); i++) {
    if (!columns_[i].Equals(other.columns_[i])) return false;
  }
  return true;
}

std::string Schema::ToString() const {
  std::string out = "(\n";
  for (const ColumnSchema& col : columns_) StrAppend(&out, "  ", col.ToString(), ",\n");
  std::vector<std::string> keys;
  for (int i = 0; i < num_key_columns_; i++) keys.push_back(columns_[i].name());
  StrAppend(&out, "  PRIMARY KEY (", absl::StrJoin(keys, ", "), ")\n)");
  return out;
}

// ---- Schema changes ---------------------------------------------------------------------------

absl::StatusOr<Schema> Schema::AddColumn(const ColumnSchema& col) const {
  if (find_column(col.name()) >= 0) {
    return absl::AlreadyExistsError(StrCat("column '", col.name(), "' already exists"));
  }
  if (!col.is_nullable() && (!col.default_value() || col.default_value()->is_null())) {
    return absl::InvalidArgumentError(
        StrCat("column '", col.name(), "' is NOT NULL, so it needs a default for existing rows"));
  }
  std::vector<ColumnSchema> cols = columns_;
  std::vector<ColumnId> ids = ids_;
  cols.push_back(col);
  ids.push_back(next_column_id_);
  BASALT_ASSIGN_OR_RETURN(Schema s,
                          Create(std::move(cols), num_key_columns_, std::move(ids), version_ + 1));
  return s;
}

absl::StatusOr<Schema> Schema::DropColumn(std::string_view name) const {
  int idx = find_column(name);
  if (idx < 0) return absl::NotFoundError(StrCat("no column named '", name, "'"));
  if (is_key_column(idx)) {
    return absl::InvalidArgumentError(StrCat("cannot drop primary key column '", name, "'"));
  }
  std::vector<ColumnSchema> cols = columns_;
  std::vector<ColumnId> ids = ids_;
  cols.erase(cols.begin() + idx);
  ids.erase(ids.begin() + idx);
  BASALT_ASSIGN_OR_RETURN(Schema s,
                          Create(std::move(cols), num_key_columns_, std::move(ids), version_ + 1));
  // Ids are never reused: the dropped column's id stays consumed.
  s.next_column_id_ = std::max(s.next_column_id_, next_column_id_);
  return s;
}

absl::StatusOr<Schema> Schema::RenameColumn(std::string_view from, std::string_view to) const {
  int idx = find_column(from);
  if (idx < 0) return absl::NotFoundError(StrCat("no column named '", from, "'"));
  if (from != to && find_column(to) >= 0) {
    return absl::AlreadyExistsError(StrCat("column '", to, "' already exists"));
  }
  std::vector<ColumnSchema> cols = columns_;
  cols[idx].set_name(std::string(to));
  BASALT_ASSIGN_OR_RETURN(Schema s, Create(std::move(cols), num_key_columns_, ids_, version_ + 1));
  s.next_column_id_ = std::max(s.next_column_id_, next_column_id_);
  return s;
}

// ---- Protobuf ---------------------------------------------------------------------------------

void Schema::ColumnToPB(const ColumnSchema& col, ColumnId id, bool is_key, pb::ColumnSchemaPB* pb) {
  pb->Clear();
  pb->set_id(id);
  pb->set_name(col.name());
  pb->set_type(static_cast<pb::DataType>(col.type()));
  pb->set_is_key(is_key);
  pb->set_is_nullable(col.is_nullable());
  if (col.attributes() != TypeAttributes{}) {
    pb->mutable_type_attributes()->set_precision(col.attributes().precision);
    pb->mutable_type_attributes()->set_scale(col.attributes().scale);
    pb->mutable_type_attributes()->set_length(col.attributes().length);
  }
  // A NULL default is the same as no default, so only non-NULL defaults are written.
  if (col.default_value() && !col.default_value()->is_null()) {
    pb->set_default_value(col.default_value()->SerializeCell());
  }
  pb->set_encoding(static_cast<pb::EncodingType>(col.storage().encoding));
  pb->set_compression(static_cast<pb::CompressionType>(col.storage().compression));
  pb->set_block_size_bytes(col.storage().block_size_bytes);
  pb->set_comment(col.comment());
}

absl::StatusOr<ColumnSchema> Schema::ColumnFromPB(const pb::ColumnSchemaPB& pb) {
  if (!IsValidDataType(pb.type())) {
    return absl::InvalidArgumentError(
        StrCat("column '", pb.name(), "' has unknown type ", static_cast<int>(pb.type())));
  }
  if (pb.encoding() < 0 || pb.encoding() > static_cast<int>(EncodingType::kPrefix) ||
      pb.compression() < 0 || pb.compression() > static_cast<int>(CompressionType::kZstd)) {
    return absl::InvalidArgumentError(
        StrCat("column '", pb.name(), "' has an unknown encoding or compression"));
  }
  auto type = static_cast<DataType>(pb.type());
  std::optional<Datum> def;
  if (pb.has_default_value()) {
    auto d = Datum::FromSerializedCell(type, pb.default_value());
    if (!d.ok()) return PrependToStatus(d.status(), StrCat("column '", pb.name(), "'"));
    def = *std::move(d);
  }
  TypeAttributes attrs{pb.type_attributes().precision(), pb.type_attributes().scale(),
                       pb.type_attributes().length()};
  ColumnStorageAttributes storage{static_cast<EncodingType>(pb.encoding()),
                                  static_cast<CompressionType>(pb.compression()),
                                  pb.block_size_bytes()};
  return ColumnSchema(pb.name(), type, pb.is_nullable(), std::move(def), attrs, storage,
                      pb.comment());
}

void Schema::ToPB(pb::SchemaPB* pb) const {
  pb->Clear();
  for (int i = 0; i < num_columns(); i++) {
    ColumnToPB(columns_[i], ids_[i], is_key_column(i), pb->add_columns());
  }
  pb->set_next_column_id(next_column_id_);
  pb->set_version(version_);
}

absl::StatusOr<Schema> Schema::FromPB(const pb::SchemaPB& pb) {
  std::vector<ColumnSchema> cols;
  std::vector<ColumnId> ids;
  int num_key = 0;
  for (const pb::ColumnSchemaPB& c : pb.columns()) {
    if (c.is_key()) {
      if (num_key != static_cast<int>(cols.size())) {
        return absl::InvalidArgumentError(
            StrCat("key column '", c.name(), "' follows a non-key column"));
      }
      num_key++;
    }
    BASALT_ASSIGN_OR_RETURN(ColumnSchema col, ColumnFromPB(c));
    cols.push_back(std::move(col));
    ids.push_back(c.id());
  }
  BASALT_ASSIGN_OR_RETURN(Schema s, Create(std::move(cols), num_key, std::move(ids), pb.version()));
  if (pb.next_column_id() < s.next_column_id_) {
    return absl::InvalidArgumentError(
        StrCat("next_column_id ", pb.next_column_id(), " is not above every column id"));
  }
  s.next_column_id_ = pb.next_column_id();
  return s;
}

}  // namespace basalt
