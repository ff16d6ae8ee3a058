#include "tools/replica_move.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/tool_common.h"

namespace basalt::tools {

namespace {

// How often MoveReplica asks the leader again while it waits; the first poll comes soon (a
// small tablet is copied in well under a second), later ones back off.
constexpr absl::Duration kFirstPoll = absl::Milliseconds(100);
constexpr absl::Duration kMaxPoll = absl::Seconds(1);
// Progress lines while waiting: on every change of state, and at least this often.
constexpr absl::Duration kProgressInterval = absl::Seconds(5);
// How long to wait for a leadership transfer before asking the leader again (a transfer fails
// quietly when the chosen replica cannot win, e.g. it lags).
constexpr absl::Duration kStepDownRetry = absl::Seconds(3);

Deadline ToDeadline(absl::Time t) { return absl::ToChronoTime(t); }

// Finds the leader among view->servers and reads its consensus state into *view. FindLeader's
// errors; GetConsensusState's; UNAVAILABLE if the replica no longer leads when asked.
absl::Status RefreshView(const std::string& tablet_id, absl::Time deadline, TabletView* view) {
  BASALT_ASSIGN_OR_RETURN(view->leader, FindLeader(view->servers, tablet_id, ToDeadline(deadline)));
  BASALT_ASSIGN_OR_RETURN(
      pb::GetConsensusStateResponsePB resp,
      GetConsensusState(view->leader.uuid, view->leader.address, tablet_id, ToDeadline(deadline)));
  if (resp.role() != pb::LEADER) {
    return absl::UnavailableError(StrCat("tablet server ", view->leader.uuid,
                                         " no longer leads tablet ", tablet_id, "; retry"));
  }
  view->cstate = std::move(*resp.mutable_cstate());
  return absl::OkStatus();
}

// Sleeps the current backoff (never past `deadline`) and doubles it up to kMaxPoll.
void Backoff(absl::Time deadline, absl::Duration* backoff) {
  absl::SleepFor(std::min(*backoff, std::max(deadline - absl::Now(), absl::ZeroDuration())));
  *backoff = std::min(*backoff * 2, kMaxPoll);
}

// How far the new replica on `uuid` has come, as the leader's view and the replica's own server
// report it: `state` (its member type and the replica's state) changes rarely, `detail` (applied
// index against the leader's commit index) on every poll while it catches up.
struct Progress {
  std::string state;
  std::string detail;
};

Progress GetProgress(const TabletView& view, const std::string& tablet_id, const std::string& uuid,
                     absl::Time deadline) {
  const pb::RaftPeerPB* peer = FindPeer(view.cstate.committed_config(), uuid);
  Progress p{peer == nullptr ? "not in the committed configuration yet"
                             : ReplicaTypeName(peer->member_type()),
             ""};
  const auto* server = FindTabletServer(view.servers, uuid);
  if (server == nullptr) return p;
  auto replica = GetReplicaStatus(TabletServerAddress(*server), tablet_id, ToDeadline(deadline));
  if (absl::IsNotFound(replica.status())) {
    StrAppend(&p.state, ", no replica on the server yet");
  } else if (!replica.ok()) {
    StrAppend(&p.state, ", its server does not answer");
  } else {
    StrAppend(&p.state, ", replica ", pb::TabletStatePB_Name(replica->state()));
    p.detail = StrCat(", applied index ", replica->last_applied_index(), " of the leader's ",
                      view.cstate.commit_index());
  }
  return p;
}

// Polls the leader (finding it again when leadership moves) until `uuid` is a VOTER of the
// committed configuration, reporting progress to `log` when its state changes (and every
// kProgressInterval). Returns the view that shows it. DEADLINE_EXCEEDED after --timeout_ms;
// FAILED_PRECONDITION if `uuid` leaves the configuration meanwhile.
absl::StatusOr<TabletView> WaitForVoter(TabletView view, const std::string& tablet_id,
                                        const std::string& uuid, const MoveLog& log) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::FromChrono(OperationTimeout());
  absl::Duration backoff = kFirstPoll;
  std::string last_state;
  absl::Time last_print = start;
  while (true) {
    const absl::Status s = RefreshView(tablet_id, deadline, &view);
    if (s.ok()) {
      const pb::RaftPeerPB* peer = FindPeer(view.cstate.committed_config(), uuid);
      if (peer != nullptr && peer->member_type() == pb::RaftPeerPB::VOTER) return view;
      if (peer == nullptr && FindPeer(view.cstate.pending_config(), uuid) == nullptr) {
        return absl::FailedPreconditionError(
            StrCat("tablet server ", uuid, " left the configuration of tablet ", tablet_id,
                   " before it became a VOTER (its replicas now: ",
                   DescribeConfig(view.cstate.committed_config(), view.cstate.leader_uuid()),
                   "; see the leader's log)"));
      }
    }
    // While the leader cannot be asked (an election), say why instead.
    const Progress p = s.ok() ? GetProgress(view, tablet_id, uuid, deadline)
                              : Progress{std::string(s.message()), ""};
    const absl::Time now = absl::Now();
    if (p.state != last_state || now - last_print >= kProgressInterval) {
      log.progress(StrCat("Waiting for tablet server ", uuid, " to become a VOTER of tablet ",
                          tablet_id, ": ", p.state, p.detail, " (",
                          absl::ToInt64Seconds(now - start), " s)\n"));
      last_state = p.state;
      last_print = now;
    }
    if (now >= deadline) {
      return absl::DeadlineExceededError(StrCat(
          "tablet server ", uuid, " did not become a VOTER of tablet ", tablet_id,
          " within --timeout_ms=", OperationTimeout().count(), " (last: ", p.state, p.detail, ")"));
    }
    Backoff(deadline, &backoff);
  }
}

// A voter of the committed configuration to hand leadership to: not `from`, and preferably not
// `avoid` (the replica just added: an established one has served the tablet longer). Empty if
// there is none.
std::string TransferTarget(const pb::ConsensusStatePB& cstate, const std::string& from,
                           const std::string& avoid) {
  std::string fallback;
  for (const auto& p : cstate.committed_config().peers()) {
    if (p.member_type() != pb::RaftPeerPB::VOTER || p.uuid() == from) continue;
    if (p.uuid() != avoid) return p.uuid();
    fallback = p.uuid();
  }
  return fallback;
}

// Moves leadership of the tablet away from view.leader (LeaderStepDown transferring it to
// `target`), asking again every kStepDownRetry while it still leads, until another replica leads.
// Returns the view with the new leader. DEADLINE_EXCEEDED after --timeout_ms; the first
// StepDownLeader's errors.
absl::StatusOr<TabletView> MoveLeadership(TabletView view, const std::string& tablet_id,
                                          const std::string& target, const MoveLog& log) {
  const std::string old_leader = view.leader.uuid;
  const absl::Time deadline = absl::Now() + absl::FromChrono(OperationTimeout());
  log.progress(StrCat("Asking leader ", old_leader, " of tablet ", tablet_id,
                      " to hand leadership to ", target, "\n"));
  BASALT_RETURN_IF_ERROR(StepDownLeader(view.leader, tablet_id, target, ToDeadline(deadline)));
  absl::Time next_ask = absl::Now() + kStepDownRetry;
  absl::Duration backoff = kFirstPoll;
  while (true) {
    Backoff(deadline, &backoff);
    const absl::Status s = RefreshView(tablet_id, deadline, &view);
    if (s.ok() && view.leader.uuid != old_leader) return view;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          StrCat("leadership of tablet ", tablet_id, " did not move away from ", old_leader,
                 " within --timeout_ms=", OperationTimeout().count(),
                 s.ok() ? "" : StrCat(" (last: ", s.message(), ")")));
    }
    // Still the old leader after a while: the transfer did not happen (the target could not win
    // in time); ask again. An error here is a race with leadership moving after all: the next
    // poll sees it.
    if (s.ok() && absl::Now() >= next_ask) {
      StepDownLeader(view.leader, tablet_id, target, ToDeadline(deadline)).IgnoreError();
      next_ask = absl::Now() + kStepDownRetry;
    }
  }
}

