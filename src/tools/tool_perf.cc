// `basalt perf`: the workloads of docs/performance.md, run against a live cluster.
//
//   perf loadgen <masters>          threads inserting generated rows (W1, W2: --flush_mode,
//                                   --flush_every), rows/s and the flush latencies
//   perf lookup <masters> <table>   random point lookups by primary key (W4): ops/s, p50/p99/p999
//   perf scan <masters> <table>     a full scan of --columns, integers summed (W3): rows/s, MB/s;
//                                   with --aggregate, the same computed in the tablet servers
//   perf host                       this machine's wakeups, loopback round trips and disk syncs
//                                   (tools/host_probe.h), no cluster needed
//
// Each prints one human-readable line, or with --format=json one JSON object (bench/perf.py
// collects those for `make perf`), or with --format=csv a header and a row.

#include <gflags/gflags.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/host_probe.h"
#include "tools/latency_stats.h"
#include "tools/output.h"
#include "tools/scan_predicates.h"
#include "tools/tool_common.h"

DEFINE_string(table_name, "",
              "Table loadgen inserts into; empty: a new table loadgen_auto_<random> with a "
              "default schema (key INT64, int_val INT32, string_val STRING).");
DEFINE_int64(num_rows_per_thread, 1000, "Number of rows each loadgen thread inserts.");
DEFINE_int32(num_threads, 2,
             "Number of worker threads: inserting threads of perf loadgen, looking-up threads of "
             "perf lookup, writing threads of table copy.");
DEFINE_int64(key_start, 0,
             "First row index of loadgen (thread t inserts indexes key_start + t * "
             "num_rows_per_thread onwards, so threads' keys are disjoint); the smallest key perf "
             "lookup asks for.");
DEFINE_bool(run_scan, false, "Whether loadgen counts the table's rows afterwards and checks them.");
DEFINE_int32(loadgen_num_replicas, 1,
             "Replicas of the table loadgen creates when --table_name "
             "is empty.");
DEFINE_int32(loadgen_buffer_size_mb, 32, "Mutation buffer of each loadgen thread's session, MiB.");
DEFINE_string(flush_mode, "background",
              "How loadgen's sessions send rows: background (AUTO_FLUSH_BACKGROUND: buffered, "
              "sent as buffers fill), manual (MANUAL_FLUSH: Flush() after every --flush_every "
              "rows, waiting for it) or sync (AUTO_FLUSH_SYNC: every insert waits for its "
              "answer).");
DEFINE_int64(flush_every, 1000,
             "With --flush_mode=manual: rows applied between two Flush() calls.");
DEFINE_int64(num_lookups, 10000, "Number of point lookups perf lookup makes, over all threads.");
DEFINE_int64(key_range, 0,
             "perf lookup asks for keys uniformly in [key_start, key_start + key_range); 0: the "
             "table's row count (counted first), which fits a table filled by loadgen.");
DEFINE_uint64(perf_seed, 0, "Seed of perf lookup's random keys; 0: a random seed (printed).");
DEFINE_int32(scan_tablets_at_once, 0,
             "How many tablets perf scan reads at once (1: one at a time, in partition order); 0: "
             "the client's default (2 for rows, 8 for --aggregate).");
DEFINE_string(aggregate, "",
              "perf scan: instead of fetching the rows, compute this aggregate (count, sum, min, "
              "max, avg) of each of --columns plus COUNT(*) in the tablet servers "
              "(docs/aggregates.md).");
DEFINE_string(probe_dir, ".",
              "perf host: directory whose disk the fdatasync probe writes to (a 1 MiB file, "
              "removed afterwards); point it at the tablet servers' --fs_wal_dir to measure their "
              "disk.");
DEFINE_int32(probe_ms, 500, "perf host: how long each probe runs, in milliseconds.");
DECLARE_string(columns);     // tool_table.cc
DECLARE_string(predicates);  // tool_table.cc

