#include "tserver/ts_tablet_manager.h"

#include <algorithm>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/time/clock.h"
#include "cfile/block_manager.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/consensus_metadata.h"
#include "consensus/log.h"
#include "consensus/server_log.h"
#include "tserver/data_dir_group.h"
#include "tserver/replica_tombstone.h"
#include "tserver/tablet_copy_client.h"
#include "tserver/tserver_errors.h"

DEFINE_int32(num_tablets_to_copy_simultaneously, 10,
             "Most tablet copies this server receives at once; one asked beyond it is refused "
             "with UNAVAILABLE and retried by its leader with backoff.");

DEFINE_int32(fs_target_data_dirs_per_tablet, 3,
             "How many data directories (of --fs_data_dirs) a new tablet replica's blocks are "
             "spread over; 0 means all. A smaller group means a failed directory fails fewer "
             "tablets; a larger one spreads a tablet's I/O over more disks.");

namespace basalt {

TsTabletManager::TsTabletManager(const TabletReplicaContext& ctx) : ctx_(ctx) {}

TsTabletManager::~TsTabletManager() { Shutdown(); }

absl::StatusOr<ReplicaFileHeader> TsTabletManager::ReadHeader(const std::string& id) const {
  const std::string path = ReplicaFiles::ReplicaFilePath(ctx_, id);
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(ctx_.env, path, &data));
  BASALT_ASSIGN_OR_RETURN(ReplicaFileHeader h, PeekReplicaFile(data, path));
  if (h.tablet_id != id) {
    return absl::DataLossError(ToAbsl(StrCat(path, ": holds tablet ", h.tablet_id)));
  }
  return h;
}

absl::StatusOr<std::vector<int>> TsTabletManager::ChooseDataDirsLocked(const std::string& id) {
  if (!wal_dir_failure_.ok()) {
    return absl::UnavailableError(
        ToAbsl(StrCat("tablet server ", ctx_.server_uuid, ": ", wal_dir_failure_.message())));
  }
  BlockManager* bm = ctx_.block_manager;
  const int n = bm->num_dirs();
  std::vector<bool> failed(n);
  for (int i = 0; i < n; ++i) failed[i] = bm->DirFailed(i);
  std::vector<int> tablets(n, 0);
  auto count = [&](const std::vector<int>& dirs) {
    for (int d : dirs) {
      if (d >= 0 && d < n) ++tablets[d];
    }
  };
  for (const auto& [other, replica] : replicas_) count(replica->data_dirs());
  for (const auto& [other, dirs] : creating_dirs_) count(dirs);
  std::vector<int> group =
      ChooseDataDirGroup(failed, tablets, FLAGS_fs_target_data_dirs_per_tablet);
  if (group.empty()) {
    return absl::UnavailableError(
        ToAbsl(StrCat("tablet server ", ctx_.server_uuid, ": every data directory failed")));
  }
  creating_dirs_[id] = group;
  return group;
}

void TsTabletManager::MarkWalDirFailed(const absl::Status& error) {
  absl::MutexLock l(&mu_);
  if (wal_dir_failure_.ok()) {
    wal_dir_failure_ =
        PrependToStatus(error, StrCat("the WAL directory ", ctx_.wal_dir, " failed"));
  }
}

absl::Status TsTabletManager::WalDirFailure() const {
  absl::MutexLock l(&mu_);
  return wal_dir_failure_;
}

absl::Status TsTabletManager::DataDirFailure(const std::vector<int>& data_dirs) const {
  BASALT_RETURN_IF_ERROR(WalDirFailure());
  BlockManager* bm = ctx_.block_manager;
  for (int i = 0; i < bm->num_dirs(); ++i) {
    if (!bm->DirFailed(i)) continue;
    const BlockManager::DirInfo d = bm->Dirs()[i];
    // The first holds every replica's metadata; the WAL directory every replica's log.
    if (i == 0 || d.path == ctx_.wal_dir ||
        std::find(data_dirs.begin(), data_dirs.end(), i) != data_dirs.end()) {
      return PrependToStatus(d.error, StrCat("data directory ", d.path, " failed"));
    }
  }
  return absl::OkStatus();
}

