#pragma once

// Shared pieces of the _basalt extension (docs/python.md): the table handle the bindings pass
// around, status-to-exception mapping, and the conversions between Python values and cells.
//
// Every function here that takes or returns Python objects REQUIRES the GIL. Functions that raise
// throw py::error_already_set with the Python exception set (pybind11 passes it on).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/status/status.h"
#include "client/client.h"

namespace basalt::python {

namespace py = pybind11;
using client::ColumnSchema;

// What the per-row paths need of a column, copied once per table so that setting a cell costs no
// schema lookup or string copy.
struct ColumnMeta {
  std::string name;
  ColumnSchema::DataType type = ColumnSchema::INT32;
  bool nullable = false;
  bool has_default = false;
  bool is_key = false;
  int precision = 0;
  int scale = 0;
  int length = 0;
};

std::vector<ColumnMeta> MetaOf(const client::Schema& schema);

// An open table as Python sees it. Immutable after construction; `index` maps each column name
// (a Python str) to its index, so `op['col']` is one dict lookup on the caller's (usually
// interned, hash-cached) string. Also made from a bare schema (table == nullptr) to build range
// bounds for create_table.
struct TableHandle {
  explicit TableHandle(std::shared_ptr<client::Table> t);
  TableHandle(std::string table_name, const client::Schema& schema);
  // The column index of `key` (a str or an int); raises InvalidArgument for an unknown name or an
  // index out of range, InvalidType for anything else.
  int Resolve(py::handle key) const;

  std::shared_ptr<client::Table> table;
  std::string name;
  std::vector<ColumnMeta> columns;
  py::dict index;
};

// Raises the basalt.errors exception mapped from `status` (docs: errors.py), its message
// prefixed with `context` when given. REQUIRES: !status.ok().
[[noreturn]] void RaiseStatus(const absl::Status& status, std::string_view context = {});
inline void CheckStatus(const absl::Status& status, std::string_view context = {}) {
  if (!status.ok()) RaiseStatus(status, context);
}
// Bad input found before anything is sent: basalt.InvalidArgument / basalt.InvalidType.
[[noreturn]] void RaiseInvalid(const std::string& message);
[[noreturn]] void RaiseInvalidType(const std::string& message);
// The exception instance `status` maps to, not raised (Error.error()).
py::object MakeException(const absl::Status& status);

// "column 'v' (INT8)" or "column 'v' (INT8), row 7" for messages; row < 0 leaves the row out.
std::string Describe(const ColumnMeta& column, int64_t row = -1);

// Sets cell `idx` of `row` from a Python value: None is NULL; see docs/python.md "Type mapping"
// for what each column type takes. Raises InvalidType / InvalidArgument naming the column (and
// `row_number` when >= 0); the row is unchanged then.
void SetCell(client::PartialRow* row, int idx, const ColumnMeta& column, py::handle value,
             int64_t row_number = -1);
// Sets the columns of a dict ({name: value}) or a sequence (values in column order) record.
void SetRecord(client::PartialRow* row, const TableHandle& table, py::handle record);
// A new row of `schema` (which must outlive it) with the record's columns set.
std::unique_ptr<client::PartialRow> RowFromRecord(const client::Schema* schema,
                                                  const TableHandle& table, py::handle record);
// Parses a flush mode: basalt.FLUSH_* ints or 'sync' / 'background' / 'manual'.
client::Session::FlushMode ParseFlushMode(py::handle mode);
// A predicate or default constant of the column's type (the same Python types as SetCell).
client::Value ToValue(const ColumnMeta& column, py::handle value);

// The Python value of cell `row` of a scan batch column: None for NULL, int, float, bool, str,
// bytes, datetime.datetime (UTC, aware), datetime.date, decimal.Decimal.
py::object CellToPython(const client::ScanBatch::ColumnView& view, const ColumnMeta& column,
                        int64_t row);

// Runs fn() (an RPC-waiting call returning absl::Status) without the GIL and returns its status.
template <typename Fn>
absl::Status Unlocked(Fn&& fn) {
  py::gil_scoped_release release;
  return fn();
}

// Runs fn() without the GIL when this thread holds it (a destructor may also run at interpreter
// exit, or on a thread that never held it), with it otherwise.
template <typename Fn>
void WithoutGil(Fn&& fn) {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  if (PyGILState_Check() && !finalizing) {
    py::gil_scoped_release release;
    fn();
  } else {
    fn();
  }
}

// Helpers implemented in basalt/_convert.py, looked up once.
struct Converters {
  py::object datetime_to_micros;   // (datetime) -> int
  py::object date_to_days;         // (date) -> int
  py::object decimal_to_unscaled;  // (value, scale, precision) -> int or str (why not)
  py::object micros_to_datetime;   // (int) -> datetime
  py::object days_to_date;         // (int) -> date
  py::object unscaled_to_decimal;  // (int, scale) -> Decimal
  py::object decimal_type;         // decimal.Decimal
  py::object datetime_type;        // datetime.datetime
  py::object date_type;            // datetime.date
};
const Converters& GetConverters();

// Module parts, one per file.
void InitErrors(py::module_& m);
void BindSchema(py::module_& m);
void BindClient(py::module_& m);
void BindWrite(py::module_& m);
void BindScan(py::module_& m);

}  // namespace basalt::python
