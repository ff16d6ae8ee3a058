#pragma once

// RaftCore: the Raft consensus algorithm as a pure, deterministic state machine (after
// etcd-io/raft). It owns no thread, clock, file or socket: time advances by Tick(), messages
// arrive by Step(), clients call Propose(), and everything the outside must do comes back as a
// Ready batch (hard state and entries to persist, messages to send, entries to apply). Randomness
// (election jitter) comes from an injected Random, so a seed replays a run exactly.
//
// Features: pre-vote (thesis §9.6), randomized election timeouts in [T, 2T) with exponential
// backoff after failed elections, heartbeats, check-quorum, log replication with batching and
// pipelining, fast back-off on mismatch, leader step-down and leadership transfer (TimeoutNow),
// single-server membership changes (learners, promotion, demotion, removal; a configuration
// takes effect when appended), and a hook for followers that need a tablet copy.
//
// Call order: Create(); then any sequence of inputs (Tick, Step, Propose...). Whenever HasReady(),
// call GetReady(), carry it out as Ready documents, and call Advance() with it; other inputs may
// arrive between GetReady() and Advance(), but Readies must be carried out in order.
//
// Time: one tick is --raft_heartbeat_interval_ms in the node shell (500 ms), so the defaults below
// (heartbeat 1 tick, election timeout 3 ticks randomized to [3, 6)) give DESIGN.md's 500 ms
// heartbeat and >= 1.5 s election timeout.
//
// Not thread-safe; the caller serializes.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/random.h"
#include "consensus/log_reader.h"
#include "consensus/progress.h"
#include "consensus/raft_config.h"
#include "consensus/raft_log.h"
#include "consensus/raft_messages.h"
#include "consensus/raft_types.h"

namespace basalt {

struct RaftOptions {
  PeerId id;
  // Base election timeout T in ticks; each timeout is drawn from [T', 2T') where
  // T' = T << min(failed elections in a row, max_election_backoff_exponent).
  int election_ticks = 3;
  int heartbeat_ticks = 1;
  int max_election_backoff_exponent = 3;
  bool pre_vote = true;
  // A leader that has not heard from a majority within an election timeout steps down, and a
  // follower that has heard from a leader within one ignores vote requests (unless a transfer).
  bool check_quorum = true;
  uint64_t max_append_bytes = 1 << 20;  // Per append message (at least one entry).
  size_t max_inflight_appends = 64;     // Pipelined appends per follower.
  uint64_t max_apply_bytes = 64 << 20;  // Per Ready's committed_entries (at least one entry).
  // A learner counts as caught up when within this many entries of the leader's last index.
  uint64_t learner_catch_up_entries = 100;
  // The leader proposes promotion of a learner as soon as it has caught up.
  bool auto_promote_learners = false;
  // A group starting fresh (term 0, empty log): its smallest voter campaigns at its first tick
  // instead of after a full election timeout, and fast_first_election_armed() says so, so that
  // the node shell can deliver that tick early (RaftNodeOptions::fast_first_election_delay_ms):
  // a new tablet has a leader a fraction of a second after it starts rather than 3-6 ticks. Only
  // timing changes (safety never depends on it), and pre-vote keeps an early campaign from
  // disturbing anyone.
  bool fast_first_election = false;
  // The voter that campaigns at its first tick under fast_first_election: the master names one
  // per new tablet so that a new table's leaders spread over its servers. Empty, or not a
  // voter: the smallest voter. Every member must be given the same (or none): two early
  // campaigners only cost an election round, none costs the timeout.
  PeerId fast_first_election_peer;

  // Deliberately broken behaviour, only for the simulation's self-test (raft_simulation_test),
  // which proves that the safety checker catches these classic bugs. Never set it elsewhere.
  enum class TestingBug {
    kNone,
    kCommitOldTermEntriesByCounting,  // Violates §5.4.2.
    kGrantVoteWithoutLogCheck,        // Violates the election restriction, §5.4.1.
    kAllowConcurrentConfigChanges,    // Violates one uncommitted change at a time, thesis §4.1.
  };
  TestingBug testing_bug = TestingBug::kNone;
};

// What a (re)starting replica knows from durable storage.
struct RaftBootState {
  HardState hard_state;
  // The last committed configuration the caller persisted and the index of its entry (0: the
  // initial configuration). Configuration entries after it are re-read from the log.
  RaftConfig config;
  uint64_t config_index = 0;
  // Index of the last entry the state machine has durably applied.
  uint64_t applied = 0;
};

class RaftCore {
 public:
  enum class Role { kFollower, kPreCandidate, kCandidate, kLeader };

