// Tests of the checks `basalt tablet change_config` makes before it sends anything, and of the
// messages it makes of the leader's errors (change_config_checks.h).

#include "tools/change_config_checks.h"

#include <gtest/gtest.h>

#include <string>

#include "common/status_test_util.h"
#include "common/strings.h"
#include "rpc/rpc_status.h"

namespace basalt::tools {
namespace {
namespace change_config_checks_test_file {

using Type = pb::RaftPeerPB::MemberType;

// The master's list: a, b, c, d live; e listed but not live.
pb::ListTabletServersResponsePB Servers() {
  pb::ListTabletServersResponsePB servers;
  for (const char* uuid : {"a", "b", "c", "d", "e"}) {
    auto* s = servers.add_servers();
    s->set_uuid(uuid);
    s->mutable_rpc_address()->set_host("127.0.0.1");
    s->mutable_rpc_address()->set_port(7050);
    s->set_live(std::string(uuid) != "e");
    s->set_millis_since_heartbeat(std::string(uuid) == "e" ? 9000 : 100);
  }
  return servers;
}

void AddPeer(pb::RaftConfigPB* config, const std::string& uuid, Type type) {
  auto* p = config->add_peers();
  p->set_uuid(uuid);
  p->set_member_type(type);
}

// a leads; a, b, c vote; "gone" (a server the master no longer lists) is a learner; index 7.
pb::ConsensusStatePB State() {
  pb::ConsensusStatePB cstate;
  cstate.set_leader_uuid("a");
  cstate.set_committed_config_index(7);
  AddPeer(cstate.mutable_committed_config(), "a", pb::RaftPeerPB::VOTER);
  AddPeer(cstate.mutable_committed_config(), "b", pb::RaftPeerPB::VOTER);
  AddPeer(cstate.mutable_committed_config(), "c", pb::RaftPeerPB::VOTER);
  AddPeer(cstate.mutable_committed_config(), "gone", pb::RaftPeerPB::NON_VOTER);
  return cstate;
}

ConfigChange Change(pb::ChangeConfigTypePB type, const std::string& uuid,
                    Type member_type = pb::RaftPeerPB::VOTER) {
  return ConfigChange{type, "t1", uuid, member_type};
}

// `s` has `code` and its message contains `part`.
void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& part) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(part), std::string::npos) << "want '" << part << "' in: " << s;
}

TEST(ChangeConfigChecksTest, ParseReplicaType) {
  EXPECT_EQ(*ParseReplicaType("VOTER"), pb::RaftPeerPB::VOTER);
  EXPECT_EQ(*ParseReplicaType("non_voter"), pb::RaftPeerPB::NON_VOTER);
  EXPECT_EQ(*ParseReplicaType("Non_Voter"), pb::RaftPeerPB::NON_VOTER);
  for (const char* bad : {"", "LEARNER", "VOTERS", "NON-VOTER", " VOTER"}) {
    ExpectError(ParseReplicaType(bad).status(), absl::StatusCode::kInvalidArgument,
                StrCat("invalid replica_type '", bad, "': expected VOTER or NON_VOTER"));
  }
}

TEST(ChangeConfigChecksTest, DescribeConfigMarksTheLeader) {
  EXPECT_EQ(DescribeConfig(State().committed_config(), "a"),
            "a (VOTER, leader), b (VOTER), c (VOTER), gone (NON_VOTER)");
  EXPECT_EQ(DescribeConfig(pb::RaftConfigPB(), "a"), "(none)");
}

