#include "master/sys_catalog.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/consensus_metadata.h"
#include "consensus/raft_config.h"
#include "proto/master_catalog.pb.h"

DEFINE_int32(master_catalog_tick_interval_ms, 100,
             "Wall time of one Raft tick of the master catalog's Raft group; the election "
             "timeout is a few ticks, so this bounds how fast a starting master becomes leader.");

namespace basalt {

namespace {

absl::Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = StrCat("catalog ", what, ": ", s.ToString());
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsNoSpace()) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

std::string TableKey(std::string_view id) { return StrCat(kSysTableKeyPrefix, id); }
std::string TServerStateKey(std::string_view id) { return StrCat(kSysTServerStateKeyPrefix, id); }
std::string TabletKey(std::string_view id) { return StrCat(kSysTabletKeyPrefix, id); }

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Parses one stored entry into `msg`, checking its framing.
template <typename Msg>
absl::Status ParseEntry(std::string_view key, std::string_view value, Msg* msg) {
  BASALT_ASSIGN_OR_RETURN(std::string_view payload, SysCatalog::DecodeValue(key, value));
  if (!msg->ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::DataLossError(StrCat("catalog entry '", key, "' does not parse"));
  }
  return absl::OkStatus();
}

// Adds the puts and deletes of `batch` to `wb`.
void AddToWriteBatch(const pb::SysCatalogWriteBatchPB& batch, rocksdb::WriteBatch* wb) {
  for (const pb::SysTableEntryPB& t : batch.upsert_tables()) {
    wb->Put(TableKey(t.table_id()), SysCatalog::EncodeValue(t.SerializeAsString()));
  }
  for (const pb::SysTabletEntryPB& t : batch.upsert_tablets()) {
    wb->Put(TabletKey(t.tablet_id()), SysCatalog::EncodeValue(t.SerializeAsString()));
  }
  for (const std::string& id : batch.delete_table_ids()) wb->Delete(TableKey(id));
  for (const std::string& id : batch.delete_tablet_ids()) wb->Delete(TabletKey(id));
  for (const pb::SysTServerStateEntryPB& t : batch.upsert_tserver_states()) {
    wb->Put(TServerStateKey(t.ts_uuid()), SysCatalog::EncodeValue(t.SerializeAsString()));
  }
  for (const std::string& id : batch.delete_tserver_state_ids()) wb->Delete(TServerStateKey(id));
  if (batch.has_masters()) {
    wb->Put(kSysMastersKey, SysCatalog::EncodeValue(batch.masters().SerializeAsString()));
  }
  for (const pb::SysDdlAnswerEntryPB& a : batch.upsert_ddl_answers()) {
    wb->Put(SysDdlAnswerKey(a.request_id().client_id(), a.request_id().seq_no()),
            SysCatalog::EncodeValue(a.SerializeAsString()));
  }
  for (const pb::RequestIdPB& id : batch.delete_ddl_answers()) {
    wb->Delete(SysDdlAnswerKey(id.client_id(), id.seq_no()));
  }
}

std::string EncodeIndex(uint64_t index) {
  std::string out;
  PutFixed64(&out, index);
  return SysCatalog::EncodeValue(out);
}

// meta/config: fixed64 index + EncodeConfig bytes.
std::string EncodeConfigValue(uint64_t index, std::string_view config) {
  std::string out;
  PutFixed64(&out, index);
  out.append(config);
  return SysCatalog::EncodeValue(out);
}

// Everything stored, read at one RocksDB snapshot (nullptr: the latest state).
struct StoredCatalog {
  pb::SysCatalogWriteBatchPB entries;
  std::optional<uint64_t> applied_index;
  uint64_t config_index = 0;  // meta/config, when stored.
  std::string config;         // EncodeConfig bytes; empty: none stored.
};

absl::StatusOr<StoredCatalog> ReadStoredCatalog(rocksdb::DB* db, const rocksdb::Snapshot* snap) {
  StoredCatalog out;
  pb::SysCatalogWriteBatchPB& all = out.entries;
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    const std::string_view value(it->value().data(), it->value().size());
    if (key == kSysAppliedIndexKey) {
      BASALT_ASSIGN_OR_RETURN(std::string_view payload, SysCatalog::DecodeValue(key, value));
      if (payload.size() != 8) {
        return absl::DataLossError(
            StrCat("catalog entry '", key, "' has ", payload.size(), " bytes, expected 8"));
      }
      out.applied_index = DecodeFixed64(payload.data());
    } else if (key == kSysConfigKey) {
      BASALT_ASSIGN_OR_RETURN(std::string_view payload, SysCatalog::DecodeValue(key, value));
      if (payload.size() < 8 || !DecodeConfig(payload.substr(8)).ok()) {
        return absl::DataLossError(StrCat("catalog entry '", key, "' does not parse"));
      }
      out.config_index = DecodeFixed64(payload.data());
      out.config = std::string(payload.substr(8));
    } else if (key == kSysMastersKey) {
      BASALT_RETURN_IF_ERROR(ParseEntry(key, value, all.mutable_masters()));
    } else if (StartsWith(key, kSysTableKeyPrefix)) {
      pb::SysTableEntryPB* t = all.add_upsert_tables();
      BASALT_RETURN_IF_ERROR(ParseEntry(key, value, t));
      if (t->table_id() != key.substr(std::string_view(kSysTableKeyPrefix).size())) {
        return absl::DataLossError(
            StrCat("catalog entry '", key, "' holds table '", t->table_id(), "'"));
      }
    } else if (StartsWith(key, kSysTabletKeyPrefix)) {
      pb::SysTabletEntryPB* t = all.add_upsert_tablets();
      BASALT_RETURN_IF_ERROR(ParseEntry(key, value, t));
      if (t->tablet_id() != key.substr(std::string_view(kSysTabletKeyPrefix).size())) {
        return absl::DataLossError(
            StrCat("catalog entry '", key, "' holds tablet '", t->tablet_id(), "'"));
      }
    } else if (StartsWith(key, kSysDdlAnswerKeyPrefix)) {
      pb::SysDdlAnswerEntryPB* a = all.add_upsert_ddl_answers();
      BASALT_RETURN_IF_ERROR(ParseEntry(key, value, a));
      // As for tables: an entry under another entry's key is corrupt.
      if (key != SysDdlAnswerKey(a->request_id().client_id(), a->request_id().seq_no())) {
        return absl::DataLossError(StrCat("catalog entry '", key, "' holds the answer to request ",
                                          a->request_id().seq_no(), " of client '",
                                          a->request_id().client_id(), "'"));
      }
    } else if (StartsWith(key, kSysTServerStateKeyPrefix)) {
      pb::SysTServerStateEntryPB* t = all.add_upsert_tserver_states();
      BASALT_RETURN_IF_ERROR(ParseEntry(key, value, t));
      if (t->ts_uuid() != key.substr(std::string_view(kSysTServerStateKeyPrefix).size())) {
        return absl::DataLossError(
            StrCat("catalog entry '", key, "' holds tablet server '", t->ts_uuid(), "'"));
      }
    } else {
      return absl::DataLossError(StrCat("unexpected key '", key, "' in the catalog"));
    }
  }
  BASALT_RETURN_IF_ERROR(FromRocks(it->status(), "scan"));
  if (!out.applied_index.has_value() &&
      (all.upsert_tables_size() > 0 || all.upsert_tablets_size() > 0)) {
    return absl::DataLossError("catalog has entries but no applied index");
  }
  return out;
}

}  // namespace

