#include "client/tablet_writer.h"

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "client/client_internal.h"
#include "client/frame_targets.h"
#include "client/meta_cache.h"
#include "client/write_schema.h"
#include "common/arena.h"
#include "common/row_operations.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "grpcpp/channel.h"
#include "proto/tserver.grpc.pb.h"
#include "rpc/rpc_status.h"

namespace basalt::client::internal {

namespace {

// What to do after a failed Write attempt: retry at once (a leader hint), back off and try the
// next replica, back off and retry the same replica (busy or starting), re-encode the rows for
// the table's current schema (it was altered), or give up.
enum class Next { kRetryNow, kBackoff, kBackoffSame, kNewSchema, kFail };

// The rows a Write request carries: the batch's own (moved into the request and given back), or
// their re-encoding for a newer version of the table's schema (write_schema.h), whose operations
// map back to the batch's by index.
class RequestRows {
 public:
  RequestRows(WriteBatch* batch, pb::WriteRequestPB* req) : batch_(batch), req_(req) {}
  ~RequestRows() { GiveBack(); }
  RequestRows(const RequestRows&) = delete;
  RequestRows& operator=(const RequestRows&) = delete;

  // Sets the request's schema to `ws` and its rows to the batch's operations encoded for it.
  // The operations `ws` cannot hold are left out (failures()). INVALID_ARGUMENT if the batch
  // does not decode.
  absl::Status Use(std::shared_ptr<const WriteSchema> ws) {
    GiveBack();
    const basalt::Schema& own = Access::Internal(batch_->table->schema());
    pb::RowOperationsPB* ops = req_->mutable_row_operations();
    kept_.clear();
    failed_.clear();
    if (ws->schema->version() == own.version()) {
      ops->set_rows(std::move(batch_->rows));
      ops->set_indirect_data(std::move(batch_->indirect));
      moved_ = true;
      num_ops_ = batch_->num_ops;
    } else {
      BASALT_ASSIGN_OR_RETURN(ReencodedRows r,
                              ReencodeRows(own, *ws->schema, batch_->rows, batch_->indirect));
      ops->set_rows(std::move(r.rows));
      ops->set_indirect_data(std::move(r.indirect));
      kept_ = std::move(r.kept);
      failed_ = std::move(r.failed);
      num_ops_ = static_cast<int>(kept_.size());
    }
    *req_->mutable_schema() = *ws->pb;
    version_ = ws->schema->version();
    return absl::OkStatus();
  }
  int num_ops() const { return num_ops_; }
  uint32_t version() const { return version_; }
  // The batch's index of the request's operation i.
  int BatchIndex(int i) const { return moved_ ? i : kept_[i]; }
  // The batch's operations the request leaves out, with why.
  const std::vector<RowError>& failures() const { return failed_; }

 private:
  void GiveBack() {
    if (!moved_) return;
    batch_->rows = std::move(*req_->mutable_row_operations()->mutable_rows());
    batch_->indirect = std::move(*req_->mutable_row_operations()->mutable_indirect_data());
    moved_ = false;
  }

