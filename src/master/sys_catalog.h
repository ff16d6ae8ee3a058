#pragma once

// SysCatalog: the master's durable catalog (docs/master.md). Tables and tablets live in RocksDB
// under <fs_data_dir>/catalog and are written ONLY by applying entries of the catalog's Raft group
// (group id kSysCatalogGroupId): a single voter (this master) or every master of a multi-master
// deployment (docs/master.md "Several masters").
//
// Write path: Write(batch) proposes the serialized SysCatalogWriteBatchPB to the RaftNode and
// waits until it is applied here. Apply (the StateMachine side, on the node's applier)
// writes the batch's puts and deletes plus the entry's index as ONE synced RocksDB WriteBatch,
// then hands the batch to the listener, which updates the in-memory catalog. DurableIndex is that
// stored index, so a restart re-applies only what RocksDB has not got.
//
// Stored values are framed as fixed32 crc32c(payload) followed by the serialized protobuf, so a
// garbled stored entry is found at load: Open returns DATA_LOSS naming the key.
//
// Lifecycle: Open() (opens RocksDB, loads every entry into the listener, opens the RaftNode) ->
// Start() (starts the node) -> WaitUntilLeader() -> Write()... -> Shutdown() (or destructor).
//
// Catalog snapshots (docs/master.md "Catalog snapshots"): a leader whose peer needs entries it
// no longer has (log GC), or a peer that is joining the group, sends it a consistent image of
// RocksDB (StartSnapshotCopy -> options.send_snapshot); the peer replaces its catalog with it
// (InstallSnapshot): entries, log restarted after the image's index, consensus metadata. A master
// that joins opens its catalog with options.joining: no Raft node until the first image arrives.
// An install interrupted by a crash leaves the marker file <data_dir>/catalog_install: the next
// Open wipes the catalog and its log (keeping the consensus metadata, so votes stay durable) and
// the leader sends a new image.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "consensus/raft_config.h"
#include "consensus/raft_node.h"
#include "consensus/state_machine.h"
#include "consensus/transport.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace basalt {

namespace pb {
class CatalogSnapshotPB;
class MasterPeersPB;
class SysCatalogWriteBatchPB;
}  // namespace pb

// The catalog's Raft group id (also the directory name of its WAL).
inline constexpr char kSysCatalogGroupId[] = "00000000000000000000000000000000";

// Key layout in RocksDB (docs/master.md).
inline constexpr char kSysTableKeyPrefix[] = "table/";
inline constexpr char kSysTabletKeyPrefix[] = "tablet/";
inline constexpr char kSysTServerStateKeyPrefix[] = "tserver_state/";
inline constexpr char kSysAppliedIndexKey[] = "meta/applied_index";
// The masters of the group (MasterPeersPB), once `basalt master add|remove` changed them.
inline constexpr char kSysMastersKey[] = "meta/masters";
// The latest configuration entry applied: fixed64 index + EncodeConfig bytes (docs/master.md).
inline constexpr char kSysConfigKey[] = "meta/config";
// Remembered DDL answers (SysDdlAnswerEntryPB), under SysDdlAnswerKey.
inline constexpr char kSysDdlAnswerKeyPrefix[] = "ddl_answer/";

// "ddl_answer/<client_id>/<seq_no as 20 zero-padded decimal digits>": the fixed-width suffix
// makes the key unique whatever bytes the client id holds, and orders a client's answers by
// sequence number.
std::string SysDdlAnswerKey(std::string_view client_id, uint64_t seq_no);

// Receives the catalog's contents: all of it once at Open, then every applied batch.
class SysCatalogListener {
 public:
  virtual ~SysCatalogListener() = default;
  // Every stored entry, as one batch of upserts, replacing whatever the listener held (at Open,
  // and when a catalog image is installed). DATA_LOSS if an entry is not a valid catalog entry
  // (the listener validates semantics: schemas, partitions, references).
  virtual absl::Status LoadEntries(const pb::SysCatalogWriteBatchPB& entries) = 0;
  // A batch just made durable, on the RaftNode's applier (off the Raft thread, one at a time in
  // log order). Must not block for long.
  virtual void ApplyBatch(const pb::SysCatalogWriteBatchPB& batch) = 0;
};

