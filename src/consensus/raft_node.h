#pragma once

// RaftNode: the I/O shell around a RaftCore (raft_core.h) for one replica of one Raft group. It
// owns the core, the write-ahead log (log.h), the consensus metadata (consensus_metadata.h), a
// ticker thread and a worker thread, and borrows a Transport (transport.h) and a StateMachine
// (state_machine.h).
//
// The worker runs the fixed loop of docs/raft.md: wait for input (messages, proposals and other
// requests, ticks) -> feed the core -> for each Ready: append its entries to the log and wait for
// the fsync (group commit: every proposal queued meanwhile goes into the same append), flush the
// consensus metadata if the term or vote changed, THEN send the messages, THEN start tablet copies,
// THEN persist committed configurations and hand the committed entries to the applier, THEN
// Advance. The applier (a SerialTaskPool token: one batch at a time, in log order) applies them
// to the state machine, completes the proposals and reports the applied index back to the worker;
// the core hands out the next batch only then (RaftLog::TakeEntriesToApply). So a slow apply (a
// flush before a schema change, a slow disk) never delays heartbeats, votes or appends.
// Every few ticks it garbage-collects log segments below min(state machine durable index, what
// the leader's peers still need). That loop's body (a round) may also run on a thread that brings
// work while the worker is idle (ProposeAndClaim, ReceiveBatch; docs/raft.md "Rounds on the
// callers' threads"): one round runs at a time, whichever thread holds it (round_running_).
//
// Lifecycle: Open() -> Start() -> requests -> Shutdown() (or the destructor). Shutdown joins both
// threads and waits for the running apply; nothing is detached.
//
// Failure: if persisting fails (an I/O error in the log or the metadata), an apply fails
// (StateMachine::Apply's contract) or the owner calls Fail() (a corrupt block, a failed disk), the
// node stops for good: it must not send what it could not persist, nor vote or lead with a state
// that may differ from its peers'. It drops incoming messages (so it votes for no one and a leader
// stops sending heartbeats: the others elect a new leader), applies nothing more, reports itself a
// follower with no leader, calls RaftNodeOptions::on_failed once, and requests fail with the error
// until it is reopened.
//
// Proposals complete when their entry is applied on this replica: OK with the index if the entry
// applied is the one proposed, ABORTED if a new leader overwrote it. A deposed leader's proposal
// beyond the end of the log a new leader left it (a shorter log replaced its uncommitted suffix)
// fails at once with UNAVAILABLE, in doubt: no index applied here would reach it unless more is
// written, but another replica may still hold the entry and commit it. So once this replica
// follows a leader that commits an entry of its term, every proposal has resolved (within a few
// election timeouts of a leader change); at Shutdown the rest fail (UNAVAILABLE). A replica cut
// off from the group keeps its proposals pending: the *AndWait forms take a timeout.
//
// Thread-safe. Callbacks run on the thread running the round or on the applier: they must be
// quick and must not call the blocking methods (*AndWait, LeaderStepDown, TransferLeadership,
// Shutdown).

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "common/log_throttle.h"
#include "common/random.h"
#include "common/serial_task_pool.h"
#include "consensus/consensus_metadata.h"
#include "consensus/log.h"
#include "consensus/raft_core.h"
#include "consensus/state_machine.h"
#include "consensus/transport.h"