bool TsTabletManager::FailIfDataDirFailed(const std::shared_ptr<TabletReplica>& replica) const {
  if (replica->state() == ReplicaState::kFailed) return false;
  const absl::Status failure = DataDirFailure(replica->data_dirs());
  if (failure.ok()) return false;
  replica->Fail(failure);
  return true;
}

int TsTabletManager::FailReplicasOfFailedDataDirs() {
  std::vector<std::shared_ptr<TabletReplica>> all;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [id, replica] : replicas_) all.push_back(replica);
  }
  int failed = 0;
  for (const std::shared_ptr<TabletReplica>& r : all) failed += FailIfDataDirFailed(r);
  return failed;
}

absl::Status TsTabletManager::OpenAll() {
  const std::string root = JoinPath(ctx_.data_dir, "tablets");
  BASALT_RETURN_IF_ERROR(ctx_.env->CreateDirs(root));
  BASALT_RETURN_IF_ERROR(ctx_.env->CreateDirs(JoinPath(ctx_.wal_dir, "wals")));
  BASALT_RETURN_IF_ERROR(MoveLogsIntoServerLog());
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> children, ctx_.env->GetChildren(root));
  absl::flat_hash_set<std::string> ids;
  for (const std::string& id : children) {
    if (id == "." || id == "..") continue;
    ids.insert(id);
    OpenOne(id);
  }
  if (ctx_.server_log != nullptr) {
    // A group whose tablet directory is gone (deleted by an earlier version, or by hand) would
    // keep its segments forever.
    for (const std::string& id : ctx_.server_log->GroupIds()) {
      if (ids.contains(id)) continue;
      LOG(WARNING) << "dropping the server WAL group of tablet " << id
                   << ", which has no tablet directory";
      BASALT_RETURN_IF_ERROR(ctx_.server_log->DropGroup(id));
    }
  }
  return absl::OkStatus();
}

namespace {

// A replica's own log directory moved into the server log, being deleted.
constexpr std::string_view kMovedSuffix = ".moved";

}  // namespace

absl::Status TsTabletManager::MoveLogsIntoServerLog() {
  const std::string wals = JoinPath(ctx_.wal_dir, "wals");
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> children, ctx_.env->GetChildren(wals));
  for (const std::string& id : children) {
    if (id == "." || id == "..") continue;
    const std::string dir = JoinPath(wals, id);
    if (std::string_view(id).ends_with(kMovedSuffix)) {
      // Moved in already; its deletion was cut short (it may hold part of the log only).
      BASALT_RETURN_IF_ERROR(ctx_.env->DeleteDirRecursively(dir));
      BASALT_RETURN_IF_ERROR(ctx_.env->SyncDir(wals));
      continue;
    }
    if (ctx_.server_log == nullptr) continue;
    // The directory goes only once its entries are durable in the server log: a crash before
    // that imports it again.
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Log> log,
                            Log::Open(ctx_.env, dir, LogOptions::FromFlags()));
    LOG(INFO) << "moving the WAL of tablet " << id << " (entries " << log->FirstIndex() << " to "
              << log->LastIndex() << ") from " << dir << " into the server WAL";
    BASALT_RETURN_IF_ERROR_PREPEND(ctx_.server_log->ImportGroup(id, *log),
                                   StrCat("moving the WAL of tablet ", id));
    log.reset();
    // Renamed (atomically, durably) before its files go: a crash halfway through the deletion
    // must not leave a directory that looks like a log to move, but holds part of one, which
    // would replace the whole copy in the server log.
    const std::string moved = StrCat(dir, kMovedSuffix);
    BASALT_RETURN_IF_ERROR(ctx_.env->RenameFile(dir, moved));
    BASALT_RETURN_IF_ERROR(ctx_.env->SyncDir(wals));
    BASALT_RETURN_IF_ERROR(ctx_.env->DeleteDirRecursively(moved));
    BASALT_RETURN_IF_ERROR(ctx_.env->SyncDir(wals));
  }
  const std::string server = JoinPath(ctx_.wal_dir, kServerLogDirName);
  if (ctx_.server_log == nullptr && ctx_.env->FileExists(server)) {
    // Refuse rather than start every tablet with an empty log (the entries are in the server log).
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ServerLog> log,
                            ServerLog::Open(ctx_.env, server, LogOptions::FromFlags()));
    const std::vector<std::string> groups = log->GroupIds();
    log.reset();
    if (!groups.empty()) {
      return absl::FailedPreconditionError(StrCat(server, " holds the write-ahead logs of ",
                                                  groups.size(),
                                                  " tablets; start with --log_per_server"));
    }
    BASALT_RETURN_IF_ERROR(ctx_.env->DeleteDirRecursively(server));
  }
  return absl::OkStatus();
}

