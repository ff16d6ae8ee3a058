#include "tserver/tablet_replica.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/cleanup/cleanup.h"
#include "absl/time/clock.h"

#include "cfile/block_manager.h"
#include "common/coding.h"
#include "common/metrics.h"
#include "common/random.h"
#include "common/row_operations.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/consensus_metadata.h"
#include "consensus/raft_config.h"
#include "proto/tablet_replica.pb.h"
#include "proto/tserver.pb.h"
#include "rpc/rpc_status.h"
#include "tablet/maintenance_manager.h"
#include "tablet/memory_budget.h"
#include "tablet/tablet_maintenance.h"
#include "tablet/tablet_metadata.h"
#include "tserver/disk_space_monitor.h"
#include "tserver/replica_tombstone.h"
#include "tserver/replicate_entry_codec.h"
#include "tserver/result_tracker.h"
#include "tserver/tablet_copy_trigger.h"
#include "tserver/tserver_errors.h"

DEFINE_int32(tablet_alter_inject_delay_ms, 0,
             "Test only: a schema change waits this long on every replica before it flushes the "
             "tablet (a stand-in for flushing a very large MemRowSet).");

namespace basalt {
namespace {

Counter* const kRowsWritten = MetricRegistry::Global()->GetCounter(
    "basalt_tserver_rows_written_total",
    "Row operations applied by writes this tablet server led (failed rows excluded).");

// Whole-entry outcomes every replica reaches the same way from the same entry: rows that do not
// decode (INVALID_ARGUMENT), a schema version mismatch (FAILED_PRECONDITION), an op the tablet
// refuses by rule (INVALID_ARGUMENT). Per-row outcomes are not statuses (RowOutcome). Anything
// else is an error of the storage (Tablet::ApplyRowOperations's contract; an I/O error, a flush
// before a schema change that cannot finish): this replica may differ from its peers.
// Client ids are remembered for an hour (--remember_clients_ttl_ms): bounded in size. Basalt's
// clients use 32 hex digits.
constexpr size_t kMaxClientIdBytes = 128;

// How often a write waiting for its entry checks that this replica still leads (a deposed leader
// answers a write with a request id at once: ProposeAndWait).
constexpr absl::Duration kLeadershipCheckInterval = absl::Milliseconds(100);

// ProposeAndWait's refusal to propose a request an applied entry answered meanwhile.
absl::Status AnsweredMeanwhile() {
  return absl::AbortedError("the request was answered by an entry applied meanwhile");
}

bool IsDeterministicApplyError(const absl::Status& s) {
  return s.ok() || absl::IsInvalidArgument(s) || absl::IsFailedPrecondition(s);
}

bool IsNotLeaderProposalError(const absl::Status& s) {
  return absl::IsAborted(s) || absl::IsUnavailable(s);
}

}  // namespace

TabletReplica::TabletReplica(const TabletReplicaContext& ctx, TabletReplicaMeta meta,
                             std::unique_ptr<Tablet> tablet)
    : ctx_(ctx),
      tablet_id_(meta.tablet_id),
      partition_(meta.partition),
      partition_schema_(meta.partition_schema),
      data_dirs_(meta.data_dirs),
      tablet_(std::move(tablet)),
      copy_trigger_(
          std::make_unique<TabletCopyTrigger>(ctx.server_uuid, tablet_id_, ctx.address_book)),
      state_(tablet_id_),
      results_(std::make_unique<ResultTracker>(ResultTracker::Options::FromFlags())),
      meta_(std::move(meta)),
      schema_(std::make_shared<const Schema>(tablet_->schema())) {
  // The answers of entries a restart does not replay (exactly-once writes). Lost ones only make
  // retries of those requests apply again: a damaged file does not keep the replica from opening.
  const std::string answers = JoinPath(ReplicaFiles::TabletDir(ctx_, tablet_id_), kAnswersFileName);
  absl::Status loaded = results_->Load(ctx_.env, answers);
  LOG_IF(WARNING, !loaded.ok()) << "tablet " << tablet_id_
                                << ": remembered answers not loaded (retries of the requests "
                                << "they answered would be applied again): " << loaded;
  tablet_->SetBeforeSuperBlockWrite([this, answers](int64_t durable_op_index) {
    const uint64_t durable = static_cast<uint64_t>(std::max<int64_t>(0, durable_op_index));
    // The tablet counts an op durable once it applied it, a moment before ApplyWrite records its
    // answer (then last_applied_index_ passes it): wait for that moment, or the saved answers
    // could miss an op no restart replays. The applier never waits for this lock in between.
    auto recorded = [this, durable] { return last_applied_index_.load() >= durable; };
    const absl::Time until = absl::Now() + absl::Seconds(10);
    while (!recorded() && absl::Now() < until) {
      // Woken by Apply while running; a bootstrapping replica is polled briefly.
      if (!state_.Await(recorded, std::min(until, absl::Now() + absl::Milliseconds(10)))) {
        absl::SleepFor(absl::Microseconds(200));
      }
    }
    LOG_IF(WARNING, !recorded()) << "tablet " << tablet_id_ << ": saving remembered answers "
                                 << "before the answer of op " << durable << " was recorded";
    return results_->Save(ctx_.env, answers, durable);
  });
}

TabletReplica::~TabletReplica() { Shutdown(); }

std::string TabletReplica::AnswersImage(uint64_t max_log_index) const {
  return results_->Image(max_log_index);
}

absl::StatusOr<std::shared_ptr<TabletReplica>> TabletReplica::Create(
    const TabletReplicaContext& ctx, TabletReplicaMeta meta, const Schema& schema,
    const RaftConfig& config, const std::map<PeerId, std::string>& addresses) {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Tablet> tablet,
                          ReplicaFiles::Create(ctx, meta, schema, config, addresses));
  return std::shared_ptr<TabletReplica>(new TabletReplica(ctx, std::move(meta), std::move(tablet)));
}

