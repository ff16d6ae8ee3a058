// Tests of `basalt tablet change_config add_replica|remove_replica|change_replica_type|
// move_replica` (docs/cli.md), run as the real binary against a cluster of real daemons: four
// tablet servers and a one-tablet table with three replicas, so one server is free to take a
// replica.
//
// The configuration is read the way the verbs read it: ConsensusService.GetConsensusState of the
// tablet's leader (its committed configuration and that configuration's op index).

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/tserver.pb.h"
#include "rpc/rpc_status.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/cli_test_util.h"
#include "tests/client_test_util.h"
#include "tests/client_writer_util.h"

namespace basalt::client_test {
namespace {
namespace cli_change_config_test_file {

using client::Session;
using client::Table;
using client::WriteOperation;

// The voters of a configuration.
std::set<std::string> Voters(const pb::RaftConfigPB& config) {
  std::set<std::string> voters;
  for (const auto& p : config.peers()) {
    if (p.member_type() == pb::RaftPeerPB::VOTER) voters.insert(p.uuid());
  }
  return voters;
}

std::string Join(const std::set<std::string>& uuids) {
  std::string out;
  for (const auto& u : uuids) StrAppend(&out, out.empty() ? "" : ",", u);
  return out;
}

// A cluster of four tablet servers with a client, a one-tablet table "t" with three replicas,
// and a scratch directory for the CLI's output.
class CliChangeConfigTest : public ClientClusterTestBase {
 protected:
  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = ClientClusterTestBase::ClusterOptions();
    o.num_tablet_servers = 4;
    return o;
  }

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ClientClusterTestBase::SetUp());
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    scratch_ = StrCat(::testing::TempDir(), "/cli_change_config-", info->name(), "-", getpid());
    ASSERT_EQ(std::system(StrCat("mkdir -p ", ShellQuote(scratch_)).c_str()), 0);
    master_ = cluster_->master_addresses();

    ASSERT_NO_FATAL_FAILURE(CreateTable("t", 0, {}, &table_));
    for (int i = 0; i < cluster_->num_tablet_servers() && tablet_id_.empty(); ++i) {
      pb::ListTabletsResponsePB listing;
      ASSERT_OK(cluster_->ListTablets(i, &listing));
      for (const auto& t : listing.tablets()) {
        if (t.table_name() == "t") tablet_id_ = t.tablet_id();
      }
    }
    ASSERT_FALSE(tablet_id_.empty());
    // The three replicas, and the one server without a replica.
    pb::ConsensusStatePB cstate;
    ASSERT_NO_FATAL_FAILURE(WaitForVoters(3, &cstate));
    replicas_ = Voters(cstate.committed_config());
    for (int i = 0; i < cluster_->num_tablet_servers(); ++i) {
      const std::string uuid = cluster_->tablet_server(i)->uuid();
      if (replicas_.count(uuid) == 0) spare_ = uuid;
    }
    ASSERT_FALSE(spare_.empty());
  }

  void TearDown() override {
    std::system(StrCat("rm -rf ", ShellQuote(scratch_)).c_str());
    ClientClusterTestBase::TearDown();
  }

  CliResult Basalt(const std::vector<std::string>& args) { return RunBasalt(args, scratch_); }

  // Runs `basalt tablet change_config <verb> <master> <tablet> <rest...>`.
  CliResult ChangeConfig(const std::string& verb, const std::string& tablet_id,
                         const std::vector<std::string>& rest) {
    std::vector<std::string> args = {"tablet", "change_config", verb, master_, tablet_id};
    args.insert(args.end(), rest.begin(), rest.end());
    return Basalt(args);
  }

  // The tablet's leader's consensus state (GetConsensusState), found through the replicas'
  // reports.
  absl::StatusOr<pb::ConsensusStatePB> LeaderState() {
    auto leader = cluster_->WaitForTabletLeader(tablet_id_, absl::Seconds(30));
    if (!leader.ok()) return leader.status();
    auto stub = pb::ConsensusService::NewStub(cluster_->tserver_channel(leader->ts_index));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::GetConsensusStateRequestPB req;
    req.set_dest_uuid(leader->uuid);
    req.set_tablet_id(tablet_id_);
    pb::GetConsensusStateResponsePB resp;
    absl::Status s = FromGrpcStatus(stub->GetConsensusState(&ctx, req, &resp));
    if (!s.ok()) return s;
    if (resp.role() != pb::LEADER) return absl::UnavailableError("the replica no longer leads");
    return resp.cstate();
  }

