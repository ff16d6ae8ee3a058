#pragma once

// Helpers shared by the master's tests (header-only; included only by *_test.cc).

#include <stdlib.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/env.h"
#include "common/partial_row.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "consensus/transport.h"
#include "master/catalog_manager.h"
#include "master/sys_catalog.h"
#include "master/ts_admin_client.h"
#include "master/ts_manager.h"
#include "proto/common.pb.h"
#include "proto/master.pb.h"
#include "proto/master_catalog.pb.h"
#include "proto/tserver.pb.h"

namespace basalt::master_test {

// Records what the catalog hands to its listener.
class RecordingListener : public SysCatalogListener {
 public:
  absl::Status LoadEntries(const pb::SysCatalogWriteBatchPB& entries) override {
    absl::MutexLock l(&mu_);
    loaded_ = entries;
    return load_status_;
  }
  void ApplyBatch(const pb::SysCatalogWriteBatchPB& batch) override {
    absl::MutexLock l(&mu_);
    applied_.push_back(batch);
  }
  pb::SysCatalogWriteBatchPB loaded() const {
    absl::MutexLock l(&mu_);
    return loaded_;
  }
  size_t num_applied() const {
    absl::MutexLock l(&mu_);
    return applied_.size();
  }
  void set_load_status(absl::Status s) {
    absl::MutexLock l(&mu_);
    load_status_ = s;
  }

