#pragma once

// TsTabletManager: the tablet replicas of one tablet server (docs/cluster.md "Processes, flags,
// directories", "Bootstrap"): creates them (CreateTablet), opens every one found under
// <data_dir>/tablets/ at start, deletes them with their files and blocks (DeleteTablet), and
// looks them up for the services.
//
// Lifecycle: construct -> OpenAll() -> requests -> Shutdown() (shuts every replica down).
// Thread-safe. No lock is held while a replica does disk I/O or waits.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/log_throttle.h"
#include "tserver/replica_file.h"
#include "tserver/tablet_replica.h"
#include "tserver/tombstone_voter.h"

namespace basalt {

class TsTabletManager {
 public:
  // `ctx`'s pointers are borrowed and outlive the manager.
  explicit TsTabletManager(const TabletReplicaContext& ctx);
  ~TsTabletManager();
  TsTabletManager(const TsTabletManager&) = delete;
  TsTabletManager& operator=(const TsTabletManager&) = delete;

  // Opens and starts every replica under <data_dir>/tablets/ (replay continues in the
  // background; each replica is BOOTSTRAPPING until done). Directories without a replica file
  // (a creation cut short by a crash) are removed. A replica that fails to open is remembered as
  // FAILED and reported; the others still open. With a server log (ctx.server_log), the logs
  // of an earlier --log_per_server=false (wals/<id>/) are first moved into it, and afterwards
  // its groups of tablets that have no directory are dropped. Errors: listing the directories,
  // moving a log, FAILED_PRECONDITION without a server log when the WAL directory holds one.
  absl::Status OpenAll() ABSL_LOCKS_EXCLUDED(mu_);

  // Creates and starts a new replica. ALREADY_EXISTS if present (or being created).
  // `first_campaigner`: as TabletReplica::Start.
  absl::Status CreateTablet(TabletReplicaMeta meta, const Schema& schema, const RaftConfig& config,
                            const std::map<PeerId, std::string>& addresses,
                            const PeerId& first_campaigner = PeerId()) ABSL_LOCKS_EXCLUDED(mu_);
  enum class DeleteMode {
    kDelete,     // Every file of the replica, its directory included (the table was dropped).
    kTombstone,  // Data deleted, replica file and cmeta kept (replica_tombstone.h).
  };
  // Shuts the replica down and deletes its data (a tombstone, a replica that failed to open, or
  // a live one). With `cas_config_index`, a live replica is only deleted if the index of its
  // newest configuration (committed or not) is at most that (FAILED_PRECONDITION otherwise: it
  // was added or re-added since the caller looked). Tombstoning a tombstone is a no-op. NOT_FOUND +
  // TABLET_NOT_FOUND if absent; UNAVAILABLE while the replica is being created, copied or deleted.
  absl::Status DeleteTablet(const std::string& tablet_id, DeleteMode mode = DeleteMode::kDelete,
                            std::optional<uint64_t> cas_config_index = std::nullopt)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Copies the replica of `tablet_id` from server `source_uuid` at `source_address` onto this
  // server (ConsensusService.StartTabletCopy; docs/tablet_copy.md) and starts it; returns the last
  // log index it holds. A tombstone is replaced; so is a running replica whose log ends before
  // `leader_log_first_index` - 1 or holds that entry with a term other than
  // `leader_log_first_prev_term` (when not 0; it diverged), after it is tombstoned. Errors:
  // UNAVAILABLE (--num_tablets_to_copy_simultaneously copies run here already),
  // ALREADY_EXISTS (a copy or other change of the tablet is under way, or the local replica can
  // catch up from the leader's log), FAILED_PRECONDITION (the local replica failed, or its or
  // its tombstone's term is above `caller_term`), the copy's errors (the directory is then a
  // tombstone).
  absl::StatusOr<uint64_t> StartTabletCopy(const std::string& tablet_id,
                                           const std::string& source_uuid,
                                           const std::string& source_address, uint64_t caller_term,
                                           uint64_t leader_log_first_index,
                                           uint64_t caller_config_index = 0,
                                           uint64_t leader_log_first_prev_term = 0)
      ABSL_LOCKS_EXCLUDED(mu_);

