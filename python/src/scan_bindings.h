#pragma once

// Scanner and ScanBatch as Python sees them (scan_bindings.cc; to_dict_of_arrays in columnar.cc).

#include <memory>
#include <vector>

#include "py_common.h"

namespace basalt::python {

// A batch and the column views and metadata the row conversion needs. Not thread-safe.
struct PyBatch {
  explicit PyBatch(std::unique_ptr<client::ScanBatch> b);
  py::tuple Tuple(int64_t row) const;
  py::list AsTuples() const;

  std::unique_ptr<client::ScanBatch> batch;
  std::vector<ColumnMeta> meta;
  std::vector<client::ScanBatch::ColumnView> views;
};

// A scanner plus its table (kept alive) and whether it was opened: configuration is refused
// after open(). Not thread-safe.
struct PyScanner {
  PyScanner() = default;
  PyScanner(const PyScanner&) = delete;
  PyScanner& operator=(const PyScanner&) = delete;
  // Closes the scanner (an RPC to its tablet server when open) without the GIL when the
  // destroying thread holds it (garbage collection does), see WithoutGil; `table` is destroyed
  // after, with the GIL again (its column dict is a Python object).
  ~PyScanner();

  void Open();                           // Idempotent; releases the GIL.
  std::unique_ptr<PyBatch> NextBatch();  // Opens first if needed; releases the GIL.
  void Close();                          // Idempotent; releases the GIL.

  // Declared before `scanner`, so destroyed after it: the scanner reads the table.
  std::shared_ptr<TableHandle> table;
  std::unique_ptr<client::Scanner> scanner;
  bool opened = false;
};

}  // namespace basalt::python
