// Client, Table, table creation and alteration. The Python Client in basalt/client.py wraps
// _Client (address parsing, the table cache, Partitioning).
//
// Every call that may wait on the cluster releases the GIL while it waits (this file, the
// sessions and scanners of table_bindings.cc and scan_bindings.cc, their close() and their
// destructors): other Python threads run meanwhile. See docs/python.md, "The GIL".

#include <chrono>
#include <string>
#include <vector>

#include "py_common.h"
#include "schema_bindings.h"
#include "table_bindings.h"

namespace basalt::python {
namespace {

using RangeBound = client::TableCreator::RangePartitionBound;

RangeBound ParseBound(const std::string& s) {
  if (s == "inclusive") return client::TableCreator::INCLUSIVE_BOUND;
  if (s == "exclusive") return client::TableCreator::EXCLUSIVE_BOUND;
  RaiseInvalid("a range bound type is 'inclusive' or 'exclusive', not '" + s + "'");
}

// A range bound row (dict, tuple or None for unbounded) against `schema`.
std::unique_ptr<client::PartialRow> BoundRow(const client::Schema* schema, const TableHandle& names,
                                             py::handle record) {
  return RowFromRecord(schema, names, record);
}

// Alters a table: the steps are recorded by the C++ alterer and sent by alter().
struct PyTableAlterer {
  PyTableAlterer(std::shared_ptr<client::Client> c, std::shared_ptr<TableHandle> t)
      : client(std::move(c)), table(std::move(t)), alterer(client->NewTableAlterer(table->name)) {}
  std::shared_ptr<client::Client> client;
  std::shared_ptr<TableHandle> table;  // Its schema builds range bounds.
  std::unique_ptr<client::TableAlterer> alterer;
  std::vector<std::unique_ptr<PyColumnSpec>> specs;
  std::string new_name;
};

void BindAlterer(py::module_& m) {
  py::class_<PyTableAlterer>(m, "TableAlterer",
                             "Steps applied in order by alter(), all or nothing. Get one from "
                             "Client.new_table_alterer(table).")
      .def(
          "add_column",
          [](PyTableAlterer& a, const std::string& name, py::object type_, py::object nullable,
             py::object default_, py::object encoding, py::object compression, py::object precision,
             py::object scale, py::object length, py::object comment,
             py::object block_size) -> PyColumnSpec& {
            a.specs.push_back(std::make_unique<PyColumnSpec>(a.alterer->AddColumn(name), name));
            return a.specs.back()->Configure(type_, nullable, false, default_, encoding,
                                             compression, precision, scale, length, comment,
                                             block_size);
          },
          py::arg("name"), py::arg("type_") = py::none(), py::arg("nullable") = py::none(),
          py::arg("default") = py::none(), py::arg("encoding") = py::none(),
          py::arg("compression") = py::none(), py::arg("precision") = py::none(),
          py::arg("scale") = py::none(), py::arg("length") = py::none(),
          py::arg("comment") = py::none(), py::arg("block_size") = py::none(),
          py::return_value_policy::reference_internal,
          "Adds a column (a NOT NULL one needs a default); returns its ColumnSpec.")
      .def(
          "alter_column",
          [](PyTableAlterer& a, const std::string& name, py::object rename_to) -> PyColumnSpec& {
            a.specs.push_back(std::make_unique<PyColumnSpec>(a.alterer->AlterColumn(name), name));
            if (!rename_to.is_none()) a.specs.back()->spec->RenameTo(rename_to.cast<std::string>());
            return *a.specs.back();
          },
          py::arg("name"), py::arg("rename_to") = py::none(),
          py::return_value_policy::reference_internal,
          "Changes a column; only .rename(new_name) is supported.")
      .def(
          "drop_column",
          [](py::object self, const std::string& name) {
            self.cast<PyTableAlterer&>().alterer->DropColumn(name);
            return self;
          },
          "Drops a (non-key) column.")
      .def(
          "rename",
          [](py::object self, const std::string& name) {
            auto& a = self.cast<PyTableAlterer&>();
            a.alterer->RenameTo(name);
            a.new_name = name;
            return self;
          },
          "Renames the table.")
      .def(
          "add_range_partition",
          [](py::object self, py::object lower, py::object upper, const std::string& lower_type,
             const std::string& upper_type) {
            auto& a = self.cast<PyTableAlterer&>();
            const client::Schema* s = &a.table->table->schema();
            a.alterer->AddRangePartition(BoundRow(s, *a.table, lower), BoundRow(s, *a.table, upper),
                                         ParseBound(lower_type), ParseBound(upper_type));
            return self;
          },
          py::arg("lower_bound") = py::none(), py::arg("upper_bound") = py::none(),
          py::arg("lower_bound_type") = "inclusive", py::arg("upper_bound_type") = "exclusive")
      .def(
          "drop_range_partition",
          [](py::object self, py::object lower, py::object upper, const std::string& lower_type,
             const std::string& upper_type) {
            auto& a = self.cast<PyTableAlterer&>();
            const client::Schema* s = &a.table->table->schema();
            a.alterer->DropRangePartition(BoundRow(s, *a.table, lower),
                                          BoundRow(s, *a.table, upper), ParseBound(lower_type),
                                          ParseBound(upper_type));
            return self;
          },
          py::arg("lower_bound") = py::none(), py::arg("upper_bound") = py::none(),
          py::arg("lower_bound_type") = "inclusive", py::arg("upper_bound_type") = "exclusive")
      .def(
          "_alter",
          [](PyTableAlterer& a) {
            for (auto& s : a.specs) s->ApplyDefault();
            CheckStatus(Unlocked([&] { return a.alterer->Alter(); }),
                        "altering table '" + a.table->name + "'");
            return a.new_name.empty() ? a.table->name : a.new_name;
          },
          "Sends the steps; returns the table's (possibly new) name.")
      .def_property_readonly("_table_name", [](const PyTableAlterer& a) { return a.table->name; });
}

// create_table's partitioning, as basalt/client.py flattens Partitioning.
void CreateTable(client::Client& c, const std::string& name, const client::Schema& schema,
                 const std::vector<std::tuple<std::vector<std::string>, int, int>>& hash,
                 py::object range_columns, py::list ranges, py::list splits, int n_replicas,
                 bool wait) {
  TableHandle names(name, schema);
  std::unique_ptr<client::TableCreator> creator = c.NewTableCreator();
  creator->table_name(name).schema(&schema).num_replicas(n_replicas).wait(wait);
  for (const auto& [cols, buckets, seed] : hash) creator->add_hash_partitions(cols, buckets, seed);
  if (!range_columns.is_none()) {
    creator->set_range_partition_columns(range_columns.cast<std::vector<std::string>>());
  }
  for (py::handle r : ranges) {
    auto t = r.cast<py::tuple>();
    creator->add_range_partition(BoundRow(&schema, names, t[0]), BoundRow(&schema, names, t[1]),
                                 ParseBound(t[2].cast<std::string>()),
                                 ParseBound(t[3].cast<std::string>()));
  }
  for (py::handle split : splits) {
    creator->add_range_partition_split(BoundRow(&schema, names, split));
  }
  CheckStatus(Unlocked([&] { return creator->Create(); }), "creating table '" + name + "'");
}

}  // namespace

void BindClient(py::module_& m) {
  py::class_<client::TabletServerInfo>(m, "TabletServer", "A tablet server as the master lists it.")
      .def("uuid", [](const client::TabletServerInfo& t) { return t.uuid; })
      .def("hostname", [](const client::TabletServerInfo& t) { return t.hostname; })
      .def("port", [](const client::TabletServerInfo& t) { return t.port; })
      .def_readonly("live", &client::TabletServerInfo::live)
      .def_readonly("num_replicas", &client::TabletServerInfo::num_replicas)
      .def_readonly("millis_since_heartbeat", &client::TabletServerInfo::millis_since_heartbeat)
      .def("__repr__", [](const client::TabletServerInfo& t) {
        return "TabletServer(" + t.uuid + " @ " + t.hostname + ":" + std::to_string(t.port) + ")";
      });

  py::class_<client::Client, std::shared_ptr<client::Client>>(m, "_Client")
      .def("_open_table",
           [](client::Client& c, const std::string& name) {
             std::shared_ptr<client::Table> t;
             CheckStatus(Unlocked([&] { return c.OpenTable(name, &t); }),
                         "opening table '" + name + "'");
             return std::make_shared<TableHandle>(std::move(t));
           })
      .def("_create_table", &CreateTable)
      .def("_delete_table",
           [](client::Client& c, const std::string& name) {
             CheckStatus(Unlocked([&] { return c.DeleteTable(name); }),
                         "deleting table '" + name + "'");
           })
      .def("_table_exists",
           [](client::Client& c, const std::string& name) {
             bool exists = false;
             CheckStatus(Unlocked([&] { return c.TableExists(name, &exists); }));
             return exists;
           })
      .def("_list_tables",
           [](client::Client& c, const std::string& filter) {
             std::vector<std::string> tables;
             CheckStatus(Unlocked([&] { return c.ListTables(&tables, filter); }));
             return tables;
           })
      .def("_list_tablet_servers",
           [](client::Client& c) {
             std::vector<client::TabletServerInfo> servers;
             CheckStatus(Unlocked([&] { return c.ListTabletServers(&servers); }));
             return servers;
           })
      .def("_new_table_alterer",
           [](std::shared_ptr<client::Client> c, std::shared_ptr<TableHandle> t) {
             return std::make_unique<PyTableAlterer>(std::move(c), std::move(t));
           })
      .def("_new_session", &NewSession)
      .def("latest_observed_timestamp", &client::Client::GetLatestObservedTimestamp,
           "The latest timestamp (raw HybridTime) this client observed from any server.")
      .def("set_latest_observed_timestamp", &client::Client::SetLatestObservedTimestamp);

  m.def(
      "_connect",
      [](std::vector<std::string> masters, int64_t admin_timeout_ms, int64_t rpc_timeout_ms) {
        client::ClientBuilder b;
        b.master_server_addrs(std::move(masters));
        if (admin_timeout_ms > 0) {
          b.default_admin_operation_timeout(std::chrono::milliseconds(admin_timeout_ms));
        }
        if (rpc_timeout_ms > 0) b.default_rpc_timeout(std::chrono::milliseconds(rpc_timeout_ms));
        std::shared_ptr<client::Client> c;
        CheckStatus(b.Build(&c), "connecting");
        return c;
      },
      py::arg("masters"), py::arg("admin_timeout_ms") = 0, py::arg("rpc_timeout_ms") = 0);

  BindAlterer(m);
  BindTable(m);
}

}  // namespace basalt::python
