#pragma once

// Raw-RPC helpers for the cluster tests: a test table created through MasterService, rows
// written with RowOperationsEncoder to each tablet's leader, and scans decoded from columnar
// batches. Private to tests/ (it includes generated protobuf headers).
//
// The test table's schema is (key INT32 PRIMARY KEY, int_val INT32 NOT NULL, string_val STRING
// NULL), hash partitioned on key and range partitioned on key at the given split keys.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/partition.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "proto/master.grpc.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "testing/external_mini_cluster.h"

namespace basalt::cluster_test {

struct TestRow {
  int32_t key = 0;
  int32_t int_val = 0;
  std::optional<std::string> string_val;
  bool operator==(const TestRow& other) const = default;
};
// Deterministic contents for `key`: int_val = 2 * key + version, string_val NULL for every third
// key, else "row-<key>-<version>".
TestRow MakeRow(int32_t key, int version = 0);
std::vector<TestRow> MakeRows(int32_t first_key, int count, int version = 0);
std::string RowToString(const TestRow& row);

// The test schema, without column ids (the master assigns them).
Schema TestSchema();

struct TestTableSpec {
  std::string name;
  int hash_buckets = 2;  // 0: no hash level.
  std::vector<int32_t> split_keys;
  int num_replicas = 3;
};

// The CreateTable request for `spec` (schema, hash + range partitioning, split rows).
void BuildCreateTableRequest(const TestTableSpec& spec, pb::CreateTableRequestPB* req);

// A deadline `timeout` from now for a raw RPC.
void SetDeadline(grpc::ClientContext* ctx, absl::Duration timeout = absl::Seconds(10));

struct TabletInfo {
  std::string tablet_id;
  Partition partition;
  std::vector<std::string> replica_uuids;
};

// A per-row error of a write: index into the rows written, and the status.
using RowError = std::pair<int, absl::Status>;

// A table created by raw RPCs and what the master says about it. Not thread-safe.
class TestTable {
 public:
  // CreateTable, then waits (up to `timeout`) for IsCreateTableDone, reads the schema the master
  // assigned and the tablet locations.
  static absl::StatusOr<std::unique_ptr<TestTable>> Create(ExternalMiniCluster* cluster,
                                                           const TestTableSpec& spec,
                                                           absl::Duration timeout);

  const std::string& id() const { return id_; }
  const std::string& name() const { return name_; }
  // The schema with the master's column ids (what writes must carry).
  const Schema& schema() const { return schema_; }
  const PartitionSchema& partition_schema() const { return partition_schema_; }
  const std::vector<TabletInfo>& tablets() const { return tablets_; }

  // GetTableLocations: every tablet's locations (also returned, for checks on replicas/roles).
  absl::StatusOr<pb::GetTableLocationsResponsePB> LoadLocations();
  // The index in tablets() of the tablet holding `key`.
  int TabletIndexForKey(int32_t key) const;

  // A Write request for tablet `tablet_idx` with one operation of `type` per row (update and
  // delete operations carry only the columns they need).
  void BuildWrite(int tablet_idx, RowOperationType type, const std::vector<TestRow>& rows,
                  pb::WriteRequestPB* req) const;
  // Writes `rows` (any tablets) as operations of `type`: grouped per tablet, each group sent to
  // the tablet's leader, retried on UNAVAILABLE (leader change, bootstrapping) until `timeout`.
  // A timed-out RPC (DEADLINE_EXCEEDED) is not retried: the write may have been applied.
  // Per-row errors go to *row_errors (indexes into `rows`) if given, else are an error.
  absl::Status Write(RowOperationType type, const std::vector<TestRow>& rows,
                     absl::Duration timeout, std::vector<RowError>* row_errors = nullptr);

  // Every row of tablet `tablet_idx` as the replica on tablet server `ts_idx` returns it
  // (ordered scan, several continuation calls of `batch_size_bytes`).
  absl::StatusOr<std::vector<TestRow>> ScanTablet(int tablet_idx, int ts_idx,
                                                  pb::ReadModePB mode = pb::READ_LATEST,
                                                  uint32_t batch_size_bytes = 16 << 10);
  // Every row of the table read from each tablet's leader (retrying leader changes until
  // `timeout`), sorted by key.
  absl::StatusOr<std::vector<TestRow>> ScanAll(absl::Duration timeout);

  // The tablet server index leading tablet `tablet_idx` (cached; refreshed when stale).
  absl::StatusOr<int> LeaderOf(int tablet_idx, absl::Duration timeout);
  void ForgetLeader(int tablet_idx) { leaders_[tablet_idx] = -1; }

 private:
  explicit TestTable(ExternalMiniCluster* cluster) : cluster_(cluster) {}
  absl::Status LoadSchema();
  // One attempt at writing a group to its tablet's leader.
  absl::Status WriteToLeader(int tablet_idx, const pb::WriteRequestPB& req,
                             pb::WriteResponsePB* resp, absl::Duration timeout);

  ExternalMiniCluster* const cluster_;
  std::string id_;
  std::string name_;
  Schema schema_;
  PartitionSchema partition_schema_;
  std::vector<TabletInfo> tablets_;
  std::vector<int> leaders_;  // Per tablet: tablet server index, -1 unknown.
};

// TabletServerService.Checksum of `tablet_id` on tablet server `ts_idx` at `snap_timestamp`
// (0: the server picks).
absl::StatusOr<pb::ChecksumResponsePB> ChecksumReplica(ExternalMiniCluster* cluster, int ts_idx,
                                                       const std::string& tablet_id,
                                                       uint64_t snap_timestamp);

// Decodes a columnar batch of the full test projection (key, int_val, string_val), validating
// every buffer size; DATA_LOSS on anything inconsistent.
absl::Status DecodeTestRows(const pb::ColumnarRowBlockPB& block, std::vector<TestRow>* rows);

// The ErrorDetailPB code of `s`, or -1 if it has none.
int ErrorDetailCode(const absl::Status& s);

}  // namespace basalt::cluster_test