void TsTabletManager::OpenOne(const std::string& id) {
  const std::string dir = ReplicaFiles::TabletDir(ctx_, id);
  const ReplicaWal wal = ReplicaFiles::Wal(ctx_, id);
  if (!ctx_.env->FileExists(ReplicaFiles::ReplicaFilePath(ctx_, id))) {
    LOG(WARNING) << "removing " << dir << ": a tablet creation that did not complete";
    absl::Status s = ctx_.env->DeleteDirRecursively(dir);
    LOG_IF(WARNING, !s.ok()) << s;
    s = wal.Delete();
    LOG_IF(WARNING, !s.ok()) << s;
    return;
  }
  absl::StatusOr<ReplicaFileHeader> header = ReadHeader(id);
  absl::Status s = header.status();
  if (s.ok() && header->state == ReplicaDataState::kCopying) {
    LOG(WARNING) << "tablet " << id << ": cleaning up a tablet copy that did not complete";
    s = CleanUpIncompleteCopy(ctx_.env, ctx_.block_manager, dir, wal);
    if (s.ok()) header->state = ReplicaDataState::kTombstoned;
  } else if (s.ok() && header->state == ReplicaDataState::kTombstoned) {
    s = FinishTombstone(ctx_.env, ctx_.block_manager, dir, wal);
  }
  if (s.ok() && header->state == ReplicaDataState::kTombstoned) {
    // The file was rewritten by the cleanup above: read what it recorded.
    if (absl::StatusOr<ReplicaFileHeader> h = ReadHeader(id); h.ok()) header = std::move(h);
    absl::MutexLock l(&mu_);
    tombstones_[id] = *header;
    SyncVotersLocked();
    return;
  }
  std::shared_ptr<TabletReplica> replica;
  if (s.ok()) {
    absl::StatusOr<std::shared_ptr<TabletReplica>> r = TabletReplica::Open(ctx_, id);
    s = r.ok() ? (*r)->Start() : r.status();
    if (r.ok()) replica = std::move(*r);
  }
  {
    absl::MutexLock l(&mu_);
    if (!s.ok()) {
      LOG(ERROR) << "tablet " << id << " failed to open: " << s;
      failed_[id] = s;
      return;
    }
    replicas_[id] = replica;
  }
  // A directory that failed after the open checked it (the server's watcher may have failed the
  // listed replicas before this one was listed).
  FailIfDataDirFailed(replica);
}

absl::Status TsTabletManager::CreateTablet(TabletReplicaMeta meta, const Schema& schema,
                                           const RaftConfig& config,
                                           const std::map<PeerId, std::string>& addresses,
                                           const PeerId& first_campaigner) {
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
    // A tombstone's replica left the group; it comes back only through a tablet copy.
    if (tombstones_.contains(id)) {
      return absl::AlreadyExistsError(ToAbsl(StrCat("tablet ", id, " is tombstoned here")));
    }
    BASALT_ASSIGN_OR_RETURN(meta.data_dirs, ChooseDataDirsLocked(id));
    busy_.insert(id);
  }
  absl::StatusOr<std::shared_ptr<TabletReplica>> r =
      TabletReplica::Create(ctx_, std::move(meta), schema, config, addresses);
  absl::Status s = r.ok() ? (*r)->Start(first_campaigner) : r.status();
  {
    absl::MutexLock l(&mu_);
    busy_.erase(id);
    creating_dirs_.erase(id);
    if (!s.ok()) {
      if (r.ok()) failed_[id] = s;  // Its files exist: report it, let DeleteTablet remove it.
      return s;
    }
    replicas_[id] = *r;
  }
  FailIfDataDirFailed(*r);  // As in OpenOne.
  return absl::OkStatus();
}

