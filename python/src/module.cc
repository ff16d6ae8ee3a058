// The _basalt extension module: bindings of the C++ client (src/client/client.h) that the basalt
// package (python/basalt/__init__.py) re-exports with its Python-side helpers.

#include "py_common.h"
#include "table_bindings.h"

PYBIND11_MODULE(_basalt, m) {
  namespace bp = basalt::python;
  m.doc() = "Basalt C++ client bindings; import basalt instead.";
  bp::InitErrors(m);
  bp::BindSchema(m);
  bp::BindClient(m);  // Also binds Table, WriteOperation and Session (table_bindings.cc).
  bp::BindScan(m);    // Adds Table.__getitem__ / scanner() and the columnar paths.

  m.attr("FLUSH_AUTO_SYNC") = static_cast<int>(basalt::client::Session::AUTO_FLUSH_SYNC);
  m.attr("FLUSH_AUTO_BACKGROUND") =
      static_cast<int>(basalt::client::Session::AUTO_FLUSH_BACKGROUND);
  m.attr("FLUSH_MANUAL") = static_cast<int>(basalt::client::Session::MANUAL_FLUSH);
  m.attr("READ_LATEST") = static_cast<int>(basalt::client::Scanner::READ_LATEST);
  m.attr("READ_AT_SNAPSHOT") = static_cast<int>(basalt::client::Scanner::READ_AT_SNAPSHOT);
  m.attr("READ_YOUR_WRITES") = static_cast<int>(basalt::client::Scanner::READ_YOUR_WRITES);
}
