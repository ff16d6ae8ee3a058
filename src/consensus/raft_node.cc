#include "consensus/raft_node.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/synchronization/notification.h"
#include "common/log_throttle.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/thread_name.h"
#include "consensus/server_log.h"

DEFINE_int32(raft_heartbeat_interval_ms, 500,
             "Wall time of one Raft tick: the leader's heartbeat interval. Election timeouts are "
             "a multiple of it (see docs/raft.md).");
DEFINE_int32(raft_commit_propagation_delay_ms, 20,
             "How long a leader lets a newly committed index wait for the next append to carry it "
             "to the followers before it sends them commit-only appends (followers apply only "
             "what they know is committed). Under a steady write load the next batch carries it; "
             "0 sends at once.");
DEFINE_int32(log_max_segments_to_retain, 80,
             "Most WAL segments a leader keeps for followers that lag behind (or are down): past "
             "it, segments the replica itself no longer needs are deleted, and such a follower is "
             "brought back by a tablet copy instead. With --log_per_server these are segments of "
             "the server's shared log that the replica's entries span, so the bound is on the "
             "server's WAL, not on each replica's.");
DEFINE_int32(tablet_copy_retry_base_ms, 1000,
             "Delay before a leader retries a failed tablet copy to a follower; it doubles (with "
             "jitter) after each further failure to the same follower.");
DEFINE_int32(tablet_copy_retry_max_ms, 60000,
             "Longest delay between a leader's attempts to copy a tablet to one follower.");

DEFINE_bool(raft_rounds_on_callers, true,
            "Whether a thread that brings a Raft replica work (a proposal, or a batch of messages "
            "from the transport) runs the replica's round itself when its worker is idle, instead "
            "of waking the worker: one thread hand-off less per write on each replica.");

