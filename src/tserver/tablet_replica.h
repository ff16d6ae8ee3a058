#pragma once

// TabletReplica: one replica of one tablet on a tablet server: the Tablet (storage), the RaftNode
// that replicates its writes, and the StateMachine glue that applies committed entries
// (ReplicateMsgPB, proto/tablet_replica.proto) to the tablet (docs/cluster.md "Write path",
// "Bootstrap"; docs/tserver.md).
//
// Write path: the RPC thread validates and decodes the batch once, then under the propose lock
// takes ts = clock.Now() and proposes the entry, so log order equals timestamp order. Every
// replica applies committed entries in log order on the RaftNode's applier; on the proposing
// server the apply reuses the rows decoded by the RPC (found by origin uuid and request sequence)
// and hands the per-row results to the waiting RPC. Followers advance their clock to each entry's
// timestamp.
//
// A leader accepts writes and snapshot reads only once it has applied an entry of its own term
// (its no-op): every entry of earlier terms is then applied, so its clock is past their
// timestamps and no earlier entry can land below a timestamp it hands out.
//
// Safe time (docs/cluster.md "Scans"): once per Raft tick the leader's RaftNode asks
// LeaderSafeTime() for T = max(clock now, last proposed timestamp), raising the proposal floor
// so that later entries get timestamps > T, and pairs it with the index I of the last entry
// proposed so far; heartbeats and appends carry (T, I). A follower keeps the pairs of its
// current leader's term pending and adopts T as its safe time (a monotonic max) once it has
// applied index I; it then serves snapshots at any t <= safe time.
//
// Lifecycle: Create() (new replica: files written) or Open() (existing files) -> Start() (opens
// and starts the RaftNode; the replica is BOOTSTRAPPING until the log present at open is applied,
// then RUNNING) -> Shutdown() (STOPPING; joins the node; the tablet stays readable for scanners
// still holding the replica). Destroy after Shutdown.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/arena.h"
#include "common/env.h"
#include "common/hybrid_clock.h"
#include "common/partition.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "consensus/raft_config.h"
#include "consensus/raft_core.h"
#include "consensus/raft_node.h"
#include "consensus/state_machine.h"
#include "tablet/mvcc.h"
#include "tablet/tablet.h"
#include "tserver/address_book.h"
#include "tserver/follower_safe_time.h"
#include "tserver/proposal_tracker.h"
#include "tserver/replica_file.h"
#include "tserver/replica_files.h"
#include "tserver/replica_state.h"
#include "tserver/tablet_replica_context.h"

namespace basalt {

class TabletCopyTrigger;
class TabletMaintenance;

namespace pb {
class ConsensusStatePB;
class WriteRequestPB;
class WriteResponsePB;
class SchemaPB;
class TabletReplicaPB;
class ReplicateMsgPB;
}  // namespace pb

// What ListTablets and heartbeats report.
struct ReplicaStatus {
  std::string tablet_id;
  std::string table_id;
  std::string table_name;
  Partition partition;
  ReplicaState state = ReplicaState::kBootstrapping;
  RaftCore::Role role = RaftCore::Role::kFollower;
  uint64_t term = 0;
  std::string leader_uuid;
  RaftConfig config;  // The newest appended configuration (it takes effect on append).
  // The last committed configuration and the op index of its entry.
  RaftConfig committed_config;
  uint64_t committed_config_index = 0;
  uint64_t config_index = 0;  // Of `config`.
  uint32_t schema_version = 0;
  // A leader's view of the other members: true = failed (not heard from for
  // TabletReplicaContext::follower_failed_after).
  std::map<PeerId, bool> peer_failed;
  uint64_t last_applied_index = 0;
  uint64_t on_disk_bytes = 0;
  uint64_t memory_bytes = 0;
  absl::Status error;  // Why the replica failed.
};

class ResultTracker;

class TabletReplica : public StateMachine {
 public:
  // Creates a new replica's files (ReplicaFiles::Create, whose errors it returns).
  static absl::StatusOr<std::shared_ptr<TabletReplica>> Create(
      const TabletReplicaContext& ctx, TabletReplicaMeta meta, const Schema& schema,
      const RaftConfig& config, const std::map<PeerId, std::string>& addresses);
  // Opens an existing replica's files (ReplicaFiles::Open, whose errors it returns).
  static absl::StatusOr<std::shared_ptr<TabletReplica>> Open(const TabletReplicaContext& ctx,
                                                             const std::string& tablet_id);
  ~TabletReplica() override;

