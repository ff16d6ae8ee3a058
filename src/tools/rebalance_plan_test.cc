// Tests of the move planning of `basalt cluster rebalance` (rebalance_plan.h), without a cluster:
// placements are built by hand or at random, and moves are "run" by ApplyMove.

#include "tools/rebalance_plan.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/strings.h"
#include "glog/logging.h"

namespace basalt::tools {
namespace {
namespace rebalance_plan_test_file {

TabletPlacement Tablet(const std::string& id, std::vector<std::string> replicas,
                       const std::string& leader = "", const std::string& table = "t") {
  return TabletPlacement{id, table, std::move(replicas), leader, ""};
}

// PickMove with nothing in flight, as "tablet from->to", or "none".
std::string Pick(const ClusterPlacement& placement) {
  auto m = PickMove(placement, MovesInFlight(), 5);
  return m ? StrCat(m->tablet_id, " ", m->from, "->", m->to) : "none";
}

// Picks and applies moves one at a time (nothing in flight) until PickMove has none; returns them.
std::vector<ReplicaMove> RunSequentially(ClusterPlacement* placement, int max_moves = 5) {
  std::vector<ReplicaMove> moves;
  while (auto m = PickMove(*placement, MovesInFlight(), max_moves)) {
    moves.push_back(*m);
    ApplyMove(*m, placement);
    if (moves.size() > 10000) {
      ADD_FAILURE() << "planning does not end";
      break;
    }
  }
  return moves;
}

// Every tablet has `rf` replicas on distinct servers.
void ExpectDistinctReplicas(const ClusterPlacement& placement, size_t rf) {
  for (const auto& t : placement.tablets) {
    const std::set<std::string> distinct(t.replicas.begin(), t.replicas.end());
    EXPECT_EQ(distinct.size(), rf) << t.tablet_id;
    EXPECT_EQ(t.replicas.size(), rf) << t.tablet_id;
  }
}

// Eight tablets, three replicas each, spread evenly over a..d (six each); e new and empty.
ClusterPlacement FourFullOneEmpty() {
  ClusterPlacement p;
  p.servers = {"a", "b", "c", "d", "e"};
  const std::vector<std::string> four = {"a", "b", "c", "d"};
  for (int i = 0; i < 8; ++i) {
    std::vector<std::string> r;
    for (int k = 0; k < 3; ++k) r.push_back(four[(i + k) % 4]);
    p.tablets.push_back(Tablet(StrCat("t", i), r, r[0]));
  }
  return p;
}

// A report of a replica of "t1" (table "t") on `uuid`; a leader's carries the configuration
// `voters` (and `learners` as NON_VOTERs).
ReplicaReport Report(const std::string& uuid, pb::RaftRolePB role,
                     pb::TabletStatePB state = pb::TABLET_RUNNING,
                     const std::vector<std::string>& voters = {},
                     const std::vector<std::string>& learners = {}) {
  ReplicaReport r;
  r.ts_uuid = uuid;
  r.status.set_tablet_id("t1");
  r.status.set_table_name("t");
  r.status.set_role(role);
  r.status.set_state(state);
  for (const auto& v : voters) {
    auto* p = r.status.mutable_config()->add_peers();
    p->set_uuid(v);
    p->set_member_type(pb::RaftPeerPB::VOTER);
  }
  for (const auto& l : learners) {
    auto* p = r.status.mutable_config()->add_peers();
    p->set_uuid(l);
    p->set_member_type(pb::RaftPeerPB::NON_VOTER);
  }
  return r;
}

TEST(RebalancePlanTest, PlaceTabletFromReports) {
  const std::set<std::string> answered = {"a", "b", "c", "d"};
  // Healthy: the leader's configuration is the placement; an evicted replica on d that still
  // reports in is not a member.
  TabletPlacement t =
      PlaceTablet("t1",
                  {Report("a", pb::LEADER, pb::TABLET_RUNNING, {"a", "b", "c"}),
                   Report("b", pb::FOLLOWER), Report("c", pb::FOLLOWER), Report("d", pb::FOLLOWER)},
                  3, answered);
  EXPECT_EQ(t.tablet_id, "t1");
  EXPECT_EQ(t.table_name, "t");
  EXPECT_EQ(t.replicas, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(t.leader_uuid, "a");
  EXPECT_EQ(t.unhealthy, "");

  struct Case {
    std::vector<ReplicaReport> reports;
    int rf;
    std::string unhealthy;
  };
  const std::vector<Case> cases = {
      {{Report("a", pb::FOLLOWER), Report("b", pb::FOLLOWER), Report("c", pb::FOLLOWER)},
       3,
       "0 replicas report LEADER (want exactly 1)"},
      {{Report("a", pb::LEADER, pb::TABLET_RUNNING, {"a", "b", "c"}), Report("b", pb::LEADER),
        Report("c", pb::FOLLOWER)},
       3,
       "2 replicas report LEADER (want exactly 1)"},
      {{Report("a", pb::LEADER, pb::TABLET_RUNNING, {"a", "b", "c"}, {"d"}),
        Report("b", pb::FOLLOWER), Report("c", pb::FOLLOWER), Report("d", pb::LEARNER)},
       3,
       "replica on d is a NON_VOTER (a configuration change is under way)"},
      {{Report("a", pb::LEADER, pb::TABLET_RUNNING, {"a", "b", "e"}), Report("b", pb::FOLLOWER)},
       3,
       "replica on e: its tablet server is not live or did not answer"},
      {{Report("a", pb::LEADER, pb::TABLET_RUNNING, {"a", "b", "c"}), Report("b", pb::FOLLOWER)},
       3,
       "replica on c is missing"},
      {{Report("a", pb::LEADER, pb::TABLET_RUNNING, {"a", "b", "c"}), Report("b", pb::FOLLOWER),
        Report("c", pb::UNKNOWN_ROLE, pb::TABLET_BOOTSTRAPPING)},
       3,
       "replica on c is TABLET_BOOTSTRAPPING"},
      {{Report("a", pb::LEADER, pb::TABLET_RUNNING, {"a", "b"}), Report("b", pb::FOLLOWER)},
       3,
       "2 voters, fewer than the replication factor 3"},
      {{Report("a", pb::LEADER, pb::TABLET_RUNNING, {"a", "b", "c"}), Report("b", pb::FOLLOWER),
        Report("c", pb::FOLLOWER)},
       0,
       "its table is not listed by the master"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.unhealthy);
    t = PlaceTablet("t1", c.reports, c.rf, answered);
    EXPECT_EQ(t.unhealthy, c.unhealthy);
    EXPECT_FALSE(t.replicas.empty());
  }
  // Without a leader, the placement is the servers that report a replica.
  t = PlaceTablet("t1", {Report("a", pb::FOLLOWER), Report("c", pb::FOLLOWER)}, 3, answered);
  EXPECT_EQ(t.replicas, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(t.leader_uuid, "");
}

TEST(RebalancePlanTest, BalancedClusterNeedsNoMove) {
  ClusterPlacement p;
  p.servers = {"a", "b", "c"};
  p.tablets = {Tablet("t1", {"a", "b", "c"}, "a"), Tablet("t2", {"a", "b", "c"}, "b")};
  EXPECT_TRUE(IsBalanced(ReplicaCounts(p)));
  EXPECT_EQ(Pick(p), "none");
  // Within one is balanced too.
  p.servers.push_back("d");
  p.tablets = {Tablet("t1", {"a", "b", "c"}), Tablet("t2", {"a", "b", "d"})};
  EXPECT_TRUE(IsBalanced(ReplicaCounts(p)));
  EXPECT_EQ(Pick(p), "none");
  EXPECT_TRUE(IsBalanced({}));
}

TEST(RebalancePlanTest, NewServerGetsItsShareInTheFewestMoves) {
  ClusterPlacement p = FourFullOneEmpty();
  EXPECT_FALSE(IsBalanced(ReplicaCounts(p)));
  const std::vector<ReplicaMove> moves = RunSequentially(&p);
  // 24 replicas on 5 servers: four with 5, one with 4. e must reach 4: four moves, all to e.
  EXPECT_EQ(moves.size(), 4u);
  for (const auto& m : moves) EXPECT_EQ(m.to, "e");
  const auto counts = ReplicaCounts(p);
  EXPECT_TRUE(IsBalanced(counts));
  EXPECT_EQ(counts.at("e"), 4);
  ExpectDistinctReplicas(p, 3);
}

TEST(RebalancePlanTest, PrefersAReplicaThatDoesNotLead) {
  ClusterPlacement p;
  p.servers = {"a", "b", "c", "d", "e"};
  // a holds three, b..d two, e none. t1 and t2 are led from a; t3 (the largest id) from c.
  p.tablets = {Tablet("t1", {"a", "b", "c"}, "a"), Tablet("t2", {"a", "b", "d"}, "a"),
               Tablet("t3", {"a", "c", "d"}, "c")};
  EXPECT_EQ(Pick(p), "t3 a->e");
  // With only leaders' replicas to take, one of them moves (the smallest id).
  p.tablets[2].leader_uuid = "a";
  EXPECT_EQ(Pick(p), "t1 a->e");
  // a and b are equally loaded and a leads everything: b's replica moves.
  p.servers = {"a", "b", "c"};
  p.tablets = {Tablet("t1", {"a", "b"}, "a"), Tablet("t2", {"a", "b"}, "a")};
  EXPECT_EQ(Pick(p), "t1 b->c");
}

TEST(RebalancePlanTest, MovesBetweenTheServersThatDifferMost) {
  ClusterPlacement p;
  // a 5, b 3, c 1 replicas: a to c, even though b to c is allowed and b's replica does not lead.
  p.servers = {"a", "b", "c"};
  p.tablets = {Tablet("t1", {"a", "b"}, "a"), Tablet("t2", {"a", "b"}, "a"),
               Tablet("t3", {"a", "b", "c"}, "a"), Tablet("t4", {"a"}, "a"),
               Tablet("t5", {"a"}, "a")};
  EXPECT_EQ(Pick(p), "t1 a->c");
  // (5, 3, 1) is balanced in two moves.
  EXPECT_EQ(RunSequentially(&p).size(), 2u);
  EXPECT_TRUE(IsBalanced(ReplicaCounts(p)));
}

TEST(RebalancePlanTest, PrefersTheTableSpreadMostUnevenly) {
  ClusterPlacement p;
  p.servers = {"a", "b", "c", "d", "e"};
  // x has two tablets on a and none on e; y has one on a. Moving x's evens both tables out.
  p.tablets = {Tablet("t1", {"a", "b", "c"}, "b", "y"), Tablet("t2", {"a", "b", "c"}, "b", "x"),
               Tablet("t3", {"a", "c", "d"}, "c", "x")};
  EXPECT_EQ(Pick(p), "t2 a->e");
}

TEST(RebalancePlanTest, UnhealthyTabletsNeverMove) {
  ClusterPlacement p;
  p.servers = {"a", "b", "c", "d"};
  p.tablets = {Tablet("t1", {"a", "b", "c"}, "b"), Tablet("t2", {"a", "b", "c"}, "b")};
  p.tablets[0].unhealthy = "2 leaders";
  EXPECT_EQ(Pick(p), "t2 a->d");
  p.tablets[1].unhealthy = "replica on c is TABLET_BOOTSTRAPPING";
  // a..c hold two each, d none: unbalanced, but nothing may move.
  EXPECT_FALSE(IsBalanced(ReplicaCounts(p)));
  EXPECT_EQ(Pick(p), "none");
  EXPECT_EQ(UnhealthyTablets(p), (std::vector<std::string>{
                                     "tablet t1 (table t): 2 leaders",
                                     "tablet t2 (table t): replica on c is TABLET_BOOTSTRAPPING"}));
}

TEST(RebalancePlanTest, IneligibleServersAreNeitherCountedNorTargets) {
  ClusterPlacement p;
  // m (maintenance mode or not live) is not in `servers`: its replicas do not count, and nothing
  // moves to or from it.
  p.servers = {"a", "b", "c"};
  p.tablets = {Tablet("t1", {"m", "a", "b"}, "a"), Tablet("t2", {"m", "a", "b"}, "a"),
               Tablet("t3", {"m", "a", "c"}, "a")};
  const auto counts = ReplicaCounts(p);
  EXPECT_EQ(counts.count("m"), 0u);
  EXPECT_EQ(counts.at("a"), 3);
  const std::vector<ReplicaMove> moves = RunSequentially(&p);
  ASSERT_FALSE(moves.empty());
  for (const auto& m : moves) {
    EXPECT_NE(m.from, "m");
    EXPECT_NE(m.to, "m");
  }
  EXPECT_TRUE(IsBalanced(ReplicaCounts(p)));
  for (const auto& t : p.tablets) EXPECT_EQ(t.replicas[0], "m") << t.tablet_id;
}

TEST(RebalancePlanTest, MovesInFlightRespectTheLimitsAndAreCountedAsDone) {
  for (int max_moves : {1, 2, 5}) {
    SCOPED_TRACE(StrCat("max_moves_per_server=", max_moves));
    ClusterPlacement p = FourFullOneEmpty();
    MovesInFlight in_flight;
    std::vector<ReplicaMove> started;
    while (auto m = PickMove(p, in_flight, max_moves)) {
      EXPECT_EQ(in_flight.tablets.count(m->tablet_id), 0u) << "tablet moved twice at once";
      in_flight.Add(*m);
      ApplyMove(*m, &p);
      started.push_back(*m);
    }
    // All moves go to e, so e bounds how many run at once.
    EXPECT_EQ(started.size(), static_cast<size_t>(std::min(max_moves, 4)));
    for (const auto& [uuid, n] : in_flight.per_server) EXPECT_LE(n, max_moves) << uuid;
    // As they finish, the rest follow; in the end the cluster is balanced.
    while (!started.empty()) {
      in_flight.Remove(started.back());
      started.pop_back();
      while (auto m = PickMove(p, in_flight, max_moves)) {
        in_flight.Add(*m);
        ApplyMove(*m, &p);
        started.push_back(*m);
      }
    }
    EXPECT_TRUE(in_flight.empty());
    EXPECT_TRUE(in_flight.per_server.empty());
    EXPECT_TRUE(IsBalanced(ReplicaCounts(p)));
    ExpectDistinctReplicas(p, 3);
  }
}

TEST(RebalancePlanTest, ApplyMoveShowsTheMoveDoneAtAnyStep) {
  ClusterPlacement p;
  p.servers = {"a", "b", "c", "d"};
  p.tablets = {Tablet("t1", {"a", "b", "c"}, "a")};
  const ReplicaMove m{"t1", "a", "d"};
  ApplyMove(m, &p);
  EXPECT_EQ(p.tablets[0].replicas, (std::vector<std::string>{"d", "b", "c"}));
  EXPECT_EQ(p.tablets[0].leader_uuid, "");
  ApplyMove(m, &p);  // Done already (a placement read after the move).
  EXPECT_EQ(p.tablets[0].replicas, (std::vector<std::string>{"d", "b", "c"}));
  ApplyMove(ReplicaMove{"no-such-tablet", "a", "d"}, &p);
  EXPECT_EQ(p.tablets[0].replicas, (std::vector<std::string>{"d", "b", "c"}));
  // Halfway (a placement read while the new replica catches up): both are members.
  p.tablets[0].replicas = {"a", "b", "c", "d"};
  ApplyMove(m, &p);
  EXPECT_EQ(p.tablets[0].replicas, (std::vector<std::string>{"b", "c", "d"}));
}

// Random placements of healthy tablets always end balanced, each move going from a server to one
// with at least two fewer replicas. A random seed each run, logged; BASALT_TEST_SEED=N re-runs N.
TEST(RebalancePlanTest, RandomPlacementsEndBalanced) {
  const char* env = std::getenv("BASALT_TEST_SEED");
  const uint32_t seed = env != nullptr ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10))
                                       : std::random_device()();
  LOG(INFO) << "seed " << seed;
  SCOPED_TRACE(StrCat("seed ", seed, " (re-run with BASALT_TEST_SEED=", seed, ")"));
  std::mt19937 rng(seed);
  for (int round = 0; round < 200; ++round) {
    const int num_servers = 3 + static_cast<int>(rng() % 8);
    const size_t rf = 1 + rng() % 3;
    ClusterPlacement p;
    for (int s = 0; s < num_servers; ++s) p.servers.push_back(StrCat("ts", s));
    const int num_tablets = static_cast<int>(rng() % 40);
    for (int i = 0; i < num_tablets; ++i) {
      // Skewed: the first servers are likelier.
      std::set<std::string> chosen;
      while (chosen.size() < rf) {
        chosen.insert(p.servers[std::min(rng() % num_servers, rng() % num_servers)]);
      }
      std::vector<std::string> r(chosen.begin(), chosen.end());
      p.tablets.push_back(
          Tablet(StrCat("t", i), r, r[rng() % r.size()], StrCat("table", rng() % 3)));
    }
    ClusterPlacement before = p;
    for (const auto& m : RunSequentially(&p)) {
      const auto counts = ReplicaCounts(before);
      EXPECT_GE(counts.at(m.from) - counts.at(m.to), 2);
      ApplyMove(m, &before);
    }
    ASSERT_TRUE(IsBalanced(ReplicaCounts(p))) << "round " << round;
    ExpectDistinctReplicas(p, rf);
  }
}

}  // namespace rebalance_plan_test_file
}  // namespace
}  // namespace basalt::tools
