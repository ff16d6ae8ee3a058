#include "tools/change_config_checks.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "common/strings.h"
#include "rpc/rpc_status.h"

namespace basalt::tools {

absl::StatusOr<pb::RaftPeerPB::MemberType> ParseReplicaType(const std::string& s) {
  const std::string upper = absl::AsciiStrToUpper(s);
  if (upper == "VOTER") return pb::RaftPeerPB::VOTER;
  if (upper == "NON_VOTER") return pb::RaftPeerPB::NON_VOTER;
  return absl::InvalidArgumentError(
      StrCat("invalid replica_type '", s, "': expected VOTER or NON_VOTER"));
}

std::string ReplicaTypeName(pb::RaftPeerPB::MemberType type) {
  return type == pb::RaftPeerPB::NON_VOTER ? "NON_VOTER" : "VOTER";
}

const pb::ListTabletServersResponsePB::ServerPB* FindTabletServer(
    const pb::ListTabletServersResponsePB& servers, const std::string& uuid) {
  for (const auto& s : servers.servers()) {
    if (s.uuid() == uuid) return &s;
  }
  return nullptr;
}

const pb::RaftPeerPB* FindPeer(const pb::RaftConfigPB& config, const std::string& uuid) {
  for (const auto& p : config.peers()) {
    if (p.uuid() == uuid) return &p;
  }
  return nullptr;
}

std::string DescribeConfig(const pb::RaftConfigPB& config, const std::string& leader_uuid) {
  std::string out;
  for (const auto& p : config.peers()) {
    StrAppend(&out, out.empty() ? "" : ", ", p.uuid(), " (", ReplicaTypeName(p.member_type()),
              p.uuid() == leader_uuid ? ", leader" : "", ")");
  }
  return out.empty() ? "(none)" : out;
}

std::string DescribeChange(const ConfigChange& change) {
  switch (change.type) {
    case pb::ADD_PEER:
      return StrCat("add tablet server ", change.ts_uuid, " to tablet ", change.tablet_id, " as ",
                    ReplicaTypeName(change.member_type));
    case pb::REMOVE_PEER:
      return StrCat("remove tablet server ", change.ts_uuid, " from tablet ", change.tablet_id);
    case pb::MODIFY_PEER:
      return StrCat("make the replica of tablet ", change.tablet_id, " on tablet server ",
                    change.ts_uuid, " a ", ReplicaTypeName(change.member_type));
    default:
      return StrCat("change the configuration of tablet ", change.tablet_id);
  }
}

namespace {

absl::Status UnknownServer(const std::string& uuid) {
  return absl::NotFoundError(StrCat("unknown tablet server ", uuid,
                                    ": the master lists no tablet server with that uuid (see "
                                    "basalt tserver list)"));
}

// The committed configuration, for messages: "its replicas: a (VOTER, leader), ...".
std::string Replicas(const pb::ConsensusStatePB& cstate) {
  return StrCat("its replicas: ", DescribeConfig(cstate.committed_config(), cstate.leader_uuid()));
}

absl::Status CheckAdd(const ConfigChange& change,
                      const pb::ListTabletServersResponsePB::ServerPB& server,
                      const pb::ConsensusStatePB& cstate) {
  if (const pb::RaftPeerPB* p = FindPeer(cstate.committed_config(), change.ts_uuid)) {
    return absl::AlreadyExistsError(StrCat("tablet server ", change.ts_uuid,
                                           " already holds a replica of tablet ", change.tablet_id,
                                           " (", ReplicaTypeName(p->member_type()), ")"));
  }
  // A replica on a server that does not run would be a member that never catches up.
  if (!server.live()) {
    return absl::FailedPreconditionError(
        StrCat("tablet server ", change.ts_uuid, " is not live (the master last heard from it ",
               server.millis_since_heartbeat(), " ms ago); a new replica needs a running server"));
  }
  return absl::OkStatus();
}

// REMOVE_PEER and MODIFY_PEER: the server must hold a replica, and it must not be the leader's
// (the leader refuses to remove or demote itself; say how to get there instead).
absl::Status CheckMember(const ConfigChange& change, const pb::ConsensusStatePB& cstate) {
  const pb::RaftPeerPB* p = FindPeer(cstate.committed_config(), change.ts_uuid);
  if (p == nullptr) {
    return absl::NotFoundError(StrCat("tablet server ", change.ts_uuid,
                                      " holds no replica of tablet ", change.tablet_id, " (",
                                      Replicas(cstate), ")"));
  }
  if (change.type == pb::MODIFY_PEER && p->member_type() == change.member_type) {
    return absl::FailedPreconditionError(
        StrCat("the replica of tablet ", change.tablet_id, " on tablet server ", change.ts_uuid,
               " is already a ", ReplicaTypeName(change.member_type)));
  }
  const bool demotes =
      change.type == pb::REMOVE_PEER || change.member_type != pb::RaftPeerPB::VOTER;
  if (demotes && change.ts_uuid == cstate.leader_uuid()) {
    return absl::FailedPreconditionError(
        StrCat("tablet server ", change.ts_uuid, " holds the leader of tablet ", change.tablet_id,
               ", which cannot ", change.type == pb::REMOVE_PEER ? "remove" : "demote",
               " itself: move leadership first (basalt tablet leader_step_down), or use "
               "change_config move_replica"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckChange(const ConfigChange& change, const pb::ListTabletServersResponsePB& servers,
                         const pb::ConsensusStatePB& cstate) {
  if (change.type != pb::ADD_PEER && change.type != pb::REMOVE_PEER &&
      change.type != pb::MODIFY_PEER) {
    return absl::InvalidArgumentError(StrCat("unknown configuration change type ", change.type));
  }
  const pb::ListTabletServersResponsePB::ServerPB* server =
      FindTabletServer(servers, change.ts_uuid);
  // A member the master does not list (a server that is gone for good, not re-registered after a
  // master restart) may still be removed or modified: that is how its replicas are replaced.
  const bool member = FindPeer(cstate.committed_config(), change.ts_uuid) != nullptr;
  if (server == nullptr && (change.type == pb::ADD_PEER || !member)) {
    return UnknownServer(change.ts_uuid);
  }
  if (cstate.has_pending_config()) {
    return absl::UnavailableError(
        StrCat("another configuration change of tablet ", change.tablet_id,
               " is pending (pending replicas: ",
               DescribeConfig(cstate.pending_config(), cstate.leader_uuid()), "); retry"));
  }
  if (change.type == pb::ADD_PEER) return CheckAdd(change, *server, cstate);
  return CheckMember(change, cstate);
}

absl::Status CheckMoveArgs(const std::string& from_uuid, const std::string& to_uuid) {
  if (from_uuid == to_uuid) {
    return absl::InvalidArgumentError(StrCat("from_ts_uuid and to_ts_uuid are both ", from_uuid,
                                             ": a replica cannot move to the server it is on"));
  }
  return absl::OkStatus();
}

absl::Status CheckMove(const std::string& tablet_id, const std::string& from_uuid,
                       const std::string& to_uuid, const pb::ListTabletServersResponsePB& servers,
                       const pb::ConsensusStatePB& cstate) {
  const pb::RaftPeerPB* from = FindPeer(cstate.committed_config(), from_uuid);
  if (from == nullptr) {
    if (FindTabletServer(servers, from_uuid) == nullptr) return UnknownServer(from_uuid);
    return absl::NotFoundError(StrCat("tablet server ", from_uuid, " holds no replica of tablet ",
                                      tablet_id, " (", Replicas(cstate), ")"));
  }
  if (from->member_type() != pb::RaftPeerPB::VOTER) {
    return absl::FailedPreconditionError(
        StrCat("the replica of tablet ", tablet_id, " on tablet server ", from_uuid,
               " is a NON_VOTER; move_replica moves voters (use add_replica and remove_replica)"));
  }
  return CheckChange(ConfigChange{pb::ADD_PEER, tablet_id, to_uuid, pb::RaftPeerPB::VOTER}, servers,
                     cstate);
}

absl::Status ChangeConfigError(const absl::Status& s, const ConfigChange& change,
                               const std::string& leader_uuid, const std::string& leader_address,
                               uint64_t cas_index, int64_t timeout_ms) {
  const std::optional<pb::ErrorDetailPB> detail = GetErrorDetail(s);
  const pb::ErrorDetailPB::Code code = detail ? detail->code() : pb::ErrorDetailPB::UNKNOWN_ERROR;
  const std::string leader = StrCat("leader ", leader_uuid, " (", leader_address, ")");
  const std::string what = DescribeChange(change);
  std::string msg;
  if (absl::IsUnimplemented(s)) {
    msg = StrCat(
        "tablet server ", leader_uuid, " (", leader_address,
        ") does not implement ConsensusService.ChangeConfig (an older version?): ", s.message());
  } else if (code == pb::ErrorDetailPB::NOT_THE_LEADER) {
    msg = StrCat(leader_uuid, " is no longer the leader of tablet ", change.tablet_id,
                 detail->leader_uuid().empty() ? "" : StrCat(" (", detail->leader_uuid(), " is)"),
                 "; nothing changed, retry");
  } else if (code == pb::ErrorDetailPB::WRONG_SERVER_UUID) {
    msg = StrCat("the server at ", leader_address, " is no longer tablet server ", leader_uuid,
                 "; retry");
  } else if (code == pb::ErrorDetailPB::TABLET_NOT_FOUND) {
    msg =
        StrCat("tablet ", change.tablet_id, " is no longer on its leader ", leader_uuid, "; retry");
  } else if (absl::IsUnavailable(s)) {
    // The contract's UNAVAILABLE: a change is pending, or the leader has not committed an entry of
    // its term yet. The server's own words follow (they also cover an unreachable leader).
    msg = StrCat("another configuration change of tablet ", change.tablet_id,
                 " is pending, or its leader has just been elected; retry (", leader, ": ",
                 s.message(), ")");
  } else if (absl::IsFailedPrecondition(s)) {
    msg = StrCat(leader, " refused to ", what, ": ", s.message(),
                 " (the configuration was read at index ", cas_index,
                 "; if it has changed since, look at it again before retrying)");
  } else if (absl::IsDeadlineExceeded(s)) {
    msg = StrCat("the change to ", what, " was not committed within --timeout_ms=", timeout_ms,
                 "; it may still take effect: check the tablet's replicas (basalt cluster ksck) "
                 "before retrying");
  } else {
    msg = StrCat(leader, " failed to ", what, ": ", s.message());
  }
  return absl::Status(s.code(), msg);
}

}  // namespace basalt::tools