  // Opens and starts the RaftNode (replaying the log), registers maintenance ops. On error the
  // replica is FAILED. `first_campaigner`: the voter that campaigns at once if the group is
  // fresh (RaftOptions::fast_first_election_peer; the master's choice when it creates a tablet).
  absl::Status Start(const PeerId& first_campaigner = PeerId())
      ABSL_LOCKS_EXCLUDED(mu_, lifecycle_mu_);
  // Stops the node and unregisters maintenance. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_, lifecycle_mu_);

  // ---- Requests (the services call these after validating the request's own fields) ----

  // Replicates and applies a write (docs/cluster.md "Write path"); fills `response` with per-row
  // errors and the timestamp. Errors: TABLET_NOT_RUNNING, NOT_THE_LEADER, DISK_FULL,
  // SCHEMA_MISMATCH, INVALID_ARGUMENT (schema, row_operations, propagated_timestamp),
  // SERVER_OVERLOADED, DEADLINE_EXCEEDED (the write may still apply), the node's errors.
  absl::Status Write(const pb::WriteRequestPB& request, pb::WriteResponsePB* response,
                     absl::Time deadline);
  // Replicates a schema change and waits until it is applied here; returns the schema version
  // afterwards. A version not above the current one is a no-op.
  absl::StatusOr<uint32_t> AlterSchema(const pb::SchemaPB& schema, const std::string& new_name,
                                       absl::Time deadline);
  // The MVCC snapshot of a read (docs/cluster.md "Scans"): READ_LATEST when `snapshot_ts` is
  // nullopt; otherwise at *snapshot_ts (kInvalid: the leader picks now and stores it). A follower
  // serves a time at or below its safe time (or its last applied timestamp), waiting up to
  // min(deadline, follower_snapshot_wait) for it. Errors: TABLET_NOT_RUNNING, NOT_THE_LEADER (a
  // follower whose safe time did not reach the time, or a snapshot with no time on a follower),
  // DEADLINE_EXCEEDED.
  absl::StatusOr<MvccSnapshot> SnapshotForRead(std::optional<HybridTime>* snapshot_ts,
                                               absl::Time deadline);
  // LeaderStepDown / TransferLeadership (empty `new_leader`).
  absl::Status StepDown(const std::string& new_leader);
  // Fails the replica for good (docs/tserver.md "Replica states"): it stops serving reads and
  // writes (TABLET_FAILED), its Raft node stops (no votes, no leading, nothing more applied), its
  // tablet persists nothing more, and the master hears of it at once (on_status_change) and
  // replaces it. For faults found outside the apply path: a corrupt block, a failed disk. Any
  // thread; does not block. The first error sticks.
  void Fail(const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);
  // True once the Raft node stopped because its WAL or metadata write met a full disk
  // (RESOURCE_EXHAUSTED): the replica is STOPPING, not FAILED, and its server opens it again from
  // disk (TsTabletManager::ReopenPausedReplicas) once the disk has room.
  bool paused_for_space() const { return paused_for_space_.load(); }

  // ---- Membership (tablet_replica_membership.cc) ----

  // One membership change (ConsensusService.ChangeConfig), proposed on the leader; returns the
  // index of its entry once committed and applied here. `address` (ADD_PEER) goes to the address
  // book. Errors: TABLET_NOT_RUNNING, NOT_THE_LEADER, UNAVAILABLE (another change pending, the
  // leader not ready), FAILED_PRECONDITION (the change does not apply, a failed
  // compare-and-set), DEADLINE_EXCEEDED (it may still commit).
  absl::StatusOr<uint64_t> ChangeConfig(const ConfigChange& change,
                                        std::optional<uint64_t> cas_config_index,
                                        absl::Time deadline);
  // This replica's view of its group. TABLET_NOT_RUNNING before the node started.
  absl::Status GetConsensusState(pb::ConsensusStatePB* out, RaftCore::Role* role) const;

