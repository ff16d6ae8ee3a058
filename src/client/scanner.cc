#include "client/scanner.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/time/clock.h"
#include "client/aggregate_merge.h"
#include "client/client.h"
#include "client/client_internal.h"
#include "client/parallel_scan.h"
#include "client/scan_batch_internal.h"
#include "client/scan_rpc.h"
#include "client/tablet_scanner.h"
#include "common/aggregate_plan.h"
#include "common/hybrid_clock.h"
#include "common/key_encoder.h"
#include "common/partition_pruner.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/tserver.pb.h"

namespace basalt::client {

using internal::Access;

// The default of SetMaxConcurrentTablets: two at a time. A tablet's batches come from one server
// thread, which bounds a scan read one tablet at a time (W3 on the 2-core VM that also runs the
// servers, 2026-12-04: 129-153 M rows/s one at a time, 158-322 M two at a time; prefetching the
// next batch of the same tablet did not help). Two, not more: before the servers' scans got
// cheaper, reading tablets at once lost to one at a time on this machine (docs/performance.md,
// change 35).
constexpr int kDefaultConcurrentTablets = 2;
// Result rows of an aggregate scan per batch.
constexpr int64_t kAggregateRowsPerBatch = 64 * 1024;

struct Scanner::Data {
  explicit Data(Table* t) : table(t), timeout(Access::Data(t->client())->rpc_timeout) {
    config.locations = Access::Data(t)->locations.get();
    config.client = Access::Data(t->client());
    config.schema = &Access::Internal(t->schema());
    config.blocks = &blocks;
  }

  absl::Status CheckNotOpen() const {
    return open ? absl::FailedPreconditionError("the scanner is already open") : absl::OkStatus();
  }
  absl::Status SetProjection(const std::vector<int>& indexes);
  // Validates the aggregate configuration so far and, once it has an aggregate, makes it the
  // plan. On error the configuration is left as it was before the last addition.
  absl::Status RebuildPlan();
  absl::StatusOr<std::string> EncodeBound(const PartialRow& key) const;
  bool LimitReached() const { return limit > 0 && rows_returned >= limit; }
  // What the servers are asked for: an aggregate scan's limit counts groups, not rows.
  uint64_t RemainingLimit() const {
    return limit > 0 && plan == nullptr ? static_cast<uint64_t>(limit - rows_returned) : 0;
  }
  // Sequential scans: opens `tablet` (the next one when it holds no more rows or none is open);
  // its first answer goes to `pending`. Leaves `tablet` null when no tablet remains; on failure
  // keeps it, to be opened again by the next call.
  absl::Status OpenTablet(absl::Time deadline);
  // Whether Open() hands the tablets after the first to a ParallelScan.
  bool Parallel() const {
    return !config.ordered && (limit == 0 || plan != nullptr) && max_concurrent_tablets > 1;
  }
  // Whether a tablet answer is pending or may still come.
  bool MoreAnswers() const;
  // The next tablet answer into `pending` (which stays null when none came).
  absl::Status Fetch(absl::Time deadline);
  // Aggregate scans: merges answers, then returns the result rows.
  // The first failure is final.
  absl::Status NextAggregateBatch(internal::ScanBatchData* out, absl::Time deadline);
  absl::Status MergeAndEmit(internal::ScanBatchData* out, absl::Time deadline);
  void CloseServerScanners();

  Table* const table;
  internal::ScanConfig config;
  // Before `parallel`, whose threads use it.
  internal::ScanBlockPool blocks{2};

  // Configuration (the rest is in `config`).
  Schema projection_schema;
  int64_t limit = 0;
  int max_concurrent_tablets = kDefaultConcurrentTablets;
  bool concurrency_set = false;
  absl::Duration timeout;
  // Aggregate scans: what was asked, and the plan once there is an aggregate.
  std::vector<GroupBySpec> group_specs;
  std::vector<AggregateSpec> aggregate_specs;
  std::unique_ptr<AggregatePlan> plan;
  Schema result_schema;