namespace basalt {

namespace {

absl::Duration TickInterval(int ms) {
  return absl::Milliseconds(ms > 0 ? ms : std::max(FLAGS_raft_heartbeat_interval_ms, 1));
}

uint64_t ChooseSeed(uint64_t seed, const PeerId& peer) {
  if (seed != 0) return seed;
  return static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^ std::hash<std::string>()(peer);
}

// Shared between a *AndWait caller and the callback, which may outlive a timed-out wait.
struct WaitState {
  absl::Notification done;
  absl::StatusOr<uint64_t> result;
};

absl::StatusOr<uint64_t> WaitFor(const std::shared_ptr<WaitState>& state, absl::Duration timeout) {
  if (!state->done.WaitForNotificationWithTimeout(timeout)) {
    return absl::DeadlineExceededError("timed out waiting for the entry to be applied");
  }
  return state->result;
}

// A proposal whose entry a new leader replaced.
absl::Status OverwrittenError(uint64_t index, uint64_t term) {
  return absl::AbortedError(
      StrCat("entry ", index, " of term ", term, " was overwritten by a new leader"));
}

// A proposal whose entry a new leader's shorter log dropped from this replica's log: no index
// applied here reaches it unless more is written, yet another replica may still hold the entry
// and a later leader commit it, so its outcome is unknown (not ABORTED, which says "it did not").
absl::Status DroppedInDoubtError(uint64_t index, uint64_t term, uint64_t last_index) {
  return absl::UnavailableError(StrCat("entry ", index, " of term ", term,
                                       " was dropped: a new leader's log replaced this ",
                                       "replica's, which now ends at ", last_index,
                                       "; the entry may still commit through another replica"));
}

RaftNode::ProposeCallback Notifier(const std::shared_ptr<WaitState>& state) {
  return [state](absl::StatusOr<uint64_t> result) {
    state->result = std::move(result);
    state->done.Notify();
  };
}

}  // namespace

RaftNode::RaftNode(Env* env, const RaftNodeOptions& options, Transport* transport,
                   StateMachine* state_machine)
    : env_(env),
      options_(options),
      transport_(transport),
      state_machine_(state_machine),
      tick_interval_(TickInterval(options.tick_interval_ms)),
      rng_(ChooseSeed(options.seed, options.peer_id)) {}

absl::StatusOr<std::unique_ptr<RaftNode>> RaftNode::Open(Env* env, const RaftNodeOptions& options,
                                                         Transport* transport,
                                                         StateMachine* state_machine) {
  std::unique_ptr<RaftNode> node(new RaftNode(env, options, transport, state_machine));
  BASALT_RETURN_IF_ERROR(node->Init());
  return node;
}

absl::Status RaftNode::Init() {
  if (options_.server_log != nullptr) {
    BASALT_ASSIGN_OR_RETURN(log_, options_.server_log->OpenGroup(options_.group_id));
  } else {
    BASALT_ASSIGN_OR_RETURN(log_, Log::Open(env_, options_.wal_dir, options_.log));
  }
  absl::StatusOr<std::unique_ptr<ConsensusMetadata>> cmeta =
      ConsensusMetadata::Load(env_, options_.metadata_path);
  if (absl::IsNotFound(cmeta.status())) {
    ConsensusMetadataContents contents;
    contents.committed_config = NormalizeConfig(options_.initial_config);
    cmeta = ConsensusMetadata::Create(env_, options_.metadata_path, contents);
  }
  BASALT_RETURN_IF_ERROR(cmeta.status());
  cmeta_ = std::move(*cmeta);

  RaftOptions raft = options_.raft;
  raft.id = options_.peer_id;
  RaftBootState boot;
  boot.hard_state = cmeta_->hard_state();
  boot.config = cmeta_->contents().committed_config;
  boot.config_index = cmeta_->contents().committed_config_index;
  boot.applied = state_machine_->DurableIndex();
  BASALT_ASSIGN_OR_RETURN(core_, RaftCore::Create(raft, log_.get(), boot, &rng_));
  {
    absl::MutexLock l(&mu_);
    applied_ = applied_taken_ = core_->log().applied();
  }
  PublishState();
  return absl::OkStatus();
}

RaftNode::~RaftNode() { Shutdown(); }

absl::Status RaftNode::Start() {
  {
    absl::MutexLock l(&mu_);
    if (running_ || stopping_) return absl::FailedPreconditionError("raft node already started");
  }
  BASALT_RETURN_IF_ERROR(log_->Start());
  SerialTaskPool* pool = options_.apply_pool;
  if (pool == nullptr) {
    own_apply_pool_ = std::make_unique<SerialTaskPool>(1, "raft-apply");
    pool = own_apply_pool_.get();
  }
  apply_token_ = pool->NewToken();
  absl::Duration first_tick = tick_interval_;
  // Read before a round can run (on the worker, or on a transport thread once registered).
  if (core_->fast_first_election_armed()) {
    first_tick = std::min(first_tick, absl::Milliseconds(options_.fast_first_election_delay_ms));
  }
  BASALT_RETURN_IF_ERROR(transport_->Register(
      options_.group_id, options_.peer_id, [this](RaftMessage m) { Receive(std::move(m)); },
      [this](std::vector<RaftMessage> m) { ReceiveBatch(std::move(m)); }));
  {
    absl::MutexLock l(&mu_);
    running_ = true;
  }
  worker_ = std::thread([this] {
    SetCurrentThreadName("raft-worker");
    WorkerLoop();
  });
  ticker_ = std::thread([this, first_tick] {
    SetCurrentThreadName("raft-ticker");
    TickerLoop(first_tick);
  });
  return absl::OkStatus();
}

void RaftNode::Shutdown() {
  bool was_running;
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return;
    stopping_ = true;
    was_running = running_;
    running_ = false;
  }
  if (was_running) transport_->Unregister(options_.group_id, options_.peer_id);
  {
    // A round on another thread (ProposeAndClaim, ReceiveBatch) may still use the log: it ends
    // first.
    absl::MutexLock l(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !round_running_; };
    mu_.Await(absl::Condition(&idle));
  }
  if (ticker_.joinable()) ticker_.join();
  if (worker_.joinable()) worker_.join();
  // Committed entries handed to the applier are applied before the proposals fail (their outcome
  // is known: a waiting client must not be told "not the leader" for a write that committed).
  // A failed node's were dropped already (StopAfterFailure).
  if (apply_token_ != nullptr) apply_token_->Drain();
  FailAll(absl::UnavailableError(StrCat("raft replica ", options_.peer_id, " is shutting down")));
  if (log_ != nullptr) log_->Shutdown();
  if (cmeta_ != nullptr && cmeta_->dirty()) {
    absl::Status s = cmeta_->Flush();  // Only the commit index can be unflushed: best effort.
    LOG_IF(WARNING, !s.ok()) << "flushing consensus metadata at shutdown: " << s;
  }
}

// ---- Requests -------------------------------------------------------------------------------

void RaftNode::Receive(RaftMessage m) {
  absl::MutexLock l(&mu_);
  if (running_ && !failing_) inbox_.push_back(std::move(m));
}

bool RaftNode::Enqueue(Task task, bool claim) {
  absl::Status cancel;
  {
    absl::MutexLock l(&mu_);
    if (running_ && !failing_) {
      tasks_.push_back(std::move(task));
      // In the same critical section, so that the worker does not wake for the task.
      return claim && ClaimRoundLocked();
    }
    cancel =
        !error_.ok() ? error_
        : failing_
            ? absl::UnavailableError(
                  StrCat("raft replica ", options_.peer_id, " is stopping after an error"))
            : absl::UnavailableError(StrCat("raft replica ", options_.peer_id, " is not running"));
  }
  task(cancel);
  return false;
}

