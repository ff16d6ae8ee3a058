// Conversions between Python values and Basalt cells (docs/python.md "Type mapping").

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "py_common.h"

namespace basalt::python {
namespace {

std::string TypeName(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }

std::string Repr(py::handle v) {
  PyObject* o = PyObject_Repr(v.ptr());
  if (o == nullptr) {  // E.g. an int beyond sys.get_int_max_str_digits().
    PyErr_Clear();
    return std::string("<") + Py_TYPE(v.ptr())->tp_name + ">";
  }
  std::string r = py::reinterpret_steal<py::str>(o).cast<std::string>();
  if (r.size() > 60) r = r.substr(0, 57) + "...";
  return r;
}

[[noreturn]] void WrongType(const ColumnMeta& c, int64_t row, const char* expected, py::handle v) {
  RaiseInvalidType(Describe(c, row) + ": expected " + expected + ", got " + TypeName(v) + " " +
                   Repr(v));
}

// numpy.bool_ (named numpy.bool in NumPy 2) and numpy.complexfloating, looked up on first use;
// nullptr without NumPy. Plain pointers, not a guarded static: the import may release the GIL,
// and another thread blocking on a static's guard while holding the GIL would deadlock. Racing
// lookups under the GIL store the same types. Leaked on purpose (see errors.cc).
struct NumpyTypes {
  PyTypeObject* bool_type = nullptr;
  PyTypeObject* complex_type = nullptr;
};

const NumpyTypes& GetNumpyTypes() {
  static NumpyTypes types;
  static bool looked_up = false;
  if (looked_up) return types;
  NumpyTypes found;
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (numpy == nullptr) PyErr_Clear();
  for (auto [name, out] :
       {std::pair{"bool_", &found.bool_type}, std::pair{"complexfloating", &found.complex_type}}) {
    PyObject* t = numpy == nullptr ? nullptr : PyObject_GetAttrString(numpy, name);
    if (t != nullptr && PyType_Check(t)) {
      *out = reinterpret_cast<PyTypeObject*>(t);
    } else {
      PyErr_Clear();
      Py_XDECREF(t);
    }
  }
  Py_XDECREF(numpy);
  if (!looked_up) {
    types = found;
    looked_up = true;
  } else {
    Py_XDECREF(found.bool_type);
    Py_XDECREF(found.complex_type);
  }
  return types;
}

bool IsNumpyBool(py::handle v) {
  PyTypeObject* t = GetNumpyTypes().bool_type;
  return t != nullptr && PyObject_TypeCheck(v.ptr(), t);
}

// complex and NumPy's complex scalars (which convert to float dropping the imaginary part).
bool IsComplex(py::handle v) {
  PyTypeObject* t = GetNumpyTypes().complex_type;
  return PyComplex_Check(v.ptr()) || (t != nullptr && PyObject_TypeCheck(v.ptr(), t));
}

bool IsInstance(py::handle v, const py::object& type) {
  int r = PyObject_IsInstance(v.ptr(), type.ptr());
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// An integer value (int, NumPy integer, anything with __index__ except bool) within [lo, hi].
int64_t AsInt(py::handle v, const ColumnMeta& c, int64_t row, int64_t lo, int64_t hi) {
  PyObject* o = v.ptr();
  int overflow = 0;
  long long x;
  if (PyLong_CheckExact(o)) {  // The common case, without a temporary.
    x = PyLong_AsLongLongAndOverflow(o, &overflow);
  } else {
    if (PyBool_Check(o) || IsNumpyBool(v) || !PyIndex_Check(o)) WrongType(c, row, "an int", v);
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
    if (!index) throw py::error_already_set();
    x = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  }
  if (overflow == 0 && x == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || x < lo || x > hi) {
    RaiseInvalid(Describe(c, row) + ": value " + Repr(v) + " is out of range [" +
                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return x;
}

double AsDouble(py::handle v, const ColumnMeta& c, int64_t row) {
  PyObject* o = v.ptr();
  if (PyFloat_Check(o)) return PyFloat_AS_DOUBLE(o);
  if (PyBool_Check(o) || IsNumpyBool(v) || PyUnicode_Check(o) || PyBytes_Check(o) ||
      !PyNumber_Check(o) || IsComplex(v)) {
    WrongType(c, row, "a float or int", v);
  }
  double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) {
    // An int beyond the double range raises OverflowError, a complex TypeError: name the cell.
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      RaiseInvalid(Describe(c, row) + ": value " + Repr(v) + " is out of the DOUBLE range");
    }
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      WrongType(c, row, "a float or int", v);
    }
    throw py::error_already_set();
  }
  return d;
}

float AsFloat(py::handle v, const ColumnMeta& c, int64_t row) {
  double d = AsDouble(v, c, row);
  // Finite doubles beyond FLOAT's range would silently become infinities.
  if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) {
    RaiseInvalid(Describe(c, row) + ": value " + Repr(v) + " is out of the FLOAT range");
  }
  return static_cast<float>(d);
}

// UTF-8 bytes of a str, or the bytes of a bytes / bytearray; false for anything else. The view
// stays valid while `v` lives (and a bytearray is not resized).
bool AsBytes(py::handle v, std::string_view* out) {
  PyObject* o = v.ptr();
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(o, &n);
    if (p == nullptr) throw py::error_already_set();
    *out = std::string_view(p, n);
    return true;
  }
  if (PyBytes_Check(o)) {
    *out = std::string_view(PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o));
    return true;
  }
  if (PyByteArray_Check(o)) {
    *out = std::string_view(PyByteArray_AS_STRING(o), PyByteArray_GET_SIZE(o));
    return true;
  }
  return false;
}