absl::Status TsTabletManager::DeleteTablet(const std::string& tablet_id, DeleteMode mode,
                                           std::optional<uint64_t> cas_config_index) {
  std::shared_ptr<TabletReplica> replica;
  bool was_tombstone = false;
  {
    absl::MutexLock l(&mu_);
    if (busy_.contains(tablet_id)) {
      return absl::UnavailableError(ToAbsl(StrCat("tablet ", tablet_id, " is being changed")));
    }
    auto it = replicas_.find(tablet_id);
    if (it != replicas_.end()) {
      if (cas_config_index.has_value() && it->second->raft() != nullptr) {
        // The newest configuration the replica has, committed or not: a replica just copied in
        // belongs to a configuration its source had not committed yet.
        const uint64_t index = it->second->NewestConfigIndex();
        if (index > *cas_config_index) {
          return absl::FailedPreconditionError(
              ToAbsl(StrCat("cas_config_index: tablet ", tablet_id, " has configuration index ",
                            index, ", above ", *cas_config_index)));
        }
      }
      replica = std::move(it->second);
      replicas_.erase(it);
    } else if (tombstones_.contains(tablet_id)) {
      if (mode == DeleteMode::kTombstone) return absl::OkStatus();
      was_tombstone = true;
      tombstones_.erase(tablet_id);
    } else if (failed_.erase(tablet_id) == 0) {
      return TabletNotFoundError(tablet_id);
    }
    busy_.insert(tablet_id);
    SyncVotersLocked();
  }
  const std::string dir = ReplicaFiles::TabletDir(ctx_, tablet_id);
  const ReplicaWal wal = ReplicaFiles::Wal(ctx_, tablet_id);
  absl::Status s;
  if (replica != nullptr) replica->Shutdown();
  if (mode == DeleteMode::kTombstone) {
    s = TombstoneReplica(ctx_.env, ctx_.block_manager, dir, wal);
  } else if (replica != nullptr) {
    s = replica->DeleteData();
  } else {
    // A replica that failed to open, or a tombstone: nothing is readable enough to do better.
    if (!was_tombstone) LOG(WARNING) << "deleting failed tablet " << tablet_id << " by directory";
    s = ctx_.env->DeleteDirRecursively(dir);
    if (s.ok()) s = wal.Delete();
  }
  absl::StatusOr<ReplicaFileHeader> header = absl::NotFoundError("not a tombstone");
  if (mode == DeleteMode::kTombstone && s.ok()) header = ReadHeader(tablet_id);
  absl::MutexLock l(&mu_);
  busy_.erase(tablet_id);
  if (!s.ok()) {
    failed_[tablet_id] = s;
  } else if (mode == DeleteMode::kTombstone) {
    if (header.ok()) {
      tombstones_[tablet_id] = *header;
    } else {
      failed_[tablet_id] = header.status();
    }
  }
  SyncVotersLocked();
  return s;
}

