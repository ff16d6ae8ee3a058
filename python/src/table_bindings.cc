// Table, write operations, sessions and their errors.
//
// The per-row path (table.new_insert(); op['c'] = v; session.apply(op)) is what Python users
// loop over millions of times, so each step is one C++ call with no Python-level wrapper: the
// column name is looked up in the table's dict (TableHandle::index), the value converted and
// range-checked in C++ (convert.cc), and apply() in MANUAL_FLUSH only encodes into the session
// buffer, keeping the GIL (releasing it would cost more than the call).

#include <string>

#include "py_common.h"
#include "table_bindings.h"

namespace basalt::python {
namespace {

using client::Session;
using client::WriteOperation;

[[noreturn]] void RaiseIllegalState(const std::string& message) {
  RaiseStatus(absl::FailedPreconditionError(message));
}

WriteOperation& Live(PyWriteOp& op) {
  if (!op.op) RaiseIllegalState("the operation was already applied to a session");
  return *op.op;
}

std::unique_ptr<PyWriteOp> NewOp(const std::shared_ptr<TableHandle>& t, WriteOperation::Type type,
                                 py::handle record) {
  auto op = std::make_unique<PyWriteOp>();
  op->op = NewOperation(*t->table, type);
  op->table = t;
  if (!record.is_none()) SetRecord(op->op->mutable_row(), *t, record);
  return op;
}

// One failed operation from Session.get_pending_errors().
struct PyError {
  absl::Status status;
  std::string op;
  bool possibly_successful = false;
};

void BindSession(py::module_& m) {
  py::class_<PyError>(m, "Error", "A failed write operation (Session.get_pending_errors()).")
      .def(
          "error", [](const PyError& e) { return MakeException(e.status); },
          "The error as a basalt exception instance (not raised).")
      .def(
          "failed_op", [](const PyError& e) { return e.op; },
          "The failed operation, as text: \"INSERT (int32 key=1, ...)\".")
      .def(
          "was_possibly_successful", [](const PyError& e) { return e.possibly_successful; },
          "True when the operation may have been applied nevertheless (timed out in flight).")
      .def("__repr__",
           [](const PyError& e) { return "Error(" + e.status.ToString() + ", " + e.op + ")"; });

  py::class_<PySession>(m, "Session",
                        "Applies write operations (Client.new_session()). One writer thread per "
                        "session.")
      .def(
          "set_flush_mode",
          [](PySession& s, py::handle mode) {
            Session::FlushMode fm = ParseFlushMode(mode);
            CheckStatus(s.session->SetFlushMode(fm));
            s.mode = fm;
          },
          py::arg("flush_mode") = "manual",
          "FLUSH_AUTO_SYNC, FLUSH_AUTO_BACKGROUND, FLUSH_MANUAL or 'sync' / 'background' / "
          "'manual'. IllegalState while operations are buffered.")
      .def_property_readonly("flush_mode",
                             [](const PySession& s) { return static_cast<int>(s.mode); })
      .def("set_timeout_ms", [](PySession& s, int ms) { s.session->SetTimeoutMillis(ms); })
      .def(
          "set_mutation_buffer_space",
          [](PySession& s, size_t bytes) { CheckStatus(s.session->SetMutationBufferSpace(bytes)); })
      .def("set_mutation_buffer_flush_watermark",
           [](PySession& s, double fraction) {
             CheckStatus(s.session->SetMutationBufferFlushWatermark(fraction));
           })
      .def("set_mutation_buffer_flush_interval",
           [](PySession& s, int millis) {
             CheckStatus(s.session->SetMutationBufferFlushInterval(millis));
           })
      .def(
          "apply",
          [](PySession& s, PyWriteOp& op) {
            std::unique_ptr<WriteOperation> w(std::move(op.op));
            if (!w) RaiseIllegalState("the operation was already applied to a session");
            // Buffering a routed row takes microseconds: the GIL is kept for it (releasing it
            // per row would hand it to any other thread for a whole switch interval). A row
            // that must wait (AUTO_FLUSH_SYNC's send, a master lookup, a full buffer) waits
            // without it.
            bool applied = false;
            absl::Status st = s.session->TryApply(&w, &applied);
            if (st.ok() && !applied) {
              py::gil_scoped_release release;
              st = s.session->Apply(std::move(w));
            }
            CheckStatus(st);
          },
          py::arg("op"),
          "Applies the operation (consumed). FLUSH_AUTO_SYNC: sends it and raises its error; "
          "buffered modes: row errors go to get_pending_errors().")
      .def(
          "flush",
          [](PySession& s) {
            CheckStatus(Unlocked([&] { return s.session->Flush(); }),
                        "flush (see get_pending_errors())");
          },
          "Sends everything buffered and waits. Raises BasaltError when some rows failed.")
      .def(
          "close", [](PySession& s) { CheckStatus(Unlocked([&] { return s.session->Close(); })); },
          "Flushes and closes the session.")
      .def("has_pending_operations",
           [](const PySession& s) { return s.session->HasPendingOperations(); })
      .def("count_buffered_operations",
           [](const PySession& s) { return s.session->CountBufferedOperations(); })
      .def("count_pending_errors",
           [](const PySession& s) { return s.session->CountPendingErrors(); })
      .def(
          "get_pending_errors",
          [](PySession& s) {
            bool overflowed = false;
            std::vector<std::unique_ptr<client::Error>> errors =
                s.session->GetPendingErrors(&overflowed);
            py::list out;
            for (const auto& e : errors) {
              out.append(
                  PyError{e->status(), e->failed_op().ToString(), e->was_possibly_successful()});
            }
            return py::make_tuple(out, overflowed);
          },
          "Moves the collected errors out: (list of Error, overflowed).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PySession& s, py::args) {
        CheckStatus(Unlocked([&] { return s.session->Close(); }));
        return false;
      });
}

void BindOps(py::module_& m) {
  py::class_<PyWriteOp>(m, "WriteOperation",
                        "An operation from Table.new_insert() and friends: set columns with "
                        "op['name'] = value or op[index] = value, then Session.apply(op).")
      .def(
          "__setitem__",
          [](PyWriteOp& op, py::handle key, py::handle value) {
            WriteOperation& w = Live(op);
            int idx = op.table->Resolve(key);
            SetCell(w.mutable_row(), idx, op.table->columns[idx], value);
          },
          "Sets a column by name or index; None is NULL.")
      .def("set_null",
           [](PyWriteOp& op, py::handle key) {
             int idx = op.table->Resolve(key);
             SetCell(Live(op).mutable_row(), idx, op.table->columns[idx], py::none());
           })
      .def("unset",
           [](PyWriteOp& op, py::handle key) {
             int idx = op.table->Resolve(key);
             CheckStatus(Live(op).mutable_row()->Unset(idx));
           })
      .def("is_set",
           [](PyWriteOp& op, py::handle key) {
             return Live(op).row().IsColumnSet(op.table->Resolve(key));
           })
      .def(
          "from_record",
          [](py::object self, py::handle record) {
            PyWriteOp& op = self.cast<PyWriteOp&>();
            SetRecord(Live(op).mutable_row(), *op.table, record);
            return self;
          },
          "Sets the columns of a dict or a tuple in column order.")
      .def_property_readonly(
          "type", [](PyWriteOp& op) { return WriteOperation::TypeToString(Live(op).type()); })
      .def("__repr__", [](PyWriteOp& op) {
        return op.op ? op.op->ToString() : std::string("<applied operation>");
      });
}

}  // namespace