namespace basalt {

class ServerLog;

// Hooks that carry an opaque (time, index) pair from a leader to its followers on AppendEntries
// and heartbeats (RaftMessage::safe_time, safe_time_index). Raft never interprets the pair; the
// owner gives it a meaning (tablets: a safe time, docs/cluster.md "Scans"; docs/raft.md "Safe
// time"). Both run on the node's worker thread: they must be quick and must not call the node's
// blocking methods.
//
// Leader: at most once per tick, the worker calls the source BEFORE it takes the requests queued
// so far. The source returns a time T (or nullopt: nothing to send) and promises that every
// proposal that must be covered by T was submitted through Propose() before it returned (and every
// later one is not covered). The worker then takes the queued proposals, so each covered one is
// in the log after this round, and pairs T with I = the leader's last log index at that point:
// every covered entry has an index <= I. Messages of the leader's term carry the latest such pair.
using SafeTimeSource = std::function<std::optional<uint64_t>()>;
// Follower: called with (term, time, index) as sent by the leader of `term`, once per pair that
// differs from the previous one, and only while this replica follows that leader in that term.
using SafeTimeSink = std::function<void(uint64_t term, uint64_t time, uint64_t index)>;

struct RaftNodeOptions {
  std::string group_id;  // The tablet id (or the master catalog's id); the transport key.
  PeerId peer_id;        // This server's uuid.
  std::string wal_dir;
  // When set (borrowed), the log is group group_id of this server log and wal_dir is unused.
  ServerLog* server_log = nullptr;
  std::string metadata_path;
  // The membership of a brand-new replica, used only when metadata_path does not exist yet.
  RaftConfig initial_config;
  // Wall time per core tick; <= 0 means --raft_heartbeat_interval_ms (500 ms). Tests use 10-20.
  int tick_interval_ms = 0;
  RaftOptions raft;  // raft.id is set to peer_id.
  LogOptions log = LogOptions::FromFlags();
  // Log GC runs every this many ticks.
  int log_gc_interval_ticks = 10;
  // When the core arms a fast first election (RaftOptions::fast_first_election: a fresh group's
  // smallest voter), its first tick, and so its campaign, comes this long after Start() rather
  // than a full tick later (never later than a full tick). Long enough for the master's parallel
  // CreateTablet calls to have made the peers' replicas (milliseconds apart): a vote asked of a
  // replica not there yet is no vote, and a leader that then finds it missing asks for a tablet
  // copy, which only delays that one follower (the master's create or the copy makes it).
  int fast_first_election_delay_ms = 200;
  // Seed of the election jitter; 0 derives one from the time and the peer id.
  uint64_t seed = 0;
  // Optional (empty: off) safe time hooks; see SafeTimeSource above.
  SafeTimeSource safe_time_source;
  SafeTimeSink safe_time_sink;
  // Where committed entries are applied; borrowed, must outlive the node. Null: the node makes a
  // pool of one thread of its own.
  SerialTaskPool* apply_pool = nullptr;
  // Called once when the node stops on an error (see "Failure" above), on whichever thread found
  // it; must be quick and must not call the node's blocking methods. May be empty.
  std::function<void(const absl::Status& error)> on_failed;
};

class RaftNode {
 public:
  // The entry's index once applied, or why the proposal failed.
  using ProposeCallback = std::function<void(absl::StatusOr<uint64_t> index)>;

  // Opens the log and the metadata (creating both for a new replica) and rebuilds the core from
  // them: hard state and committed configuration from the metadata, later configurations from the
  // log, applied index from state_machine->DurableIndex(). Returns the log's and metadata's
  // errors (DATA_LOSS, I/O) and the core's (INVALID_ARGUMENT for bad options). `env`, `transport`
  // and `state_machine` are borrowed and must outlive the node.
  static absl::StatusOr<std::unique_ptr<RaftNode>> Open(Env* env, const RaftNodeOptions& options,
                                                        Transport* transport,
                                                        StateMachine* state_machine);
  ~RaftNode();

  RaftNode(const RaftNode&) = delete;
  RaftNode& operator=(const RaftNode&) = delete;

  // Starts the log's appender, registers with the transport and starts the threads.
  // FAILED_PRECONDITION if already started; the transport's and log's errors.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops receiving, joins the threads, fails pending requests with UNAVAILABLE, shuts the log
  // down and flushes the metadata. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Proposes `data` as a normal entry. `callback` gets UNAVAILABLE (leader hint in the message and
  // in payload RaftCore::kLeaderHintUrl) on a non-leader, ABORTED if the entry was overwritten,
  // UNAVAILABLE if the node is not running, or the node's persistence error.
  // With `expected_term` != 0 the entry is proposed only if the node still leads in that term when
  // the worker takes the proposal (UNAVAILABLE otherwise): a caller that checked state of a term
  // (e.g. "every earlier entry is applied") is sure the entry lands in that same term.
  void Propose(std::string data, ProposeCallback callback, uint64_t expected_term = 0)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A round claimed for the thread that proposed (ProposeAndClaim). Run() runs it on the calling
  // thread (blocking for a WAL write), and so does the destructor if Run() was not called; a
  // default-constructed or moved-from one does nothing. The worker runs no round until it ran.
  // Not thread-safe: the proposing thread owns it.
  class ClaimedRound {
   public:
    ClaimedRound() = default;
    ClaimedRound(ClaimedRound&& o) noexcept : node_(std::exchange(o.node_, nullptr)) {}
    ClaimedRound& operator=(ClaimedRound&& o) noexcept {
      Run();
      node_ = std::exchange(o.node_, nullptr);
      return *this;
    }
    ~ClaimedRound() { Run(); }
    void Run();
    bool claimed() const { return node_ != nullptr; }

