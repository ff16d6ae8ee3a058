#pragma once

// SysCatalog: the master's durable catalog (docs/master.md). Tables and tablets live in RocksDB
// under <fs_data_dir>/catalog and are written ONLY by applying entries of the catalog's Raft group
// (group id kSysCatalogGroupId, for now a single voter: this master), so that three masters are
// a configuration change later.
//
// Write path: Write(batch) proposes the serialized SysCatalogWriteBatchPB to the RaftNode and
// waits until it is applied here. Apply (the StateMachine side, on the node's worker thread)
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
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "consensus/raft_node.h"
#include "consensus/state_machine.h"
#include "consensus/transport.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace basalt {

namespace pb {
class SysCatalogWriteBatchPB;
}  // namespace pb

// The catalog's Raft group id (also the directory name of its WAL).
inline constexpr char kSysCatalogGroupId[] = "00000000000000000000000000000000";

// Key layout in RocksDB (docs/master.md).
inline constexpr char kSysTableKeyPrefix[] = "table/";
inline constexpr char kSysTabletKeyPrefix[] = "tablet/";
inline constexpr char kSysAppliedIndexKey[] = "meta/applied_index";

// Receives the catalog's contents: all of it once at Open, then every applied batch.
class SysCatalogListener {
 public:
  virtual ~SysCatalogListener() = default;
  // Every stored entry, as one batch of upserts. DATA_LOSS if an entry is not a valid catalog
  // entry (the listener validates semantics: schemas, partitions, references).
  virtual absl::Status LoadEntries(const pb::SysCatalogWriteBatchPB& entries) = 0;
  // A batch just made durable, on the RaftNode's worker thread. Must not block for long.
  virtual void ApplyBatch(const pb::SysCatalogWriteBatchPB& batch) = 0;
};

struct SysCatalogOptions {
  std::string data_dir;  // RocksDB under <data_dir>/catalog, consensus metadata <data_dir>/cmeta.
  std::string wal_dir;   // The WAL under <wal_dir>/wals/<kSysCatalogGroupId>.
  std::string uuid;      // This master's uuid: its Raft peer id and the single voter.
  // Raft tick; <= 0 means --master_catalog_tick_interval_ms.
  int tick_interval_ms = 0;
  bool sync = true;  // Sync RocksDB writes and the WAL (tests of crash behaviour keep it on).
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

  // Starts the Raft node (which re-applies log entries above the stored index).
  absl::Status Start();
  // Stops the node. Idempotent.
  void Shutdown();

  // Waits until this master leads the catalog group; DEADLINE_EXCEEDED after `timeout`.
  absl::Status WaitUntilLeader(absl::Duration timeout) const;
  bool IsLeader() const;
  // The node's role for ListMasters.
  RaftCore::Role role() const;

  // Replicates `batch` and waits until it is applied (durable in RocksDB and in memory).
  // UNAVAILABLE when not the leader or shut down, DEADLINE_EXCEEDED after `timeout` (the batch
  // may still apply later), the sticky storage error after a failed RocksDB write.
  absl::Status Write(const pb::SysCatalogWriteBatchPB& batch, absl::Duration timeout);

  // ---- StateMachine ----
  void Apply(const LogEntry& entry) override;
  uint64_t DurableIndex() const override;

  // ---- Value framing (exposed for tests) ----
  static std::string EncodeValue(std::string_view payload);
  // DATA_LOSS naming `key` for a short value or a checksum mismatch.
  static absl::StatusOr<std::string_view> DecodeValue(std::string_view key, std::string_view value);

 private:
  SysCatalog(Env* env, SysCatalogOptions options, SysCatalogListener* listener);
  absl::Status OpenDb();
  absl::Status Load();
  absl::Status OpenNode(Transport* transport);
  // Writes `batch` (may be null: index only) with `index` in one synced RocksDB write.
  absl::Status Persist(const pb::SysCatalogWriteBatchPB* batch, uint64_t index);
  absl::Status storage_error() const ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  Env* const env_;
  const SysCatalogOptions options_;
  SysCatalogListener* const listener_;

  std::unique_ptr<rocksdb::DB> db_;  // Opened by Open, closed by the destructor.
  std::unique_ptr<RaftNode> node_;   // Thread-safe.
  // The stored applied index: written by Apply (the worker), read by DurableIndex (any thread).
  std::atomic<uint64_t> durable_index_{0};

  mutable absl::Mutex mu_;
  // A RocksDB write failed: nothing more is applied until a restart re-applies from the log.
  absl::Status storage_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
