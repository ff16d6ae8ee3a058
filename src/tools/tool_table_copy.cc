// `basalt table copy <src_master_addresses> <table> <dst_master_addresses>` (docs/cli.md): copies
// the rows of a table (those matching --predicates) into a table of the same or another cluster,
// which it first creates like the source unless --create_table=false.
//
// One fault-tolerant scanner reads the source at a snapshot; --num_threads writer threads, each
// with its own AUTO_FLUSH_BACKGROUND session, turn the scanned batches into write operations. The
// client has no per-tablet scan (scan tokens) yet, so the parallelism is on the writing side,
// which is where a copy spends its time.

#include <gflags/gflags.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/key_encoder.h"
#include "common/partial_row.h"
#include "common/partition.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/types.h"
#include "proto/common.pb.h"
#include "proto/master.pb.h"
#include "tools/bulk_write.h"
#include "tools/master_rpc.h"
#include "tools/scan_predicates.h"
#include "tools/table_spec.h"
#include "tools/tool_common.h"

DEFINE_string(dst_table, "", "Name of the table table copy writes to; empty: the source's name.");
DEFINE_bool(create_table, true,
            "Whether table copy creates the destination table with the source's schema, "
            "partitioning and replica count (it must not exist yet); false: the destination "
            "exists and its columns are matched to the source's by name.");
DEFINE_string(write_type, "insert",
              "How table copy writes rows: insert (a row whose key exists fails), insert_ignore "
              "(such rows are skipped) or upsert (they are overwritten).");
DECLARE_string(predicates);
DECLARE_int32(num_threads);