   private:
    friend class RaftNode;
    explicit ClaimedRound(RaftNode* node) : node_(node) {}
    RaftNode* node_ = nullptr;
  };
  // As Propose; if the worker is idle, the round that writes the entry (and whatever else is
  // queued) is left to the caller, who would only wait for its proposal anyway: one hand-off to
  // the worker less. Run the returned round soon, without a lock a round's callbacks or the state
  // machine take (after releasing the one that orders proposals, so that others proposed
  // meanwhile share the next round's WAL write). --raft_rounds_on_callers=false: never claimed.
  ClaimedRound ProposeAndClaim(std::string data, ProposeCallback callback,
                               uint64_t expected_term = 0) ABSL_LOCKS_EXCLUDED(mu_);
  // Propose and wait; DEADLINE_EXCEEDED after `timeout` (the entry may still commit later).
  absl::StatusOr<uint64_t> ProposeAndWait(std::string data, absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Proposes a membership change; completes like Propose when its entry is applied. Errors as
  // RaftCore::ProposeConfigChange, and FAILED_PRECONDITION (naming cas_config_index) when
  // `cas_config_index` is given and the committed configuration's index differs when the worker
  // takes the change.
  void ChangeConfig(const ConfigChange& change, ProposeCallback callback,
                    std::optional<uint64_t> cas_config_index = std::nullopt)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<uint64_t> ChangeConfigAndWait(
      const ConfigChange& change, absl::Duration timeout,
      std::optional<uint64_t> cas_config_index = std::nullopt) ABSL_LOCKS_EXCLUDED(mu_);
  // RaftCore::StepDown / TransferLeadership, run on the worker; they return once the core took
  // the request (the election or transfer completes later).
  absl::Status LeaderStepDown() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status TransferLeadership(const PeerId& peer) ABSL_LOCKS_EXCLUDED(mu_);
  // Stops the node for good with `error` (see "Failure" above); the first error sticks. Does not
  // block: any thread may call it, callbacks and the state machine's Apply included.
  void Fail(const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Observers (a snapshot published by the worker after each round) ----
  RaftCore::Role role() const ABSL_LOCKS_EXCLUDED(mu_);
  PeerId leader_id() const ABSL_LOCKS_EXCLUDED(mu_);  // Empty if unknown.
  uint64_t term() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t commit_index() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t applied_index() const ABSL_LOCKS_EXCLUDED(mu_);
  RaftConfig config() const ABSL_LOCKS_EXCLUDED(mu_);
  // The last committed configuration and the index of its entry (0: the initial one).
  std::pair<RaftConfig, uint64_t> committed_config() const ABSL_LOCKS_EXCLUDED(mu_);
  // The index of the entry carrying config(), committed or not (0: the initial configuration).
  uint64_t config_index() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t last_index() const ABSL_LOCKS_EXCLUDED(mu_);
  // When this replica last received a message from each peer (a new leader counts every member
  // as heard when it took office). A leader judges followers' health by it.
  std::map<PeerId, absl::Time> peer_last_heard() const ABSL_LOCKS_EXCLUDED(mu_);
  // OK, or the error that stopped the node (see "Failure" above).
  absl::Status health() const ABSL_LOCKS_EXCLUDED(mu_);
  const PeerId& peer_id() const { return options_.peer_id; }
  // The WAL (thread-safe), for tests and tools.
  const Log& log() const { return *log_; }

 private:
  // Work for the worker thread: called with OK to run, or with the error that cancels it.
  using Task = std::function<void(const absl::Status& cancel)>;
  struct Pending {
    uint64_t term;
    ProposeCallback callback;
  };

  RaftNode(Env* env, const RaftNodeOptions& options, Transport* transport,
           StateMachine* state_machine);
  absl::Status Init();

  void Receive(RaftMessage m) ABSL_LOCKS_EXCLUDED(mu_);
  // The transport's batch handler: queues `messages` and, if no round runs and only messages
  // wait, runs the round on the calling thread (a follower's append is then written, synced and
  // answered before the call that brought it returns; the transport sends the answer back in
  // that call's reply).
  void ReceiveBatch(std::vector<RaftMessage> messages) ABSL_LOCKS_EXCLUDED(mu_);
  // Queues `task`, or cancels it at once if the node does not run. With `claim`, claims the
  // round for the caller if it can (ClaimRoundLocked) and returns whether it did.
  bool Enqueue(Task task, bool claim = false) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `fn` in a round (the worker's, or a caller's that takes the queue) and returns its
  // status.
  absl::Status RunOnWorker(std::function<absl::Status()> fn) ABSL_LOCKS_EXCLUDED(mu_);
  // Queues a proposal made by `propose` (in a round) whose callback fires on apply.
  bool ProposeWith(std::function<absl::StatusOr<uint64_t>()> propose, ProposeCallback callback,
                   bool claim = false);
  bool ProposeImpl(std::string data, ProposeCallback callback, uint64_t expected_term, bool claim);

  // Ticks every tick_interval_, the first one `first` after it starts.
  void TickerLoop(absl::Duration first) ABSL_LOCKS_EXCLUDED(mu_);
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // What one round works on.
  struct RoundInputs {
    std::vector<RaftMessage> messages;
    std::deque<Task> tasks;
    int ticks = 0;
    uint64_t applied = 0;               // The applier's new applied index, or 0 if it did not move.
    std::optional<uint64_t> safe_time;  // A leader's sample (see SafeTimeSource) ...
    uint64_t sample_term = 0;           // ... and the term it was taken in.
  };
  // Moves the queued inputs into *in (safe_time stays); ticks only `with_ticks` (the worker's:
  // a leader samples its safe time before it takes them).
  void TakeInputsLocked(RoundInputs* in, bool with_ticks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One round of the core: steps the inputs, carries out the Readies, publishes the state. An
  // error fails the node (the caller calls Fail). REQUIRES: this thread set round_running_.
  absl::Status RunRound(RoundInputs* in) ABSL_LOCKS_EXCLUDED(mu_);
  // Claims the round for the calling thread (round_running_) unless a round runs or the node
  // does not run normally.
  bool ClaimRoundLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs a claimed round on `in`, then (a few times at most) another for messages, and with
  // `with_tasks` requests, queued meanwhile, and releases it; an error fails the node.
  void RunClaimedRound(RoundInputs* in, bool with_tasks) ABSL_LOCKS_EXCLUDED(mu_);
  // ClaimedRound::Run: takes the inputs of the round claimed by ProposeAndClaim and runs it.
  void RunReservedRound() ABSL_LOCKS_EXCLUDED(mu_);
  // Releases the round (round_running_) with what the worker's wait depends on; or, given
  // `next` and if messages (with `with_tasks`, or requests) were queued meanwhile, keeps it and
  // takes them into *next (returns true).
  bool EndRound(RoundInputs* next, bool with_tasks) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the worker may run a round now (or must stop), and whether it must wake (also to
  // wait again with an earlier deadline).
  bool WorkerMayRunLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WorkerWakeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leader: pairs a sampled time with the last index, once the queued proposals are in the log.
  void RecordSafeTime(std::optional<uint64_t> time, uint64_t sample_term);
  // Leader: attaches the recorded pair to this term's appends and heartbeats.
  void StampSafeTime(std::vector<RaftMessage>* messages) const;
  // Follower: hands a pair carried by `m` (already stepped into the core) to the sink.
  void MaybeDeliverSafeTime(const RaftMessage& m);
  bool HasInputLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Carries out one Ready. An error means nothing of it was sent or applied.
  absl::Status HandleReady();
  absl::Status Persist(const Ready& ready);
  // Worker, after persisting a Ready's entries: fails, as in doubt, every pending proposal whose
  // index is beyond the log's last index (a new leader's shorter log replaced this replica's
  // suffix of an earlier term), in index order.
  void FailProposalsBeyondLog() ABSL_LOCKS_EXCLUDED(pending_mu_);
  void StartSnapshotCopies(const std::vector<PeerId>& peers);
  // A copy to `peer` failed: report it to the core only after a growing delay.
  void DelaySnapshotRetry(const PeerId& peer, const absl::Status& s);
  // Reports the failed copies whose delay has passed.
  void RetryDueSnapshotCopies();
  // Worker: persists the committed configurations among `entries`, then queues them for the
  // applier.
  absl::Status HandOverCommitted(std::vector<LogEntry> entries);
  // Applier: applies `entries` in order, completes their proposals, reports the applied index.
  void ApplyCommitted(const std::vector<LogEntry>& entries) ABSL_LOCKS_EXCLUDED(mu_, pending_mu_);
  void MaybeGcLog();
  void PublishState() ABSL_LOCKS_EXCLUDED(mu_);
  // Worker, after a failure: waits until the failing Fail() set error_, stops the applier (waiting
  // for the running apply), then FailAll.
  void StopAfterFailure(const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_, pending_mu_);
  // Fails every pending proposal and queued task with `status`.
  void FailAll(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  Env* const env_;
  const RaftNodeOptions options_;
  Transport* const transport_;
  StateMachine* const state_machine_;
  const absl::Duration tick_interval_;

  // Owned by the thread running a round once started (the worker, a proposer's thread that
  // claimed it, or a transport thread in ReceiveBatch; round_running_ makes them take turns), by
  // Open and Shutdown otherwise: the core and what only it touches. log_ itself is thread-safe.
  std::unique_ptr<Log> log_;
  std::unique_ptr<ConsensusMetadata> cmeta_;
  Random rng_;
  std::unique_ptr<RaftCore> core_;

  int ticks_since_gc_ = 0;
  // When a round sends a commit index no append carried (RaftCore::HasUnsentCommit); infinite
  // when there is none. Published to the worker's wait as commit_due_.
  absl::Time commit_propagation_due_ = absl::InfiniteFuture();
  // Tablet copies to one peer (an entry exists from the first copy until one succeeds).
  struct PeerCopy {
    bool in_flight = false;
    int failures = 0;                    // Failed copies in a row.
    absl::Duration backoff;              // The current retry delay; doubles per failure.
    std::optional<absl::Time> retry_at;  // When the last failure is reported to the core.
    LogThrottle failure_log;             // The warnings about failed copies.
  };
  std::map<PeerId, PeerCopy> copies_;
  // After this many failed copies in a row, a peer's "no such replica" answers no longer count as
  // signs of life (a copy that keeps failing gets the peer reported failed and replaced).
  static constexpr int kMaxCopyFailuresStillHealthy = 5;
  std::map<PeerId, absl::Time> heard_;  // See peer_last_heard().
  RaftCore::Role role_before_publish_ = RaftCore::Role::kFollower;
  // The safe time pair a leader sends (term 0: none yet), and the last pair a follower delivered.
  struct SafeTimePair {
    uint64_t term = 0;
    uint64_t time = 0;
    uint64_t index = 0;
    bool operator==(const SafeTimePair&) const = default;
  };
  SafeTimePair leader_safe_time_;
  SafeTimePair delivered_safe_time_;

  // Proposals waiting for their entry to be applied, by log index: added by the worker, completed
  // by the applier (or failed by FailAll, or FailProposalsBeyondLog).
  // Invariant, whenever the worker has carried out a Ready: every key is <= the core's last log
  // index. The applier resolves a proposal only when the applied index reaches its key, so a key
  // beyond the log's end could wait forever (see FailProposalsBeyondLog).
  absl::Mutex pending_mu_;  // Never held with mu_.
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(pending_mu_);

  std::unique_ptr<SerialTaskPool> own_apply_pool_;      // When options_.apply_pool is null.
  std::unique_ptr<SerialTaskPool::Token> apply_token_;  // Created by Start().

  mutable absl::Mutex mu_;
  // Inputs for the worker (applied_ too: the applier raises it).
  std::vector<RaftMessage> inbox_ ABSL_GUARDED_BY(mu_);
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  int pending_ticks_ ABSL_GUARDED_BY(mu_) = 0;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);    // Sticky; see "Failure" above.
  bool failing_ ABSL_GUARDED_BY(mu_) = false;  // Fail() was called (error_ follows).
  // Published state.
  RaftCore::Role role_ ABSL_GUARDED_BY(mu_) = RaftCore::Role::kFollower;
  PeerId leader_ ABSL_GUARDED_BY(mu_);
  uint64_t term_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t commit_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t applied_ ABSL_GUARDED_BY(mu_) = 0;        // Set by the applier (and Init).
  uint64_t applied_taken_ ABSL_GUARDED_BY(mu_) = 0;  // applied_ as last reported to the core.
  // Set at the end of each round (EndRound): the core holds committed entries back until the
  // applier reports the batch before them, so a raised applied_ is input (HasInputLocked).
  bool awaiting_applied_ ABSL_GUARDED_BY(mu_) = false;
  // A round runs, or is claimed by a proposer who will run it (ClaimedRound): nobody else starts
  // one; the worker waits, the others queue.
  bool round_running_ ABSL_GUARDED_BY(mu_) = false;
  // commit_propagation_due_ as of the last round; the deadline the worker waits with
  // (InfinitePast while it does not wait); set when a round on another thread made commit_due_
  // earlier than that deadline, so the worker wakes to wait again.
  absl::Time commit_due_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time worker_wait_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool rewait_ ABSL_GUARDED_BY(mu_) = false;
  RaftConfig config_ ABSL_GUARDED_BY(mu_);
  RaftConfig committed_config_ ABSL_GUARDED_BY(mu_);
  uint64_t committed_config_index_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t config_index_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_index_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<PeerId, absl::Time> peer_last_heard_ ABSL_GUARDED_BY(mu_);

  std::thread ticker_;  // Started by Start(), joined by Shutdown().
  std::thread worker_;
};

}  // namespace basalt