  // Log anchors (tablet copy sessions): while an anchor at `index` is held, log GC keeps every
  // entry above `index` (anchor 0 keeps everything). Release each anchor once.
  void AnchorLog(uint64_t index) ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseLogAnchor(uint64_t index) ABSL_LOCKS_EXCLUDED(mu_);
  const TabletReplicaContext& context() const { return ctx_; }
  // A replica installed by a tablet copy belongs to a configuration at least this new, even
  // before its log holds that configuration's entry (StartTabletCopyRequestPB.caller_config_index).
  void set_member_since_config_index(uint64_t index) { member_since_config_index_.store(index); }
  // The index of the newest configuration this replica belongs to: its log's, or the one it was
  // copied in for.
  uint64_t NewestConfigIndex() const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Observers ----
  const std::string& tablet_id() const { return tablet_id_; }
  TabletReplicaMeta meta() const ABSL_LOCKS_EXCLUDED(mu_);
  // The remembered answers of entries at or below `max_log_index`, as the answers file holds
  // them (ResultTracker::Image): what a tablet copy of a superblock with that durable index takes.
  std::string AnswersImage(uint64_t max_log_index) const;
  // The positions of the data directories its blocks are in (TabletReplicaMeta::data_dirs).
  const std::vector<int>& data_dirs() const { return data_dirs_; }
  ReplicaState state() const ABSL_LOCKS_EXCLUDED(mu_);
  ReplicaStatus GetStatus() const ABSL_LOCKS_EXCLUDED(mu_);
  // The current schema (replaced, never mutated, by AlterSchema).
  std::shared_ptr<const Schema> schema() const ABSL_LOCKS_EXCLUDED(mu_);
  // REQUIRES: the replica opened (always true once Create/Open returned).
  Tablet* tablet() const { return tablet_.get(); }
  // Null before Start() or if it failed.
  RaftNode* raft() const ABSL_LOCKS_EXCLUDED(mu_);
  // The largest timestamp applied so far (kMin before the first).
  HybridTime last_applied_timestamp() const {
    return HybridTime(last_applied_ts_.load(std::memory_order_acquire));
  }
  // A follower's safe time: every entry with a timestamp at or below it is applied here (kMin
  // until the first one arrives from a leader; not maintained while leading).
  HybridTime safe_time() const { return HybridTime(safe_time_.get()); }
  // OK iff RUNNING; TABLET_NOT_RUNNING (bootstrapping, stopping) or TABLET_FAILED otherwise.
  absl::Status CheckRunning() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until RUNNING or FAILED, or the deadline (tests, startup).
  bool WaitUntilRunning(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);
  // All files and blocks of the replica, by way of a tombstone (replica_tombstone.h), then the
  // directory. Call after Shutdown. Errors of the Env.
  absl::Status DeleteData();

  // The follower's safe time hook (RaftNode's SafeTimeSink; public for tests): (T, I) from the
  // leader of `term`. Folds T into the clock (a T the clock refuses is ignored), then adopts T at
  // once if index I is applied, or keeps it pending until Apply reaches I. A pair of a term older
  // than the pending ones is ignored; one of a newer term replaces them.
  void OnLeaderSafeTime(uint64_t term, uint64_t time, uint64_t index) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- StateMachine ----
  // Row outcomes and schema mismatches are results (every replica reaches them); a storage error
  // is returned, which stops the node, which fails the replica (OnRaftFailed).
  absl::Status Apply(const LogEntry& entry) override;
  uint64_t DurableIndex() const override;
  uint64_t LogAnchorIndex() const override ABSL_LOCKS_EXCLUDED(mu_);
  // Asks `peer`'s server to copy this replica (StartTabletCopy), on a thread of the trigger.
  void StartSnapshotCopy(const PeerId& peer, SnapshotDoneCallback done) override;

 private:
  TabletReplica(const TabletReplicaContext& ctx, TabletReplicaMeta meta,
                std::unique_ptr<Tablet> tablet);