namespace basalt::tools {

namespace {

using client::ColumnSchema;
using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// One workload's figures, printed as --format asks: `human` for table, else one JSON object or
// a CSV header and row of `fields`.
absl::Status PrintResult(const std::string& human,
                         const std::vector<std::pair<std::string, Cell>>& fields,
                         std::ostream* out) {
  BASALT_ASSIGN_OR_RETURN(TableWriter::Format format, OutputFormat());
  if (format == TableWriter::kTable) {
    *out << human;
    return absl::OkStatus();
  }
  if (format == TableWriter::kJson) {
    // One object, not TableWriter's array: a driver reads one line per workload.
    *out << "{";
    for (size_t i = 0; i < fields.size(); ++i) {
      const Cell& c = fields[i].second;
      *out << (i > 0 ? ", " : "") << JsonQuote(fields[i].first) << ": "
           << (c.kind == Cell::kString ? JsonQuote(c.text)
               : c.kind == Cell::kNull ? std::string("null")
                                       : c.text);
    }
    *out << "}\n";
    return absl::OkStatus();
  }
  std::vector<std::string> headers;
  std::vector<Cell> row;
  for (const auto& [name, cell] : fields) {
    headers.push_back(name);
    row.push_back(cell);
  }
  TableWriter w(format, headers, out);
  w.AddRow(row);
  w.Finish();
  return absl::OkStatus();
}

Cell Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return Cell::Number(buf);
}
Cell Int(int64_t v) { return Cell::Number(std::to_string(v)); }

struct WorkersResult {
  double seconds = 0;
  LatencyStats latencies;  // Every thread's, merged.
};

// Runs `work(t, &latencies of t)` on threads t = 0..n-1 and waits for them: the first error, or
// the wall time and the merged latencies.
absl::StatusOr<WorkersResult> RunWorkers(
    int n, const std::function<absl::Status(int, LatencyStats*)>& work) {
  std::vector<absl::Status> results(n);
  std::vector<LatencyStats> latencies(n);
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] { results[t] = work(t, &latencies[t]); });
  }
  for (auto& th : threads) th.join();
  WorkersResult r;
  r.seconds = MillisSince(start) / 1000;
  for (const auto& s : results) BASALT_RETURN_IF_ERROR(s);
  for (const LatencyStats& l : latencies) r.latencies.Merge(l);
  return r;
}

// ---- loadgen ----

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

absl::StatusOr<client::Session::FlushMode> LoadgenFlushMode() {
  if (FLAGS_flush_mode == "background") return client::Session::AUTO_FLUSH_BACKGROUND;
  if (FLAGS_flush_mode == "manual") return client::Session::MANUAL_FLUSH;
  if (FLAGS_flush_mode == "sync") return client::Session::AUTO_FLUSH_SYNC;
  return absl::InvalidArgumentError(
      StrCat("--flush_mode: '", FLAGS_flush_mode, "' is not one of background, manual, sync"));
}

// The session's failed rows as one error (their count and the first one), or OK.
absl::Status PendingErrors(client::Session* session) {
  auto errors = session->GetPendingErrors();
  if (errors.empty()) return absl::OkStatus();
  return absl::Status(
      errors[0]->status().code(),
      StrCat(errors.size(), " insert(s) failed; first: ", errors[0]->status().message()));
}