  // NOT_FOUND + TABLET_NOT_FOUND if absent.
  absl::StatusOr<std::shared_ptr<TabletReplica>> Lookup(const std::string& tablet_id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<TabletReplica>> List() const ABSL_LOCKS_EXCLUDED(mu_);
  // Replicas that failed to open, with why.
  std::map<std::string, absl::Status> Failed() const ABSL_LOCKS_EXCLUDED(mu_);
  // Tombstoned replicas, by tablet id.
  std::map<std::string, ReplicaFileHeader> Tombstones() const ABSL_LOCKS_EXCLUDED(mu_);

  // Fails every live replica that depends on a failed data directory (DataDirFailure): after a
  // BlockManager::DirFailureCallback or MarkWalDirFailed. Returns how many it failed.
  int FailReplicasOfFailedDataDirs() ABSL_LOCKS_EXCLUDED(mu_);
  // The WAL directory (when it is not a data directory: that one's failure is the block
  // manager's) failed with `error`, for the life of the process: every replica depends on it, and
  // no replica is created or copied in any more. Call FailReplicasOfFailedDataDirs after.
  void MarkWalDirFailed(const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_);
  // OK, or the WAL directory's failure.
  absl::Status WalDirFailure() const ABSL_LOCKS_EXCLUDED(mu_);

  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);
  // Opens again, from disk, every replica paused by a full disk (TabletReplica::paused_for_space)
  // for which `has_room` (given the replica's data directory group) says its disks have room now:
  // the same path as a restart (WAL replay above the superblock). Returns how many it reopened. A
  // replica that fails to open is FAILED.
  int ReopenPausedReplicas(const std::function<bool(const std::vector<int>& data_dirs)>& has_room)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Moves the logs in wals/<id>/ into ctx_.server_log (see OpenAll).
  absl::Status MoveLogsIntoServerLog();
  // Opens one directory found at start (OpenAll).
  void OpenOne(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_);
  bool ShutDown() const ABSL_LOCKS_EXCLUDED(mu_);
  // StartTabletCopy once the tablet is marked busy_ and any live replica was taken out.
  absl::StatusOr<uint64_t> CopyAndStart(const std::string& tablet_id,
                                        std::shared_ptr<TabletReplica> replaced,
                                        const std::string& source_uuid,
                                        const std::string& source_address, uint64_t caller_term,
                                        uint64_t caller_config_index);
  // Starts a TombstoneVoter for every tombstone that is not being changed and has a recorded last
  // op, and stops the others (docs/tablet_copy.md "Tombstones vote"). Called after every change
  // of tombstones_, busy_ or shut_down_.
  void SyncVotersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The data directory group of a new replica `id` (ChooseDataDirGroup over the healthy
  // directories, --fs_target_data_dirs_per_tablet, counting the replicas being created too),
  // recorded in creating_dirs_ until EndCreation. UNAVAILABLE if every data directory failed.
  absl::StatusOr<std::vector<int>> ChooseDataDirsLocked(const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The error of a failed data directory that a replica whose blocks are in `data_dirs` depends
  // on: the first (every replica's metadata), the WAL's, or one of `data_dirs`; OK if none.
  absl::Status DataDirFailure(const std::vector<int>& data_dirs) const ABSL_LOCKS_EXCLUDED(mu_);
  // Fails `replica` (unless FAILED already) if DataDirFailure says so; returns whether it did.
  // Called without mu_ (Fail takes the replica's locks) after every insertion into replicas_,
  // since a directory may fail between a replica's open and its insertion.
  bool FailIfDataDirFailed(const std::shared_ptr<TabletReplica>& replica) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Reads the replica file header of `id` (DATA_LOSS if corrupt).
  absl::StatusOr<ReplicaFileHeader> ReadHeader(const std::string& id) const;

  const TabletReplicaContext ctx_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<TabletReplica>> replicas_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> failed_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ReplicaFileHeader> tombstones_ ABSL_GUARDED_BY(mu_);
  // The voters of tombstones_ (SyncVotersLocked).
  std::map<std::string, std::unique_ptr<TombstoneVoter>> voters_ ABSL_GUARDED_BY(mu_);
  // Ids being created or deleted (their files are changing).
  absl::flat_hash_set<std::string> busy_ ABSL_GUARDED_BY(mu_);
  // The data directory groups of replicas being created or copied here, by id (so that
  // concurrent creations spread over the directories).
  std::map<std::string, std::vector<int>> creating_dirs_ ABSL_GUARDED_BY(mu_);
  // Replicas reopened after a full disk: not reopened again before the time; the delay doubles
  // (1 s to 60 s) with each reopen.
  std::map<std::string, std::pair<absl::Time, absl::Duration>> reopen_not_before_
      ABSL_GUARDED_BY(mu_);
  // The lines of incoming copies by tablet id, from a copy's first attempt until one succeeds.
  // Lock order: mu_ before a LogThrottle's own lock.
  std::map<std::string, LogThrottle> copy_logs_ ABSL_GUARDED_BY(mu_);
  int copies_running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status wal_dir_failure_
      ABSL_GUARDED_BY(mu_);  // MarkWalDirFailed.  // StartTabletCopy calls past their checks.
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace basalt