absl::StatusOr<uint64_t> TsTabletManager::StartTabletCopy(
    const std::string& tablet_id, const std::string& source_uuid, const std::string& source_address,
    uint64_t caller_term, uint64_t leader_log_first_index, uint64_t caller_config_index,
    uint64_t leader_log_first_prev_term) {
  std::shared_ptr<TabletReplica> replaced;
  {
    absl::MutexLock l(&mu_);
    if (shut_down_) return absl::UnavailableError("the tablet server is shutting down");
    if (busy_.contains(tablet_id)) {
      return absl::AlreadyExistsError(ToAbsl(
          StrCat("tablet ", tablet_id, " is being copied or changed on this server already")));
    }
    if (auto f = failed_.find(tablet_id); f != failed_.end()) {
      return absl::FailedPreconditionError(ToAbsl(StrCat(
          "tablet ", tablet_id, " failed here (", f->second.ToString(), "); delete it first")));
    }
    // A server that lost a peer with many tablets gets many copies at once: at most this many
    // run here, the others are refused and retried by their leaders with backoff.
    if (copies_running_ >= std::max(FLAGS_num_tablets_to_copy_simultaneously, 1)) {
      return absl::UnavailableError(ToAbsl(
          StrCat("this server runs ", copies_running_,
                 " tablet copies already (--num_tablets_to_copy_simultaneously); retry later")));
    }
    if (auto it = replicas_.find(tablet_id); it != replicas_.end()) {
      const ReplicaStatus st = it->second->GetStatus();
      RaftNode* node = it->second->raft();
      if (st.state == ReplicaState::kFailed || node == nullptr) {
        return absl::FailedPreconditionError(ToAbsl(StrCat(
            "tablet ", tablet_id, " failed here (", st.error.ToString(), "); delete it first")));
      }
      if (st.term > caller_term) {
        return absl::FailedPreconditionError(
            ToAbsl(StrCat("tablet ", tablet_id, ": the local replica is at term ", st.term,
                          ", above the caller's term ", caller_term)));
      }
      const uint64_t last = node->log().LastIndex();
      // Where both logs hold the entry before the leader's first one, its terms must agree for
      // the local log to continue from the leader's (an entry the local log already collected
      // was applied, hence committed, hence the leader's too).
      absl::StatusOr<uint64_t> local_prev_term = leader_log_first_index > 1
                                                     ? node->log().Term(leader_log_first_index - 1)
                                                     : absl::StatusOr<uint64_t>(0);
      const bool diverged = leader_log_first_prev_term != 0 && local_prev_term.ok() &&
                            *local_prev_term != leader_log_first_prev_term;
      if (last + 1 >= leader_log_first_index && !diverged) {
        return absl::AlreadyExistsError(ToAbsl(StrCat(
            "tablet ", tablet_id, ": the local replica (last log index ", last,
            ") can catch up from the leader's log, which starts at ", leader_log_first_index)));
      }
      replaced = std::move(it->second);
      replicas_.erase(it);
    }
    busy_.insert(tablet_id);
    ++copies_running_;
    SyncVotersLocked();  // The copy reads and rewrites the tombstone's consensus metadata.
  }
  absl::StatusOr<uint64_t> result = CopyAndStart(tablet_id, std::move(replaced), source_uuid,
                                                 source_address, caller_term, caller_config_index);
  absl::MutexLock l(&mu_);
  busy_.erase(tablet_id);
  creating_dirs_.erase(tablet_id);
  --copies_running_;
  // A failure that left files no map accounts for (a replaced replica that could not be
  // tombstoned): report it FAILED, so that it is seen and DeleteTablet can remove it.
  if (!result.ok() && !replicas_.contains(tablet_id) && !tombstones_.contains(tablet_id) &&
      !failed_.contains(tablet_id) &&
      ctx_.env->FileExists(ReplicaFiles::TabletDir(ctx_, tablet_id))) {
    failed_[tablet_id] = result.status();
  }
  SyncVotersLocked();
  return result;
}