absl::StatusOr<std::shared_ptr<TabletReplica>> TabletReplica::Open(const TabletReplicaContext& ctx,
                                                                   const std::string& tablet_id) {
  BASALT_ASSIGN_OR_RETURN(ReplicaFiles::Opened opened, ReplicaFiles::Open(ctx, tablet_id));
  return std::shared_ptr<TabletReplica>(
      new TabletReplica(ctx, std::move(opened.meta), std::move(opened.tablet)));
}

absl::Status TabletReplica::Start(const PeerId& first_campaigner) {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  RaftNodeOptions o;
  o.group_id = tablet_id_;
  o.peer_id = ctx_.server_uuid;
  o.wal_dir = ReplicaFiles::WalDir(ctx_, tablet_id_);
  o.server_log = ctx_.server_log;
  o.metadata_path = ReplicaFiles::CmetaPath(ctx_, tablet_id_);
  o.tick_interval_ms = ctx_.raft_tick_interval_ms;
  if (ctx_.raft_election_ticks > 0) o.raft.election_ticks = ctx_.raft_election_ticks;
  o.raft.fast_first_election = true;  // A new table is writable ~0.2 s after its creation.
  o.raft.fast_first_election_peer = first_campaigner;
  o.safe_time_source = [this] { return LeaderSafeTime(); };
  o.safe_time_sink = [this](uint64_t term, uint64_t time, uint64_t index) {
    OnLeaderSafeTime(term, time, index);
  };
  o.apply_pool = ctx_.apply_pool;
  o.on_failed = [this](const absl::Status& error) { OnRaftFailed(error); };
  auto start = [&]() -> absl::StatusOr<std::unique_ptr<RaftNode>> {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ConsensusMetadata> cmeta,
                            ConsensusMetadata::Load(ctx_.env, o.metadata_path));
    o.initial_config = cmeta->contents().committed_config;
    for (const auto& [peer, address] : cmeta->contents().peer_addresses) {
      absl::StatusOr<HostPort> hp = ParseHostPort(address, 0);
      if (hp.ok() && ctx_.address_book != nullptr) ctx_.address_book->Set(peer, *hp);
    }
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RaftNode> node,
                            RaftNode::Open(ctx_.env, o, ctx_.transport, this));
    replay_until_index_.store(node->log().LastIndex());
    absl::StatusOr<uint64_t> last_term = node->log().Term(node->log().LastIndex());
    replay_until_term_.store(last_term.ok() ? *last_term : 0);
    return node;
  };
  absl::StatusOr<std::unique_ptr<RaftNode>> node = start();
  if (!node.ok()) {
    SetState(ReplicaState::kFailed, node.status());
    return node.status();
  }
  RaftNode* n = node->get();
  // Entries up to the durable index, and those the log no longer has (they are reflected in the
  // superblock: log GC and tablet copy never pass it), are not applied again: they count as
  // applied (for safe time and for what the replica reports).
  const uint64_t applied = std::max(DurableIndex(), n->log().FirstIndex() - 1);
  const bool nothing_to_replay = applied >= replay_until_index_.load();
  safe_time_.OnApplied(applied, 0);
  last_applied_index_.store(applied);
  {
    absl::MutexLock l(&mu_);
    raft_ = std::move(*node);
  }
  if (nothing_to_replay) SetState(ReplicaState::kRunning);
  absl::Status s = n->Start();
  if (!s.ok()) {
    SetState(ReplicaState::kFailed, s);
    return s;
  }
  if (ctx_.maintenance_manager != nullptr) {
    TabletMaintenanceHooks hooks;
    hooks.has_room = [this] {
      return ctx_.disk_space == nullptr || ctx_.disk_space->CheckRoomForData(data_dirs_).ok();
    };
    hooks.on_storage_error = [this](const absl::Status& error) { Fail(error); };
    maintenance_ =
        std::make_unique<TabletMaintenance>(tablet_.get(), Clock::Default(), std::move(hooks));
    maintenance_->RegisterWith(ctx_.maintenance_manager);
  }
  return absl::OkStatus();
}

void TabletReplica::Shutdown() {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  RaftNode* node = nullptr;
  state_.Set(ReplicaState::kStopping);  // Unless failed.
  {
    absl::MutexLock l(&mu_);
    node = raft_.get();
  }
  if (node != nullptr) node->Shutdown();
  copy_trigger_->Shutdown();
  if (maintenance_ != nullptr) {
    maintenance_->Unregister();
    maintenance_.reset();
  }
}

void TabletReplica::Fail(const absl::Status& why) {
  const absl::Status error = why.ok() ? absl::InternalError("failed with an OK status") : why;
  RaftNode* node = raft();
  paused_for_space_.store(false);  // Failed for good: never reopened.
  tablet_->Fail(error);            // Nothing more becomes durable.
  SetState(ReplicaState::kFailed, error);
  if (node != nullptr) node->Fail(error);  // No more votes, leading or applies.
}

