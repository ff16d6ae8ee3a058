// KuduSession and KuduError: a Basalt Session behind Kudu's ownership rules. Apply takes the
// Basalt operation out of the Kudu wrapper (and deletes the wrapper); failed operations come back
// from Basalt's error collector and are re-wrapped in the Kudu class of their type.

#include <climits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

namespace bc = basalt::client;
using internal::Access;

// ---- KuduError --------------------------------------------------------------------------------

class KuduError::Data {
 public:
  Status status;
  std::unique_ptr<KuduWriteOperation> op;
  bool possibly_successful = false;
};

KuduError::KuduError(KuduWriteOperation* failed_op, const Status& error) : data_(new Data) {
  data_->op.reset(failed_op);
  data_->status = error;
}
KuduError::~KuduError() { delete data_; }
const Status& KuduError::status() const { return data_->status; }
const KuduWriteOperation& KuduError::failed_op() const { return *data_->op; }
KuduWriteOperation* KuduError::release_failed_op() { return data_->op.release(); }
bool KuduError::was_possibly_successful() const { return data_->possibly_successful; }

KuduError* internal::Access::MakeError(KuduWriteOperation* op, const Status& s,
                                       bool possibly_successful) {
  auto* e = new KuduError(op, s);
  e->data_->possibly_successful = possibly_successful;
  return e;
}

// ---- KuduSession ------------------------------------------------------------------------------

class KuduSession::Data {
 public:
  // Declared before `session`: the Basalt session closes (and runs its flush callbacks) first.
  sp::shared_ptr<KuduClient> client;
  std::shared_ptr<bc::Session> session;
  ResourceMetrics metrics;

  // Touched only by the writer thread (the session is not thread-safe).
  FlushMode mode = AUTO_FLUSH_SYNC;
  const bc::Table* last_table = nullptr;  // The table of the last Apply: `tables` has it.

  absl::Mutex mu;
  // Operations that failed in Apply before reaching Basalt (Kudu keeps them with the errors).
  std::vector<std::unique_ptr<KuduError>> apply_errors ABSL_GUARDED_BY(mu);
  // The Kudu table of each Basalt table written, to re-wrap failed operations.
  std::map<const bc::Table*, std::weak_ptr<KuduTable>> tables ABSL_GUARDED_BY(mu);

  // The Kudu table handle for a failed operation of `table`.
  sp::shared_ptr<KuduTable> TableFor(const bc::Table* table) ABSL_LOCKS_EXCLUDED(mu);
};

sp::shared_ptr<KuduTable> KuduSession::Data::TableFor(const bc::Table* table) {
  {
    absl::MutexLock l(&mu);
    auto it = tables.find(table);
    if (it != tables.end()) {
      if (sp::shared_ptr<KuduTable> t = it->second.lock()) return t;
    }
  }
  // The caller let go of its handle: make a new one around the same Basalt table.
  auto shared = std::const_pointer_cast<bc::Table>(table->shared_from_this());
  sp::shared_ptr<KuduTable> t = Access::MakeTable(client, std::move(shared));
  absl::MutexLock l(&mu);
  tables[table] = t;
  return t;
}

KuduSession::KuduSession(Data* data) : data_(data) {}
KuduSession::~KuduSession() { delete data_; }

Status KuduSession::SetFlushMode(FlushMode m) {
  KUDU_RETURN_NOT_OK(
      FromAbsl(data_->session->SetFlushMode(static_cast<bc::Session::FlushMode>(m))));
  data_->mode = m;
  return Status::OK();
}

Status KuduSession::SetExternalConsistencyMode(ExternalConsistencyMode m) {
  if (m == CLIENT_PROPAGATED) return Status::OK();
  return Status::NotSupported("COMMIT_WAIT external consistency is not available in Basalt");
}

Status KuduSession::SetMutationBufferSpace(size_t size_bytes) {
  return FromAbsl(data_->session->SetMutationBufferSpace(size_bytes));
}

Status KuduSession::SetMutationBufferFlushWatermark(double watermark_pct) {
  return FromAbsl(data_->session->SetMutationBufferFlushWatermark(watermark_pct));
}

Status KuduSession::SetMutationBufferFlushInterval(unsigned int millis) {
  const int ms = millis > static_cast<unsigned int>(INT_MAX) ? INT_MAX : static_cast<int>(millis);
  return FromAbsl(data_->session->SetMutationBufferFlushInterval(ms));
}