std::string SysDdlAnswerKey(std::string_view client_id, uint64_t seq_no) {
  return absl::StrFormat("%s%s/%020u", kSysDdlAnswerKeyPrefix, client_id, seq_no);
}

std::string SysCatalog::EncodeValue(std::string_view payload) {
  std::string out;
  PutFixed32(&out, crc32c::Value(payload));
  out.append(payload);
  return out;
}

absl::StatusOr<std::string_view> SysCatalog::DecodeValue(std::string_view key,
                                                         std::string_view value) {
  if (value.size() < 4) {
    return absl::DataLossError(
        StrCat("catalog entry '", key, "' is truncated (", value.size(), " bytes)"));
  }
  std::string_view payload = value.substr(4);
  if (DecodeFixed32(value.data()) != crc32c::Value(payload)) {
    return absl::DataLossError(StrCat("catalog entry '", key, "' fails its checksum"));
  }
  return payload;
}

SysCatalog::SysCatalog(Env* env, SysCatalogOptions options, SysCatalogListener* listener)
    : env_(env), options_(std::move(options)), listener_(listener) {
  multi_master_.store(options_.voters.size() > 1 || options_.joining);
}

SysCatalog::~SysCatalog() {
  Shutdown();
  {
    absl::MutexLock l(&node_mu_);
    node_.reset();
  }
  db_.reset();
}