  // Waits until the leader's committed configuration has exactly the voters `want` (and no
  // pending configuration); *cstate (if given) gets that state.
  void WaitForVoterSet(const std::set<std::string>& want, pb::ConsensusStatePB* cstate = nullptr) {
    pb::ConsensusStatePB last;
    ASSERT_OK(WaitFor(absl::Seconds(60), StrCat("voters ", Join(want)), [&]() -> absl::Status {
      auto s = LeaderState();
      if (!s.ok()) return s.status();
      last = *s;
      const std::set<std::string> got = Voters(s->committed_config());
      if (got != want || s->has_pending_config()) {
        return absl::UnavailableError(
            StrCat("voters ", Join(got), s->has_pending_config() ? " (change pending)" : ""));
      }
      return absl::OkStatus();
    }));
    if (cstate != nullptr) *cstate = last;
  }

  // Waits until the committed configuration has `n` voters.
  void WaitForVoters(size_t n, pb::ConsensusStatePB* cstate) {
    ASSERT_OK(WaitFor(absl::Seconds(60), StrCat(n, " voters"), [&]() -> absl::Status {
      auto s = LeaderState();
      if (!s.ok()) return s.status();
      *cstate = *s;
      const size_t got = Voters(s->committed_config()).size();
      return got == n ? absl::OkStatus() : absl::UnavailableError(StrCat(got, " voters"));
    }));
  }

  std::string scratch_;
  std::string master_;
  std::shared_ptr<Table> table_;
  std::string tablet_id_;
  std::set<std::string> replicas_;  // The servers of the three initial replicas.
  std::string spare_;               // The server without a replica.
};

