#include "client/scanner.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/time/clock.h"
#include "client/client.h"
#include "client/client_internal.h"
#include "client/meta_cache.h"
#include "client/scan_batch_internal.h"
#include "common/hybrid_clock.h"
#include "common/key_encoder.h"
#include "common/partition_pruner.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "grpcpp/channel.h"
#include "proto/tserver.grpc.pb.h"
#include "rpc/rpc_status.h"

namespace basalt::client {

using internal::Access;
using internal::RemoteTablet;
using internal::ReplicaLocation;

struct Scanner::Data {
  explicit Data(Table* t)
      : table(t),
        td(Access::Data(t)),
        client(Access::Data(t->client())),
        schema(&Access::Internal(t->schema())),
        timeout(client->rpc_timeout) {}

  absl::Status CheckNotOpen() const {
    return open ? absl::FailedPreconditionError("the scanner is already open") : absl::OkStatus();
  }
  absl::Status SetProjection(const std::vector<int>& indexes);
  absl::StatusOr<std::string> EncodeBound(const PartialRow& key) const;
  bool LimitReached() const { return limit > 0 && rows_returned >= limit; }

  // Finds the next tablet to scan and opens a scanner there (its first batch goes to
  // `pending`). Leaves `tablet` null when no tablet remains.
  absl::Status OpenNextTablet(absl::Time deadline);
  // Sends a new scan request for `tablet` (resuming after last_primary_key if set), trying its
  // replicas in turn with retries until `deadline`.
  absl::Status NewScan(absl::Time deadline);
  // Fetches the next batch of the open tablet scanner; fault-tolerant scans reopen elsewhere on
  // failure.
  absl::Status Continue(absl::Time deadline);
  // Records a successful response of `address`.
  void Accept(const std::string& address, std::unique_ptr<pb::ScanResponsePB> resp);
  void FinishTablet();
  void BuildNewScanRequest(pb::NewScanRequestPB* req) const;
  void CloseServerScanner();

  Table* const table;
  Table::Data* const td;
  internal::ClientData* const client;
  const basalt::Schema* const schema;

  // Configuration.
  std::vector<int> projection;  // Indexes into *schema.
  Schema projection_schema;
  std::vector<ColumnPredicate> predicates;
  std::string lower_key;
  std::string upper_key;
  ReadMode read_mode = READ_LATEST;
  bool ordered = false;
  bool fault_tolerant = false;
  uint64_t snapshot = 0;
  uint32_t batch_size = 0;
  int64_t limit = 0;
  absl::Duration timeout;