namespace basalt::tools {

namespace {

using client::ColumnSchema;
using client::ScanBatch;

constexpr int kMaxErrorExamples = 5;
// How many scanned batches may wait for a writer, per writer thread.
constexpr size_t kQueuedBatchesPerThread = 2;

// ---- Creating the destination like the source

// The range key `key` decoded into a row that sets the range columns it encodes (all of them, or a
// prefix for a prefix key), as an inclusive lower or exclusive upper bound of the same rows.
// The master stores exclusive lower and inclusive upper bounds as key successors, which may end
// inside a fixed-width cell (the successor of 0x800000FF is 0x800001): such a cell is padded with
// zero bytes, the smallest full key above, which bounds the same rows. FAILED_PRECONDITION when
// the key does not decode even so (e.g. the successor of a string that is not the last column).
absl::StatusOr<PartialRow> RangeKeyRow(const basalt::Schema& schema,
                                       const std::vector<int>& range_columns,
                                       std::string_view key) {
  PartialRow row(&schema);
  const std::string_view whole = key;
  std::string padded;
  bool decoded = true;
  for (size_t i = 0; decoded && i < range_columns.size() && !key.empty(); ++i) {
    const int idx = range_columns[i];
    const TypeInfo& type = GetTypeInfo(schema.column(idx).type());
    if (!type.is_variable_length() && key.size() < type.size()) {
      padded = StrCat(key, std::string(type.size() - key.size(), '\0'));
      key = padded;
    }
    auto datum = DecodeKeyCell(type.type(), i + 1 == range_columns.size(), &key);
    decoded = datum.ok() && row.Set(idx, *datum).ok();
  }
  if (!decoded || !key.empty()) {
    return absl::FailedPreconditionError(
        StrCat("a range partition bound of the source (encoded key 0x",
               absl::BytesToHexString(ToAbsl(whole)),
               ") cannot be written as a row; create the destination table yourself and use "
               "--create_table=false"));
  }
  return row;
}

// Appends the table's range partitions, as they are now (one per distinct range-key interval of
// its tablets), to `bounds` as lower/upper bound pairs. Nothing for a single unbounded range.
absl::Status AddRangeBounds(const std::string& masters, const std::string& table,
                            const basalt::Schema& schema, const PartitionSchema& ps,
                            pb::RowOperationsPB* bounds) {
  pb::GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_name(table);
  req.set_max_returned_locations(100000);
  pb::GetTableLocationsResponsePB resp;
  BASALT_RETURN_IF_ERROR(
      CallMaster(masters, &pb::MasterService::Stub::GetTableLocations, req, &resp));
  std::set<std::pair<std::string, std::string>> ranges;
  for (const auto& t : resp.tablet_locations()) {
    BASALT_ASSIGN_OR_RETURN(Partition p, Partition::FromPB(t.partition()));
    ranges.emplace(p.range_key_start(), p.range_key_end());
  }
  if (ranges.size() == 1 && ranges.begin()->first.empty() && ranges.begin()->second.empty()) {
    return absl::OkStatus();
  }
  RowOperationsEncoder encoder(bounds);
  for (const auto& [lower, upper] : ranges) {
    BASALT_ASSIGN_OR_RETURN(PartialRow l, RangeKeyRow(schema, ps.range_column_indexes(), lower));
    BASALT_ASSIGN_OR_RETURN(PartialRow u, RangeKeyRow(schema, ps.range_column_indexes(), upper));
    encoder.Add(RowOperationType::kRangeLowerBound, l);
    encoder.Add(RowOperationType::kRangeUpperBound, u);
  }
  return absl::OkStatus();
}

// `ps` with its columns named rather than numbered (the new table's column ids are the master's
// choice).
void NamedPartitionSchema(const basalt::Schema& schema, const PartitionSchema& ps,
                          pb::PartitionSchemaPB* out) {
  for (const PartitionSchema::HashLevel& level : ps.hash_levels()) {
    auto* h = out->add_hash_schema();
    for (int idx : level.column_indexes) h->add_columns()->set_name(schema.column(idx).name());
    h->set_num_buckets(level.num_buckets);
    h->set_seed(level.seed);
  }
  auto* range = out->mutable_range_schema();  // Present, even if empty: no default range.
  for (int idx : ps.range_column_indexes()) {
    range->add_columns()->set_name(schema.column(idx).name());
  }
}

// The CreateTable request for a table `new_name` like `table` of `masters`: the same schema, hash
// levels, range partitions and replica count.
absl::StatusOr<pb::CreateTableRequestPB> CreateRequestLike(const std::string& masters,
                                                           const std::string& table,
                                                           const std::string& new_name) {
  BASALT_ASSIGN_OR_RETURN(MasterTableSchema t, GetMasterTableSchema(masters, table));
  const basalt::Schema& schema = t.schema;
  const PartitionSchema& ps = t.partition_schema;
  pb::CreateTableRequestPB create;
  create.set_name(new_name);
  *create.mutable_schema() = t.pb.schema();
  create.set_num_replicas(t.pb.num_replicas());
  NamedPartitionSchema(schema, ps, create.mutable_partition_schema());
  if (!ps.range_column_indexes().empty()) {
    BASALT_RETURN_IF_ERROR(
        AddRangeBounds(masters, table, schema, ps, create.mutable_split_rows_range_bounds()));
  }
  return create;
}

// Creates `dst_name` on the destination like `src_name` and waits until every tablet has a
// leader (within --timeout_ms). ALREADY_EXISTS when the destination has that table.
absl::Status CreateTableLike(const std::string& src_masters, const std::string& src_name,
                             const std::string& dst_masters, const std::string& dst_name,
                             client::Client* dst) {
  bool exists = false;
  BASALT_RETURN_IF_ERROR(dst->TableExists(dst_name, &exists));
  if (exists) {
    return absl::AlreadyExistsError(
        StrCat("the destination table '", dst_name,
               "' already exists; pass --create_table=false to copy into it"));
  }
  BASALT_ASSIGN_OR_RETURN(pb::CreateTableRequestPB req,
                          CreateRequestLike(src_masters, src_name, dst_name));
  pb::CreateTableResponsePB resp;
  BASALT_RETURN_IF_ERROR_PREPEND(
      CallMaster(dst_masters, &pb::MasterService::Stub::CreateTable, req, &resp),
      StrCat("creating table '", dst_name, "'"));
  const absl::Time deadline = absl::Now() + absl::FromChrono(OperationTimeout());
  for (absl::Duration pause = absl::Milliseconds(20);;
       pause = std::min(pause * 2, absl::Seconds(1))) {
    bool in_progress = true;
    BASALT_RETURN_IF_ERROR(dst->IsCreateTableInProgress(dst_name, &in_progress));
    if (!in_progress) return absl::OkStatus();
    if (absl::Now() + pause > deadline) {
      return absl::DeadlineExceededError(
          StrCat("table '", dst_name, "' was created but not every tablet has a leader yet"));
    }
    absl::SleepFor(pause);
  }
}

// ---- Rows

// Which destination column each scanned column goes to: the scan projects `source_columns`, and
// projected column i is written to destination column dst_indexes[i].
struct ColumnMap {
  std::vector<std::string> source_columns;
  std::vector<int> dst_indexes;
  std::vector<ColumnSchema::DataType> types;
};

std::string TypeString(const ColumnSchema& c) {
  return TypeToSpecString(c.type(), c.precision(), c.scale(), c.length());
}

// Matches columns by name. INVALID_ARGUMENT for a source column the destination lacks or has with
// another type (or DECIMAL scale), and for a destination column that is NOT NULL without a
// default and missing from the source.
absl::StatusOr<ColumnMap> MapColumns(const client::Schema& src, const client::Schema& dst) {
  ColumnMap map;
  std::vector<bool> mapped(dst.num_columns(), false);
  for (int i = 0; i < src.num_columns(); ++i) {
    const ColumnSchema s = src.Column(i);
    const int j = dst.FindColumn(s.name());
    if (j < 0) {
      return absl::InvalidArgumentError(
          StrCat("the destination table has no column '", s.name(), "'"));
    }
    const ColumnSchema d = dst.Column(j);
    if (s.type() != d.type() || (s.type() == ColumnSchema::DECIMAL && s.scale() != d.scale())) {
      return absl::InvalidArgumentError(StrCat("column '", s.name(), "' is ", TypeString(s),
                                               " in the source but ", TypeString(d),
                                               " in the destination"));
    }
    map.source_columns.push_back(s.name());
    map.dst_indexes.push_back(j);
    map.types.push_back(s.type());
    mapped[j] = true;
  }
  for (int j = 0; j < dst.num_columns(); ++j) {
    const ColumnSchema d = dst.Column(j);
    if (!mapped[j] && !d.is_nullable() && !d.default_value().has_value()) {
      return absl::InvalidArgumentError(StrCat("destination column '", d.name(),
                                               "' is NOT NULL without a default and the source "
                                               "has no such column"));
    }
  }
  return map;
}

template <typename T>
absl::Status CopyAs(const ScanBatch::RowPtr& in, int src,
                    absl::Status (ScanBatch::RowPtr::*get)(int, T*) const, client::PartialRow* out,
                    int dst, absl::Status (client::PartialRow::*set)(int, T)) {
  T v{};
  BASALT_RETURN_IF_ERROR((in.*get)(src, &v));
  return (out->*set)(dst, v);
}

// Copies cell `src` of `in` (of `type`, or NULL) to column `dst` of `out`. INVALID_ARGUMENT when
// the destination column cannot hold it (NULL in a NOT NULL column, a longer VARCHAR, a DECIMAL
// of more digits, a DECIMAL beyond the int64 range the client API can carry).
absl::Status CopyCell(const ScanBatch::RowPtr& in, int src, ColumnSchema::DataType type,
                      client::PartialRow* out, int dst) {
  using R = ScanBatch::RowPtr;
  using P = client::PartialRow;
  if (in.IsNull(src)) return out->SetNull(dst);
  switch (type) {
    case ColumnSchema::BOOL:
      return CopyAs<bool>(in, src, &R::GetBool, out, dst, &P::SetBool);
    case ColumnSchema::INT8:
      return CopyAs<int8_t>(in, src, &R::GetInt8, out, dst, &P::SetInt8);
    case ColumnSchema::INT16:
      return CopyAs<int16_t>(in, src, &R::GetInt16, out, dst, &P::SetInt16);
    case ColumnSchema::INT32:
      return CopyAs<int32_t>(in, src, &R::GetInt32, out, dst, &P::SetInt32);
    case ColumnSchema::INT64:
      return CopyAs<int64_t>(in, src, &R::GetInt64, out, dst, &P::SetInt64);
    case ColumnSchema::FLOAT:
      return CopyAs<float>(in, src, &R::GetFloat, out, dst, &P::SetFloat);
    case ColumnSchema::DOUBLE:
      return CopyAs<double>(in, src, &R::GetDouble, out, dst, &P::SetDouble);
    case ColumnSchema::UNIXTIME_MICROS:
      return CopyAs<int64_t>(in, src, &R::GetUnixTimeMicros, out, dst, &P::SetUnixTimeMicros);
    case ColumnSchema::DATE:
      return CopyAs<int32_t>(in, src, &R::GetDate, out, dst, &P::SetDate);
    case ColumnSchema::DECIMAL:
      return CopyAs<int64_t>(in, src, &R::GetUnscaledDecimal, out, dst, &P::SetUnscaledDecimal);
    case ColumnSchema::STRING:
    case ColumnSchema::VARCHAR:
      return CopyAs<std::string_view>(in, src, &R::GetString, out, dst, &P::SetString);
    case ColumnSchema::BINARY:
      return CopyAs<std::string_view>(in, src, &R::GetBinary, out, dst, &P::SetBinary);
  }
  return absl::InternalError("unknown column type");
}

enum class WriteType { kInsert, kInsertIgnore, kUpsert };

absl::StatusOr<WriteType> ParseWriteType(const std::string& name) {
  if (name == "insert") return WriteType::kInsert;
  if (name == "insert_ignore") return WriteType::kInsertIgnore;
  if (name == "upsert") return WriteType::kUpsert;
  return absl::InvalidArgumentError(
      StrCat("--write_type: '", name, "' is not insert, insert_ignore or upsert"));
}

std::unique_ptr<client::WriteOperation> NewWriteOp(client::Table* table, WriteType type) {
  switch (type) {
    case WriteType::kInsert:
      return table->NewInsert();
    case WriteType::kInsertIgnore:
      return table->NewInsertIgnore();
    case WriteType::kUpsert:
      return table->NewUpsert();
  }
  return table->NewInsert();
}

// ---- The pipeline

// Scanned batches on their way from the scanning thread to the writer threads. Bounded, so the
// scan runs at most a few batches ahead. Close() ends the stream (writers drain it); Cancel()
// abandons it (a writer or the scan failed). Thread-safe.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity) {}