void TabletReplica::OnRaftFailed(const absl::Status& error) {
  if (absl::IsResourceExhausted(error) && state() != ReplicaState::kFailed) {
    // A full disk is not a fault of this replica: everything it applied is in its WAL, so it stops
    // (it cannot append) and is opened again from disk once there is room.
    LOG(WARNING) << "tablet " << tablet_id_ << " pauses until its disk has room: " << error;
    paused_for_space_.store(true);
    if (state_.Set(ReplicaState::kStopping) && ctx_.on_status_change) ctx_.on_status_change();
    return;
  }
  tablet_->Fail(error);
  SetState(ReplicaState::kFailed, error);
}

absl::Status TabletReplica::DeleteData() {
  // Tombstoning first makes the deletion crash-safe: a crash halfway leaves a tombstone.
  const std::string dir = ReplicaFiles::TabletDir(ctx_, tablet_id_);
  BASALT_RETURN_IF_ERROR(
      TombstoneReplica(ctx_.env, ctx_.block_manager, dir, ReplicaFiles::Wal(ctx_, tablet_id_)));
  return ctx_.env->DeleteDirRecursively(dir);
}

// ---- State ----------------------------------------------------------------------------------

void TabletReplica::SetState(ReplicaState state, absl::Status error) {
  if (!state_.Set(state, error)) return;
  if (state == ReplicaState::kFailed) {
    LOG(ERROR) << "tablet " << tablet_id_ << " failed; it serves nothing more: " << error;
  }
  if (ctx_.on_status_change) ctx_.on_status_change();
  if (state == ReplicaState::kFailed && BlockManager::IsDiskFailure(error) && ctx_.on_disk_error) {
    ctx_.on_disk_error(error);
  }
}

ReplicaState TabletReplica::state() const { return state_.state(); }

absl::Status TabletReplica::CheckRunning() const { return state_.CheckRunning(); }

bool TabletReplica::WaitUntilRunning(absl::Duration timeout) const {
  return state_.WaitUntilRunning(timeout);
}

TabletReplicaMeta TabletReplica::meta() const {
  absl::MutexLock l(&mu_);
  return meta_;
}

std::shared_ptr<const Schema> TabletReplica::schema() const {
  absl::MutexLock l(&mu_);
  return schema_;
}

RaftNode* TabletReplica::raft() const {
  absl::MutexLock l(&mu_);
  return raft_.get();
}

ReplicaStatus TabletReplica::GetStatus() const {
  ReplicaStatus st;
  RaftNode* node = nullptr;
  {
    absl::MutexLock l(&mu_);
    st.tablet_id = tablet_id_;
    st.table_id = meta_.table_id;
    st.table_name = meta_.table_name;
    st.partition = meta_.partition;
    st.schema_version = schema_->version();
    node = raft_.get();
  }
  if (node != nullptr) {
    st.role = node->role();
    st.term = node->term();
    st.leader_uuid = node->leader_id();
    st.config = node->config();
    std::tie(st.committed_config, st.committed_config_index) = node->committed_config();
    st.config_index = std::max(node->config_index(), member_since_config_index_.load());
    if (st.role == RaftCore::Role::kLeader) {
      const absl::Time now = absl::Now();
      const std::map<PeerId, absl::Time> heard = node->peer_last_heard();
      for (const auto* ids : {&st.config.voters, &st.config.learners}) {
        for (const PeerId& peer : *ids) {
          if (peer == ctx_.server_uuid) continue;
          auto it = heard.find(peer);
          st.peer_failed[peer] = it == heard.end() || now - it->second > ctx_.follower_failed_after;
        }
      }
    }
  }
  st.state = state_.state();
  st.error = state_.error();
  st.last_applied_index = last_applied_index_.load();
  const TabletStats stats = tablet_->GetStats();
  st.on_disk_bytes = stats.on_disk_bytes;
  st.memory_bytes = stats.mrs_bytes + stats.dms_bytes;
  return st;
}

// ---- Leadership -----------------------------------------------------------------------------

absl::Status TabletReplica::NotLeader(std::string_view what) const {
  RaftNode* node = raft();
  std::string leader = node != nullptr ? node->leader_id() : "";
  if (leader == ctx_.server_uuid) leader.clear();
  std::optional<HostPort> address;
  if (!leader.empty() && ctx_.address_book != nullptr) address = ctx_.address_book->Get(leader);
  return NotTheLeaderError(StrCat(what, " (tablet ", tablet_id_, ")"), leader, address);
}

absl::Status TabletReplica::CheckLeaderReady(absl::Time deadline) {
  RaftNode* node = raft();
  if (node == nullptr || node->role() != RaftCore::Role::kLeader) {
    return NotLeader("this replica is not the leader");
  }
  const absl::Time until = std::min(deadline, absl::Now() + ctx_.leader_ready_wait);
  while (true) {
    BASALT_RETURN_IF_ERROR(CheckRunning());
    if (node->role() != RaftCore::Role::kLeader) {
      return NotLeader("this replica is not the leader");
    }
    const uint64_t term = node->term();
    if (last_applied_term_.load() == term) return absl::OkStatus();
    if (absl::Now() >= until) break;
    // Woken by Apply; the bounded wait re-reads the node's term, which Apply does not signal.
    state_.Await([this, term] { return last_applied_term_.load() == term; },
                 std::min(until, absl::Now() + absl::Milliseconds(10)));
  }
  return TabletNotRunningError(
      StrCat("tablet ", tablet_id_, ": the new leader has not applied an entry of its term yet"));
}

