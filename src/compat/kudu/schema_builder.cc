// KuduColumnSpec and KuduSchemaBuilder: forward to Basalt's ColumnSpec and SchemaBuilder, adding
// what Kudu's API needs (owned KuduValue defaults rescaled for DECIMAL columns, and NotSupported
// for the Kudu features Basalt lacks).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

namespace bc = basalt::client;
using internal::Access;

void ColumnSpecDeleter::operator()(KuduColumnSpec* spec) const { Access::DeleteSpec(spec); }

absl::Status KuduColumnSpec::Data::Finish() {
  if (!unsupported.ok()) return unsupported;
  if (default_value != nullptr) {
    bc::Value v = bc::Value::FromInt(0);
    absl::Status s = Access::Data(*default_value).ToBasalt(scale, &v);
    if (!s.ok()) return absl::InvalidArgumentError(spec_name + ": " + std::string(s.message()));
    spec->Default(v);
  }
  return absl::OkStatus();
}

namespace {

// Keeps the first unsupported request of a spec.
void Unsupported(absl::Status* s, const std::string& what) {
  if (s->ok()) *s = absl::UnimplementedError(what + " is not supported by Basalt");
}

}  // namespace

KuduColumnSpec::KuduColumnSpec(Data* data) : data_(data) {}
KuduColumnSpec::~KuduColumnSpec() { delete data_; }

KuduColumnSpec* KuduColumnSpec::Default(KuduValue* value) {
  data_->default_value.reset(value);
  return this;
}
KuduColumnSpec* KuduColumnSpec::Compression(
    KuduColumnStorageAttributes::CompressionType compression) {
  data_->spec->Compression(ToBasaltCompression(compression));
  return this;
}
KuduColumnSpec* KuduColumnSpec::Encoding(KuduColumnStorageAttributes::EncodingType encoding) {
  data_->spec->Encoding(ToBasaltEncoding(encoding));
  return this;
}
KuduColumnSpec* KuduColumnSpec::BlockSize(int32_t block_size) {
  data_->spec->BlockSize(block_size);
  return this;
}
KuduColumnSpec* KuduColumnSpec::Precision(int8_t precision) {
  data_->spec->Precision(precision);
  return this;
}
KuduColumnSpec* KuduColumnSpec::Scale(int8_t scale) {
  data_->scale = scale;
  data_->spec->Scale(scale);
  return this;
}
KuduColumnSpec* KuduColumnSpec::Length(uint16_t length) {
  data_->spec->Length(length);
  return this;
}
KuduColumnSpec* KuduColumnSpec::PrimaryKey() {
  data_->spec->PrimaryKey();
  return this;
}
KuduColumnSpec* KuduColumnSpec::NonUniquePrimaryKey() {
  Unsupported(&data_->unsupported, "column '" + data_->spec_name + "': a non-unique primary key");
  return this;
}
KuduColumnSpec* KuduColumnSpec::NotNull() {
  data_->spec->NotNull();
  return this;
}
KuduColumnSpec* KuduColumnSpec::Nullable() {
  data_->spec->Nullable();
  return this;
}
KuduColumnSpec* KuduColumnSpec::Immutable() {
  Unsupported(&data_->unsupported, "column '" + data_->spec_name + "': an immutable column");
  return this;
}
KuduColumnSpec* KuduColumnSpec::Mutable() { return this; }  // Columns are always mutable.
KuduColumnSpec* KuduColumnSpec::Type(KuduColumnSchema::DataType type) {
  if (type == KuduColumnSchema::SERIAL) {
    Unsupported(&data_->unsupported, "column '" + data_->spec_name + "': type SERIAL");
  } else {
    data_->spec->Type(ToBasaltType(type));
  }
  return this;
}
KuduColumnSpec* KuduColumnSpec::RemoveDefault() {
  Unsupported(&data_->unsupported, "column '" + data_->spec_name + "': RemoveDefault");
  return this;
}
KuduColumnSpec* KuduColumnSpec::RenameTo(const std::string& new_name) {
  data_->spec->RenameTo(new_name);
  return this;
}
KuduColumnSpec* KuduColumnSpec::Comment(const std::string& comment) {
  data_->spec->Comment(comment);
  return this;
}

// ---- KuduSchemaBuilder ------------------------------------------------------------------------

class KuduSchemaBuilder::Data {
 public:
  bc::SchemaBuilder builder;
  std::vector<ColumnSpecPtr> specs;
  absl::Status unsupported;
};

KuduSchemaBuilder::KuduSchemaBuilder() : data_(new Data) {}
KuduSchemaBuilder::~KuduSchemaBuilder() { delete data_; }

KuduColumnSpec* KuduSchemaBuilder::AddColumn(const std::string& name) {
  data_->specs.emplace_back(Access::MakeSpec(data_->builder.AddColumn(name), name));
  return data_->specs.back().get();
}

KuduSchemaBuilder* KuduSchemaBuilder::SetPrimaryKey(const std::vector<std::string>& key_col_names) {
  data_->builder.SetPrimaryKey(key_col_names);
  return this;
}

KuduSchemaBuilder* KuduSchemaBuilder::SetNonUniquePrimaryKey(
    const std::vector<std::string>& key_col_names) {
  Unsupported(&data_->unsupported, "a non-unique primary key");
  return this;
}

Status KuduSchemaBuilder::Build(KuduSchema* schema) {
  KUDU_RETURN_NOT_OK(FromAbsl(data_->unsupported));
  for (const ColumnSpecPtr& spec : data_->specs) {
    KUDU_RETURN_NOT_OK(FromAbsl(Access::Data(spec.get())->Finish()));
  }
  return FromAbsl(data_->builder.Build(Access::Mutable(schema)));
}

}  // namespace client
}  // namespace kudu