  // Blocks while the queue is full. False (dropping the batch) once cancelled.
  bool Push(std::unique_ptr<ScanBatch> batch) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(this, &BatchQueue::HasRoomOrCancelled));
    if (cancelled_) return false;
    batches_.push_back(std::move(batch));
    return true;
  }

  // Blocks while the queue is empty and open. nullptr once closed and drained, or cancelled.
  std::unique_ptr<ScanBatch> Pop() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(this, &BatchQueue::HasBatchOrEnded));
    if (cancelled_ || batches_.empty()) return nullptr;
    std::unique_ptr<ScanBatch> batch = std::move(batches_.front());
    batches_.pop_front();
    return batch;
  }

  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    closed_ = true;
  }

  void Cancel() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    cancelled_ = true;
    batches_.clear();
  }

 private:
  bool HasRoomOrCancelled() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelled_ || batches_.size() < capacity_;
  }
  bool HasBatchOrEnded() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelled_ || closed_ || !batches_.empty();
  }

  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<std::unique_ptr<ScanBatch>> batches_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// What the writer threads share: constant while they run, but for the counter and the queue.
struct CopyJob {
  client::Client* dst_client;
  client::Table* dst_table;
  ColumnMap map;
  WriteType write_type;
  BatchQueue* queue;
  std::atomic<int64_t> applied{0};  // Rows handed to the sessions; only a progress count.
};