absl::Status TabletReplica::CheckRoomForWrites() const {
  return ctx_.disk_space == nullptr ? absl::OkStatus()
                                    : ctx_.disk_space->CheckRoomForWrites(data_dirs_);
}

absl::Status TabletReplica::StepDown(const std::string& new_leader) {
  BASALT_RETURN_IF_ERROR(CheckRunning());
  RaftNode* node = raft();
  if (node->role() != RaftCore::Role::kLeader) return NotLeader("not the leader");
  absl::Status s =
      new_leader.empty() ? node->LeaderStepDown() : node->TransferLeadership(new_leader);
  if (absl::IsUnavailable(s)) return NotLeader(std::string(s.message()));
  return s;
}

// ---- Proposals ----------------------------------------------------------------------------

std::unique_ptr<WriteScratch> TabletReplica::TakeScratch() {
  {
    absl::MutexLock l(&scratch_mu_);
    if (!free_scratch_.empty()) {
      std::unique_ptr<WriteScratch> s = std::move(free_scratch_.back());
      free_scratch_.pop_back();
      return s;
    }
  }
  return std::make_unique<WriteScratch>();
}

void TabletReplica::ReturnScratch(std::unique_ptr<WriteScratch> scratch) {
  // Enough for the writes one tablet has in flight at a time; more are freed.
  constexpr size_t kMaxFreeScratch = 8;
  if (scratch == nullptr) return;
  scratch->arena.Reset();
  scratch->ops.clear();
  scratch->results.clear();
  absl::MutexLock l(&scratch_mu_);
  if (free_scratch_.size() < kMaxFreeScratch) free_scratch_.push_back(std::move(scratch));
}

absl::Status TabletReplica::ProposeAndWait(std::string body, HybridTime propagated,
                                           const std::shared_ptr<PendingOp>& op,
                                           absl::Time deadline) {
  if (propagated.is_valid() && propagated != HybridTime::kMin) {
    BASALT_RETURN_IF_ERROR(FieldError("propagated_timestamp", ctx_.clock->Update(propagated)));
  }
  RaftNode* node = raft();
  uint64_t term = 0;
  // This thread would only wait: it writes the entry itself if the worker is idle, outside
  // propose_mu_, so that proposals made meanwhile queue for the next round (one WAL write).
  RaftNode::ClaimedRound round;
  {
    absl::MutexLock pl(&propose_mu_);
    // Re-checked under the lock and pinned with the term: the entry lands in a term whose earlier
    // entries this replica has all applied, so last_applied_ts_ bounds every timestamp before it
    // in the log.
    term = node->term();
    if (node->role() != RaftCore::Role::kLeader) return NotLeader("this replica is not the leader");
    // Again here, after the memory-pressure delay and the wait for this lock: a copy past its
    // deadline must not reach the log (see WriteWithScratch).
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError("the request's deadline passed before it was proposed");
    }
    if (last_applied_term_.load() != term) {
      return TabletNotRunningError(
          StrCat("tablet ", tablet_id_, ": the new leader has not applied an entry of its term"));
    }
    // Every earlier entry is applied (above): if one of them answered this request (another
    // attempt, through a leader that led meanwhile), it must not be applied again.
    if (op->request_id != nullptr && !results_->InProgress(*op->request_id)) {
      return AnsweredMeanwhile();
    }
    op->ts = ctx_.clock->Now();
    const uint64_t floor = std::max(last_proposed_ts_, last_applied_ts_.load());
    if (op->ts.value() <= floor) op->ts = HybridTime(floor).Next();
    last_proposed_ts_ = op->ts.value();
    AppendEntryTimestamp(op->ts, &body);
    proposals_.Add(op);
    op->proposed = true;
    round = node->ProposeAndClaim(
        std::move(body),
        [this, op](absl::StatusOr<uint64_t> index) { OnProposalDone(op, std::move(index)); }, term);
  }
  round.Run();
  auto done = [&op]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(op->mu) { return op->done; };
  for (;;) {
    {
      absl::MutexLock l(&op->mu);
      if (op->mu.AwaitWithDeadline(absl::Condition(&done),
                                   std::min(deadline, absl::Now() + kLeadershipCheckInterval))) {
        break;
      }
    }
    // Checked without op->mu held (the node takes its own lock; its callbacks, which take
    // op->mu, run outside that lock, so either order would be safe, but none is needed).
    const bool deposed = node->role() != RaftCore::Role::kLeader || node->term() != term;
    absl::Status gave_up;
    if (absl::Now() >= deadline) {
      gave_up = absl::DeadlineExceededError(
          "timed out waiting for the write to replicate (it may still be applied)");
    } else if (deposed && op->request_id != nullptr) {
      // Leadership lost with the entry in flight (a check-quorum step-down, a higher term): the
      // entry commits only through a leader that holds it, if ever, which may take long. A
      // request with an id is answered now, in doubt; its retry at the new leader is answered
      // or applied there, never both: that leader applies it only after committing an entry of
      // its own term, after which a log without the retry's first entry cannot commit it.
      // (Without an id the client could not tell a retry from a new write: it waits as before.)
      gave_up = NotLeader("this replica lost leadership with the write in flight");
    } else {
      continue;
    }
    // Not taken by Apply yet: the request (which the decoded rows point into) may go away.
    if (proposals_.Abandon(op->seq)) return InDoubt(gave_up);
    absl::MutexLock l(&op->mu);
    op->mu.Await(absl::Condition(&done));  // Apply holds it: the callback follows at once.
    break;
  }
  absl::MutexLock l(&op->mu);
  if (!op->propose_status.ok()) {
    // A node that stopped on an error failed the replica: the client retries elsewhere. A replica
    // paused by a full disk leads no more either (the entry may still commit elsewhere).
    absl::Status s = op->propose_status;
    if (state() == ReplicaState::kFailed) {
      s = CheckRunning();
    } else if (paused_for_space()) {
      s = NotLeader("this replica paused: its disk is full");
    } else if (IsNotLeaderProposalError(op->propose_status)) {
      s = NotLeader(std::string(op->propose_status.message()));
    }
    // ABORTED: a new leader's entry took its index here. Anything else: it may commit elsewhere.
    return absl::IsAborted(op->propose_status) ? s : InDoubt(s);
  }
  if (!op->applied) return absl::InternalError("the proposed entry was applied without its op");
  return op->apply_status;
}

