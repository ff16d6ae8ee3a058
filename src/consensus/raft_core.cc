#include "consensus/raft_core.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "absl/strings/cord.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/quorum.h"

namespace basalt {

const char* RoleName(RaftCore::Role role) {
  switch (role) {
    case RaftCore::Role::kFollower:
      return "follower";
    case RaftCore::Role::kPreCandidate:
      return "pre-candidate";
    case RaftCore::Role::kCandidate:
      return "candidate";
    case RaftCore::Role::kLeader:
      return "leader";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<RaftCore>> RaftCore::Create(const RaftOptions& options,
                                                           const LogReader* log,
                                                           const RaftBootState& boot, Random* rng) {
  if (options.id.empty()) return absl::InvalidArgumentError("raft options: empty peer id");
  if (options.heartbeat_ticks <= 0 || options.election_ticks <= options.heartbeat_ticks) {
    return absl::InvalidArgumentError("raft options: need 0 < heartbeat_ticks < election_ticks");
  }
  if (options.max_election_backoff_exponent < 0 || options.max_election_backoff_exponent > 16 ||
      options.max_inflight_appends == 0) {
    return absl::InvalidArgumentError(
        "raft options: backoff exponent must be in [0, 16] and max_inflight_appends positive");
  }
  BASALT_RETURN_IF_ERROR_PREPEND(ValidateConfig(boot.config), "raft boot configuration");
  std::unique_ptr<RaftCore> core(new RaftCore(options, log, boot, rng));
  BASALT_RETURN_IF_ERROR(core->LoadConfigs(boot));
  return core;
}

RaftCore::RaftCore(const RaftOptions& options, const LogReader* log, const RaftBootState& boot,
                   Random* rng)
    : options_(options),
      rng_(rng),
      log_(log, boot.hard_state.commit, boot.applied),
      term_(boot.hard_state.term),
      vote_(boot.hard_state.vote),
      committed_config_(boot.config),
      committed_config_index_(boot.config_index),
      config_(boot.config) {
  // If RaftLog clamped the commit index, the next Ready persists the corrected value.
  handed_out_hard_state_ = boot.hard_state;
  ResetElectionTimer();
  if (options_.fast_first_election && term_ == 0 && log_.LastIndex() == 0 &&
      !config_.voters.empty() && FirstCampaigner() == options_.id) {
    randomized_election_timeout_ = 1;
    fast_first_election_armed_ = true;
  }
}

const PeerId& RaftCore::FirstCampaigner() const {
  const PeerId& named = options_.fast_first_election_peer;
  return !named.empty() && IsVoter(config_, named) ? named : config_.voters.front();
}

absl::Status RaftCore::LoadConfigs(const RaftBootState& boot) {
  const uint64_t last = log_.LastIndex();
  for (uint64_t lo = std::max(boot.config_index + 1, log_.FirstIndex()); lo <= last;) {
    absl::StatusOr<std::vector<LogEntry>> batch = log_.Entries(lo, last + 1, 8 << 20);
    BASALT_RETURN_IF_ERROR_PREPEND(batch.status(), "reading configuration entries");
    for (const LogEntry& e : *batch) {
      if (e.type != EntryType::kConfigChange) continue;
      absl::StatusOr<RaftConfig> config = DecodeConfig(e.data);
      BASALT_RETURN_IF_ERROR_PREPEND(config.status(),
                                     StrCat("configuration entry at index ", e.index, ": "));
      OnConfigAppended(e.index, e.term, std::move(*config));
    }
    lo = batch->back().index + 1;
  }
  OnCommitAdvanced();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Role transitions.

void RaftCore::ResetElectionTimer() {
  election_elapsed_ = 0;
  heartbeat_elapsed_ = 0;
  const int shift = std::min(failed_elections_, options_.max_election_backoff_exponent);
  const int base = options_.election_ticks << shift;
  randomized_election_timeout_ = base + static_cast<int>(rng_->Uniform(base));
}

void RaftCore::BecomeFollower(uint64_t term, const PeerId& leader) {
  // A leader stepping down first sends the commit index it held back (HasUnsentCommit), in its
  // own term: the followers would otherwise apply acknowledged writes only under the next leader.
  if (HasUnsentCommit()) BroadcastAppend();
  if (term != term_) {
    term_ = term;
    vote_.clear();
  }
  role_ = Role::kFollower;
  leader_ = leader;
  votes_.clear();
  progress_.clear();
  lead_transferee_.clear();
  broadcast_pending_ = false;
  commit_unsent_ = false;
  ResetElectionTimer();
}

void RaftCore::BecomePreCandidate() {
  // Pre-vote changes neither the term nor the vote: a partitioned replica that keeps
  // pre-campaigning never raises its term and so cannot depose a healthy leader on return.
  role_ = Role::kPreCandidate;
  leader_.clear();
  votes_.clear();
  ResetElectionTimer();
}

void RaftCore::BecomeCandidate() {
  role_ = Role::kCandidate;
  ++term_;
  vote_ = options_.id;
  leader_.clear();
  votes_.clear();
  ResetElectionTimer();
}

void RaftCore::BecomeLeader() {
  role_ = Role::kLeader;
  leader_ = options_.id;
  votes_.clear();
  failed_elections_ = 0;
  ResetElectionTimer();
  progress_.clear();
  SyncProgressWithConfig();
  // Raft §5.4.2: entries of earlier terms commit only once an entry of this term does.
  AppendLeaderEntry(EntryType::kNoOp, std::string(), 0);
  VLOG(1) << options_.id << " became leader at term " << term_;
}

// ---------------------------------------------------------------------------------------------
// Ticks.

void RaftCore::Tick() {
  log_.RetryReads();
  if (role_ == Role::kLeader) {
    TickLeader();
    return;
  }
  ++election_elapsed_;
  if (!Promotable() || election_elapsed_ < randomized_election_timeout_) return;
  if (role_ != Role::kFollower) ++failed_elections_;  // This election timed out.
  Campaign(options_.pre_vote, /*transfer=*/false);
}

void RaftCore::TickLeader() {
  ++heartbeat_elapsed_;
  ++election_elapsed_;
  if (election_elapsed_ >= options_.election_ticks) {
    election_elapsed_ = 0;
    if (options_.check_quorum) {
      std::map<PeerId, bool> active{{options_.id, true}};
      for (auto& [peer, pr] : progress_) {
        active[peer] = pr.recent_active();
        pr.set_recent_active(false);
      }
      if (!QuorumActive(config_, active)) {
        VLOG(1) << options_.id << " steps down: no quorum heard within an election timeout";
        BecomeFollower(term_, PeerId());
        return;
      }
    }
    lead_transferee_.clear();  // A transfer that took an election timeout has failed.
  }
  if (heartbeat_elapsed_ >= options_.heartbeat_ticks) {
    heartbeat_elapsed_ = 0;
    BroadcastHeartbeat();
  }
}

// ---------------------------------------------------------------------------------------------
// Elections.

void RaftCore::Campaign(bool pre_vote, bool transfer) {
  if (pre_vote) {
    BecomePreCandidate();
  } else {
    BecomeCandidate();
  }
  const MessageType type = pre_vote ? MessageType::kPreVote : MessageType::kVote;
  const uint64_t term = pre_vote ? term_ + 1 : term_;
  votes_[options_.id] = true;
  for (const PeerId& voter : config_.voters) {
    if (voter == options_.id) continue;
    RaftMessage m;
    m.type = type;
    m.to = voter;
    m.term = term;
    m.index = log_.LastIndex();
    m.log_term = log_.LastTerm();
    m.transfer = transfer;
    Send(std::move(m));
  }
  // A single-voter group wins at once.
  if (TallyVotes(config_, votes_) == VoteResult::kWon) {
    if (pre_vote) {
      Campaign(/*pre_vote=*/false, transfer);
    } else {
      BecomeLeader();
    }
  }
}

void RaftCore::HandleVoteRequest(const RaftMessage& m) {
  const bool pre_vote = m.type == MessageType::kPreVote;
  const bool can_vote =
      vote_ == m.from || (vote_.empty() && leader_.empty()) || (pre_vote && m.term > term_);
  RaftMessage resp;
  resp.type = pre_vote ? MessageType::kPreVoteResponse : MessageType::kVoteResponse;
  resp.to = m.from;
  const bool up_to_date =
      log_.IsUpToDate(m.index, m.log_term) ||
      options_.testing_bug == RaftOptions::TestingBug::kGrantVoteWithoutLogCheck;
  if (can_vote && up_to_date) {
    // A granted pre-vote echoes the term asked about; our own term is unchanged.
    resp.term = m.term;
    if (!pre_vote) {
      vote_ = m.from;
      election_elapsed_ = 0;
    }
  } else {
    resp.term = term_;
    resp.reject = true;
  }
  Send(std::move(resp));
}

void RaftCore::HandleVoteResponse(const RaftMessage& m) {
  const bool pre_vote = m.type == MessageType::kPreVoteResponse;
  if ((pre_vote && role_ != Role::kPreCandidate) || (!pre_vote && role_ != Role::kCandidate)) {
    return;  // A late response to an election already decided.
  }
  votes_[m.from] = !m.reject;
  switch (TallyVotes(config_, votes_)) {
    case VoteResult::kWon:
      if (pre_vote) {
        Campaign(/*pre_vote=*/false, /*transfer=*/false);
      } else {
        BecomeLeader();
      }
      break;
    case VoteResult::kLost:
      ++failed_elections_;
      BecomeFollower(term_, PeerId());
      break;
    case VoteResult::kPending:
      break;
  }
}

// Applies the term rules common to every message. Returns true if `m` needs no further handling.
bool RaftCore::HandleTermMismatch(const RaftMessage& m) {
  const bool vote_request = m.type == MessageType::kVote || m.type == MessageType::kPreVote;
  if (m.term > term_) {
    if (vote_request && !m.transfer && options_.check_quorum && !leader_.empty() &&
        election_elapsed_ < options_.election_ticks) {
      return true;  // We heard from a live leader recently: ignore the disruption.
    }
    if (m.type == MessageType::kPreVote || (m.type == MessageType::kPreVoteResponse && !m.reject)) {
      return false;  // Pre-vote traffic carries a future term without changing ours.
    }
    const bool from_leader = m.type == MessageType::kAppend || m.type == MessageType::kHeartbeat;
    BecomeFollower(m.term, from_leader ? m.from : PeerId());
    return false;
  }
  if (m.term < term_) {
    if (m.type == MessageType::kAppend || m.type == MessageType::kHeartbeat) {
      // A stale leader: tell it our term so that it steps down.
      RaftMessage resp;
      resp.type = MessageType::kAppendResponse;
      resp.to = m.from;
      resp.term = term_;
      resp.reject = true;
      Send(std::move(resp));
    } else if (m.type == MessageType::kPreVote) {
      RaftMessage resp;
      resp.type = MessageType::kPreVoteResponse;
      resp.to = m.from;
      resp.term = term_;
      resp.reject = true;
      Send(std::move(resp));
    }
    return true;
  }
  return false;
}

void RaftCore::Step(const RaftMessage& m) { StepImpl(m, nullptr); }

void RaftCore::StepTakingEntries(RaftMessage* m) { StepImpl(*m, &m->entries); }

void RaftCore::StepImpl(const RaftMessage& m, std::vector<LogEntry>* movable) {
  if (m.to != options_.id || m.from == options_.id || m.from.empty()) return;
  if (HandleTermMismatch(m)) return;
  switch (m.type) {
    case MessageType::kPreVote:
    case MessageType::kVote:
      HandleVoteRequest(m);
      return;
    case MessageType::kPreVoteResponse:
    case MessageType::kVoteResponse:
      HandleVoteResponse(m);
      return;
    default:
      break;
  }
  if (role_ == Role::kLeader) {
    StepLeader(m);
    return;
  }
  switch (m.type) {
    case MessageType::kAppend:
      HeardFromLeader(m);
      HandleAppend(m, movable);
      break;
    case MessageType::kHeartbeat:
      HeardFromLeader(m);
      HandleHeartbeat(m);
      break;
    case MessageType::kTimeoutNow:
      if (Promotable()) Campaign(/*pre_vote=*/false, /*transfer=*/true);
      break;
    default:
      break;  // Responses meant for a leader we no longer are.
  }
}

// ---------------------------------------------------------------------------------------------
// Replication, follower side.

void RaftCore::HeardFromLeader(const RaftMessage& m) {
  if (role_ != Role::kFollower) BecomeFollower(term_, m.from);
  leader_ = m.from;
  election_elapsed_ = 0;
  if (failed_elections_ != 0) {
    failed_elections_ = 0;
    ResetElectionTimer();
  }
}

void RaftCore::HandleAppend(const RaftMessage& m, std::vector<LogEntry>* movable) {
  RaftMessage resp;
  resp.type = MessageType::kAppendResponse;
  resp.to = m.from;
  resp.term = term_;
  if (m.index < log_.committed()) {
    // Everything up to our commit index matches any leader's log.
    resp.index = log_.committed();
    Send(std::move(resp));
    return;
  }
  // Configuration entries (rare, small) are set aside first: the entries may move into the log.
  std::vector<LogEntry> configs;
  for (const LogEntry& e : m.entries) {
    if (e.type == EntryType::kConfigChange) configs.push_back(e);
  }
  std::optional<uint64_t> last_new =
      movable != nullptr ? log_.MaybeAppend(m.index, m.log_term, std::move(*movable))
                         : log_.MaybeAppend(m.index, m.log_term, m.entries);
  if (last_new) {
    DropReplacedConfigs();
    const uint64_t tracked =
        pending_configs_.empty() ? committed_config_index_ : pending_configs_.back().index;
    for (const LogEntry& e : configs) {
      if (e.index <= tracked) continue;
      absl::StatusOr<RaftConfig> config = DecodeConfig(e.data);
      if (!config.ok()) {
        // The leader replicated it, so every replica has the same bytes: a corrupt message that
        // passed the transport's checksum, or a broken leader. Keep the old configuration.
        LOG(ERROR) << options_.id << ": undecodable configuration entry " << e.index << ": "
                   << config.status();
        continue;
      }
      OnConfigAppended(e.index, e.term, std::move(*config));
    }
    if (log_.CommitTo(std::min(m.commit, *last_new))) OnCommitAdvanced();
    resp.index = *last_new;
  } else {
    const OpId hint = log_.FindConflictByTerm(std::min(m.index, log_.LastIndex()), m.log_term);
    resp.reject = true;
    resp.index = m.index;
    resp.reject_hint_index = hint.index;
    resp.reject_hint_term = hint.term;
  }
  Send(std::move(resp));
}

void RaftCore::HandleHeartbeat(const RaftMessage& m) {
  // The leader sends min(its commit, our match), which our log is known to hold.
  if (log_.CommitTo(m.commit)) OnCommitAdvanced();
  RaftMessage resp;
  resp.type = MessageType::kHeartbeatResponse;
  resp.to = m.from;
  resp.term = term_;
  resp.index = log_.LastIndex();
  Send(std::move(resp));
}

// ---------------------------------------------------------------------------------------------
// Replication, leader side.

void RaftCore::StepLeader(const RaftMessage& m) {
  auto it = progress_.find(m.from);
  if (it == progress_.end()) return;  // Not a member (any more).
  Progress* pr = &it->second;
  switch (m.type) {
    case MessageType::kAppendResponse:
      pr->set_recent_active(true);
      HandleAppendResponse(m, pr);
      break;
    case MessageType::kHeartbeatResponse:
      pr->set_recent_active(true);
      HandleHeartbeatResponse(m, pr);
      break;
    default:
      break;
  }
}

void RaftCore::HandleAppendResponse(const RaftMessage& m, Progress* pr) {
  if (m.reject) {
    uint64_t match_hint = m.reject_hint_index;
    if (m.reject_hint_term > 0) {
      match_hint = log_.FindConflictByTerm(m.reject_hint_index, m.reject_hint_term).index;
    }
    if (pr->MaybeDecrTo(m.index, match_hint)) SendAppend(m.from, pr, /*send_if_empty=*/true);
    return;
  }
  const bool was_paused = pr->IsPaused();
  // A probe that confirms the match already known (after a tablet copy set it) also ends the
  // probing, as in etcd.
  const bool probe_confirmed = pr->state() == Progress::State::kProbe && pr->match() == m.index;
  if (!pr->MaybeUpdate(m.index) && !probe_confirmed) {
    if (was_paused && !pr->IsPaused()) SendAppend(m.from, pr, false);
    MaybeAutoPromote(m.from, *pr);
    return;
  }
  if (pr->state() == Progress::State::kProbe) pr->BecomeReplicate();
  if (MaybeCommit()) {
    // The commit index goes with the next append to each follower (HasUnsentCommit); entries
    // already waiting for one go now.
    commit_unsent_ = true;
    for (auto& [peer, other] : progress_) {
      while (SendAppend(peer, &other, /*send_if_empty=*/false)) {
      }
    }
  } else if (was_paused) {
    SendAppend(m.from, pr, /*send_if_empty=*/false);
  }
  while (SendAppend(m.from, pr, /*send_if_empty=*/false)) {
  }
  if (m.from == lead_transferee_) MaybeSendTimeoutNow(m.from, *pr);
  MaybeAutoPromote(m.from, *pr);
}

void RaftCore::HandleHeartbeatResponse(const RaftMessage& m, Progress* pr) {
  pr->OnHeartbeatResponse();
  if (pr->match() < log_.LastIndex()) SendAppend(m.from, pr, /*send_if_empty=*/true);
  MaybeAutoPromote(m.from, *pr);  // Retries a promotion refused earlier (a change was pending).
}

// Sends `to` the entries from its next index (a probe when its state is kProbe). Returns true if
// a message was sent.
bool RaftCore::SendAppend(const PeerId& to, Progress* pr, bool send_if_empty) {
  if (pr->IsPaused()) return false;
  const uint64_t prev = pr->next() - 1;
  absl::StatusOr<uint64_t> prev_term = log_.Term(prev);
  absl::StatusOr<std::vector<LogEntry>> entries = std::vector<LogEntry>();
  if (prev_term.ok() && pr->next() <= log_.LastIndex()) {
    entries = log_.Entries(pr->next(), log_.LastIndex() + 1, options_.max_append_bytes);
  }
  const absl::Status s = prev_term.ok() ? entries.status() : prev_term.status();
  if (absl::IsNotFound(s)) {
    // The follower's next entry was compacted away: only a tablet copy can catch it up.
    pr->BecomeSnapshot();
    snapshots_needed_.push_back(to);
    return false;
  }
  if (!s.ok()) {
    LOG(ERROR) << options_.id << ": cannot read the log to replicate to " << to << ": " << s;
    return false;
  }
  if (entries->empty() && !send_if_empty) return false;
  RaftMessage m;
  m.type = MessageType::kAppend;
  m.to = to;
  m.term = term_;
  m.index = prev;
  m.log_term = *prev_term;
  m.commit = log_.committed();
  pr->SentAppend(entries->empty() ? prev : entries->back().index);
  m.entries = std::move(*entries);
  Send(std::move(m));
  return true;
}

void RaftCore::BroadcastAppend() {
  broadcast_pending_ = false;
  commit_unsent_ = false;
  for (auto& [peer, pr] : progress_) {
    if (!SendAppend(peer, &pr, /*send_if_empty=*/true)) continue;
    while (SendAppend(peer, &pr, /*send_if_empty=*/false)) {  // Fill the pipeline window.
    }
  }
}

void RaftCore::BroadcastHeartbeat() {
  for (const auto& [peer, pr] : progress_) {
    RaftMessage m;
    m.type = MessageType::kHeartbeat;
    m.to = peer;
    m.term = term_;
    m.commit = std::min(pr.match(), log_.committed());
    Send(std::move(m));
  }
}

// Raft §5.3/§5.4.2: commit the highest index replicated on a majority, but only by counting an
// entry of the current term.
bool RaftCore::MaybeCommit() {
  std::map<PeerId, uint64_t> match{{options_.id, log_.StableIndex()}};
  for (const auto& [peer, pr] : progress_) match[peer] = pr.match();
  const uint64_t index = CommittedIndex(config_, match);
  if (index <= log_.committed()) return false;
  if (!log_.MatchTerm(index, term_) &&
      options_.testing_bug != RaftOptions::TestingBug::kCommitOldTermEntriesByCounting) {
    return false;
  }
  log_.CommitTo(index);
  OnCommitAdvanced();
  return true;
}

void RaftCore::AppendLeaderEntry(EntryType type, std::string data, uint64_t timestamp) {
  LogEntry e;
  e.term = term_;
  e.index = log_.LastIndex() + 1;
  e.type = type;
  e.timestamp = timestamp;
  e.data = std::move(data);
  // Not `Append({std::move(e)})`: an initializer list's elements are const, so that copied the
  // entry's data (a whole write batch).
  std::vector<LogEntry> entries;
  entries.push_back(std::move(e));
  log_.Append(std::move(entries));
  broadcast_pending_ = true;
}

void RaftCore::MaybeSendTimeoutNow(const PeerId& to, const Progress& pr) {
  if (pr.match() != log_.LastIndex()) return;
  RaftMessage m;
  m.type = MessageType::kTimeoutNow;
  m.to = to;
  m.term = term_;
  Send(std::move(m));
}

// A learner has caught up once it acknowledges appends (it is not being probed or copied) and
// is within learner_catch_up_entries of the last index: promoting one that is still being
// copied would make the group wait for it.
bool RaftCore::CaughtUp(const Progress& pr) const {
  return pr.state() == Progress::State::kReplicate &&
         pr.match() + options_.learner_catch_up_entries >= log_.LastIndex();
}

void RaftCore::MaybeAutoPromote(const PeerId& peer, const Progress& pr) {
  if (!IsLearner(config_, peer)) return;
  if (!options_.auto_promote_learners &&
      !std::binary_search(config_.promote.begin(), config_.promote.end(), peer)) {
    return;
  }
  if (!CaughtUp(pr)) return;
  absl::StatusOr<uint64_t> index =
      ProposeConfigChange(ConfigChange{ConfigChange::Type::kPromoteLearner, peer});
  VLOG(1) << options_.id << " auto-promoting " << peer << ": " << index.status();
}

// ---------------------------------------------------------------------------------------------
// Client requests.

absl::Status RaftCore::NotLeaderError() const {
  absl::Status s = absl::UnavailableError(
      StrCat("not the leader (", options_.id, " is ", RoleName(role_), " at term ", term_,
             "); leader hint: ", leader_.empty() ? "unknown" : leader_));
  if (!leader_.empty()) s.SetPayload(kLeaderHintUrl, absl::Cord(leader_));
  return s;
}

absl::StatusOr<uint64_t> RaftCore::Propose(std::string data, uint64_t timestamp) {
  if (role_ != Role::kLeader) return NotLeaderError();
  if (!lead_transferee_.empty()) {
    return absl::UnavailableError(
        StrCat("leadership transfer to ", lead_transferee_, " in progress"));
  }
  AppendLeaderEntry(EntryType::kNormal, std::move(data), timestamp);
  return log_.LastIndex();
}

absl::StatusOr<uint64_t> RaftCore::ProposeConfigChange(const ConfigChange& change) {
  if (role_ != Role::kLeader) return NotLeaderError();
  if (!lead_transferee_.empty()) return absl::UnavailableError("leadership transfer in progress");
  if (!pending_configs_.empty() &&
      options_.testing_bug != RaftOptions::TestingBug::kAllowConcurrentConfigChanges) {
    return absl::UnavailableError("another configuration change is not committed yet");
  }
  // Without this, a change could be appended next to an uncommitted one of an earlier leader
  // (the single-server change bug described on raft-dev, 2015).
  if (!log_.MatchTerm(log_.committed(), term_)) {
    return absl::UnavailableError("the leader has not committed an entry of its term yet");
  }
  if (change.type == ConfigChange::Type::kRemovePeer && change.peer == options_.id) {
    return absl::FailedPreconditionError("the leader cannot remove itself; transfer first");
  }
  if (change.type == ConfigChange::Type::kDemoteVoter && change.peer == options_.id) {
    return absl::FailedPreconditionError("the leader cannot demote itself; transfer first");
  }
  if (change.type == ConfigChange::Type::kPromoteLearner) {
    const Progress* pr = progress(change.peer);
    if (pr != nullptr && !CaughtUp(*pr)) {
      return absl::FailedPreconditionError(StrCat("learner ", change.peer,
                                                  " has not caught up (match ", pr->match(),
                                                  ", last ", log_.LastIndex(), ")"));
    }
  }
  BASALT_ASSIGN_OR_RETURN(RaftConfig next, ApplyConfigChange(config_, change));
  AppendLeaderEntry(EntryType::kConfigChange, EncodeConfig(next), 0);
  OnConfigAppended(log_.LastIndex(), term_, std::move(next));
  return log_.LastIndex();
}

absl::Status RaftCore::TransferLeadership(const PeerId& peer) {
  if (role_ != Role::kLeader) return NotLeaderError();
  if (peer == options_.id) return absl::OkStatus();
  if (!IsVoter(config_, peer)) {
    return absl::FailedPreconditionError(StrCat("cannot transfer leadership to non-voter ", peer));
  }
  lead_transferee_ = peer;
  election_elapsed_ = 0;  // The transfer is abandoned after an election timeout.
  Progress* pr = &progress_.at(peer);
  if (pr->match() == log_.LastIndex()) {
    MaybeSendTimeoutNow(peer, *pr);
  } else {
    SendAppend(peer, pr, /*send_if_empty=*/true);
  }
  return absl::OkStatus();
}

absl::Status RaftCore::StepDown() {
  if (role_ != Role::kLeader) return NotLeaderError();
  BecomeFollower(term_, PeerId());
  return absl::OkStatus();
}

void RaftCore::ReportSnapshotDone(const PeerId& peer, uint64_t index) {
  auto it = progress_.find(peer);
  if (role_ != Role::kLeader || it == progress_.end() ||
      it->second.state() != Progress::State::kSnapshot) {
    return;
  }
  it->second.OnSnapshotDone(index);
  SendAppend(peer, &it->second, /*send_if_empty=*/true);
}

void RaftCore::ReportSnapshotFailed(const PeerId& peer) { ReportSnapshotDone(peer, 0); }

void RaftCore::ReportPeerMissing(const PeerId& peer) {
  auto it = progress_.find(peer);
  if (role_ != Role::kLeader || it == progress_.end() ||
      it->second.state() == Progress::State::kSnapshot) {
    return;
  }
  it->second.BecomeSnapshot();
  snapshots_needed_.push_back(peer);
}

// ---------------------------------------------------------------------------------------------
// Configuration tracking.

void RaftCore::OnConfigAppended(uint64_t index, uint64_t term, RaftConfig config) {
  pending_configs_.push_back(PendingConfig{index, term, config});
  config_ = std::move(config);
  SyncProgressWithConfig();
}

void RaftCore::DropReplacedConfigs() {
  bool dropped = false;
  while (!pending_configs_.empty() &&
         !log_.MatchTerm(pending_configs_.back().index, pending_configs_.back().term)) {
    pending_configs_.pop_back();
    dropped = true;
  }
  if (!dropped) return;
  config_ = pending_configs_.empty() ? committed_config_ : pending_configs_.back().config;
  SyncProgressWithConfig();
}

void RaftCore::OnCommitAdvanced() {
  auto it = pending_configs_.begin();
  while (it != pending_configs_.end() && it->index <= log_.committed()) {
    committed_config_ = std::move(it->config);
    committed_config_index_ = it->index;
    ++it;
  }
  pending_configs_.erase(pending_configs_.begin(), it);
}

// Leader: gives every member a Progress and drops those of removed peers. Candidates: a replica
// that is no longer a voter stops campaigning.
void RaftCore::SyncProgressWithConfig() {
  if (role_ == Role::kPreCandidate || role_ == Role::kCandidate) {
    if (!Promotable()) BecomeFollower(term_, PeerId());
    return;
  }
  if (role_ != Role::kLeader) return;
  for (auto it = progress_.begin(); it != progress_.end();) {
    it = IsMember(config_, it->first) ? std::next(it) : progress_.erase(it);
  }
  for (const auto* ids : {&config_.voters, &config_.learners}) {
    for (const PeerId& peer : *ids) {
      if (peer == options_.id || progress_.count(peer) != 0) continue;
      progress_.emplace(peer, Progress(log_.LastIndex() + 1, options_.max_inflight_appends));
    }
  }
  if (!lead_transferee_.empty() && !IsVoter(config_, lead_transferee_)) lead_transferee_.clear();
  if (MaybeCommit()) broadcast_pending_ = true;
}

// ---------------------------------------------------------------------------------------------
// Ready.

void RaftCore::Send(RaftMessage m) {
  m.from = options_.id;
  outbox_.push_back(std::move(m));
}

void RaftCore::PropagateCommit() {
  if (HasUnsentCommit()) broadcast_pending_ = true;
}

bool RaftCore::HasReady() const {
  return broadcast_pending_ || !outbox_.empty() || hard_state() != handed_out_hard_state_ ||
         log_.HasEntriesToPersist() || log_.HasEntriesToApply() || !snapshots_needed_.empty();
}

Ready RaftCore::GetReady() {
  if (broadcast_pending_) BroadcastAppend();
  Ready ready;
  if (hard_state() != handed_out_hard_state_) {
    handed_out_hard_state_ = hard_state();
    ready.hard_state = handed_out_hard_state_;
  }
  ready.entries = log_.TakeEntriesToPersist();
  ready.messages = std::move(outbox_);
  outbox_.clear();
  ready.committed_entries = log_.TakeEntriesToApply(options_.max_apply_bytes);
  ready.snapshots_needed = std::move(snapshots_needed_);
  snapshots_needed_.clear();
  return ready;
}

void RaftCore::Advance(const Ready& ready) {
  if (!ready.entries.empty()) {
    log_.StableTo(ready.entries.back().index, ready.entries.back().term);
    // The leader's own entries count toward a majority only once durable.
    if (role_ == Role::kLeader && MaybeCommit()) commit_unsent_ = true;
  }
}

// ---------------------------------------------------------------------------------------------
// Observers.

const Progress* RaftCore::progress(const PeerId& peer) const {
  auto it = progress_.find(peer);
  return it == progress_.end() ? nullptr : &it->second;
}

std::string RaftCore::DebugString() const {
  std::string out = StrCat(options_.id, " ", RoleName(role_), " term=", term_, " vote=", vote_,
                           " leader=", leader_, " last=", log_.LastIndex(), "/", log_.LastTerm(),
                           " commit=", log_.committed(), " applied=", log_.applied(), " ",
                           ConfigToString(config_));
  for (const auto& [peer, pr] : progress_) {
    StrAppend(&out, " [", peer, " ", ProgressStateName(pr.state()), " match=", pr.match(),
              " next=", pr.next(), "]");
  }
  return out;
}

}  // namespace basalt
