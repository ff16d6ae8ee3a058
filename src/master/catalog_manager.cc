#include "master/catalog_manager.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "master/master_errors.h"
#include "proto/master.pb.h"
#include "proto/master_catalog.pb.h"
#include "rpc/rpc_status.h"

DEFINE_uint32(table_locations_default_max, 100,
              "Number of tablet locations GetTableLocations returns when the request sets no "
              "max_returned_locations.");
DEFINE_uint32(table_locations_ttl_ms, 300000,
              "How long clients may cache the tablet locations the master returns, in "
              "milliseconds.");

namespace basalt {

// ---- Entries ----------------------------------------------------------------------------------

absl::StatusOr<std::shared_ptr<const TableInfo>> TableInfoFromPB(pb::SysTableEntryPB entry) {
  const std::string what = StrCat("table '", entry.table_id(), "' (", entry.name(), ")");
  if (entry.table_id().empty() || entry.name().empty()) {
    return absl::InvalidArgumentError(StrCat(what, " has no id or no name"));
  }
  if (entry.state() < pb::SysTableEntryPB::CREATING ||
      entry.state() > pb::SysTableEntryPB::DELETED || entry.num_replicas() < 1) {
    return absl::InvalidArgumentError(StrCat(what, " has an invalid state or replica count"));
  }
  auto schema = Schema::FromPB(entry.schema());
  if (!schema.ok()) return PrependToStatus(schema.status(), StrCat(what, " schema"));
  auto ps = PartitionSchema::FromPB(entry.partition_schema(), *schema);
  if (!ps.ok()) return PrependToStatus(ps.status(), StrCat(what, " partition schema"));
  auto info = std::make_shared<TableInfo>();
  info->pb = std::move(entry);
  info->schema = *std::move(schema);
  info->partition_schema = *std::move(ps);
  return std::shared_ptr<const TableInfo>(std::move(info));
}

absl::StatusOr<std::shared_ptr<const TabletInfo>> TabletInfoFromPB(pb::SysTabletEntryPB entry) {
  const std::string what = StrCat("tablet '", entry.tablet_id(), "'");
  if (entry.tablet_id().empty() || entry.table_id().empty()) {
    return absl::InvalidArgumentError(StrCat(what, " has no id or no table id"));
  }
  if (entry.state() < pb::SysTabletEntryPB::CREATING ||
      entry.state() > pb::SysTabletEntryPB::DELETED || entry.config().peers_size() == 0) {
    return absl::InvalidArgumentError(StrCat(what, " has an invalid state or no replicas"));
  }
  for (const pb::RaftPeerPB& p : entry.config().peers()) {
    if (p.uuid().empty()) return absl::InvalidArgumentError(StrCat(what, " has an unnamed peer"));
  }
  auto partition = Partition::FromPB(entry.partition());
  if (!partition.ok()) return PrependToStatus(partition.status(), what);
  auto info = std::make_shared<TabletInfo>();
  info->pb = std::move(entry);
  info->partition = *std::move(partition);
  return std::shared_ptr<const TabletInfo>(std::move(info));
}

// ---- Lifecycle --------------------------------------------------------------------------------

CatalogManager::CatalogManager(TsManager* ts_manager, TsAdminClient* admin,
                               CatalogManagerOptions options)
    : ts_manager_(ts_manager),
      admin_(admin),
      options_(options),
      clock_(options.clock != nullptr ? options.clock : Clock::Default()),
      placement_(options.placement_seed != 0 ? options.placement_seed
                                             : static_cast<uint64_t>(absl::GetCurrentTimeNanos())),
      repair_placement_(options.placement_seed != 0
                            ? options.placement_seed + 1
                            : static_cast<uint64_t>(absl::GetCurrentTimeNanos()) + 1) {}

CatalogManager::~CatalogManager() { Shutdown(); }

void CatalogManager::SetReady(bool ready) {
  absl::MutexLock l(&mu_);
  ready_ = ready;
}

absl::Status CatalogManager::CheckLoaded() const {
  absl::MutexLock l(&mu_);
  if (!ready_) {
    return MasterError(absl::UnavailableError("the master is still loading its catalog"),
                       pb::ErrorDetailPB::CATALOG_NOT_READY);
  }
  return absl::OkStatus();
}

absl::Status CatalogManager::CheckReady() const {
  SysCatalog* catalog = sys_catalog_.load();
  if (catalog == nullptr) {
    // Not CATALOG_NOT_READY, which clients retry here: another master may well lead.
    return MasterError(absl::UnavailableError("the master is still opening its catalog"),
                       pb::ErrorDetailPB::NOT_THE_LEADER_MASTER);
  }
  if (!catalog->IsLeader()) {
    pb::ErrorDetailPB detail;
    detail.set_code(pb::ErrorDetailPB::NOT_THE_LEADER_MASTER);
    const std::string leader = catalog->leader_uuid();
    std::optional<HostPort> address;
    if (!leader.empty() && leader_address_lookup_) address = leader_address_lookup_(leader);
    if (address.has_value()) address->ToPB(detail.mutable_leader_address());
    return WithErrorDetail(
        absl::UnavailableError(
            StrCat("this master is not the catalog leader",
                   address.has_value() ? StrCat("; the leader is ", address->ToString()) : "")),
        detail);
  }
  BASALT_RETURN_IF_ERROR(CheckLoaded());
  if (catalog->LeaderReadyTerm() == 0) {
    return MasterError(
        absl::UnavailableError("the master was just elected and is catching up its catalog"),
        pb::ErrorDetailPB::CATALOG_NOT_READY);
  }
  return absl::OkStatus();
}

// ---- Installing entries -----------------------------------------------------------------------

absl::Status CatalogManager::LoadEntries(const pb::SysCatalogWriteBatchPB& entries) {
  absl::MutexLock l(&mu_);
  // The whole catalog: at Open, and again when a catalog image replaces it.
  tables_.clear();
  table_ids_by_name_.clear();
  tablets_.clear();
  table_tablets_.clear();
  maintenance_.clear();
  ddl_answers_.Clear();
  absl::Status s = InstallLocked(entries, /*strict=*/true);
  for (const auto& [id, tablet] : tablets_) {
    if (!s.ok()) break;
    if (tables_.find(tablet->table_id()) == tables_.end()) {
      s = absl::InvalidArgumentError(
          StrCat("tablet '", id, "' belongs to unknown table '", tablet->table_id(), "'"));
    }
  }
  if (!s.ok()) return absl::DataLossError(StrCat("invalid catalog entry: ", s.message()));
  return absl::OkStatus();
}

void CatalogManager::ApplyBatch(const pb::SysCatalogWriteBatchPB& batch) {
  {
    absl::MutexLock l(&mu_);
    absl::Status s = InstallLocked(batch, /*strict=*/false);
    LOG_IF(ERROR, !s.ok()) << "applying a catalog batch: " << s;
  }
  Kick();
}

absl::Status CatalogManager::InstallLocked(const pb::SysCatalogWriteBatchPB& batch, bool strict) {
  absl::Status first_error;
  auto failed = [&](absl::Status s) {
    if (first_error.ok()) first_error = s;
    return strict;
  };
  for (const pb::SysTableEntryPB& e : batch.upsert_tables()) {
    auto table = TableInfoFromPB(e);
    if (!table.ok()) {
      if (failed(table.status())) return first_error;
      continue;
    }
    InstallTableLocked(*std::move(table));
  }
  for (const pb::SysTabletEntryPB& e : batch.upsert_tablets()) {
    auto tablet = TabletInfoFromPB(e);
    if (!tablet.ok()) {
      if (failed(tablet.status())) return first_error;
      continue;
    }
    InstallTabletLocked(*std::move(tablet));
  }
  for (const std::string& id : batch.delete_tablet_ids()) {
    auto it = tablets_.find(id);
    if (it == tablets_.end()) continue;
    TabletMap& m = table_tablets_[it->second->table_id()];
    auto pos = m.find(it->second->partition.partition_key_start());
    if (pos != m.end() && pos->second == id) m.erase(pos);
    tablets_.erase(it);
  }
  for (const pb::SysTServerStateEntryPB& e : batch.upsert_tserver_states()) {
    if (e.state() == pb::SysTServerStateEntryPB::MAINTENANCE_MODE) {
      maintenance_.insert(e.ts_uuid());
    } else {
      maintenance_.erase(e.ts_uuid());
    }
  }
  for (const std::string& id : batch.delete_tserver_state_ids()) maintenance_.erase(id);
  // Answers need no validation here: FindDdlAnswerLocked parses one when a retry asks for it.
  ddl_answers_.Apply(batch);
  for (const std::string& id : batch.delete_table_ids()) {
    auto it = tables_.find(id);
    if (it == tables_.end()) continue;
    auto name = table_ids_by_name_.find(it->second->name());
    if (name != table_ids_by_name_.end() && name->second == id) table_ids_by_name_.erase(name);
    tables_.erase(it);
  }
  return first_error;
}

void CatalogManager::InstallTableLocked(std::shared_ptr<const TableInfo> table) {
  auto& slot = tables_[table->id()];
  if (slot != nullptr) {
    auto name = table_ids_by_name_.find(slot->name());
    if (name != table_ids_by_name_.end() && name->second == slot->id()) {
      table_ids_by_name_.erase(name);
    }
  }
  if (!table->deleted()) table_ids_by_name_[table->name()] = table->id();
  slot = std::move(table);
}

void CatalogManager::InstallTabletLocked(std::shared_ptr<const TabletInfo> tablet) {
  auto& slot = tablets_[tablet->id()];
  if (slot != nullptr) {
    TabletMap& m = table_tablets_[slot->table_id()];
    auto pos = m.find(slot->partition.partition_key_start());
    if (pos != m.end() && pos->second == slot->id()) m.erase(pos);
  }
  if (!tablet->deleted()) {
    table_tablets_[tablet->table_id()][tablet->partition.partition_key_start()] = tablet->id();
  }
  slot = std::move(tablet);
}

// ---- Lookups ----------------------------------------------------------------------------------

absl::StatusOr<std::shared_ptr<const TableInfo>> CatalogManager::FindTableLocked(
    const pb::TableIdentifierPB& id) const {
  if (id.table_id().empty() && id.table_name().empty()) {
    return absl::InvalidArgumentError("table: neither table_id nor table_name is set");
  }
  std::string table_id = id.table_id();
  if (table_id.empty()) {
    auto it = table_ids_by_name_.find(id.table_name());
    if (it == table_ids_by_name_.end()) {
      return TableNotFound(StrCat("table '", id.table_name(), "' does not exist"));
    }
    table_id = it->second;
  }
  auto it = tables_.find(table_id);
  if (it == tables_.end() || it->second->deleted()) {
    return TableNotFound(StrCat("table with id '", table_id, "' does not exist"));
  }
  return it->second;
}

absl::StatusOr<std::shared_ptr<const TableInfo>> CatalogManager::FindTable(
    const pb::TableIdentifierPB& id) const {
  absl::MutexLock l(&mu_);
  return FindTableLocked(id);
}

std::shared_ptr<const TableInfo> CatalogManager::GetTableByName(const std::string& name) const {
  pb::TableIdentifierPB id;
  id.set_table_name(name);
  auto t = FindTable(id);
  return t.ok() ? *t : nullptr;
}

std::vector<std::shared_ptr<const TabletInfo>> CatalogManager::TabletsLocked(
    const std::string& table_id) const {
  std::vector<std::shared_ptr<const TabletInfo>> out;
  auto it = table_tablets_.find(table_id);
  if (it == table_tablets_.end()) return out;
  for (const auto& [start, tablet_id] : it->second) out.push_back(tablets_.at(tablet_id));
  return out;
}

std::vector<std::shared_ptr<const TabletInfo>> CatalogManager::GetTablets(
    const std::string& table_id) const {
  absl::MutexLock l(&mu_);
  return TabletsLocked(table_id);
}

const ReplicaReport* CatalogManager::LeaderReportLocked(const std::string& tablet_id,
                                                        std::string* leader_uuid) const {
  auto it = reports_.find(tablet_id);
  if (it == reports_.end()) return nullptr;
  const ReplicaReport* best = nullptr;
  for (const auto& [uuid, r] : it->second) {
    if (r.role != pb::LEADER || r.state != pb::TABLET_RUNNING) continue;
    if (best == nullptr || r.term > best->term) {
      best = &r;
      if (leader_uuid != nullptr) *leader_uuid = uuid;
    }
  }
  return best;
}

bool CatalogManager::CreateDoneLocked(const TableInfo& table) const {
  if (table.pb.state() != pb::SysTableEntryPB::CREATING) return true;
  for (const auto& tablet : TabletsLocked(table.id())) {
    if (LeaderReportLocked(tablet->id()) == nullptr) return false;
  }
  return true;
}

bool CatalogManager::AlterDoneLocked(const TableInfo& table) const {
  for (const auto& tablet : TabletsLocked(table.id())) {
    const ReplicaReport* leader = LeaderReportLocked(tablet->id());
    if (leader == nullptr || leader->schema_version < table.schema_version()) return false;
  }
  return true;
}

// ---- Read-only operations ---------------------------------------------------------------------

absl::Status CatalogManager::IsCreateTableDone(const pb::IsCreateTableDoneRequestPB& req,
                                               pb::IsCreateTableDoneResponsePB* resp) {
  absl::MutexLock l(&mu_);
  BASALT_ASSIGN_OR_RETURN(auto table, FindTableLocked(req.table()));
  resp->set_done(CreateDoneLocked(*table));
  return absl::OkStatus();
}

absl::Status CatalogManager::IsAlterTableDone(const pb::IsAlterTableDoneRequestPB& req,
                                              pb::IsAlterTableDoneResponsePB* resp) {
  absl::MutexLock l(&mu_);
  BASALT_ASSIGN_OR_RETURN(auto table, FindTableLocked(req.table()));
  resp->set_done(table->pb.state() == pb::SysTableEntryPB::RUNNING || AlterDoneLocked(*table));
  resp->set_schema_version(table->schema_version());
  return absl::OkStatus();
}

absl::Status CatalogManager::ListTables(const pb::ListTablesRequestPB& req,
                                        pb::ListTablesResponsePB* resp) {
  absl::MutexLock l(&mu_);
  std::map<std::string, std::shared_ptr<const TableInfo>> by_name;
  for (const auto& [name, id] : table_ids_by_name_) {
    if (name.find(req.name_filter()) != std::string::npos) by_name[name] = tables_.at(id);
  }
  for (const auto& [name, table] : by_name) {
    auto* t = resp->add_tables();
    t->set_id(table->id());
    t->set_name(name);
    auto tt = table_tablets_.find(table->id());
    t->set_num_tablets(tt == table_tablets_.end() ? 0 : static_cast<int32_t>(tt->second.size()));
    t->set_num_replicas(table->pb.num_replicas());
  }
  return absl::OkStatus();
}

absl::Status CatalogManager::GetTableSchema(const pb::GetTableSchemaRequestPB& req,
                                            pb::GetTableSchemaResponsePB* resp) {
  absl::MutexLock l(&mu_);
  BASALT_ASSIGN_OR_RETURN(auto table, FindTableLocked(req.table()));
  resp->set_table_id(table->id());
  resp->set_table_name(table->name());
  *resp->mutable_schema() = table->pb.schema();
  *resp->mutable_partition_schema() = table->pb.partition_schema();
  resp->set_num_replicas(table->pb.num_replicas());
  resp->set_create_table_done(CreateDoneLocked(*table));
  return absl::OkStatus();
}

void CatalogManager::FillLocationsLocked(const TabletInfo& tablet,
                                         pb::TabletLocationsPB* out) const {
  out->set_tablet_id(tablet.id());
  *out->mutable_partition() = tablet.pb.partition();
  std::string leader;
  LeaderReportLocked(tablet.id(), &leader);
  auto reports = reports_.find(tablet.id());
  for (const pb::RaftPeerPB& peer : tablet.pb.config().peers()) {
    auto* r = out->add_replicas();
    r->set_ts_uuid(peer.uuid());
    // Lock order: mu_ before the TsManager's own lock.
    std::optional<TsDescriptor> ts = ts_manager_->Get(peer.uuid());
    if (ts.has_value()) {
      ts->rpc_address.ToPB(r->mutable_rpc_address());
      if (ts->frame_rpc_address.port != 0) {
        ts->frame_rpc_address.ToPB(r->mutable_frame_rpc_address());
      }
    } else {
      *r->mutable_rpc_address() = peer.address();
    }
    pb::RaftRolePB role = pb::UNKNOWN_ROLE;
    if (peer.uuid() == leader) {
      role = pb::LEADER;
    } else if (reports != reports_.end()) {
      auto rep = reports->second.find(peer.uuid());
      if (rep != reports->second.end()) {
        // A stale leader report (a newer leader exists) means the replica is a follower now.
        role = rep->second.role == pb::LEADER ? pb::FOLLOWER : rep->second.role;
      }
    }
    r->set_role(role);
  }
}

absl::Status CatalogManager::GetTableLocations(const pb::GetTableLocationsRequestPB& req,
                                               pb::GetTableLocationsResponsePB* resp) {
  const std::string& start = req.partition_key_start();
  const std::string& end = req.partition_key_end();
  if (!end.empty() && end <= start) {
    return absl::InvalidArgumentError(
        "partition_key_end must be empty or greater than partition_key_start");
  }
  const uint32_t max = req.max_returned_locations() != 0 ? req.max_returned_locations()
                                                         : FLAGS_table_locations_default_max;
  absl::MutexLock l(&mu_);
  BASALT_ASSIGN_OR_RETURN(auto table, FindTableLocked(req.table()));
  resp->set_ttl_millis(FLAGS_table_locations_ttl_ms);
  auto tt = table_tablets_.find(table->id());
  if (tt == table_tablets_.end()) return absl::OkStatus();
  const TabletMap& m = tt->second;
  auto it = m.upper_bound(start);
  if (it != m.begin()) {
    // The tablet starting at or before `start` overlaps it unless it ends at or before it.
    const TabletInfo& prev = *tablets_.at(std::prev(it)->second);
    const std::string& prev_end = prev.partition.partition_key_end();
    if (prev_end.empty() || prev_end > start) --it;
  }
  for (uint32_t n = 0; it != m.end() && n < max; ++it, ++n) {
    if (!end.empty() && it->first >= end) break;
    FillLocationsLocked(*tablets_.at(it->second), resp->add_tablet_locations());
  }
  return absl::OkStatus();
}

void CatalogManager::ListTabletServers(pb::ListTabletServersResponsePB* resp) const {
  std::set<std::string> maintenance;
  {
    absl::MutexLock l(&mu_);
    maintenance = maintenance_;
  }
  for (const TsDescriptor& d : ts_manager_->GetAll()) {
    auto* s = resp->add_servers();
    s->set_uuid(d.uuid);
    d.rpc_address.ToPB(s->mutable_rpc_address());
    d.http_address.ToPB(s->mutable_http_address());
    s->set_millis_since_heartbeat(d.millis_since_heartbeat);
    s->set_live(d.live);
    s->set_num_replicas(d.num_live_tablets);
    s->set_maintenance_mode(maintenance.contains(d.uuid));
  }
}

std::vector<CatalogManager::TabletHealth> CatalogManager::UnhealthyTablets() const {
  absl::MutexLock l(&mu_);
  std::vector<TabletHealth> out;
  for (const auto& [id, tablet] : tablets_) {
    auto table = tables_.find(tablet->table_id());
    if (tablet->deleted() || table == tables_.end() || table->second->deleted() ||
        tablet->pb.state() != pb::SysTabletEntryPB::RUNNING) {
      continue;
    }
    TabletHealth h{id, table->second->name(), "", ""};
    const ReplicaReport* leader = LeaderReportLocked(id);
    if (leader == nullptr) {
      h.state = "UNAVAILABLE";
      h.detail = "no leader reported";
      out.push_back(std::move(h));
      continue;
    }
    int voters = 0;
    int learners = 0;
    int failed = 0;
    for (const pb::RaftPeerPB& p : tablet->pb.config().peers()) {
      if (p.member_type() != pb::RaftPeerPB::VOTER) {
        ++learners;
        continue;
      }
      ++voters;
      auto health = leader->peer_health.find(p.uuid());
      failed += health != leader->peer_health.end() &&
                health->second == ReplicaReport::PeerHealth::FAILED;
    }
    const int want = table->second->pb.num_replicas();
    if (voters - failed >= want && learners == 0) continue;
    h.state = learners > 0 ? "RECOVERING" : "UNDER_REPLICATED";
    h.detail = StrCat(voters - failed, " healthy voter(s) of ", want, ", ", failed, " failed, ",
                      learners, " learner(s)");
    out.push_back(std::move(h));
  }
  return out;
}

// ---- Heartbeats -------------------------------------------------------------------------------

namespace {

absl::Status ValidateHeartbeat(const pb::TSHeartbeatRequestPB& req) {
  if (req.ts_uuid().empty() || req.ts_uuid().size() > 128) {
    return absl::InvalidArgumentError("ts_uuid: must be 1..128 bytes");
  }
  if (req.rpc_address().host().empty() || req.rpc_address().port() == 0 ||
      req.rpc_address().port() > 65535) {
    return absl::InvalidArgumentError("rpc_address: needs a host and a port in 1..65535");
  }
  if (req.http_address().port() > 65535) {
    return absl::InvalidArgumentError("http_address: port above 65535");
  }
  if (req.has_frame_rpc_address() &&
      (req.frame_rpc_address().host().empty() || req.frame_rpc_address().port() == 0 ||
       req.frame_rpc_address().port() > 65535)) {
    return absl::InvalidArgumentError("frame_rpc_address: needs a host and a port in 1..65535");
  }
  if (req.num_live_tablets() < 0) {
    return absl::InvalidArgumentError("num_live_tablets: must not be negative");
  }
  for (int i = 0; i < req.updated_tablets_size(); ++i) {
    const auto& t = req.updated_tablets(i);
    if (t.tablet_id().empty()) {
      return absl::InvalidArgumentError(StrCat("updated_tablets[", i, "].tablet_id: empty"));
    }
    if (!pb::TabletStatePB_IsValid(t.state()) || !pb::RaftRolePB_IsValid(t.role())) {
      return absl::InvalidArgumentError(
          StrCat("updated_tablets[", i, "]: unknown state or role value"));
    }
  }
  for (int i = 0; i < req.removed_tablet_ids_size(); ++i) {
    if (req.removed_tablet_ids(i).empty()) {
      return absl::InvalidArgumentError(StrCat("removed_tablet_ids[", i, "]: empty"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void CatalogManager::ClearReportLocked(const std::string& ts_uuid, const std::string& tablet_id) {
  auto it = reports_.find(tablet_id);
  if (it == reports_.end()) return;
  it->second.erase(ts_uuid);
  if (it->second.empty()) reports_.erase(it);
}

bool CatalogManager::ApplyReportLocked(const std::string& ts_uuid,
                                       const pb::TSHeartbeatRequestPB& req) {
  bool unknown = false;
  std::set<std::string>& mine = ts_tablets_[ts_uuid];
  if (!req.is_incremental()) {
    for (const std::string& tablet_id : mine) ClearReportLocked(ts_uuid, tablet_id);
    mine.clear();
  }
  for (const std::string& tablet_id : req.removed_tablet_ids()) {
    ClearReportLocked(ts_uuid, tablet_id);
    mine.erase(tablet_id);
  }
  for (const auto& t : req.updated_tablets()) {
    if (tablets_.find(t.tablet_id()) == tablets_.end()) {
      VLOG(1) << "tablet server " << ts_uuid << " reports unknown tablet " << t.tablet_id();
      unknown = true;
      continue;
    }
    ReplicaReport& r = reports_[t.tablet_id()][ts_uuid];
    r.state = t.state();
    r.role = t.role();
    r.term = t.term();
    r.leader_uuid = t.leader_uuid();
    r.schema_version = t.schema_version();
    r.config = t.config();
    r.config_index = t.committed_config_index();
    r.latest_config_index = t.latest_config_index();
    r.peer_health.clear();
    for (const auto& h : t.peer_health()) r.peer_health[h.uuid()] = h.status();
    mine.insert(t.tablet_id());
  }
  return unknown;
}

absl::Duration CatalogManager::LeaderTenure(uint64_t term) {
  const int64_t now = clock_->MonotonicMicros();
  absl::MutexLock l(&tenure_mu_);
  if (term != tenure_term_) {
    tenure_term_ = term;
    tenure_since_micros_ = now;
  }
  return absl::Microseconds(now - tenure_since_micros_);
}

absl::Status CatalogManager::ProcessHeartbeat(const pb::TSHeartbeatRequestPB& req,
                                              pb::TSHeartbeatResponsePB* resp) {
  BASALT_RETURN_IF_ERROR(ValidateHeartbeat(req));
  if (SysCatalog* catalog = sys_catalog_.load(); catalog != nullptr) {
    // Notes when this master's leadership began, as early as a heartbeat shows it.
    if (const uint64_t term = catalog->LeaderReadyTerm(); term != 0) LeaderTenure(term);
  }
  const TsManager::HeartbeatResult hb = ts_manager_->Heartbeat(
      req.ts_uuid(), HostPort::FromPB(req.rpc_address()), HostPort::FromPB(req.http_address()),
      req.num_live_tablets(), !req.is_incremental(), HostPort::FromPB(req.frame_rpc_address()));
  const bool changed = !hb.was_known || !req.is_incremental() || req.updated_tablets_size() > 0 ||
                       req.removed_tablet_ids_size() > 0;
  bool unknown;
  {
    absl::MutexLock l(&mu_);
    unknown = ApplyReportLocked(req.ts_uuid(), req);
  }
  // A follower that has not applied a tablet's creation yet drops its report, which the server
  // then counts as delivered: ask for everything again, so that this master has every replica's
  // report should it lead.
  const SysCatalog* catalog = sys_catalog_.load();
  const bool lagging = unknown && catalog != nullptr && !catalog->IsLeader();
  resp->set_needs_full_tablet_report(hb.needs_full_report || lagging);
  for (const TsDescriptor& d : ts_manager_->GetLive()) {
    if (d.uuid == req.ts_uuid()) continue;
    auto* peer = resp->add_tablet_servers();
    peer->set_uuid(d.uuid);
    d.rpc_address.ToPB(peer->mutable_address());
  }
  if (changed) Kick();
  return absl::OkStatus();
}

}  // namespace basalt
