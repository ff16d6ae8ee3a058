// `basalt perf loadgen`: threads inserting generated rows into a new or existing table.

#include <gflags/gflags.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <random>
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/tool_common.h"

DEFINE_string(table_name, "",
              "Table loadgen inserts into; empty: a new table loadgen_auto_<random> with a "
              "default schema (key INT64, int_val INT32, string_val STRING).");
DEFINE_int64(num_rows_per_thread, 1000, "Number of rows each loadgen thread inserts.");
DEFINE_int32(num_threads, 2,
             "Number of worker threads: inserting threads of perf loadgen, writing threads of "
             "table copy.");
DEFINE_int64(key_start, 0,
             "First row index of loadgen; thread t inserts indexes key_start + t * "
             "num_rows_per_thread onwards, so threads' keys are disjoint.");
DEFINE_bool(run_scan, false, "Whether loadgen counts the table's rows afterwards and checks them.");
DEFINE_int32(loadgen_num_replicas, 1,
             "Replicas of the table loadgen creates when --table_name "
             "is empty.");
DEFINE_int32(loadgen_buffer_size_mb, 32, "Mutation buffer of each loadgen thread's session, MiB.");

namespace basalt::tools {

namespace {

using client::ColumnSchema;

// Sets column `idx` of `row` to the generated value for row index `i`.
absl::Status SetGenerated(client::PartialRow* row, const ColumnSchema& col, int idx, int64_t i) {
  switch (col.type()) {
    case ColumnSchema::BOOL:
      return row->SetBool(idx, i % 2 == 0);
    case ColumnSchema::INT8:
      return row->SetInt8(idx, static_cast<int8_t>(i));
    case ColumnSchema::INT16:
      return row->SetInt16(idx, static_cast<int16_t>(i));
    case ColumnSchema::INT32:
      return row->SetInt32(idx, static_cast<int32_t>(i));
    case ColumnSchema::INT64:
      return row->SetInt64(idx, i);
    case ColumnSchema::FLOAT:
      return row->SetFloat(idx, static_cast<float>(i) * 0.5f);
    case ColumnSchema::DOUBLE:
      return row->SetDouble(idx, static_cast<double>(i) * 0.25);
    case ColumnSchema::UNIXTIME_MICROS:
      return row->SetUnixTimeMicros(idx, i * 1000);
    case ColumnSchema::DATE:
      return row->SetDate(idx, static_cast<int32_t>(i % 100000));
    case ColumnSchema::DECIMAL: {
      int64_t max = 1;
      for (int d = 0; d < std::min(col.precision(), 18); ++d) max *= 10;
      return row->SetUnscaledDecimal(idx, i % max);
    }
    case ColumnSchema::STRING:
    case ColumnSchema::BINARY:
    case ColumnSchema::VARCHAR: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%020lld", static_cast<long long>(i));
      std::string_view s(buf);
      if (col.type() == ColumnSchema::VARCHAR && col.length() < static_cast<int>(s.size())) {
        s = s.substr(s.size() - col.length());
      }
      return col.type() == ColumnSchema::BINARY ? row->SetBinary(idx, s) : row->SetString(idx, s);
    }
  }
  return absl::InternalError("unknown column type");
}

absl::Status InsertRows(std::shared_ptr<client::Client> client,
                        std::shared_ptr<client::Table> table, int64_t first, int64_t count) {
  auto session = client->NewSession();
  BASALT_RETURN_IF_ERROR(session->SetFlushMode(client::Session::AUTO_FLUSH_BACKGROUND));
  BASALT_RETURN_IF_ERROR(
      session->SetMutationBufferSpace(static_cast<size_t>(FLAGS_loadgen_buffer_size_mb) << 20));
  const client::Schema& schema = table->schema();
  std::vector<ColumnSchema> cols;
  for (int c = 0; c < schema.num_columns(); ++c) cols.push_back(schema.Column(c));
  for (int64_t i = first; i < first + count; ++i) {
    auto op = table->NewInsert();
    for (int c = 0; c < static_cast<int>(cols.size()); ++c) {
      BASALT_RETURN_IF_ERROR(SetGenerated(op->mutable_row(), cols[c], c, i));
    }
    BASALT_RETURN_IF_ERROR(session->Apply(std::move(op)));
  }
  const absl::Status flushed = session->Flush();
  auto errors = session->GetPendingErrors();
  if (!errors.empty()) {
    return absl::Status(
        errors[0]->status().code(),
        StrCat(errors.size(), " insert(s) failed; first: ", errors[0]->status().message()));
  }
  BASALT_RETURN_IF_ERROR(flushed);
  return session->Close();
}

absl::StatusOr<std::string> CreateDefaultTable(client::Client* client) {
  std::random_device rd;
  const std::string name = StrCat("loadgen_auto_", rd() % 1000000000);
  client::SchemaBuilder b;
  b.AddColumn("key")->Type(ColumnSchema::INT64)->NotNull()->PrimaryKey();
  b.AddColumn("int_val")->Type(ColumnSchema::INT32)->Nullable();
  b.AddColumn("string_val")->Type(ColumnSchema::STRING)->Nullable();
  client::Schema schema;
  BASALT_RETURN_IF_ERROR(b.Build(&schema));
  auto creator = client->NewTableCreator();
  BASALT_RETURN_IF_ERROR(creator->table_name(name)
                             .schema(&schema)
                             .add_hash_partitions({"key"}, 4)
                             .set_range_partition_columns({})
                             .num_replicas(FLAGS_loadgen_num_replicas)
                             .Create());
  return name;
}

absl::StatusOr<int64_t> CountAll(client::Table* table) {
  client::Scanner scanner(table);
  BASALT_RETURN_IF_ERROR(scanner.SetProjectedColumnIndexes({}));
  BASALT_RETURN_IF_ERROR(scanner.SetFaultTolerant());
  BASALT_RETURN_IF_ERROR(scanner.Open());
  int64_t n = 0;
  client::ScanBatch batch;
  while (scanner.HasMoreRows()) {
    BASALT_RETURN_IF_ERROR(scanner.NextBatch(&batch));
    n += batch.NumRows();
  }
  return n;
}

absl::Status LoadGen(const ActionContext& ctx) {
  if (FLAGS_num_threads < 1 || FLAGS_num_rows_per_thread < 0) {
    return absl::InvalidArgumentError("--num_threads must be >= 1, --num_rows_per_thread >= 0");
  }
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  std::string name = FLAGS_table_name;
  if (name.empty()) {
    BASALT_ASSIGN_OR_RETURN(name, CreateDefaultTable(client.get()));
    *ctx.out << "Created table " << name << "\n";
  }
  std::shared_ptr<client::Table> table;
  BASALT_RETURN_IF_ERROR(client->OpenTable(name, &table));
  std::vector<absl::Status> results(FLAGS_num_threads);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < FLAGS_num_threads; ++t) {
    threads.emplace_back([&, t] {
      results[t] = InsertRows(client, table, FLAGS_key_start + t * FLAGS_num_rows_per_thread,
                              FLAGS_num_rows_per_thread);
    });
  }
  for (auto& th : threads) th.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& s : results) BASALT_RETURN_IF_ERROR(s);
  const int64_t total = FLAGS_num_rows_per_thread * FLAGS_num_threads;
  char line[160];
  std::snprintf(line, sizeof(line), "Inserted %lld rows in %.3f s (%.0f rows/s) into %s\n",
                static_cast<long long>(total), secs, secs > 0 ? total / secs : 0.0, name.c_str());
  *ctx.out << line;
  if (FLAGS_run_scan) {
    BASALT_ASSIGN_OR_RETURN(int64_t n, CountAll(table.get()));
    *ctx.out << "Scan counted " << n << " rows\n";
    if (n < total) {
      return absl::DataLossError(
          StrCat("the table has ", n, " rows, fewer than the ", total, " inserted"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Command PerfCommand() {
  Command c{"perf", "Measure the performance of a cluster", {}};
  c.actions.push_back(
      {"loadgen",
       "Insert generated rows from several threads and print the rate",
       "Every column of the table gets a value generated from the row index (keys are "
       "sequential and disjoint between threads). Prints rows total, time total and rows/s.",
       {MasterAddressesArg()},
       {"table_name", "num_rows_per_thread", "num_threads", "key_start", "run_scan",
        "loadgen_num_replicas", "loadgen_buffer_size_mb"},
       LoadGen});
  return c;
}

}  // namespace basalt::tools