  // State.
  bool open = false;
  std::optional<PartitionPruner> pruner;
  // Sequential scans: the tablet being read, and whether it still has to be opened (its last
  // Open failed).
  std::unique_ptr<internal::TabletScanner> tablet;
  bool tablet_unopened = false;
  // Unordered scans without a limit, from the first tablet on: every tablet after it.
  std::unique_ptr<internal::ParallelScan> parallel;
  int64_t rows_returned = 0;
  std::unique_ptr<pb::ScanResponsePB> pending;
  std::unique_ptr<internal::AggregateMerge> merge;
  int64_t num_results = 0;
  // An aggregate scan's first failure: it ends the scan (a partial merge must never look like a
  // result) and every later NextBatch returns it.
  absl::Status merge_error;
};

absl::Status Scanner::Data::RebuildPlan() {
  BASALT_RETURN_IF_ERROR(CheckNotOpen());
  // Group columns are checked as soon as they are added, against a stand-in aggregate.
  std::vector<AggregateSpec> aggs = aggregate_specs;
  if (aggs.empty()) aggs.push_back({basalt::AggregateFunction::kCountAll, "", "(stand-in count)"});
  absl::StatusOr<AggregatePlan> p = AggregatePlan::Create(*config.schema, group_specs, aggs);
  if (!p.ok()) return p.status();
  if (aggregate_specs.empty()) return absl::OkStatus();
  plan = std::make_unique<AggregatePlan>(std::move(*p));
  result_schema = Access::MakeSchema(plan->result_schema());
  config.aggregates = plan.get();
  return absl::OkStatus();
}

bool Scanner::Data::MoreAnswers() const {
  if (pending != nullptr) return true;
  if (parallel != nullptr) return parallel->HasMore();
  return (tablet != nullptr && (tablet_unopened || tablet->has_more())) ||
         pruner->HasMorePartitionKeyRanges();
}

absl::Status Scanner::Data::Fetch(absl::Time deadline) {
  if (parallel != nullptr) {
    BASALT_ASSIGN_OR_RETURN(pending, parallel->Next(deadline));
  } else if (tablet != nullptr && !tablet_unopened && tablet->has_more()) {
    BASALT_RETURN_IF_ERROR(tablet->Continue(deadline, RemainingLimit()));
    pending = tablet->TakeResponse();
  } else {
    BASALT_RETURN_IF_ERROR(OpenTablet(deadline));
  }
  return absl::OkStatus();
}

absl::Status Scanner::Data::NextAggregateBatch(internal::ScanBatchData* out, absl::Time deadline) {
  if (!merge_error.ok()) return merge_error;
  absl::Status s = MergeAndEmit(out, deadline);
  if (!s.ok()) {
    merge_error = s;
    CloseServerScanners();
  }
  return s;
}

absl::Status Scanner::Data::MergeAndEmit(internal::ScanBatchData* out, absl::Time deadline) {
  if (!merge->finished()) {
    // Merge for at most half the call's time, so that the call returns (empty) before its
    // deadline while answers keep coming.
    const absl::Time stop = absl::Now() + timeout / 2;
    while (MoreAnswers()) {
      if (pending == nullptr) BASALT_RETURN_IF_ERROR(Fetch(deadline));
      if (pending != nullptr) {
        std::unique_ptr<pb::ScanResponsePB> resp = std::move(pending);
        std::unique_ptr<pb::ColumnarRowBlockPB> block(
            resp->has_data() ? resp->release_data() : new pb::ColumnarRowBlockPB);
        BASALT_RETURN_IF_ERROR(merge->Add(std::move(block)));
      }
      if (absl::Now() >= stop && MoreAnswers()) return absl::OkStatus();
    }
    num_results = merge->Finish();
  }
  int64_t end = std::min(num_results, rows_returned + kAggregateRowsPerBatch);
  if (limit > 0) end = std::min(end, limit);
  if (rows_returned >= end) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<pb::ColumnarRowBlockPB> block,
                          merge->Results(rows_returned, end));
  BASALT_RETURN_IF_ERROR(out->Reset(result_schema, std::move(block), INT64_MAX));
  rows_returned += out->num_rows;
  return absl::OkStatus();
}