// Removes `uuid` from the tablet. Retries UNAVAILABLE (a new leader that has not committed an
// entry of its term yet, a change still pending, leadership moving) with a fresh view until
// --timeout_ms; any other error at once. Returns the new configuration's index.
absl::StatusOr<uint64_t> RemoveAfterMove(TabletView view, const std::string& tablet_id,
                                         const std::string& uuid) {
  const ConfigChange change{pb::REMOVE_PEER, tablet_id, uuid};
  const absl::Time deadline = absl::Now() + absl::FromChrono(OperationTimeout());
  absl::Duration backoff = kFirstPoll;
  while (true) {
    absl::Status s = CheckChange(change, view.servers, view.cstate);
    if (s.ok()) {
      auto index = SendChange(view, change, deadline);
      if (index.ok()) return index;
      s = index.status();
    }
    if (!absl::IsUnavailable(s) || absl::Now() >= deadline) return s;
    do {
      Backoff(deadline, &backoff);
      s = RefreshView(tablet_id, deadline, &view);
    } while (!s.ok() && absl::Now() < deadline);
    if (!s.ok()) return s;
  }
}

// The error of a move that stopped after adding `to`, with how to finish or undo it.
absl::Status StoppedAfterAdd(const absl::Status& s, const std::string& masters,
                             const std::string& tablet_id, const std::string& from,
                             const std::string& to) {
  const std::string verb =
      StrCat("basalt tablet change_config remove_replica ", masters, " ", tablet_id, " ");
  return absl::Status(
      s.code(), StrCat(s.message(), ". Tablet server ", to, " was added to tablet ", tablet_id,
                       " and ", from, " is still a member: finish the move with `", verb, from,
                       "` once ", to, " is a VOTER, or undo it with `", verb, to, "`"));
}

}  // namespace

