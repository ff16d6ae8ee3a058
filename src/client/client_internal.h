#pragma once

// Internals shared by the client's .cc files: the state behind the public classes (pimpl data),
// conversions between public and internal types, and retry helpers. Private to src/client; never
// installed.

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/request_tracker.h"
#include "common/column_predicate.h"
#include "common/datum.h"
#include "common/partition.h"
#include "common/schema.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace basalt {
namespace pb {
class SchemaPB;
}  // namespace pb

namespace client {

class ThreadPool;

namespace internal {

class ElasticThreadPool;
class FrameTargets;
class MasterProxy;
class MetaCache;
class TableLocations;
struct WriteSchema;

// The state behind a Client. Thread-safe.
struct ClientData {
  ClientData();
  ~ClientData();

  // A channel to a tablet server, created on first use and cached.
  std::shared_ptr<grpc::Channel> Channel(const std::string& address) ABSL_LOCKS_EXCLUDED(mu);
  // Folds a timestamp a server returned into latest_observed_timestamp (a max).
  void ObserveTimestamp(uint64_t ts);

  // Constant after Build.
  std::vector<std::string> master_addresses;
  absl::Duration admin_timeout = absl::Seconds(30);
  absl::Duration rpc_timeout = absl::Seconds(30);
  std::unique_ptr<MasterProxy> master;
  // Before meta_cache, which borrows it.
  std::unique_ptr<FrameTargets> frames;
  std::unique_ptr<MetaCache> meta_cache;
  std::unique_ptr<ThreadPool> pool;
  // Parallel scans' workers (ParallelScan).
  std::unique_ptr<ElasticThreadPool> scan_workers;

  // Atomic: a max updated with compare-exchange; readers need no consistency with anything else.
  std::atomic<uint64_t> latest_observed_timestamp{0};
  // This client's id and write request sequence numbers (exactly-once writes).
  RequestTracker requests;

  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>> channels ABSL_GUARDED_BY(mu);
};

// How long one attempt of a write or scan RPC waits when the whole call has `total`: a third of
// it (two more replicas can still be tried), at least a few election timeouts (a slow but healthy
// server is not given up on), at most `total`. A server that stopped answering (paused, cut off)
// is thus left for another replica within seconds.
// `floor` is that minimum: 3 s for writes; scans pass more than a follower's wait for its safe
// time (--follower_snapshot_wait, 3 s), so that a follower is not left just before it answers.
absl::Duration AttemptTimeout(absl::Duration total, absl::Duration floor = absl::Seconds(3));

// Exponential backoff with jitter for retries: 5 ms doubling to `max_delay` (1 s by default),
// never past the deadline. Not thread-safe.
class Backoff {
 public:
  explicit Backoff(absl::Time deadline, absl::Duration max_delay = absl::Seconds(1))
      : deadline_(deadline), max_delay_(max_delay) {}
  // Sleeps for the next delay; false (without sleeping the full delay) when the deadline is
  // reached.
  bool Sleep();
  int attempts() const { return attempts_; }

 private:
  absl::Time deadline_;
  absl::Duration max_delay_;
  int attempts_ = 0;
};

// DEADLINE_EXCEEDED "<what> timed out after N attempts: <last error>".
absl::Status TimedOut(std::string_view what, int attempts, const absl::Status& last);

// Gives the client's .cc files access to the private state of the public classes.
struct Access {
  static ClientData* Data(const Client* client) { return client->data_.get(); }

  // Schemas.
  static const basalt::Schema& Internal(const Schema& schema);
  static Schema MakeSchema(basalt::Schema schema);
  static ColumnSchema MakeColumn(const basalt::ColumnSchema& col);
  static absl::StatusOr<basalt::ColumnSchema> ColumnFromSpec(const ColumnSpec& spec);
  static const std::optional<std::string>& RenameTo(const ColumnSpec& spec) {
    return spec.rename_to_;
  }
  static bool HasNonRenameChanges(const ColumnSpec& s) {
    return s.type_.has_value() || s.nullable_.has_value() || s.primary_key_ ||
           s.default_.has_value() || s.storage_set_ || s.precision_ != 0 || s.scale_ != 0 ||
           s.length_ != 0 || !s.comment_.empty();
  }
  // A Value bound to a column: converted to its type and checked against its limits.
  static absl::StatusOr<Datum> ToDatum(const Value& value, const basalt::ColumnSchema& col);

  // Rows: the raw buffers in the internal schema's layout.
  static const uint8_t* RowData(const PartialRow& row) { return row.data_; }
  static const uint8_t* IsSet(const PartialRow& row) { return row.data_ + row.row_size_; }
  static const uint8_t* IsNull(const PartialRow& row) {
    return row.data_ + row.row_size_ + row.bitmap_size_;
  }
  // Copies a cell (row-buffer form; variable-length values are copied into the row).
  static void SetCell(PartialRow* row, int idx, const void* cell);
  // The same for a fixed-width cell of exactly sizeof(T) bytes (a constant-size copy).
  template <typename T>
  static void SetFixedCell(PartialRow* row, int idx, const T& value) {
    std::memcpy(row->data_ + Internal(*row->schema_).column_offset(idx), &value, sizeof(T));
    MarkSet(row, idx);
  }
  static void MarkSet(PartialRow* row, int idx);
  static void SetNullUnchecked(PartialRow* row, int idx);

  // Tables and operations.
  static std::shared_ptr<Table> MakeTable(std::unique_ptr<Table::Data> data);
  static std::unique_ptr<Table::Data> NewTableData();
  static Table::Data* Data(const Table* table) { return table->data_.get(); }
  static std::unique_ptr<WriteOperation> NewOperation(std::shared_ptr<Table> table,
                                                      WriteOperation::Type type);
  static std::unique_ptr<Error> MakeError(absl::Status status, std::unique_ptr<WriteOperation> op,
                                          bool possibly_successful);
  static std::shared_ptr<Session> MakeSession(std::shared_ptr<Client> client);
  static const std::shared_ptr<Table>& SharedTable(const WriteOperation& op) { return op.table_; }
  static SessionData* Data(const Session* session) { return session->data_.get(); }

  // Predicates.
  static std::unique_ptr<Predicate> MakePredicate(absl::StatusOr<ColumnPredicate> pred);
  static const absl::StatusOr<ColumnPredicate>& Internal(const Predicate& pred);

  static ScanBatchData* Data(ScanBatch* batch);
};

}  // namespace internal

// The state behind a Table. Constant after OpenTable except write_schema; thread-safe.
struct Table::Data {
  std::shared_ptr<Client> client;
  std::string id;
  std::string name;
  Schema schema;
  basalt::PartitionSchema partition_schema;
  int num_replicas = 0;
  // The schema as sent with every write.
  std::shared_ptr<const pb::SchemaPB> schema_pb;
  // The table's tablets in the client's meta cache.
  std::shared_ptr<internal::TableLocations> locations;

  absl::Mutex mu;
  // The schema writes are sent with: null until first used (then `schema`), replaced by a newer
  // version when a write finds that the table was altered (write_schema.h). Never goes back.
  std::shared_ptr<const internal::WriteSchema> write_schema ABSL_GUARDED_BY(mu);
};

inline std::unique_ptr<Table::Data> internal::Access::NewTableData() {
  return std::make_unique<Table::Data>();
}

}  // namespace client
}  // namespace basalt