absl::Status RaftNode::RunOnWorker(std::function<absl::Status()> fn) {
  absl::Notification done;
  absl::Status result;
  Enqueue([&](const absl::Status& cancel) {
    result = cancel.ok() ? fn() : cancel;
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

bool RaftNode::ProposeWith(std::function<absl::StatusOr<uint64_t>()> propose,
                           ProposeCallback callback, bool claim) {
  return Enqueue(
      [this, propose = std::move(propose),
       callback = std::move(callback)](const absl::Status& cancel) mutable {
        if (!cancel.ok()) return callback(cancel);
        absl::StatusOr<uint64_t> index = propose();
        if (!index.ok()) return callback(index.status());
        // Proposals of an earlier term at this index or above were overwritten (this leader's log
        // replaced them): they end now, or the new one could not be registered at its index.
        std::map<uint64_t, Pending> overwritten;
        {
          // Before this task returns, so before the entry can commit and reach the applier.
          absl::MutexLock l(&pending_mu_);
          auto it = pending_.lower_bound(*index);
          while (it != pending_.end()) {
            auto node = pending_.extract(it++);
            overwritten.insert(std::move(node));
          }
          pending_.emplace(*index, Pending{core_->term(), std::move(callback)});
        }
        for (auto& [i, p] : overwritten) p.callback(OverwrittenError(i, p.term));
      },
      claim);
}

void RaftNode::Propose(std::string data, ProposeCallback callback, uint64_t expected_term) {
  ProposeImpl(std::move(data), std::move(callback), expected_term, false);
}

RaftNode::ClaimedRound RaftNode::ProposeAndClaim(std::string data, ProposeCallback callback,
                                                 uint64_t expected_term) {
  return ClaimedRound(
      ProposeImpl(std::move(data), std::move(callback), expected_term, true) ? this : nullptr);
}

bool RaftNode::ProposeImpl(std::string data, ProposeCallback callback, uint64_t expected_term,
                           bool claim) {
  return ProposeWith(
      [this, data = std::move(data), expected_term]() mutable -> absl::StatusOr<uint64_t> {
        if (expected_term != 0 && core_->term() != expected_term) {
          return absl::UnavailableError(StrCat("the term changed from ", expected_term, " to ",
                                               core_->term(), " before the entry was proposed"));
        }
        return core_->Propose(std::move(data));
      },
      std::move(callback), claim);
}

void RaftNode::ClaimedRound::Run() {
  if (RaftNode* node = std::exchange(node_, nullptr)) node->RunReservedRound();
}

absl::StatusOr<uint64_t> RaftNode::ProposeAndWait(std::string data, absl::Duration timeout) {
  auto state = std::make_shared<WaitState>();
  Propose(std::move(data), Notifier(state));
  return WaitFor(state, timeout);
}

void RaftNode::ChangeConfig(const ConfigChange& change, ProposeCallback callback,
                            std::optional<uint64_t> cas_config_index) {
  ProposeWith(
      [this, change, cas_config_index]() -> absl::StatusOr<uint64_t> {
        // On the worker, so no other change can commit between the check and the proposal.
        if (cas_config_index.has_value() && *cas_config_index != core_->committed_config_index()) {
          return absl::FailedPreconditionError(
              StrCat("cas_config_index: the committed configuration's index is ",
                     core_->committed_config_index(), ", not ", *cas_config_index));
        }
        return core_->ProposeConfigChange(change);
      },
      std::move(callback));
}

absl::StatusOr<uint64_t> RaftNode::ChangeConfigAndWait(const ConfigChange& change,
                                                       absl::Duration timeout,
                                                       std::optional<uint64_t> cas_config_index) {
  auto state = std::make_shared<WaitState>();
  ChangeConfig(change, Notifier(state), cas_config_index);
  return WaitFor(state, timeout);
}

absl::Status RaftNode::LeaderStepDown() {
  return RunOnWorker([this] { return core_->StepDown(); });
}

absl::Status RaftNode::TransferLeadership(const PeerId& peer) {
  return RunOnWorker([this, peer] { return core_->TransferLeadership(peer); });
}

void RaftNode::StopAfterFailure(const absl::Status& error) {
  absl::Status first;
  {
    // Another thread's Fail() may still be in on_failed: its error is the one to report, and only
    // once it is set do requests stop queueing (Enqueue, Receive).
    absl::MutexLock l(&mu_);
    auto set = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !error_.ok() || stopping_; };
    mu_.Await(absl::Condition(&set));
    first = error_.ok() ? error : error_;
  }
  // The running apply may still use a proposal's rows (they belong to the waiting RPC): it must
  // end before the proposals fail. Queued batches are dropped: a failed node applies no more.
  apply_token_->Shutdown();
  FailAll(first);
}

void RaftNode::Fail(const absl::Status& error) {
  absl::Status first = error.ok() ? absl::InternalError("failed with an OK status") : error;
  {
    absl::MutexLock l(&mu_);
    if (failing_ || stopping_) return;
    failing_ = true;
  }
  LOG(ERROR) << "raft replica " << options_.peer_id << " of " << options_.group_id
             << " stops: " << first;
  // Before the proposals fail (FailAll, once error_ is set): whoever waits on one sees the owner
  // already in its failed state.
  if (options_.on_failed) options_.on_failed(first);
  absl::MutexLock l(&mu_);
  error_ = first;
  // From now on it leads nothing (the worker stops; see PublishState).
  role_ = RaftCore::Role::kFollower;
  leader_.clear();
}

// ---- Threads --------------------------------------------------------------------------------

void RaftNode::TickerLoop(absl::Duration first) {
  absl::Duration next = first;
  absl::MutexLock l(&mu_);
  // The timed wait is the clock itself, not a wait for something to happen.
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), next)) {
    ++pending_ticks_;
    next = tick_interval_;
  }
}