absl::Status Scanner::Data::SetProjection(const std::vector<int>& indexes) {
  BASALT_RETURN_IF_ERROR(CheckNotOpen());
  const basalt::Schema& schema = *config.schema;
  std::vector<std::string> names;
  for (int idx : indexes) {
    if (idx < 0 || idx >= schema.num_columns()) {
      return absl::InvalidArgumentError(StrCat("projected column index ", idx, " out of range"));
    }
    names.push_back(schema.column(idx).name());
  }
  BASALT_ASSIGN_OR_RETURN(basalt::Schema p, schema.Project(names));
  config.projection = indexes;
  projection_schema = Access::MakeSchema(std::move(p));
  return absl::OkStatus();
}

absl::StatusOr<std::string> Scanner::Data::EncodeBound(const PartialRow& key) const {
  BASALT_RETURN_IF_ERROR(CheckNotOpen());
  const basalt::Schema& s = Access::Internal(*key.schema());
  if (&s != config.schema && !s.Equals(*config.schema)) {
    return absl::InvalidArgumentError("the key bound was built against another schema");
  }
  if (!key.IsKeySet()) {
    return absl::InvalidArgumentError(
        StrCat("a key bound must set every primary key column: ", key.ToString()));
  }
  return EncodeKey(*config.schema, Access::RowData(key));
}

absl::Status Scanner::Data::OpenTablet(absl::Time deadline) {
  if (tablet == nullptr || !tablet_unopened) {
    tablet.reset();
    BASALT_ASSIGN_OR_RETURN(auto t, ClaimNextTablet(config, &*pruner, deadline));
    if (t == nullptr) return absl::OkStatus();
    tablet = std::make_unique<internal::TabletScanner>(&config, std::move(t));
  }
  tablet_unopened = true;
  BASALT_RETURN_IF_ERROR(tablet->Open(deadline, RemainingLimit()));
  tablet_unopened = false;
  pending = tablet->TakeResponse();
  return absl::OkStatus();
}

void Scanner::Data::CloseServerScanners() {
  if (parallel != nullptr) parallel->Stop();
  if (tablet != nullptr) tablet->Close();
}

// ---- Scanner
// -------------------------------------------------------------------------------------

Scanner::Scanner(Table* table) : data_(std::make_unique<Data>(table)) {
  std::vector<int> all;
  for (int i = 0; i < data_->config.schema->num_columns(); i++) all.push_back(i);
  absl::Status s = data_->SetProjection(all);
  (void)s;  // Projecting every column of a valid schema cannot fail.
}

Scanner::~Scanner() { Close(); }

absl::Status Scanner::SetProjectedColumnNames(const std::vector<std::string>& names) {
  std::vector<int> indexes;
  for (const std::string& n : names) {
    int idx = data_->config.schema->find_column(n);
    if (idx < 0) {
      return absl::NotFoundError(
          StrCat("table '", data_->table->name(), "' has no column '", n, "'"));
    }
    indexes.push_back(idx);
  }
  return data_->SetProjection(indexes);
}

absl::Status Scanner::SetProjectedColumnIndexes(const std::vector<int>& indexes) {
  return data_->SetProjection(indexes);
}

absl::Status Scanner::AddConjunctPredicate(std::unique_ptr<Predicate> predicate) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (predicate == nullptr) return absl::InvalidArgumentError("null predicate");
  const auto& p = Access::Internal(*predicate);
  if (!p.ok()) return p.status();
  data_->config.predicates.push_back(*p);
  return absl::OkStatus();
}

absl::Status Scanner::AddLowerBound(const PartialRow& key) {
  BASALT_ASSIGN_OR_RETURN(std::string k, data_->EncodeBound(key));
  data_->config.lower_key = std::max(data_->config.lower_key, k);
  return absl::OkStatus();
}

absl::Status Scanner::AddExclusiveUpperBound(const PartialRow& key) {
  BASALT_ASSIGN_OR_RETURN(std::string k, data_->EncodeBound(key));
  std::string& upper = data_->config.upper_key;
  if (upper.empty() || k < upper) upper = k;
  return absl::OkStatus();
}

