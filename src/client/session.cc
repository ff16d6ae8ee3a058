#include "client/session.h"

#include <algorithm>
#include <deque>
#include <set>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/client_internal.h"
#include "client/meta_cache.h"
#include "client/tablet_writer.h"
#include "client/thread_pool.h"
#include "common/clock.h"
#include "common/row_operations.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"

namespace basalt::client {

using internal::Access;
using internal::RemoteTablet;
using internal::WriteBatch;
using internal::WriteResult;

namespace internal {

namespace {
constexpr size_t kDefaultBufferSpace = 16 << 20;
constexpr size_t kDefaultErrorSpace = 16 << 20;
// What one collected error is charged against the error buffer besides its row's bytes.
constexpr size_t kErrorOverheadBytes = 256;
}  // namespace

// The state of a session. The public Session forwards to it; write tasks on the client's thread
// pool hold a shared_ptr to it, so it may outlive the Session by the instant a task takes to
// return (it then holds no Table or Client reference: see Session::~Session).
//
// Lock order: mu before the client's ThreadPool lock. No lock is held across an RPC or a master
// lookup. Thread-safe.
struct SessionData : std::enable_shared_from_this<SessionData> {
  explicit SessionData(ClientData* c) : client(c), timeout(c->rpc_timeout) {}

  // Operations of one table for one tablet, encoded, not yet sent. Buffers live as long as the
  // session (a cut swaps their strings for recycled ones), so pointers to them stay valid.
  struct Buffer {
    std::shared_ptr<Table> table;
    std::shared_ptr<RemoteTablet> tablet;
    std::string rows;
    std::string indirect;
    int num_ops = 0;
  };
  // A session's copy of a table's tablet map (TableLocations::Snapshot), with each tablet's
  // buffer, so routing a row takes no lock besides mu.
  struct Routes {
    uint64_t version = UINT64_MAX;
    std::vector<std::shared_ptr<RemoteTablet>> tablets;  // By partition key start.
    // Parallel: each tablet's partition key start (owned by `tablets`), searched without
    // touching the tablets themselves.
    std::vector<std::string_view> starts;
    std::vector<Buffer*> buffers;  // Parallel; null until first used.
  };
  // Batches for one tablet: at most one in flight, so operations on a row stay in order.
  struct TabletQueue {
    bool sending = false;
    std::deque<std::unique_ptr<WriteBatch>> waiting;
  };
  struct FlushWaiter {
    uint64_t seq_limit;  // Done when no batch with seq < seq_limit is outstanding.
    uint64_t errors_before;
    std::function<void(absl::Status)> callback;
  };
  // (Table::Data*, tablet id): by id, not by RemoteTablet, so that a relocated tablet (a new
  // RemoteTablet for the same id) keeps using the same buffer and its operations stay in order.
  using BufferKey = std::pair<const void*, std::string>;

  absl::Status Apply(std::unique_ptr<WriteOperation> op) ABSL_LOCKS_EXCLUDED(mu);
  absl::Status TryApply(std::unique_ptr<WriteOperation>* op, bool* applied) ABSL_LOCKS_EXCLUDED(mu);
  // Checks `op`'s columns for its type and returns its partition key.
  absl::StatusOr<std::string> CheckedPartitionKey(const WriteOperation* op);
  // Sends `op` alone, within `deadline` (the one its tablet lookup had).
  absl::Status ApplySync(std::unique_ptr<WriteOperation> op, std::shared_ptr<RemoteTablet> tablet,
                         absl::Time deadline);
  void FlushAsync(std::function<void(absl::Status)> cb) ABSL_LOCKS_EXCLUDED(mu);
  absl::Status Flush() ABSL_LOCKS_EXCLUDED(mu);
  absl::Status SetFlushMode(Session::FlushMode m) ABSL_LOCKS_EXCLUDED(mu);
  void StopFlusher() ABSL_LOCKS_EXCLUDED(mu);