TEST_F(CliChangeConfigTest, BadInputFailsWithTheNamedErrorAndChangesNothing) {
  auto before = LeaderState();
  BASALT_ASSERT_OK(before);
  const std::string leader = before->leader_uuid();
  std::string follower;
  for (const auto& r : replicas_) {
    if (r != leader) follower = r;
  }
  const std::string t = tablet_id_;
  struct Case {
    std::string verb;
    std::string tablet;
    std::vector<std::string> rest;
    std::string error;
  };
  const std::vector<Case> cases = {
      // Unknown tablet.
      {"add_replica",
       "no-such-tablet",
       {spare_, "VOTER"},
       "no tablet server hosts tablet no-such-tablet"},
      {"remove_replica",
       "no-such-tablet",
       {follower},
       "no tablet server hosts tablet no-such-tablet"},
      {"change_replica_type",
       "no-such-tablet",
       {follower, "NON_VOTER"},
       "no tablet server hosts tablet no-such-tablet"},
      {"move_replica",
       "no-such-tablet",
       {follower, spare_},
       "no tablet server hosts tablet no-such-tablet"},
      // Unknown tablet server.
      {"add_replica", t, {"no-such-ts", "VOTER"}, "unknown tablet server no-such-ts"},
      {"remove_replica", t, {"no-such-ts"}, "unknown tablet server no-such-ts"},
      {"change_replica_type", t, {"no-such-ts", "VOTER"}, "unknown tablet server no-such-ts"},
      {"move_replica", t, {follower, "no-such-ts"}, "unknown tablet server no-such-ts"},
      {"move_replica", t, {"no-such-ts", spare_}, "unknown tablet server no-such-ts"},
      // A replica type other than VOTER / NON_VOTER.
      {"add_replica",
       t,
       {spare_, "LEARNER"},
       "invalid replica_type 'LEARNER': expected VOTER or NON_VOTER"},
      {"change_replica_type",
       t,
       {follower, "BOSS"},
       "invalid replica_type 'BOSS': expected VOTER or NON_VOTER"},
      // A server that holds a replica already / holds none.
      {"add_replica",
       t,
       {follower, "VOTER"},
       StrCat("tablet server ", follower, " already holds a replica of tablet ", t)},
      {"add_replica",
       t,
       {follower, "NON_VOTER"},
       StrCat("tablet server ", follower, " already holds a replica of tablet ", t)},
      {"remove_replica",
       t,
       {spare_},
       StrCat("tablet server ", spare_, " holds no replica of tablet ", t)},
      {"change_replica_type",
       t,
       {spare_, "VOTER"},
       StrCat("tablet server ", spare_, " holds no replica of tablet ", t)},
      {"move_replica",
       t,
       {spare_, follower},
       StrCat("tablet server ", spare_, " holds no replica of tablet ", t)},
      {"move_replica",
       t,
       {follower, leader},
       StrCat("tablet server ", leader, " already holds a replica of tablet ", t)},
      // From and to the same server.
      {"move_replica",
       t,
       {follower, follower},
       StrCat("from_ts_uuid and to_ts_uuid are both ", follower)},
      // Changes the leader would refuse.
      {"change_replica_type",
       t,
       {follower, "VOTER"},
       StrCat("the replica of tablet ", t, " on tablet server ", follower, " is already a VOTER")},
      {"remove_replica",
       t,
       {leader},
       StrCat("tablet server ", leader, " holds the leader of tablet ", t)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(StrCat(c.verb, " ", c.tablet, " ", c.rest[0]));
    const CliResult r = ChangeConfig(c.verb, c.tablet, c.rest);
    EXPECT_EQ(r.rc, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(StrCat("Error: ", c.error)), std::string::npos)
        << "want: " << c.error << "\ngot: " << r.err;
    EXPECT_EQ(r.out, "");
  }
  // The framework's own argument checks.
  const CliResult missing = ChangeConfig("add_replica", t, {spare_});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("missing argument <replica_type>"), std::string::npos) << missing.err;

  // Nothing changed: the same committed configuration at the same index, nothing pending, and no
  // replica on the spare server.
  auto after = LeaderState();
  BASALT_ASSERT_OK(after);
  EXPECT_EQ(after->committed_config_index(), before->committed_config_index());
  EXPECT_EQ(after->committed_config().DebugString(), before->committed_config().DebugString());
  EXPECT_FALSE(after->has_pending_config());
  pb::ListTabletsResponsePB spare_tablets;
  ASSERT_OK(cluster_->ListTablets(cluster_->TabletServerIndexByUuid(spare_), &spare_tablets));
  for (const auto& tablet : spare_tablets.tablets()) EXPECT_NE(tablet.tablet_id(), t);
}

TEST_F(CliChangeConfigTest, AddVoterThenRemoveIt) {
  CliResult add = ChangeConfig("add_replica", tablet_id_, {spare_, "VOTER"});
  ASSERT_EQ(add.rc, 0) << add.out << add.err;
  EXPECT_NE(add.out.find(StrCat("Added tablet server ", spare_)), std::string::npos) << add.out;
  // The new replica gets a tablet copy from the leader and is then promoted.
  std::set<std::string> four = replicas_;
  four.insert(spare_);
  ASSERT_NO_FATAL_FAILURE(WaitForVoterSet(four));
  ASSERT_OK(cluster_->WaitForTabletRunning(tablet_id_, {cluster_->TabletServerIndexByUuid(spare_)},
                                           absl::Seconds(30)));

  CliResult remove = ChangeConfig("remove_replica", tablet_id_, {spare_});
  ASSERT_EQ(remove.rc, 0) << remove.out << remove.err;
  EXPECT_NE(remove.out.find(StrCat("Removed tablet server ", spare_, " from tablet ", tablet_id_)),
            std::string::npos)
      << remove.out;
  ASSERT_NO_FATAL_FAILURE(WaitForVoterSet(replicas_));
  // Removing it again: it holds none now.
  CliResult again = ChangeConfig("remove_replica", tablet_id_, {spare_});
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.err.find("holds no replica"), std::string::npos) << again.err;
}