std::shared_ptr<RaftNode> SysCatalog::node() const {
  absl::MutexLock l(&node_mu_);
  return node_;
}

std::string SysCatalog::WalDir() const {
  return JoinPath(JoinPath(options_.wal_dir, "wals"), kSysCatalogGroupId);
}

std::string SysCatalog::MarkerPath() const {
  return JoinPath(options_.data_dir, "catalog_install");
}

absl::StatusOr<std::unique_ptr<SysCatalog>> SysCatalog::Open(Env* env,
                                                             const SysCatalogOptions& options,
                                                             Transport* transport,
                                                             SysCatalogListener* listener) {
  if (options.uuid.empty() || options.data_dir.empty() || options.wal_dir.empty()) {
    return absl::InvalidArgumentError("sys catalog: uuid, data_dir and wal_dir are required");
  }
  std::unique_ptr<SysCatalog> c(new SysCatalog(env, options, listener));
  c->transport_ = transport;
  BASALT_RETURN_IF_ERROR(c->CleanUpInterruptedInstall());
  BASALT_RETURN_IF_ERROR(c->OpenDb());
  BASALT_RETURN_IF_ERROR(c->Load());
  if (!options.joining) BASALT_RETURN_IF_ERROR(c->OpenNode());
  return c;
}

absl::Status SysCatalog::CleanUpInterruptedInstall() {
  if (!env_->FileExists(MarkerPath())) return absl::OkStatus();
  LOG(WARNING) << "a catalog image install was interrupted: wiping the catalog and its log; the "
                  "leader master sends a new image";
  for (const std::string& dir : {JoinPath(options_.data_dir, "catalog"), WalDir()}) {
    if (env_->FileExists(dir)) BASALT_RETURN_IF_ERROR(env_->DeleteDirRecursively(dir));
  }
  // The deletions are durable before the marker goes (a log that came back after a power loss
  // next to an empty catalog would look applied).
  const std::string wals = JoinPath(options_.wal_dir, "wals");
  if (env_->FileExists(wals)) BASALT_RETURN_IF_ERROR(env_->SyncDir(wals));
  BASALT_RETURN_IF_ERROR(env_->SyncDir(options_.data_dir));
  BASALT_RETURN_IF_ERROR(env_->DeleteFile(MarkerPath()));
  return env_->SyncDir(options_.data_dir);
}

absl::Status SysCatalog::OpenDb() {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.paranoid_checks = true;
  opts.max_open_files = 64;
  opts.keep_log_file_num = 2;
  opts.write_buffer_size = 4 << 20;
  const std::string path = JoinPath(options_.data_dir, "catalog");
  rocksdb::DB* db = nullptr;
  BASALT_RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(opts, path, &db), StrCat("open ", path)));
  db_.reset(db);
  return absl::OkStatus();
}

