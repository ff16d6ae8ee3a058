// CatalogManager's reconciliation loop (catalog_manager.h): drives tablet servers towards the
// catalog with CreateTablet, DeleteTablet and AlterSchema, and persists state transitions.

#include <algorithm>
#include <atomic>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/strings.h"
#include "master/catalog_manager.h"
#include "master/replica_repair.h"
#include "proto/consensus.pb.h"
#include "proto/master_catalog.pb.h"
#include "proto/tserver.pb.h"

DEFINE_int32(catalog_manager_reconcile_interval_ms, 500,
             "Period of the master's reconciliation loop, which sends CreateTablet, DeleteTablet "
             "and AlterSchema to tablet servers (it also runs at once after a change).");
DEFINE_int32(catalog_manager_task_retry_base_ms, 100,
             "Delay before the first retry of a failed admin request to a tablet server; it "
             "doubles with each further failure.");
DEFINE_int32(catalog_manager_task_retry_max_ms, 10000,
             "Longest delay between retries of a failed admin request to a tablet server.");
DEFINE_int32(catalog_manager_task_resend_ms, 10000,
             "After a successful admin request, how long the master waits for the tablet "
             "server's report to confirm it before sending the request again.");
DEFINE_int32(catalog_manager_max_concurrent_tasks, 8,
             "Admin requests the reconciliation loop sends in parallel.");
DEFINE_bool(raft_prepare_replacement_before_eviction, true,
            "When a tablet's leader reports a voter FAILED, first add a replacement replica on "
            "another server and evict the failed voter only once the replacement is a voter "
            "(3-4-3); when false, evict first (3-2-3).");

namespace basalt {

struct CatalogManager::Task {
  enum class Kind { kCreate, kDelete, kAlter, kChangeConfig };
  Kind kind = Kind::kCreate;
  std::string key;  // In task_states_.
  std::string ts_uuid;
  std::string address;
  std::string tablet_id;
  pb::CreateTabletRequestPB create;
  pb::DeleteTabletRequestPB del;
  pb::AlterSchemaRequestPB alter;
  pb::ChangeConfigRequestPB change;
  std::string reason;  // kChangeConfig: why, for the log.
  // Results.
  absl::Status status;
  uint32_t schema_version = 0;
};

namespace {

std::string TaskKey(char kind, const std::string& tablet_id, const std::string& ts_uuid) {
  return StrCat(std::string(1, kind), "/", tablet_id, "/", ts_uuid);
}

const char* KindName(int kind) {
  static const char* const kNames[] = {"CreateTablet", "DeleteTablet", "AlterSchema",
                                       "ChangeConfig"};
  return kNames[kind];
}

}  // namespace

// ---- Thread -----------------------------------------------------------------------------------

absl::Status CatalogManager::Start() {
  absl::MutexLock l(&loop_mu_);
  if (loop_running_ || loop_stop_) return absl::FailedPreconditionError("already started");
  loop_running_ = true;
  loop_thread_ = std::thread([this] { ReconcileLoop(); });
  return absl::OkStatus();
}

void CatalogManager::Shutdown() {
  {
    absl::MutexLock l(&loop_mu_);
    loop_stop_ = true;
    if (!loop_running_) return;
    loop_running_ = false;
  }
  loop_thread_.join();
}

void CatalogManager::Kick() {
  absl::MutexLock l(&loop_mu_);
  loop_kicked_ = true;
}

void CatalogManager::ReconcileLoop() {
  while (true) {
    {
      absl::MutexLock l(&loop_mu_);
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_mu_) {
        return loop_stop_ || loop_kicked_;
      };
      // The timeout is the loop's period, not a wait for an event.
      loop_mu_.AwaitWithTimeout(absl::Condition(&woken),
                                absl::Milliseconds(FLAGS_catalog_manager_reconcile_interval_ms));
      if (loop_stop_) return;
      loop_kicked_ = false;
    }
    ReconcileOnce();
  }
}