Status KuduSession::SetMutationBufferMaxNum(unsigned int max_num) { return Status::OK(); }

void KuduSession::SetTimeoutMillis(int millis) { data_->session->SetTimeoutMillis(millis); }

Status KuduSession::Apply(KuduWriteOperation* write_op) {
  if (write_op == nullptr) return Status::InvalidArgument("null write operation");
  std::unique_ptr<KuduWriteOperation> op(write_op);
  const bc::Table* table = Access::Basalt(op->table());
  if (table != data_->last_table) {
    absl::MutexLock l(&data_->mu);
    data_->tables[table] = Access::Table(*op);
    data_->last_table = table;
  }
  if (!op->row().IsKeySet()) {
    // Kudu fails this in Apply and keeps the operation with the session's errors.
    Status s = Status::IllegalState("Key not specified", op->ToString());
    absl::MutexLock l(&data_->mu);
    data_->apply_errors.emplace_back(Access::MakeError(op.release(), s, false));
    return s;
  }
  std::unique_ptr<bc::WriteOperation> bop = Access::TakeOp(op.get());
  op.reset();
  if (data_->mode != AUTO_FLUSH_SYNC) return FromAbsl(data_->session->Apply(std::move(bop)));

  // AUTO_FLUSH_SYNC: a row that failed is in the error collector; Kudu then reports an IOError
  // as its flush does.
  const int errors_before = data_->session->CountPendingErrors();
  absl::Status s = data_->session->Apply(std::move(bop));
  if (!s.ok() && data_->session->CountPendingErrors() > errors_before) {
    return Status::IOError(
        "failed to flush data: error details are available via "
        "KuduSession::GetPendingErrors()",
        std::string(s.message()));
  }
  return FromAbsl(s);
}

Status KuduSession::Flush() { return FromAbsl(data_->session->Flush()); }

void KuduSession::FlushAsync(KuduStatusCallback* cb) {
  std::shared_ptr<CallbackRunner> runner = Access::Callbacks(data_->client.get());
  // Basalt runs the callback on its own thread (or inline when nothing is outstanding); the
  // runner moves the user's callback to the client's callback thread in both cases.
  data_->session->FlushAsync([runner, cb](absl::Status s) {
    if (cb == nullptr) return;
    runner->Post([cb, s = std::move(s)] { cb->Run(FromAbsl(s)); });
  });
}

Status KuduSession::Close() { return FromAbsl(data_->session->Close()); }

bool KuduSession::HasPendingOperations() const { return data_->session->HasPendingOperations(); }

int KuduSession::CountBufferedOperations() const {
  return data_->session->CountBufferedOperations();
}

Status KuduSession::SetErrorBufferSpace(size_t size_bytes) {
  data_->session->SetErrorBufferSpace(size_bytes);
  return Status::OK();
}

int KuduSession::CountPendingErrors() const {
  int local;
  {
    absl::MutexLock l(&data_->mu);
    local = static_cast<int>(data_->apply_errors.size());
  }
  return data_->session->CountPendingErrors() + local;
}

void KuduSession::GetPendingErrors(std::vector<KuduError*>* errors, bool* overflowed) {
  {
    absl::MutexLock l(&data_->mu);
    for (auto& e : data_->apply_errors) errors->push_back(e.release());
    data_->apply_errors.clear();
  }
  for (std::unique_ptr<bc::Error>& e : data_->session->GetPendingErrors(overflowed)) {
    std::unique_ptr<bc::WriteOperation> op = e->release_failed_op();
    // Kudu numbers the operation types as Basalt does (UPSERT_IGNORE was sent as UPSERT).
    const auto type = static_cast<KuduWriteOperation::Type>(op->type());
    sp::shared_ptr<KuduTable> table = data_->TableFor(op->table());
    KuduWriteOperation* kop = Access::MakeWriteOp(table, type, std::move(op));
    errors->push_back(Access::MakeError(kop, FromAbsl(e->status()), e->was_possibly_successful()));
  }
}

KuduClient* KuduSession::client() const { return data_->client.get(); }

const ResourceMetrics& KuduSession::GetWriteOpMetrics() const { return data_->metrics; }

KuduSession* internal::Access::MakeSession(sp::shared_ptr<KuduClient> client,
                                           std::shared_ptr<bc::Session> session) {
  auto* d = new KuduSession::Data;
  d->client = std::move(client);
  d->session = std::move(session);
  return new KuduSession(d);
}

}  // namespace client
}  // namespace kudu