 private:
  mutable absl::Mutex mu_;
  pb::SysCatalogWriteBatchPB loaded_;
  std::vector<pb::SysCatalogWriteBatchPB> applied_;
  absl::Status load_status_;
};

// A fresh directory under ::testing::TempDir(), removed at destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string tmpl = ::testing::TempDir() + prefix + ".XXXXXX";
    char* p = mkdtemp(tmpl.data());
    path_ = p != nullptr ? tmpl : std::string();
  }
  ~TempDir() {
    if (!path_.empty()) (void)Env::Default()->DeleteDirRecursively(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// (key INT32 NOT NULL, name STRING NULLABLE, val INT64 NOT NULL DEFAULT?) without a default.
inline Schema TestSchema() {
  return *Schema::Create({ColumnSchema("key", DataType::kInt32),
                          ColumnSchema("name", DataType::kString, /*is_nullable=*/true),
                          ColumnSchema("val", DataType::kInt64, /*is_nullable=*/true)},
                         1);
}

inline pb::SchemaPB TestSchemaPB() {
  pb::SchemaPB pb;
  TestSchema().ToPB(&pb);
  return pb;
}

// Split rows at the given keys, encoded against TestSchema().
inline pb::RowOperationsPB SplitRows(const Schema& schema, const std::vector<int32_t>& keys) {
  pb::RowOperationsPB ops;
  RowOperationsEncoder enc(&ops);
  for (int32_t k : keys) {
    PartialRow row(&schema);
    (void)row.SetInt32("key", k);
    enc.Add(RowOperationType::kSplitRow, row);
  }
  return ops;
}

// One range [lower, upper) on "key".
inline pb::RowOperationsPB RangeBoundsOps(const Schema& schema, int32_t lower, int32_t upper) {
  pb::RowOperationsPB ops;
  RowOperationsEncoder enc(&ops);
  PartialRow lo(&schema), hi(&schema);
  (void)lo.SetInt32("key", lower);
  (void)hi.SetInt32("key", upper);
  enc.Add(RowOperationType::kRangeLowerBound, lo);
  enc.Add(RowOperationType::kRangeUpperBound, hi);
  return ops;
}

// A CreateTable request for TestSchema() range-partitioned on key with `splits`.
inline pb::CreateTableRequestPB CreateTableRequest(const std::string& name,
                                                   const std::vector<int32_t>& splits,
                                                   int num_replicas = 3) {
  pb::CreateTableRequestPB req;
  req.set_name(name);
  *req.mutable_schema() = TestSchemaPB();
  Schema schema = TestSchema();
  *req.mutable_split_rows_range_bounds() = SplitRows(schema, splits);
  req.set_num_replicas(num_replicas);
  return req;
}

// A heartbeat from "ts-<i>" at 127.0.0.1:(10000 + i).
inline pb::TSHeartbeatRequestPB Heartbeat(int i, bool incremental = false) {
  pb::TSHeartbeatRequestPB hb;
  hb.set_ts_uuid("ts-" + std::to_string(i));
  hb.mutable_rpc_address()->set_host("127.0.0.1");
  hb.mutable_rpc_address()->set_port(10000 + i);
  hb.set_is_incremental(incremental);
  return hb;
}

inline void AddReport(pb::TSHeartbeatRequestPB* hb, const std::string& tablet_id, bool leader,
                      uint32_t schema_version = 0, uint64_t term = 1) {
  auto* t = hb->add_updated_tablets();
  t->set_tablet_id(tablet_id);
  t->set_state(pb::TABLET_RUNNING);
  t->set_role(leader ? pb::LEADER : pb::FOLLOWER);
  t->set_term(term);
  t->set_schema_version(schema_version);
}

// Records every admin request; fails the first `fail_first` attempts of each (kind, tablet,
// server) with UNAVAILABLE. Thread-safe.
class FakeTsAdminClient : public TsAdminClient {
 public:
  struct Call {
    std::string kind;  // "create", "delete", "alter"
    std::string address;
    std::string dest_uuid;
    std::string tablet_id;
    uint32_t schema_version = 0;
    std::string table_name;
    int num_peers = 0;
  };

  absl::Status CreateTablet(const std::string& address,
                            const pb::CreateTabletRequestPB& req) override {
    return Record({"create", address, req.dest_uuid(), req.tablet_id(), req.schema().version(),
                   req.table_name(), req.config().peers_size()});
  }
  absl::Status DeleteTablet(const std::string& address,
                            const pb::DeleteTabletRequestPB& req) override {
    return Record({"delete", address, req.dest_uuid(), req.tablet_id()});
  }
  absl::StatusOr<uint32_t> AlterSchema(const std::string& address,
                                       const pb::AlterSchemaRequestPB& req) override {
    absl::Status s = Record({"alter", address, req.dest_uuid(), req.tablet_id(),
                             req.schema().version(), req.new_table_name()});
    if (!s.ok()) return s;
    return req.schema().version();
  }

  void set_fail_first(int n) {
    absl::MutexLock l(&mu_);
    fail_first_ = n;
  }
  // Successful calls only.
  std::vector<Call> calls() const {
    absl::MutexLock l(&mu_);
    return calls_;
  }
  std::vector<Call> calls(const std::string& kind) const {
    std::vector<Call> out;
    for (const Call& c : calls()) {
      if (c.kind == kind) out.push_back(c);
    }
    return out;
  }
  int attempts() const {
    absl::MutexLock l(&mu_);
    return total_attempts_;
  }
  void Clear() {
    absl::MutexLock l(&mu_);
    calls_.clear();
  }

 private:
  absl::Status Record(Call c) {
    absl::MutexLock l(&mu_);
    ++total_attempts_;
    int& n = attempts_[c.kind + "/" + c.tablet_id + "/" + c.dest_uuid];
    if (++n <= fail_first_) return absl::UnavailableError("injected failure");
    calls_.push_back(std::move(c));
    return absl::OkStatus();
  }

  mutable absl::Mutex mu_;
  int fail_first_ ABSL_GUARDED_BY(mu_) = 0;
  int total_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> attempts_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
};

// One master's catalog: a CatalogManager over its SysCatalog in `dir`, with its own TsManager
// (kept across Close/Open, like the tablet servers' liveness a restarted master relearns at once)
// and fake admin client. The reconciliation thread is not started: tests call ReconcileOnce.
// Lifecycle: Open -> (it serves once it leads) -> Close -> Open again (a restart) ...
class TestCatalog {
 public:
  // `voters`: the uuids of the catalog group's masters; empty: this master alone. `transport`
  // and `clock` are borrowed and must outlive this object.
  TestCatalog(std::string dir, std::string uuid, std::vector<std::string> voters,
              Transport* transport, Clock* clock)
      : dir_(std::move(dir)),
        uuid_(std::move(uuid)),
        voters_(std::move(voters)),
        transport_(transport),
        clock_(clock),
        ts_(clock, /*unresponsive_timeout_ms=*/600000) {}
  ~TestCatalog() { Close(); }

  // Opens and starts the catalog (loading it from disk) and marks the manager ready.
  absl::Status Open() {
    CatalogManagerOptions o;
    o.clock = clock_;
    o.placement_seed = 1;
    cm_ = std::make_unique<CatalogManager>(&ts_, &admin_, o);
    SysCatalogOptions so;
    so.data_dir = dir_;
    so.wal_dir = dir_;
    so.uuid = uuid_;
    so.voters = voters_;
    so.tick_interval_ms = 10;
    absl::Status s = Env::Default()->CreateDirs(dir_);
    if (!s.ok()) return s;
    auto c = SysCatalog::Open(Env::Default(), so, transport_, cm_.get());
    if (!c.ok()) return c.status();
    catalog_ = *std::move(c);
    cm_->set_sys_catalog(catalog_.get());
    s = catalog_->Start();
    if (s.ok()) cm_->SetReady(true);
    return s;
  }
  // Stops the manager and the catalog (a master going down). Idempotent.
  void Close() {
    if (cm_ != nullptr) cm_->Shutdown();
    if (catalog_ != nullptr) catalog_->Shutdown();
    catalog_.reset();
    cm_.reset();
  }
  bool open() const { return catalog_ != nullptr; }
  // Heartbeats from ts-0 .. ts-(n-1), so that they are live here.
  absl::Status Heartbeats(int n) {
    for (int i = 0; i < n; ++i) {
      pb::TSHeartbeatResponsePB resp;
      absl::Status s = cm_->ProcessHeartbeat(Heartbeat(i), &resp);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  const std::string& dir() const { return dir_; }
  CatalogManager* cm() const { return cm_.get(); }
  SysCatalog* catalog() const { return catalog_.get(); }

 private:
  const std::string dir_;
  const std::string uuid_;
  const std::vector<std::string> voters_;
  Transport* const transport_;
  Clock* const clock_;
  TsManager ts_;
  FakeTsAdminClient admin_;
  std::unique_ptr<CatalogManager> cm_;
  std::unique_ptr<SysCatalog> catalog_;
};

}  // namespace basalt::master_test