TEST(ChangeConfigChecksTest, ValidChangesPass) {
  const auto servers = Servers();
  const auto cstate = State();
  BASALT_EXPECT_OK(CheckChange(Change(pb::ADD_PEER, "d"), servers, cstate));
  BASALT_EXPECT_OK(
      CheckChange(Change(pb::ADD_PEER, "d", pb::RaftPeerPB::NON_VOTER), servers, cstate));
  BASALT_EXPECT_OK(CheckChange(Change(pb::REMOVE_PEER, "b"), servers, cstate));
  BASALT_EXPECT_OK(
      CheckChange(Change(pb::MODIFY_PEER, "b", pb::RaftPeerPB::NON_VOTER), servers, cstate));
  // A member the master does not list may be removed or promoted (a server gone for good).
  BASALT_EXPECT_OK(CheckChange(Change(pb::REMOVE_PEER, "gone"), servers, cstate));
  BASALT_EXPECT_OK(CheckChange(Change(pb::MODIFY_PEER, "gone"), servers, cstate));
}

TEST(ChangeConfigChecksTest, BadChangesNameTheProblem) {
  const auto servers = Servers();
  const auto cstate = State();
  ExpectError(CheckChange(Change(pb::ADD_PEER, "zz"), servers, cstate), absl::StatusCode::kNotFound,
              "unknown tablet server zz");
  ExpectError(CheckChange(Change(pb::REMOVE_PEER, "zz"), servers, cstate),
              absl::StatusCode::kNotFound, "unknown tablet server zz");
  ExpectError(CheckChange(Change(pb::MODIFY_PEER, "zz"), servers, cstate),
              absl::StatusCode::kNotFound, "unknown tablet server zz");
  // Adding "gone" needs its address, which only the master's list has.
  ExpectError(CheckChange(Change(pb::ADD_PEER, "gone"), servers, cstate),
              absl::StatusCode::kNotFound, "unknown tablet server gone");
  ExpectError(CheckChange(Change(pb::ADD_PEER, "b"), servers, cstate),
              absl::StatusCode::kAlreadyExists,
              "tablet server b already holds a replica of tablet t1 (VOTER)");
  ExpectError(CheckChange(Change(pb::ADD_PEER, "e"), servers, cstate),
              absl::StatusCode::kFailedPrecondition,
              "tablet server e is not live (the master last heard from it 9000 ms ago)");
  ExpectError(CheckChange(Change(pb::REMOVE_PEER, "d"), servers, cstate),
              absl::StatusCode::kNotFound,
              "tablet server d holds no replica of tablet t1 (its replicas: a (VOTER, leader)");
  ExpectError(CheckChange(Change(pb::MODIFY_PEER, "d"), servers, cstate),
              absl::StatusCode::kNotFound, "tablet server d holds no replica of tablet t1");
  ExpectError(CheckChange(Change(pb::MODIFY_PEER, "b"), servers, cstate),
              absl::StatusCode::kFailedPrecondition,
              "the replica of tablet t1 on tablet server b is already a VOTER");
  ExpectError(CheckChange(Change(pb::REMOVE_PEER, "a"), servers, cstate),
              absl::StatusCode::kFailedPrecondition,
              "tablet server a holds the leader of tablet t1, which cannot remove itself");
  ExpectError(CheckChange(Change(pb::MODIFY_PEER, "a", pb::RaftPeerPB::NON_VOTER), servers, cstate),
              absl::StatusCode::kFailedPrecondition, "which cannot demote itself");
  ExpectError(CheckChange(Change(pb::UNKNOWN_CHANGE_TYPE, "b"), servers, cstate),
              absl::StatusCode::kInvalidArgument, "unknown configuration change type");
}

TEST(ChangeConfigChecksTest, PendingChangeIsRetryable) {
  auto cstate = State();
  AddPeer(cstate.mutable_pending_config(), "a", pb::RaftPeerPB::VOTER);
  ExpectError(CheckChange(Change(pb::ADD_PEER, "d"), Servers(), cstate),
              absl::StatusCode::kUnavailable,
              "another configuration change of tablet t1 is pending (pending replicas: a (VOTER, "
              "leader)); retry");
  // Bad input is still reported as such first.
  ExpectError(CheckChange(Change(pb::ADD_PEER, "zz"), Servers(), cstate),
              absl::StatusCode::kNotFound, "unknown tablet server zz");
}

