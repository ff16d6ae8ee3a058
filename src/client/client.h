#pragma once

// The Basalt C++ client (DESIGN.md section 7; docs/client.md), shaped like Kudu's C++ client.
//
//   std::shared_ptr<Client> client;
//   absl::Status s = ClientBuilder().add_master_server_addr("127.0.0.1:7051").Build(&client);
//   std::shared_ptr<Table> table;
//   s = client->OpenTable("t", &table);
//   std::shared_ptr<Session> session = client->NewSession();
//   auto insert = table->NewInsert();
//   s = insert->mutable_row()->SetInt32("key", 1);
//   s = session->Apply(std::move(insert));
//
// Public headers name no protobuf, gRPC or internal type. Errors are absl::Status: the failing
// RPC's status (NOT_FOUND for an unknown table, ALREADY_EXISTS, INVALID_ARGUMENT naming the field,
// ...), DEADLINE_EXCEEDED when an operation's timeout runs out while the cluster is unavailable.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/export.h"
#include "client/partial_row.h"
#include "client/predicate.h"
#include "client/scan_batch.h"
#include "client/scanner.h"
#include "client/schema.h"
#include "client/session.h"
#include "client/value.h"
#include "client/write_op.h"

namespace basalt::client {

class Client;
class Table;
class TableAlterer;
class TableCreator;

namespace internal {
struct Access;
struct ClientData;
}  // namespace internal

// Configures and builds a Client. Not thread-safe.
class BASALT_EXPORT ClientBuilder {
 public:
  ClientBuilder();
  ~ClientBuilder();
  // "host:port" (port 7051 when omitted); several for a multi-master cluster.
  ClientBuilder& add_master_server_addr(std::string address);
  ClientBuilder& master_server_addrs(std::vector<std::string> addresses);
  // Timeout of DDL and other master operations (default 30 s).
  ClientBuilder& default_admin_operation_timeout(std::chrono::milliseconds timeout);
  // Default timeout of sessions and scanners (default 30 s).
  ClientBuilder& default_rpc_timeout(std::chrono::milliseconds timeout);
  // Threads sending write batches in parallel (default 16).
  ClientBuilder& num_rpc_threads(int n);
  // Build() turns off Abseil's mutex deadlock detection for the whole process (default true):
  // the packaged Abseil enables it, and it costs every absl::Mutex operation dearly.
  ClientBuilder& disable_mutex_deadlock_detection(bool disable);
  // Writes and scans go over the tablet servers' frame RPC ports where they offer one
  // (docs/frame_rpc.md; default true), a lighter transport than gRPC; false: gRPC only. A server
  // whose frame port cannot be connected is called over gRPC anyway.
  ClientBuilder& use_frame_rpc(bool use);
  // How long a frame call may poll its socket for the reply before sleeping in recv (default
  // 200 µs; zero: never). Polling is done only while the calls to that server answer within
  // about twice this time, no other call of the process is waiting, and polls keep catching
  // their replies; it trades up to this much CPU per call for not paying the wakeup
  // (docs/frame_rpc.md "Polling for the reply").
  ClientBuilder& reply_spin(std::chrono::microseconds spin);

  // INVALID_ARGUMENT for no or a malformed master address. Does not contact the cluster.
  absl::Status Build(std::shared_ptr<Client>* client);

 private:
  std::vector<std::string> masters_;
  std::chrono::milliseconds admin_timeout_{30000};
  std::chrono::milliseconds rpc_timeout_{30000};
  int num_rpc_threads_ = 16;
  bool disable_deadlock_detection_ = true;
  bool use_frame_rpc_ = true;
  std::chrono::microseconds reply_spin_{200};
};

// A tablet server as the master lists it.
struct BASALT_EXPORT TabletServerInfo {
  std::string uuid;
  std::string hostname;
  uint16_t port = 0;
  bool live = false;
  int64_t millis_since_heartbeat = 0;
  int32_t num_replicas = 0;
};

// A connection to a cluster: DDL, table handles, sessions. Holds a cache of tablet locations and
// the threads that send writes; both are shared by everything made from it.
// Thread-safe.
class BASALT_EXPORT Client : public std::enable_shared_from_this<Client> {
 public:
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  std::unique_ptr<TableCreator> NewTableCreator();
  std::unique_ptr<TableAlterer> NewTableAlterer(const std::string& table_name);
  absl::Status DeleteTable(const std::string& table_name);
  absl::Status IsCreateTableInProgress(const std::string& table_name, bool* in_progress);
  absl::Status IsAlterTableInProgress(const std::string& table_name, bool* in_progress);
  absl::Status GetTableSchema(const std::string& table_name, Schema* schema);
  // Names of the tables whose name contains `filter` (all with an empty filter), sorted.
  absl::Status ListTables(std::vector<std::string>* tables, const std::string& filter = "");
  absl::Status TableExists(const std::string& table_name, bool* exists);
  absl::Status ListTabletServers(std::vector<TabletServerInfo>* servers);
  // NOT_FOUND for an unknown table.
  absl::Status OpenTable(const std::string& table_name, std::shared_ptr<Table>* table);
  std::shared_ptr<Session> NewSession();

  // The latest timestamp (raw HybridTime) this client observed from any server; writes and
  // READ_YOUR_WRITES scans carry it. Another client may adopt it to read this one's writes.
  uint64_t GetLatestObservedTimestamp() const;
  void SetLatestObservedTimestamp(uint64_t hybrid_time);

  std::chrono::milliseconds default_admin_operation_timeout() const;
  std::chrono::milliseconds default_rpc_timeout() const;

