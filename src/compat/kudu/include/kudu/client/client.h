#pragma once

// The Kudu C++ client API (1.18 names and signatures) on top of the Basalt client: programs
// written against Kudu's kudu/client/client.h compile against these headers and link
// libbasalt_kudu_compat.so (CMake: Basalt::kudu_compat). docs/kudu_compat.md lists what is
// supported and every difference from Kudu.
//
// Ownership follows Kudu: New*() factories return raw pointers the caller owns; methods that take
// a raw KuduWriteOperation*, KuduPartialRow*, KuduPredicate* or KuduValue* take ownership (even
// when they fail); clients, tables and sessions are shared through sp::shared_ptr.
//
// Left out (Basalt cannot do them): transactions (KuduTransaction), scan tokens, the partitioner,
// bloom filter predicates, custom hash schemas per range (KuduRangePartition), table statistics,
// tablet/replica introspection (KuduTablet, KuduReplica), soft deletion, authentication and
// encryption settings beyond accepting the defaults.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kudu/client/callbacks.h"
#include "kudu/client/columnar_scan_batch.h"
#include "kudu/client/resource_metrics.h"
#include "kudu/client/row_result.h"
#include "kudu/client/scan_batch.h"
#include "kudu/client/scan_predicate.h"
#include "kudu/client/schema.h"
#include "kudu/client/shared_ptr.h"
#include "kudu/client/stubs.h"
#include "kudu/client/value.h"
#include "kudu/client/write_op.h"
#include "kudu/common/partial_row.h"
#include "kudu/util/kudu_export.h"
#include "kudu/util/monotime.h"
#include "kudu/util/slice.h"
#include "kudu/util/status.h"

namespace kudu {
namespace client {

namespace internal {
struct Access;
}  // namespace internal

class KuduClient;
class KuduSession;
class KuduTable;
class KuduTableAlterer;
class KuduTableCreator;
class KuduTabletServer;

// Routes the client library's log messages (Basalt's glog output) to `cb` as well, until
// UninstallLoggingCallback. The caller keeps `cb` alive until then.
void KUDU_EXPORT InstallLoggingCallback(KuduLoggingCallback* cb);
void KUDU_EXPORT UninstallLoggingCallback();
// Verbose (VLOG) level of the client library's logging.
void KUDU_EXPORT SetVerboseLogLevel(int level);
// Basalt's client uses no signal: accepted, OK.
Status KUDU_EXPORT SetInternalSignalNumber(int signum) WARN_UNUSED_RESULT;
// Basalt initializes neither SASL nor OpenSSL: OK, no effect.
Status KUDU_EXPORT DisableSaslInitialization() WARN_UNUSED_RESULT;
Status KUDU_EXPORT DisableOpenSSLInitialization() WARN_UNUSED_RESULT;
// "1.18.0-basalt-<basalt version>".
std::string KUDU_EXPORT GetShortVersionString();
// The short version plus what it runs on.
std::string KUDU_EXPORT GetAllVersionInfo();

// Configures and builds a KuduClient. Not thread-safe.
class KUDU_EXPORT KuduClientBuilder {
 public:
  KuduClientBuilder();
  ~KuduClientBuilder();

  enum EncryptionPolicy { OPTIONAL, REQUIRED_REMOTE, REQUIRED };