absl::StatusOr<uint64_t> TsTabletManager::CopyAndStart(const std::string& tablet_id,
                                                       std::shared_ptr<TabletReplica> replaced,
                                                       const std::string& source_uuid,
                                                       const std::string& source_address,
                                                       uint64_t caller_term,
                                                       uint64_t caller_config_index) {
  const std::string dir = ReplicaFiles::TabletDir(ctx_, tablet_id);
  const ReplicaWal wal = ReplicaFiles::Wal(ctx_, tablet_id);
  if (replaced != nullptr) {
    LOG(INFO) << "tablet " << tablet_id << ": replacing the local replica, which fell behind the "
              << "leader's log, by a copy from " << source_uuid;
    replaced->Shutdown();
    BASALT_RETURN_IF_ERROR(TombstoneReplica(ctx_.env, ctx_.block_manager, dir, wal));
    absl::StatusOr<ReplicaFileHeader> h = ReadHeader(tablet_id);
    absl::MutexLock l(&mu_);
    if (h.ok()) tombstones_[tablet_id] = *h;
  }
  TabletCopyClientOptions o;
  o.env = ctx_.env;
  {
    absl::MutexLock l(&mu_);
    BASALT_ASSIGN_OR_RETURN(o.data_dirs, ChooseDataDirsLocked(tablet_id));
  }
  o.block_manager = ctx_.block_manager->ForGroup(o.data_dirs);
  o.local_uuid = ctx_.server_uuid;
  o.tablet_id = tablet_id;
  o.source_address = source_address;
  o.tablet_dir = dir;
  o.wal = wal;
  o.cancelled = [this] {
    absl::MutexLock l(&mu_);
    return shut_down_;
  };
  const std::string cmeta = ReplicaFiles::CmetaPath(ctx_, tablet_id);
  if (ctx_.env->FileExists(cmeta)) {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ConsensusMetadata> m,
                            ConsensusMetadata::Load(ctx_.env, cmeta));
    o.local_hard_state = m->hard_state();
    if (o.local_hard_state->term > caller_term) {
      return absl::FailedPreconditionError(
          ToAbsl(StrCat("tablet ", tablet_id, ": the tombstone here is at term ",
                        o.local_hard_state->term, ", above the caller's term ", caller_term)));
    }
  }
  // What the tombstone votes with survives a copy that fails (docs/tablet_copy.md).
  if (absl::StatusOr<ReplicaFileHeader> h = ReadHeader(tablet_id); h.ok()) {
    o.tombstone_last_logged = h->tombstone_last_logged;
  }
  BASALT_RETURN_IF_ERROR(wal.Delete());
  // A copy that keeps failing is retried by the leader with backoff, each retry a call here: the
  // first attempt is logged at once, the others (start and failure) once a minute at most.
  int64_t attempts = 0;
  {
    absl::MutexLock l(&mu_);
    attempts = copy_logs_[tablet_id].Record(absl::Now());
  }
  if (attempts > 0) {
    LOG(INFO) << "tablet " << tablet_id << ": copying from " << source_uuid << " ("
              << source_address << ")"
              << (attempts > 1 ? StrCat(" (", attempts, " attempts since the last report)") : "");
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<uint64_t> last = RunTabletCopy(o);
  if (!last.ok()) {
    LOG_IF(WARNING, attempts > 0) << "tablet " << tablet_id << ": copy from " << source_uuid
                                  << " failed: " << last.status();
    absl::StatusOr<ReplicaFileHeader> h = ReadHeader(tablet_id);
    absl::Status s;
    if (h.ok() && h->state == ReplicaDataState::kCopying) {
      s = CleanUpIncompleteCopy(ctx_.env, ctx_.block_manager, dir, wal);
      if (s.ok()) h->state = ReplicaDataState::kTombstoned;
    } else if (!h.ok() && !ctx_.env->FileExists(ReplicaFiles::ReplicaFilePath(ctx_, tablet_id))) {
      // The copy failed before it wrote anything that names the tablet.
      if (ctx_.env->FileExists(dir)) s = ctx_.env->DeleteDirRecursively(dir);
    }
    absl::MutexLock l(&mu_);
    if (!s.ok()) {
      failed_[tablet_id] = s;
      tombstones_.erase(tablet_id);
    } else if (h.ok()) {
      tombstones_[tablet_id] = *h;
    }
    return last.status();
  }
  {
    absl::MutexLock l(&mu_);
    // The copy is complete on disk: the next start opens it.
    if (shut_down_) return absl::UnavailableError("the tablet server is shutting down");
  }
  absl::StatusOr<std::shared_ptr<TabletReplica>> r = TabletReplica::Open(ctx_, tablet_id);
  if (r.ok()) (*r)->set_member_since_config_index(caller_config_index);
  absl::Status s = r.ok() ? (*r)->Start() : r.status();
  {
    absl::MutexLock l(&mu_);
    tombstones_.erase(tablet_id);
    copy_logs_.erase(tablet_id);  // The copy is over; a later one is logged at once.
    if (!s.ok()) {
      failed_[tablet_id] = s;
      return s;
    }
    replicas_[tablet_id] = *r;
  }
  FailIfDataDirFailed(*r);  // As in OpenOne.
  LOG(INFO) << "tablet " << tablet_id << ": copied from " << source_uuid << " in "
            << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1)))
            << " up to log index " << *last << "; replica started";
  return *last;
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

std::map<std::string, ReplicaFileHeader> TsTabletManager::Tombstones() const {
  absl::MutexLock l(&mu_);
  return tombstones_;
}

bool TsTabletManager::ShutDown() const {
  absl::MutexLock l(&mu_);
  return shut_down_;
}