bool RaftNode::HasInputLocked() const {
  return stopping_ || !error_.ok() || !inbox_.empty() || !tasks_.empty() || pending_ticks_ > 0 ||
         (applied_ > applied_taken_ && awaiting_applied_);
}

bool RaftNode::WorkerMayRunLocked() const {
  if (stopping_) return true;
  return !round_running_ && (HasInputLocked() ||
                             (commit_due_ != absl::InfiniteFuture() && absl::Now() >= commit_due_));
}

bool RaftNode::WorkerWakeLocked() const { return rewait_ || WorkerMayRunLocked(); }

void RaftNode::TakeInputsLocked(RoundInputs* in, bool with_ticks) {
  in->messages.swap(inbox_);
  in->tasks.swap(tasks_);
  if (with_ticks) in->ticks = std::exchange(pending_ticks_, 0);
  in->applied = applied_ > applied_taken_ ? applied_ : 0;
  applied_taken_ = applied_;
}

bool RaftNode::EndRound(RoundInputs* next, bool with_tasks) {
  // Read while this thread still owns the core.
  const bool awaiting_applied = core_->log().WaitingForApplied();
  absl::MutexLock l(&mu_);
  if (next != nullptr && !stopping_ && !failing_ && error_.ok() &&
      (!inbox_.empty() || (with_tasks && !tasks_.empty()))) {
    // Work that arrived during the round (a follower's acknowledgement during the leader's own
    // WAL write): this thread carries on rather than hand it to the worker.
    TakeInputsLocked(next, false);
    return true;
  }
  round_running_ = false;
  // The applier's progress wakes the worker only when committed entries wait for it: otherwise
  // the next wake takes it along (TakeInputsLocked), and each applied batch costs no wakeup.
  awaiting_applied_ = awaiting_applied;
  commit_due_ = commit_propagation_due_;
  // A worker asleep until a later time (or for good) must wait again for this one.
  if (commit_due_ < worker_wait_deadline_) rewait_ = true;
  return false;
}

void RaftNode::WorkerLoop() {
  while (true) {
    RoundInputs in;
    bool sample = false;
    absl::Status failed;
    {
      absl::MutexLock l(&mu_);
      // Wakes for input, or when a held-back commit index is due (commit_due_), once no round
      // runs on another thread (ReceiveBatch).
      while (!WorkerMayRunLocked()) {
        worker_wait_deadline_ = round_running_ ? absl::InfiniteFuture() : commit_due_;
        mu_.AwaitWithDeadline(absl::Condition(this, &RaftNode::WorkerWakeLocked),
                              worker_wait_deadline_);
        rewait_ = false;
      }
      worker_wait_deadline_ = absl::InfinitePast();  // Not waiting.
      if (stopping_) return;
      failed = error_;
      if (failed.ok()) {
        round_running_ = true;
        // A leader with a safe time source samples once per tick, before it takes the queued
        // requests (see SafeTimeSource), so it must let go of mu_ for the call.
        sample = pending_ticks_ > 0 && options_.safe_time_source &&
                 core_->role() == RaftCore::Role::kLeader;
        if (!sample) TakeInputsLocked(&in, true);
      }
    }
    if (!failed.ok()) {  // Fail() from another thread.
      StopAfterFailure(failed);
      return;
    }
    in.sample_term = core_->term();
    if (sample) {
      in.safe_time = options_.safe_time_source();
      absl::MutexLock l(&mu_);
      if (stopping_) {
        round_running_ = false;  // Shutdown waits for it.
        return;
      }
      TakeInputsLocked(&in, true);
    }
    const absl::Status s = RunRound(&in);
    if (!s.ok()) {
      Fail(s);
      EndRound(nullptr, false);  // No other thread claims it any more (failing_).
      StopAfterFailure(s);
      return;
    }
    EndRound(nullptr, false);
  }
}

bool RaftNode::ClaimRoundLocked() {
  if (!FLAGS_raft_rounds_on_callers || !running_ || round_running_ || stopping_ || failing_ ||
      !error_.ok()) {
    return false;
  }
  round_running_ = true;
  return true;
}