  KuduClientBuilder& clear_master_server_addrs();
  KuduClientBuilder& master_server_addrs(const std::vector<std::string>& addrs);
  // "host:port" (7051 when the port is omitted).
  KuduClientBuilder& add_master_server_addr(const std::string& addr);
  KuduClientBuilder& default_admin_operation_timeout(const MonoDelta& timeout);
  KuduClientBuilder& default_rpc_timeout(const MonoDelta& timeout);
  // Accepted; Basalt connections negotiate nothing.
  KuduClientBuilder& connection_negotiation_timeout(const MonoDelta& timeout);
  // Accepted; no effect.
  KuduClientBuilder& rpc_max_message_size(int64_t size);
  // Authentication and encryption: Build returns NotSupported when one is asked for.
  KuduClientBuilder& jwt(const std::string& jwt);
  KuduClientBuilder& import_authentication_credentials(std::string authn_creds);
  KuduClientBuilder& trusted_certificate(const std::string& cert_pem);
  // Accepted; Basalt sizes its own thread pools.
  KuduClientBuilder& num_reactors(int num_reactors);
  KuduClientBuilder& sasl_protocol_name(const std::string& sasl_protocol_name);
  KuduClientBuilder& require_authentication(bool require_authentication);
  KuduClientBuilder& encryption_policy(EncryptionPolicy encryption_policy);

  // InvalidArgument for no or a malformed master address; NotSupported for authentication or
  // required encryption. Does not contact the cluster.
  Status Build(sp::shared_ptr<KuduClient>* client);

 private:
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduClientBuilder);
};

// A connection to a cluster: DDL, tables, sessions. Thread-safe.
class KUDU_EXPORT KuduClient : public sp::enable_shared_from_this<KuduClient> {
 public:
  ~KuduClient();

  // Owned by the caller.
  KuduTableCreator* NewTableCreator();
  Status IsCreateTableInProgress(const std::string& table_name, bool* create_in_progress);
  Status DeleteTable(const std::string& table_name);
  // Basalt deletes at once: NotSupported.
  Status SoftDeleteTable(const std::string& table_name, uint32_t reserve_seconds = 0);
  Status RecallTable(const std::string& table_id, const std::string& new_table_name = "");
  // Owned by the caller.
  KuduTableAlterer* NewTableAlterer(const std::string& table_name);
  Status IsAlterTableInProgress(const std::string& table_name, bool* alter_in_progress);
  Status GetTableSchema(const std::string& table_name, KuduSchema* schema);
  // The servers are owned by the caller.
  Status ListTabletServers(std::vector<KuduTabletServer*>* tablet_servers);
  Status ListTables(std::vector<std::string>* tables, const std::string& filter = "");
  // NotSupported (no soft deletion).
  Status ListSoftDeletedTables(std::vector<std::string>* tables, const std::string& filter = "");
  Status TableExists(const std::string& table_name, bool* exists);
  // NotFound for an unknown table.
  Status OpenTable(const std::string& table_name, sp::shared_ptr<KuduTable>* table);
  sp::shared_ptr<KuduSession> NewSession();

  // Accepted by KuduScanner::SetSelection; Basalt picks replicas itself.
  enum ReplicaSelection { LEADER_ONLY, CLOSEST_REPLICA, FIRST_REPLICA };

  bool IsMultiMaster() const;
  const MonoDelta& default_admin_operation_timeout() const;
  const MonoDelta& default_rpc_timeout() const;
  MonoDelta connection_negotiation_timeout() const;

  static const uint64_t kNoTimestamp;
  uint64_t GetLatestObservedTimestamp() const;
  void SetLatestObservedTimestamp(uint64_t ht_timestamp);
  // NotSupported (no authentication).
  Status ExportAuthenticationCredentials(std::string* authn_creds) const;

 private:
  friend struct internal::Access;
  class KUDU_NO_EXPORT Data;
  KuduClient();
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduClient);
};

// A tablet server as the master lists it.
class KUDU_EXPORT KuduTabletServer {
 public:
  ~KuduTabletServer();
  const std::string& uuid() const;
  const std::string& hostname() const;
  uint16_t port() const;

 private:
  friend struct internal::Access;
  class KUDU_NO_EXPORT Data;
  KuduTabletServer();
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduTabletServer);
};

// Creates a table. Configure, then Create(). Not thread-safe.
class KUDU_EXPORT KuduTableCreator {
 public:
  ~KuduTableCreator();

