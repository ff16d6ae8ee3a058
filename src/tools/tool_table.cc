// `basalt table ...`: create (from a CREATE TABLE spec), list, describe, delete, count, scan.

#include <gflags/gflags.h>

#include <iostream>
#include <memory>

#include "absl/strings/str_split.h"
#include "common/partition.h"
#include "common/schema.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"
#include "tools/master_rpc.h"
#include "tools/predicate_parser.h"
#include "tools/scan_predicates.h"
#include "tools/table_spec.h"
#include "tools/tool_common.h"

DEFINE_string(columns, "",
              "Comma-separated columns: for scan, the columns returned (empty: every column); "
              "for load, the columns of the file when it has no header line.");
DEFINE_string(predicates, "",
              "Conditions the scanned rows meet, e.g. \"key >= 5 AND host IN ('a', 'b') AND v IS "
              "NULL\" (see docs/cli.md).");
DEFINE_int64(limit, -1, "Maximum number of rows a scan prints; -1: all.");
DEFINE_string(list_table_filter, "", "Substring the names of listed tables contain.");

namespace basalt::tools {

namespace {

using client::ColumnSchema;

absl::Status AddColumns(const TableSpec& spec, client::SchemaBuilder* b) {
  for (const ColumnSpecDef& c : spec.columns) {
    BASALT_RETURN_IF_ERROR(ToColumnSpec(c, b->AddColumn(c.name)));
  }
  b->SetPrimaryKey(spec.key_columns);
  return absl::OkStatus();
}

// A row of `schema` with the range columns set to `values`.
absl::StatusOr<std::unique_ptr<client::PartialRow>> RangeRow(
    const client::Schema& schema, const std::vector<std::string>& columns,
    const std::optional<std::vector<Literal>>& values) {
  auto row = schema.NewRow();
  if (!values) return row;
  for (size_t i = 0; i < columns.size() && i < values->size(); ++i) {
    const ColumnSchema col = schema.Column(schema.FindColumn(columns[i]));
    BASALT_ASSIGN_OR_RETURN(client::Value v, LiteralToValue((*values)[i], col.type(), col.scale()));
    BASALT_RETURN_IF_ERROR(row->Set(columns[i], v));
  }
  return row;
}

absl::Status CreateTable(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(TableSpec spec, ParseTableSpec(ctx.args[1]));
  client::SchemaBuilder builder;
  BASALT_RETURN_IF_ERROR(AddColumns(spec, &builder));
  client::Schema schema;
  BASALT_RETURN_IF_ERROR(builder.Build(&schema));
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  auto creator = client->NewTableCreator();
  creator->table_name(spec.table_name).schema(&schema);
  for (const auto& h : spec.hash_partitions) {
    creator->add_hash_partitions(h.columns, h.num_buckets, h.seed);
  }
  if (spec.range_columns) {
    creator->set_range_partition_columns(*spec.range_columns);
    using B = client::TableCreator::RangePartitionBound;
    for (const auto& r : spec.range_partitions) {
      BASALT_ASSIGN_OR_RETURN(auto lower, RangeRow(schema, *spec.range_columns, r.lower));
      BASALT_ASSIGN_OR_RETURN(auto upper, RangeRow(schema, *spec.range_columns, r.upper));
      creator->add_range_partition(std::move(lower), std::move(upper),
                                   r.lower_inclusive ? B::INCLUSIVE_BOUND : B::EXCLUSIVE_BOUND,
                                   r.upper_inclusive ? B::INCLUSIVE_BOUND : B::EXCLUSIVE_BOUND);
    }
    for (const auto& s : spec.split_rows) {
      BASALT_ASSIGN_OR_RETURN(auto row, RangeRow(schema, *spec.range_columns, s));
      creator->add_range_partition_split(std::move(row));
    }
  } else if (!spec.hash_partitions.empty()) {
    creator->set_range_partition_columns({});
  }
  if (spec.num_replicas > 0) creator->num_replicas(spec.num_replicas);
  BASALT_RETURN_IF_ERROR_PREPEND(creator->Create(),
                                 StrCat("creating table '", spec.table_name, "'"));
  *ctx.out << "Created table " << spec.table_name << "\n";
  return absl::OkStatus();
}

absl::Status ListTables(const ActionContext& ctx) {
  pb::ListTablesRequestPB req;
  req.set_name_filter(FLAGS_list_table_filter);
  pb::ListTablesResponsePB resp;
  BASALT_RETURN_IF_ERROR(CallMaster(ctx.args[0], &pb::MasterService::Stub::ListTables, req, &resp));
  BASALT_ASSIGN_OR_RETURN(TableWriter::Format format, OutputFormat());
  std::vector<const pb::ListTablesResponsePB::TableInfoPB*> tables;
  for (const auto& t : resp.tables()) tables.push_back(&t);
  std::sort(tables.begin(), tables.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
  TableWriter w(format, {"name", "id", "tablets", "replicas"}, ctx.out);
  for (const auto* t : tables) {
    w.AddRow({Cell::String(t->name()), Cell::String(t->id()),
              Cell::Number(std::to_string(t->num_tablets())),
              Cell::Number(std::to_string(t->num_replicas()))});
  }
  w.Finish();
  return absl::OkStatus();
}

absl::Status DescribeTablets(const ActionContext& ctx, const basalt::Schema& schema,
                             const PartitionSchema& ps) {
  pb::GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_name(ctx.args[1]);
  req.set_max_returned_locations(100000);
  pb::GetTableLocationsResponsePB resp;
  BASALT_RETURN_IF_ERROR(
      CallMaster(ctx.args[0], &pb::MasterService::Stub::GetTableLocations, req, &resp));
  *ctx.out << "\nTABLETS (" << resp.tablet_locations_size() << "):\n";
  for (const auto& t : resp.tablet_locations()) {
    BASALT_ASSIGN_OR_RETURN(Partition p, Partition::FromPB(t.partition()));
    *ctx.out << "  " << t.tablet_id() << "  " << ps.PartitionDebugString(p, schema) << "\n";
    for (const auto& r : t.replicas()) {
      *ctx.out << "    " << pb::RaftRolePB_Name(r.role()) << " " << r.ts_uuid() << " "
               << r.rpc_address().host() << ":" << r.rpc_address().port() << "\n";
    }
  }
  return absl::OkStatus();
}

absl::Status DescribeTable(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(MasterTableSchema t, GetMasterTableSchema(ctx.args[0], ctx.args[1]));
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  client::Schema cs;
  BASALT_RETURN_IF_ERROR(client->GetTableSchema(ctx.args[1], &cs));
  *ctx.out << "TABLE " << t.pb.table_name() << " (\n";
  std::string key;
  for (int i = 0; i < cs.num_columns(); ++i) {
    const bool is_key = i < cs.num_key_columns();
    *ctx.out << "    " << ColumnToSpec(cs.Column(i), is_key) << ",\n";
    if (is_key) key += StrCat(key.empty() ? "" : ", ", cs.Column(i).name());
  }
  *ctx.out << "    PRIMARY KEY (" << key << ")\n)\n";
  *ctx.out << "PARTITION BY " << t.partition_schema.ToString(t.schema) << "\n";
  *ctx.out << "REPLICAS " << t.pb.num_replicas() << "\n";
  return DescribeTablets(ctx, t.schema, t.partition_schema);
}

absl::Status DeleteTable(const ActionContext& ctx) {
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  BASALT_RETURN_IF_ERROR(client->DeleteTable(ctx.args[1]));
  *ctx.out << "Deleted table " << ctx.args[1] << "\n";
  return absl::OkStatus();
}

absl::Status OpenScanner(const ActionContext& ctx, std::shared_ptr<client::Table>* table,
                         std::unique_ptr<client::Scanner>* scanner, bool count_only) {
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  BASALT_RETURN_IF_ERROR(client->OpenTable(ctx.args[1], table));
  *scanner = std::make_unique<client::Scanner>(table->get());
  client::Scanner* s = scanner->get();
  if (count_only) {
    BASALT_RETURN_IF_ERROR(s->SetProjectedColumnIndexes({}));
  } else if (!FLAGS_columns.empty()) {
    std::vector<std::string> cols = absl::StrSplit(FLAGS_columns, ',', absl::SkipEmpty());
    BASALT_RETURN_IF_ERROR(s->SetProjectedColumnNames(cols));
  }
  BASALT_RETURN_IF_ERROR(AddScanPredicates(FLAGS_predicates, table->get(), s));
  if (!count_only && FLAGS_limit >= 0) BASALT_RETURN_IF_ERROR(s->SetLimit(FLAGS_limit));
  BASALT_RETURN_IF_ERROR(s->SetFaultTolerant());
  return s->Open();
}

absl::Status CountRows(const ActionContext& ctx) {
  std::shared_ptr<client::Table> table;
  std::unique_ptr<client::Scanner> scanner;
  BASALT_RETURN_IF_ERROR(OpenScanner(ctx, &table, &scanner, /*count_only=*/true));
  int64_t n = 0;
  client::ScanBatch batch;
  while (scanner->HasMoreRows()) {
    BASALT_RETURN_IF_ERROR(scanner->NextBatch(&batch));
    n += batch.NumRows();
  }
  *ctx.out << n << "\n";
  return absl::OkStatus();
}

absl::Status ScanTable(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(TableWriter::Format format, OutputFormat());
  std::shared_ptr<client::Table> table;
  std::unique_ptr<client::Scanner> scanner;
  BASALT_RETURN_IF_ERROR(OpenScanner(ctx, &table, &scanner, /*count_only=*/false));
  const client::Schema& proj = scanner->GetProjectionSchema();
  std::vector<std::string> headers;
  for (int i = 0; i < proj.num_columns(); ++i) headers.push_back(proj.Column(i).name());
  TableWriter w(format, headers, ctx.out);
  int64_t printed = 0;
  client::ScanBatch batch;
  while (scanner->HasMoreRows() && (FLAGS_limit < 0 || printed < FLAGS_limit)) {
    BASALT_RETURN_IF_ERROR(scanner->NextBatch(&batch));
    for (int64_t r = 0; r < batch.NumRows() && (FLAGS_limit < 0 || printed < FLAGS_limit); ++r) {
      std::vector<Cell> row;
      for (int c = 0; c < proj.num_columns(); ++c) row.push_back(FormatCell(batch, c, r));
      w.AddRow(std::move(row));
      ++printed;
    }
  }
  w.Finish();
  if (format == TableWriter::kTable) *ctx.err << "(" << printed << " rows)\n";
  return absl::OkStatus();
}

}  // namespace

Command TableCommand() {
  Command c{"table", "Operate on tables", {}};
  c.actions.push_back({"count",
                       "Print the number of rows of a table",
                       "",
                       {MasterAddressesArg(), TableNameArg()},
                       {"predicates"},
                       CountRows});
  c.actions.push_back(
      {"create",
       "Create a table from a CREATE TABLE spec",
       "Example:\n  basalt table create 127.0.0.1:7051 \"CREATE TABLE t (key INT32, v STRING, "
       "PRIMARY KEY (key)) PARTITION BY HASH (key) PARTITIONS 4 REPLICAS 3\"\n"
       "The grammar is in docs/cli.md.",
       {MasterAddressesArg(), {"spec", "CREATE TABLE spec (quote it)"}},
       {},
       CreateTable});
  c.actions.push_back({"delete",
                       "Delete a table and its data",
                       "",
                       {MasterAddressesArg(), TableNameArg()},
                       {},
                       DeleteTable});
  c.actions.push_back({"describe",
                       "Print a table's schema, partitioning and tablets",
                       "",
                       {MasterAddressesArg(), TableNameArg()},
                       {},
                       DescribeTable});
  c.actions.push_back({"list",
                       "List the tables of a cluster",
                       "",
                       {MasterAddressesArg()},
                       {"list_table_filter", "format"},
                       ListTables});
  c.actions.push_back({"scan",
                       "Print the rows of a table",
                       "Example:\n  basalt table scan 127.0.0.1:7051 t --columns=key,v "
                       "--predicates=\"key >= 5 AND key < 10\" --format=csv",
                       {MasterAddressesArg(), TableNameArg()},
                       {"columns", "predicates", "limit", "format"},
                       ScanTable});
  c.actions.push_back(TableLoadAction());
  c.actions.push_back(TableAlterAction());
  c.actions.push_back(TableCopyAction());
  return c;
}

}  // namespace basalt::tools