absl::Status SysCatalog::Load() {
  BASALT_ASSIGN_OR_RETURN(StoredCatalog stored, ReadStoredCatalog(db_.get(), nullptr));
  durable_index_.store(stored.applied_index.value_or(0));
  const pb::SysCatalogWriteBatchPB& all = stored.entries;
  BASALT_RETURN_IF_ERROR_PREPEND(listener_->LoadEntries(all), "loading the catalog");
  if (all.has_masters() && options_.on_masters) options_.on_masters(all.masters());
  LOG(INFO) << "catalog loaded: " << all.upsert_tables_size() << " tables, "
            << all.upsert_tablets_size() << " tablets, " << all.upsert_ddl_answers_size()
            << " DDL answers, applied index " << durable_index_.load();
  return absl::OkStatus();
}

absl::Status SysCatalog::OpenNode() {
  RaftNodeOptions o;
  o.group_id = kSysCatalogGroupId;
  o.peer_id = options_.uuid;
  o.wal_dir = WalDir();
  o.metadata_path = JoinPath(options_.data_dir, "cmeta");
  o.initial_config.voters = options_.voters;
  if (o.initial_config.voters.empty()) o.initial_config.voters = {options_.uuid};
  o.tick_interval_ms = options_.tick_interval_ms > 0 ? options_.tick_interval_ms
                                                     : FLAGS_master_catalog_tick_interval_ms;
  o.log.force_fsync = options_.sync;
  // The log is garbage-collected like a tablet's: a master that needs entries the leader no
  // longer has gets a catalog image (StartSnapshotCopy).
  if (multi_master_.load()) {
    // Elections after 1 s of silence, not 3 ticks: a leader that briefly misses a majority (a
    // peer restarting, a reconnect backoff) should not step down and churn the catalog.
    o.raft.election_ticks = std::max(3, 1000 / o.tick_interval_ms);
  }
  BASALT_RETURN_IF_ERROR(env_->CreateDirs(o.wal_dir));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RaftNode> node,
                          RaftNode::Open(env_, o, transport_, this));
  absl::MutexLock l(&node_mu_);
  node_ = std::move(node);
  return absl::OkStatus();
}

absl::Status SysCatalog::Start() {
  std::shared_ptr<RaftNode> n = node();
  return n == nullptr ? absl::OkStatus() : n->Start();
}

void SysCatalog::Shutdown() {
  {
    absl::MutexLock l(&install_mu_);  // Waits for an install in progress.
    shut_down_ = true;
  }
  {
    absl::MutexLock l(&copy_mu_);
    copies_stopped_ = true;
  }
  std::shared_ptr<RaftNode> n = node();
  if (n != nullptr) n->Shutdown();
  // Their callbacks find the node stopped; each ends within its RPC's deadline.
  ReapCopyThreads(/*all=*/true);
}

bool SysCatalog::IsLeader() const { return role() == RaftCore::Role::kLeader; }

RaftCore::Role SysCatalog::role() const {
  std::shared_ptr<RaftNode> n = node();
  return n == nullptr ? RaftCore::Role::kFollower : n->role();
}

std::string SysCatalog::leader_uuid() const {
  std::shared_ptr<RaftNode> n = node();
  return n == nullptr ? std::string() : n->leader_id();
}

absl::StatusOr<uint64_t> SysCatalog::ChangeConfig(const ConfigChange& change,
                                                  absl::Duration timeout,
                                                  std::optional<uint64_t> cas_config_index) {
  std::shared_ptr<RaftNode> n = node();
  if (n == nullptr) return absl::UnavailableError("this master is joining the catalog group");
  return n->ChangeConfigAndWait(change, timeout, cas_config_index);
}

uint64_t SysCatalog::LeaderReadyTerm() const {
  std::shared_ptr<RaftNode> n = node();
  if (n == nullptr || n->role() != RaftCore::Role::kLeader) return 0;
  const uint64_t term = n->term();
  // Entries of a term are applied only after every earlier entry: once one of this term is
  // applied here, memory holds everything committed before this master's leadership.
  return applied_term_.load() == term ? term : 0;
}

