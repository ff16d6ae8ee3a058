#include "master/replica_repair.h"

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace replica_repair_test_file {

using Kind = RepairChange::Kind;

RepairInput Input(std::vector<std::string> voters, std::vector<std::string> learners,
                  std::set<std::string> failed, std::vector<std::string> servers) {
  RepairInput in;
  in.voters = std::move(voters);
  in.learners = std::move(learners);
  in.leader = in.voters.front();
  in.failed = std::move(failed);
  for (const std::string& s : servers) in.candidates.push_back({s, 0});
  return in;
}

std::optional<RepairChange> Decide(const RepairInput& in) {
  PlacementPolicy policy(1);
  return DecideRepair(in, &policy);
}

TEST(ReplicaRepairTest, HealthyTabletNeedsNothing) {
  EXPECT_EQ(Decide(Input({"a", "b", "c"}, {}, {}, {"a", "b", "c", "d"})), std::nullopt);
  // More voters than the replication factor (an operator's move in progress): left alone.
  EXPECT_EQ(Decide(Input({"a", "b", "c", "d"}, {}, {}, {"a", "b", "c", "d"})), std::nullopt);
}

TEST(ReplicaRepairTest, ThreeFourThree) {
  // A voter fails: a replacement learner goes to the one server without a replica.
  RepairInput in = Input({"a", "b", "c"}, {}, {"c"}, {"a", "b", "c", "d"});
  ASSERT_TRUE(Decide(in).has_value());
  EXPECT_EQ(Decide(in)->kind, Kind::kAddLearner);
  EXPECT_EQ(Decide(in)->peer, "d");
  // The learner is there: promote it (the leader normally does so by itself).
  in = Input({"a", "b", "c"}, {"d"}, {"c"}, {"a", "b", "c", "d"});
  ASSERT_TRUE(Decide(in).has_value());
  EXPECT_EQ(Decide(in)->kind, Kind::kPromoteLearner);
  EXPECT_EQ(Decide(in)->peer, "d");
  // Four voters, three healthy: the failed one goes.
  in = Input({"a", "b", "c", "d"}, {}, {"c"}, {"a", "b", "c", "d"});
  ASSERT_TRUE(Decide(in).has_value());
  EXPECT_EQ(Decide(in)->kind, Kind::kRemove);
  EXPECT_EQ(Decide(in)->peer, "c");
  // Back to three healthy voters.
  EXPECT_EQ(Decide(Input({"a", "b", "d"}, {}, {}, {"a", "b", "c", "d"})), std::nullopt);
}

TEST(ReplicaRepairTest, ThreeTwoThreeEvictsFirst) {
  RepairInput in = Input({"a", "b", "c"}, {}, {"c"}, {"a", "b", "c", "d"});
  in.prepare_replacement_before_eviction = false;
  ASSERT_TRUE(Decide(in).has_value());
  EXPECT_EQ(Decide(in)->kind, Kind::kRemove);
  EXPECT_EQ(Decide(in)->peer, "c");
  in = Input({"a", "b"}, {}, {}, {"a", "b", "c", "d"});
  in.prepare_replacement_before_eviction = false;
  ASSERT_TRUE(Decide(in).has_value());
  EXPECT_EQ(Decide(in)->kind, Kind::kAddLearner);
  EXPECT_NE(Decide(in)->peer, "a");
  EXPECT_NE(Decide(in)->peer, "b");
}

TEST(ReplicaRepairTest, NoCandidateMeansWaiting) {
  EXPECT_EQ(Decide(Input({"a", "b", "c"}, {}, {"c"}, {"a", "b", "c"})), std::nullopt);
}

TEST(ReplicaRepairTest, TheLeaderIsNeverRemovedAndFailedLearnersGoFirst) {
  RepairInput in = Input({"a", "b", "c", "d"}, {}, {"a"}, {"a", "b", "c", "d"});
  EXPECT_EQ(Decide(in), std::nullopt);  // "a" leads: it is not failed, whatever others say.
  in = Input({"a", "b", "c"}, {"e"}, {"e", "c"}, {"a", "b", "c", "d", "e"});
  ASSERT_TRUE(Decide(in).has_value());
  EXPECT_EQ(Decide(in)->kind, Kind::kRemove);
  EXPECT_EQ(Decide(in)->peer, "e");
}

TEST(ReplicaRepairTest, ReplacementsGoToTheLeastLoadedServer) {
  RepairInput in = Input({"a", "b", "c"}, {}, {"c"}, {});
  in.candidates = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 9}, {"e", 2}};
  for (uint64_t seed = 1; seed < 50; ++seed) {
    PlacementPolicy policy(seed);
    std::optional<RepairChange> c = DecideRepair(in, &policy);
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->peer == "d" || c->peer == "e") << c->peer;
  }
  // Two choices among {d, e}: e (fewer replicas) wins whenever both are drawn.
  int e = 0;
  for (uint64_t seed = 1; seed < 200; ++seed) {
    PlacementPolicy policy(seed);
    e += DecideRepair(in, &policy)->peer == "e";
  }
  EXPECT_GT(e, 100);
}

}  // namespace replica_repair_test_file
}  // namespace
}  // namespace basalt
