#include "client/tablet_scanner.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "client/client_internal.h"
#include "client/frame_targets.h"
#include "client/meta_cache.h"
#include "client/scan_rpc.h"
#include "common/aggregate_plan.h"
#include "common/clock.h"
#include "common/partition_pruner.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "grpcpp/channel.h"
#include "proto/tserver.grpc.pb.h"
#include "rpc/frame_channel.h"
#include "rpc/rpc_status.h"

namespace basalt::client::internal {

absl::StatusOr<std::shared_ptr<RemoteTablet>> ClaimNextTablet(const ScanConfig& config,
                                                              PartitionPruner* pruner,
                                                              absl::Time deadline) {
  while (pruner->HasMorePartitionKeyRanges()) {
    const std::string key = pruner->NextPartitionKey();
    BASALT_ASSIGN_OR_RETURN(
        auto t, config.client->meta_cache->LookupOrNext(config.locations, key, deadline));
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
    const bool prune = pruner->ShouldPrune(p);  // Asks about the ranges p still overlaps.
    pruner->RemovePartitionKeyRange(p.partition_key_end());
    if (!prune) return t;
  }
  return std::shared_ptr<RemoteTablet>();
}

TabletScanner::TabletScanner(ScanConfig* config, std::shared_ptr<RemoteTablet> tablet)
    : config_(config), tablet_(std::move(tablet)) {}

TabletScanner::~TabletScanner() = default;

std::unique_ptr<pb::ScanResponsePB> TabletScanner::TakeResponse() { return std::move(response_); }

void TabletScanner::Accept(const std::string& address, std::unique_ptr<pb::ScanResponsePB> resp) {
  server_ = address;
  scanner_id_ = resp->scanner_id();
  has_more_ = resp->has_more_results() && !scanner_id_.empty();
  if (config_->read_mode != Scanner::READ_LATEST && config_->snapshot == 0 &&
      !config_->snapshot_fixed) {
    config_->snapshot = resp->snap_timestamp();
  }
  config_->client->ObserveTimestamp(resp->propagated_timestamp());
  if (!resp->last_primary_key().empty()) last_primary_key_ = resp->last_primary_key();
  tablet_->MarkSucceeded(address);
  response_ = std::move(resp);
}

// What every call of a cancelled scanner returns: never retried, never another replica's fault.
static absl::Status Closed() { return absl::CancelledError("the scan was closed"); }

absl::Status TabletScanner::Call(const std::string& address, const pb::ScanRequestPB& req,
                                 absl::Time deadline, pb::ScanResponsePB* resp) {
  FrameCancel frame_cancel;
  {
    absl::MutexLock l(&mu_);
    if (cancelled_) return Closed();
    frame_in_flight_ = &frame_cancel;
  }
  std::optional<absl::Status> frame = config_->client->frames->Call(
      address, pb::FRAME_SCAN, req, deadline, &frame_answer_, &frame_cancel);
  {
    absl::MutexLock l(&mu_);
    frame_in_flight_ = nullptr;
  }
  if (frame.has_value()) {
    absl::Status s = *frame;
    if (s.ok()) s = ParseScanResponse(frame_answer_, config_->blocks, resp);
    // A cancelled call must not look like a server failure worth retrying elsewhere.
    if (Cancelled()) return Closed();
    return s;
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  {
    absl::MutexLock l(&mu_);
    if (cancelled_) return Closed();
    in_flight_ = &ctx;
  }
  absl::Status s = CallScan(config_->client->Channel(address), &ctx, req, config_->blocks, resp);
  absl::MutexLock l(&mu_);
  in_flight_ = nullptr;
  // A cancelled call must not look like a server failure worth retrying elsewhere.
  if (cancelled_) return Closed();
  return s;
}

bool TabletScanner::Cancelled() {
  absl::MutexLock l(&mu_);
  return cancelled_;
}

void TabletScanner::Cancel() {
  absl::MutexLock l(&mu_);
  cancelled_ = true;
  if (in_flight_ != nullptr) in_flight_->TryCancel();
  if (frame_in_flight_ != nullptr) frame_in_flight_->Cancel();
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

absl::Status TabletScanner::Open(absl::Time deadline, uint64_t limit) {
  scanner_id_.clear();
  last_primary_key_.clear();
  range_dropped_ = false;
  return NewScan(deadline, limit);
}

absl::Status TabletScanner::NewScan(absl::Time deadline, uint64_t limit) {
  const ScanConfig& c = *config_;
  Backoff backoff(deadline);
  // Each attempt waits a part of the time: a replica that stopped answering is left for the next.
  const absl::Duration attempt_timeout = AttemptTimeout(deadline - absl::Now(), kScanAttemptFloor);
  absl::Status last;
  for (;;) {
    if (Cancelled()) return Closed();
    const std::vector<ReplicaLocation> replicas = tablet_->ReplicasInOrder();
    if (replicas.empty()) {
      last = absl::UnavailableError(StrCat("tablet ", tablet_->tablet_id(), " has no replica"));
      c.client->meta_cache->Invalidate(c.locations, tablet_.get());
    }
    for (const ReplicaLocation& r : replicas) {
      pb::ScanRequestPB req;
      pb::NewScanRequestPB* n = req.mutable_new_scan_request();
      n->set_tablet_id(tablet_->tablet_id());
      if (c.aggregates != nullptr) {
        c.aggregates->ToPB(n);
        // The input columns with the types this client knows (the server checks them).
        for (const std::string& name : c.aggregates->input_columns()) {
          const int idx = c.schema->find_column(name);
          basalt::Schema::ColumnToPB(c.schema->column(idx), c.schema->column_id(idx),
                                     c.schema->is_key_column(idx), n->add_projected_columns());
        }
      } else {
        for (int idx : c.projection) {
          basalt::Schema::ColumnToPB(c.schema->column(idx), c.schema->column_id(idx),
                                     c.schema->is_key_column(idx), n->add_projected_columns());
        }
      }
      for (const ColumnPredicate& p : c.predicates) p.ToPB(n->add_predicates());
      n->set_start_primary_key(c.lower_key);
      n->set_stop_primary_key(c.upper_key);
      n->set_read_mode(static_cast<pb::ReadModePB>(c.read_mode));
      n->set_snap_timestamp(c.snapshot);
      n->set_propagated_timestamp(c.client->latest_observed_timestamp.load());
      n->set_ordered(c.ordered);
      n->set_limit(limit);
      n->set_last_primary_key(last_primary_key_);
      req.set_batch_size_bytes(c.batch_size);
      auto resp = std::make_unique<pb::ScanResponsePB>();
      absl::Status s =
          Call(r.address, req, std::min(deadline, absl::Now() + attempt_timeout), resp.get());
      if (s.ok()) {
        call_seq_ = 0;
        Accept(r.address, std::move(resp));
        return absl::OkStatus();
      }
      if (Cancelled()) return s;
      last = absl::Status(s.code(), StrCat("scanning tablet ", tablet_->tablet_id(), " on ",
                                           r.address, ": ", s.message()));
      if (!IsRetriable(s)) return last;
      auto detail = GetErrorDetail(s);
      if (detail.has_value() && detail->code() == pb::ErrorDetailPB::TABLET_NOT_FOUND) {
        c.client->meta_cache->Invalidate(c.locations, tablet_.get());
      } else if (!detail.has_value() || detail->code() == pb::ErrorDetailPB::TABLET_FAILED) {
        tablet_->MarkFailed(r.address);  // Another replica serves it.
      }
      if (absl::Now() >= deadline) break;
    }
    if (!backoff.Sleep()) return TimedOut("Scan", backoff.attempts() + 1, last);
    if (Cancelled()) return Closed();
    if (!tablet_->IsFresh(CoarseWallNanos())) {
      // Locations changed (or expired): look the partition up again. A different partition
      // there is not this tablet's: it stays (a retried Open must not scan another range).
      const Partition& old = tablet_->partition();
      BASALT_ASSIGN_OR_RETURN(
          std::shared_ptr<RemoteTablet> fresh,
          c.client->meta_cache->LookupOrNext(c.locations, old.partition_key_start(), deadline));
      if (fresh != nullptr && fresh->partition() == old) {
        tablet_ = std::move(fresh);
        continue;
      }
      // Its range partition was dropped (the cached location predates the drop) when no tablet
      // covers any of its range now: the table has no rows there, so a tablet not yet read
      // from is skipped. Anything else (a resumed scan, a range re-created differently) fails.
      const bool uncovered =
          fresh == nullptr || (!old.partition_key_end().empty() &&
                               fresh->partition().partition_key_start() >= old.partition_key_end());
      if (uncovered && last_primary_key_.empty()) {
        range_dropped_ = true;
        has_more_ = false;
        return absl::OkStatus();
      }
      return absl::NotFoundError("the tablet being scanned was dropped");
    }
  }
}

absl::Status TabletScanner::Continue(absl::Time deadline, uint64_t limit) {
  Backoff backoff(deadline);
  // A fault-tolerant scan resumes elsewhere, so its attempts wait only a part of the time; any
  // other continues on this server only and waits for it to the deadline.
  const absl::Time attempt_deadline =
      config_->fault_tolerant
          ? std::min(deadline,
                     absl::Now() + AttemptTimeout(deadline - absl::Now(), kScanAttemptFloor))
          : deadline;
  for (;;) {
    pb::ScanRequestPB req;
    req.set_scanner_id(scanner_id_);
    req.set_call_seq_id(call_seq_);
    req.set_batch_size_bytes(config_->batch_size);
    auto resp = std::make_unique<pb::ScanResponsePB>();
    absl::Status s = Call(server_, req, attempt_deadline, resp.get());
    if (s.ok()) {
      call_seq_++;
      Accept(server_, std::move(resp));
      return absl::OkStatus();
    }
    if (Cancelled()) return s;
    s = absl::Status(s.code(), StrCat("scanning tablet ", tablet_->tablet_id(), " on ", server_,
                                      ": ", s.message()));
    if (!IsRetriable(s)) return s;
    if (config_->fault_tolerant) {
      // Resume on another replica after the last key returned, at the same snapshot.
      tablet_->MarkFailed(server_);
      scanner_id_.clear();
      return NewScan(deadline, limit);
    }
    auto detail = GetErrorDetail(s);
    const bool transient =
        detail.has_value() && (detail->code() == pb::ErrorDetailPB::SERVER_OVERLOADED ||
                               detail->code() == pb::ErrorDetailPB::TABLET_NOT_RUNNING);
    if (!transient || !backoff.Sleep()) return s;
  }
}

absl::Status SendKeepAlive(ClientData* client, const std::string& server,
                           const std::string& scanner_id, absl::Time deadline) {
  pb::ScannerKeepAliveRequestPB req;
  req.set_scanner_id(scanner_id);
  pb::ScannerKeepAliveResponsePB resp;
  std::string answer;
  if (std::optional<absl::Status> frame =
          client->frames->Call(server, pb::FRAME_SCANNER_KEEP_ALIVE, req, deadline, &answer)) {
    return *frame;  // The response message has no fields.
  }
  auto stub = pb::TabletServerService::NewStub(client->Channel(server));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  return FromGrpcStatus(stub->ScannerKeepAlive(&ctx, req, &resp));
}

absl::Status TabletScanner::KeepAlive(absl::Time deadline) {
  if (scanner_id_.empty() || !has_more_) return absl::OkStatus();
  return SendKeepAlive(config_->client, server_, scanner_id_, deadline);
}

void TabletScanner::Close() {
  if (scanner_id_.empty() || !has_more_) return;
  pb::ScanRequestPB req;
  req.set_scanner_id(scanner_id_);
  req.set_close_scanner(true);
  pb::ScanResponsePB resp;
  // Best effort: the server expires it anyway.
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  if (!config_->client->frames->Call(server_, pb::FRAME_SCAN, req, deadline, &frame_answer_)) {
    auto stub = pb::TabletServerService::NewStub(config_->client->Channel(server_));
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(deadline));
    (void)stub->Scan(&ctx, req, &resp);
  }
  scanner_id_.clear();
  has_more_ = false;
}

}  // namespace basalt::client::internal
