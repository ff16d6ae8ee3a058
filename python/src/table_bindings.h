#pragma once

// Table, write operations and sessions (table_bindings.cc), scanners (scan_bindings.cc) and the
// columnar paths (columnar.cc).

#include <memory>

#include "py_common.h"

namespace basalt::python {

// A write operation from Table.new_insert() and friends. `op` is null once applied: a session
// takes the C++ operation. Not thread-safe.
struct PyWriteOp {
  std::unique_ptr<client::WriteOperation> op;
  std::shared_ptr<TableHandle> table;
};

// A session plus its flush mode (the columnar paths switch AUTO_FLUSH_SYNC to background batches
// by it; apply() asks Session::TryApply whether it must wait). Not thread-safe (one writer thread
// per session, as in the C++ client).
struct PySession {
  PySession() = default;
  PySession(const PySession&) = delete;
  PySession& operator=(const PySession&) = delete;
  // Destroying the C++ session flushes what is buffered and waits: done without the GIL when
  // the destroying thread holds it (garbage collection does), see WithoutGil.
  ~PySession();

  std::shared_ptr<client::Session> session;
  client::Session::FlushMode mode = client::Session::AUTO_FLUSH_SYNC;
};

// A new operation of `type` on `t`. Raises InvalidArgument for an unknown type. REQUIRES the GIL
// only for that error (the columnar loop passes validated types).
std::unique_ptr<client::WriteOperation> NewOperation(client::Table& t,
                                                     client::WriteOperation::Type type);

std::unique_ptr<PySession> NewSession(std::shared_ptr<client::Client> c, py::handle flush_mode,
                                      py::handle timeout_ms);

// Applies whole NumPy columns (basalt/_columnar.py prepares and validates them first).
void ApplyColumns(PySession& s, const TableHandle& table, client::WriteOperation::Type type,
                  py::list columns, int64_t num_rows);

void BindTable(py::module_& m);
void BindColumnar(py::module_& m);

}  // namespace basalt::python