int TsTabletManager::ReopenPausedReplicas(
    const std::function<bool(const std::vector<int>& data_dirs)>& has_room) {
  std::vector<std::shared_ptr<TabletReplica>> candidates;
  {
    absl::MutexLock l(&mu_);
    if (shut_down_) return 0;
    for (auto& [id, r] : replicas_) {
      if (r->paused_for_space()) candidates.push_back(r);
    }
  }
  // Disk I/O (statvfs): outside mu_. Each replica needs room only where its files are.
  std::erase_if(candidates, [&](const auto& r) { return !has_room(r->data_dirs()); });
  if (candidates.empty()) return 0;
  std::vector<std::shared_ptr<TabletReplica>> paused;
  const absl::Time now = absl::Now();
  {
    absl::MutexLock l(&mu_);
    if (shut_down_) return 0;
    for (const auto& r : candidates) {
      const std::string& id = r->tablet_id();
      auto it = replicas_.find(id);
      auto retry = reopen_not_before_.find(id);
      if (it != replicas_.end() && it->second == r && r->state() != ReplicaState::kFailed &&
          !busy_.contains(id) &&
          (retry == reopen_not_before_.end() || retry->second.first <= now)) {
        paused.push_back(r);
      }
    }
    if (paused.empty()) return 0;
    // The paused replica stays listed until its successor is open: requests meanwhile get
    // TABLET_NOT_RUNNING (retried on this server), not TABLET_NOT_FOUND.
    for (const auto& r : paused) busy_.insert(r->tablet_id());
  }
  int reopened = 0;
  std::vector<std::shared_ptr<TabletReplica>> reopened_replicas;
  for (const auto& old : paused) {
    const std::string id = old->tablet_id();
    old->Shutdown();  // Joins its node; its files are what a restart would find.
    absl::StatusOr<std::shared_ptr<TabletReplica>> r = TabletReplica::Open(ctx_, id);
    absl::Status s = r.ok() ? (*r)->Start() : r.status();
    if (s.ok() && ShutDown()) {
      (*r)->Shutdown();  // The server stopped meanwhile: nothing may outlive its Shutdown.
      s = absl::UnavailableError("the tablet server is shutting down");
    }
    absl::MutexLock l(&mu_);
    busy_.erase(id);
    if (s.ok()) {
      LOG(INFO) << "tablet " << id << ": the disk has room again; reopened";
      replicas_[id] = *r;
      reopened_replicas.push_back(*r);
      // A replica that pauses again soon (a disk still full for it, e.g. a quota) is retried with
      // a growing delay, not every second.
      auto& [not_before, delay] = reopen_not_before_[id];
      delay = std::min(std::max(delay * 2, absl::Seconds(1)), absl::Seconds(60));
      not_before = absl::Now() + delay;
      ++reopened;
    } else if (absl::IsResourceExhausted(s) && !shut_down_) {
      // Full again while opening: the paused replica stays, for the next round.
      LOG(WARNING) << "tablet " << id << " could not reopen yet: " << s;
    } else {
      LOG(ERROR) << "tablet " << id << " failed to reopen after a full disk: " << s;
      replicas_.erase(id);
      reopen_not_before_.erase(id);
      failed_[id] = s;
    }
  }
  for (const auto& r : reopened_replicas) FailIfDataDirFailed(r);  // As in OpenOne.
  return reopened;
}

void TsTabletManager::Shutdown() {
  std::map<std::string, std::shared_ptr<TabletReplica>> replicas;
  {
    absl::MutexLock l(&mu_);
    shut_down_ = true;
    replicas = replicas_;
    SyncVotersLocked();  // Stops them all.
  }
  for (auto& [id, r] : replicas) r->Shutdown();
}

void TsTabletManager::SyncVotersLocked() {
  for (auto it = voters_.begin(); it != voters_.end();) {
    const bool keep = !shut_down_ && tombstones_.contains(it->first) && !busy_.contains(it->first);
    it = keep ? std::next(it) : voters_.erase(it);  // Unregisters; no request runs after.
  }
  if (shut_down_ || ctx_.transport == nullptr) return;
  for (const auto& [id, header] : tombstones_) {
    if (voters_.contains(id) || busy_.contains(id) || !header.tombstone_last_logged.has_value()) {
      continue;
    }
    absl::StatusOr<std::unique_ptr<TombstoneVoter>> v =
        TombstoneVoter::Start(ctx_.env, ctx_.transport, id, ctx_.server_uuid,
                              ReplicaFiles::CmetaPath(ctx_, id), *header.tombstone_last_logged);
    if (!v.ok()) {
      LOG_FIRST_N(WARNING, 10) << "tombstone of " << id << " will not vote: " << v.status();
      continue;
    }
    voters_[id] = *std::move(v);
  }
}

}  // namespace basalt
