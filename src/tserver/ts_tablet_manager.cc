#include "tserver/ts_tablet_manager.h"

#include <utility>

#include <glog/logging.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "tserver/tserver_errors.h"

namespace basalt {

TsTabletManager::TsTabletManager(const TabletReplicaContext& ctx) : ctx_(ctx) {}

TsTabletManager::~TsTabletManager() { Shutdown(); }

absl::Status TsTabletManager::OpenAll() {
  const std::string root = JoinPath(ctx_.data_dir, "tablets");
  BASALT_RETURN_IF_ERROR(ctx_.env->CreateDirs(root));
  BASALT_RETURN_IF_ERROR(ctx_.env->CreateDirs(JoinPath(ctx_.wal_dir, "wals")));
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> children, ctx_.env->GetChildren(root));
  for (const std::string& id : children) {
    if (id == "." || id == "..") continue;
    const std::string dir = JoinPath(root, id);
    if (!ctx_.env->FileExists(JoinPath(dir, "replica"))) {
      LOG(WARNING) << "removing " << dir << ": a tablet creation that did not complete";
      absl::Status s = ctx_.env->DeleteDirRecursively(dir);
      LOG_IF(WARNING, !s.ok()) << s;
      const std::string wal = TabletReplica::WalDir(ctx_, id);
      if (ctx_.env->FileExists(wal)) (void)ctx_.env->DeleteDirRecursively(wal);
      continue;
    }
    absl::StatusOr<std::shared_ptr<TabletReplica>> r = TabletReplica::Open(ctx_, id);
    absl::Status s = r.ok() ? (*r)->Start() : r.status();
    absl::MutexLock l(&mu_);
    if (s.ok()) {
      replicas_[id] = std::move(*r);
    } else {
      LOG(ERROR) << "tablet " << id << " failed to open: " << s;
      failed_[id] = s;
    }
  }
  return absl::OkStatus();
}

absl::Status TsTabletManager::CreateTablet(TabletReplicaMeta meta, const Schema& schema,
                                           const RaftConfig& config,
                                           const std::map<PeerId, std::string>& addresses) {
  const std::string id = meta.tablet_id;
  {
    absl::MutexLock l(&mu_);
    if (shut_down_) return absl::UnavailableError("the tablet server is shutting down");
    // Only a healthy replica "already exists": the master counts ALREADY_EXISTS as done, and a
    // failed replica is not done (it keeps reporting FAILED until it is deleted and re-created).
    auto failed = failed_.find(id);
    auto live = replicas_.find(id);
    if (failed != failed_.end() ||
        (live != replicas_.end() && live->second->state() == ReplicaState::kFailed)) {
      const absl::Status why =
          failed != failed_.end() ? failed->second : live->second->GetStatus().error;
      return absl::FailedPreconditionError(ToAbsl(StrCat(
          "tablet ", id, " exists here but has failed (", why.ToString(), "); delete it first")));
    }
    if (busy_.contains(id)) {
      return absl::UnavailableError(ToAbsl(StrCat("tablet ", id, " is being changed")));
    }
    if (live != replicas_.end()) {
      return absl::AlreadyExistsError(ToAbsl(StrCat("tablet ", id, " already exists")));
    }
    busy_.insert(id);
  }
  absl::StatusOr<std::shared_ptr<TabletReplica>> r =
      TabletReplica::Create(ctx_, std::move(meta), schema, config, addresses);
  absl::Status s = r.ok() ? (*r)->Start() : r.status();
  absl::MutexLock l(&mu_);
  busy_.erase(id);
  if (!s.ok()) {
    if (r.ok()) failed_[id] = s;  // Its files exist: report it, let DeleteTablet remove it.
    return s;
  }
  replicas_[id] = std::move(*r);
  return absl::OkStatus();
}

absl::Status TsTabletManager::DeleteTablet(const std::string& tablet_id) {
  std::shared_ptr<TabletReplica> replica;
  {
    absl::MutexLock l(&mu_);
    if (busy_.contains(tablet_id)) {
      return absl::UnavailableError(ToAbsl(StrCat("tablet ", tablet_id, " is being changed")));
    }
    auto it = replicas_.find(tablet_id);
    if (it != replicas_.end()) {
      replica = std::move(it->second);
      replicas_.erase(it);
    } else if (failed_.erase(tablet_id) == 0) {
      return TabletNotFoundError(tablet_id);
    }
    busy_.insert(tablet_id);
  }
  absl::Status s;
  if (replica != nullptr) {
    replica->Shutdown();
    s = replica->DeleteData();
  } else {
    s = ctx_.env->DeleteDirRecursively(TabletReplica::TabletDir(ctx_, tablet_id));
    const std::string wal = TabletReplica::WalDir(ctx_, tablet_id);
    if (s.ok() && ctx_.env->FileExists(wal)) s = ctx_.env->DeleteDirRecursively(wal);
  }
  absl::MutexLock l(&mu_);
  busy_.erase(tablet_id);
  if (!s.ok()) failed_[tablet_id] = s;
  return s;
}

absl::StatusOr<std::shared_ptr<TabletReplica>> TsTabletManager::Lookup(
    const std::string& tablet_id) const {
  absl::MutexLock l(&mu_);
  auto it = replicas_.find(tablet_id);
  if (it != replicas_.end()) return it->second;
  auto f = failed_.find(tablet_id);
  if (f != failed_.end()) {
    return TabletFailedError(StrCat("tablet ", tablet_id, " failed: ", f->second.ToString()));
  }
  return TabletNotFoundError(tablet_id);
}

std::vector<std::shared_ptr<TabletReplica>> TsTabletManager::List() const {
  absl::MutexLock l(&mu_);
  std::vector<std::shared_ptr<TabletReplica>> out;
  for (const auto& [id, r] : replicas_) out.push_back(r);
  return out;
}

std::map<std::string, absl::Status> TsTabletManager::Failed() const {
  absl::MutexLock l(&mu_);
  return failed_;
}

void TsTabletManager::Shutdown() {
  std::map<std::string, std::shared_ptr<TabletReplica>> replicas;
  {
    absl::MutexLock l(&mu_);
    shut_down_ = true;
    replicas = replicas_;
  }
  for (auto& [id, r] : replicas) r->Shutdown();
}

}  // namespace basalt