void CatalogManager::ReconcileOnce() {
  if (!CheckReady().ok()) return;
  std::vector<Task> tasks = CollectTasks();
  const size_t n =
      std::min<size_t>(tasks.size(), std::max(1, FLAGS_catalog_manager_max_concurrent_tasks));
  if (n <= 1) {
    for (Task& t : tasks) RunTask(&t);
  } else {
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers;
    for (size_t i = 0; i < n; ++i) {
      workers.emplace_back([&] {
        for (size_t j = next++; j < tasks.size(); j = next++) RunTask(&tasks[j]);
      });
    }
    for (std::thread& w : workers) w.join();
  }
  RecordResults(tasks);
  PersistStateChanges();
}

// ---- Collecting tasks -------------------------------------------------------------------------

bool CatalogManager::TaskDueLocked(const std::string& key, int64_t now) const {
  auto it = task_states_.find(key);
  return it == task_states_.end() || now >= it->second.next_attempt_micros;
}

std::vector<CatalogManager::Task> CatalogManager::CollectTasks() {
  std::map<std::string, TsDescriptor> servers;
  for (TsDescriptor& d : ts_manager_->GetAll()) servers[d.uuid] = std::move(d);
  const int64_t now = clock_->MonotonicMicros();
  std::vector<Task> tasks;
  absl::MutexLock l(&mu_);
  // Replicas per server, for choosing where a replacement goes.
  replica_counts_.clear();
  for (const auto& [id, tablet] : tablets_) {
    if (tablet->deleted()) continue;
    for (const pb::RaftPeerPB& p : tablet->pb.config().peers()) ++replica_counts_[p.uuid()];
  }
  std::set<std::string> needed;
  for (const auto& [id, tablet] : tablets_) {
    auto table = tables_.find(tablet->table_id());
    if (table == tables_.end()) continue;
    const size_t before = tasks.size();
    CollectTabletTasksLocked(*tablet, *table->second, servers, now, &tasks);
    for (size_t i = before; i < tasks.size(); ++i) needed.insert(tasks[i].key);
  }
  // Tasks that are needed but not yet due keep their retry state (see the Collect helper, which
  // marks them with an empty address); everything else forgets it.
  std::vector<Task> due;
  for (Task& t : tasks) {
    if (!t.address.empty()) due.push_back(std::move(t));
  }
  for (auto it = task_states_.begin(); it != task_states_.end();) {
    it = needed.count(it->first) ? std::next(it) : task_states_.erase(it);
  }
  return due;
}