absl::Status SysCatalog::WaitUntilLeader(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (LeaderReadyTerm() == 0) {
    std::shared_ptr<RaftNode> n = node();
    if (n != nullptr) BASALT_RETURN_IF_ERROR(n->health());
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(StrCat("the master did not become catalog leader within ",
                                                absl::FormatDuration(timeout)));
    }
    // Polling the node's published role, bounded by the deadline.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return absl::OkStatus();
}

absl::Status SysCatalog::storage_error() const {
  absl::MutexLock l(&mu_);
  return storage_error_;
}

absl::Status SysCatalog::Write(const pb::SysCatalogWriteBatchPB& batch, absl::Duration timeout,
                               uint64_t expected_term) {
  BASALT_RETURN_IF_ERROR(storage_error());
  std::shared_ptr<RaftNode> node = this->node();
  if (node == nullptr) {
    return absl::UnavailableError("catalog write failed: this master is joining the catalog group");
  }
  // Shared with the callback, which may run after the wait below returned.
  struct Result {
    absl::Notification done;
    absl::StatusOr<uint64_t> index;
  };
  auto result = std::make_shared<Result>();
  writes_in_flight_.fetch_add(1);
  node->Propose(
      batch.SerializeAsString(),
      [this, result](absl::StatusOr<uint64_t> index) {
        result->index = std::move(index);
        writes_in_flight_.fetch_sub(1);
        result->done.Notify();
      },
      expected_term);
  absl::StatusOr<uint64_t> index =
      WaitForWrite(*node, result->done, result->index, timeout, expected_term);
  if (!index.ok()) {
    return absl::Status(index.status().code(),
                        StrCat("catalog write failed: ", index.status().message()));
  }
  // Apply ran before the proposal completed: a storage error there means it did not persist.
  return storage_error();
}

absl::StatusOr<uint64_t> SysCatalog::WaitForWrite(const RaftNode& node, absl::Notification& done,
                                                  const absl::StatusOr<uint64_t>& index,
                                                  absl::Duration timeout,
                                                  uint64_t expected_term) const {
  absl::Time deadline = absl::Now() + timeout;
  bool deposed = false;
  // In slices, watching the leadership. A deposed leader keeps waiting a little: its entry still
  // resolves here (applied: the write happened; overwritten: ABORTED, it did not) as long as it
  // hears from the new leader. Only a write still unresolved then is in doubt.
  while (!done.WaitForNotificationWithTimeout(
      std::max(absl::ZeroDuration(), std::min(absl::Milliseconds(100), deadline - absl::Now())))) {
    if (absl::Now() >= deadline) {
      if (deposed) {
        return absl::UnavailableError(
            "this master lost the catalog leadership while the write was in flight; it may "
            "still commit");
      }
      return absl::DeadlineExceededError(
          StrCat("not applied within ", absl::FormatDuration(timeout)));
    }
    if (!deposed && expected_term != 0 &&
        (node.role() != RaftCore::Role::kLeader || node.term() != expected_term)) {
      deposed = true;
      deadline = std::min(deadline, absl::Now() + absl::Seconds(5));
    }
  }
  return index;
}

absl::Status SysCatalog::Persist(const pb::SysCatalogWriteBatchPB* batch, const LogEntry& entry) {
  rocksdb::WriteBatch wb;
  if (batch != nullptr) AddToWriteBatch(*batch, &wb);
  // The configuration in effect at the applied index travels with catalog images.
  if (entry.type == EntryType::kConfigChange)
    wb.Put(kSysConfigKey, EncodeConfigValue(entry.index, entry.data));
  wb.Put(kSysAppliedIndexKey, EncodeIndex(entry.index));
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  return FromRocks(db_->Write(wo, &wb), "write");
}

