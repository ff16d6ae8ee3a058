// The columnar paths: Session._apply_columns (insert_columns and friends; basalt/_columnar.py
// validates and normalizes the arrays first) and Scanner.to_dict_of_arrays.
//
// Both do their per-row work in C++ without the GIL: the arrays' buffers are read (or written)
// directly, strings' UTF-8 bytes are collected up front while the GIL is held.

#include <cstring>
#include <string>
#include <vector>

#include <pybind11/numpy.h>

#include "py_common.h"
#include "scan_bindings.h"
#include "table_bindings.h"

namespace basalt::python {
namespace {

using client::Session;
using client::WriteOperation;

// One prepared input column: a C-contiguous array of exactly the column's cell type (see
// _columnar.py), or the UTF-8 / raw bytes of each value for variable-length columns.
struct SourceColumn {
  int idx = 0;
  const ColumnMeta* meta = nullptr;
  const void* data = nullptr;
  const uint8_t* mask = nullptr;  // 1 = NULL; nullptr: no NULL.
  std::vector<std::string_view> strings;
  // Owns what `data`, `mask` and `strings` point into: the buffer (kept requested, so an
  // exporter that copies keeps the copy alive), or for variable-length columns a tuple snapshot
  // of the elements, so that a thread replacing an element of the caller's array while the GIL
  // is released cannot free a string still read.
  std::shared_ptr<py::buffer_info> keep_buffer;
  py::object keep_data;
  py::object keep_mask;
};

// The bytes of one cell of each fixed-width column type, as _columnar.py produces them.
size_t CellSize(ColumnSchema::DataType t) {
  switch (t) {
    case ColumnSchema::BOOL:
    case ColumnSchema::INT8:
      return 1;
    case ColumnSchema::INT16:
      return 2;
    case ColumnSchema::INT32:
    case ColumnSchema::FLOAT:
    case ColumnSchema::DATE:
      return 4;
    default:
      return 8;
  }
}

template <typename T>
T At(const void* data, int64_t row) {
  return static_cast<const T*>(data)[row];
}

// Sets cell `row` of `src` into `out`. REQUIRES: the values were validated (a failure here is a
// bug, reported with the column and row).
absl::Status SetFromSource(const SourceColumn& src, int64_t row, client::PartialRow* out) {
  if (src.mask != nullptr && src.mask[row]) return out->SetNull(src.idx);
  const int i = src.idx;
  switch (src.meta->type) {
    case ColumnSchema::BOOL:
      return out->SetBool(i, At<uint8_t>(src.data, row) != 0);
    case ColumnSchema::INT8:
      return out->SetInt8(i, At<int8_t>(src.data, row));
    case ColumnSchema::INT16:
      return out->SetInt16(i, At<int16_t>(src.data, row));
    case ColumnSchema::INT32:
      return out->SetInt32(i, At<int32_t>(src.data, row));
    case ColumnSchema::INT64:
      return out->SetInt64(i, At<int64_t>(src.data, row));
    case ColumnSchema::FLOAT:
      return out->SetFloat(i, At<float>(src.data, row));
    case ColumnSchema::DOUBLE:
      return out->SetDouble(i, At<double>(src.data, row));
    case ColumnSchema::UNIXTIME_MICROS:
      return out->SetUnixTimeMicros(i, At<int64_t>(src.data, row));
    case ColumnSchema::DATE:
      return out->SetDate(i, At<int32_t>(src.data, row));
    case ColumnSchema::DECIMAL:
      return out->SetUnscaledDecimal(i, At<int64_t>(src.data, row));
    case ColumnSchema::STRING:
    case ColumnSchema::VARCHAR:
      return out->SetString(i, src.strings[row]);
    case ColumnSchema::BINARY:
      return out->SetBinary(i, src.strings[row]);
  }
  return absl::InternalError("unknown column type");
}

bool IsVariableLength(ColumnSchema::DataType t) {
  return t == ColumnSchema::STRING || t == ColumnSchema::VARCHAR || t == ColumnSchema::BINARY;
}

// The buffer of `obj`, C-contiguous (exporters that cannot provide one raise BufferError).
std::shared_ptr<py::buffer_info> RequestCContiguous(py::handle obj) {
  auto* view = new Py_buffer();
  if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    delete view;
    throw py::error_already_set();
  }
  return std::make_shared<py::buffer_info>(view);  // Owns (and releases) the view.
}

std::vector<SourceColumn> Prepare(const TableHandle& table, py::list columns, int64_t num_rows) {
  std::vector<SourceColumn> out;
  for (py::handle item : columns) {
    auto t = item.cast<py::tuple>();
    SourceColumn src;
    src.idx = t[0].cast<int>();
    src.meta = &table.columns.at(src.idx);
    if (!t[2].is_none()) {
      auto mask = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(t[2]);
      if (!mask || mask.size() != num_rows) RaiseInvalid(Describe(*src.meta) + ": bad NULL mask");
      src.mask = mask.data();
      src.keep_mask = mask;
    }
    if (IsVariableLength(src.meta->type)) {
      // A list (or object array) of str / bytes, None where masked. Copied into a tuple: the
      // views below point into its elements, which nobody else can replace.
      py::tuple seq = py::reinterpret_steal<py::tuple>(PySequence_Tuple(t[1].ptr()));
      if (!seq) throw py::error_already_set();
      if (static_cast<int64_t>(seq.size()) != num_rows) {
        RaiseInvalid(Describe(*src.meta) + ": bad array length");
      }
      src.keep_data = seq;
      src.strings.resize(num_rows);
      for (int64_t r = 0; r < num_rows; ++r) {
        if (src.mask != nullptr && src.mask[r]) continue;
        PyObject* v = PyTuple_GET_ITEM(seq.ptr(), r);
        if (!PyUnicode_Check(v) && !PyBytes_Check(v)) {
          RaiseInvalidType(Describe(*src.meta, r) + ": expected str or bytes, got " +
                           Py_TYPE(v)->tp_name);
        }
        Py_ssize_t n = 0;
        const char* p = nullptr;
        if (PyBytes_Check(v)) {
          p = PyBytes_AS_STRING(v);
          n = PyBytes_GET_SIZE(v);
        } else {
          p = PyUnicode_AsUTF8AndSize(v, &n);
          if (p == nullptr) throw py::error_already_set();
        }
        // The str's UTF-8 cache lives as long as the str, which `seq` holds.
        src.strings[r] = std::string_view(p, n);
      }
    } else {
      // C-contiguous, exactly the cell type (_columnar.py makes it so; checked, as the loop
      // reads the memory as such).
      src.keep_data = t[1];
      src.keep_buffer = RequestCContiguous(t[1]);
      const py::buffer_info& info = *src.keep_buffer;
      if (info.size != num_rows) RaiseInvalid(Describe(*src.meta) + ": bad array length");
      const size_t want = CellSize(src.meta->type);
      if (info.itemsize != static_cast<py::ssize_t>(want)) {
        RaiseInvalid(Describe(*src.meta) + ": expected items of " + std::to_string(want) +
                     " bytes, got " + std::to_string(info.itemsize));
      }
      src.data = info.ptr;
    }
    out.push_back(std::move(src));
  }
  return out;
}

// Checks every variable-length value with the row setter itself (length limits, VARCHAR
// characters) so that nothing is sent when one is bad. Fixed-width values were range-checked in
// _columnar.py and cannot fail.
absl::Status ValidateStrings(const client::Schema& schema, const std::vector<SourceColumn>& srcs,
                             int64_t num_rows) {
  client::PartialRow scratch(&schema);
  for (const SourceColumn& src : srcs) {
    if (!IsVariableLength(src.meta->type)) continue;
    for (int64_t r = 0; r < num_rows; ++r) {
      absl::Status s = SetFromSource(src, r, &scratch);
      if (!s.ok())
        return absl::InvalidArgumentError(Describe(*src.meta, r) + ": " + std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

// The row loop, without the GIL. In MANUAL_FLUSH a full buffer is flushed and the row applied
// again (row errors of that flush stay in the error collector).
absl::Status ApplyRows(Session* session, Session::FlushMode mode, client::Table& table,
                       WriteOperation::Type type, const std::vector<SourceColumn>& srcs,
                       int64_t num_rows) {
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int attempt = 0;; ++attempt) {
      std::unique_ptr<WriteOperation> op = NewOperation(table, type);
      client::PartialRow* row = op->mutable_row();
      for (const SourceColumn& src : srcs) {
        absl::Status s = SetFromSource(src, r, row);
        if (!s.ok())
          return absl::InternalError(Describe(*src.meta, r) + ": " + std::string(s.message()));
      }
      absl::Status s = session->Apply(std::move(op));
      if (s.ok()) break;
      if (mode == Session::MANUAL_FLUSH && absl::IsResourceExhausted(s) && attempt == 0) {
        (void)session->Flush();  // Row failures are collected; the row is retried once.
        continue;
      }
      return absl::Status(s.code(), "row " + std::to_string(r) + ": " + std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

// ---- to_dict_of_arrays ---------------------------------------------------------------------

const char* NumpyType(const ColumnMeta& c) {
  switch (c.type) {
    case ColumnSchema::BOOL:
      return "bool";
    case ColumnSchema::INT8:
      return "int8";
    case ColumnSchema::INT16:
      return "int16";
    case ColumnSchema::INT32:
      return "int32";
    case ColumnSchema::INT64:
      return "int64";
    case ColumnSchema::FLOAT:
      return "float32";
    case ColumnSchema::DOUBLE:
      return "float64";
    case ColumnSchema::UNIXTIME_MICROS:
      return "datetime64[us]";
    case ColumnSchema::DATE:
      return "datetime64[D]";
    default:
      return "object";
  }
}

// Fills one output column from every batch.
py::object GatherColumn(const std::vector<std::unique_ptr<PyBatch>>& batches, int c,
                        const ColumnMeta& meta, int64_t total) {
  // numpy.empty: arrays pybind11 allocates itself (data == nullptr) come out read-only.
  py::object empty = py::module_::import("numpy").attr("empty");
  py::array data = empty(total, NumpyType(meta));
  py::array mask;
  bool* mask_out = nullptr;
  if (meta.nullable) {
    mask = empty(total, "bool");
    mask_out = static_cast<bool*>(mask.mutable_data());
  }
  char* out = static_cast<char*>(data.mutable_data());
  const bool objects = std::strcmp(NumpyType(meta), "object") == 0;
  int64_t at = 0;
  for (const auto& b : batches) {
    const int64_t n = b->batch->NumRows();
    const client::ScanBatch::ColumnView& v = b->views[c];
    if (objects) {
      PyObject** cells = reinterpret_cast<PyObject**>(out);
      for (int64_t r = 0; r < n; ++r) {
        PyObject* old = cells[at + r];
        cells[at + r] = CellToPython(v, meta, r).release().ptr();
        Py_XDECREF(old);  // numpy fills new object arrays with None references.
      }
    } else if (meta.type == ColumnSchema::DATE) {
      int64_t* days = reinterpret_cast<int64_t*>(out) + at;
      for (int64_t r = 0; r < n; ++r) days[r] = At<int32_t>(v.data, r);
    } else {
      std::memcpy(out + at * v.cell_size, v.data, n * v.cell_size);
    }
    if (mask_out != nullptr) {
      for (int64_t r = 0; r < n; ++r) mask_out[at + r] = v.IsNull(r);
    }
    at += n;
  }
  if (!meta.nullable) return data;
  return py::module_::import("numpy.ma").attr("MaskedArray")(data, py::arg("mask") = mask);
}

py::dict ToDictOfArrays(PyScanner& s) {
  s.Open();
  std::vector<std::unique_ptr<PyBatch>> batches;
  int64_t total = 0;
  std::vector<ColumnMeta> meta = MetaOf(s.scanner->GetProjectionSchema());
  while (s.scanner->HasMoreRows()) {
    std::unique_ptr<PyBatch> b = s.NextBatch();
    if (b->batch->NumRows() == 0) continue;
    total += b->batch->NumRows();
    batches.push_back(std::move(b));
  }
  py::dict out;
  for (size_t c = 0; c < meta.size(); ++c) {
    out[py::str(meta[c].name)] = GatherColumn(batches, static_cast<int>(c), meta[c], total);
  }
  return out;
}

}  // namespace

void ApplyColumns(PySession& s, const TableHandle& table, WriteOperation::Type type,
                  py::list columns, int64_t num_rows) {
  std::vector<SourceColumn> srcs = Prepare(table, columns, num_rows);
  Session* session = s.session.get();
  const Session::FlushMode mode = s.mode;
  absl::Status st;
  {
    py::gil_scoped_release release;
    st = ValidateStrings(table.table->schema(), srcs, num_rows);
    if (st.ok() && mode == Session::AUTO_FLUSH_SYNC) {
      // One RPC per row would be absurd for arrays: send in background batches, then wait.
      st = session->SetFlushMode(Session::AUTO_FLUSH_BACKGROUND);
      if (st.ok()) {
        st = ApplyRows(session, Session::AUTO_FLUSH_BACKGROUND, *table.table, type, srcs, num_rows);
        absl::Status f = session->Flush();
        if (st.ok()) st = f;
        absl::Status m = session->SetFlushMode(Session::AUTO_FLUSH_SYNC);
        if (st.ok()) st = m;
      }
    } else if (st.ok()) {
      st = ApplyRows(session, mode, *table.table, type, srcs, num_rows);
    }
  }
  CheckStatus(st, "table '" + table.name + "'");
}

void BindColumnar(py::module_& m) {
  auto session = py::reinterpret_borrow<py::class_<PySession>>(m.attr("Session"));
  session.def(
      "_apply_columns",
      [](PySession& s, const std::shared_ptr<TableHandle>& t, int type, py::list columns,
         int64_t num_rows) {
        // Checked here, with the GIL: NewOperation may raise only while it is held.
        if (type < WriteOperation::INSERT || type > WriteOperation::DELETE_IGNORE) {
          RaiseInvalid("unknown operation type " + std::to_string(type));
        }
        ApplyColumns(s, *t, static_cast<WriteOperation::Type>(type), columns, num_rows);
      },
      "Applies prepared columns (basalt/_columnar.py); use insert_columns().");
  auto scanner = py::reinterpret_borrow<py::class_<PyScanner>>(m.attr("Scanner"));
  scanner.def("to_dict_of_arrays", &ToDictOfArrays,
              "Reads every remaining row into {column name: numpy array} (docs/python.md).");
}

}  // namespace basalt::python
