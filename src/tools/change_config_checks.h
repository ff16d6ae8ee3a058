#pragma once

// The pure part of `basalt tablet change_config` (docs/cli.md): parsing <replica_type>, checking a
// change against the master's list of tablet servers and the leader's consensus state before
// anything is sent, and turning the leader's ChangeConfig errors into messages an operator can
// act on. No I/O (tool_tablet_change_config.cc makes the calls); tested in
// change_config_checks_test.cc.
//
// The checks exist so that bad input fails with a message naming it and changes nothing; the
// leader checks again (the compare-and-set on the committed configuration's index makes a check
// against a stale view fail on the server rather than act).
//
// Functions only; thread-safe.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/common.pb.h"
#include "proto/consensus.pb.h"
#include "proto/master.pb.h"

namespace basalt::tools {

// <replica_type>: VOTER or NON_VOTER, in any case. INVALID_ARGUMENT naming the value otherwise.
absl::StatusOr<pb::RaftPeerPB::MemberType> ParseReplicaType(const std::string& s);
// "VOTER" or "NON_VOTER".
std::string ReplicaTypeName(pb::RaftPeerPB::MemberType type);

// The entry of `servers` with this uuid, or nullptr (a pointer into `servers`).
const pb::ListTabletServersResponsePB::ServerPB* FindTabletServer(
    const pb::ListTabletServersResponsePB& servers, const std::string& uuid);
// The member `uuid` of `config`, or nullptr (a pointer into `config`).
const pb::RaftPeerPB* FindPeer(const pb::RaftConfigPB& config, const std::string& uuid);
// The members with their types, the leader marked: "a (VOTER, leader), b (VOTER), c (NON_VOTER)".
std::string DescribeConfig(const pb::RaftConfigPB& config, const std::string& leader_uuid);

// One membership change as the operator asked for it.
struct ConfigChange {
  pb::ChangeConfigTypePB type = pb::UNKNOWN_CHANGE_TYPE;
  std::string tablet_id;
  std::string ts_uuid;
  pb::RaftPeerPB::MemberType member_type = pb::RaftPeerPB::VOTER;  // ADD_PEER and MODIFY_PEER.
};

// The change in words, for messages: "add tablet server X to tablet T as VOTER", "remove ...",
// "make the replica of tablet T on tablet server X a NON_VOTER".
std::string DescribeChange(const ConfigChange& change);

// Checks `change` against the tablet servers the master lists and `cstate`, the consensus state
// its leader reported. Errors, each naming the tablet and the server:
//   UNAVAILABLE          another configuration change is pending (cstate has a pending config).
//   NOT_FOUND            ts_uuid is not a tablet server the master lists (for remove and modify,
//                        a member the master does not list, such as a server gone for good, is
//                        accepted); remove or modify of a server that holds no replica.
//   ALREADY_EXISTS       add of a server that holds a replica already.
//   FAILED_PRECONDITION  add on a server the master does not see as live; remove or demotion of
//                        the leader (move leadership first); modify to the type it has.
//   INVALID_ARGUMENT     an unknown change type.
absl::Status CheckChange(const ConfigChange& change, const pb::ListTabletServersResponsePB& servers,
                         const pb::ConsensusStatePB& cstate);

// move_replica's checks of its arguments alone: INVALID_ARGUMENT when `from` and `to` are the same
// uuid. Made before any RPC.
absl::Status CheckMoveArgs(const std::string& from_uuid, const std::string& to_uuid);

// move_replica's checks against the cluster, before it adds anything: `from` holds a VOTER replica
// (NOT_FOUND if none, FAILED_PRECONDITION for a NON_VOTER), and adding `to` as VOTER passes
// CheckChange.
absl::Status CheckMove(const std::string& tablet_id, const std::string& from_uuid,
                       const std::string& to_uuid, const pb::ListTabletServersResponsePB& servers,
                       const pb::ConsensusStatePB& cstate);

// Turns the error `s` of a ChangeConfig for `change`, sent to the leader `leader_uuid` at
// `leader_address` with cas_config_index `cas_index`, into a status of the same code whose message
// says what happened and what to do (retry, look again, move leadership first). `timeout_ms` is
// the deadline the call had, for a DEADLINE_EXCEEDED message.
absl::Status ChangeConfigError(const absl::Status& s, const ConfigChange& change,
                               const std::string& leader_uuid, const std::string& leader_address,
                               uint64_t cas_index, int64_t timeout_ms);

}  // namespace basalt::tools