struct SysCatalogOptions {
  std::string data_dir;  // RocksDB under <data_dir>/catalog, consensus metadata <data_dir>/cmeta.
  std::string wal_dir;   // The WAL under <wal_dir>/wals/<kSysCatalogGroupId>.
  std::string uuid;      // This master's uuid: its Raft peer id.
  // The voters of a brand-new catalog group (every master's uuid, this one included); empty means
  // this master alone. Ignored once the group's metadata exists.
  std::vector<std::string> voters;
  // Raft tick; <= 0 means --master_catalog_tick_interval_ms.
  int tick_interval_ms = 0;
  bool sync = true;  // Sync RocksDB writes and the WAL (tests of crash behaviour keep it on).
  // This master is joining a running group: no Raft node (and no consensus metadata) until the
  // leader's first catalog image is installed (InstallSnapshot).
  bool joining = false;
  // Called with the catalog's list of masters at Open (when it holds one) and after every applied
  // batch or installed image that carries one; on the applying thread, must be quick. Optional.
  std::function<void(const pb::MasterPeersPB&)> on_masters;
  // Leader: delivers an image to the peer master `peer_uuid` (InstallCatalogSnapshot), blocking
  // until it is installed there. Called on a copy thread. Unset: peers behind the log cannot be
  // repaired (UNIMPLEMENTED, retried with backoff).
  std::function<absl::Status(const std::string& peer_uuid, const pb::CatalogSnapshotPB& image)>
      send_snapshot;
};

class SysCatalog : public StateMachine {
 public:
  // Opens (or creates) the catalog and loads it into `listener`. DATA_LOSS for a corrupt stored
  // entry or applied index (naming the key), the listener's errors, RocksDB and Raft errors.
  // `env`, `transport` and `listener` are borrowed and must outlive the catalog.
  static absl::StatusOr<std::unique_ptr<SysCatalog>> Open(Env* env,
                                                          const SysCatalogOptions& options,
                                                          Transport* transport,
                                                          SysCatalogListener* listener);
  ~SysCatalog() override;

  SysCatalog(const SysCatalog&) = delete;
  SysCatalog& operator=(const SysCatalog&) = delete;

  // Starts the Raft node (which re-applies log entries above the stored index); a no-op while
  // joining (the node starts once an image is installed).
  absl::Status Start();
  // Stops the node. Idempotent.
  void Shutdown();

  // Waits until this master leads the catalog group and is ready (LeaderReadyTerm);
  // DEADLINE_EXCEEDED after `timeout`.
  absl::Status WaitUntilLeader(absl::Duration timeout) const;
  bool IsLeader() const;
  // The node's role for ListMasters.
  RaftCore::Role role() const;
  // The uuid of the group's leader as this master knows it; empty if unknown.
  std::string leader_uuid() const;
  // The term in which this master leads AND has applied an entry of that term (so its catalog in
  // memory holds every committed entry: the Raft leader's no-op proves it); 0 otherwise. Only
  // then may it validate DDL against memory and serve reads of the catalog.
  uint64_t LeaderReadyTerm() const;

  // Replicates `batch` and waits until it is applied (durable in RocksDB and in memory).
  // With `expected_term` != 0 the batch is proposed only if this master still leads in that term
  // (the term whose state the caller validated against). OK once applied here, even if the
  // leadership moved meanwhile. UNAVAILABLE when not the leader (of that term) or shut down, or
  // when the leadership moved and the entry is still unresolved 5 s later (in doubt); ABORTED if
  // a new leader overwrote it (it did not happen); DEADLINE_EXCEEDED after `timeout` (the batch
  // may still apply later); the sticky storage error after a failed RocksDB write.
  absl::Status Write(const pb::SysCatalogWriteBatchPB& batch, absl::Duration timeout,
                     uint64_t expected_term = 0);
  // A membership change of the catalog group (RaftNode::ChangeConfigAndWait): the index of its
  // entry once applied here. UNAVAILABLE while joining.
  absl::StatusOr<uint64_t> ChangeConfig(const ConfigChange& change, absl::Duration timeout,
                                        std::optional<uint64_t> cas_config_index);
  // The Raft node; nullptr while joining (no image installed yet) or during an install.
  std::shared_ptr<RaftNode> node() const ABSL_LOCKS_EXCLUDED(node_mu_);
  bool joining() const { return node() == nullptr; }

  // ---- Catalog snapshots ----
  // A consistent image of the stored catalog (one RocksDB snapshot: entries, applied index and
  // the configuration in effect there). FAILED_PRECONDITION while joining.
  absl::StatusOr<pb::CatalogSnapshotPB> BuildSnapshot() const;
  // Replaces this catalog by `image` (from the group's leader) and (re)starts the Raft node on
  // it. A log that holds the image's last entry (same index and term) keeps the entries after it.
  // FAILED_PRECONDITION (nothing changed) if this master leads the group, is at a newer term than
  // the image, or already holds a newer applied index; INVALID_ARGUMENT for a malformed image;
  // storage errors (then the catalog stays stopped with a sticky error until a restart).
  // One install at a time.
  absl::Status InstallSnapshot(const pb::CatalogSnapshotPB& image) ABSL_LOCKS_EXCLUDED(install_mu_);

