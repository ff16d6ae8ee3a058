// Scanners, their batches, column predicates (table['key'] >= 5).
//
// Open, NextBatch, KeepAlive, Close and the destructor (garbage collection) release the GIL.
// Configuration methods return the scanner, so calls chain as in kudu-python.

#include <string>

#include "py_common.h"
#include "scan_bindings.h"
#include "table_bindings.h"

namespace basalt::python {
namespace {

using client::Predicate;
using client::Scanner;

// A predicate; shared so that one Python predicate can be added to several scanners (each gets a
// clone).
struct PyPredicate {
  std::shared_ptr<Predicate> pred;
};

// table['name']: builds predicates on one column.
struct PyColumn {
  std::shared_ptr<TableHandle> table;
  int idx;
  const ColumnMeta& meta() const { return table->columns[idx]; }
};

PyPredicate Compare(const PyColumn& c, Predicate::ComparisonOp op, py::handle v) {
  return {std::shared_ptr<Predicate>(
      c.table->table->NewComparisonPredicate(c.meta().name, op, ToValue(c.meta(), v)))};
}

Scanner::ReadMode ParseReadMode(py::handle mode) {
  if (py::isinstance<py::str>(mode)) {
    std::string s = mode.cast<std::string>();
    if (s == "latest") return Scanner::READ_LATEST;
    if (s == "snapshot") return Scanner::READ_AT_SNAPSHOT;
    if (s == "read_your_writes") return Scanner::READ_YOUR_WRITES;
  } else if (PyLong_Check(mode.ptr())) {
    int v = mode.cast<int>();
    if (v >= Scanner::READ_LATEST && v <= Scanner::READ_YOUR_WRITES) {
      return static_cast<Scanner::ReadMode>(v);
    }
  }
  RaiseInvalid("invalid read mode " + py::repr(mode).cast<std::string>() +
               ": use 'latest', 'snapshot' or 'read_your_writes'");
}

// Chained configuration: runs fn(scanner) and returns self.
template <typename Fn>
auto Chain(Fn fn) {
  return [fn](py::object self, py::args args) {
    PyScanner& s = self.cast<PyScanner&>();
    if (s.opened) RaiseStatus(absl::FailedPreconditionError("the scanner is already open"));
    fn(s, args);
    return self;
  };
}

void BindPredicates(py::module_& m) {
  py::class_<PyPredicate>(m, "Predicate", "A condition on one column (table['c'] >= 5).")
      .def("__repr__",
           [](const PyPredicate& p) { return "Predicate(" + p.pred->ToString() + ")"; });

  py::class_<PyColumn>(m, "Column", "A column of a table, for predicates: table['key'] >= 5.")
      .def("__lt__", [](const PyColumn& c, py::handle v) { return Compare(c, Predicate::LESS, v); })
      .def("__le__",
           [](const PyColumn& c, py::handle v) { return Compare(c, Predicate::LESS_EQUAL, v); })
      .def("__eq__",
           [](const PyColumn& c, py::handle v) { return Compare(c, Predicate::EQUAL, v); })
      .def("__ge__",
           [](const PyColumn& c, py::handle v) { return Compare(c, Predicate::GREATER_EQUAL, v); })
      .def("__gt__",
           [](const PyColumn& c, py::handle v) { return Compare(c, Predicate::GREATER, v); })
      .def("__ne__",
           [](const PyColumn& c, py::handle) -> PyPredicate {
             RaiseStatus(absl::UnimplementedError("column '" + c.meta().name +
                                                  "': != is not a supported predicate"));
           })
      .def("in_list",
           [](const PyColumn& c, py::iterable values) {
             std::vector<client::Value> vs;
             for (py::handle v : values) vs.push_back(ToValue(c.meta(), v));
             return PyPredicate{
                 std::shared_ptr<Predicate>(c.table->table->NewInListPredicate(c.meta().name, vs))};
           })
      .def("is_null",
           [](const PyColumn& c) {
             return PyPredicate{
                 std::shared_ptr<Predicate>(c.table->table->NewIsNullPredicate(c.meta().name))};
           })
      .def("is_not_null",
           [](const PyColumn& c) {
             return PyPredicate{
                 std::shared_ptr<Predicate>(c.table->table->NewIsNotNullPredicate(c.meta().name))};
           })
      .def_property_readonly("name", [](const PyColumn& c) { return c.meta().name; })
      .def("__repr__",
           [](const PyColumn& c) { return "Column(" + c.table->name + "." + c.meta().name + ")"; });
  // Columns compare to build predicates, so they cannot be dict keys.
  m.attr("Column").attr("__hash__") = py::none();
}

void AddPredicate(PyScanner& s, py::handle p) {
  const PyPredicate& pred = p.cast<const PyPredicate&>();
  CheckStatus(s.scanner->AddConjunctPredicate(pred.pred->Clone()));
}

void BindBatch(py::module_& m) {
  py::class_<PyBatch>(m, "ScanBatch", "One batch of scan results (Scanner.next_batch()).")
      .def("__len__", [](const PyBatch& b) { return b.batch->NumRows(); })
      .def("as_tuples", &PyBatch::AsTuples, "The rows as a list of tuples.")
      .def("__getitem__",
           [](const PyBatch& b, int64_t i) {
             if (i < 0) i += b.batch->NumRows();
             if (i < 0 || i >= b.batch->NumRows()) throw py::index_error("row out of range");
             return b.Tuple(i);
           })
      .def("__iter__", [](const PyBatch& b) { return py::iter(b.AsTuples()); });
}

}  // namespace

py::tuple PyBatch::Tuple(int64_t row) const {
  const int n = static_cast<int>(meta.size());
  py::tuple t(n);
  for (int c = 0; c < n; ++c) {
    PyTuple_SET_ITEM(t.ptr(), c, CellToPython(views[c], meta[c], row).release().ptr());
  }
  return t;
}

py::list PyBatch::AsTuples() const {
  const int64_t n = batch->NumRows();
  py::list out(n);
  for (int64_t i = 0; i < n; ++i) PyList_SET_ITEM(out.ptr(), i, Tuple(i).release().ptr());
  return out;
}

PyBatch::PyBatch(std::unique_ptr<client::ScanBatch> b) : batch(std::move(b)) {
  meta = MetaOf(batch->projection_schema());
  for (size_t c = 0; c < meta.size(); ++c) views.push_back(batch->Column(static_cast<int>(c)));
}

std::unique_ptr<PyBatch> PyScanner::NextBatch() {
  if (!opened) Open();
  auto batch = std::make_unique<client::ScanBatch>();
  CheckStatus(Unlocked([&] { return scanner->NextBatch(batch.get()); }),
              "scanning table '" + table->name + "'");
  return std::make_unique<PyBatch>(std::move(batch));
}

PyScanner::~PyScanner() {
  WithoutGil([this] { scanner.reset(); });
}

void PyScanner::Close() {
  if (scanner == nullptr) return;
  py::gil_scoped_release release;
  scanner->Close();
}

void PyScanner::Open() {
  if (opened) return;
  CheckStatus(Unlocked([&] { return scanner->Open(); }),
              "opening a scanner of table '" + table->name + "'");
  opened = true;
}

void BindScan(py::module_& m) {
  BindPredicates(m);
  BindBatch(m);
  using T = std::shared_ptr<TableHandle>;
  auto table = py::reinterpret_borrow<py::class_<TableHandle, T>>(m.attr("Table"));
  table
      .def(
          "__getitem__",
          [](const T& t, py::handle key) {
            return PyColumn{t, t->Resolve(key)};
          },
          "The column named (or at index) key, for predicates.")
      .def(
          "scanner",
          [](const T& t) {
            auto s = std::make_unique<PyScanner>();
            s->table = t;
            s->scanner = std::make_unique<Scanner>(t->table.get());
            return s;
          },
          "A new scanner of this table.");

  py::class_<PyScanner>(m, "Scanner",
                        "Reads rows (Table.scanner()): configure, open(), then next_batch() while "
                        "has_more_rows(), or read_all_tuples() / to_dict_of_arrays().")
      .def("set_projected_column_names", Chain([](PyScanner& s, py::args a) {
             CheckStatus(s.scanner->SetProjectedColumnNames(a[0].cast<std::vector<std::string>>()));
           }))
      .def("set_projected_column_indexes", Chain([](PyScanner& s, py::args a) {
             CheckStatus(s.scanner->SetProjectedColumnIndexes(a[0].cast<std::vector<int>>()));
           }))
      .def("add_predicate", Chain([](PyScanner& s, py::args a) { AddPredicate(s, a[0]); }))
      .def("add_predicates", Chain([](PyScanner& s, py::args a) {
             for (py::handle p : a[0]) AddPredicate(s, p);
           }))
      .def("add_lower_bound", Chain([](PyScanner& s, py::args a) {
             auto row = RowFromRecord(&s.table->table->schema(), *s.table, a[0]);
             CheckStatus(s.scanner->AddLowerBound(*row));
           }),
           "Inclusive primary-key lower bound: a dict or tuple setting every key column.")
      .def("add_exclusive_upper_bound", Chain([](PyScanner& s, py::args a) {
             auto row = RowFromRecord(&s.table->table->schema(), *s.table, a[0]);
             CheckStatus(s.scanner->AddExclusiveUpperBound(*row));
           }))
      .def("set_read_mode", Chain([](PyScanner& s, py::args a) {
             CheckStatus(s.scanner->SetReadMode(ParseReadMode(a[0])));
           }),
           "'latest', 'snapshot', 'read_your_writes' (or basalt.READ_* constants).")
      .def("set_snapshot", Chain([](PyScanner& s, py::args a) {
             py::handle t = a[0];
             int64_t micros = PyLong_Check(t.ptr())
                                  ? t.cast<int64_t>()
                                  : GetConverters().datetime_to_micros(t).cast<int64_t>();
             if (micros < 0) RaiseInvalid("a snapshot time is after the epoch");
             CheckStatus(s.scanner->SetSnapshotMicros(static_cast<uint64_t>(micros)));
           }),
           "Reads at this time: microseconds since the epoch, or a datetime (naive = UTC).")
      .def("set_snapshot_raw", Chain([](PyScanner& s, py::args a) {
             CheckStatus(s.scanner->SetSnapshotRaw(a[0].cast<uint64_t>()));
           }),
           "Reads at this raw HybridTime (Client.latest_observed_timestamp()).")
      .def("set_fault_tolerant",
           Chain([](PyScanner& s, py::args) { CheckStatus(s.scanner->SetFaultTolerant()); }),
           "Ordered snapshot scan that resumes on another replica after a failure.")
      .def("set_limit", Chain([](PyScanner& s, py::args a) {
             int64_t limit = a[0].cast<int64_t>();
             if (limit <= 0) RaiseInvalid("a limit must be positive");
             CheckStatus(s.scanner->SetLimit(limit));
           }))
      .def("set_batch_size", Chain([](PyScanner& s, py::args a) {
             CheckStatus(s.scanner->SetBatchSizeBytes(a[0].cast<uint32_t>()));
           }),
           "Bytes per batch.")
      .def("set_timeout", Chain([](PyScanner& s, py::args a) {
             CheckStatus(s.scanner->SetTimeoutMillis(a[0].cast<int>()));
           }),
           "Milliseconds for open() and for each next_batch().")
      .def("set_timeout_millis", Chain([](PyScanner& s, py::args a) {
             CheckStatus(s.scanner->SetTimeoutMillis(a[0].cast<int>()));
           }))
      .def("set_ordered", Chain([](PyScanner& s, py::args) {
             CheckStatus(s.scanner->SetOrderMode(Scanner::ORDERED));
           }),
           "Rows in primary-key order (tablets read one at a time).")
      .def("set_max_concurrent_tablets", Chain([](PyScanner& s, py::args a) {
             CheckStatus(s.scanner->SetMaxConcurrentTablets(a[0].cast<int>()));
           }),
           "Tablets an unordered scan reads at once (default 2; 1: one at a time, in "
           "partition-key order).")
      .def("open",
           [](py::object self) {
             self.cast<PyScanner&>().Open();
             return self;
           })
      .def("has_more_rows", [](PyScanner& s) { return !s.opened || s.scanner->HasMoreRows(); })
      .def("next_batch", &PyScanner::NextBatch, "The next ScanBatch (opens the scanner if needed).")
      .def("read_next_batch_tuples", [](PyScanner& s) { return s.NextBatch()->AsTuples(); })
      .def(
          "read_all_tuples",
          [](PyScanner& s) {
            s.Open();
            py::list out;
            while (s.scanner->HasMoreRows()) {
              py::list rows = s.NextBatch()->AsTuples();
              for (py::handle r : rows) out.append(r);
            }
            return out;
          },
          "Every remaining row as a tuple (opens the scanner if needed).")
      .def("keep_alive",
           [](PyScanner& s) { CheckStatus(Unlocked([&] { return s.scanner->KeepAlive(); })); })
      .def("get_projection_schema",
           [](const PyScanner& s) { return s.scanner->GetProjectionSchema(); })
      .def(
          "snapshot_raw", [](const PyScanner& s) { return s.scanner->GetSnapshotRaw(); },
          "The raw HybridTime a snapshot scan reads at (0 before the first tablet answered).")
      .def("close", &PyScanner::Close, "Ends the scan on its tablet server; releases the GIL.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyScanner& s, py::args) {
             s.Close();
             return false;
           })
      .def("__repr__", [](const PyScanner& s) { return s.scanner->ToString(); });
  BindColumnar(m);
}

}  // namespace basalt::python