  // NOT_THE_LEADER with the hint, or TABLET_NOT_RUNNING while a new leader is not ready.
  absl::Status CheckLeaderReady(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status NotLeader(std::string_view what) const;
  // DISK_FULL while the data or WAL directory is full (TabletReplicaContext::disk_space).
  absl::Status CheckRoomForWrites() const;
  // Checks the request's schema and decodes its rows into op->scratch.
  absl::Status DecodeWrite(const pb::WriteRequestPB& request, PendingOp* op) const;
  // Write() with op->scratch taken.
  absl::Status WriteWithScratch(const pb::WriteRequestPB& request, pb::WriteResponsePB* response,
                                absl::Time deadline, const std::shared_ptr<PendingOp>& op);
  // Assigns the timestamp, registers `op` and proposes `body` (a serialized ReplicateMsgPB
  // without its timestamp); waits for the outcome.
  absl::Status ProposeAndWait(std::string body, HybridTime propagated,
                              const std::shared_ptr<PendingOp>& op, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(propose_mu_);
  void OnProposalDone(const std::shared_ptr<PendingOp>& op, absl::StatusOr<uint64_t> index);
  // ---- Safe time (the RaftNode's hooks; both run on its worker) ----
  // Leader: T = max(clock now, last proposed timestamp); later proposals get timestamps > T.
  std::optional<uint64_t> LeaderSafeTime() ABSL_LOCKS_EXCLUDED(propose_mu_);
  // A follower's snapshot at `t`: waits for the safe time (see SnapshotForRead).
  absl::StatusOr<MvccSnapshot> FollowerSnapshot(HybridTime t, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ApplyWrite(const LogEntry& entry, const pb::ReplicateMsgPB& msg, HybridTime ts);
  absl::Status ApplyAlter(const LogEntry& entry, const pb::ReplicateMsgPB& msg);
  // The node stopped on an error (RaftNodeOptions::on_failed).
  void OnRaftFailed(const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_);
  // Makes every op applied before the alter at `alter_index` durable in the rowsets, so that a
  // restart never replays an op encoded for the old schema against the new one.
  absl::Status FlushBeforeAlter(uint64_t alter_index);
  // state_.Set, waking the heartbeater (on_status_change) if the state changed.
  void SetState(ReplicaState state, absl::Status error = absl::OkStatus());
  std::unique_ptr<WriteScratch> TakeScratch() ABSL_LOCKS_EXCLUDED(scratch_mu_);
  void ReturnScratch(std::unique_ptr<WriteScratch> scratch) ABSL_LOCKS_EXCLUDED(scratch_mu_);

  // Constant after construction.
  const TabletReplicaContext ctx_;
  const std::string tablet_id_;
  const Partition partition_;
  const PartitionSchema partition_schema_;
  const std::vector<int> data_dirs_;
  const std::unique_ptr<Tablet> tablet_;
  // Serializes Start and Shutdown (a replica being deleted while the server shuts down). Held
  // across Start's disk I/O; only Shutdown ever waits for it.
  absl::Mutex lifecycle_mu_ ABSL_ACQUIRED_BEFORE(propose_mu_);
  // Set by Start, reset by Shutdown.
  std::unique_ptr<TabletMaintenance> maintenance_ ABSL_GUARDED_BY(lifecycle_mu_);
  // The leader's StartTabletCopy calls to followers; shut down (joined) by Shutdown.
  const std::unique_ptr<TabletCopyTrigger> copy_trigger_;

  // Serializes timestamp assignment with proposing (log order == timestamp order).
  absl::Mutex propose_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // The timestamp of the last entry this replica proposed, or the last safe time it handed out if
  // later (raw). A new timestamp is above it and above every applied one even when the clock lags
  // (a leader whose clock refused a skewed earlier timestamp), so timestamps increase in log
  // order on every replica and every entry proposed after a safe time T is above T.
  uint64_t last_proposed_ts_ ABSL_GUARDED_BY(propose_mu_) = 0;

  // The lifecycle state; Apply notifies it whenever what waiters read (applied index, term,
  // timestamp, safe time) moved.
  ReplicaStateTracker state_;
  ProposalTracker proposals_;
  // The answers of client requests with ids (exactly-once writes), recorded where entries apply.
  const std::unique_ptr<ResultTracker> results_;

  mutable absl::Mutex mu_;
  TabletReplicaMeta meta_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const Schema> schema_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<RaftNode> raft_ ABSL_GUARDED_BY(mu_);
  // Log anchors of copy sessions (AnchorLog).
  std::multiset<uint64_t> log_anchors_ ABSL_GUARDED_BY(mu_);

  // Written only by the applier (Apply); atomics so observers read them without mu_.
  std::atomic<uint64_t> replay_until_index_{0};  // Entries up to it are applied with replay.
  std::atomic<uint64_t> replay_until_term_{0};   // The term of that last entry at open.
  std::atomic<uint64_t> member_since_config_index_{0};
  std::atomic<bool> paused_for_space_{false};
  std::atomic<uint64_t> last_applied_term_{0};
  std::atomic<uint64_t> last_applied_index_{0};
  std::atomic<uint64_t> last_applied_ts_{0};
  // The index of the last write entry the tablet applied (applier only).
  uint64_t last_write_index_ = 0;
  // The follower's safe time (thread-safe; its lock is a leaf). Whoever raises it notifies state_.
  FollowerSafeTime safe_time_;
  WriteScratch apply_scratch_;  // Applier only: rows decoded for entries of other servers.

  absl::Mutex scratch_mu_;  // A leaf lock.
  std::vector<std::unique_ptr<WriteScratch>> free_scratch_ ABSL_GUARDED_BY(scratch_mu_);
};

}  // namespace basalt