void RaftNode::RunClaimedRound(RoundInputs* in, bool with_tasks) {
  // A few rounds at most: the caller has its own work (a transport thread its connection).
  constexpr int kMaxRounds = 4;
  for (int round = 1;; ++round) {
    in->sample_term = core_->term();
    const absl::Status s = RunRound(in);
    if (!s.ok()) {
      Fail(s);  // The worker stops the node (it wakes for error_ once the round is released).
      EndRound(nullptr, false);
      return;
    }
    RoundInputs next;
    if (!EndRound(round < kMaxRounds ? &next : nullptr, with_tasks)) return;
    *in = std::move(next);
  }
}

void RaftNode::ReceiveBatch(std::vector<RaftMessage> messages) {
  RoundInputs in;
  {
    absl::MutexLock l(&mu_);
    if (!running_ || failing_) return;
    for (RaftMessage& m : messages) inbox_.push_back(std::move(m));
    // In the same critical section as the queueing, so that the worker does not wake for them.
    // Not with proposals waiting: their rounds (a WAL write each) are for the threads that
    // propose (ProposeAndClaim), not for the transport's.
    if (!tasks_.empty() || !ClaimRoundLocked()) return;
    TakeInputsLocked(&in, false);
  }
  RunClaimedRound(&in, false);
}

void RaftNode::RunReservedRound() {
  RoundInputs in;
  {
    absl::MutexLock l(&mu_);
    // Stopping or failing meanwhile: the worker (or Shutdown) deals with the queued work.
    if (stopping_ || failing_ || !error_.ok()) {
      round_running_ = false;
      return;
    }
    TakeInputsLocked(&in, false);
  }
  RunClaimedRound(&in, true);
}

absl::Status RaftNode::RunRound(RoundInputs* in) {
  if (in->applied > 0) core_->AppliedTo(in->applied);  // The core may hand out the next batch.
  // Messages before ticks: after a stall, heartbeats already queued must count before the
  // ticks that accumulated meanwhile could start an election.
  const absl::Time now = in->messages.empty() ? absl::InfinitePast() : absl::Now();
  for (RaftMessage& m : in->messages) {
    if (m.type == MessageType::kPeerMissing) {
      auto copy = copies_.find(m.from);
      const bool copying = copy != copies_.end();
      // A peer being copied to is alive and being repaired, however long the copy takes.
      if (copying && copy->second.in_flight &&
          copy->second.failures < kMaxCopyFailuresStillHealthy) {
        heard_[m.from] = now;
      }
      // Not while a failed copy to that peer waits for its retry (the core would ask at once).
      if (!copying || !copy->second.retry_at.has_value()) core_->ReportPeerMissing(m.from);
      continue;
    }
    core_->StepTakingEntries(&m);  // Leaves all but an append's entries.
    MaybeDeliverSafeTime(m);
    heard_[m.from] = now;
  }
  for (Task& task : in->tasks) task(absl::OkStatus());
  if (in->ticks > 0) RetryDueSnapshotCopies();
  // Every proposal queued before the sample is in the log now; the heartbeats of the ticks
  // below carry the new pair.
  RecordSafeTime(in->safe_time, in->sample_term);
  for (int i = 0; i < in->ticks; ++i) core_->Tick();
  ticks_since_gc_ += in->ticks;
  if (absl::Now() >= commit_propagation_due_) core_->PropagateCommit();
  absl::Status s;
  while (s.ok() && core_->HasReady()) s = HandleReady();
  // A commit index no append carried yet is sent on its own after the delay, unless an append
  // (the next batch) carries it first.
  if (!core_->HasUnsentCommit()) {
    commit_propagation_due_ = absl::InfiniteFuture();
  } else if (commit_propagation_due_ == absl::InfiniteFuture()) {
    commit_propagation_due_ =
        absl::Now() + absl::Milliseconds(std::max(FLAGS_raft_commit_propagation_delay_ms, 0));
  }
  BASALT_RETURN_IF_ERROR(s);
  if (ticks_since_gc_ >= options_.log_gc_interval_ticks) MaybeGcLog();
  PublishState();
  return absl::OkStatus();
}

// ---- Safe time ------------------------------------------------------------------------------

// Correctness: the source promised that every proposal it covers was queued (Enqueue) before it
// returned, i.e. before this round swapped the queue, so this round's tasks proposed every one
// of them that the core accepted. They are therefore at or below the last index now. A term
// change in between voids the sample (proposals pinned to the old term were refused).
void RaftNode::RecordSafeTime(std::optional<uint64_t> time, uint64_t sample_term) {
  if (!time.has_value() || *time == 0) return;
  if (core_->role() != RaftCore::Role::kLeader || core_->term() != sample_term) return;
  leader_safe_time_ = SafeTimePair{sample_term, *time, core_->log().LastIndex()};
}

void RaftNode::StampSafeTime(std::vector<RaftMessage>* messages) const {
  if (leader_safe_time_.term == 0) return;
  for (RaftMessage& m : *messages) {
    if ((m.type == MessageType::kAppend || m.type == MessageType::kHeartbeat) &&
        m.term == leader_safe_time_.term) {
      m.safe_time = leader_safe_time_.time;
      m.safe_time_index = leader_safe_time_.index;
    }
  }
}