absl::Status SysCatalog::Apply(const LogEntry& entry) {
  // Nothing more is applied until a restart.
  if (absl::Status e = storage_error(); !e.ok()) return e;
  pb::SysCatalogWriteBatchPB batch;
  bool have_batch = false;
  if (entry.type == EntryType::kNormal) {
    have_batch = batch.ParseFromString(entry.data);
    // Only this code proposes entries: an unparsable one is a deterministic no-op everywhere.
    LOG_IF(ERROR, !have_batch) << "catalog log entry " << entry.index << " does not parse";
  }
  absl::Status s = Persist(have_batch ? &batch : nullptr, entry);
  if (!s.ok()) {
    LOG(ERROR) << "catalog storage failed at index " << entry.index << ": " << s;
    absl::MutexLock l(&mu_);
    storage_error_ = s;
    return s;
  }
  durable_index_.store(entry.index);
  if (have_batch) listener_->ApplyBatch(batch);
  if (have_batch && batch.has_masters() && options_.on_masters)
    options_.on_masters(batch.masters());
  // After the listener: a term is "ready" (LeaderReadyTerm) only once memory has the entry.
  applied_term_.store(entry.term);
  return absl::OkStatus();
}

uint64_t SysCatalog::DurableIndex() const { return durable_index_.load(); }

}  // namespace basalt

// ---------------------------------------------------------------------------------------------
// Catalog snapshots.