// Inserts rows [first, first + count) through one session. `latencies` gets the time of every
// call that waits for the cluster: each Flush() (manual) or each Apply() (sync).
absl::Status InsertRows(std::shared_ptr<client::Client> client,
                        std::shared_ptr<client::Table> table, client::Session::FlushMode mode,
                        int64_t first, int64_t count, LatencyStats* latencies) {
  auto session = client->NewSession();
  BASALT_RETURN_IF_ERROR(session->SetFlushMode(mode));
  BASALT_RETURN_IF_ERROR(
      session->SetMutationBufferSpace(static_cast<size_t>(FLAGS_loadgen_buffer_size_mb) << 20));
  session->SetTimeoutMillis(static_cast<int>(OperationTimeout().count()));
  const client::Schema& schema = table->schema();
  std::vector<ColumnSchema> cols;
  for (int c = 0; c < schema.num_columns(); ++c) cols.push_back(schema.Column(c));
  int64_t unflushed = 0;
  absl::Status flushed;
  for (int64_t i = first; i < first + count; ++i) {
    auto op = table->NewInsert();
    for (int c = 0; c < static_cast<int>(cols.size()); ++c) {
      BASALT_RETURN_IF_ERROR(SetGenerated(op->mutable_row(), cols[c], c, i));
    }
    // Only a synchronous Apply is timed: a clock read per row is 2% of W2's machine here.
    const bool timed = mode == client::Session::AUTO_FLUSH_SYNC;
    const Clock::time_point start = timed ? Clock::now() : Clock::time_point();
    const absl::Status applied = session->Apply(std::move(op));
    if (timed) latencies->Add(MillisSince(start));
    // In sync mode a failed row is also the Apply's error; the error collector has it too
    // (PendingErrors below), so the run goes on as in the other modes.
    if (!applied.ok() && mode != client::Session::AUTO_FLUSH_SYNC) return applied;
    if (mode == client::Session::MANUAL_FLUSH && ++unflushed >= FLAGS_flush_every) {
      const Clock::time_point flush_start = Clock::now();
      const absl::Status s = session->Flush();
      latencies->Add(MillisSince(flush_start));
      if (flushed.ok()) flushed = s;
      unflushed = 0;
    }
  }
  if (unflushed > 0 || mode == client::Session::AUTO_FLUSH_BACKGROUND) {
    const Clock::time_point flush_start = Clock::now();
    const absl::Status s = session->Flush();
    if (mode == client::Session::MANUAL_FLUSH) latencies->Add(MillisSince(flush_start));
    if (flushed.ok()) flushed = s;
  }
  BASALT_RETURN_IF_ERROR(PendingErrors(session.get()));
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
  if (FLAGS_flush_every < 1) return absl::InvalidArgumentError("--flush_every must be >= 1");
  BASALT_ASSIGN_OR_RETURN(const client::Session::FlushMode mode, LoadgenFlushMode());
  BASALT_ASSIGN_OR_RETURN(const TableWriter::Format format, OutputFormat());
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  std::string name = FLAGS_table_name;
  if (name.empty()) {
    BASALT_ASSIGN_OR_RETURN(name, CreateDefaultTable(client.get()));
    // Machine-readable output keeps stdout to the result.
    *(format == TableWriter::kTable ? ctx.out : ctx.err) << "Created table " << name << "\n";
  }
  std::shared_ptr<client::Table> table;
  BASALT_RETURN_IF_ERROR(client->OpenTable(name, &table));
  BASALT_ASSIGN_OR_RETURN(
      WorkersResult run, RunWorkers(FLAGS_num_threads, [&](int t, LatencyStats* latencies) {
        return InsertRows(client, table, mode, FLAGS_key_start + t * FLAGS_num_rows_per_thread,
                          FLAGS_num_rows_per_thread, latencies);
      }));
  const double secs = run.seconds;
  LatencyStats& lat = run.latencies;
  const int64_t total = FLAGS_num_rows_per_thread * FLAGS_num_threads;
  const double rate = secs > 0 ? total / secs : 0.0;
  char line[256];
  std::snprintf(line, sizeof(line), "Inserted %lld rows in %.3f s (%.0f rows/s) into %s\n",
                static_cast<long long>(total), secs, rate, name.c_str());
  std::string human = line;
  if (lat.count() > 0) {
    std::snprintf(line, sizeof(line),
                  "%s: %lld calls waited, p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                  mode == client::Session::MANUAL_FLUSH ? "Flush" : "Apply",
                  static_cast<long long>(lat.count()), lat.Percentile(0.5), lat.Percentile(0.99),
                  lat.Percentile(1.0));
    human += line;
  }
  std::vector<std::pair<std::string, Cell>> fields = {
      {"workload", Cell::String("loadgen")},
      {"table", Cell::String(name)},
      {"flush_mode", Cell::String(FLAGS_flush_mode)},
      {"threads", Int(FLAGS_num_threads)},
      {"rows", Int(total)},
      {"seconds", Num(secs)},
      {"rows_per_sec", Num(rate)},
      {"waits", Int(lat.count())},
      {"wait_p50_ms", Num(lat.Percentile(0.5))},
      {"wait_p99_ms", Num(lat.Percentile(0.99))},
      {"wait_max_ms", Num(lat.Percentile(1.0))}};
  if (FLAGS_run_scan) {
    BASALT_ASSIGN_OR_RETURN(int64_t n, CountAll(table.get()));
    human += StrCat("Scan counted ", n, " rows\n");
    fields.push_back({"scan_counted", Int(n)});
    if (n < total) {
      BASALT_RETURN_IF_ERROR(PrintResult(human, fields, ctx.out));
      return absl::DataLossError(
          StrCat("the table has ", n, " rows, fewer than the ", total, " inserted"));
    }
  }
  return PrintResult(human, fields, ctx.out);
}

