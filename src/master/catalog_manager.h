#pragma once

// CatalogManager: the master's in-memory catalog and everything it drives (docs/master.md).
//
// Durable state (tables and tablets) lives in the SysCatalog and is mirrored here: the sys
// catalog hands every entry to this class at load (LoadEntries) and every applied batch
// afterwards (ApplyBatch), so memory always equals what is durable. DDL (CreateTable,
// DeleteTable, AlterTable) validates a request completely, builds a SysCatalogWriteBatchPB and
// writes it through the sys catalog; it is visible once the write returns.
//
// Soft state (never persisted) comes from tablet server heartbeats: the last report of every
// replica (state, role, term, schema version). It answers IsCreateTableDone, IsAlterTableDone
// and the replica roles of GetTableLocations, and drives the reconciliation loop.
//
// Reconciliation (a thread started by Start(), one round per --catalog_manager_reconcile_
// interval_ms or when woken by a change): sends CreateTablet to placed replicas not yet reported,
// DeleteTablet to replicas of deleted tablets, AlterSchema to the leaders of tablets reporting an
// older schema version, each with retries and exponential backoff; then persists state changes
// (table CREATING -> RUNNING once every tablet has a running leader, ALTERING -> RUNNING once
// every tablet runs the current schema version, tablet CREATING -> RUNNING). No lock is held
// across an RPC or a catalog write except ddl_mu_, which only serializes catalog writers.
//
// Lifecycle: construct -> set_sys_catalog() -> (SysCatalog::Open loads entries) -> SetReady(true)
// -> Start() -> requests -> Shutdown() (or destructor). Requests are refused with UNAVAILABLE
// (CATALOG_NOT_READY / NOT_THE_LEADER_MASTER) until ready.
//
// Lock order: ddl_mu_ before mu_. Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "master/catalog_entries.h"
#include "master/ddl_answers.h"
#include "master/placement_policy.h"
#include "master/sys_catalog.h"
#include "master/ts_admin_client.h"
#include "master/ts_manager.h"
#include "rpc/net_util.h"

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace basalt {

namespace pb {
class AlterTableRequestPB;
class AlterTableResponsePB;
class CreateTableRequestPB;
class CreateTableResponsePB;
class DeleteTableRequestPB;
class DeleteTableResponsePB;
class GetTableLocationsRequestPB;
class GetTableLocationsResponsePB;
class GetTableSchemaRequestPB;
class GetTableSchemaResponsePB;
class IsAlterTableDoneRequestPB;
class IsAlterTableDoneResponsePB;
class IsCreateTableDoneRequestPB;
class IsCreateTableDoneResponsePB;
class ListTablesRequestPB;
class ListTablesResponsePB;
class ListTabletServersResponsePB;
class ChangeTServerStateRequestPB;
class TableIdentifierPB;
class TabletLocationsPB;
class TSHeartbeatRequestPB;
class TSHeartbeatResponsePB;
}  // namespace pb

struct CatalogManagerOptions {
  Clock* clock = nullptr;       // nullptr: Clock::Default(). Backoff and task timing.
  uint64_t placement_seed = 0;  // 0: derived from the time.
  absl::Duration write_timeout = absl::Seconds(30);  // Of each catalog write.
};

class CatalogManager : public SysCatalogListener {
 public:
  // `ts_manager` and `admin` are borrowed and must outlive the manager.
  CatalogManager(TsManager* ts_manager, TsAdminClient* admin, CatalogManagerOptions options = {});
  ~CatalogManager() override;

  CatalogManager(const CatalogManager&) = delete;
  CatalogManager& operator=(const CatalogManager&) = delete;

  // The catalog written through. Borrowed; must outlive the manager. Set once, before SetReady;
  // requests may already arrive (they are refused until then).
  void set_sys_catalog(SysCatalog* sys_catalog) { sys_catalog_.store(sys_catalog); }
  // Ready = the catalog is loaded (and the master is not shutting down).
  void SetReady(bool ready) ABSL_LOCKS_EXCLUDED(mu_);
  // OK when catalog requests may be served: ready, leading the catalog group, and an entry of the
  // current term applied (SysCatalog::LeaderReadyTerm). Else UNAVAILABLE with
  // NOT_THE_LEADER_MASTER (and the leader's address when `leader_address` knows it) or
  // CATALOG_NOT_READY attached (rpc_status.h).
  absl::Status CheckReady() const ABSL_LOCKS_EXCLUDED(mu_);
  // OK when the catalog is loaded (heartbeats are processed by every master); else UNAVAILABLE +
  // CATALOG_NOT_READY.
  absl::Status CheckLoaded() const ABSL_LOCKS_EXCLUDED(mu_);
  // Resolves a master uuid to its RPC address for NOT_THE_LEADER_MASTER hints. Set once before
  // requests arrive; may be unset (no hint).
  void set_leader_address_lookup(std::function<std::optional<HostPort>(const std::string&)> fn) {
    leader_address_lookup_ = std::move(fn);
  }

  // Starts / stops the reconciliation thread. Shutdown is idempotent.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(loop_mu_);
  void Shutdown() ABSL_LOCKS_EXCLUDED(loop_mu_);
  // One reconciliation round, synchronously (what the thread runs; tests call it directly).
  void ReconcileOnce() ABSL_LOCKS_EXCLUDED(mu_, ddl_mu_);
  // Wakes the reconciliation thread.
  void Kick() ABSL_LOCKS_EXCLUDED(loop_mu_);

  // ---- MasterService operations (proto/master.proto). Every field is validated first:
  // INVALID_ARGUMENT naming the field; NOT_FOUND + TABLE_NOT_FOUND for an unknown table;
  // ALREADY_EXISTS for a taken table name; the catalog write's errors.
  // CreateTable, DeleteTable and AlterTable with a request id are exactly-once (docs/master.md
  // "Exactly-once DDL"): a request that already took effect gets its stored first answer instead
  // of being validated and executed again (FindDdlAnswerLocked lists the errors). ----
  absl::Status CreateTable(const pb::CreateTableRequestPB& req, pb::CreateTableResponsePB* resp)
      ABSL_LOCKS_EXCLUDED(mu_, ddl_mu_);
  absl::Status IsCreateTableDone(const pb::IsCreateTableDoneRequestPB& req,
                                 pb::IsCreateTableDoneResponsePB* resp) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteTable(const pb::DeleteTableRequestPB& req, pb::DeleteTableResponsePB* resp)
      ABSL_LOCKS_EXCLUDED(mu_, ddl_mu_);
  absl::Status AlterTable(const pb::AlterTableRequestPB& req, pb::AlterTableResponsePB* resp)
      ABSL_LOCKS_EXCLUDED(mu_, ddl_mu_);
  absl::Status IsAlterTableDone(const pb::IsAlterTableDoneRequestPB& req,
                                pb::IsAlterTableDoneResponsePB* resp) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ListTables(const pb::ListTablesRequestPB& req, pb::ListTablesResponsePB* resp)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status GetTableSchema(const pb::GetTableSchemaRequestPB& req,
                              pb::GetTableSchemaResponsePB* resp) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status GetTableLocations(const pb::GetTableLocationsRequestPB& req,
                                 pb::GetTableLocationsResponsePB* resp) ABSL_LOCKS_EXCLUDED(mu_);
  void ListTabletServers(pb::ListTabletServersResponsePB* resp) const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ChangeTServerState(const pb::ChangeTServerStateRequestPB& req)
      ABSL_LOCKS_EXCLUDED(mu_, ddl_mu_);
  // Registers the server and its report. Sets needs_full_tablet_report when this master has no
  // full report of the server yet, and lists the other tablet servers' addresses.
  absl::Status ProcessHeartbeat(const pb::TSHeartbeatRequestPB& req,
                                pb::TSHeartbeatResponsePB* resp) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- SysCatalogListener ----
  absl::Status LoadEntries(const pb::SysCatalogWriteBatchPB& entries) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void ApplyBatch(const pb::SysCatalogWriteBatchPB& batch) override ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Observers for tests and the master ----
  // A tablet whose replicas are not all healthy voters (docs/tablet_copy.md "Automatic repair").
  struct TabletHealth {
    std::string tablet_id;
    std::string table_name;
    // UNDER_REPLICATED (fewer healthy voters than the replication factor), RECOVERING (a
    // replacement or added replica is on its way) or UNAVAILABLE (no leader reported).
    std::string state;
    std::string detail;
  };
  std::vector<TabletHealth> UnhealthyTablets() const ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<const TableInfo> GetTableByName(const std::string& name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The table's live tablets in partition-key order.
  std::vector<std::shared_ptr<const TabletInfo>> GetTablets(const std::string& table_id) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One admin request the reconciliation loop sends.
  struct Task;
  // Retry bookkeeping per (kind, tablet, server).
  struct TaskState {
    int attempts = 0;                 // Consecutive failures.
    int64_t next_attempt_micros = 0;  // Monotonic; 0: now.
  };
  using TabletMap = std::map<std::string, std::string>;  // partition_key_start -> tablet id.

  // ---- Catalog state (catalog_manager.cc) ----
  // Installs entries into memory. `strict`: a bad entry fails (load) instead of being skipped.
  absl::Status InstallLocked(const pb::SysCatalogWriteBatchPB& batch, bool strict)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void InstallTableLocked(std::shared_ptr<const TableInfo> table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void InstallTabletLocked(std::shared_ptr<const TabletInfo> tablet)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A live table by id (wins) or name: NOT_FOUND + TABLE_NOT_FOUND, or INVALID_ARGUMENT when
  // neither is set.
  absl::StatusOr<std::shared_ptr<const TableInfo>> FindTableLocked(
      const pb::TableIdentifierPB& id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::shared_ptr<const TableInfo>> FindTable(const pb::TableIdentifierPB& id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<const TabletInfo>> TabletsLocked(const std::string& table_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The report of the replica that leads `tablet_id` (running, highest term), or nullptr.
  const ReplicaReport* LeaderReportLocked(const std::string& tablet_id,
                                          std::string* leader_uuid = nullptr) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool CreateDoneLocked(const TableInfo& table) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AlterDoneLocked(const TableInfo& table) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FillLocationsLocked(const TabletInfo& tablet, pb::TabletLocationsPB* out) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns whether the report named tablets this master does not know (yet).
  bool ApplyReportLocked(const std::string& ts_uuid, const pb::TSHeartbeatRequestPB& req)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ClearReportLocked(const std::string& ts_uuid, const std::string& tablet_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- DDL (catalog_ddl.cc) ----
  // Called right after taking ddl_mu_, before validating against memory: records the term in
  // which memory is complete (LeaderReadyTerm), so that WriteCatalog lands in that same term.
  // UNAVAILABLE + NOT_THE_LEADER_MASTER / CATALOG_NOT_READY otherwise.
  absl::Status BeginCatalogWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(ddl_mu_);
  // How long this master has led the catalog in `term`, counted from the first time it noticed
  // (a heartbeat or a DDL in that term).
  absl::Duration LeaderTenure(uint64_t term) ABSL_LOCKS_EXCLUDED(tenure_mu_);
  absl::Status WriteCatalog(const pb::SysCatalogWriteBatchPB& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ddl_mu_);
  // Assigns replicas for `num_tablets` tablets of `num_replicas` each, balancing on the
  // replicas already assigned. INVALID_ARGUMENT when there are too few live servers, except
  // while this master's leadership is younger than the tablet servers' unresponsive timeout:
  // then UNAVAILABLE + CATALOG_NOT_READY (they may not have reported to it yet; clients retry).
  absl::StatusOr<std::vector<std::vector<std::string>>> PlaceReplicas(int num_tablets,
                                                                      int num_replicas)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ddl_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds new CREATING tablets for `partitions` of `table_id` to `batch`.
  absl::Status AddNewTablets(const std::string& table_id, const std::vector<Partition>& partitions,
                             int num_replicas, pb::SysCatalogWriteBatchPB* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ddl_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckNameFree(const std::string& name) const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Exactly-once DDL (catalog_ddl.cc) ----
  // Called right after BeginCatalogWriteLocked (so memory holds every committed answer and no
  // write is in flight): true with `*resp` set to the stored first answer of request `id`; false
  // when the request has no id (empty client_id) or is new, and must be executed. Errors:
  // INVALID_ARGUMENT for a client id over 128 bytes, a watermark above seq_no, or an id whose
  // stored answer is of another method; FAILED_PRECONDITION for a request below the client's
  // watermark that is no longer stored (the client completed it); DATA_LOSS when the stored
  // answer does not parse.
  absl::StatusOr<bool> FindDdlAnswerLocked(const pb::RequestIdPB& id,
                                           pb::SysDdlAnswerEntryPB::Method method,
                                           google::protobuf::Message* resp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ddl_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds to `batch` (the change that `resp` answers) the answer to request `id`, and the deletion
  // of the client's answers below its watermark. No-op for a request without an id.
  void AddDdlAnswer(const pb::RequestIdPB& id, pb::SysDdlAnswerEntryPB::Method method,
                    const google::protobuf::Message& resp, pb::SysCatalogWriteBatchPB* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ddl_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds to `batch` the deletion of answers older than --remember_ddl_responses_ttl_ms (at most
  // a bounded number per batch; the next round takes the rest).
  void AddExpiredDdlAnswersLocked(pb::SysCatalogWriteBatchPB* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- Reconciliation (catalog_reconciler.cc) ----
  void ReconcileLoop() ABSL_LOCKS_EXCLUDED(loop_mu_);
  std::vector<Task> CollectTasks() ABSL_LOCKS_EXCLUDED(mu_);
  void CollectTabletTasksLocked(const TabletInfo& tablet, const TableInfo& table,
                                const std::map<std::string, TsDescriptor>& live, int64_t now,
                                std::vector<Task>* tasks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds a task of `kind` for server `uuid` (key letter `k`); nullptr if that server is not live
  // or the task is not due.
  using AddTaskFn = std::function<Task*(int kind, char k, const std::string& uuid)>;
  // Automatic repair (replica_repair.h): at most one ChangeConfig to the tablet's leader.
  void CollectRepairTaskLocked(const TabletInfo& tablet, const TableInfo& table,
                               const std::map<std::string, ReplicaReport>& reports,
                               const std::string& leader, const ReplicaReport& leader_report,
                               const std::map<std::string, TsDescriptor>& servers,
                               const AddTaskFn& add) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TaskDueLocked(const std::string& key, int64_t now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunTask(Task* task);
  void RecordResults(const std::vector<Task>& tasks) ABSL_LOCKS_EXCLUDED(mu_);
  // Persists CREATING -> RUNNING and ALTERING -> RUNNING transitions that are due.
  void PersistStateChanges() ABSL_LOCKS_EXCLUDED(mu_, ddl_mu_);

  // Constant after construction.
  TsManager* const ts_manager_;
  TsAdminClient* const admin_;
  const CatalogManagerOptions options_;
  Clock* const clock_;
  // When this master first noticed that it leads the catalog in tenure_term_ (a heartbeat or a
  // DDL in that term), on clock_'s monotonic scale.
  absl::Mutex tenure_mu_;  // A leaf lock.
  uint64_t tenure_term_ ABSL_GUARDED_BY(tenure_mu_) = 0;
  int64_t tenure_since_micros_ ABSL_GUARDED_BY(tenure_mu_) = 0;
  std::atomic<SysCatalog*> sys_catalog_{nullptr};  // Set once (set_sys_catalog).
  std::function<std::optional<HostPort>(const std::string&)> leader_address_lookup_;

  // Serializes catalog writers (DDL and the loop's state changes), so that validation against
  // the in-memory catalog and the write that follows are atomic. Held across catalog writes
  // (which is what it is for); never needed by readers.
  absl::Mutex ddl_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  PlacementPolicy placement_ ABSL_GUARDED_BY(ddl_mu_);
  // The term BeginCatalogWriteLocked found this master ready in.
  uint64_t write_term_ ABSL_GUARDED_BY(ddl_mu_) = 0;

  mutable absl::Mutex mu_;
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, std::shared_ptr<const TableInfo>> tables_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> table_ids_by_name_ ABSL_GUARDED_BY(mu_);  // Live.
  absl::flat_hash_map<std::string, std::shared_ptr<const TabletInfo>> tablets_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, TabletMap> table_tablets_ ABSL_GUARDED_BY(mu_);  // Live.
  // Soft state: tablet id -> (server uuid -> last report), and the reverse index.
  absl::flat_hash_map<std::string, std::map<std::string, ReplicaReport>> reports_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::set<std::string>> ts_tablets_ ABSL_GUARDED_BY(mu_);
  // Retry bookkeeping of the reconciliation loop by task key.
  std::map<std::string, TaskState> task_states_ ABSL_GUARDED_BY(mu_);
  // Replicas per server as of the current reconciliation round, and where repairs place
  // replacements.
  std::map<std::string, int64_t> replica_counts_ ABSL_GUARDED_BY(mu_);
  PlacementPolicy repair_placement_ ABSL_GUARDED_BY(mu_);
  // Tablet servers in maintenance (never considered failed, never given a replacement).
  std::set<std::string> maintenance_ ABSL_GUARDED_BY(mu_);
  // The remembered DDL answers (catalog entries, like the tables).
  DdlAnswers ddl_answers_ ABSL_GUARDED_BY(mu_);

  // The reconciliation thread.
  absl::Mutex loop_mu_;
  bool loop_running_ ABSL_GUARDED_BY(loop_mu_) = false;
  bool loop_stop_ ABSL_GUARDED_BY(loop_mu_) = false;
  bool loop_kicked_ ABSL_GUARDED_BY(loop_mu_) = false;
  std::thread loop_thread_;
};

}  // namespace basalt