absl::Status Scanner::SetReadMode(ReadMode mode) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (mode < READ_LATEST || mode > READ_YOUR_WRITES) {
    return absl::InvalidArgumentError(StrCat("unknown read mode ", static_cast<int>(mode)));
  }
  if (data_->config.fault_tolerant && mode != READ_AT_SNAPSHOT) {
    return absl::InvalidArgumentError("a fault-tolerant scan reads at a snapshot");
  }
  data_->config.read_mode = mode;
  return absl::OkStatus();
}

absl::Status Scanner::SetOrderMode(OrderMode mode) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (data_->config.fault_tolerant && mode != ORDERED) {
    return absl::InvalidArgumentError("a fault-tolerant scan is ordered");
  }
  data_->config.ordered = mode == ORDERED;
  return absl::OkStatus();
}

absl::Status Scanner::SetSnapshotMicros(uint64_t micros) {
  if (micros > HybridTime::kMaxPhysicalMicros) {
    return absl::InvalidArgumentError(StrCat("snapshot ", micros, " us out of range"));
  }
  return SetSnapshotRaw(HybridTime::FromMicros(micros).value());
}

absl::Status Scanner::SetSnapshotRaw(uint64_t hybrid_time) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  data_->config.snapshot = hybrid_time;
  return absl::OkStatus();
}

absl::Status Scanner::SetFaultTolerant() {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  data_->config.fault_tolerant = true;
  data_->config.ordered = true;
  data_->config.read_mode = READ_AT_SNAPSHOT;
  return absl::OkStatus();
}

absl::Status Scanner::SetBatchSizeBytes(uint32_t bytes) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  data_->config.batch_size = bytes;
  return absl::OkStatus();
}

absl::Status Scanner::SetLimit(int64_t limit) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (limit < 0) return absl::InvalidArgumentError("the limit must not be negative");
  data_->limit = limit;
  return absl::OkStatus();
}

absl::Status Scanner::SetMaxConcurrentTablets(int tablets) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (tablets < 1 || tablets > kMaxConcurrentTablets) {
    return absl::InvalidArgumentError(StrCat("the number of tablets read at once must be in [1, ",
                                             kMaxConcurrentTablets, "], not ", tablets));
  }
  data_->max_concurrent_tablets = tablets;
  data_->concurrency_set = true;
  return absl::OkStatus();
}

absl::Status Scanner::AddAggregate(AggregateFunction function, const std::string& column,
                                   const std::string& alias) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (function < COUNT_ALL || function > LAST) {
    return absl::InvalidArgumentError(
        StrCat("unknown aggregate function ", static_cast<int>(function)));
  }
  data_->aggregate_specs.push_back(
      {static_cast<basalt::AggregateFunction>(function), column, alias});
  absl::Status s = data_->RebuildPlan();
  if (!s.ok()) data_->aggregate_specs.pop_back();
  return s;
}

absl::Status Scanner::AddGroupBy(const std::string& column, const std::string& alias) {
  return AddGroupByTimeBucket(column, 0, 0, alias);
}

absl::Status Scanner::AddGroupByTimeBucket(const std::string& column, int64_t width_micros,
                                           int64_t offset_micros, const std::string& alias) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  data_->group_specs.push_back({column, width_micros, offset_micros, alias});
  absl::Status s = data_->RebuildPlan();
  if (!s.ok()) data_->group_specs.pop_back();
  return s;
}

absl::Status Scanner::SetTimeoutMillis(int millis) {
  if (millis <= 0) return absl::InvalidArgumentError("the timeout must be positive");
  data_->timeout = absl::Milliseconds(millis);
  return absl::OkStatus();
}