TEST_F(CliChangeConfigTest, AddNonVoterThenPromoteAndDemote) {
  CliResult add = ChangeConfig("add_replica", tablet_id_, {spare_, "non_voter"});
  ASSERT_EQ(add.rc, 0) << add.out << add.err;
  EXPECT_NE(add.out.find("as a NON_VOTER"), std::string::npos) << add.out;
  ASSERT_OK(cluster_->WaitForTabletRunning(tablet_id_, {cluster_->TabletServerIndexByUuid(spare_)},
                                           absl::Seconds(60)));
  // A learner: still three voters, and the learner stays one.
  pb::ConsensusStatePB cstate;
  ASSERT_NO_FATAL_FAILURE(WaitForVoterSet(replicas_, &cstate));
  bool learner = false;
  for (const auto& p : cstate.committed_config().peers()) {
    learner |= p.uuid() == spare_ && p.member_type() == pb::RaftPeerPB::NON_VOTER;
  }
  EXPECT_TRUE(learner) << cstate.DebugString();

  CliResult promote = ChangeConfig("change_replica_type", tablet_id_, {spare_, "VOTER"});
  ASSERT_EQ(promote.rc, 0) << promote.out << promote.err;
  EXPECT_NE(promote.out.find("a VOTER (was NON_VOTER"), std::string::npos) << promote.out;
  std::set<std::string> four = replicas_;
  four.insert(spare_);
  ASSERT_NO_FATAL_FAILURE(WaitForVoterSet(four));

  CliResult demote = ChangeConfig("change_replica_type", tablet_id_, {spare_, "NON_VOTER"});
  ASSERT_EQ(demote.rc, 0) << demote.out << demote.err;
  ASSERT_NO_FATAL_FAILURE(WaitForVoterSet(replicas_));
  CliResult remove = ChangeConfig("remove_replica", tablet_id_, {spare_});
  ASSERT_EQ(remove.rc, 0) << remove.out << remove.err;
}

// Moves the leader's replica (so the move also hands leadership over) to the spare server while
// a writer runs: afterwards the voters are the two that stayed and the spare, and every
// acknowledged row is there. The generous --timeout_ms is for the tablet copy, which under writes
// may need several attempts.
TEST_F(CliChangeConfigTest, MoveReplicaUnderWritesLosesNothing) {
  BackgroundWriter writer(client_, table_);
  writer.Start();
  ASSERT_OK(writer.WaitForAcked(1000));
  auto leader = cluster_->WaitForTabletLeader(tablet_id_, absl::Seconds(30));
  BASALT_ASSERT_OK(leader);
  const std::string from = leader->uuid;

  CliResult move = Basalt({"tablet", "change_config", "move_replica", master_, tablet_id_, from,
                           spare_, "--timeout_ms=120000"});
  ASSERT_EQ(move.rc, 0) << move.out << move.err;
  LOG(INFO) << "move_replica stdout:\n" << move.out << "stderr:\n" << move.err;
  EXPECT_NE(move.out.find(StrCat("Added tablet server ", spare_)), std::string::npos) << move.out;
  EXPECT_NE(move.out.find(StrCat("Tablet server ", spare_, " is a VOTER")), std::string::npos)
      << move.out;
  EXPECT_NE(move.out.find(StrCat("Leader ", from, " of tablet ", tablet_id_, " stepped down")),
            std::string::npos)
      << move.out;
  EXPECT_NE(move.out.find(
                StrCat("Moved the replica of tablet ", tablet_id_, " from ", from, " to ", spare_)),
            std::string::npos)
      << move.out;

  // Writes go on through the new configuration.
  const size_t at_move = writer.acked().size();
  ASSERT_OK(writer.WaitForAcked(at_move + 1000));
  ASSERT_OK(writer.Stop());

  std::set<std::string> want = replicas_;
  want.erase(from);
  want.insert(spare_);
  ASSERT_NO_FATAL_FAILURE(WaitForVoterSet(want));

  ASSERT_NO_FATAL_FAILURE(writer.Verify());
  std::vector<Row> rows;
  ASSERT_OK(ScanRows(table_.get(), nullptr, &rows));
  // The CLI's count agrees.
  const CliResult count = Basalt({"table", "count", master_, "t"});
  ASSERT_EQ(count.rc, 0) << count.err;
  EXPECT_EQ(count.out, StrCat(rows.size(), "\n"));
}

}  // namespace cli_change_config_test_file
}  // namespace
}  // namespace basalt::client_test