// ---- lookup ----

absl::Status Lookup(const ActionContext& ctx) {
  if (FLAGS_num_threads < 1 || FLAGS_num_lookups < 1 || FLAGS_key_range < 0) {
    return absl::InvalidArgumentError(
        "--num_threads and --num_lookups must be >= 1, --key_range >= 0");
  }
  BASALT_RETURN_IF_ERROR(OutputFormat().status());
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  std::shared_ptr<client::Table> table;
  BASALT_RETURN_IF_ERROR(client->OpenTable(ctx.args[1], &table));
  const client::Schema& schema = table->schema();
  if (schema.num_key_columns() != 1) {
    return absl::InvalidArgumentError(
        StrCat("perf lookup needs a table whose primary key is one integer column; ", ctx.args[1],
               " has ", schema.num_key_columns(), " key columns"));
  }
  const ColumnSchema key = schema.Column(0);
  if (key.type() != ColumnSchema::INT8 && key.type() != ColumnSchema::INT16 &&
      key.type() != ColumnSchema::INT32 && key.type() != ColumnSchema::INT64) {
    return absl::InvalidArgumentError(
        StrCat("perf lookup needs an integer primary key; ", key.name(), " is not one"));
  }
  int64_t range = FLAGS_key_range;
  if (range == 0) {
    BASALT_ASSIGN_OR_RETURN(range, CountAll(table.get()));
    if (range == 0) return absl::FailedPreconditionError(StrCat(ctx.args[1], " has no rows"));
  }
  uint64_t seed = FLAGS_perf_seed;
  if (seed == 0) seed = (uint64_t{std::random_device()()} << 32) | std::random_device()();
  *ctx.err << "perf lookup: keys in [" << FLAGS_key_start << ", " << FLAGS_key_start + range
           << "), --perf_seed=" << seed << "\n";

  std::atomic<int64_t> next{0};
  std::atomic<int64_t> found{0};
  BASALT_ASSIGN_OR_RETURN(
      WorkersResult run,
      RunWorkers(FLAGS_num_threads, [&](int t, LatencyStats* latencies) -> absl::Status {
        std::mt19937_64 rng(seed + t);
        std::uniform_int_distribution<int64_t> dist(FLAGS_key_start, FLAGS_key_start + range - 1);
        client::ScanBatch batch;
        while (next.fetch_add(1) < FLAGS_num_lookups) {
          const int64_t k = dist(rng);
          const Clock::time_point op_start = Clock::now();
          client::Scanner scanner(table.get());
          absl::Status s = scanner.AddConjunctPredicate(table->NewComparisonPredicate(
              key.name(), client::Predicate::EQUAL, client::Value::FromInt(k)));
          if (s.ok()) s = scanner.Open();
          int64_t rows = 0;
          while (s.ok() && scanner.HasMoreRows()) {
            s = scanner.NextBatch(&batch);
            rows += batch.NumRows();
          }
          if (!s.ok()) return PrependToStatus(s, StrCat("looking up key ", k));
          latencies->Add(MillisSince(op_start));
          found += rows;
        }
        return absl::OkStatus();
      }));
  const double secs = run.seconds;
  LatencyStats& lat = run.latencies;
  const double rate = secs > 0 ? lat.count() / secs : 0.0;
  char line[256];
  std::snprintf(line, sizeof(line),
                "Looked up %lld keys (%lld found) in %.3f s with %d threads: %.0f lookups/s, p50 "
                "%.3f ms, p99 %.3f ms, p999 %.3f ms\n",
                static_cast<long long>(lat.count()), static_cast<long long>(found.load()), secs,
                FLAGS_num_threads, rate, lat.Percentile(0.5), lat.Percentile(0.99),
                lat.Percentile(0.999));
  return PrintResult(line,
                     {{"workload", Cell::String("lookup")},
                      {"table", Cell::String(ctx.args[1])},
                      {"threads", Int(FLAGS_num_threads)},
                      {"lookups", Int(lat.count())},
                      {"found", Int(found.load())},
                      {"seconds", Num(secs)},
                      {"lookups_per_sec", Num(rate)},
                      {"p50_ms", Num(lat.Percentile(0.5))},
                      {"p99_ms", Num(lat.Percentile(0.99))},
                      {"p999_ms", Num(lat.Percentile(0.999))}},
                     ctx.out);
}

