#pragma once

// Session: applies write operations (Kudu's KuduSession), and Error, a failed operation.
//
// Flush modes:
//   - AUTO_FLUSH_SYNC (the default): Apply sends the operation and waits; it returns the row's
//     outcome.
//   - AUTO_FLUSH_BACKGROUND: Apply buffers; buffers are sent in the background when a tablet's
//     buffer reaches a batch size, when the buffer passes its flush watermark, or after the flush
//     interval. When the mutation buffer (buffered plus in flight) is full, Apply blocks until
//     space frees up (backpressure).
//   - MANUAL_FLUSH: Apply buffers; Flush or FlushAsync sends. When the buffer is full, Apply
//     returns RESOURCE_EXHAUSTED.
// Operations are grouped per tablet and sent to the tablets in parallel, at most one batch per
// tablet at a time, so operations on one row are applied in the order they were applied here.
// Failed sends are retried (leader changes, tablet moves, overload) with backoff until the session
// timeout runs out.
//
// Per-row failures (ALREADY_EXISTS, NOT_FOUND, ...) go to the error collector: CountPendingErrors,
// GetPendingErrors. Flush returns UNKNOWN ("some operations failed") when rows failed during it.
// Apply itself fails only for an operation that cannot be sent (INVALID_ARGUMENT: a key column
// not set, a column that the operation type may not set; FAILED_PRECONDITION after Close), or in
// AUTO_FLUSH_SYNC with the row's own error.
//
// Lifecycle: Client::NewSession(); the destructor closes (flushes and waits). Thread-safe, but
// one session is meant to be used by one writer thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "client/export.h"
#include "client/write_op.h"

namespace basalt::client {

class Client;

namespace internal {
struct Access;
struct SessionData;
}  // namespace internal

// One failed write operation. Not thread-safe.
class BASALT_EXPORT Error {
 public:
  ~Error();
  const absl::Status& status() const { return status_; }
  const WriteOperation& failed_op() const { return *failed_op_; }
  std::unique_ptr<WriteOperation> release_failed_op() { return std::move(failed_op_); }
  // True when the operation may nevertheless have been applied (the session timed out while it
  // was in flight).
  bool was_possibly_successful() const { return possibly_successful_; }

 private:
  friend struct internal::Access;
  Error(absl::Status status, std::unique_ptr<WriteOperation> op, bool possibly_successful);
  absl::Status status_;
  std::unique_ptr<WriteOperation> failed_op_;
  bool possibly_successful_;
};

class BASALT_EXPORT Session {
 public:
  enum FlushMode { AUTO_FLUSH_SYNC, AUTO_FLUSH_BACKGROUND, MANUAL_FLUSH };

  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // FAILED_PRECONDITION while operations are buffered.
  absl::Status SetFlushMode(FlushMode mode);
  // Bytes of encoded operations buffered plus in flight (default 16 MiB). FAILED_PRECONDITION
  // while operations are buffered; INVALID_ARGUMENT for 0.
  absl::Status SetMutationBufferSpace(size_t bytes);
  // AUTO_FLUSH_BACKGROUND: flush when the buffered part exceeds this fraction of the space
  // (default 0.5). INVALID_ARGUMENT outside (0, 1].
  absl::Status SetMutationBufferFlushWatermark(double fraction);
  // AUTO_FLUSH_BACKGROUND: flush buffered operations at least this often (default 1000 ms).
  absl::Status SetMutationBufferFlushInterval(int millis);
  // Deadline of each send including its retries (default: the client's RPC timeout).
  void SetTimeoutMillis(int millis);
  // Cap on the bytes of collected errors (default 16 MiB); further errors are dropped and
  // GetPendingErrors reports overflow.
  void SetErrorBufferSpace(size_t bytes);

  // Takes the operation. See the class comment for the outcome.
  absl::Status Apply(std::unique_ptr<WriteOperation> op);
  // Apply that never waits, for callers that must not block here (a binding holding an
  // interpreter lock): in MANUAL_FLUSH or AUTO_FLUSH_BACKGROUND, when the operation's tablet
  // location is known and (AUTO_FLUSH_BACKGROUND) the buffer has room, buffers it as Apply
  // would, sets *applied and takes *op. Otherwise (AUTO_FLUSH_SYNC, a location to look up, a
  // full buffer, a closed session) sets *applied = false and leaves *op for Apply. A row error
  // (INVALID_ARGUMENT for bad columns, RESOURCE_EXHAUSTED for a full MANUAL_FLUSH buffer) is
  // returned as Apply returns it, and *op is consumed.
  absl::Status TryApply(std::unique_ptr<WriteOperation>* op, bool* applied);
  // Sends everything buffered and waits until every operation of this session is done.
  absl::Status Flush();
  // Sends everything buffered; `callback` runs once every operation applied so far is done, with
  // what Flush would have returned: on an internal thread, or before FlushAsync returns when
  // nothing is outstanding. It must not block.
  void FlushAsync(std::function<void(absl::Status)> callback);
  // Flushes and stops the session; later Apply calls fail. Returns what Flush returned.
  absl::Status Close();

  bool HasPendingOperations() const;  // Buffered or in flight.
  int CountBufferedOperations() const;
  int CountPendingErrors() const;
  // Moves the collected errors out. *overflowed (if given) tells whether some were dropped.
  std::vector<std::unique_ptr<Error>> GetPendingErrors(bool* overflowed = nullptr);

  Client* client() const;

 private:
  friend struct internal::Access;
  Session(std::shared_ptr<Client> client, std::shared_ptr<internal::SessionData> data);
  std::shared_ptr<Client> client_;
  std::shared_ptr<internal::SessionData> data_;
};

}  // namespace basalt::client
