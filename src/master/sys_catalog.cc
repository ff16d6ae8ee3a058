#include "master/sys_catalog.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include "absl/synchronization/notification.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"
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

}  // namespace

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
    : env_(env), options_(std::move(options)), listener_(listener) {}

SysCatalog::~SysCatalog() {
  Shutdown();
  node_.reset();
  db_.reset();
}

absl::StatusOr<std::unique_ptr<SysCatalog>> SysCatalog::Open(Env* env,
                                                             const SysCatalogOptions& options,
                                                             Transport* transport,
                                                             SysCatalogListener* listener) {
  if (options.uuid.empty() || options.data_dir.empty() || options.wal_dir.empty()) {
    return absl::InvalidArgumentError("sys catalog: uuid, data_dir and wal_dir are required");
  }
  std::unique_ptr<SysCatalog> c(new SysCatalog(env, options, listener));
  BASALT_RETURN_IF_ERROR(c->OpenDb());
  BASALT_RETURN_IF_ERROR(c->Load());
  BASALT_RETURN_IF_ERROR(c->OpenNode(transport));
  return c;
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
  pb::SysCatalogWriteBatchPB all;
  bool have_index = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    const std::string_view value(it->value().data(), it->value().size());
    if (key == kSysAppliedIndexKey) {
      BASALT_ASSIGN_OR_RETURN(std::string_view payload, DecodeValue(key, value));
      if (payload.size() != 8) {
        return absl::DataLossError(
            StrCat("catalog entry '", key, "' has ", payload.size(), " bytes, expected 8"));
      }
      durable_index_.store(DecodeFixed64(payload.data()));
      have_index = true;
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
  if (!have_index && (all.upsert_tables_size() > 0 || all.upsert_tablets_size() > 0)) {
    return absl::DataLossError("catalog has entries but no applied index");
  }
  BASALT_RETURN_IF_ERROR_PREPEND(listener_->LoadEntries(all), "loading the catalog");
  LOG(INFO) << "catalog loaded: " << all.upsert_tables_size() << " tables, "
            << all.upsert_tablets_size() << " tablets, applied index " << durable_index_.load();
  return absl::OkStatus();
}

absl::Status SysCatalog::OpenNode(Transport* transport) {
  RaftNodeOptions o;
  o.group_id = kSysCatalogGroupId;
  o.peer_id = options_.uuid;
  o.wal_dir = JoinPath(JoinPath(options_.wal_dir, "wals"), kSysCatalogGroupId);
  o.metadata_path = JoinPath(options_.data_dir, "cmeta");
  o.initial_config.voters = options_.voters;
  if (o.initial_config.voters.empty()) o.initial_config.voters = {options_.uuid};
  o.tick_interval_ms = options_.tick_interval_ms > 0 ? options_.tick_interval_ms
                                                     : FLAGS_master_catalog_tick_interval_ms;
  o.log.force_fsync = options_.sync;
  // A group of masters keeps its whole catalog log: the catalog has no snapshot copy, so a master
  // that was down must find every entry it missed in the leader's log. (Catalog entries are
  // small; DDL rates are low.)
  if (o.initial_config.voters.size() > 1) {
    o.log_gc_interval_ticks = std::numeric_limits<int>::max();
    // Elections after 1 s of silence, not 3 ticks: a leader that briefly misses a majority (a
    // peer restarting, a reconnect backoff) should not step down and churn the catalog.
    o.raft.election_ticks = std::max(3, 1000 / o.tick_interval_ms);
  }
  BASALT_RETURN_IF_ERROR(env_->CreateDirs(o.wal_dir));
  BASALT_ASSIGN_OR_RETURN(node_, RaftNode::Open(env_, o, transport, this));
  return absl::OkStatus();
}

absl::Status SysCatalog::Start() { return node_->Start(); }

void SysCatalog::Shutdown() {
  if (node_ != nullptr) node_->Shutdown();
}

bool SysCatalog::IsLeader() const { return node_->role() == RaftCore::Role::kLeader; }

RaftCore::Role SysCatalog::role() const { return node_->role(); }

std::string SysCatalog::leader_uuid() const { return node_->leader_id(); }

uint64_t SysCatalog::LeaderReadyTerm() const {
  if (node_->role() != RaftCore::Role::kLeader) return 0;
  const uint64_t term = node_->term();
  // Entries of a term are applied only after every earlier entry: once one of this term is
  // applied here, memory holds everything committed before this master's leadership.
  return applied_term_.load() == term ? term : 0;
}

absl::Status SysCatalog::WaitUntilLeader(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (LeaderReadyTerm() == 0) {
    BASALT_RETURN_IF_ERROR(node_->health());
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
  // Shared with the callback, which may run after the wait below returned.
  struct Result {
    absl::Notification done;
    absl::StatusOr<uint64_t> index;
  };
  auto result = std::make_shared<Result>();
  writes_in_flight_.fetch_add(1);
  node_->Propose(
      batch.SerializeAsString(),
      [this, result](absl::StatusOr<uint64_t> index) {
        result->index = std::move(index);
        writes_in_flight_.fetch_sub(1);
        result->done.Notify();
      },
      expected_term);
  absl::StatusOr<uint64_t> index =
      WaitForWrite(result->done, result->index, timeout, expected_term);
  if (!index.ok()) {
    return absl::Status(index.status().code(),
                        StrCat("catalog write failed: ", index.status().message()));
  }
  // Apply ran before the proposal completed: a storage error there means it did not persist.
  return storage_error();
}

absl::StatusOr<uint64_t> SysCatalog::WaitForWrite(absl::Notification& done,
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
        (node_->role() != RaftCore::Role::kLeader || node_->term() != expected_term)) {
      deposed = true;
      deadline = std::min(deadline, absl::Now() + absl::Seconds(5));
    }
  }
  return index;
}