void RaftNode::MaybeDeliverSafeTime(const RaftMessage& m) {
  if (m.safe_time == 0 || !options_.safe_time_sink) return;
  if (m.type != MessageType::kAppend && m.type != MessageType::kHeartbeat) return;
  // Only from the leader this replica follows now, in its term (the core dropped stale ones).
  if (core_->role() != RaftCore::Role::kFollower || core_->term() != m.term ||
      core_->leader() != m.from) {
    return;
  }
  const SafeTimePair pair{m.term, m.safe_time, m.safe_time_index};
  if (pair == delivered_safe_time_) return;
  delivered_safe_time_ = pair;
  options_.safe_time_sink(pair.term, pair.time, pair.index);
}

// ---- The Ready loop -------------------------------------------------------------------------

absl::Status RaftNode::HandleReady() {
  Ready ready = core_->GetReady();
  // A leader's appends go out before its own write, so that its followers' fsyncs overlap its
  // own (raft_messages.h, TakeMessagesSendableBeforePersist).
  std::vector<RaftMessage> early = TakeMessagesSendableBeforePersist(&ready, cmeta_->hard_state());
  if (!early.empty()) {
    StampSafeTime(&early);
    transport_->SendBatch(options_.group_id, std::move(early));
  }
  BASALT_RETURN_IF_ERROR(Persist(ready));
  // Entries at or below the old last index replaced a suffix (Ready contract), and the new
  // leader's log may end before proposals this replica made as a leader. Only after Persist: were
  // it to fail, the replaced entries would still be in the WAL.
  if (!ready.entries.empty()) FailProposalsBeyondLog();
  StampSafeTime(&ready.messages);
  if (!ready.messages.empty()) transport_->SendBatch(options_.group_id, std::move(ready.messages));
  StartSnapshotCopies(ready.snapshots_needed);
  BASALT_RETURN_IF_ERROR(HandOverCommitted(std::move(ready.committed_entries)));
  core_->Advance(ready);
  return absl::OkStatus();
}

// Keeps the invariant at pending_: the applier resolves a proposal only when the applied index
// reaches it, and nothing reaches an index beyond the log's end unless someone writes that far
// (a client waiting for this very proposal may be the only writer: it would wait forever).
void RaftNode::FailProposalsBeyondLog() {
  const uint64_t last = core_->log().LastIndex();
  std::vector<std::pair<uint64_t, Pending>> dropped;
  {
    absl::MutexLock l(&pending_mu_);
    while (!pending_.empty() && pending_.rbegin()->first > last) {
      auto node = pending_.extract(std::prev(pending_.end()));
      dropped.emplace_back(node.key(), std::move(node.mapped()));
    }
  }
  // In index order, outside the lock (a callback may propose again).
  for (auto it = dropped.rbegin(); it != dropped.rend(); ++it) {
    it->second.callback(DroppedInDoubtError(it->first, it->second.term, last));
  }
}

absl::Status RaftNode::Persist(const Ready& ready) {
  if (!ready.entries.empty()) {
    // Blocks until the appender synced the group holding these entries (group commit: requests
    // queued meanwhile go into the next Ready together).
    BASALT_RETURN_IF_ERROR_PREPEND(log_->Append(ready.entries), "appending to the log");
  }
  if (ready.hard_state) {
    const HardState& old = cmeta_->hard_state();
    // Term and vote must be durable before anything depending on them is sent; the commit index
    // alone is volatile in Raft and rides along with the next flush.
    const bool must_flush =
        ready.hard_state->term != old.term || ready.hard_state->vote != old.vote;
    cmeta_->set_hard_state(*ready.hard_state);
    if (must_flush) {
      BASALT_RETURN_IF_ERROR_PREPEND(cmeta_->Flush(), "flushing consensus metadata");
    }
  }
  return absl::OkStatus();
}

void RaftNode::StartSnapshotCopies(const std::vector<PeerId>& peers) {
  for (const PeerId& peer : peers) {
    copies_[peer].in_flight = true;
    state_machine_->StartSnapshotCopy(peer, [this, peer](const absl::Status& s, uint64_t index) {
      Enqueue([this, peer, s, index](const absl::Status& cancel) {
        if (!cancel.ok()) return;
        if (s.ok()) {
          if (auto it = copies_.find(peer); it != copies_.end() && it->second.failures > 0) {
            // Closes the run of warnings, with the failures the last one did not report.
            LOG(INFO) << "raft replica " << options_.peer_id << " of " << options_.group_id
                      << ": tablet copy to " << peer << " succeeded after " << it->second.failures
                      << " failed attempts";
          }
          copies_.erase(peer);
          core_->ReportSnapshotDone(peer, index);
        } else {
          DelaySnapshotRetry(peer, s);
        }
      });
    });
  }
}