  // State.
  bool open = false;
  std::optional<PartitionPruner> pruner;
  std::shared_ptr<RemoteTablet> tablet;
  std::string server;      // Address of the replica serving the open tablet scanner.
  std::string scanner_id;  // Empty when the server holds no scanner.
  uint32_t call_seq = 0;
  bool tablet_has_more = false;
  std::string last_primary_key;
  int64_t rows_returned = 0;
  std::unique_ptr<pb::ScanResponsePB> pending;
};

absl::Status Scanner::Data::SetProjection(const std::vector<int>& indexes) {
  BASALT_RETURN_IF_ERROR(CheckNotOpen());
  std::vector<std::string> names;
  for (int idx : indexes) {
    if (idx < 0 || idx >= schema->num_columns()) {
      return absl::InvalidArgumentError(StrCat("projected column index ", idx, " out of range"));
    }
    names.push_back(schema->column(idx).name());
  }
  BASALT_ASSIGN_OR_RETURN(basalt::Schema p, schema->Project(names));
  projection = indexes;
  projection_schema = Access::MakeSchema(std::move(p));
  return absl::OkStatus();
}

absl::StatusOr<std::string> Scanner::Data::EncodeBound(const PartialRow& key) const {
  BASALT_RETURN_IF_ERROR(CheckNotOpen());
  const basalt::Schema& s = Access::Internal(*key.schema());
  if (&s != schema && !s.Equals(*schema)) {
    return absl::InvalidArgumentError("the key bound was built against another schema");
  }
  if (!key.IsKeySet()) {
    return absl::InvalidArgumentError(
        StrCat("a key bound must set every primary key column: ", key.ToString()));
  }
  return EncodeKey(*schema, Access::RowData(key));
}

void Scanner::Data::BuildNewScanRequest(pb::NewScanRequestPB* req) const {
  req->set_tablet_id(tablet->tablet_id());
  for (int idx : projection) {
    basalt::Schema::ColumnToPB(schema->column(idx), schema->column_id(idx),
                               schema->is_key_column(idx), req->add_projected_columns());
  }
  for (const ColumnPredicate& p : predicates) p.ToPB(req->add_predicates());
  req->set_start_primary_key(lower_key);
  req->set_stop_primary_key(upper_key);
  req->set_read_mode(static_cast<pb::ReadModePB>(read_mode));
  req->set_snap_timestamp(snapshot);
  req->set_propagated_timestamp(client->latest_observed_timestamp.load());
  req->set_ordered(ordered);
  req->set_limit(limit > 0 ? static_cast<uint64_t>(limit - rows_returned) : 0);
  req->set_last_primary_key(last_primary_key);
}

void Scanner::Data::Accept(const std::string& address, std::unique_ptr<pb::ScanResponsePB> resp) {
  server = address;
  scanner_id = resp->scanner_id();
  tablet_has_more = resp->has_more_results() && !scanner_id.empty();
  if (read_mode != READ_LATEST && snapshot == 0) snapshot = resp->snap_timestamp();
  client->ObserveTimestamp(resp->propagated_timestamp());
  if (!resp->last_primary_key().empty()) last_primary_key = resp->last_primary_key();
  tablet->MarkSucceeded(address);
  pending = std::move(resp);
}

// True for failures another replica (or a later retry) may not have.
static bool IsRetriable(const absl::Status& s) {
  auto detail = GetErrorDetail(s);
  if (detail.has_value() && (detail->code() == pb::ErrorDetailPB::TABLET_NOT_FOUND ||
                             detail->code() == pb::ErrorDetailPB::WRONG_SERVER_UUID ||
                             detail->code() == pb::ErrorDetailPB::SCANNER_EXPIRED ||
                             detail->code() == pb::ErrorDetailPB::TABLET_FAILED)) {
    return true;
  }
  return s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kCancelled ||
         s.code() == absl::StatusCode::kDeadlineExceeded;
}

// The shortest wait of one scan attempt: above a follower's wait for its safe time (3 s).
constexpr absl::Duration kScanAttemptFloor = absl::Seconds(5);

absl::Status Scanner::Data::NewScan(absl::Time deadline) {
  internal::Backoff backoff(deadline);
  // Each attempt waits a part of the time: a replica that stopped answering is left for the next.
  const absl::Duration attempt_timeout =
      internal::AttemptTimeout(deadline - absl::Now(), kScanAttemptFloor);
  absl::Status last;
  for (;;) {
    const std::vector<ReplicaLocation> replicas = tablet->ReplicasInOrder();
    if (replicas.empty()) {
      last = absl::UnavailableError(StrCat("tablet ", tablet->tablet_id(), " has no replica"));
      client->meta_cache->Invalidate(td->locations.get(), tablet.get());
    }
    for (const ReplicaLocation& r : replicas) {
      pb::ScanRequestPB req;
      BuildNewScanRequest(req.mutable_new_scan_request());
      req.set_batch_size_bytes(batch_size);
      auto resp = std::make_unique<pb::ScanResponsePB>();
      auto stub = pb::TabletServerService::NewStub(client->Channel(r.address));
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + attempt_timeout)));
      absl::Status s = FromGrpcStatus(stub->Scan(&ctx, req, resp.get()));
      if (s.ok()) {
        call_seq = 0;
        Accept(r.address, std::move(resp));
        return absl::OkStatus();
      }
      last = absl::Status(s.code(), StrCat("scanning tablet ", tablet->tablet_id(), " on ",
                                           r.address, ": ", s.message()));
      if (!IsRetriable(s)) return last;
      auto detail = GetErrorDetail(s);
      if (detail.has_value() && detail->code() == pb::ErrorDetailPB::TABLET_NOT_FOUND) {
        client->meta_cache->Invalidate(td->locations.get(), tablet.get());
      } else if (!detail.has_value() || detail->code() == pb::ErrorDetailPB::TABLET_FAILED) {
        tablet->MarkFailed(r.address);  // Another replica serves it.
      }
      if (absl::Now() >= deadline) break;
    }
    if (!backoff.Sleep()) return internal::TimedOut("Scan", backoff.attempts() + 1, last);
    if (!tablet->IsFresh(absl::GetCurrentTimeNanos())) {
      // Locations changed (or expired): look the partition up again.
      const Partition old = tablet->partition();
      BASALT_ASSIGN_OR_RETURN(
          tablet,
          client->meta_cache->Lookup(td->locations.get(), old.partition_key_start(), deadline));
      if (!(tablet->partition() == old)) {
        return absl::NotFoundError("the tablet being scanned was dropped");
      }
    }
  }
}