 private:
  friend class ClientBuilder;
  friend struct internal::Access;
  explicit Client(std::unique_ptr<internal::ClientData> data);
  std::unique_ptr<internal::ClientData> data_;
};

// Creates a table. Configure, then Create(). Not thread-safe.
class BASALT_EXPORT TableCreator {
 public:
  enum RangePartitionBound { EXCLUSIVE_BOUND, INCLUSIVE_BOUND };

  ~TableCreator();
  TableCreator& table_name(std::string name);
  // Copied.
  TableCreator& schema(const Schema* schema);
  // One hash level over `columns` (key columns) with `num_buckets` buckets.
  TableCreator& add_hash_partitions(const std::vector<std::string>& columns, int32_t num_buckets,
                                    int32_t seed = 0);
  // Range partitioning on these key columns (default: all key columns in key order; an empty list
  // means no range partitioning).
  TableCreator& set_range_partition_columns(const std::vector<std::string>& columns);
  // A range partition [lower, upper) by default; rows set only range columns (a row with no
  // column set is unbounded). Without any, there is one unbounded range.
  TableCreator& add_range_partition(std::unique_ptr<PartialRow> lower,
                                    std::unique_ptr<PartialRow> upper,
                                    RangePartitionBound lower_type = INCLUSIVE_BOUND,
                                    RangePartitionBound upper_type = EXCLUSIVE_BOUND);
  // Splits the range partition that contains `split_row` in two.
  TableCreator& add_range_partition_split(std::unique_ptr<PartialRow> split_row);
  // 0: the master's default (3).
  TableCreator& num_replicas(int n);
  // Wait until every tablet has a leader (default true).
  TableCreator& wait(bool wait);
  TableCreator& timeout(std::chrono::milliseconds timeout);

  // INVALID_ARGUMENT for a missing name or schema or a bad partitioning; ALREADY_EXISTS; the
  // master's error otherwise.
  absl::Status Create();

 private:
  friend class Client;
  friend struct internal::Access;
  struct Data;
  explicit TableCreator(Client* client);
  std::unique_ptr<Data> data_;
};

// Alters a table: steps applied in order, all or nothing. Not thread-safe.
class BASALT_EXPORT TableAlterer {
 public:
  ~TableAlterer();
  TableAlterer* RenameTo(std::string new_name);
  // The spec is owned by the alterer; NotNull columns need a Default.
  ColumnSpec* AddColumn(std::string name);
  // Only RenameTo is supported on the returned spec.
  ColumnSpec* AlterColumn(std::string name);
  TableAlterer* DropColumn(std::string name);
  TableAlterer* AddRangePartition(
      std::unique_ptr<PartialRow> lower, std::unique_ptr<PartialRow> upper,
      TableCreator::RangePartitionBound lower_type = TableCreator::INCLUSIVE_BOUND,
      TableCreator::RangePartitionBound upper_type = TableCreator::EXCLUSIVE_BOUND);
  TableAlterer* DropRangePartition(
      std::unique_ptr<PartialRow> lower, std::unique_ptr<PartialRow> upper,
      TableCreator::RangePartitionBound lower_type = TableCreator::INCLUSIVE_BOUND,
      TableCreator::RangePartitionBound upper_type = TableCreator::EXCLUSIVE_BOUND);
  // Wait until every tablet runs the new schema (default true).
  TableAlterer* wait(bool wait);
  TableAlterer* timeout(std::chrono::milliseconds timeout);

  // INVALID_ARGUMENT for an empty or malformed alteration (naming the step); the master's error
  // otherwise. Table handles opened before keep the old schema for the rows they build; their
  // writes are re-encoded for the new one (a row setting a dropped column fails alone). Reopen
  // the table to write the new columns.
  absl::Status Alter();

 private:
  friend class Client;
  friend struct internal::Access;
  struct Data;
  TableAlterer(Client* client, std::string table_name);
  std::unique_ptr<Data> data_;
};

// An open table: its schema and partitioning as of OpenTable, and factories for operations and
// predicates. Thread-safe.
class BASALT_EXPORT Table : public std::enable_shared_from_this<Table> {
 public:
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  const std::string& name() const;
  const std::string& id() const;
  const Schema& schema() const;
  int num_replicas() const;
  Client* client() const;

  std::unique_ptr<Insert> NewInsert();
  std::unique_ptr<Upsert> NewUpsert();
  std::unique_ptr<Update> NewUpdate();
  std::unique_ptr<Delete> NewDelete();
  std::unique_ptr<InsertIgnore> NewInsertIgnore();
  std::unique_ptr<UpdateIgnore> NewUpdateIgnore();
  std::unique_ptr<DeleteIgnore> NewDeleteIgnore();

  // Predicates on a column by name. Errors (unknown column, wrong value type) surface in
  // Scanner::AddConjunctPredicate.
  std::unique_ptr<Predicate> NewComparisonPredicate(const std::string& column,
                                                    Predicate::ComparisonOp op, const Value& value);
  std::unique_ptr<Predicate> NewInListPredicate(const std::string& column,
                                                const std::vector<Value>& values);
  std::unique_ptr<Predicate> NewIsNullPredicate(const std::string& column);
  std::unique_ptr<Predicate> NewIsNotNullPredicate(const std::string& column);

 private:
  friend class Client;
  friend class Scanner;
  friend struct internal::Access;
  struct Data;
  explicit Table(std::unique_ptr<Data> data);
  std::unique_ptr<Data> data_;
};

}  // namespace basalt::client
