#pragma once

// ColumnSpec as Python sees it, shared by SchemaBuilder and TableAlterer bindings.

#include <string>

#include "py_common.h"

namespace basalt::python {

// A ColumnSpec (owned by its builder or alterer) plus what converting its default needs: the
// default stays a Python object until ApplyDefault(), when type, precision and scale are known
// whatever order they were set in. Not thread-safe.
struct PyColumnSpec {
  PyColumnSpec(client::ColumnSpec* spec, std::string name);
  // add_column's keyword arguments; None leaves a setting alone.
  PyColumnSpec& Configure(py::handle type_, py::handle nullable, bool primary_key,
                          py::handle default_, py::handle encoding, py::handle compression,
                          py::handle precision, py::handle scale, py::handle length,
                          py::handle comment, py::handle block_size);
  void SetType(ColumnSchema::DataType t);
  void SetNullable(bool n);
  void SetPrecision(int p);
  void SetScale(int s);
  void SetLength(int l);
  // Converts and sets the default. Raises InvalidArgument / InvalidType naming the column.
  void ApplyDefault();

  client::ColumnSpec* spec;  // Owned by the builder or alterer.
  ColumnMeta meta;
  bool type_set = false;
  py::object default_value;
};

void BindColumnSpec(py::class_<PyColumnSpec>& cls);
ColumnSchema::DataType ParseType(py::handle v);

}  // namespace basalt::python