absl::Status SysCatalog::Persist(const pb::SysCatalogWriteBatchPB* batch, uint64_t index) {
  rocksdb::WriteBatch wb;
  if (batch != nullptr) {
    for (const pb::SysTableEntryPB& t : batch->upsert_tables()) {
      wb.Put(TableKey(t.table_id()), EncodeValue(t.SerializeAsString()));
    }
    for (const pb::SysTabletEntryPB& t : batch->upsert_tablets()) {
      wb.Put(TabletKey(t.tablet_id()), EncodeValue(t.SerializeAsString()));
    }
    for (const std::string& id : batch->delete_table_ids()) wb.Delete(TableKey(id));
    for (const std::string& id : batch->delete_tablet_ids()) wb.Delete(TabletKey(id));
    for (const pb::SysTServerStateEntryPB& t : batch->upsert_tserver_states()) {
      wb.Put(StrCat(kSysTServerStateKeyPrefix, t.ts_uuid()), EncodeValue(t.SerializeAsString()));
    }
    for (const std::string& id : batch->delete_tserver_state_ids()) {
      wb.Delete(StrCat(kSysTServerStateKeyPrefix, id));
    }
  }
  std::string idx;
  PutFixed64(&idx, index);
  wb.Put(kSysAppliedIndexKey, EncodeValue(idx));
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  return FromRocks(db_->Write(wo, &wb), "write");
}

void SysCatalog::Apply(const LogEntry& entry) {
  if (!storage_error().ok()) return;  // Nothing more is applied until a restart.
  pb::SysCatalogWriteBatchPB batch;
  bool have_batch = false;
  if (entry.type == EntryType::kNormal) {
    have_batch = batch.ParseFromString(entry.data);
    // Only this code proposes entries: an unparsable one is a deterministic no-op everywhere.
    LOG_IF(ERROR, !have_batch) << "catalog log entry " << entry.index << " does not parse";
  }
  absl::Status s = Persist(have_batch ? &batch : nullptr, entry.index);
  if (!s.ok()) {
    LOG(ERROR) << "catalog storage failed at index " << entry.index << ": " << s;
    absl::MutexLock l(&mu_);
    storage_error_ = s;
    return;
  }
  durable_index_.store(entry.index);
  if (have_batch) listener_->ApplyBatch(batch);
  // After the listener: a term is "ready" (LeaderReadyTerm) only once memory has the entry.
  applied_term_.store(entry.term);
}

uint64_t SysCatalog::DurableIndex() const { return durable_index_.load(); }

}  // namespace basalt