  KuduTableCreator& table_name(const std::string& name);
  // Not copied: the schema must outlive the creator.
  KuduTableCreator& schema(const KuduSchema* schema);
  KuduTableCreator& add_hash_partitions(const std::vector<std::string>& columns,
                                        int32_t num_buckets);
  KuduTableCreator& add_hash_partitions(const std::vector<std::string>& columns,
                                        int32_t num_buckets, int32_t seed);
  KuduTableCreator& set_range_partition_columns(const std::vector<std::string>& columns);

  enum RangePartitionBound { EXCLUSIVE_BOUND, INCLUSIVE_BOUND };

  // Takes ownership of both rows (made by the schema's NewRow); a row with no column set is
  // unbounded.
  KuduTableCreator& add_range_partition(KuduPartialRow* lower_bound, KuduPartialRow* upper_bound,
                                        RangePartitionBound lower_bound_type = INCLUSIVE_BOUND,
                                        RangePartitionBound upper_bound_type = EXCLUSIVE_BOUND);
  // Takes ownership of the row.
  KuduTableCreator& add_range_partition_split(KuduPartialRow* split_row);
  // Basalt tables have no owner or comment: Create returns NotSupported when one is set.
  KuduTableCreator& set_owner(const std::string& owner);
  KuduTableCreator& set_comment(const std::string& comment);
  // Takes ownership of the rows.
  KuduTableCreator& split_rows(const std::vector<const KuduPartialRow*>& split_rows)
      ATTRIBUTE_DEPRECATED("use add_range_partition_split()");
  KuduTableCreator& num_replicas(int n_replicas);
  // Accepted; Basalt places replicas without dimension labels.
  KuduTableCreator& dimension_label(const std::string& dimension_label);
  // Create returns NotSupported for a non-empty map.
  KuduTableCreator& extra_configs(const std::map<std::string, std::string>& extra_configs);
  KuduTableCreator& timeout(const MonoDelta& timeout);
  KuduTableCreator& wait(bool wait);

  // InvalidArgument for a missing name or schema or bad partitioning; AlreadyPresent; the
  // master's error otherwise.
  Status Create();

 private:
  friend class KuduClient;
  class KUDU_NO_EXPORT Data;
  explicit KuduTableCreator(KuduClient* client);
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduTableCreator);
};

// An open table: schema, and factories for operations and predicates. Thread-safe.
class KUDU_EXPORT KuduTable : public sp::enable_shared_from_this<KuduTable> {
 public:
  ~KuduTable();

  const std::string& name() const;
  const std::string& id() const;
  const KuduSchema& schema() const;
  const std::string& comment() const;  // Always empty.
  int num_replicas() const;
  const std::string& owner() const;  // Always empty.

  // Each returns a new operation owned by the caller (see write_op.h).
  KuduInsert* NewInsert();
  KuduInsertIgnore* NewInsertIgnore();
  KuduUpsert* NewUpsert();
  KuduUpsertIgnore* NewUpsertIgnore();
  KuduUpdate* NewUpdate();
  KuduUpdateIgnore* NewUpdateIgnore();
  KuduDelete* NewDelete();
  KuduDeleteIgnore* NewDeleteIgnore();

  // New predicates, owned by the caller. Take ownership of the values (NewInListPredicate
  // empties *values). Errors surface in KuduScanner::AddConjunctPredicate.
  KuduPredicate* NewComparisonPredicate(const Slice& col_name, KuduPredicate::ComparisonOp op,
                                        KuduValue* value);
  KuduPredicate* NewInListPredicate(const Slice& col_name, std::vector<KuduValue*>* values);
  KuduPredicate* NewIsNotNullPredicate(const Slice& col_name);
  KuduPredicate* NewIsNullPredicate(const Slice& col_name);

  KuduClient* client() const;
  // Always empty.
  const std::map<std::string, std::string>& extra_configs() const;

 private:
  friend struct internal::Access;
  class KUDU_NO_EXPORT Data;
  explicit KuduTable(Data* data);
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduTable);
};