absl::StatusOr<TabletView> LoadView(const std::string& masters, const std::string& tablet_id) {
  TabletView view;
  BASALT_ASSIGN_OR_RETURN(view.servers, ListTabletServers(masters));
  BASALT_RETURN_IF_ERROR(RefreshView(tablet_id, absl::FromChrono(OperationDeadline()), &view));
  return view;
}

absl::StatusOr<uint64_t> SendChange(const TabletView& view, const ConfigChange& change,
                                    absl::Time deadline) {
  pb::ChangeConfigRequestPB req;
  req.set_dest_uuid(view.leader.uuid);
  req.set_tablet_id(change.tablet_id);
  req.set_type(change.type);
  req.set_peer_uuid(change.ts_uuid);
  if (change.type == pb::ADD_PEER) {
    // CheckChange made sure the master lists the server.
    *req.mutable_peer_address() = FindTabletServer(view.servers, change.ts_uuid)->rpc_address();
  }
  if (change.type != pb::REMOVE_PEER) req.set_member_type(change.member_type);
  const uint64_t cas = view.cstate.committed_config_index();
  req.set_cas_config_index(cas);
  auto resp = SendChangeConfig(view.leader.address, req, ToDeadline(deadline));
  if (!resp.ok()) {
    return ChangeConfigError(resp.status(), change, view.leader.uuid, view.leader.address, cas,
                             OperationTimeout().count());
  }
  return resp->config_index();
}

std::string ServerAddress(const TabletView& view, const std::string& uuid) {
  const auto* s = FindTabletServer(view.servers, uuid);
  return s == nullptr ? "address unknown" : TabletServerAddress(*s);
}

absl::Status MoveReplica(const std::string& masters, const std::string& tablet_id,
                         const std::string& from, const std::string& to, const MoveLog& log) {
  BASALT_RETURN_IF_ERROR(CheckMoveArgs(from, to));
  BASALT_ASSIGN_OR_RETURN(TabletView view, LoadView(masters, tablet_id));
  BASALT_RETURN_IF_ERROR(CheckMove(tablet_id, from, to, view.servers, view.cstate));

  const ConfigChange add{pb::ADD_PEER, tablet_id, to, pb::RaftPeerPB::VOTER};
  BASALT_ASSIGN_OR_RETURN(uint64_t added,
                          SendChange(view, add, absl::FromChrono(OperationDeadline())));
  log.step(StrCat("Added tablet server ", to, " (", ServerAddress(view, to), ") to tablet ",
                  tablet_id, " as a learner (config index ", added, ")\n"));

  auto promoted = WaitForVoter(view, tablet_id, to, log);
  if (absl::IsFailedPrecondition(promoted.status())) {
    // `to` is gone again: nothing is left to finish or undo.
    return absl::Status(promoted.status().code(),
                        StrCat(promoted.status().message(), ". ", from, " was not removed"));
  }
  if (!promoted.ok()) return StoppedAfterAdd(promoted.status(), masters, tablet_id, from, to);
  view = *std::move(promoted);
  log.step(StrCat("Tablet server ", to, " is a VOTER of tablet ", tablet_id, " (config index ",
                  view.cstate.committed_config_index(), ")\n"));

  if (view.leader.uuid == from) {
    const std::string target = TransferTarget(view.cstate, from, to);
    auto moved = MoveLeadership(view, tablet_id, target, log);
    if (!moved.ok()) return StoppedAfterAdd(moved.status(), masters, tablet_id, from, to);
    log.step(StrCat("Leader ", from, " of tablet ", tablet_id, " stepped down; ",
                    moved->leader.uuid, " leads (term ", moved->leader.term, ")\n"));
    view = *std::move(moved);
  }

  auto removed = RemoveAfterMove(view, tablet_id, from);
  if (!removed.ok()) return StoppedAfterAdd(removed.status(), masters, tablet_id, from, to);
  log.step(StrCat("Removed tablet server ", from, " from tablet ", tablet_id, " (config index ",
                  *removed, ")\n"));
  log.step(StrCat("Moved the replica of tablet ", tablet_id, " from ", from, " to ", to, "\n"));
  return absl::OkStatus();
}

}  // namespace basalt::tools
