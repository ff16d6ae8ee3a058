#include "client/scanner.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/time/clock.h"
#include "client/client.h"
#include "client/client_internal.h"
#include "client/parallel_scan.h"
#include "client/scan_batch_internal.h"
#include "client/scan_rpc.h"
#include "client/tablet_scanner.h"
#include "common/hybrid_clock.h"
#include "common/key_encoder.h"
#include "common/partition_pruner.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/tserver.pb.h"

namespace basalt::client {

using internal::Access;

// The default of SetMaxConcurrentTablets: one at a time. On a 2-core machine that also runs the
// servers, reading tablets at once was slower (W3: 131-154 M rows/s one at a time, 110-119 M with
// two or four at once), the client's own CPU being the bound; it pays where the servers are on
// other machines and idle while the client waits for one of them.
constexpr int kDefaultConcurrentTablets = 1;

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
  absl::StatusOr<std::string> EncodeBound(const PartialRow& key) const;
  bool LimitReached() const { return limit > 0 && rows_returned >= limit; }
  uint64_t RemainingLimit() const {
    return limit > 0 ? static_cast<uint64_t>(limit - rows_returned) : 0;
  }
  // Sequential scans: opens `tablet` (the next one when it holds no more rows or none is open);
  // its first answer goes to `pending`. Leaves `tablet` null when no tablet remains; on failure
  // keeps it, to be opened again by the next call.
  absl::Status OpenTablet(absl::Time deadline);
  // Whether Open() hands the tablets after the first to a ParallelScan.
  bool Parallel() const { return !config.ordered && limit == 0 && max_concurrent_tablets > 1; }
  void CloseServerScanners();

  Table* const table;
  internal::ScanConfig config;
  // Before `parallel`, whose threads use it.
  internal::ScanBlockPool blocks{2};

  // Configuration (the rest is in `config`).
  Schema projection_schema;
  int64_t limit = 0;
  int max_concurrent_tablets = kDefaultConcurrentTablets;
  absl::Duration timeout;

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
};

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
  return absl::OkStatus();
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
  if (d.Parallel() && d.tablet != nullptr) {
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
  if (d.pending != nullptr) return true;
  if (d.parallel != nullptr) return d.parallel->HasMore();
  return (d.tablet != nullptr && (d.tablet_unopened || d.tablet->has_more())) ||
         d.pruner->HasMorePartitionKeyRanges();
}

absl::Status Scanner::NextBatch(ScanBatch* batch) {
  Data& d = *data_;
  internal::ScanBatchData* out = Access::Data(batch);
  d.blocks.Put(std::move(out->block));  // Its buffers take the next answers.
  out->Clear();
  if (!d.open) return absl::FailedPreconditionError("the scanner is not open");
  if (d.LimitReached()) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + d.timeout;
  if (d.pending == nullptr) {
    if (d.parallel != nullptr) {
      BASALT_ASSIGN_OR_RETURN(d.pending, d.parallel->Next(deadline));
    } else if (d.tablet != nullptr && !d.tablet_unopened && d.tablet->has_more()) {
      BASALT_RETURN_IF_ERROR(d.tablet->Continue(deadline, d.RemainingLimit()));
      d.pending = d.tablet->TakeResponse();
    } else {
      BASALT_RETURN_IF_ERROR(d.OpenTablet(deadline));
    }
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
  data_->open = false;
}

const Schema& Scanner::GetProjectionSchema() const { return data_->projection_schema; }
uint64_t Scanner::GetSnapshotRaw() const { return data_->config.snapshot; }

std::string Scanner::ToString() const {
  std::string out =
      StrCat("Scanner(table=", data_->table->name(), ", columns=", data_->config.projection.size());
  for (const ColumnPredicate& p : data_->config.predicates) StrAppend(&out, ", ", p.ToString());
  out += ")";
  return out;
}

}  // namespace basalt::client