  // Returns INVALID_ARGUMENT for bad options or an invalid boot configuration, and DATA_LOSS (or
  // the log's error) if a configuration entry in the log cannot be read or decoded. `log` and
  // `rng` are borrowed and must outlive the core.
  static absl::StatusOr<std::unique_ptr<RaftCore>> Create(const RaftOptions& options,
                                                          const LogReader* log,
                                                          const RaftBootState& boot, Random* rng);

  // --- Inputs ---
  void Tick();
  // Processes one message from a peer. Messages for another replica or from stale terms are
  // ignored as the algorithm says; nothing a peer sends can make this fail.
  void Step(const RaftMessage& m);
  // As Step, but an append's entries are moved out of *m into the log instead of copied (the
  // rest of *m is left as it was).
  void StepTakingEntries(RaftMessage* m);
  // Appends a normal entry and returns its index. The entry is committed once it appears in a
  // Ready's committed_entries with the returned index and this leader's term. Returns
  // UNAVAILABLE (with the leader hint, if known, in the message and in payload kLeaderHintUrl)
  // on a non-leader or during a leadership transfer.
  absl::StatusOr<uint64_t> Propose(std::string data, uint64_t timestamp = 0);
  // Appends a configuration change (it takes effect now, on append). Returns UNAVAILABLE when not
  // the leader, while another change is uncommitted, or before this leader committed an entry of
  // its term; FAILED_PRECONDITION for a change that does not apply, removing or demoting the
  // leader itself, or promoting a learner that has not caught up.
  absl::StatusOr<uint64_t> ProposeConfigChange(const ConfigChange& change);
  // Hands leadership to `peer` once it has caught up (TimeoutNow); proposals are refused until it
  // completes or an election timeout passes. UNAVAILABLE when not the leader,
  // FAILED_PRECONDITION if `peer` is not a voter.
  absl::Status TransferLeadership(const PeerId& peer);
  // The leader becomes a follower in its term (a new election follows). UNAVAILABLE otherwise.
  absl::Status StepDown();
  // A tablet copy requested through Ready::snapshots_needed finished; the peer's log now ends at
  // `index`. Ignored unless the leader is waiting for that peer's copy.
  void ReportSnapshotDone(const PeerId& peer, uint64_t index);
  void ReportSnapshotFailed(const PeerId& peer);
  // The server of member `peer` holds no replica of this group (MessageType::kPeerMissing): a
  // leader puts the peer in the snapshot state and asks for a tablet copy through
  // Ready::snapshots_needed, once (until the copy is reported done or failed). Ignored on a
  // non-leader, for non-members and for peers already waiting for a copy.
  void ReportPeerMissing(const PeerId& peer);
  // Leader: the commit index advanced without an append to every follower since. A leader does
  // not send commit-only appends at once when followers acknowledge (that doubled the consensus
  // messages of small synchronous batches): the next append carries the commit index, and the
  // caller calls PropagateCommit() when none went out for a short while (RaftNode:
  // --raft_commit_propagation_delay_ms). Heartbeats carry it too, up to each follower's match.
  // A leader that steps down sends it first. Followers that are paused (probing, waiting for a
  // copy) get it from their next append or heartbeat.
  bool HasUnsentCommit() const {
    return role_ == Role::kLeader && commit_unsent_ && !progress_.empty();
  }
  // Sends every follower an append carrying the commit index in the next Ready (empty when it
  // has nothing new). No-op unless HasUnsentCommit().
  void PropagateCommit();

  // --- Outputs ---
  bool HasReady() const;
  Ready GetReady();
  // REQUIRES: `ready` came from GetReady() and was carried out; Readies advance in order. Its
  // committed entries need only have been handed to the applier: AppliedTo() reports them applied.
  void Advance(const Ready& ready);
  // The caller applied the committed entries up to `index`; until then no further ones are handed
  // out (RaftLog::TakeEntriesToApply).
  void AppliedTo(uint64_t index) { log_.AppliedTo(index); }

  // --- Observers ---
  const PeerId& id() const { return options_.id; }
  Role role() const { return role_; }
  uint64_t term() const { return term_; }
  // Whether this replica was created to campaign at its first tick (fast_first_election).
  bool fast_first_election_armed() const { return fast_first_election_armed_; }
  const PeerId& vote() const { return vote_; }
  const PeerId& leader() const { return leader_; }  // Empty if unknown.
  const RaftConfig& config() const { return config_; }
  // The last committed configuration and the index of its entry (0: the initial one).
  const RaftConfig& committed_config() const { return committed_config_; }
  uint64_t committed_config_index() const { return committed_config_index_; }
  // The index of the entry carrying config() (committed or not; 0: the initial configuration).
  uint64_t config_index() const {
    return pending_configs_.empty() ? committed_config_index_ : pending_configs_.back().index;
  }
  const RaftLog& log() const { return log_; }
  // The leader's replication state for `peer`, or nullptr (not leader / not a member).
  const Progress* progress(const PeerId& peer) const;
  std::string DebugString() const;