// What one writer thread did.
struct WriterResult {
  absl::Status status;  // A failure other than failed rows.
  std::vector<std::unique_ptr<client::Error>> row_errors;
  bool overflowed = false;
};

absl::Status ApplyBatch(CopyJob* job, const ScanBatch& batch, client::Session* session) {
  const ColumnMap& map = job->map;
  for (int64_t r = 0; r < batch.NumRows(); ++r) {
    const ScanBatch::RowPtr row = batch.Row(r);
    std::unique_ptr<client::WriteOperation> op = NewWriteOp(job->dst_table, job->write_type);
    for (size_t c = 0; c < map.dst_indexes.size(); ++c) {
      const absl::Status s =
          CopyCell(row, static_cast<int>(c), map.types[c], op->mutable_row(), map.dst_indexes[c]);
      if (!s.ok()) {
        return absl::Status(s.code(), StrCat("row ", row.ToString(), ": column '",
                                             map.source_columns[c], "': ", s.message()));
      }
    }
    BASALT_RETURN_IF_ERROR_PREPEND(session->Apply(std::move(op)), StrCat("row ", row.ToString()));
  }
  job->applied.fetch_add(batch.NumRows(), std::memory_order_relaxed);
  return absl::OkStatus();
}

// One writer thread: applies batches from the queue until it ends; on a failure (or a failed
// row, which fails the copy anyway) it cancels the queue so that everyone stops.
void RunWriter(CopyJob* job, WriterResult* out) {
  std::shared_ptr<client::Session> session = job->dst_client->NewSession();
  out->status = session->SetFlushMode(client::Session::AUTO_FLUSH_BACKGROUND);
  while (out->status.ok() && session->CountPendingErrors() == 0) {
    std::unique_ptr<ScanBatch> batch = job->queue->Pop();
    if (batch == nullptr) break;
    out->status = ApplyBatch(job, *batch, session.get());
  }
  const absl::Status closed = session->Close();
  out->row_errors = session->GetPendingErrors(&out->overflowed);
  if (!out->status.ok() || !out->row_errors.empty()) job->queue->Cancel();
  if (out->status.ok() && out->row_errors.empty()) out->status = closed;
}