void CatalogManager::CollectTabletTasksLocked(const TabletInfo& tablet, const TableInfo& table,
                                              const std::map<std::string, TsDescriptor>& servers,
                                              int64_t now, std::vector<Task>* tasks) {
  static const std::map<std::string, ReplicaReport> kNoReports;
  auto rit = reports_.find(tablet.id());
  const auto& reports = rit == reports_.end() ? kNoReports : rit->second;
  // Adds a task for a live server; a task not yet due is added without an address (it only
  // keeps its retry state alive).
  auto add = [&](Task::Kind kind, char k, const std::string& uuid)
                 ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> Task* {
    auto ts = servers.find(uuid);
    if (ts == servers.end() || !ts->second.live) return nullptr;
    Task& t = tasks->emplace_back();
    t.kind = kind;
    t.key = TaskKey(k, tablet.id(), uuid);
    t.ts_uuid = uuid;
    t.tablet_id = tablet.id();
    if (TaskDueLocked(t.key, now)) t.address = ts->second.rpc_address.ToString();
    return t.address.empty() ? nullptr : &t;
  };
  if (tablet.deleted() || table.deleted()) {
    for (const auto& [uuid, r] : reports) {
      if (r.state == pb::TABLET_DELETED) continue;
      if (Task* t = add(Task::Kind::kDelete, 'D', uuid)) {
        t->del.set_dest_uuid(uuid);
        t->del.set_tablet_id(tablet.id());
        t->del.set_reason(table.deleted() ? "table deleted" : "range partition dropped");
      }
    }
    return;
  }
  std::string leader;
  const ReplicaReport* lr = LeaderReportLocked(tablet.id(), &leader);
  // Replicas the group removed: tombstoned, but only while the catalog holds the leader's newest
  // configuration (no change in flight: a replica just copied in may report before the change
  // that added it commits) and unless the replica's own configuration is newer than the
  // catalog's; the tablet server checks the same with cas_config_index.
  const bool settled = lr != nullptr && lr->config_index == tablet.pb.config_index() &&
                       lr->latest_config_index <= tablet.pb.config_index();
  for (const auto& [uuid, r] : reports) {
    if (!settled) break;
    if (r.state == pb::TABLET_DELETED ||
        std::max(r.config_index, r.latest_config_index) > tablet.pb.config_index()) {
      continue;
    }
    const bool member =
        std::any_of(tablet.pb.config().peers().begin(), tablet.pb.config().peers().end(),
                    [&uuid = uuid](const pb::RaftPeerPB& p) { return p.uuid() == uuid; });
    if (member) continue;
    if (Task* t = add(Task::Kind::kDelete, 'D', uuid)) {
      t->del.set_dest_uuid(uuid);
      t->del.set_tablet_id(tablet.id());
      t->del.set_reason("the replica was removed from the tablet's configuration");
      t->del.set_delete_type(pb::TABLET_DATA_TOMBSTONED);
      t->del.set_cas_config_index(tablet.pb.config_index());
    }
  }
  // Replicas are created only as placed: later members come in by tablet copy from the leader
  // (an empty replica created with a later configuration could vote without the entries it
  // once acknowledged).
  for (const pb::RaftPeerPB& peer : tablet.pb.config().peers()) {
    if (tablet.pb.config_index() != 0) break;
    if (reports.count(peer.uuid())) continue;
    auto ts = servers.find(peer.uuid());
    // Until a server's full report arrives, the master cannot tell what it already has.
    if (ts == servers.end() || !ts->second.full_report_received) continue;
    Task* t = add(Task::Kind::kCreate, 'C', peer.uuid());
    if (t == nullptr) continue;
    pb::CreateTabletRequestPB& req = t->create;
    req.set_dest_uuid(peer.uuid());
    req.set_table_id(table.id());
    req.set_table_name(table.name());
    req.set_tablet_id(tablet.id());
    *req.mutable_partition() = tablet.pb.partition();
    *req.mutable_schema() = table.pb.schema();
    *req.mutable_partition_schema() = table.pb.partition_schema();
    *req.mutable_config() = tablet.pb.config();
    for (pb::RaftPeerPB& p : *req.mutable_config()->mutable_peers()) {
      auto d = servers.find(p.uuid());
      if (d != servers.end()) d->second.rpc_address.ToPB(p.mutable_address());
    }
  }
  if (lr != nullptr && lr->config_index == tablet.pb.config_index() &&
      tablet.pb.state() == pb::SysTabletEntryPB::RUNNING) {
    CollectRepairTaskLocked(tablet, table, reports, leader, *lr, servers,
                            [&](int kind, char k, const std::string& uuid)
                                ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                                  return add(static_cast<Task::Kind>(kind), k, uuid);
                                });
  }
  if (lr != nullptr && lr->schema_version < table.schema_version()) {
    if (Task* t = add(Task::Kind::kAlter, 'A', leader)) {
      t->alter.set_dest_uuid(leader);
      t->alter.set_tablet_id(tablet.id());
      *t->alter.mutable_schema() = table.pb.schema();
      t->alter.set_new_table_name(table.name());
    }
  }
}