  // Status payload key carrying the leader's id on UNAVAILABLE "not the leader" errors.
  static constexpr const char* kLeaderHintUrl = "basalt.consensus.leader_hint";

 private:
  RaftCore(const RaftOptions& options, const LogReader* log, const RaftBootState& boot,
           Random* rng);
  absl::Status LoadConfigs(const RaftBootState& boot);

  // Role transitions.
  void BecomeFollower(uint64_t term, const PeerId& leader);
  void BecomePreCandidate();
  void BecomeCandidate();
  void BecomeLeader();
  void ResetElectionTimer();
  // fast_first_election's campaigner: fast_first_election_peer if it is a voter, else the
  // smallest voter. REQUIRES: config_ has voters.
  const PeerId& FirstCampaigner() const;
  bool Promotable() const { return IsVoter(config_, options_.id); }

  // Elections.
  void Campaign(bool pre_vote, bool transfer);
  bool HandleTermMismatch(const RaftMessage& m);  // Returns true if `m` is consumed.
  void HandleVoteRequest(const RaftMessage& m);
  void HandleVoteResponse(const RaftMessage& m);

  // Replication, follower side.
  // `movable`: m's entries, which may be moved from (StepTakingEntries), or null.
  void HandleAppend(const RaftMessage& m, std::vector<LogEntry>* movable);
  void StepImpl(const RaftMessage& m, std::vector<LogEntry>* movable);
  void HandleHeartbeat(const RaftMessage& m);
  void HeardFromLeader(const RaftMessage& m);

  // Replication, leader side.
  void StepLeader(const RaftMessage& m);
  void HandleAppendResponse(const RaftMessage& m, Progress* pr);
  void HandleHeartbeatResponse(const RaftMessage& m, Progress* pr);
  bool SendAppend(const PeerId& to, Progress* pr, bool send_if_empty);
  void BroadcastAppend();
  void BroadcastHeartbeat();
  void TickLeader();
  bool MaybeCommit();
  void AppendLeaderEntry(EntryType type, std::string data, uint64_t timestamp);
  void MaybeSendTimeoutNow(const PeerId& to, const Progress& pr);
  void MaybeAutoPromote(const PeerId& peer, const Progress& pr);
  bool CaughtUp(const Progress& pr) const;

  // Configuration tracking.
  void OnConfigAppended(uint64_t index, uint64_t term, RaftConfig config);
  void DropReplacedConfigs();
  void OnCommitAdvanced();
  void SyncProgressWithConfig();

  void Send(RaftMessage m);
  absl::Status NotLeaderError() const;
  HardState hard_state() const { return HardState{term_, vote_, log_.committed()}; }

  const RaftOptions options_;
  Random* const rng_;
  RaftLog log_;

  Role role_ = Role::kFollower;
  uint64_t term_ = 0;
  PeerId vote_;
  PeerId leader_;

  // The last committed configuration, and the configurations appended after it (index, term,
  // config), oldest first; config_ is the newest of them all (it takes effect on append).
  RaftConfig committed_config_;
  uint64_t committed_config_index_ = 0;
  struct PendingConfig {
    uint64_t index;
    uint64_t term;
    RaftConfig config;
  };
  std::vector<PendingConfig> pending_configs_;
  RaftConfig config_;

  int election_elapsed_ = 0;
  int heartbeat_elapsed_ = 0;
  int randomized_election_timeout_ = 0;
  bool fast_first_election_armed_ = false;
  int failed_elections_ = 0;  // Elections in a row that this replica lost or timed out in.

  std::map<PeerId, bool> votes_;         // Candidates: voter -> granted.
  std::map<PeerId, Progress> progress_;  // Leader: every member but itself.
  PeerId lead_transferee_;               // Leader: transfer in progress to this peer.
  bool broadcast_pending_ = false;       // Leader: new entries not yet sent (batched).
  bool commit_unsent_ = false;           // Leader: see HasUnsentCommit().

  std::vector<RaftMessage> outbox_;
  std::vector<PeerId> snapshots_needed_;
  HardState handed_out_hard_state_;  // The hard state last returned in a Ready (or loaded).
};

const char* RoleName(RaftCore::Role role);

}  // namespace basalt
