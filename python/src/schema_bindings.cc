// Schema, ColumnSchema, SchemaBuilder and ColumnSpec (kudu-python's schema module shape).

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>

#include "py_common.h"
#include "schema_bindings.h"

namespace basalt::python {
namespace {

using client::ColumnStorageAttributes;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// An enum given as its pybind11 value, an int, or a name (case-insensitive, aliases allowed).
template <typename Enum>
Enum ParseEnum(py::handle v, const std::map<std::string, Enum>& names, const char* what) {
  if (py::isinstance<py::str>(v)) {
    auto it = names.find(Lower(v.cast<std::string>()));
    if (it == names.end())
      RaiseInvalid(std::string("unknown ") + what + " '" + v.cast<std::string>() + "'");
    return it->second;
  }
  try {
    return v.cast<Enum>();
  } catch (const py::cast_error&) {
  }
  if (PyLong_Check(v.ptr())) return static_cast<Enum>(v.cast<int>());
  RaiseInvalidType(std::string("a ") + what + " is a basalt constant or a name, not " +
                   Py_TYPE(v.ptr())->tp_name);
}

const std::map<std::string, ColumnSchema::DataType>& TypeNames() {
  static const auto* names = new std::map<std::string, ColumnSchema::DataType>{
      {"bool", ColumnSchema::BOOL},
      {"int8", ColumnSchema::INT8},
      {"int16", ColumnSchema::INT16},
      {"int32", ColumnSchema::INT32},
      {"int64", ColumnSchema::INT64},
      {"float", ColumnSchema::FLOAT},
      {"double", ColumnSchema::DOUBLE},
      {"string", ColumnSchema::STRING},
      {"binary", ColumnSchema::BINARY},
      {"unixtime_micros", ColumnSchema::UNIXTIME_MICROS},
      {"timestamp", ColumnSchema::UNIXTIME_MICROS},
      {"date", ColumnSchema::DATE},
      {"decimal", ColumnSchema::DECIMAL},
      {"varchar", ColumnSchema::VARCHAR}};
  return *names;
}

ColumnStorageAttributes::EncodingType ParseEncoding(py::handle v) {
  static const std::map<std::string, ColumnStorageAttributes::EncodingType> names{
      {"auto", ColumnStorageAttributes::AUTO_ENCODING},
      {"plain", ColumnStorageAttributes::PLAIN_ENCODING},
      {"bit_packed", ColumnStorageAttributes::BIT_PACKED},
      {"bitshuffle", ColumnStorageAttributes::BIT_SHUFFLE},
      {"bit_shuffle", ColumnStorageAttributes::BIT_SHUFFLE},
      {"rle", ColumnStorageAttributes::RLE},
      {"dict", ColumnStorageAttributes::DICT_ENCODING},
      {"prefix", ColumnStorageAttributes::PREFIX_ENCODING}};
  return ParseEnum(v, names, "encoding");
}

ColumnStorageAttributes::CompressionType ParseCompression(py::handle v) {
  static const std::map<std::string, ColumnStorageAttributes::CompressionType> names{
      {"default", ColumnStorageAttributes::DEFAULT_COMPRESSION},
      {"none", ColumnStorageAttributes::NO_COMPRESSION},
      {"snappy", ColumnStorageAttributes::SNAPPY},
      {"lz4", ColumnStorageAttributes::LZ4},
      {"zlib", ColumnStorageAttributes::ZLIB},
      {"zstd", ColumnStorageAttributes::ZSTD}};
  return ParseEnum(v, names, "compression");
}

// Python value of a column default, for ColumnSchema.default.
py::object DefaultToPython(const client::Value& v) {
  // Value exposes only ToString(): "5", "true", "1.5", "'abc'". Good enough for display.
  return py::str(v.ToString());
}

}  // namespace

ColumnSchema::DataType ParseType(py::handle v) { return ParseEnum(v, TypeNames(), "type"); }

PyColumnSpec::PyColumnSpec(client::ColumnSpec* s, std::string name) : spec(s) {
  meta.name = std::move(name);
}

PyColumnSpec& PyColumnSpec::Configure(py::handle type_, py::handle nullable, bool primary_key,
                                      py::handle default_, py::handle encoding,
                                      py::handle compression, py::handle precision,
                                      py::handle scale, py::handle length, py::handle comment,
                                      py::handle block_size) {
  if (!type_.is_none()) SetType(ParseType(type_));
  if (!nullable.is_none()) SetNullable(nullable.cast<bool>());
  if (primary_key) spec->PrimaryKey();
  if (!default_.is_none()) default_value = py::reinterpret_borrow<py::object>(default_);
  if (!encoding.is_none()) spec->Encoding(ParseEncoding(encoding));
  if (!compression.is_none()) spec->Compression(ParseCompression(compression));
  if (!precision.is_none()) SetPrecision(precision.cast<int>());
  if (!scale.is_none()) SetScale(scale.cast<int>());
  if (!length.is_none()) SetLength(length.cast<int>());
  if (!comment.is_none()) spec->Comment(comment.cast<std::string>());
  if (!block_size.is_none()) spec->BlockSize(block_size.cast<int32_t>());
  return *this;
}

void PyColumnSpec::SetType(ColumnSchema::DataType t) {
  meta.type = t;
  type_set = true;
  spec->Type(t);
}
void PyColumnSpec::SetNullable(bool n) {
  meta.nullable = n;
  if (n) {
    spec->Nullable();
  } else {
    spec->NotNull();
  }
}
void PyColumnSpec::SetPrecision(int p) {
  meta.precision = p;
  spec->Precision(p);
}
void PyColumnSpec::SetScale(int s) {
  meta.scale = s;
  spec->Scale(s);
}
void PyColumnSpec::SetLength(int l) {
  meta.length = l;
  spec->Length(l);
}

void PyColumnSpec::ApplyDefault() {
  if (!default_value || default_value.is_none()) return;
  if (!type_set) RaiseInvalid("column '" + meta.name + "': a default needs the column's type");
  spec->Default(ToValue(meta, default_value));
}

void BindColumnSpec(py::class_<PyColumnSpec>& cls) {
  // Every setter returns the spec itself, so calls chain as in kudu-python.
  cls.def(
         "type",
         [](PyColumnSpec& s, py::handle t) -> PyColumnSpec& {
           s.SetType(ParseType(t));
           return s;
         },
         py::return_value_policy::reference_internal, "Sets the column type.")
      .def(
          "nullable",
          [](PyColumnSpec& s, bool n) -> PyColumnSpec& {
            s.SetNullable(n);
            return s;
          },
          py::arg("nullable") = true, py::return_value_policy::reference_internal)
      .def(
          "primary_key",
          [](PyColumnSpec& s) -> PyColumnSpec& {
            s.spec->PrimaryKey();
            return s;
          },
          py::return_value_policy::reference_internal,
          "Makes this (first) column the single-column primary key.")
      .def(
          "default",
          [](PyColumnSpec& s, py::object v) -> PyColumnSpec& {
            s.default_value = v;
            return s;
          },
          py::return_value_policy::reference_internal)
      .def(
          "encoding",
          [](PyColumnSpec& s, py::handle e) -> PyColumnSpec& {
            s.spec->Encoding(ParseEncoding(e));
            return s;
          },
          py::return_value_policy::reference_internal)
      .def(
          "compression",
          [](PyColumnSpec& s, py::handle c) -> PyColumnSpec& {
            s.spec->Compression(ParseCompression(c));
            return s;
          },
          py::return_value_policy::reference_internal)
      .def(
          "block_size",
          [](PyColumnSpec& s, int32_t n) -> PyColumnSpec& {
            s.spec->BlockSize(n);
            return s;
          },
          py::return_value_policy::reference_internal)
      .def(
          "precision",
          [](PyColumnSpec& s, int p) -> PyColumnSpec& {
            s.SetPrecision(p);
            return s;
          },
          py::return_value_policy::reference_internal)
      .def(
          "scale",
          [](PyColumnSpec& s, int v) -> PyColumnSpec& {
            s.SetScale(v);
            return s;
          },
          py::return_value_policy::reference_internal)
      .def(
          "length",
          [](PyColumnSpec& s, int l) -> PyColumnSpec& {
            s.SetLength(l);
            return s;
          },
          py::return_value_policy::reference_internal)
      .def(
          "comment",
          [](PyColumnSpec& s, std::string c) -> PyColumnSpec& {
            s.spec->Comment(std::move(c));
            return s;
          },
          py::return_value_policy::reference_internal)
      .def(
          "rename",
          [](PyColumnSpec& s, std::string n) -> PyColumnSpec& {
            s.spec->RenameTo(std::move(n));
            return s;
          },
          py::return_value_policy::reference_internal,
          "New name of the column (TableAlterer.alter_column only).")
      .def_property_readonly("name", [](const PyColumnSpec& s) { return s.meta.name; });
}

namespace {

// SchemaBuilder: owns the C++ builder and the Python-side specs (which remember the type and
// scale a default needs, converted at build()).
struct PySchemaBuilder {
  client::SchemaBuilder builder;
  std::vector<std::unique_ptr<PyColumnSpec>> specs;
};

py::list Names(const client::Schema& s, int from, int to) {
  py::list out;
  for (int i = from; i < to; ++i) out.append(s.Column(i).name());
  return out;
}

int SchemaIndex(const client::Schema& s, py::handle key) {
  if (py::isinstance<py::str>(key)) {
    int i = s.FindColumn(key.cast<std::string>());
    if (i < 0) RaiseInvalid("unknown column '" + key.cast<std::string>() + "'");
    return i;
  }
  int i = key.cast<int>();
  if (i < 0) i += s.num_columns();
  if (i < 0 || i >= s.num_columns()) throw py::index_error("column index out of range");
  return i;
}

}  // namespace

void BindSchema(py::module_& m) {
  py::enum_<ColumnSchema::DataType>(m, "Type", "Column types.")
      .value("BOOL", ColumnSchema::BOOL)
      .value("INT8", ColumnSchema::INT8)
      .value("INT16", ColumnSchema::INT16)
      .value("INT32", ColumnSchema::INT32)
      .value("INT64", ColumnSchema::INT64)
      .value("FLOAT", ColumnSchema::FLOAT)
      .value("DOUBLE", ColumnSchema::DOUBLE)
      .value("STRING", ColumnSchema::STRING)
      .value("BINARY", ColumnSchema::BINARY)
      .value("UNIXTIME_MICROS", ColumnSchema::UNIXTIME_MICROS)
      .value("DATE", ColumnSchema::DATE)
      .value("DECIMAL", ColumnSchema::DECIMAL)
      .value("VARCHAR", ColumnSchema::VARCHAR);
  py::enum_<ColumnStorageAttributes::EncodingType>(m, "Encoding")
      .value("AUTO", ColumnStorageAttributes::AUTO_ENCODING)
      .value("PLAIN", ColumnStorageAttributes::PLAIN_ENCODING)
      .value("BIT_PACKED", ColumnStorageAttributes::BIT_PACKED)
      .value("BIT_SHUFFLE", ColumnStorageAttributes::BIT_SHUFFLE)
      .value("RLE", ColumnStorageAttributes::RLE)
      .value("DICT", ColumnStorageAttributes::DICT_ENCODING)
      .value("PREFIX", ColumnStorageAttributes::PREFIX_ENCODING);
  py::enum_<ColumnStorageAttributes::CompressionType>(m, "Compression")
      .value("DEFAULT", ColumnStorageAttributes::DEFAULT_COMPRESSION)
      .value("NONE", ColumnStorageAttributes::NO_COMPRESSION)
      .value("SNAPPY", ColumnStorageAttributes::SNAPPY)
      .value("LZ4", ColumnStorageAttributes::LZ4)
      .value("ZLIB", ColumnStorageAttributes::ZLIB)
      .value("ZSTD", ColumnStorageAttributes::ZSTD);

  py::class_<ColumnSchema>(m, "ColumnSchema", "One column of a Schema.")
      .def_property_readonly("name", &ColumnSchema::name)
      .def_property_readonly("type", &ColumnSchema::type)
      .def_property_readonly("nullable", &ColumnSchema::is_nullable)
      .def_property_readonly("precision", &ColumnSchema::precision)
      .def_property_readonly("scale", &ColumnSchema::scale)
      .def_property_readonly("length", &ColumnSchema::length)
      .def_property_readonly("comment", &ColumnSchema::comment)
      .def_property_readonly("encoding",
                             [](const ColumnSchema& c) { return c.storage_attributes().encoding; })
      .def_property_readonly(
          "compression", [](const ColumnSchema& c) { return c.storage_attributes().compression; })
      .def_property_readonly(
          "default",
          [](const ColumnSchema& c) -> py::object {
            if (!c.default_value()) return py::none();
            return DefaultToPython(*c.default_value());
          },
          "The default as text ('5', \"'abc'\"), or None.")
      .def("__repr__", [](const ColumnSchema& c) { return "ColumnSchema(" + c.ToString() + ")"; });

  py::class_<client::Schema>(m, "Schema", "A table schema: ordered columns, key columns first.")
      .def("__len__", &client::Schema::num_columns)
      .def("__getitem__",
           [](const client::Schema& s, py::handle key) { return s.Column(SchemaIndex(s, key)); })
      .def("__iter__",
           [](const client::Schema& s) {
             py::list cols;
             for (int i = 0; i < s.num_columns(); ++i) cols.append(s.Column(i));
             return py::iter(cols);
           })
      .def_property_readonly("names",
                             [](const client::Schema& s) { return Names(s, 0, s.num_columns()); })
      .def_property_readonly("num_key_columns", &client::Schema::num_key_columns)
      .def("primary_keys", [](const client::Schema& s) { return Names(s, 0, s.num_key_columns()); })
      .def("primary_key_indices",
           [](const client::Schema& s) {
             py::list out;
             for (int i = 0; i < s.num_key_columns(); ++i) out.append(i);
             return out;
           })
      .def(
          "get_loc",
          [](const client::Schema& s, const std::string& name) {
            return SchemaIndex(s, py::str(name));
          },
          "Index of the named column (InvalidArgument when unknown).")
      .def("equals", &client::Schema::Equals)
      .def("__eq__", [](const client::Schema& a, const client::Schema& b) { return a.Equals(b); })
      .def("__repr__", &client::Schema::ToString);

  py::class_<PyColumnSpec> spec(m, "ColumnSpec",
                                "A column being added (SchemaBuilder.add_column, "
                                "TableAlterer.add_column); setters chain.");
  BindColumnSpec(spec);

  py::class_<PySchemaBuilder>(m, "SchemaBuilder", "Builds a Schema: add_column(...), build().")
      .def(py::init<>())
      .def(
          "add_column",
          [](PySchemaBuilder& b, const std::string& name, py::object type_, py::object nullable,
             bool primary_key, py::object default_, py::object encoding, py::object compression,
             py::object precision, py::object scale, py::object length, py::object comment,
             py::object block_size) -> PyColumnSpec& {
            b.specs.push_back(std::make_unique<PyColumnSpec>(b.builder.AddColumn(name), name));
            return b.specs.back()->Configure(type_, nullable, primary_key, default_, encoding,
                                             compression, precision, scale, length, comment,
                                             block_size);
          },
          py::arg("name"), py::arg("type_") = py::none(), py::arg("nullable") = py::none(),
          py::arg("primary_key") = false, py::arg("default") = py::none(),
          py::arg("encoding") = py::none(), py::arg("compression") = py::none(),
          py::arg("precision") = py::none(), py::arg("scale") = py::none(),
          py::arg("length") = py::none(), py::arg("comment") = py::none(),
          py::arg("block_size") = py::none(), py::return_value_policy::reference_internal,
          "Adds a column; returns its ColumnSpec for further (chained) settings.")
      .def(
          "set_primary_keys",
          [](PySchemaBuilder& b, std::vector<std::string> names) -> PySchemaBuilder& {
            b.builder.SetPrimaryKey(std::move(names));
            return b;
          },
          py::return_value_policy::reference_internal,
          "A compound primary key: these leading columns, in order.")
      .def(
          "build",
          [](PySchemaBuilder& b) {
            for (auto& s : b.specs) s->ApplyDefault();
            client::Schema schema;
            CheckStatus(b.builder.Build(&schema));
            return schema;
          },
          "Builds the Schema; InvalidArgument naming the column for a mistake.");
}

}  // namespace basalt::python