absl::Status Scanner::Data::OpenNextTablet(absl::Time deadline) {
  tablet.reset();
  while (pruner->HasMorePartitionKeyRanges()) {
    const std::string key = pruner->NextPartitionKey();
    BASALT_ASSIGN_OR_RETURN(auto t,
                            client->meta_cache->LookupOrNext(td->locations.get(), key, deadline));
    if (t == nullptr) {
      pruner->RemovePartitionKeyRange("");
      break;
    }
    const Partition& p = t->partition();
    if (!p.Contains(key)) {
      // No tablet covers [key, start of t): skip that gap.
      pruner->RemovePartitionKeyRange(p.partition_key_start());
      continue;
    }
    if (pruner->ShouldPrune(p)) {
      pruner->RemovePartitionKeyRange(p.partition_key_end());
      continue;
    }
    tablet = std::move(t);
    scanner_id.clear();
    last_primary_key.clear();
    return NewScan(deadline);
  }
  return absl::OkStatus();
}

void Scanner::Data::FinishTablet() {
  if (tablet != nullptr) pruner->RemovePartitionKeyRange(tablet->partition().partition_key_end());
  tablet.reset();
  scanner_id.clear();
  tablet_has_more = false;
}

absl::Status Scanner::Data::Continue(absl::Time deadline) {
  internal::Backoff backoff(deadline);
  // A fault-tolerant scan resumes elsewhere, so its attempts wait only a part of the time; any
  // other continues on this server only and waits for it to the deadline.
  const absl::Time attempt_deadline =
      fault_tolerant
          ? std::min(deadline, absl::Now() + internal::AttemptTimeout(deadline - absl::Now(),
                                                                      kScanAttemptFloor))
          : deadline;
  for (;;) {
    pb::ScanRequestPB req;
    req.set_scanner_id(scanner_id);
    req.set_call_seq_id(call_seq);
    req.set_batch_size_bytes(batch_size);
    auto resp = std::make_unique<pb::ScanResponsePB>();
    auto stub = pb::TabletServerService::NewStub(client->Channel(server));
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(attempt_deadline));
    absl::Status s = FromGrpcStatus(stub->Scan(&ctx, req, resp.get()));
    if (s.ok()) {
      call_seq++;
      Accept(server, std::move(resp));
      return absl::OkStatus();
    }
    s = absl::Status(s.code(), StrCat("scanning tablet ", tablet->tablet_id(), " on ", server, ": ",
                                      s.message()));
    if (!IsRetriable(s)) return s;
    if (fault_tolerant) {
      // Resume on another replica after the last key returned, at the same snapshot.
      tablet->MarkFailed(server);
      scanner_id.clear();
      return NewScan(deadline);
    }
    auto detail = GetErrorDetail(s);
    const bool transient =
        detail.has_value() && (detail->code() == pb::ErrorDetailPB::SERVER_OVERLOADED ||
                               detail->code() == pb::ErrorDetailPB::TABLET_NOT_RUNNING);
    if (!transient || !backoff.Sleep()) return s;
  }
}

void Scanner::Data::CloseServerScanner() {
  if (scanner_id.empty() || !tablet_has_more) return;
  pb::ScanRequestPB req;
  req.set_scanner_id(scanner_id);
  req.set_close_scanner(true);
  pb::ScanResponsePB resp;
  auto stub = pb::TabletServerService::NewStub(client->Channel(server));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  (void)stub->Scan(&ctx, req, &resp);  // Best effort: the server expires it anyway.
  scanner_id.clear();
  tablet_has_more = false;
}

// ---- Scanner
// -------------------------------------------------------------------------------------

Scanner::Scanner(Table* table) : data_(std::make_unique<Data>(table)) {
  std::vector<int> all;
  for (int i = 0; i < data_->schema->num_columns(); i++) all.push_back(i);
  absl::Status s = data_->SetProjection(all);
  (void)s;  // Projecting every column of a valid schema cannot fail.
}

Scanner::~Scanner() { Close(); }

absl::Status Scanner::SetProjectedColumnNames(const std::vector<std::string>& names) {
  std::vector<int> indexes;
  for (const std::string& n : names) {
    int idx = data_->schema->find_column(n);
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
  data_->predicates.push_back(*p);
  return absl::OkStatus();
}

absl::Status Scanner::AddLowerBound(const PartialRow& key) {
  BASALT_ASSIGN_OR_RETURN(std::string k, data_->EncodeBound(key));
  data_->lower_key = std::max(data_->lower_key, k);
  return absl::OkStatus();
}

absl::Status Scanner::AddExclusiveUpperBound(const PartialRow& key) {
  BASALT_ASSIGN_OR_RETURN(std::string k, data_->EncodeBound(key));
  if (data_->upper_key.empty() || k < data_->upper_key) data_->upper_key = k;
  return absl::OkStatus();
}

absl::Status Scanner::SetReadMode(ReadMode mode) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (mode < READ_LATEST || mode > READ_YOUR_WRITES) {
    return absl::InvalidArgumentError(StrCat("unknown read mode ", static_cast<int>(mode)));
  }
  if (data_->fault_tolerant && mode != READ_AT_SNAPSHOT) {
    return absl::InvalidArgumentError("a fault-tolerant scan reads at a snapshot");
  }
  data_->read_mode = mode;
  return absl::OkStatus();
}