// Alters a table: steps applied in order, all or nothing. Not thread-safe.
class KUDU_EXPORT KuduTableAlterer {
 public:
  ~KuduTableAlterer();

  KuduTableAlterer* RenameTo(const std::string& new_name);
  // No owners or comments in Basalt: Alter returns NotSupported.
  KuduTableAlterer* SetOwner(const std::string& new_owner);
  KuduTableAlterer* SetComment(const std::string& new_comment);
  // The spec is owned by the alterer. A NOT NULL column needs a default.
  KuduColumnSpec* AddColumn(const std::string& name);
  // Basalt supports only RenameTo on the returned spec (anything else: Alter fails).
  KuduColumnSpec* AlterColumn(const std::string& name);
  KuduTableAlterer* DropColumn(const std::string& name);
  // Take ownership of both rows.
  KuduTableAlterer* AddRangePartition(
      KuduPartialRow* lower_bound, KuduPartialRow* upper_bound,
      KuduTableCreator::RangePartitionBound lower_bound_type = KuduTableCreator::INCLUSIVE_BOUND,
      KuduTableCreator::RangePartitionBound upper_bound_type = KuduTableCreator::EXCLUSIVE_BOUND);
  // The dimension label is accepted and ignored.
  KuduTableAlterer* AddRangePartitionWithDimension(
      KuduPartialRow* lower_bound, KuduPartialRow* upper_bound, const std::string& dimension_label,
      KuduTableCreator::RangePartitionBound lower_bound_type = KuduTableCreator::INCLUSIVE_BOUND,
      KuduTableCreator::RangePartitionBound upper_bound_type = KuduTableCreator::EXCLUSIVE_BOUND);
  KuduTableAlterer* DropRangePartition(
      KuduPartialRow* lower_bound, KuduPartialRow* upper_bound,
      KuduTableCreator::RangePartitionBound lower_bound_type = KuduTableCreator::INCLUSIVE_BOUND,
      KuduTableCreator::RangePartitionBound upper_bound_type = KuduTableCreator::EXCLUSIVE_BOUND);
  // Alter returns NotSupported for these.
  KuduTableAlterer* AlterExtraConfig(const std::map<std::string, std::string>& extra_configs);
  KuduTableAlterer* SetTableDiskSizeLimit(int64_t disk_size_limit);
  KuduTableAlterer* SetTableRowCountLimit(int64_t row_count_limit);
  KuduTableAlterer* timeout(const MonoDelta& timeout);
  KuduTableAlterer* wait(bool wait);

  // InvalidArgument for an empty or malformed alteration; NotSupported as noted above; the
  // master's error otherwise.
  Status Alter();

 private:
  friend class KuduClient;
  class KUDU_NO_EXPORT Data;
  KuduTableAlterer(KuduClient* client, const std::string& name);
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduTableAlterer);
};

// A write operation that failed, from KuduSession::GetPendingErrors (owned by the caller).
class KUDU_EXPORT KuduError {
 public:
  ~KuduError();
  const Status& status() const;
  // The operation: the caller's own when it failed in Apply, else an equivalent one rebuilt from
  // what was sent (same type, table and row).
  const KuduWriteOperation& failed_op() const;
  // Hands the operation to the caller; failed_op() must not be called afterwards.
  KuduWriteOperation* release_failed_op();
  // True when the operation may have been applied although it is reported failed (a timeout
  // while it was in flight).
  bool was_possibly_successful() const;

 private:
  friend struct internal::Access;
  class KUDU_NO_EXPORT Data;
  KuduError(KuduWriteOperation* failed_op, const Status& error);
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduError);
};