  // Moves one tablet's buffer into a batch and queues it for sending.
  void CutLocked(Buffer* buf) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void CutAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The buffer for the row with `pkey` if its tablet is cached and fresh, else nullptr.
  Buffer* RouteLocked(const WriteOperation& op, const std::string& pkey, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  Buffer* BufferForLocked(const WriteOperation& op, std::shared_ptr<RemoteTablet> tablet)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Encodes `op` into `buf`, waiting for room first (backpressure) and cutting batches as the
  // flush mode says.
  absl::Status BufferLocked(Buffer* buf, const WriteOperation& op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // An empty string with capacity left by an earlier batch (no page faults, no regrowth).
  std::string TakeSpareLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void ReturnSpareLocked(std::string s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void SubmitLocked(std::unique_ptr<WriteBatch> batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void RunBatch(WriteBatch* batch) ABSL_LOCKS_EXCLUDED(mu);
  // Turns a batch's failures into Errors (decodes the failed rows back into operations).
  std::vector<std::unique_ptr<Error>> MakeErrors(const WriteBatch& batch, const WriteResult& r);
  // Collects `errors` (as space allows) and counts `num_failed` failed operations (which
  // Flush reports even when some could not be collected).
  void AddErrorsLocked(std::vector<std::unique_ptr<Error>> errors, size_t num_failed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Waiters whose batches are all done, removed from flush_waiters.
  std::vector<std::pair<FlushWaiter, absl::Status>> ReadyWaitersLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void FlusherLoop() ABSL_LOCKS_EXCLUDED(mu);
  size_t BatchBytesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return std::max<size_t>(64 << 10, buffer_space / 8);
  }

  ClientData* const client;  // Outlives every use (see the struct comment).

  mutable absl::Mutex mu;
  Session::FlushMode mode ABSL_GUARDED_BY(mu) = Session::AUTO_FLUSH_SYNC;
  size_t buffer_space ABSL_GUARDED_BY(mu) = kDefaultBufferSpace;
  double watermark ABSL_GUARDED_BY(mu) = 0.5;
  absl::Duration flush_interval ABSL_GUARDED_BY(mu) = absl::Seconds(1);
  absl::Duration timeout ABSL_GUARDED_BY(mu);
  size_t error_space ABSL_GUARDED_BY(mu) = kDefaultErrorSpace;
  bool closed ABSL_GUARDED_BY(mu) = false;

  absl::node_hash_map<BufferKey, Buffer> buffers ABSL_GUARDED_BY(mu);
  absl::node_hash_map<const void*, Routes> routes ABSL_GUARDED_BY(mu);  // By Table::Data*.
  // The last table routed and its entry in `routes` (whose nodes stay put): rows of one table
  // follow each other.
  const void* last_routed_table ABSL_GUARDED_BY(mu) = nullptr;
  Routes* last_routes ABSL_GUARDED_BY(mu) = nullptr;
  std::vector<std::string> spare ABSL_GUARDED_BY(mu);
  size_t buffered_bytes ABSL_GUARDED_BY(mu) = 0;
  int buffered_ops ABSL_GUARDED_BY(mu) = 0;
  absl::Time oldest_buffered ABSL_GUARDED_BY(mu);
  size_t inflight_bytes ABSL_GUARDED_BY(mu) = 0;
  int inflight_ops ABSL_GUARDED_BY(mu) = 0;
  absl::flat_hash_map<std::string, TabletQueue> queues ABSL_GUARDED_BY(mu);
  uint64_t next_seq ABSL_GUARDED_BY(mu) = 0;
  std::set<uint64_t> outstanding ABSL_GUARDED_BY(mu);
  std::vector<FlushWaiter> flush_waiters ABSL_GUARDED_BY(mu);

  std::vector<std::unique_ptr<Error>> errors ABSL_GUARDED_BY(mu);
  size_t error_bytes ABSL_GUARDED_BY(mu) = 0;
  bool errors_overflowed ABSL_GUARDED_BY(mu) = false;
  uint64_t total_errors ABSL_GUARDED_BY(mu) = 0;

  // The background flusher sleeps on its own mutex: a waiter with a condition on `mu` would
  // send every unlock of `mu` (one per Apply) down the slow path.
  std::thread flusher;  // Started and joined by the thread calling SetFlushMode / Close.
  absl::Mutex flusher_mu;
  bool stop_flusher ABSL_GUARDED_BY(flusher_mu) = false;
};

absl::StatusOr<std::string> SessionData::CheckedPartitionKey(const WriteOperation* op) {
  if (op == nullptr) return absl::InvalidArgumentError("null operation");
  auto* td = Access::Data(op->table());
  const basalt::Schema& schema = Access::Internal(td->schema);
  const PartialRow& row = op->row();
  BASALT_RETURN_IF_ERROR_PREPEND(
      CheckRowOperationColumns(static_cast<RowOperationType>(op->type()), schema,
                               Access::IsSet(row), Access::IsNull(row)),
      op->ToString());
  return td->partition_schema.PartitionKey(schema, Access::RowData(row));
}

absl::Status SessionData::TryApply(std::unique_ptr<WriteOperation>* op, bool* applied) {
  *applied = false;
  absl::StatusOr<std::string> pkey = CheckedPartitionKey(op->get());
  if (!pkey.ok()) {
    op->reset();  // Consumed, as by Apply.
    return pkey.status();
  }
  absl::MutexLock l(&mu);
  if (closed || mode == Session::AUTO_FLUSH_SYNC) return absl::OkStatus();
  Buffer* buf = RouteLocked(**op, *pkey, CoarseWallNanos());
  // Unrouted rows need a master lookup; a full buffer in AUTO_FLUSH_BACKGROUND, a wait.
  if (buf == nullptr ||
      (mode == Session::AUTO_FLUSH_BACKGROUND && buffered_bytes + inflight_bytes >= buffer_space)) {
    return absl::OkStatus();
  }
  *applied = true;
  absl::Status s = BufferLocked(buf, **op);
  op->reset();
  return s;
}

absl::Status SessionData::Apply(std::unique_ptr<WriteOperation> op) {
  BASALT_ASSIGN_OR_RETURN(const std::string pkey, CheckedPartitionKey(op.get()));
  auto* td = Access::Data(op->table());
  Session::FlushMode m;
  absl::Duration t;
  {
    absl::MutexLock l(&mu);
    if (closed) return absl::FailedPreconditionError("the session is closed");
    if (mode != Session::AUTO_FLUSH_SYNC) {
      // The fast path: the tablet is in the session's routing copy.
      Buffer* buf = RouteLocked(*op, pkey, CoarseWallNanos());
      if (buf != nullptr) return BufferLocked(buf, *op);
    }
    m = mode;
    t = timeout;
  }
  // One deadline for the lookup and, for AUTO_FLUSH_SYNC, the send: Apply never takes longer than
  // the session timeout.
  const absl::Time deadline = absl::Now() + t;
  auto found = client->meta_cache->Lookup(td->locations.get(), pkey, deadline);
  if (!found.ok()) {
    absl::Status s = found.status();
    std::vector<std::unique_ptr<Error>> errs;
    errs.push_back(Access::MakeError(s, std::move(op), false));
    absl::MutexLock l(&mu);
    AddErrorsLocked(std::move(errs), 1);
    return m == Session::AUTO_FLUSH_SYNC ? s : absl::OkStatus();
  }
  if (m == Session::AUTO_FLUSH_SYNC) return ApplySync(std::move(op), *std::move(found), deadline);
  absl::MutexLock l(&mu);
  if (closed) return absl::FailedPreconditionError("the session is closed");
  Buffer* buf = RouteLocked(*op, pkey, CoarseWallNanos());
  if (buf == nullptr) buf = BufferForLocked(*op, *std::move(found));
  return BufferLocked(buf, *op);
}

SessionData::Buffer* SessionData::RouteLocked(const WriteOperation& op, const std::string& pkey,
                                              int64_t now) {
  auto* td = Access::Data(op.table());
  if (td != last_routed_table) {
    last_routes = &routes[td];
    last_routed_table = td;
  }
  Routes& r = *last_routes;
  if (r.version != td->locations->version()) {
    r.tablets = td->locations->Snapshot(&r.version);
    r.starts.clear();
    for (const auto& t : r.tablets) r.starts.push_back(t->partition().partition_key_start());
    r.buffers.assign(r.tablets.size(), nullptr);
  }
  auto it = std::upper_bound(r.starts.begin(), r.starts.end(), std::string_view(pkey));
  if (it == r.starts.begin()) return nullptr;
  const size_t idx = (it - r.starts.begin()) - 1;
  const RemoteTablet* tablet = r.tablets[idx].get();
  if (!tablet->partition().Contains(pkey) || !tablet->IsFresh(now)) return nullptr;
  if (r.buffers[idx] == nullptr) r.buffers[idx] = BufferForLocked(op, r.tablets[idx]);
  return r.buffers[idx];
}

SessionData::Buffer* SessionData::BufferForLocked(const WriteOperation& op,
                                                  std::shared_ptr<RemoteTablet> tablet) {
  Buffer& buf = buffers[BufferKey{Access::Data(op.table()), tablet->tablet_id()}];
  if (buf.tablet != tablet) buf.tablet = std::move(tablet);  // Fresh locations win.
  if (buf.table == nullptr) {
    buf.table = Access::SharedTable(op);
  }
  return &buf;
}

absl::Status SessionData::BufferLocked(Buffer* buf, const WriteOperation& op) {
  if (mode == Session::MANUAL_FLUSH && buffered_bytes + inflight_bytes >= buffer_space) {
    return absl::ResourceExhaustedError(
        StrCat("the session's mutation buffer (", buffer_space,
               " bytes) is full; Flush() or raise SetMutationBufferSpace()"));
  }
  // Backpressure: wait until sends in flight make room.
  while (buffered_bytes + inflight_bytes >= buffer_space) {
    if (buffered_bytes > 0) CutAllLocked();
    mu.Await(absl::Condition(
        +[](SessionData* d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(d->mu) {
          return d->buffered_bytes + d->inflight_bytes < d->buffer_space || d->closed;
        },
        this));
    if (closed) return absl::FailedPreconditionError("the session is closed");
  }
  const auto type = static_cast<RowOperationType>(op.type());
  const PartialRow& row = op.row();
  const size_t before = buf->rows.size() + buf->indirect.size();
  RowOperationsEncoder enc(&buf->rows, &buf->indirect);
  enc.Add(type, DecodedRowOperation{type, &Access::Internal(op.table()->schema()),
                                    Access::IsSet(row), Access::IsNull(row), Access::RowData(row)});
  buf->num_ops++;
  const size_t buf_bytes = buf->rows.size() + buf->indirect.size();
  if (buffered_ops == 0) oldest_buffered = absl::Now();
  buffered_bytes += buf_bytes - before;
  buffered_ops++;
  if (mode == Session::AUTO_FLUSH_BACKGROUND) {
    if (buffered_bytes >= watermark * buffer_space) {
      CutAllLocked();
    } else if (buf_bytes >= BatchBytesLocked()) {
      CutLocked(buf);
    }
  }
  return absl::OkStatus();
}

std::string SessionData::TakeSpareLocked() {
  if (spare.empty()) return std::string();
  std::string s = std::move(spare.back());
  spare.pop_back();
  return s;
}

void SessionData::ReturnSpareLocked(std::string s) {
  if (spare.size() >= 64 || s.capacity() == 0) return;
  s.clear();
  spare.push_back(std::move(s));
}

absl::Status SessionData::ApplySync(std::unique_ptr<WriteOperation> op,
                                    std::shared_ptr<RemoteTablet> tablet, absl::Time deadline) {
  WriteBatch batch;
  batch.table = Access::SharedTable(*op);
  batch.tablet = std::move(tablet);
  BASALT_RETURN_IF_ERROR(internal::EncodeOperation(*op, &batch.rows, &batch.indirect));
  batch.num_ops = 1;
  WriteResult r = internal::SendWriteBatch(client, &batch, deadline);
  absl::Status s = r.status.ok() && !r.row_errors.empty() ? r.row_errors[0].status : r.status;
  if (s.ok()) return s;
  std::vector<std::unique_ptr<Error>> errs;
  // A per-row error is the row's answer: definite.
  errs.push_back(Access::MakeError(s, std::move(op), !r.status.ok() && r.possibly_applied));
  absl::MutexLock l(&mu);
  AddErrorsLocked(std::move(errs), 1);
  return s;
}

void SessionData::CutLocked(Buffer* buf) {
  if (buf->num_ops == 0) return;
  auto batch = std::make_unique<WriteBatch>();
  batch->table = buf->table;
  batch->tablet = buf->tablet;
  batch->rows = std::exchange(buf->rows, TakeSpareLocked());
  batch->indirect = std::exchange(buf->indirect, TakeSpareLocked());
  batch->num_ops = std::exchange(buf->num_ops, 0);
  const size_t bytes = batch->bytes();
  buffered_bytes -= bytes;
  buffered_ops -= batch->num_ops;
  inflight_bytes += bytes;
  inflight_ops += batch->num_ops;
  batch->seq = next_seq++;
  // From the cut (a Flush, a full buffer, the background flusher): time a batch spends queued
  // behind another batch of its tablet counts, so no batch completes later than this.
  batch->deadline = absl::Now() + timeout;
  outstanding.insert(batch->seq);
  SubmitLocked(std::move(batch));
}

void SessionData::CutAllLocked() {
  if (buffered_ops == 0) return;
  for (auto& [key, buf] : buffers) CutLocked(&buf);
}

void SessionData::SubmitLocked(std::unique_ptr<WriteBatch> batch) {
  batch->queue_key = batch->tablet->tablet_id();
  TabletQueue& q = queues[batch->queue_key];
  if (q.sending) {
    q.waiting.push_back(std::move(batch));
    return;
  }
  q.sending = true;
  std::shared_ptr<SessionData> self = shared_from_this();
  WriteBatch* raw = batch.release();
  client->pool->Submit([self, raw] { self->RunBatch(raw); });
}

void SessionData::RunBatch(WriteBatch* raw) {
  std::unique_ptr<WriteBatch> batch(raw);
  WriteResult r = internal::SendWriteBatch(client, batch.get(), batch->deadline);
  std::vector<std::unique_ptr<Error>> errs;
  if (!r.status.ok() || !r.row_errors.empty()) errs = MakeErrors(*batch, r);
  const std::string tablet_id = batch->queue_key;
  const size_t bytes = batch->bytes();
  const int ops = batch->num_ops;
  const uint64_t seq = batch->seq;
  std::string rows = std::move(batch->rows);
  std::string indirect = std::move(batch->indirect);
  batch.reset();  // Drops the Table reference before the session can be seen as idle.
  std::vector<std::pair<FlushWaiter, absl::Status>> ready;
  {
    absl::MutexLock l(&mu);
    ReturnSpareLocked(std::move(rows));
    ReturnSpareLocked(std::move(indirect));
    AddErrorsLocked(std::move(errs), r.status.ok() ? r.row_errors.size() : ops);
    inflight_bytes -= bytes;
    inflight_ops -= ops;
    outstanding.erase(seq);
    TabletQueue& q = queues[tablet_id];
    q.sending = false;
    if (!q.waiting.empty()) {
      std::unique_ptr<WriteBatch> next = std::move(q.waiting.front());
      q.waiting.pop_front();
      SubmitLocked(std::move(next));
    } else {
      queues.erase(tablet_id);
    }
    ready = ReadyWaitersLocked();
  }
  for (auto& [w, s] : ready) w.callback(s);
}

std::vector<std::unique_ptr<Error>> SessionData::MakeErrors(const WriteBatch& batch,
                                                            const WriteResult& r) {
  std::vector<int> indexes;
  std::vector<absl::Status> statuses;
  std::vector<bool> possibly_applied;
  if (!r.status.ok()) {
    for (int i = 0; i < batch.num_ops; i++) indexes.push_back(i);
    statuses.assign(batch.num_ops, r.status);
    possibly_applied.assign(batch.num_ops, r.possibly_applied);
    // Rows that failed on their own (a column the altered table dropped) say why; they were
    // never sent.
    for (const auto& e : r.row_errors) {
      if (e.index < 0 || e.index >= batch.num_ops) continue;
      statuses[e.index] = e.status;
      possibly_applied[e.index] = false;
    }
  } else {
    for (const auto& e : r.row_errors) {
      indexes.push_back(e.index);
      statuses.push_back(e.status);
      possibly_applied.push_back(false);
    }
  }
  std::vector<std::unique_ptr<Error>> out;
  auto ops = internal::DecodeOperations(batch.table, batch.rows, batch.indirect, indexes);
  if (!ops.ok()) {
    LOG(ERROR) << "cannot decode a failed write batch for error reporting: " << ops.status();
    return out;
  }
  for (size_t i = 0; i < ops->size(); i++) {
    out.push_back(Access::MakeError(statuses[i], std::move((*ops)[i]), possibly_applied[i]));
  }
  return out;
}

void SessionData::AddErrorsLocked(std::vector<std::unique_ptr<Error>> errs, size_t num_failed) {
  total_errors += num_failed;
  if (errs.size() < num_failed) errors_overflowed = true;
  for (auto& e : errs) {
    const size_t cost = kErrorOverheadBytes + e->failed_op().row().ToString().size() / 2;
    if (error_bytes + cost > error_space) {
      errors_overflowed = true;
      continue;
    }
    error_bytes += cost;
    errors.push_back(std::move(e));
  }
}

std::vector<std::pair<SessionData::FlushWaiter, absl::Status>> SessionData::ReadyWaitersLocked() {
  std::vector<std::pair<FlushWaiter, absl::Status>> ready;
  const uint64_t min_outstanding = outstanding.empty() ? UINT64_MAX : *outstanding.begin();
  for (auto it = flush_waiters.begin(); it != flush_waiters.end();) {
    if (it->seq_limit <= min_outstanding) {
      const uint64_t failed = total_errors - it->errors_before;
      absl::Status s = failed == 0 ? absl::OkStatus()
                                   : absl::UnknownError(StrCat(failed,
                                                               " write operation(s) failed; see "
                                                               "Session::GetPendingErrors()"));
      ready.emplace_back(std::move(*it), std::move(s));
      it = flush_waiters.erase(it);
    } else {
      ++it;
    }
  }
  return ready;
}

void SessionData::FlushAsync(std::function<void(absl::Status)> cb) {
  std::vector<std::pair<FlushWaiter, absl::Status>> ready;
  {
    absl::MutexLock l(&mu);
    CutAllLocked();
    flush_waiters.push_back({next_seq, total_errors, std::move(cb)});
    ready = ReadyWaitersLocked();
  }
  for (auto& [w, s] : ready) w.callback(s);
}

absl::Status SessionData::Flush() {
  absl::Notification done;
  absl::Status result;
  FlushAsync([&](absl::Status s) {
    result = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

absl::Status SessionData::SetFlushMode(Session::FlushMode m) {
  {
    absl::MutexLock l(&mu);
    if (buffered_ops > 0) {
      return absl::FailedPreconditionError("cannot change the flush mode with operations buffered");
    }
    if (m == mode) return absl::OkStatus();
    mode = m;
    if (m != Session::AUTO_FLUSH_BACKGROUND || flusher.joinable()) return absl::OkStatus();
  }
  {
    absl::MutexLock l(&flusher_mu);
    stop_flusher = false;
  }
  flusher = std::thread([this] { FlusherLoop(); });
  return absl::OkStatus();
}

void SessionData::FlusherLoop() {
  for (;;) {
    absl::Duration interval;
    {
      absl::MutexLock l(&mu);
      interval = flush_interval;
      if (mode == Session::AUTO_FLUSH_BACKGROUND && buffered_ops > 0 &&
          absl::Now() - oldest_buffered >= flush_interval) {
        CutAllLocked();
      }
    }
    absl::MutexLock l(&flusher_mu);
    flusher_mu.AwaitWithTimeout(absl::Condition(&stop_flusher), interval / 4);
    if (stop_flusher) return;
  }
}

void SessionData::StopFlusher() {
  {
    absl::MutexLock l(&flusher_mu);
    stop_flusher = true;
  }
  if (flusher.joinable()) flusher.join();
}

}  // namespace internal

// ---- Error
// ---------------------------------------------------------------------------------------

Error::Error(absl::Status status, std::unique_ptr<WriteOperation> op, bool possibly_successful)
    : status_(std::move(status)),
      failed_op_(std::move(op)),
      possibly_successful_(possibly_successful) {}
Error::~Error() = default;

std::unique_ptr<Error> Access::MakeError(absl::Status status, std::unique_ptr<WriteOperation> op,
                                         bool possibly_successful) {
  return std::unique_ptr<Error>(new Error(std::move(status), std::move(op), possibly_successful));
}

// ---- Session
// -------------------------------------------------------------------------------------

Session::Session(std::shared_ptr<Client> client, std::shared_ptr<internal::SessionData> data)
    : client_(std::move(client)), data_(std::move(data)) {}

std::shared_ptr<Session> Access::MakeSession(std::shared_ptr<Client> client) {
  auto data = std::make_shared<internal::SessionData>(Access::Data(client.get()));
  return std::shared_ptr<Session>(new Session(std::move(client), std::move(data)));
}

Session::~Session() {
  absl::Status s = Close();
  if (!s.ok()) LOG(WARNING) << "closing a session: " << s;
  // Errors and buffers hold Table (and so Client) references; drop them here, on the caller's
  // thread, as a write task may be the last to release the session state.
  absl::MutexLock l(&data_->mu);
  data_->errors.clear();
  data_->buffers.clear();
  data_->routes.clear();
  data_->last_routed_table = nullptr;
  data_->last_routes = nullptr;
}

absl::Status Session::SetFlushMode(FlushMode mode) { return data_->SetFlushMode(mode); }

absl::Status Session::SetMutationBufferSpace(size_t bytes) {
  if (bytes == 0) return absl::InvalidArgumentError("mutation buffer space must be positive");
  absl::MutexLock l(&data_->mu);
  if (data_->buffered_ops > 0) {
    return absl::FailedPreconditionError("cannot resize the buffer with operations buffered");
  }
  data_->buffer_space = bytes;
  return absl::OkStatus();
}

absl::Status Session::SetMutationBufferFlushWatermark(double fraction) {
  if (!(fraction > 0 && fraction <= 1)) {
    return absl::InvalidArgumentError(StrCat("flush watermark ", fraction, " not in (0, 1]"));
  }
  absl::MutexLock l(&data_->mu);
  data_->watermark = fraction;
  return absl::OkStatus();
}

absl::Status Session::SetMutationBufferFlushInterval(int millis) {
  if (millis <= 0) return absl::InvalidArgumentError("flush interval must be positive");
  absl::MutexLock l(&data_->mu);
  data_->flush_interval = absl::Milliseconds(millis);
  return absl::OkStatus();
}

void Session::SetTimeoutMillis(int millis) {
  absl::MutexLock l(&data_->mu);
  data_->timeout = absl::Milliseconds(std::max(1, millis));
}

void Session::SetErrorBufferSpace(size_t bytes) {
  absl::MutexLock l(&data_->mu);
  data_->error_space = bytes;
}

absl::Status Session::Apply(std::unique_ptr<WriteOperation> op) {
  return data_->Apply(std::move(op));
}

absl::Status Session::TryApply(std::unique_ptr<WriteOperation>* op, bool* applied) {
  return data_->TryApply(op, applied);
}

absl::Status Session::Flush() { return data_->Flush(); }

void Session::FlushAsync(std::function<void(absl::Status)> callback) {
  data_->FlushAsync(std::move(callback));
}

absl::Status Session::Close() {
  absl::Status s = data_->Flush();
  data_->StopFlusher();
  absl::MutexLock l(&data_->mu);
  data_->closed = true;
  return s;
}

bool Session::HasPendingOperations() const {
  absl::MutexLock l(&data_->mu);
  return data_->buffered_ops > 0 || data_->inflight_ops > 0;
}

int Session::CountBufferedOperations() const {
  absl::MutexLock l(&data_->mu);
  return data_->buffered_ops;
}

int Session::CountPendingErrors() const {
  absl::MutexLock l(&data_->mu);
  return static_cast<int>(data_->errors.size());
}

std::vector<std::unique_ptr<Error>> Session::GetPendingErrors(bool* overflowed) {
  absl::MutexLock l(&data_->mu);
  if (overflowed != nullptr) *overflowed = data_->errors_overflowed;
  data_->errors_overflowed = false;
  data_->error_bytes = 0;
  std::vector<std::unique_ptr<Error>> out;
  out.swap(data_->errors);
  return out;
}

Client* Session::client() const { return client_.get(); }

}  // namespace basalt::client