namespace basalt {

absl::StatusOr<pb::CatalogSnapshotPB> SysCatalog::BuildSnapshot() const {
  std::shared_ptr<RaftNode> n = node();
  if (n == nullptr)
    return absl::FailedPreconditionError("this master is joining the catalog group");
  const rocksdb::Snapshot* snap = db_->GetSnapshot();
  absl::StatusOr<StoredCatalog> stored = ReadStoredCatalog(db_.get(), snap);
  db_->ReleaseSnapshot(snap);
  BASALT_RETURN_IF_ERROR(stored.status());
  pb::CatalogSnapshotPB image;
  *image.mutable_entries() = std::move(stored->entries);
  const uint64_t index = stored->applied_index.value_or(0);
  if (index == 0) return absl::FailedPreconditionError("the catalog has applied nothing yet");
  image.set_applied_index(index);
  // The log keeps the term of every entry from the anchor (at most `index`) on.
  BASALT_ASSIGN_OR_RETURN(uint64_t term, n->log().Term(index));
  image.set_applied_term(term);
  image.set_term(n->term());
  if (!stored->config.empty()) {
    image.set_config(stored->config);
    image.set_config_index(stored->config_index);
  } else {
    // No configuration entry was ever applied: the group still has its initial configuration.
    auto [config, config_index] = n->committed_config();
    if (config_index != 0) {
      return absl::FailedPreconditionError(
          "the catalog does not record its configuration (written before catalog images existed)");
    }
    image.set_config(EncodeConfig(config));
  }
  return image;
}

uint64_t SysCatalog::LogAnchorIndex() const {
  absl::MutexLock l(&copy_mu_);
  return copy_anchors_.empty() ? UINT64_MAX : *copy_anchors_.begin();
}

void SysCatalog::StartSnapshotCopy(const PeerId& peer, SnapshotDoneCallback done) {
  if (!options_.send_snapshot) {
    done(absl::UnimplementedError("no catalog image sender"), 0);
    return;
  }
  ReapCopyThreads(/*all=*/false);
  absl::MutexLock l(&copy_mu_);
  if (copies_stopped_) {
    done(absl::UnavailableError("the catalog is shutting down"), 0);
    return;
  }
  // Every entry after what RocksDB holds now stays in the log until the image is delivered: the
  // image's index is at least this, and the peer continues from there.
  const uint64_t anchor = durable_index_.load();
  copy_anchors_.insert(anchor);
  auto finished = std::make_shared<std::atomic<bool>>(false);
  std::thread t([this, peer, done = std::move(done), anchor, finished] {
    absl::StatusOr<pb::CatalogSnapshotPB> image = BuildSnapshot();
    absl::Status s = image.status();
    uint64_t index = 0;
    if (s.ok()) {
      index = image->applied_index();
      LOG(INFO) << "sending the catalog image at index " << index << " ("
                << image->entries().upsert_tablets_size() << " tablets) to master " << peer;
      s = options_.send_snapshot(peer, *image);
    }
    {
      absl::MutexLock l(&copy_mu_);
      copy_anchors_.erase(copy_anchors_.find(anchor));
    }
    done(s, index);
    finished->store(true);
  });
  copy_threads_.push_back({std::move(t), std::move(finished)});
}

void SysCatalog::ReapCopyThreads(bool all) {
  std::vector<std::thread> to_join;
  {
    absl::MutexLock l(&copy_mu_);
    for (auto it = copy_threads_.begin(); it != copy_threads_.end();) {
      if (all || it->finished->load()) {
        to_join.push_back(std::move(it->thread));
        it = copy_threads_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (std::thread& t : to_join) t.join();
}

absl::Status SysCatalog::InstallSnapshot(const pb::CatalogSnapshotPB& image) {
  absl::MutexLock install(&install_mu_);
  if (shut_down_) return absl::UnavailableError("the catalog is shutting down");
  if (image.applied_index() == 0) {
    return absl::InvalidArgumentError("catalog image: applied_index is 0");
  }
  if (image.applied_term() == 0)
    return absl::InvalidArgumentError("catalog image: applied_term is 0");
  if (image.term() < image.applied_term()) {
    return absl::InvalidArgumentError(StrCat("catalog image: term ", image.term(),
                                             " is below applied_term ", image.applied_term()));
  }
  absl::StatusOr<RaftConfig> config = DecodeConfig(image.config());
  if (!config.ok()) {
    return absl::InvalidArgumentError(StrCat("catalog image: config: ", config.status().message()));
  }
  if (image.config_index() > image.applied_index()) {
    return absl::InvalidArgumentError("catalog image: config_index is past applied_index");
  }
  std::shared_ptr<RaftNode> old = node();
  if (old != nullptr) {
    if (old->role() == RaftCore::Role::kLeader) {
      return absl::FailedPreconditionError("this master leads the catalog group");
    }
    // An image from a leader of an older term (delayed in flight) must not undo what this
    // master acknowledged to a newer leader.
    if (image.term() < old->term()) {
      return absl::FailedPreconditionError(StrCat("catalog image from term ", image.term(),
                                                  ", this master is at term ", old->term()));
    }
    // From here nothing applies: the checks below see the final state.
    old->Shutdown();
    ReapCopyThreads(/*all=*/true);  // Copies an earlier leadership started end with the node.
    absl::MutexLock l(&node_mu_);
    node_.reset();
  }
  // Whether the log holds the image's last entry: then (Raft's InstallSnapshot rule) the entries
  // after it stay, since this master may have acknowledged them.
  bool keep_log = false;
  absl::Status refused;
  if (image.applied_index() < durable_index_.load()) {
    refused = absl::FailedPreconditionError(StrCat("catalog image at index ", image.applied_index(),
                                                   " is older than this catalog (",
                                                   durable_index_.load(), ")"));
  } else if (old != nullptr) {
    absl::StatusOr<std::unique_ptr<Log>> log = Log::Open(env_, WalDir(), LogOptions::FromFlags());
    if (!log.ok()) {
      refused = log.status();
    } else {
      absl::StatusOr<uint64_t> term = (*log)->Term(image.applied_index());
      keep_log = term.ok() && *term == image.applied_term();
    }
  }
  if (!refused.ok()) {
    if (old != nullptr) {  // Back to where it was.
      BASALT_RETURN_IF_ERROR(OpenNode());
      BASALT_RETURN_IF_ERROR(node()->Start());
    }
    return refused;
  }
  LOG(INFO) << "installing the catalog image at index " << image.applied_index() << " (term "
            << image.applied_term() << ", " << image.entries().upsert_tablets_size() << " tablets"
            << (keep_log ? "; the log after it is kept" : "") << ")";
  // From here until the node restarts, a crash leaves the marker: the next Open wipes the
  // catalog and its log, and the leader sends a new image.
  BASALT_RETURN_IF_ERROR(WriteFileAtomically(env_, MarkerPath(), ""));
  absl::Status s = WriteImage(image, *config, keep_log);
  if (s.ok()) {
    durable_index_.store(image.applied_index());
    applied_term_.store(0);
    {
      absl::MutexLock l(&mu_);
      storage_error_ = absl::OkStatus();
    }
    s = listener_->LoadEntries(image.entries());
  }
  if (!s.ok()) {
    // Half replaced: nothing more is applied or written (sticky), and a restart wipes it (the
    // marker) so that the leader sends a new image.
    LOG(ERROR) << "installing the catalog image failed; restart this master to repair it: " << s;
    absl::MutexLock l(&mu_);
    storage_error_ = absl::Status(s.code(), StrCat("installing a catalog image: ", s.message()));
    return storage_error_;
  }
  if (image.entries().has_masters() && options_.on_masters) {
    options_.on_masters(image.entries().masters());
  }
  BASALT_RETURN_IF_ERROR(env_->DeleteFile(MarkerPath()));
  BASALT_RETURN_IF_ERROR(env_->SyncDir(options_.data_dir));
  multi_master_.store(true);
  {
    absl::MutexLock l(&copy_mu_);
    copies_stopped_ = false;
  }
  BASALT_RETURN_IF_ERROR(OpenNode());
  return node()->Start();
}

absl::Status SysCatalog::WriteImage(const pb::CatalogSnapshotPB& image, const RaftConfig& config,
                                    bool keep_log) {
  // RocksDB: every old key goes, the image's entries come, in one synced write.
  rocksdb::WriteBatch wb;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) wb.Delete(it->key());
    BASALT_RETURN_IF_ERROR(FromRocks(it->status(), "scan"));
  }
  AddToWriteBatch(image.entries(), &wb);
  if (image.config_index() > 0) {
    wb.Put(kSysConfigKey, EncodeConfigValue(image.config_index(), image.config()));
  }
  wb.Put(kSysAppliedIndexKey, EncodeIndex(image.applied_index()));
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  BASALT_RETURN_IF_ERROR(FromRocks(db_->Write(wo, &wb), "write"));

  // The log restarts after the image's last entry (unless it holds that entry).
  LogOptions lo = LogOptions::FromFlags();
  lo.force_fsync = options_.sync;
  BASALT_RETURN_IF_ERROR(env_->CreateDirs(WalDir()));
  if (!keep_log) {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Log> log, Log::Open(env_, WalDir(), lo));
    BASALT_RETURN_IF_ERROR(log->Start());
    absl::Status s = log->ResetToSnapshot(OpId{image.applied_term(), image.applied_index()});
    log->Shutdown();
    BASALT_RETURN_IF_ERROR_PREPEND(s, "restarting the catalog log");
  }

  // Consensus metadata last: its term and vote stay (Raft safety), the term only grows.
  const std::string path = JoinPath(options_.data_dir, "cmeta");
  if (env_->FileExists(path)) {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ConsensusMetadata> cmeta,
                            ConsensusMetadata::Load(env_, path));
    if (image.term() > cmeta->current_term()) cmeta->set_current_term(image.term());
    cmeta->set_committed_config(config, image.config_index());
    return cmeta->Flush();
  }
  ConsensusMetadataContents contents;
  contents.hard_state.term = image.term();
  contents.committed_config = config;
  contents.committed_config_index = image.config_index();
  return ConsensusMetadata::Create(env_, path, contents).status();
}

}  // namespace basalt