// Applies write operations. Flush modes as in Kudu: AUTO_FLUSH_SYNC (the default; Apply waits
// for the row), AUTO_FLUSH_BACKGROUND (Apply buffers; background flushes; Apply blocks when the
// buffer is full) and MANUAL_FLUSH (Apply buffers; Flush/FlushAsync send; Apply returns
// Incomplete when the buffer is full). Per-row failures go to the error collector
// (CountPendingErrors, GetPendingErrors); Flush then returns IOError.
//
// Not thread-safe: one writer thread per session (FlushAsync callbacks run on an internal thread).
class KUDU_EXPORT KuduSession : public sp::enable_shared_from_this<KuduSession> {
 public:
  ~KuduSession();

  enum FlushMode { AUTO_FLUSH_SYNC, AUTO_FLUSH_BACKGROUND, MANUAL_FLUSH };
  // IllegalState while operations are buffered.
  Status SetFlushMode(FlushMode m) WARN_UNUSED_RESULT;

  enum ExternalConsistencyMode { CLIENT_PROPAGATED, COMMIT_WAIT };
  // CLIENT_PROPAGATED (what Basalt does) is accepted; COMMIT_WAIT is NotSupported.
  Status SetExternalConsistencyMode(ExternalConsistencyMode m) WARN_UNUSED_RESULT;
  Status SetMutationBufferSpace(size_t size_bytes) WARN_UNUSED_RESULT;
  // A fraction of the buffer space in (0, 1].
  Status SetMutationBufferFlushWatermark(double watermark_pct) WARN_UNUSED_RESULT;
  Status SetMutationBufferFlushInterval(unsigned int millis) WARN_UNUSED_RESULT;
  // Accepted; Basalt bounds the buffer by bytes only.
  Status SetMutationBufferMaxNum(unsigned int max_num) WARN_UNUSED_RESULT;
  void SetTimeoutMillis(int millis);

  // Takes ownership of `write_op`, also on error. IllegalState (and the operation in the error
  // collector) when its key is not set; InvalidArgument for a row the operation type does not
  // allow; Incomplete when the MANUAL_FLUSH buffer is full; in AUTO_FLUSH_SYNC, IOError when the
  // row failed (the row's error is in the collector).
  Status Apply(KuduWriteOperation* write_op) WARN_UNUSED_RESULT;
  // Sends what is buffered and waits for every operation. IOError when some failed.
  Status Flush() WARN_UNUSED_RESULT;
  // Sends what is buffered; `cb` runs on an internal thread, once every operation applied so far
  // is done, with what Flush would have returned. The caller keeps `cb` alive until it ran.
  void FlushAsync(KuduStatusCallback* cb);
  Status Close() WARN_UNUSED_RESULT;

  bool HasPendingOperations() const;
  int CountBufferedOperations() const
      ATTRIBUTE_DEPRECATED("this method is experimental and will disappear in a future release");
  Status SetErrorBufferSpace(size_t size_bytes);
  int CountPendingErrors() const;
  // Appends the collected errors (owned by the caller) and clears them; *overflowed (if not
  // null) tells whether some were dropped.
  void GetPendingErrors(std::vector<KuduError*>* errors, bool* overflowed);
  KuduClient* client() const;
  // Empty (see resource_metrics.h).
  const ResourceMetrics& GetWriteOpMetrics() const;

 private:
  friend struct internal::Access;
  class KUDU_NO_EXPORT Data;
  explicit KuduSession(Data* data);
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduSession);
};

// Reads rows of a table. Configure, Open(), NextBatch() while HasMoreRows(), Close().
// SetFaultTolerant() gives an ordered snapshot scan that resumes on another replica after a
// failure without repeating or skipping rows. Not thread-safe.
class KUDU_EXPORT KuduScanner {
 public:
  enum ReadMode { READ_LATEST, READ_AT_SNAPSHOT, READ_YOUR_WRITES };
  enum OrderMode { UNORDERED, ORDERED };
  enum { kScanTimeoutMillis = 30000 };

  // `table` must outlive the scanner.
  explicit KuduScanner(KuduTable* table);
  ~KuduScanner();