// ---- scan ----

// Bytes of column `view` over `rows` rows as the client received them: cells (or string bytes
// and offsets) and the NULL bitmap.
int64_t ColumnBytes(const client::ScanBatch::ColumnView& view, int64_t rows) {
  int64_t bytes = view.null_bitmap != nullptr ? (rows + 7) / 8 : 0;
  if (view.cell_size > 0) return bytes + rows * static_cast<int64_t>(view.cell_size);
  return bytes + (rows + 1) * 4 + (rows > 0 ? view.offsets[rows] - view.offsets[0] : 0);
}

// Adds the non-NULL integer cells of `view` to *sum (wrapping: the sum only proves every cell
// was read).
template <typename T>
void SumCells(const client::ScanBatch::ColumnView& view, int64_t rows, uint64_t* sum) {
  const T* cells = static_cast<const T*>(view.data);
  uint64_t s = 0;
  if (view.null_bitmap == nullptr) {
    for (int64_t r = 0; r < rows; ++r) s += static_cast<uint64_t>(static_cast<int64_t>(cells[r]));
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      if (!view.IsNull(r)) s += static_cast<uint64_t>(static_cast<int64_t>(cells[r]));
    }
  }
  *sum += s;
}

absl::StatusOr<client::Scanner::AggregateFunction> AggregateFlag() {
  const std::string f = absl::AsciiStrToLower(FLAGS_aggregate);
  if (f == "count") return client::Scanner::COUNT;
  if (f == "sum") return client::Scanner::SUM;
  if (f == "min") return client::Scanner::MIN;
  if (f == "max") return client::Scanner::MAX;
  if (f == "avg") return client::Scanner::AVG;
  return absl::InvalidArgumentError(
      StrCat("--aggregate: unknown function '", FLAGS_aggregate, "' (count, sum, min, max, avg)"));
}

// perf scan --aggregate: COUNT(*) and the function of each column, computed by the servers.
absl::Status ScanAggregate(const ActionContext& ctx, client::Table* table) {
  BASALT_ASSIGN_OR_RETURN(client::Scanner::AggregateFunction f, AggregateFlag());
  const std::vector<std::string> columns = absl::StrSplit(FLAGS_columns, ',', absl::SkipEmpty());
  if (columns.empty()) return absl::InvalidArgumentError("--aggregate needs --columns");
  client::Scanner scanner(table);
  BASALT_RETURN_IF_ERROR(scanner.AddAggregate(client::Scanner::COUNT_ALL, ""));
  for (const std::string& c : columns) BASALT_RETURN_IF_ERROR(scanner.AddAggregate(f, c));
  if (!FLAGS_predicates.empty()) {
    BASALT_RETURN_IF_ERROR(AddScanPredicates(FLAGS_predicates, table, &scanner));
  }
  BASALT_RETURN_IF_ERROR(scanner.SetTimeoutMillis(static_cast<int>(OperationTimeout().count())));
  if (FLAGS_scan_tablets_at_once > 0) {
    BASALT_RETURN_IF_ERROR(scanner.SetMaxConcurrentTablets(FLAGS_scan_tablets_at_once));
  }
  const Clock::time_point start = Clock::now();
  BASALT_RETURN_IF_ERROR(scanner.Open());
  client::ScanBatch batch;
  int64_t rows = 0;
  std::string results;
  while (scanner.HasMoreRows()) {
    BASALT_RETURN_IF_ERROR(scanner.NextBatch(&batch));
    if (batch.NumRows() == 0) continue;
    BASALT_RETURN_IF_ERROR(batch.Row(0).GetInt64(0, &rows));
    results = batch.Row(0).ToString();
  }
  const double secs = MillisSince(start) / 1000;
  const double rate = secs > 0 ? rows / secs : 0.0;
  char line[512];
  std::snprintf(line, sizeof(line),
                "Aggregated %lld rows of %s in the tablet servers in %.3f s: %.0f rows/s; %s\n",
                static_cast<long long>(rows), FLAGS_columns.c_str(), secs, rate, results.c_str());
  return PrintResult(line,
                     {{"workload", Cell::String("scan_aggregate")},
                      {"table", Cell::String(ctx.args[1])},
                      {"columns", Cell::String(FLAGS_columns)},
                      {"aggregate", Cell::String(FLAGS_aggregate)},
                      {"rows", Int(rows)},
                      {"seconds", Num(secs)},
                      {"rows_per_sec", Num(rate)},
                      {"result", Cell::String(results)}},
                     ctx.out);
}