void TabletReplica::OnProposalDone(const std::shared_ptr<PendingOp>& op,
                                   absl::StatusOr<uint64_t> index) {
  proposals_.Done(*op);
  // Not applied here yet, and not through this op: the entry was overwritten, dropped from this
  // replica's log (it may still commit through another replica: in doubt), or this node stopped.
  // Should it commit, whoever applies it records its answer from the entry, and a leader answers
  // retries only after applying every earlier entry (CheckLeaderReady), this replica included.
  if (!index.ok() && op->request_id != nullptr) results_->Abandon(*op->request_id);
  absl::MutexLock l(&op->mu);
  op->propose_status = index.status();
  op->done = true;
}

// ---- Write ----------------------------------------------------------------------------------

namespace {

void AddRowError(int index, const absl::Status& s, pb::WriteResponsePB* response) {
  auto* e = response->add_per_row_errors();
  e->set_row_index(index);
  StatusToPB(s, e->mutable_error());
}

// Removes the ops whose partition key is outside `partition` (FillWriteResponse reports them),
// re-encoding the others into *filtered and recording in *row_index the request row of each
// remaining op. Returns false (nothing changed) when every row is inside, always for an
// unbounded partition.
bool DropRowsOutsidePartition(const Partition& partition, const PartitionSchema& partition_schema,
                              std::vector<DecodedRowOperation>* ops, std::vector<int>* row_index,
                              pb::RowOperationsPB* filtered) {
  if (partition.partition_key_start().empty() && partition.partition_key_end().empty()) {
    return false;
  }
  std::vector<bool> inside(ops->size());
  bool all_inside = true;
  for (size_t i = 0; i < ops->size(); ++i) {
    const DecodedRowOperation& op = (*ops)[i];
    inside[i] = partition.Contains(partition_schema.PartitionKey(*op.schema, op.row_data));
    all_inside &= inside[i];
  }
  if (all_inside) return false;
  std::vector<DecodedRowOperation> kept;
  RowOperationsEncoder encoder(filtered);
  for (size_t i = 0; i < ops->size(); ++i) {
    if (!inside[i]) continue;
    row_index->push_back(static_cast<int>(i));
    kept.push_back((*ops)[i]);
    encoder.Add((*ops)[i].type, (*ops)[i]);
  }
  *ops = std::move(kept);
  return true;
}

// The response to a write of `num_rows` request rows whose applied rows got `results`: applied
// row i is request row request_rows[i] (row i when `request_rows` is empty and every row was
// applied); the request rows not among them were outside the partition. The same inputs give
// the same response on every replica (a retry's answer: ResultTracker).
void FillWriteResponse(const std::vector<RowOutcome>& results, size_t num_rows,
                       const std::vector<int>& request_rows, HybridTime ts,
                       pb::WriteResponsePB* response) {
  const bool identity = request_rows.empty() && results.size() == num_rows;
  std::vector<int> applied_at(num_rows, -1);  // Request row -> applied row.
  for (size_t i = 0; i < results.size(); ++i) {
    const size_t row = identity ? i : static_cast<size_t>(request_rows[i]);
    if (row < num_rows) applied_at[row] = static_cast<int>(i);
  }
  for (size_t row = 0; row < num_rows; ++row) {
    if (applied_at[row] < 0) {
      AddRowError(static_cast<int>(row),
                  absl::InvalidArgumentError("row is not in the tablet's partition"), response);
    } else if (results[applied_at[row]] != RowOutcome::kApplied) {
      AddRowError(static_cast<int>(row), RowOutcomeToStatus(results[applied_at[row]]), response);
    }
  }
  response->set_timestamp(ts.value());
}

}  // namespace

absl::Status TabletReplica::Write(const pb::WriteRequestPB& request, pb::WriteResponsePB* response,
                                  absl::Time deadline) {
  BASALT_RETURN_IF_ERROR(CheckRunning());
  BASALT_RETURN_IF_ERROR(CheckLeaderReady(deadline));
  BASALT_RETURN_IF_ERROR(CheckRoomForWrites());
  auto op = std::make_shared<PendingOp>();
  op->schema = schema();
  op->scratch = TakeScratch();
  absl::Status s = WriteWithScratch(request, response, deadline, op);
  if (s.ok()) {
    const size_t rows = op->scratch->ops.size();
    const size_t failed = static_cast<size_t>(response->per_row_errors_size());
    kRowsWritten->Increment(rows > failed ? rows - failed : 0);
  }
  // The op is done (or out of pending_): nothing else touches its rows any more.
  ReturnScratch(std::move(op->scratch));
  return s;
}