// Scans everything into the queue, updating the progress line as batches go by.
absl::Status ScanInto(client::Scanner* scanner, BatchQueue* queue, const CopyJob& job,
                      ProgressBar* progress) {
  while (scanner->HasMoreRows()) {
    auto batch = std::make_unique<ScanBatch>();
    BASALT_RETURN_IF_ERROR(scanner->NextBatch(batch.get()));
    if (batch->NumRows() > 0 && !queue->Push(std::move(batch))) return absl::OkStatus();
    progress->Update(job.applied.load(std::memory_order_relaxed));
  }
  return absl::OkStatus();
}

// The outcome of the writers: failed rows first (with examples), then other failures.
absl::Status WritersStatus(std::vector<WriterResult>* results, int64_t applied) {
  std::vector<std::unique_ptr<client::Error>> errors;
  bool overflowed = false;
  for (WriterResult& r : *results) {
    for (auto& e : r.row_errors) errors.push_back(std::move(e));
    overflowed = overflowed || r.overflowed;
  }
  BASALT_RETURN_IF_ERROR(RowErrorsStatus(errors, overflowed, applied, "copy", kMaxErrorExamples));
  for (const WriterResult& r : *results) BASALT_RETURN_IF_ERROR(r.status);
  return absl::OkStatus();
}

// Runs the scan and the writer threads to the end. Returns the number of rows copied.
absl::StatusOr<int64_t> RunCopy(client::Scanner* scanner, client::Client* dst_client,
                                client::Table* dst_table, ColumnMap map, WriteType write_type,
                                std::ostream* err) {
  const int num_threads = FLAGS_num_threads;
  BatchQueue queue(kQueuedBatchesPerThread * num_threads);
  CopyJob job{dst_client, dst_table, std::move(map), write_type, &queue};
  std::vector<WriterResult> results(num_threads);
  std::vector<std::thread> writers;
  for (int t = 0; t < num_threads; ++t) writers.emplace_back(RunWriter, &job, &results[t]);
  ProgressBar progress(err, /*total=*/-1, ProgressEnabled());
  const absl::Status scanned = ScanInto(scanner, &queue, job, &progress);
  if (scanned.ok()) {
    queue.Close();
  } else {
    queue.Cancel();
  }
  for (std::thread& w : writers) w.join();
  const int64_t applied = job.applied.load();
  progress.Update(applied, /*final=*/true);
  BASALT_RETURN_IF_ERROR(WritersStatus(&results, applied));
  BASALT_RETURN_IF_ERROR(scanned);
  return applied;
}

