#pragma once

// Sending one batch of encoded write operations to one tablet, with retries (the batcher's RPC
// half; session.cc does the grouping). Private to src/client.
//
// Thread-safe: the session's thread pool sends batches of different tablets at once; a WriteBatch
// belongs to one call at a time (the session keeps one batch per tablet in flight, so operations
// on a row reach the tablet in order).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"

namespace basalt::client::internal {

struct ClientData;
class RemoteTablet;

// Operations for one tablet, encoded (common/row_operations.h) against the table's schema.
struct WriteBatch {
  std::shared_ptr<Table> table;
  std::shared_ptr<RemoteTablet> tablet;
  std::string rows;
  std::string indirect;
  int num_ops = 0;
  uint64_t seq = 0;  // Set by the session: the order batches were cut in.
  // Set by the session when it cuts the batch: the batch completes (sent, or failed) by then.
  absl::Time deadline = absl::InfiniteFuture();
  // The id of the tablet the batch was cut for, fixed at submit time: the session's per-tablet
  // queue it belongs to, even after a relocation replaced `tablet`.
  std::string queue_key;

  size_t bytes() const { return rows.size() + indirect.size(); }
};

struct RowError {
  int index;  // Of the operation in the batch.
  absl::Status status;
};

struct WriteResult {
  // Not OK when the whole batch failed (then every operation failed with it).
  absl::Status status;
  // The batch may have been applied although `status` says otherwise (it timed out in flight).
  bool possibly_applied = false;
  std::vector<RowError> row_errors;
};

// Sends `batch` to its tablet's leader, retrying on leader changes (NOT_THE_LEADER, with the
// hinted leader or the next replica), TABLET_NOT_RUNNING / SERVER_OVERLOADED / unreachable servers
// (backoff), TABLET_NOT_FOUND (fresh locations from the master) and SCHEMA_MISMATCH (the rows
// re-encoded for the table's current schema, write_schema.h; operations it cannot hold fail
// alone in row_errors) until `deadline`. Folds the
// write's timestamp into the client's latest observed timestamp. batch->tablet may be replaced
// by a fresher location of the same partition.
WriteResult SendWriteBatch(ClientData* client, WriteBatch* batch, absl::Time deadline);

// Appends `op`, encoded against its table's schema, to a batch payload. INVALID_ARGUMENT (naming
// the operation) when the row does not set the columns its type needs.
absl::Status EncodeOperation(const WriteOperation& op, std::string* rows, std::string* indirect);

// Rebuilds the operations at `indexes` of an encoded batch (for error reports). Indexes out of
// range are skipped. INVALID_ARGUMENT if the batch does not decode.
absl::StatusOr<std::vector<std::unique_ptr<WriteOperation>>> DecodeOperations(
    const std::shared_ptr<Table>& table, std::string_view rows, std::string_view indirect,
    const std::vector<int>& indexes);

}  // namespace basalt::client::internal