absl::Status TabletReplica::DecodeWrite(const pb::WriteRequestPB& request, PendingOp* op) const {
  absl::StatusOr<Schema> client = Schema::FromPB(request.schema());
  if (!client.ok()) return FieldError("schema", client.status());
  // The version too, not only the columns: the entry is stamped with this replica's version
  // (WriteWithScratch), and a request for a newer version whose columns are the same (a RENAME
  // TABLE) accepted here before the alter's entry applies would apply nothing, and its retries
  // would get that answer, for an older version than the client's rows, until the client gave up.
  if (client->version() != op->schema->version() || !client->Equals(*op->schema)) {
    return SchemaMismatchError(StrCat("schema: the request's schema (version ", client->version(),
                                      ") is not the schema of tablet ", tablet_id_, " (version ",
                                      op->schema->version(), ")"),
                               op->schema->version());
  }
  std::vector<DecodedRowOperation>& ops = op->scratch->ops;
  RowOperationsDecoder decoder(op->schema.get(), &op->scratch->arena);
  BASALT_RETURN_IF_ERROR(
      FieldError("row_operations", decoder.Decode(request.row_operations(), &ops)));
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!RowOperationIsWrite(ops[i].type)) {
      return absl::InvalidArgumentError(
          ToAbsl(StrCat("row_operations: operation ", i, " is ", RowOperationTypeName(ops[i].type),
                        ", not a write operation")));
    }
  }
  return absl::OkStatus();
}

absl::Status TabletReplica::WriteWithScratch(const pb::WriteRequestPB& request,
                                             pb::WriteResponsePB* response, absl::Time deadline,
                                             const std::shared_ptr<PendingOp>& op) {
  if (request.request_id().client_id().size() > kMaxClientIdBytes) {
    return absl::InvalidArgumentError(
        StrCat("request_id.client_id: longer than ", kMaxClientIdBytes, " bytes"));
  }
  // A request that waited past its deadline (a paused or busy server) is not admitted: its
  // client has moved on, may have sent its rows again under another id (an alter), and must
  // not see them applied by this stale copy.
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError("the request's deadline passed before it was handled");
  }
  if (request.has_request_id() && !request.request_id().client_id().empty()) {
    // A retry of a request applied here, or applied by the leader before and replicated here,
    // gets the first answer (this leader applied every entry of earlier terms: CheckLeaderReady).
    ResultTracker::Answer answer;
    switch (results_->Admit(request.request_id(), absl::Now(), &answer)) {
      case ResultTracker::Admission::kAnswered:
        BASALT_RETURN_IF_ERROR(answer.status);
        *response = std::move(answer.response);
        return absl::OkStatus();
      case ResultTracker::Admission::kInProgress:
        return TabletNotRunningError(
            StrCat("tablet ", tablet_id_, ": an earlier attempt of request ",
                   request.request_id().seq_no(), " is still being applied; retry"));
      case ResultTracker::Admission::kStale:
        return absl::FailedPreconditionError(
            StrCat("request ", request.request_id().seq_no(), " of client ",
                   request.request_id().client_id(),
                   " is below the client's watermark: it completed before"));
      case ResultTracker::Admission::kNew:
        op->request_id = std::make_shared<const pb::RequestIdPB>(request.request_id());
        break;
    }
  }
  // Until the entry is handed to Raft, a failure here means it never applies: a retry may.
  absl::Cleanup abandon = [&] {
    if (op->request_id != nullptr && !op->proposed) results_->Abandon(*op->request_id);
  };
  // After the answer check: a retry of an applied request gets its answer even when the table
  // was altered since (a client re-encodes only rows that were refused, never applied ones).
  BASALT_RETURN_IF_ERROR(DecodeWrite(request, op.get()));
  std::vector<DecodedRowOperation>& ops = op->scratch->ops;
  const size_t num_rows = ops.size();
  // Rows outside the partition fail alone; the others are re-encoded without them.
  std::vector<int> row_index;  // Applied op i is request row row_index[i] (identity if empty).
  pb::RowOperationsPB filtered;
  const bool any_outside =
      DropRowsOutsidePartition(partition_, partition_schema_, &ops, &row_index, &filtered);
  if (ops.empty()) {
    FillWriteResponse({}, num_rows, row_index, HybridTime(ctx_.clock->Now()), response);
    return absl::OkStatus();
  }
  if (ctx_.memory_budget != nullptr) {
    absl::Status admitted = ctx_.memory_budget->AdmitWrite();
    if (!admitted.ok()) return ServerOverloadedError(std::string(admitted.message()));
  }
  op->seq = proposals_.NextSeq();
  WriteEntryHeader header;
  header.origin = ctx_.server_uuid;
  header.seq = op->seq;
  header.schema_version = op->schema->version();
  header.request_id = op->request_id.get();
  if (any_outside) {
    header.request_num_rows = static_cast<uint32_t>(num_rows);
    header.request_rows = row_index;
  }
  std::string body =
      EncodeWriteEntryBody(header, any_outside ? filtered : request.row_operations());
  absl::Status s =
      ProposeAndWait(std::move(body), HybridTime(request.propagated_timestamp()), op, deadline);
  if (s == AnsweredMeanwhile()) {
    ResultTracker::Answer answer;
    if (results_->Admit(*op->request_id, absl::Now(), &answer) ==
        ResultTracker::Admission::kAnswered) {
      BASALT_RETURN_IF_ERROR(answer.status);
      *response = std::move(answer.response);
      return absl::OkStatus();
    }
    // Forgotten meanwhile (the client's watermark passed it): nothing to answer with.
    return absl::FailedPreconditionError("the request was completed before");
  }
  BASALT_RETURN_IF_ERROR(s);
  FillWriteResponse(op->scratch->results, num_rows, row_index, op->ts, response);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> TabletReplica::AlterSchema(const pb::SchemaPB& schema,
                                                    const std::string& new_name,
                                                    absl::Time deadline) {
  BASALT_RETURN_IF_ERROR(CheckRunning());
  absl::StatusOr<Schema> target = Schema::FromPB(schema);
  if (!target.ok()) return FieldError("schema", target.status());
  std::shared_ptr<const Schema> current = this->schema();
  if (target->version() <= current->version() &&
      (new_name.empty() || new_name == meta().table_name)) {
    return current->version();  // Already there (a retried request).
  }
  for (int i = 0; i < current->num_key_columns(); ++i) {
    if (i >= target->num_key_columns() || target->column_id(i) != current->column_id(i) ||
        target->column(i).type() != current->column(i).type()) {
      return absl::InvalidArgumentError("schema: the key columns cannot change");
    }
  }
  BASALT_RETURN_IF_ERROR(CheckLeaderReady(deadline));
  BASALT_RETURN_IF_ERROR(CheckRoomForWrites());  // The schema change flushes the tablet.
  auto op = std::make_shared<PendingOp>();
  op->seq = proposals_.NextSeq();
  pb::ReplicateMsgPB msg;
  msg.set_origin_uuid(ctx_.server_uuid);
  msg.set_request_seq(op->seq);
  *msg.mutable_alter_schema()->mutable_schema() = schema;
  msg.mutable_alter_schema()->set_new_table_name(new_name);
  BASALT_RETURN_IF_ERROR(
      ProposeAndWait(msg.SerializeAsString(), HybridTime::kInvalid, op, deadline));
  return op->schema_version_after;
}