bool SameCluster(const std::string& a, const std::string& b) {
  auto addresses = [](const std::string& s) {
    std::vector<std::string> v = absl::StrSplit(s, ',', absl::SkipEmpty());
    std::sort(v.begin(), v.end());
    return v;
  };
  return addresses(a) == addresses(b);
}

absl::Status CopyTable(const ActionContext& ctx) {
  const std::string& src_masters = ctx.args[0];
  const std::string& src_name = ctx.args[1];
  const std::string& dst_masters = ctx.args[2];
  const std::string dst_name = FLAGS_dst_table.empty() ? src_name : FLAGS_dst_table;
  BASALT_ASSIGN_OR_RETURN(WriteType write_type, ParseWriteType(FLAGS_write_type));
  if (FLAGS_num_threads < 1 || FLAGS_num_threads > 256) {
    return absl::InvalidArgumentError("--num_threads must be in [1, 256]");
  }
  if (dst_name == src_name && SameCluster(src_masters, dst_masters)) {
    return absl::InvalidArgumentError(
        "the source and the destination are the same table; pass --dst_table");
  }
  std::shared_ptr<client::Client> src, dst;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(src_masters, &src));
  BASALT_RETURN_IF_ERROR(ConnectToCluster(dst_masters, &dst));
  std::shared_ptr<client::Table> src_table, dst_table;
  BASALT_RETURN_IF_ERROR(src->OpenTable(src_name, &src_table));
  // The predicates are checked before anything is created.
  client::Scanner scanner(src_table.get());
  BASALT_RETURN_IF_ERROR(AddScanPredicates(FLAGS_predicates, src_table.get(), &scanner));
  if (FLAGS_create_table) {
    BASALT_RETURN_IF_ERROR(
        CreateTableLike(src_masters, src_name, dst_masters, dst_name, dst.get()));
  }
  BASALT_RETURN_IF_ERROR(dst->OpenTable(dst_name, &dst_table));
  BASALT_ASSIGN_OR_RETURN(ColumnMap map, MapColumns(src_table->schema(), dst_table->schema()));
  BASALT_RETURN_IF_ERROR(scanner.SetProjectedColumnNames(map.source_columns));
  BASALT_RETURN_IF_ERROR(scanner.SetFaultTolerant());
  BASALT_RETURN_IF_ERROR(scanner.Open());
  const absl::Time start = absl::Now();
  BASALT_ASSIGN_OR_RETURN(int64_t rows, RunCopy(&scanner, dst.get(), dst_table.get(),
                                                std::move(map), write_type, ctx.err));
  const double secs = std::max(absl::ToDoubleSeconds(absl::Now() - start), 1e-6);
  *ctx.out << "Copied " << rows << " rows from " << src_name << " to " << dst_name << " in "
           << absl::StrFormat("%.2f s (%.0f rows/s)", secs, rows / secs) << "\n";
  return absl::OkStatus();
}

}  // namespace

Action TableCopyAction() {
  return {"copy",
          "Copy the rows of a table into a table of the same or another cluster",
          "Example:\n  basalt table copy 127.0.0.1:7051 t 127.0.0.1:7051 --dst_table=t_copy "
          "--predicates=\"key >= 100\"\n"
          "By default the destination is created with the source's schema, partitioning and "
          "replica count. With --create_table=false it must exist; columns are matched by name. "
          "The source is read at one snapshot; --num_threads threads write. Failed rows (e.g. "
          "existing keys with --write_type=insert) are reported with the first few rows and fail "
          "the copy.",
          {MasterAddressesArg(),
           TableNameArg(),
           {"dst_master_addresses", "Comma-separated master addresses of the destination"}},
          {"dst_table", "create_table", "write_type", "predicates", "num_threads", "progress"},
          CopyTable};
}

}  // namespace basalt::tools