void CatalogManager::CollectRepairTaskLocked(const TabletInfo& tablet, const TableInfo& table,
                                             const std::map<std::string, ReplicaReport>& reports,
                                             const std::string& leader,
                                             const ReplicaReport& leader_report,
                                             const std::map<std::string, TsDescriptor>& servers,
                                             const AddTaskFn& add) {
  RepairInput in;
  for (const pb::RaftPeerPB& p : tablet.pb.config().peers()) {
    (p.member_type() == pb::RaftPeerPB::VOTER ? in.voters : in.learners).push_back(p.uuid());
  }
  in.num_replicas = table.pb.num_replicas();
  in.leader = leader;
  in.prepare_replacement_before_eviction = FLAGS_raft_prepare_replacement_before_eviction;
  for (const auto& [uuid, status] : leader_report.peer_health) {
    if (status == ReplicaReport::PeerHealth::FAILED) in.failed.insert(uuid);
  }
  for (const auto& [uuid, r] : reports) {
    if (r.state == pb::TABLET_FAILED) in.failed.insert(uuid);
  }
  for (auto it = in.failed.begin(); it != in.failed.end();) {
    // A server in maintenance is expected back: nothing of it is replaced.
    it = maintenance_.contains(*it) ? in.failed.erase(it) : std::next(it);
  }
  for (const auto& [uuid, ts] : servers) {
    if (!ts.live || maintenance_.contains(uuid)) continue;
    auto n = replica_counts_.find(uuid);
    in.candidates.push_back({uuid, n == replica_counts_.end() ? 0 : n->second});
  }
  std::optional<RepairChange> change = DecideRepair(in, &repair_placement_);
  if (!change.has_value()) return;
  using Kind = RepairChange::Kind;
  const char kind = change->kind == Kind::kAddLearner       ? 'a'
                    : change->kind == Kind::kPromoteLearner ? 'p'
                                                            : 'r';
  // One key per decision, so each step of a repair is due at once after the previous one.
  Task* t = add(static_cast<int>(Task::Kind::kChangeConfig), 'M', leader);
  if (t == nullptr) return;
  t->key = StrCat(t->key, "/", std::string(1, kind), "/", change->peer);
  if (!TaskDueLocked(t->key, clock_->MonotonicMicros())) {
    t->address.clear();
    return;
  }
  pb::ChangeConfigRequestPB& req = t->change;
  req.set_dest_uuid(leader);
  req.set_tablet_id(tablet.id());
  req.set_peer_uuid(change->peer);
  req.set_cas_config_index(tablet.pb.config_index());
  switch (change->kind) {
    case Kind::kAddLearner: {
      req.set_type(pb::ADD_PEER);
      req.set_member_type(pb::RaftPeerPB::VOTER);
      auto ts = servers.find(change->peer);
      if (ts != servers.end()) ts->second.rpc_address.ToPB(req.mutable_peer_address());
      ++replica_counts_[change->peer];
      break;
    }
    case Kind::kPromoteLearner:
      req.set_type(pb::MODIFY_PEER);
      req.set_member_type(pb::RaftPeerPB::VOTER);
      break;
    case Kind::kRemove:
      req.set_type(pb::REMOVE_PEER);
      break;
  }
  t->reason = change->reason;
}

// ---- Running tasks ----------------------------------------------------------------------------

void CatalogManager::RunTask(Task* t) {
  switch (t->kind) {
    case Task::Kind::kCreate:
      t->status = admin_->CreateTablet(t->address, t->create);
      if (absl::IsAlreadyExists(t->status)) t->status = absl::OkStatus();  // Already there.
      break;
    case Task::Kind::kDelete:
      t->status = admin_->DeleteTablet(t->address, t->del);
      if (absl::IsNotFound(t->status)) t->status = absl::OkStatus();  // Already gone.
      break;
    case Task::Kind::kAlter: {
      absl::StatusOr<uint32_t> v = admin_->AlterSchema(t->address, t->alter);
      t->status = v.status();
      if (v.ok()) t->schema_version = *v;
      break;
    }
    case Task::Kind::kChangeConfig:
      t->status = admin_->ChangeConfig(t->address, t->change);
      LOG(INFO) << "tablet " << t->tablet_id << ": "
                << pb::ChangeConfigTypePB_Name(t->change.type()) << " " << t->change.peer_uuid()
                << " (" << t->reason << "): " << t->status;
      break;
  }
}