  WriteBatch* const batch_;
  pb::WriteRequestPB* const req_;
  bool moved_ = false;
  int num_ops_ = 0;
  uint32_t version_ = 0;
  std::vector<int> kept_;
  std::vector<RowError> failed_;
};

// Forgets the batch's tablet location and looks its partition up again. False (with *fail set)
// when that fails or the partition no longer exists.
bool Relocate(ClientData* client, WriteBatch* batch, absl::Time deadline, absl::Status* fail) {
  auto* td = Access::Data(batch->table.get());
  TableLocations* locations = td->locations.get();
  RemoteTablet* tablet = batch->tablet.get();
  client->meta_cache->Invalidate(locations, tablet);
  const Partition old = tablet->partition();
  auto fresh = client->meta_cache->Lookup(locations, old.partition_key_start(), deadline);
  if (!fresh.ok()) {
    *fail = fresh.status();
    return false;
  }
  if (!((*fresh)->partition() == old)) {
    *fail = absl::NotFoundError(
        StrCat("tablet ", tablet->tablet_id(), " is gone and its partition no longer exists"));
    return false;
  }
  batch->tablet = *std::move(fresh);
  return true;
}

// One attempt's outcome handling: updates the tablet's replica knowledge and decides.
Next Classify(ClientData* client, WriteBatch* batch, const ReplicaLocation& target,
              const absl::Status& s, absl::Time deadline, bool* possibly_applied,
              absl::Status* fail) {
  auto detail = GetErrorDetail(s);
  const auto code = detail.has_value() ? detail->code() : pb::ErrorDetailPB::UNKNOWN_ERROR;
  RemoteTablet* tablet = batch->tablet.get();
  // The server had handed the batch to Raft: if no later attempt gets its outcome, it may have
  // been applied.
  if (detail.has_value() && detail->in_doubt()) *possibly_applied = true;
  switch (code) {
    case pb::ErrorDetailPB::NOT_THE_LEADER:
      if (!detail->leader_uuid().empty() && detail->leader_uuid() != target.uuid) {
        if (tablet->MarkLeader(detail->leader_uuid())) return Next::kRetryNow;
        // A leader the cached locations do not list (a replica added since, by a move or a
        // repair): without fresh locations every known replica would keep answering this.
        if (!Relocate(client, batch, deadline, fail)) return Next::kFail;
        // The master may not list it yet either: then ask again after a backoff.
        return batch->tablet->MarkLeader(detail->leader_uuid()) ? Next::kRetryNow : Next::kBackoff;
      }
      tablet->MarkFollower(target.address);
      return Next::kBackoff;
    case pb::ErrorDetailPB::TABLET_NOT_RUNNING:
    case pb::ErrorDetailPB::SERVER_OVERLOADED:
    case pb::ErrorDetailPB::DISK_FULL:  // Until space is freed or the deadline.
      return Next::kBackoffSame;
    case pb::ErrorDetailPB::TABLET_NOT_FOUND:
    case pb::ErrorDetailPB::WRONG_SERVER_UUID:
      return Relocate(client, batch, deadline, fail) ? Next::kBackoff : Next::kFail;
    case pb::ErrorDetailPB::TABLET_FAILED:
      // This replica stopped (a storage fault); the others elect a leader without it and the
      // master replaces it. The batch may have been replicated before it failed.
      *possibly_applied = true;
      tablet->MarkFailed(target.address);
      return Next::kBackoff;
    default:
      break;
  }
  if (s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kCancelled ||
      s.code() == absl::StatusCode::kDeadlineExceeded) {
    // The server did not answer: it may have applied the batch before failing.
    *possibly_applied = true;
    tablet->MarkFailed(target.address);
    return Next::kBackoff;
  }
  // The tablet runs another schema version than the request's: the table was altered, or an
  // alter has not reached every tablet yet. Not applied (the server checks the request id first).
  if (code == pb::ErrorDetailPB::SCHEMA_MISMATCH) return Next::kNewSchema;
  *fail = s;
  return Next::kFail;
}

void CollectRowErrors(const pb::WriteResponsePB& resp, const RequestRows& rows,
                      WriteResult* result) {
  for (const auto& e : resp.per_row_errors()) {
    if (e.row_index() < 0 || e.row_index() >= rows.num_ops()) continue;
    absl::Status s = StatusFromPB(e.error());
    if (s.ok()) s = absl::UnknownError("the server reported an error without a status");
    result->row_errors.push_back({rows.BatchIndex(e.row_index()), std::move(s)});
  }
}

// One Write RPC to the server at `address`: over its frame RPC port when it has one, else gRPC.
absl::Status CallWrite(ClientData* client, const std::string& address,
                       const pb::WriteRequestPB& req, absl::Time deadline,
                       pb::WriteResponsePB* resp) {
  std::string answer;
  if (std::optional<absl::Status> frame =
          client->frames->Call(address, pb::FRAME_WRITE, req, deadline, &answer)) {
    if (!frame->ok()) return *frame;
    if (!resp->ParseFromString(answer)) {
      return absl::DataLossError("the server's Write response does not parse");
    }
    return absl::OkStatus();
  }
  auto stub = pb::TabletServerService::NewStub(client->Channel(address));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  return FromGrpcStatus(stub->Write(&ctx, req, resp));
}

// SendWriteBatch's attempts, with `req` carrying `rows` (at least one operation).
void SendRequest(ClientData* client, WriteBatch* batch, RequestRows* rows,
                 pb::WriteRequestPB* request, absl::Time deadline, WriteResult* result) {
  pb::WriteRequestPB& req = *request;
  // Every attempt carries the same request id: a server that applied an earlier attempt answers
  // with its first answer instead of applying the rows again.
  uint64_t seq = client->requests.Start();
  absl::Cleanup complete = [client, &seq] { client->requests.Complete(seq); };
  req.mutable_request_id()->set_client_id(client->requests.client_id());
  req.mutable_request_id()->set_seq_no(seq);
  Backoff backoff(deadline);
  const absl::Duration attempt_timeout = AttemptTimeout(deadline - absl::Now());
  std::vector<std::string> tried;
  absl::Status last;
  int quick_retries = 0;
  int logged_at = 0;  // The backoff count last logged.
  for (;;) {
    req.set_tablet_id(batch->tablet->tablet_id());
    std::vector<ReplicaLocation> replicas = batch->tablet->ReplicasInOrder();
    auto it = std::find_if(replicas.begin(), replicas.end(), [&](const ReplicaLocation& r) {
      return std::find(tried.begin(), tried.end(), r.address) == tried.end();
    });
    if (it == replicas.end() && !replicas.empty()) {
      tried.clear();
      it = replicas.begin();
    }
    Next next = Next::kBackoff;
    if (it != replicas.end()) {
      const ReplicaLocation target = *it;
      // A leader that stopped answering (paused, cut off) is left for the next replica well
      // before the deadline; retrying elsewhere is safe: the request id makes it exactly-once.
      const absl::Time attempt_deadline = std::min(deadline, absl::Now() + attempt_timeout);
      req.set_propagated_timestamp(client->latest_observed_timestamp.load());
      req.mutable_request_id()->set_first_incomplete_seq_no(client->requests.FirstIncomplete());
      pb::WriteResponsePB resp;
      absl::Status s = CallWrite(client, target.address, req, attempt_deadline, &resp);
      if (s.ok()) {
        batch->tablet->MarkLeader(target.uuid);
        batch->tablet->MarkSucceeded(target.address);
        client->ObserveTimestamp(resp.timestamp());
        CollectRowErrors(resp, *rows, result);
        break;
      }
      last = absl::Status(s.code(), StrCat("tablet ", batch->tablet->tablet_id(), " on ",
                                           target.address, ": ", s.message()));
      absl::Status fail;
      next = Classify(client, batch, target, s, deadline, &result->possibly_applied, &fail);
      // A batch that keeps failing says so (at 8, 16, 32, ... backoffs): otherwise a write that
      // retries until the session timeout is silent until then.
      if (const int n = backoff.attempts();
          n >= 8 && (n & (n - 1)) == 0 && n != logged_at && next != Next::kFail) {
        logged_at = n;
        LOG(WARNING) << "write of " << rows->num_ops() << " row(s), schema version "
                     << rows->version() << ", still retried after " << n
                     << " backoffs; last error: " << last;
      }
      bool same_target = next == Next::kBackoffSame;
      if (next == Next::kNewSchema) {
        const auto mismatch = GetErrorDetail(s);
        const uint32_t tablet_version = mismatch.has_value() ? mismatch->schema_version() : 0;
        if (tablet_version <= rows->version()) {
          // This replica is behind the rows (an alter it has not applied yet, or a deposed
          // leader): a copy of this request may still apply elsewhere, so it is retried as it
          // is (same bytes, same id: an answer's row numbers are the request's), after a backoff
          // and at the next replica.
          next = Next::kBackoff;
        } else {
          // A replica past the version sent: no copy of this request ever applies (versions only
          // grow along the log, and a copy applied before the alter would have been answered
          // from the request id, which the server checks first). The rows go encoded for the
          // table's current schema, as a new request.
          auto ws = RefreshWriteSchema(client, *batch->table, deadline);
          if (ws.ok()) fail = rows->Use(*ws);
          if (!ws.ok() || !fail.ok()) {
            const absl::Status& why = ws.ok() ? fail : ws.status();
            result->status = absl::Status(
                why.code(), StrCat(last.message(),
                                   "; the table's current schema is unavailable: ", why.message()));
            break;
          }
          if (rows->num_ops() == 0) break;  // Every row failed alone (never applied).
          client->requests.Complete(seq);
          seq = client->requests.Start();
          req.mutable_request_id()->set_seq_no(seq);
          next = Next::kRetryNow;
          same_target = true;
        }
      }
      // Leader hints that keep bouncing between replicas are retried with backoff too.
      if (next == Next::kRetryNow && ++quick_retries > 3) next = Next::kBackoff;
      if (next != Next::kRetryNow) quick_retries = 0;
      if (next == Next::kFail) {
        result->status = fail;
        break;
      }
      if (!same_target) tried.push_back(target.address);
    } else {
      // The master listed no replica (yet): ask it again after a backoff.
      last = absl::UnavailableError(
          StrCat("tablet ", batch->tablet->tablet_id(), " has no known replica"));
      absl::Status fail;
      if (!Relocate(client, batch, deadline, &fail)) {
        result->status = fail;
        break;
      }
    }
    if (absl::Now() >= deadline || (next != Next::kRetryNow && !backoff.Sleep())) {
      result->status = TimedOut("Write", backoff.attempts() + 1, last);
      break;
    }
  }
}

}  // namespace

WriteResult SendWriteBatch(ClientData* client, WriteBatch* batch, absl::Time deadline) {
  WriteResult result;
  pb::WriteRequestPB req;
  {
    RequestRows rows(batch, &req);
    absl::Status s = rows.Use(WriteSchemaOf(*batch->table));
    if (!s.ok()) {
      result.status = s;
    } else if (rows.num_ops() > 0) {
      SendRequest(client, batch, &rows, &req, deadline, &result);
    }
    // The operations the request left out fail alone.
    for (const RowError& e : rows.failures()) result.row_errors.push_back(e);
  }  // The batch has its rows back.
  return result;
}

absl::Status EncodeOperation(const WriteOperation& op, std::string* rows, std::string* indirect) {
  const basalt::Schema& schema = Access::Internal(op.table()->schema());
  const PartialRow& row = op.row();
  const auto type = static_cast<RowOperationType>(op.type());
  BASALT_RETURN_IF_ERROR_PREPEND(
      CheckRowOperationColumns(type, schema, Access::IsSet(row), Access::IsNull(row)),
      op.ToString());
  RowOperationsEncoder enc(rows, indirect);
  enc.Add(type, DecodedRowOperation{type, &schema, Access::IsSet(row), Access::IsNull(row),
                                    Access::RowData(row)});
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<WriteOperation>>> DecodeOperations(
    const std::shared_ptr<Table>& table, std::string_view rows, std::string_view indirect,
    const std::vector<int>& indexes) {
  const basalt::Schema& schema = Access::Internal(table->schema());
  Arena arena(64 * 1024);
  RowOperationsDecoder decoder(&schema, &arena);
  std::vector<DecodedRowOperation> ops;
  BASALT_RETURN_IF_ERROR(decoder.Decode(rows, indirect, &ops));
  std::vector<std::unique_ptr<WriteOperation>> out;
  for (int idx : indexes) {
    if (idx < 0 || idx >= static_cast<int>(ops.size())) continue;
    const DecodedRowOperation& op = ops[idx];
    auto w = Access::NewOperation(table, static_cast<WriteOperation::Type>(op.type));
    for (int c = 0; c < schema.num_columns(); c++) {
      if (!op.IsSet(c)) continue;
      if (op.IsNull(c)) {
        Access::SetNullUnchecked(w->mutable_row(), c);
      } else {
        Access::SetCell(w->mutable_row(), c, op.cell(c));
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace basalt::client::internal