absl::Status Scan(const ActionContext& ctx) {
  BASALT_RETURN_IF_ERROR(OutputFormat().status());
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  std::shared_ptr<client::Table> table;
  BASALT_RETURN_IF_ERROR(client->OpenTable(ctx.args[1], &table));
  if (!FLAGS_aggregate.empty()) return ScanAggregate(ctx, table.get());
  client::Scanner scanner(table.get());
  if (!FLAGS_columns.empty()) {
    BASALT_RETURN_IF_ERROR(
        scanner.SetProjectedColumnNames(absl::StrSplit(FLAGS_columns, ',', absl::SkipEmpty())));
  }
  if (!FLAGS_predicates.empty()) {
    BASALT_RETURN_IF_ERROR(AddScanPredicates(FLAGS_predicates, table.get(), &scanner));
  }
  BASALT_RETURN_IF_ERROR(scanner.SetTimeoutMillis(static_cast<int>(OperationTimeout().count())));
  if (FLAGS_scan_tablets_at_once > 0) {
    BASALT_RETURN_IF_ERROR(scanner.SetMaxConcurrentTablets(FLAGS_scan_tablets_at_once));
  }
  const Clock::time_point start = Clock::now();
  BASALT_RETURN_IF_ERROR(scanner.Open());
  int64_t rows = 0;
  int64_t bytes = 0;
  uint64_t sum = 0;
  client::ScanBatch batch;
  while (scanner.HasMoreRows()) {
    BASALT_RETURN_IF_ERROR(scanner.NextBatch(&batch));
    const int64_t n = batch.NumRows();
    const client::Schema& proj = batch.projection_schema();
    for (int c = 0; c < proj.num_columns(); ++c) {
      const client::ScanBatch::ColumnView view = batch.Column(c);
      bytes += ColumnBytes(view, n);
      switch (view.type) {
        case ColumnSchema::INT8:
          SumCells<int8_t>(view, n, &sum);
          break;
        case ColumnSchema::INT16:
          SumCells<int16_t>(view, n, &sum);
          break;
        case ColumnSchema::INT32:
          SumCells<int32_t>(view, n, &sum);
          break;
        case ColumnSchema::INT64:
          SumCells<int64_t>(view, n, &sum);
          break;
        default:
          break;
      }
    }
    rows += n;
  }
  const double secs = MillisSince(start) / 1000;
  scanner.Close();
  const double rate = secs > 0 ? rows / secs : 0.0;
  const double mb_rate = secs > 0 ? bytes / 1e6 / secs : 0.0;
  const std::string columns = FLAGS_columns.empty() ? "*" : FLAGS_columns;
  char line[256];
  std::snprintf(line, sizeof(line),
                "Scanned %lld rows (%.1f MB) of %s in %.3f s: %.0f rows/s, %.1f MB/s; integer "
                "sum %lld\n",
                static_cast<long long>(rows), bytes / 1e6, columns.c_str(), secs, rate, mb_rate,
                static_cast<long long>(sum));
  return PrintResult(line,
                     {{"workload", Cell::String("scan")},
                      {"table", Cell::String(ctx.args[1])},
                      {"columns", Cell::String(columns)},
                      {"rows", Int(rows)},
                      {"bytes", Int(bytes)},
                      {"seconds", Num(secs)},
                      {"rows_per_sec", Num(rate)},
                      {"mb_per_sec", Num(mb_rate)},
                      {"integer_sum", Int(static_cast<int64_t>(sum))}},
                     ctx.out);
}