TEST(ChangeConfigChecksTest, Move) {
  const auto servers = Servers();
  const auto cstate = State();
  ExpectError(CheckMoveArgs("b", "b"), absl::StatusCode::kInvalidArgument,
              "from_ts_uuid and to_ts_uuid are both b");
  BASALT_EXPECT_OK(CheckMoveArgs("b", "d"));
  BASALT_EXPECT_OK(CheckMove("t1", "b", "d", servers, cstate));
  // Moving the leader's replica is allowed: move_replica moves leadership first.
  BASALT_EXPECT_OK(CheckMove("t1", "a", "d", servers, cstate));
  ExpectError(CheckMove("t1", "zz", "d", servers, cstate), absl::StatusCode::kNotFound,
              "unknown tablet server zz");
  ExpectError(CheckMove("t1", "d", "b", servers, cstate), absl::StatusCode::kNotFound,
              "tablet server d holds no replica of tablet t1");
  ExpectError(CheckMove("t1", "gone", "d", servers, cstate), absl::StatusCode::kFailedPrecondition,
              "is a NON_VOTER; move_replica moves voters");
  ExpectError(CheckMove("t1", "b", "c", servers, cstate), absl::StatusCode::kAlreadyExists,
              "tablet server c already holds a replica of tablet t1");
  ExpectError(CheckMove("t1", "b", "zz", servers, cstate), absl::StatusCode::kNotFound,
              "unknown tablet server zz");
  ExpectError(CheckMove("t1", "b", "e", servers, cstate), absl::StatusCode::kFailedPrecondition,
              "tablet server e is not live");
}

TEST(ChangeConfigChecksTest, ServerErrorsBecomeReadable) {
  const ConfigChange add = Change(pb::ADD_PEER, "d");
  auto map = [&](const absl::Status& s) {
    return ChangeConfigError(s, add, "a", "127.0.0.1:7050", 7, 30000);
  };
  ExpectError(map(absl::UnavailableError("a configuration change is pending")),
              absl::StatusCode::kUnavailable,
              "another configuration change of tablet t1 is pending, or its leader has just been "
              "elected; retry (leader a (127.0.0.1:7050): a configuration change is pending)");
  pb::ErrorDetailPB not_leader;
  not_leader.set_code(pb::ErrorDetailPB::NOT_THE_LEADER);
  not_leader.set_leader_uuid("b");
  ExpectError(map(WithErrorDetail(absl::UnavailableError("not the leader"), not_leader)),
              absl::StatusCode::kUnavailable,
              "a is no longer the leader of tablet t1 (b is); nothing changed, retry");
  ExpectError(map(absl::FailedPreconditionError("config index is 9, not 7")),
              absl::StatusCode::kFailedPrecondition,
              "leader a (127.0.0.1:7050) refused to add tablet server d to tablet t1 as VOTER: "
              "config index is 9, not 7 (the configuration was read at index 7");
  ExpectError(map(absl::DeadlineExceededError("Deadline Exceeded")),
              absl::StatusCode::kDeadlineExceeded,
              "the change to add tablet server d to tablet t1 as VOTER was not committed within "
              "--timeout_ms=30000; it may still take effect");
  ExpectError(map(absl::UnimplementedError("")), absl::StatusCode::kUnimplemented,
              "tablet server a (127.0.0.1:7050) does not implement ConsensusService.ChangeConfig");
  pb::ErrorDetailPB wrong;
  wrong.set_code(pb::ErrorDetailPB::WRONG_SERVER_UUID);
  ExpectError(map(WithErrorDetail(absl::FailedPreconditionError("uuid x"), wrong)),
              absl::StatusCode::kFailedPrecondition,
              "the server at 127.0.0.1:7050 is no longer tablet server a; retry");
  ExpectError(
      map(absl::InternalError("boom")), absl::StatusCode::kInternal,
      "leader a (127.0.0.1:7050) failed to add tablet server d to tablet t1 as VOTER: boom");
}

}  // namespace change_config_checks_test_file
}  // namespace
}  // namespace basalt::tools