PySession::~PySession() {
  WithoutGil([this] { session.reset(); });
}

std::unique_ptr<WriteOperation> NewOperation(client::Table& t, WriteOperation::Type type) {
  switch (type) {
    case WriteOperation::INSERT:
      return t.NewInsert();
    case WriteOperation::UPDATE:
      return t.NewUpdate();
    case WriteOperation::DELETE:
      return t.NewDelete();
    case WriteOperation::UPSERT:
      return t.NewUpsert();
    case WriteOperation::INSERT_IGNORE:
      return t.NewInsertIgnore();
    case WriteOperation::UPDATE_IGNORE:
      return t.NewUpdateIgnore();
    case WriteOperation::DELETE_IGNORE:
      return t.NewDeleteIgnore();
  }
  RaiseInvalid("unknown operation type " + std::to_string(static_cast<int>(type)));
}

Session::FlushMode ParseFlushMode(py::handle mode) {
  if (py::isinstance<py::str>(mode)) {
    std::string s = mode.cast<std::string>();
    if (s == "sync" || s == "auto_sync") return Session::AUTO_FLUSH_SYNC;
    if (s == "background" || s == "auto_background") return Session::AUTO_FLUSH_BACKGROUND;
    if (s == "manual") return Session::MANUAL_FLUSH;
  } else if (PyLong_Check(mode.ptr())) {
    int v = mode.cast<int>();
    if (v >= Session::AUTO_FLUSH_SYNC && v <= Session::MANUAL_FLUSH) {
      return static_cast<Session::FlushMode>(v);
    }
  }
  RaiseInvalid("invalid flush mode " + py::repr(mode).cast<std::string>() +
               ": use basalt.FLUSH_AUTO_SYNC, FLUSH_AUTO_BACKGROUND, FLUSH_MANUAL");
}