std::string_view AsText(py::handle v, const ColumnMeta& c, int64_t row) {
  std::string_view s;
  if (!AsBytes(v, &s)) WrongType(c, row, "str or bytes", v);
  return s;
}

int64_t AsMicros(py::handle v, const ColumnMeta& c, int64_t row) {
  if (!PyLong_CheckExact(v.ptr()) && IsInstance(v, GetConverters().datetime_type)) {
    return GetConverters().datetime_to_micros(v).cast<int64_t>();
  }
  return AsInt(v, c, row, kInt64Min, kInt64Max);
}

int32_t AsDays(py::handle v, const ColumnMeta& c, int64_t row) {
  const Converters& conv = GetConverters();
  if (!PyLong_CheckExact(v.ptr()) && IsInstance(v, conv.date_type)) {
    if (IsInstance(v, conv.datetime_type)) WrongType(c, row, "a datetime.date", v);
    return conv.date_to_days(v).cast<int32_t>();
  }
  return static_cast<int32_t>(
      AsInt(v, c, row, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}

// The unscaled value of a Decimal or int at the column's scale, checked against its precision.
// The client API carries unscaled values as int64, so DECIMAL(19..38) values are limited to it.
int64_t AsUnscaled(py::handle v, const ColumnMeta& c, int64_t row) {
  const Converters& conv = GetConverters();
  PyObject* o = v.ptr();
  if (PyBool_Check(o) || (!PyLong_Check(o) && !IsInstance(v, conv.decimal_type))) {
    WrongType(c, row, "a decimal.Decimal or int", v);
  }
  py::object r = conv.decimal_to_unscaled(v, c.scale, c.precision);
  if (py::isinstance<py::str>(r)) RaiseInvalid(Describe(c, row) + ": " + r.cast<std::string>());
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(r.ptr(), &overflow);
  if (overflow == 0 && x == -1 && PyErr_Occurred()) throw py::error_already_set();
  bool fits = overflow == 0;
  if (fits && c.precision <= 18) {
    int64_t limit = 1;
    for (int i = 0; i < c.precision; ++i) limit *= 10;
    fits = x > -limit && x < limit;
  }
  if (!fits) {
    RaiseInvalid(Describe(c, row) + ": value " + Repr(v) + " does not fit DECIMAL(" +
                 std::to_string(c.precision) + ", " + std::to_string(c.scale) + ")" +
                 (c.precision > 18 ? " as a 64-bit unscaled value" : ""));
  }
  return x;
}

}  // namespace

std::vector<ColumnMeta> MetaOf(const client::Schema& schema) {
  std::vector<ColumnMeta> out;
  out.reserve(schema.num_columns());
  for (int i = 0; i < schema.num_columns(); ++i) {
    ColumnSchema col = schema.Column(i);
    ColumnMeta m;
    m.name = col.name();
    m.type = col.type();
    m.nullable = col.is_nullable();
    m.has_default = col.default_value().has_value();
    m.is_key = i < schema.num_key_columns();
    m.precision = col.precision();
    m.scale = col.scale();
    m.length = col.length();
    out.push_back(std::move(m));
  }
  return out;
}

TableHandle::TableHandle(std::shared_ptr<client::Table> t) : TableHandle(t->name(), t->schema()) {
  table = std::move(t);
}

TableHandle::TableHandle(std::string table_name, const client::Schema& schema)
    : name(std::move(table_name)), columns(MetaOf(schema)) {
  for (size_t i = 0; i < columns.size(); ++i) {
    index[py::str(columns[i].name)] = py::int_(i);
  }
}

int TableHandle::Resolve(py::handle key) const {
  PyObject* found = PyDict_GetItemWithError(index.ptr(), key.ptr());  // Borrowed.
  if (found != nullptr) return static_cast<int>(PyLong_AsLong(found));
  if (PyErr_Occurred()) {
    // An unhashable key: not a column name.
    PyErr_Clear();
  } else if (PyUnicode_Check(key.ptr())) {
    RaiseInvalid("unknown column '" + key.cast<std::string>() + "' in table '" + name + "'");
  }
  if (PyIndex_Check(key.ptr()) && !PyBool_Check(key.ptr())) {
    Py_ssize_t i = PyNumber_AsSsize_t(key.ptr(), PyExc_OverflowError);
    if (i == -1 && PyErr_Occurred()) PyErr_Clear();
    if (i < 0 || i >= static_cast<Py_ssize_t>(columns.size())) {
      RaiseInvalid("column index " + std::to_string(i) + " out of range: table '" + name +
                   "' has " + std::to_string(columns.size()) + " columns");
    }
    return static_cast<int>(i);
  }
  RaiseInvalidType("a column is named by a str or an int index, not " +
                   std::string(Py_TYPE(key.ptr())->tp_name));
}

std::string Describe(const ColumnMeta& column, int64_t row) {
  std::string s = "column '" + column.name + "' (" + ColumnSchema::DataTypeToString(column.type);
  s += ")";
  if (row >= 0) s += ", row " + std::to_string(row);
  return s;
}

void SetCell(client::PartialRow* row, int idx, const ColumnMeta& c, py::handle v,
             int64_t row_number) {
  absl::Status s;
  if (v.is_none()) {
    if (!c.nullable) RaiseInvalid(Describe(c, row_number) + " is NOT NULL: got None");
    s = row->SetNull(idx);
  } else {
    switch (c.type) {
      case ColumnSchema::BOOL:
        if (!PyBool_Check(v.ptr()) && !IsNumpyBool(v)) WrongType(c, row_number, "a bool", v);
        s = row->SetBool(idx, PyObject_IsTrue(v.ptr()) == 1);
        break;
      case ColumnSchema::INT8:
        s = row->SetInt8(idx, static_cast<int8_t>(AsInt(v, c, row_number, INT8_MIN, INT8_MAX)));
        break;
      case ColumnSchema::INT16:
        s = row->SetInt16(idx, static_cast<int16_t>(AsInt(v, c, row_number, INT16_MIN, INT16_MAX)));
        break;
      case ColumnSchema::INT32:
        s = row->SetInt32(idx, static_cast<int32_t>(AsInt(v, c, row_number, INT32_MIN, INT32_MAX)));
        break;
      case ColumnSchema::INT64:
        s = row->SetInt64(idx, AsInt(v, c, row_number, kInt64Min, kInt64Max));
        break;
      case ColumnSchema::FLOAT:
        s = row->SetFloat(idx, AsFloat(v, c, row_number));
        break;
      case ColumnSchema::DOUBLE:
        s = row->SetDouble(idx, AsDouble(v, c, row_number));
        break;
      case ColumnSchema::STRING:
      case ColumnSchema::VARCHAR:
        s = row->SetString(idx, AsText(v, c, row_number));
        break;
      case ColumnSchema::BINARY:
        s = row->SetBinary(idx, AsText(v, c, row_number));
        break;
      case ColumnSchema::UNIXTIME_MICROS:
        s = row->SetUnixTimeMicros(idx, AsMicros(v, c, row_number));
        break;
      case ColumnSchema::DATE:
        s = row->SetDate(idx, AsDays(v, c, row_number));
        break;
      case ColumnSchema::DECIMAL:
        s = row->SetUnscaledDecimal(idx, AsUnscaled(v, c, row_number));
        break;
    }
  }
  if (!s.ok()) RaiseStatus(s, Describe(c, row_number));
}

void SetRecord(client::PartialRow* row, const TableHandle& table, py::handle record) {
  if (PyDict_Check(record.ptr())) {
    PyObject* key;
    PyObject* value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(record.ptr(), &pos, &key, &value)) {
      int idx = table.Resolve(key);
      SetCell(row, idx, table.columns[idx], value);
    }
    return;
  }
  if (PyUnicode_Check(record.ptr()) || !PySequence_Check(record.ptr())) {
    RaiseInvalidType("a record is a dict or a sequence (tuple, list), not " +
                     std::string(Py_TYPE(record.ptr())->tp_name));
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(record);
  if (seq.size() > table.columns.size()) {
    RaiseInvalid("a record of " + std::to_string(seq.size()) + " values for table '" + table.name +
                 "' of " + std::to_string(table.columns.size()) + " columns");
  }
  for (size_t i = 0; i < seq.size(); ++i) {
    SetCell(row, static_cast<int>(i), table.columns[i], seq[i]);
  }
}

std::unique_ptr<client::PartialRow> RowFromRecord(const client::Schema* schema,
                                                  const TableHandle& table, py::handle record) {
  auto row = schema->NewRow();
  if (!record.is_none()) SetRecord(row.get(), table, record);
  return row;
}

client::Value ToValue(const ColumnMeta& c, py::handle v) {
  if (v.is_none()) RaiseInvalid(Describe(c) + ": None is not a value (use is_null())");
  switch (c.type) {
    case ColumnSchema::BOOL:
      if (!PyBool_Check(v.ptr()) && !IsNumpyBool(v)) WrongType(c, -1, "a bool", v);
      return client::Value::FromBool(PyObject_IsTrue(v.ptr()) == 1);
    case ColumnSchema::INT8:
      return client::Value::FromInt(AsInt(v, c, -1, INT8_MIN, INT8_MAX));
    case ColumnSchema::INT16:
      return client::Value::FromInt(AsInt(v, c, -1, INT16_MIN, INT16_MAX));
    case ColumnSchema::INT32:
      return client::Value::FromInt(AsInt(v, c, -1, INT32_MIN, INT32_MAX));
    case ColumnSchema::INT64:
      return client::Value::FromInt(AsInt(v, c, -1, kInt64Min, kInt64Max));
    case ColumnSchema::FLOAT:
      return client::Value::FromFloat(AsFloat(v, c, -1));
    case ColumnSchema::DOUBLE:
      return client::Value::FromDouble(AsDouble(v, c, -1));
    case ColumnSchema::STRING:
    case ColumnSchema::VARCHAR:
    case ColumnSchema::BINARY:
      return client::Value::FromString(AsText(v, c, -1));
    case ColumnSchema::UNIXTIME_MICROS:
      return client::Value::FromInt(AsMicros(v, c, -1));
    case ColumnSchema::DATE:
      return client::Value::FromInt(AsDays(v, c, -1));
    case ColumnSchema::DECIMAL:
      return client::Value::FromInt(AsUnscaled(v, c, -1));
  }
  RaiseInvalid(Describe(c) + ": unsupported type");
}

namespace {

template <typename T>
T Cell(const client::ScanBatch::ColumnView& view, int64_t row) {
  T v;
  std::memcpy(&v, static_cast<const char*>(view.data) + row * sizeof(T), sizeof(T));
  return v;
}

// A Python int of a little-endian two's complement 128-bit value.
py::object Int128ToPython(const void* p) {
  return py::reinterpret_steal<py::object>(
      _PyLong_FromByteArray(static_cast<const unsigned char*>(p), 16, /*little_endian=*/1,
                            /*is_signed=*/1));
}

}  // namespace

py::object CellToPython(const client::ScanBatch::ColumnView& view, const ColumnMeta& c,
                        int64_t row) {
  if (view.IsNull(row)) return py::none();
  switch (c.type) {
    case ColumnSchema::BOOL:
      return py::bool_(Cell<uint8_t>(view, row) != 0);
    case ColumnSchema::INT8:
      return py::int_(Cell<int8_t>(view, row));
    case ColumnSchema::INT16:
      return py::int_(Cell<int16_t>(view, row));
    case ColumnSchema::INT32:
      return py::int_(Cell<int32_t>(view, row));
    case ColumnSchema::INT64:
      return py::int_(Cell<int64_t>(view, row));
    case ColumnSchema::FLOAT:
      return py::float_(Cell<float>(view, row));
    case ColumnSchema::DOUBLE:
      return py::float_(Cell<double>(view, row));
    case ColumnSchema::STRING:
    case ColumnSchema::VARCHAR: {
      std::string_view s = view.GetString(row);
      PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
      if (o == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(o);
    }
    case ColumnSchema::BINARY: {
      std::string_view s = view.GetString(row);
      return py::bytes(s.data(), s.size());
    }
    case ColumnSchema::UNIXTIME_MICROS:
      return GetConverters().micros_to_datetime(Cell<int64_t>(view, row));
    case ColumnSchema::DATE:
      return GetConverters().days_to_date(Cell<int32_t>(view, row));
    case ColumnSchema::DECIMAL: {
      py::object unscaled;
      if (view.cell_size == 4) {
        unscaled = py::int_(Cell<int32_t>(view, row));
      } else if (view.cell_size == 8) {
        unscaled = py::int_(Cell<int64_t>(view, row));
      } else {
        unscaled = Int128ToPython(static_cast<const char*>(view.data) + row * 16);
      }
      return GetConverters().unscaled_to_decimal(unscaled, c.scale);
    }
  }
  return py::none();
}

const Converters& GetConverters() {
  // Leaked on purpose (see errors.cc).
  static const Converters* conv = [] {
    py::module_ m = py::module_::import("basalt._convert");
    auto* c = new Converters;
    c->datetime_to_micros = m.attr("datetime_to_micros");
    c->date_to_days = m.attr("date_to_days");
    c->decimal_to_unscaled = m.attr("decimal_to_unscaled");
    c->micros_to_datetime = m.attr("micros_to_datetime");
    c->days_to_date = m.attr("days_to_date");
    c->unscaled_to_decimal = m.attr("unscaled_to_decimal");
    c->decimal_type = py::module_::import("decimal").attr("Decimal");
    c->datetime_type = py::module_::import("datetime").attr("datetime");
    c->date_type = py::module_::import("datetime").attr("date");
    return c;
  }();
  return *conv;
}

}  // namespace basalt::python