absl::Status Scanner::SetOrderMode(OrderMode mode) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (data_->fault_tolerant && mode != ORDERED) {
    return absl::InvalidArgumentError("a fault-tolerant scan is ordered");
  }
  data_->ordered = mode == ORDERED;
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
  data_->snapshot = hybrid_time;
  return absl::OkStatus();
}

absl::Status Scanner::SetFaultTolerant() {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  data_->fault_tolerant = true;
  data_->ordered = true;
  data_->read_mode = READ_AT_SNAPSHOT;
  return absl::OkStatus();
}

absl::Status Scanner::SetBatchSizeBytes(uint32_t bytes) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  data_->batch_size = bytes;
  return absl::OkStatus();
}

absl::Status Scanner::SetLimit(int64_t limit) {
  BASALT_RETURN_IF_ERROR(data_->CheckNotOpen());
  if (limit < 0) return absl::InvalidArgumentError("the limit must not be negative");
  data_->limit = limit;
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
  d.pruner.emplace(d.td->partition_schema, *d.schema, d.predicates, d.lower_key, d.upper_key);
  d.open = true;
  if (!d.upper_key.empty() && d.lower_key >= d.upper_key) {
    d.pruner->RemovePartitionKeyRange("");
  }
  absl::Status s = d.OpenNextTablet(absl::Now() + d.timeout);
  if (!s.ok()) Close();
  return s;
}

bool Scanner::HasMoreRows() const {
  const Data& d = *data_;
  if (!d.open || d.LimitReached()) return false;
  return d.pending != nullptr || d.tablet_has_more || d.pruner->HasMorePartitionKeyRanges();
}

absl::Status Scanner::NextBatch(ScanBatch* batch) {
  Data& d = *data_;
  internal::ScanBatchData* out = Access::Data(batch);
  out->Clear();
  if (!d.open) return absl::FailedPreconditionError("the scanner is not open");
  if (d.LimitReached()) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + d.timeout;
  if (d.pending == nullptr) {
    if (d.tablet != nullptr && d.tablet_has_more) {
      BASALT_RETURN_IF_ERROR(d.Continue(deadline));
    } else {
      d.FinishTablet();
      BASALT_RETURN_IF_ERROR(d.OpenNextTablet(deadline));
      if (d.pending == nullptr) return absl::OkStatus();
    }
  }
  std::unique_ptr<pb::ScanResponsePB> resp = std::move(d.pending);
  auto block = std::make_unique<pb::ColumnarRowBlockPB>(std::move(*resp->mutable_data()));
  const int64_t max_rows = d.limit > 0 ? d.limit - d.rows_returned : INT64_MAX;
  BASALT_RETURN_IF_ERROR(out->Reset(d.projection_schema, std::move(block), max_rows));
  d.rows_returned += out->num_rows;
  if (!d.tablet_has_more) d.FinishTablet();
  if (d.LimitReached()) d.CloseServerScanner();
  return absl::OkStatus();
}

absl::Status Scanner::KeepAlive() {
  Data& d = *data_;
  if (!d.open || d.scanner_id.empty() || !d.tablet_has_more) return absl::OkStatus();
  pb::ScannerKeepAliveRequestPB req;
  req.set_scanner_id(d.scanner_id);
  pb::ScannerKeepAliveResponsePB resp;
  auto stub = pb::TabletServerService::NewStub(d.client->Channel(d.server));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + d.timeout));
  return FromGrpcStatus(stub->ScannerKeepAlive(&ctx, req, &resp));
}

void Scanner::Close() {
  if (!data_->open) return;
  data_->CloseServerScanner();
  data_->pending.reset();
  data_->tablet.reset();
  data_->open = false;
}

const Schema& Scanner::GetProjectionSchema() const { return data_->projection_schema; }
uint64_t Scanner::GetSnapshotRaw() const { return data_->snapshot; }

std::string Scanner::ToString() const {
  std::string out =
      StrCat("Scanner(table=", data_->table->name(), ", columns=", data_->projection.size());
  for (const ColumnPredicate& p : data_->predicates) StrAppend(&out, ", ", p.ToString());
  out += ")";
  return out;
}

}  // namespace basalt::client