// ---- Apply ----------------------------------------------------------------------------------

uint64_t TabletReplica::DurableIndex() const {
  // The superblock's, not the rowsets' in-memory one: log GC must not pass what a restart finds.
  return static_cast<uint64_t>(std::max<int64_t>(0, tablet_->PersistedDurableOpIndex()));
}

absl::Status TabletReplica::Apply(const LogEntry& entry) {
  // An entry of a term newer than the log had at open: a new leader overwrote the rest of the old
  // log (every committed entry precedes it), so from here on entries are live, not replayed.
  if (entry.term > replay_until_term_.load() && entry.index <= replay_until_index_.load()) {
    replay_until_index_.store(entry.index - 1);
  }
  bool schema_changed = false;
  if (entry.type == EntryType::kNormal) {
    pb::ReplicateMsgPB msg;
    if (!msg.ParseFromString(entry.data)) {
      LOG(ERROR) << "tablet " << tablet_id_ << ": entry " << entry.index
                 << " is not a ReplicateMsgPB; skipped";
    } else {
      const HybridTime ts(msg.timestamp());
      absl::Status s = ctx_.clock->Update(ts);
      LOG_IF(WARNING, !s.ok()) << "tablet " << tablet_id_ << ": " << s;
      if (msg.has_write()) {
        BASALT_RETURN_IF_ERROR(ApplyWrite(entry, msg, ts));
      } else if (msg.has_alter_schema()) {
        BASALT_RETURN_IF_ERROR(ApplyAlter(entry, msg));
        schema_changed = true;
      }
      uint64_t prev = last_applied_ts_.load(std::memory_order_relaxed);
      if (ts.is_valid() && ts.value() > prev) {
        last_applied_ts_.store(ts.value(), std::memory_order_release);
      }
    }
  }
  last_applied_index_.store(entry.index);
  bool changed = last_applied_term_.exchange(entry.term) != entry.term || schema_changed;
  safe_time_.OnApplied(entry.index, entry.term);  // Signalled below.
  // Bootstrapped once the log present at open is applied, or an entry of a newer term is (above;
  // an idle tablet would otherwise wait for writes to pass the old last index).
  if (entry.index >= replay_until_index_.load()) {
    changed |= state_.Set(ReplicaState::kRunning);  // No-op unless bootstrapping.
  } else {
    state_.Notify();
  }
  if (changed && ctx_.on_status_change) ctx_.on_status_change();
  return absl::OkStatus();
}