// The core asks for a new copy as soon as it hears of a failure, so the failure is held back:
// the peer stays in the snapshot state (no appends) until the delay passes. Delays double per
// failure to the same peer, with +-25% jitter, up to the cap. The first failure is logged at
// once, later ones at most once a minute with their count (LogThrottle), whatever the cap.
void RaftNode::DelaySnapshotRetry(const PeerId& peer, const absl::Status& s) {
  PeerCopy& copy = copies_[peer];
  copy.in_flight = false;
  ++copy.failures;
  absl::Duration& backoff = copy.backoff;
  const absl::Duration base = absl::Milliseconds(std::max(FLAGS_tablet_copy_retry_base_ms, 1));
  const absl::Duration cap = std::max(absl::Milliseconds(FLAGS_tablet_copy_retry_max_ms), base);
  backoff = backoff == absl::ZeroDuration() ? base : std::min(backoff * 2, cap);
  const double jitter = 0.75 + 0.5 * (static_cast<double>(rng_.Next64() % 1000) / 1000.0);
  const absl::Duration delay = backoff * jitter;
  const absl::Time now = absl::Now();
  if (const int64_t n = copy.failure_log.Record(now); n > 0) {
    LOG(WARNING) << "raft replica " << options_.peer_id << " of " << options_.group_id
                 << ": tablet copy to " << peer << " failed" << LogThrottle::Times(n)
                 << " (retry in "
                 << absl::FormatDuration(absl::Trunc(delay, absl::Milliseconds(100))) << "): " << s;
  }
  copy.retry_at = now + delay;
}

void RaftNode::RetryDueSnapshotCopies() {
  const absl::Time now = absl::Now();
  for (auto& [peer, copy] : copies_) {
    if (!copy.retry_at.has_value() || *copy.retry_at > now) continue;
    copy.retry_at.reset();
    core_->ReportSnapshotFailed(peer);  // Back to probing; a new copy if still needed.
  }
}

absl::Status RaftNode::HandOverCommitted(std::vector<LogEntry> entries) {
  if (entries.empty()) return absl::OkStatus();
  // A committed configuration is persisted at commit, before its entry is applied: the metadata
  // only tells a restart where the log's configurations start, and the entry is committed.
  for (const LogEntry& e : entries) {
    if (e.type != EntryType::kConfigChange) continue;
    BASALT_ASSIGN_OR_RETURN(RaftConfig config, DecodeConfig(e.data));
    cmeta_->set_committed_config(config, e.index);
    BASALT_RETURN_IF_ERROR_PREPEND(cmeta_->Flush(), "persisting a committed configuration");
  }
  apply_token_->Submit([this, entries = std::move(entries)] { ApplyCommitted(entries); });
  return absl::OkStatus();
}

void RaftNode::ApplyCommitted(const std::vector<LogEntry>& entries) {
  if (!health().ok()) return;  // A failed node applies nothing more.
  uint64_t applied = 0;
  std::vector<std::pair<uint64_t, Pending>> done;  // Reused: one allocation per batch at most.
  for (const LogEntry& e : entries) {
    absl::Status s = state_machine_->Apply(e);
    if (!s.ok()) {
      // The entry is not applied here: the proposals from it on fail with the node (FailAll).
      Fail(absl::Status(s.code(),
                        StrCat("applying entry ", e.index, " (term ", e.term, "): ", s.message())));
      break;
    }
    applied = e.index;
    // Every index is applied exactly once, in order: pending proposals up to e.index resolve now
    // (outside the lock: a callback may propose again).
    done.clear();
    {
      absl::MutexLock l(&pending_mu_);
      while (!pending_.empty() && pending_.begin()->first <= e.index) {
        auto node = pending_.extract(pending_.begin());
        done.emplace_back(node.key(), std::move(node.mapped()));
      }
    }
    for (auto& [index, p] : done) {
      if (index == e.index && p.term == e.term) {
        p.callback(e.index);
      } else {
        p.callback(OverwrittenError(index, p.term));
      }
    }
  }
  if (applied == 0) return;
  absl::MutexLock l(&mu_);
  applied_ = applied;  // The worker tells the core (woken if it waits for this: HasInputLocked).
}