void CatalogManager::RecordResults(const std::vector<Task>& tasks) {
  const int64_t now = clock_->MonotonicMicros();
  absl::MutexLock l(&mu_);
  for (const Task& t : tasks) {
    TaskState& st = task_states_[t.key];
    if (t.status.ok()) {
      st.attempts = 0;
      // Wait for the server's report to confirm; resend only if it never comes.
      st.next_attempt_micros = now + int64_t{FLAGS_catalog_manager_task_resend_ms} * 1000;
      auto rit = reports_.find(t.tablet_id);
      if (rit == reports_.end()) continue;
      auto rep = rit->second.find(t.ts_uuid);
      if (rep == rit->second.end()) continue;
      if (t.kind == Task::Kind::kAlter) {
        rep->second.schema_version = std::max(rep->second.schema_version, t.schema_version);
      } else if (t.kind == Task::Kind::kDelete) {
        rep->second.state = pb::TABLET_DELETED;
      }
      continue;
    }
    ++st.attempts;
    const int shift = std::min(st.attempts - 1, 20);
    const int64_t delay_ms =
        std::min<int64_t>(int64_t{FLAGS_catalog_manager_task_retry_base_ms} << shift,
                          FLAGS_catalog_manager_task_retry_max_ms);
    st.next_attempt_micros = now + delay_ms * 1000;
    LOG(WARNING) << KindName(static_cast<int>(t.kind)) << " of tablet " << t.tablet_id << " on "
                 << t.ts_uuid << " (" << t.address << ") failed (attempt " << st.attempts
                 << ", retry in " << delay_ms << " ms): " << t.status;
  }
}

// ---- State transitions ------------------------------------------------------------------------

void CatalogManager::PersistStateChanges() {
  absl::MutexLock ddl(&ddl_mu_);
  if (!BeginCatalogWriteLocked().ok()) return;  // Not (or no longer) the ready leader.
  pb::SysCatalogWriteBatchPB batch;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [id, table] : tables_) {
      const auto state = table->pb.state();
      const bool done = (state == pb::SysTableEntryPB::CREATING && CreateDoneLocked(*table) &&
                         AlterDoneLocked(*table)) ||
                        (state == pb::SysTableEntryPB::ALTERING && AlterDoneLocked(*table));
      if (done) {
        pb::SysTableEntryPB* e = batch.add_upsert_tables();
        *e = table->pb;
        e->set_state(pb::SysTableEntryPB::RUNNING);
      }
      if (table->deleted()) continue;
      for (const auto& tablet : TabletsLocked(id)) {
        const ReplicaReport* leader = LeaderReportLocked(tablet->id());
        if (leader == nullptr) continue;
        const bool running = tablet->pb.state() == pb::SysTabletEntryPB::CREATING;
        // The group changed its membership since the catalog last recorded it.
        const bool new_config =
            leader->config_index > tablet->pb.config_index() && leader->config.peers_size() > 0;
        if (!running && !new_config) continue;
        pb::SysTabletEntryPB* e = batch.add_upsert_tablets();
        *e = tablet->pb;
        if (running) e->set_state(pb::SysTabletEntryPB::RUNNING);
        if (new_config) {
          *e->mutable_config() = leader->config;
          e->set_config_index(leader->config_index);
        }
      }
    }
    // The leader forgets old DDL answers through the catalog, so every master forgets the same.
    AddExpiredDdlAnswersLocked(&batch);
  }
  if (batch.upsert_tables_size() == 0 && batch.upsert_tablets_size() == 0 &&
      batch.delete_ddl_answers_size() == 0) {
    return;
  }
  absl::Status s = WriteCatalog(batch);
  LOG_IF(WARNING, !s.ok()) << "persisting table and tablet states: " << s;
}

}  // namespace basalt