absl::Status TabletReplica::ApplyWrite(const LogEntry& entry, const pb::ReplicateMsgPB& msg,
                                       HybridTime ts) {
  std::shared_ptr<PendingOp> op;
  if (msg.origin_uuid() == ctx_.server_uuid) op = proposals_.Take(msg.request_seq(), ts);
  const std::shared_ptr<const Schema> schema = this->schema();
  const bool replay = entry.index <= replay_until_index_.load();
  absl::Status s;
  const std::vector<RowOutcome>* results = nullptr;
  if (msg.write().schema_version() != schema->version()) {
    s = SchemaMismatchError(
        StrCat("the rows were encoded for schema version ", msg.write().schema_version(),
               " but the tablet is at version ", schema->version(), " now"),
        schema->version());
  } else if (op != nullptr) {
    s = tablet_->ApplyRowOperations(ts, static_cast<int64_t>(entry.index), op->scratch->ops,
                                    &op->scratch->results, replay);
    results = &op->scratch->results;
  } else {
    WriteScratch& w = apply_scratch_;
    w.arena.Reset();
    RowOperationsDecoder decoder(schema.get(), &w.arena);
    s = decoder.Decode(msg.write().row_operations(), &w.ops);
    for (size_t i = 0; s.ok() && i < w.ops.size(); ++i) {
      if (!RowOperationIsWrite(w.ops[i].type)) s = absl::InvalidArgumentError("not a write");
    }
    if (s.ok()) {
      s = tablet_->ApplyRowOperations(ts, static_cast<int64_t>(entry.index), w.ops, &w.results,
                                      replay);
    }
    results = &w.results;
  }
  if (s.ok()) last_write_index_ = entry.index;
  LOG_IF(WARNING, !s.ok()) << "tablet " << tablet_id_ << ": entry " << entry.index
                           << " applied nothing: " << s;
  const bool deterministic = s.ok() || IsDeterministicApplyError(s);
  if (msg.has_request_id() && deterministic) {
    // What the proposer answers (WriteWithScratch), built the same way on every replica.
    ResultTracker::Answer answer;
    answer.status = s;
    if (s.ok()) {
      const pb::WriteOpPB& w = msg.write();
      const std::vector<int> request_rows(w.request_rows().begin(), w.request_rows().end());
      const size_t num_rows = request_rows.empty() ? results->size() : w.request_num_rows();
      FillWriteResponse(*results, num_rows, request_rows, ts, &answer.response);
    }
    results_->Record(msg.request_id(), entry.index, absl::Now(), std::move(answer));
  }
  if (op != nullptr) {
    op->apply_status = s;
    op->applied = true;
  }
  // Serving on after anything else would mean serving a state the other replicas do not have.
  return deterministic ? absl::OkStatus() : s;
}

absl::Status TabletReplica::FlushBeforeAlter(uint64_t alter_index) {
  // No write is applied meanwhile (this runs on the applier that applies them); a rowset busy in a
  // compaction keeps its in-memory deltas until the compaction ends: wait for a release (a
  // condition, not a poll; on the applier, so Raft heartbeats and votes go on), then flush again.
  // No deadline: a long compaction is no fault of this replica (its peers wait for theirs too).
  if (FLAGS_tablet_alter_inject_delay_ms > 0) {
    absl::SleepFor(absl::Milliseconds(FLAGS_tablet_alter_inject_delay_ms));
  }
  const absl::Time start = absl::Now();
  absl::Time next_log = start + absl::Seconds(30);
  while (true) {
    const uint64_t releases = tablet_->busy_releases();
    BASALT_RETURN_IF_ERROR(StorageError(tablet_->FlushMemRowSet()));
    BASALT_RETURN_IF_ERROR(StorageError(tablet_->FlushDeltas()));
    if (tablet_->PersistedDurableOpIndex() >= static_cast<int64_t>(last_write_index_)) {
      return absl::OkStatus();
    }
    if (!tablet_->AwaitRowSetRelease(releases, next_log)) {
      LOG(WARNING) << "tablet " << tablet_id_ << ": the schema change at index " << alter_index
                   << " still waits, after " << absl::Trunc(absl::Now() - start, absl::Seconds(1))
                   << ", for a compaction to release the rowsets holding earlier ops";
      next_log = absl::Now() + absl::Seconds(30);
    }
  }
}

absl::Status TabletReplica::ApplyAlter(const LogEntry& entry, const pb::ReplicateMsgPB& msg) {
  std::shared_ptr<PendingOp> op;
  if (msg.origin_uuid() == ctx_.server_uuid) {
    op = proposals_.Take(msg.request_seq(), HybridTime(msg.timestamp()));
  }
  absl::Status s;
  absl::StatusOr<Schema> target = Schema::FromPB(msg.alter_schema().schema());
  if (!target.ok()) {
    s = target.status();
  } else if (target->version() > schema()->version()) {
    s = FlushBeforeAlter(entry.index);
    if (s.ok()) s = tablet_->AlterSchema(*target);
    if (s.ok()) {
      absl::MutexLock l(&mu_);
      schema_ = std::make_shared<const Schema>(tablet_->schema());
    }
  }
  const std::string& name = msg.alter_schema().new_table_name();
  if (s.ok() && !name.empty()) {
    TabletReplicaMeta m;
    {
      absl::MutexLock l(&mu_);
      meta_.table_name = name;
      m = meta_;
    }
    s = StorageError(ReplicaFiles::PersistMeta(ctx_, m));
  }
  LOG_IF(WARNING, !s.ok()) << "tablet " << tablet_id_ << ": schema change failed: " << s;
  if (op != nullptr) {
    op->apply_status = s;
    op->schema_version_after = schema()->version();
    op->applied = true;
  }
  return IsDeterministicApplyError(s) ? absl::OkStatus() : s;
}

}  // namespace basalt