// Deletes log segments nobody needs: everything the state machine holds durably (and no copy
// session anchors), and, on a leader, what every peer already has, unless keeping it for lagging
// peers would exceed --log_max_segments_to_retain segments: such peers get a tablet copy instead.
// A follower retains only for itself; if it becomes leader, peers behind its log need a tablet
// copy (StateMachine::StartSnapshotCopy).
void RaftNode::MaybeGcLog() {
  ticks_since_gc_ = 0;
  const uint64_t for_itself = std::min({state_machine_->DurableIndex(), core_->log().applied(),
                                        state_machine_->LogAnchorIndex()}) +
                              1;
  uint64_t retain = for_itself;
  if (core_->role() == RaftCore::Role::kLeader) {
    // Over the cap, only peers heard from lately (catching up, not down) still hold the log.
    const bool over_cap = log_->SegmentSeqs().size() >
                          static_cast<size_t>(std::max(FLAGS_log_max_segments_to_retain, 1));
    const absl::Time recent = absl::Now() - 3 * options_.raft.election_ticks * tick_interval_;
    const RaftConfig& config = core_->config();
    for (const auto* ids : {&config.voters, &config.learners}) {
      for (const PeerId& peer : *ids) {
        // A peer waiting for a tablet copy needs nothing from here (the copy's anchor keeps
        // what it will need); counting its match would pin the whole log.
        const Progress* pr = core_->progress(peer);
        if (pr == nullptr || pr->state() == Progress::State::kSnapshot) continue;
        auto heard = heard_.find(peer);
        if (over_cap && (heard == heard_.end() || heard->second < recent)) continue;
        retain = std::min(retain, pr->match() + 1);
      }
    }
  }
  if (retain <= log_->FirstIndex()) return;
  absl::StatusOr<int> deleted = log_->GC(retain);
  LOG_IF(WARNING, !deleted.ok()) << "log GC below " << retain << ": " << deleted.status();
}

void RaftNode::PublishState() {
  bool new_leader = false;
  {
    absl::MutexLock l(&mu_);
    new_leader = !core_->leader().empty() && core_->leader() != leader_;
  }
  // Outside mu_: /metrics callbacks read this node's state under the registry's lock.
  if (new_leader) {
    MetricRegistry::Global()
        ->GetCounter("basalt_raft_leader_changes_total",
                     "Times a Raft replica learned of a new leader.",
                     {{"tablet_id", options_.group_id}})
        ->Increment();
  }
  if (core_->role() == RaftCore::Role::kLeader) {
    // A new leader has not heard from anyone yet, and a member just added has not spoken yet:
    // each gets a full period from now.
    const bool new_leader = role_before_publish_ != RaftCore::Role::kLeader;
    const absl::Time now = absl::Now();
    if (new_leader) {  // Copies of an earlier term start afresh.
      for (auto& [peer, copy] : copies_) {
        copy.failures = 0;
        copy.backoff = absl::ZeroDuration();
      }
    }
    for (const auto* ids : {&core_->config().voters, &core_->config().learners}) {
      for (const PeerId& peer : *ids) {
        if (new_leader || !heard_.contains(peer)) heard_[peer] = now;
      }
    }
    // A member removed and added back later starts afresh.
    std::erase_if(heard_, [&](const auto& e) { return !IsMember(core_->config(), e.first); });
  }
  role_before_publish_ = core_->role();
  absl::MutexLock l(&mu_);
  peer_last_heard_ = heard_;
  role_ = core_->role();
  leader_ = core_->leader();
  term_ = core_->term();
  commit_ = core_->log().committed();
  config_ = core_->config();
  committed_config_ = core_->committed_config();
  committed_config_index_ = core_->committed_config_index();
  config_index_ = core_->config_index();
  last_index_ = core_->log().LastIndex();
  if (!error_.ok()) {  // Fail() raced with this round: a failed node leads nothing.
    role_ = RaftCore::Role::kFollower;
    leader_.clear();
  }
}

void RaftNode::FailAll(const absl::Status& status) {
  std::deque<Task> tasks;
  {
    absl::MutexLock l(&mu_);
    tasks.swap(tasks_);
    inbox_.clear();
  }
  for (Task& task : tasks) task(status);
  std::map<uint64_t, Pending> pending;
  {
    absl::MutexLock l(&pending_mu_);
    pending.swap(pending_);
  }
  for (auto& [index, p] : pending) p.callback(status);
}

// ---- Observers ------------------------------------------------------------------------------

RaftCore::Role RaftNode::role() const {
  absl::MutexLock l(&mu_);
  return role_;
}

PeerId RaftNode::leader_id() const {
  absl::MutexLock l(&mu_);
  return leader_;
}

uint64_t RaftNode::term() const {
  absl::MutexLock l(&mu_);
  return term_;
}

uint64_t RaftNode::commit_index() const {
  absl::MutexLock l(&mu_);
  return commit_;
}

uint64_t RaftNode::applied_index() const {
  absl::MutexLock l(&mu_);
  return applied_;
}

RaftConfig RaftNode::config() const {
  absl::MutexLock l(&mu_);
  return config_;
}

std::pair<RaftConfig, uint64_t> RaftNode::committed_config() const {
  absl::MutexLock l(&mu_);
  return {committed_config_, committed_config_index_};
}

std::map<PeerId, absl::Time> RaftNode::peer_last_heard() const {
  absl::MutexLock l(&mu_);
  return peer_last_heard_;
}

uint64_t RaftNode::config_index() const {
  absl::MutexLock l(&mu_);
  return config_index_;
}

uint64_t RaftNode::last_index() const {
  absl::MutexLock l(&mu_);
  return last_index_;
}

absl::Status RaftNode::health() const {
  absl::MutexLock l(&mu_);
  return error_;
}

}  // namespace basalt