  Status SetProjectedColumnNames(const std::vector<std::string>& col_names) WARN_UNUSED_RESULT;
  Status SetProjectedColumnIndexes(const std::vector<int>& col_indexes) WARN_UNUSED_RESULT;
  Status SetProjectedColumns(const std::vector<std::string>& col_names) WARN_UNUSED_RESULT
      ATTRIBUTE_DEPRECATED("use SetProjectedColumnNames()");
  // Accepted; no effect.
  Status SetQueryId(const std::string& query_id);
  // Takes ownership of `pred`.
  Status AddConjunctPredicate(KuduPredicate* pred) WARN_UNUSED_RESULT;
  // `key` sets every primary key column. Inclusive.
  Status AddLowerBound(const KuduPartialRow& key);
  Status AddExclusiveUpperBound(const KuduPartialRow& key);
  // Kudu's encoded keys are not Basalt's: NotSupported.
  Status AddLowerBoundRaw(const Slice& key) ATTRIBUTE_DEPRECATED("use AddLowerBound()");
  Status AddExclusiveUpperBoundRaw(const Slice& key)
      ATTRIBUTE_DEPRECATED("use AddExclusiveUpperBound()");
  Status AddLowerBoundPartitionKeyRaw(const Slice& partition_key);
  Status AddExclusiveUpperBoundPartitionKeyRaw(const Slice& partition_key);
  // Accepted; no effect.
  Status SetCacheBlocks(bool cache_blocks);

  Status Open();
  Status KeepAlive();
  // NotSupported: call KeepAlive() between batches instead.
  Status StartKeepAlivePeriodically(uint64_t keep_alive_interval_ms = 30000);
  void StopKeepAlivePeriodically();
  void Close();
  bool HasMoreRows() const;
  // The rows stay valid until the next NextBatch call or the scanner's destruction.
  Status NextBatch(std::vector<KuduRowResult>* rows)
      ATTRIBUTE_DEPRECATED("use NextBatch(KuduScanBatch*)");
  Status NextBatch(KuduScanBatch* batch);
  // REQUIRES: SetRowFormatFlags(COLUMNAR_LAYOUT) (IllegalState otherwise).
  Status NextBatch(KuduColumnarScanBatch* batch);
  // NotSupported.
  Status GetCurrentServer(KuduTabletServer** server);
  // Empty (see resource_metrics.h).
  const ResourceMetrics& GetResourceMetrics() const;
  Status SetBatchSizeBytes(uint32_t batch_size);
  // Accepted; Basalt picks replicas itself.
  Status SetSelection(KuduClient::ReplicaSelection selection) WARN_UNUSED_RESULT;
  Status SetReadMode(ReadMode read_mode) WARN_UNUSED_RESULT;
  Status SetOrderMode(OrderMode order_mode) WARN_UNUSED_RESULT
      ATTRIBUTE_DEPRECATED("use SetFaultTolerant()");
  Status SetFaultTolerant() WARN_UNUSED_RESULT;
  Status SetSnapshotMicros(uint64_t snapshot_timestamp_micros) WARN_UNUSED_RESULT;
  Status SetSnapshotRaw(uint64_t snapshot_timestamp) WARN_UNUSED_RESULT;
  Status SetTimeoutMillis(int millis);
  KuduSchema GetProjectionSchema() const;
  sp::shared_ptr<KuduTable> GetKuduTable();

  static const uint64_t NO_FLAGS = 0;
  // Accepted; only the row-wise wire format would change, which Basalt does not have.
  static const uint64_t PAD_UNIXTIME_MICROS_TO_16_BYTES = 1 << 0;
  static const uint64_t COLUMNAR_LAYOUT = 1 << 1;
  // InvalidArgument for unknown bits; IllegalState after Open().
  Status SetRowFormatFlags(uint64_t flags);
  Status SetLimit(int64_t limit) WARN_UNUSED_RESULT;
  std::string ToString() const;

 private:
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduScanner);
};

}  // namespace client
}  // namespace kudu