  // Writes proposed whose outcome is not known yet (a Write that timed out or whose leadership
  // moved leaves its entry in flight until it is applied or overwritten). Validating a new write
  // against memory is only sound when this is 0.
  int writes_in_flight() const { return writes_in_flight_.load(); }

  // ---- StateMachine ----
  // A catalog storage error fails the entry (the node stops: this master no longer leads or votes
  // until a restart; the others go on without it).
  absl::Status Apply(const LogEntry& entry) override;
  uint64_t DurableIndex() const override;
  uint64_t LogAnchorIndex() const override ABSL_LOCKS_EXCLUDED(copy_mu_);
  void StartSnapshotCopy(const PeerId& peer, SnapshotDoneCallback done) override
      ABSL_LOCKS_EXCLUDED(copy_mu_);

  // ---- Value framing (exposed for tests) ----
  static std::string EncodeValue(std::string_view payload);
  // DATA_LOSS naming `key` for a short value or a checksum mismatch.
  static absl::StatusOr<std::string_view> DecodeValue(std::string_view key, std::string_view value);

 private:
  SysCatalog(Env* env, SysCatalogOptions options, SysCatalogListener* listener);
  // Finishes an install a crash interrupted (the marker file): wipes RocksDB and the log.
  absl::Status CleanUpInterruptedInstall();
  absl::Status OpenDb();
  // Reads every stored entry (and the applied index) into the listener.
  absl::Status Load();
  absl::Status OpenNode();
  // Writes `image` over RocksDB, the log (unless `keep_log`: it holds the image's last entry)
  // and the consensus metadata (the node is stopped).
  absl::Status WriteImage(const pb::CatalogSnapshotPB& image, const RaftConfig& config,
                          bool keep_log);
  // Joins the copy threads that finished (all of them with `all`).
  void ReapCopyThreads(bool all) ABSL_LOCKS_EXCLUDED(copy_mu_);
  // Writes `batch` (may be null: index only) and the index of `entry` (and its configuration,
  // for a kConfigChange entry) in one synced RocksDB write.
  absl::Status Persist(const pb::SysCatalogWriteBatchPB* batch, const LogEntry& entry);
  absl::Status storage_error() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for a proposal's callback (`done`, then `index`); see Write for the errors.
  absl::StatusOr<uint64_t> WaitForWrite(const RaftNode& node, absl::Notification& done,
                                        const absl::StatusOr<uint64_t>& index,
                                        absl::Duration timeout, uint64_t expected_term) const;

  std::string WalDir() const;
  std::string MarkerPath() const;

  // Constant after construction.
  Env* const env_;
  const SysCatalogOptions options_;
  SysCatalogListener* const listener_;
  Transport* transport_ = nullptr;  // Set by Open.

  std::unique_ptr<rocksdb::DB> db_;  // Opened by Open, closed by the destructor.
  // Replaced only by InstallSnapshot (under install_mu_); readers take a reference.
  mutable absl::Mutex node_mu_;
  std::shared_ptr<RaftNode> node_ ABSL_GUARDED_BY(node_mu_);
  absl::Mutex install_mu_ ABSL_ACQUIRED_BEFORE(node_mu_);
  bool shut_down_ ABSL_GUARDED_BY(install_mu_) = false;
  // A group of several masters (or one joining): slower elections (OpenNode).
  std::atomic<bool> multi_master_{false};

  // Leader side of catalog images: one thread per image in flight, and the applied index each
  // image started from (log GC keeps every entry after the lowest).
  struct CopyThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  mutable absl::Mutex copy_mu_;
  std::vector<CopyThread> copy_threads_ ABSL_GUARDED_BY(copy_mu_);
  std::multiset<uint64_t> copy_anchors_ ABSL_GUARDED_BY(copy_mu_);
  bool copies_stopped_ ABSL_GUARDED_BY(copy_mu_) = false;
  // The stored applied index: written by Apply (the applier), read by DurableIndex (any thread).
  std::atomic<uint64_t> durable_index_{0};
  // The term of the last entry applied since Open (0 before the first).
  std::atomic<uint64_t> applied_term_{0};
  std::atomic<int> writes_in_flight_{0};

  mutable absl::Mutex mu_;
  // A RocksDB write failed: nothing more is applied until a restart re-applies from the log.
  absl::Status storage_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