absl::Status Scanner::Open() {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  Data& d = *data_;
  const internal::ScanConfig& c = d.config;
  if (!d.group_specs.empty() && d.plan == nullptr) {
    return absl::InvalidArgumentError("GROUP BY needs an aggregate (AddAggregate)");
  }
  if (d.plan != nullptr) {
    d.merge = std::make_unique<internal::AggregateMerge>(d.plan.get(), &d.blocks);
    d.merge_error = absl::OkStatus();
    d.num_results = 0;
    d.rows_returned = 0;
    if (!d.concurrency_set) d.max_concurrent_tablets = kDefaultAggregateTablets;
  }
  d.pruner.emplace(Access::Data(d.table)->partition_schema, *c.schema, c.predicates, c.lower_key,
                   c.upper_key);
  d.open = true;
  if (!c.upper_key.empty() && c.lower_key >= c.upper_key) {
    d.pruner->RemovePartitionKeyRange("");
  }
  // The first tablet is opened here, also for a parallel scan: bad requests fail Open(), and
  // a snapshot scan's first answer fixes the snapshot of every other tablet before they start.
  absl::Status s = d.OpenTablet(absl::Now() + d.timeout);
  if (!s.ok()) {
    Close();
    return s;
  }
  // Workers only when other tablets remain: a scan of one tablet (a point lookup) gains nothing
  // from them and would pay a thread hand-off per batch.
  if (d.Parallel() && d.tablet != nullptr && d.pruner->HasMorePartitionKeyRanges()) {
    d.config.snapshot_fixed = true;
    // A block per worker queued and in flight, and the caller's.
    d.blocks.SetCapacity(2 * d.max_concurrent_tablets + 2);
    d.parallel = std::make_unique<internal::ParallelScan>(
        &d.config, &*d.pruner, std::move(d.tablet), d.max_concurrent_tablets, d.timeout);
  }
  return absl::OkStatus();
}

bool Scanner::HasMoreRows() const {
  const Data& d = *data_;
  if (!d.open || d.LimitReached()) return false;
  if (d.merge != nullptr) {
    return d.merge_error.ok() && (!d.merge->finished() || d.rows_returned < d.num_results);
  }
  return d.MoreAnswers();
}

absl::Status Scanner::NextBatch(ScanBatch* batch) {
  Data& d = *data_;
  internal::ScanBatchData* out = Access::Data(batch);
  d.blocks.Put(std::move(out->block));  // Its buffers take the next answers.
  out->Clear();
  if (!d.open) return absl::FailedPreconditionError("the scanner is not open");
  if (d.LimitReached()) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + d.timeout;
  if (d.merge != nullptr) return d.NextAggregateBatch(out, deadline);
  if (d.pending == nullptr) {
    BASALT_RETURN_IF_ERROR(d.Fetch(deadline));
    if (d.pending == nullptr) return absl::OkStatus();
  }
  std::unique_ptr<pb::ScanResponsePB> resp = std::move(d.pending);
  std::unique_ptr<pb::ColumnarRowBlockPB> block(resp->has_data() ? resp->release_data()
                                                                 : new pb::ColumnarRowBlockPB);
  const int64_t max_rows = d.limit > 0 ? d.limit - d.rows_returned : INT64_MAX;
  BASALT_RETURN_IF_ERROR(out->Reset(d.projection_schema, std::move(block), max_rows));
  d.rows_returned += out->num_rows;
  if (d.LimitReached()) d.CloseServerScanners();
  return absl::OkStatus();
}

absl::Status Scanner::KeepAlive() {
  Data& d = *data_;
  if (!d.open) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + d.timeout;
  if (d.parallel != nullptr) return d.parallel->KeepAlive(deadline);
  if (d.tablet == nullptr || d.tablet_unopened) return absl::OkStatus();
  return d.tablet->KeepAlive(deadline);
}

void Scanner::Close() {
  if (!data_->open) return;
  data_->CloseServerScanners();
  data_->parallel.reset();
  data_->blocks.SetCapacity(2);  // Frees what a concurrent scan kept.
  data_->pending.reset();
  data_->tablet.reset();
  data_->merge.reset();
  data_->open = false;
}

const Schema& Scanner::GetProjectionSchema() const {
  return data_->plan != nullptr ? data_->result_schema : data_->projection_schema;
}
uint64_t Scanner::GetSnapshotRaw() const { return data_->config.snapshot; }

std::string Scanner::ToString() const {
  std::string out =
      StrCat("Scanner(table=", data_->table->name(), ", columns=", data_->config.projection.size());
  for (const ColumnPredicate& p : data_->config.predicates) StrAppend(&out, ", ", p.ToString());
  if (data_->plan != nullptr) StrAppend(&out, ", aggregates=", data_->plan->ToString());
  out += ")";
  return out;
}

}  // namespace basalt::client