std::unique_ptr<PySession> NewSession(std::shared_ptr<client::Client> c, py::handle flush_mode,
                                      py::handle timeout_ms) {
  auto s = std::make_unique<PySession>();
  s->session = c->NewSession();
  s->mode = ParseFlushMode(flush_mode);
  CheckStatus(s->session->SetFlushMode(s->mode));
  if (!timeout_ms.is_none()) s->session->SetTimeoutMillis(timeout_ms.cast<int>());
  return s;
}

void BindTable(py::module_& m) {
  BindOps(m);
  BindSession(m);
  using T = std::shared_ptr<TableHandle>;
  auto op_factory = [](WriteOperation::Type type) {
    return [type](const T& t, py::handle record) { return NewOp(t, type, record); };
  };
  py::class_<TableHandle, T>(m, "Table",
                             "An open table (Client.table(name)): schema and operation factories.")
      .def_property_readonly("name", [](const TableHandle& t) { return t.name; })
      .def_property_readonly("id", [](const TableHandle& t) { return t.table->id(); })
      .def_property_readonly("schema", [](const TableHandle& t) { return t.table->schema(); })
      .def_property_readonly("num_replicas",
                             [](const TableHandle& t) { return t.table->num_replicas(); })
      .def("__len__", [](const TableHandle& t) { return t.columns.size(); })
      .def("new_insert", op_factory(WriteOperation::INSERT), py::arg("record") = py::none())
      .def("new_upsert", op_factory(WriteOperation::UPSERT), py::arg("record") = py::none())
      .def("new_update", op_factory(WriteOperation::UPDATE), py::arg("record") = py::none())
      .def("new_delete", op_factory(WriteOperation::DELETE), py::arg("record") = py::none())
      .def("new_insert_ignore", op_factory(WriteOperation::INSERT_IGNORE),
           py::arg("record") = py::none())
      .def("new_update_ignore", op_factory(WriteOperation::UPDATE_IGNORE),
           py::arg("record") = py::none())
      .def("new_delete_ignore", op_factory(WriteOperation::DELETE_IGNORE),
           py::arg("record") = py::none())
      .def("__repr__", [](const TableHandle& t) { return "Table('" + t.name + "')"; });
}

}  // namespace basalt::python