absl::Status Host(const ActionContext& ctx) {
  if (FLAGS_probe_ms <= 0) return absl::InvalidArgumentError("--probe_ms must be positive");
  BASALT_ASSIGN_OR_RETURN(HostProbeResult r,
                          ProbeHost(FLAGS_probe_dir, absl::Milliseconds(FLAGS_probe_ms)));
  char line[512];
  std::snprintf(line, sizeof(line),
                "system call %.2f us; thread round trip %.1f us; loopback round trips %.0f /s "
                "(reader sleeping), %.0f /s (reader polling); 4 KiB pwrite + fdatasync in %s: "
                "p50 %.0f us, %.0f /s\n",
                r.syscall_us, r.thread_round_trip_us, r.loopback_round_trips_per_sec_blocking,
                r.loopback_round_trips_per_sec_polling, FLAGS_probe_dir.c_str(), r.fdatasync_p50_us,
                r.fdatasyncs_per_sec);
  return PrintResult(
      line,
      {{"workload", Cell::String("host")},
       {"syscall_us", Num(r.syscall_us)},
       {"thread_round_trip_us", Num(r.thread_round_trip_us)},
       {"loopback_round_trips_per_sec", Num(r.loopback_round_trips_per_sec_blocking)},
       {"loopback_round_trips_per_sec_polling", Num(r.loopback_round_trips_per_sec_polling)},
       {"fdatasync_p50_us", Num(r.fdatasync_p50_us)},
       {"fdatasyncs_per_sec", Num(r.fdatasyncs_per_sec)}},
      ctx.out);
}

}  // namespace

Command PerfCommand() {
  Command c{"perf", "Measure the performance of a cluster", {}};
  c.actions.push_back(
      {"loadgen",
       "Insert generated rows from several threads and print the rate",
       "Every column of the table gets a value generated from the row index (keys are "
       "sequential and disjoint between threads). Prints rows total, time total and rows/s; with "
       "--flush_mode=manual or sync also the latencies of the calls that waited (each Flush, "
       "each Apply).",
       {MasterAddressesArg()},
       {"table_name", "num_rows_per_thread", "num_threads", "key_start", "run_scan",
        "loadgen_num_replicas", "loadgen_buffer_size_mb", "flush_mode", "flush_every", "format"},
       LoadGen});
  c.actions.push_back(
      {"lookup",
       "Look up random rows by primary key from several threads and print the rate and latencies",
       "Each lookup asks for one key, uniform in [--key_start, --key_start + --key_range), with an "
       "equality predicate on the key column and reads the row (every column). The table's key "
       "must be one integer column. Prints lookups/s and the p50, p99 and p999 latencies; keys "
       "not found are counted, not errors.",
       {MasterAddressesArg(), TableNameArg()},
       {"num_lookups", "num_threads", "key_start", "key_range", "perf_seed", "format"},
       Lookup});
  c.actions.push_back(
      {"scan",
       "Scan a table and print rows/s and MB/s",
       "Reads every row of --columns (default: all) that --predicates admits, summing the "
       "integer cells so that every value is touched. MB are the bytes of the cells as the "
       "client received them. With --aggregate, the tablet servers compute COUNT(*) and the "
       "function of each column instead, and only the result crosses the network.",
       {MasterAddressesArg(), TableNameArg()},
       {"columns", "predicates", "scan_tablets_at_once", "aggregate", "format"},
       Scan});
  c.actions.push_back(
      {"host",
       "Measure this machine's wakeups, loopback round trips and disk syncs",
       "Without a cluster: a system call, a round trip between two threads, 16-byte round trips "
       "over loopback TCP with the reader sleeping in recv and polling, and 4 KiB writes each "
       "followed by fdatasync in --probe_dir, each for --probe_ms. These are what a write's or a "
       "lookup's latency is made of; `make perf` records them before and after its workloads so "
       "that runs on a host whose speed varies can be compared (docs/performance.md).",
       {},
       {"probe_dir", "probe_ms", "format"},
       Host});
  return c;
}

}  // namespace basalt::tools
