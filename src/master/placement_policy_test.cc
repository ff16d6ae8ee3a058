#include "master/placement_policy.h"

#include <map>
#include <set>
#include <string>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace placement_policy_test_file {

std::vector<PlacementPolicy::Candidate> Servers(int n) {
  std::vector<PlacementPolicy::Candidate> c;
  for (int i = 0; i < n; ++i) c.push_back({"ts-" + std::to_string(i), 0});
  return c;
}

TEST(PlacementPolicyTest, SpreadsReplicasAndNeverDoublesUp) {
  const uint64_t seed = SeedFromEnvOrTime();
  PlacementPolicy policy(seed);
  auto servers = Servers(10);
  std::map<std::string, int> count;
  for (int t = 0; t < 200; ++t) {
    auto chosen = policy.PlaceTablet(&servers, 3);
    BASALT_ASSERT_OK(chosen);
    ASSERT_EQ(chosen->size(), 3u);
    std::set<std::string> distinct(chosen->begin(), chosen->end());
    ASSERT_EQ(distinct.size(), 3u) << "seed " << seed;
    for (const auto& u : *chosen) ++count[u];
  }
  // 600 replicas over 10 servers: two choices keep every server close to 60.
  for (const auto& s : servers) {
    EXPECT_EQ(s.load, count[s.uuid]);
    EXPECT_GE(s.load, 50) << s.uuid << " seed " << seed;
    EXPECT_LE(s.load, 70) << s.uuid << " seed " << seed;
  }
}

TEST(PlacementPolicyTest, PrefersLessLoadedServers) {
  PlacementPolicy policy(42);
  std::vector<PlacementPolicy::Candidate> servers = {{"busy", 1000}, {"a", 0}, {"b", 0}};
  for (int t = 0; t < 50; ++t) {
    auto chosen = policy.PlaceTablet(&servers, 1);
    BASALT_ASSERT_OK(chosen);
    EXPECT_NE((*chosen)[0], "busy");
  }
  // Every server is used when the tablet needs all of them.
  auto all = policy.PlaceTablet(&servers, 3);
  BASALT_ASSERT_OK(all);
  EXPECT_EQ(std::set<std::string>(all->begin(), all->end()).size(), 3u);
}

TEST(PlacementPolicyTest, SameSeedSameChoices) {
  PlacementPolicy a(7), b(7);
  auto sa = Servers(5), sb = Servers(5);
  for (int t = 0; t < 20; ++t) EXPECT_EQ(*a.PlaceTablet(&sa, 3), *b.PlaceTablet(&sb, 3));
}

// The first replica of a new tablet is its first leader: leaders spread as evenly as the
// replicas allow, counting the tablets each server already leads.
TEST(PlacementPolicyTest, PutLeaderFirstSpreadsLeaders) {
  std::map<std::string, int64_t> leaders;
  // A table of 6 tablets on 3 servers, each tablet on all three in the same order (the case
  // where the smallest uuid used to lead every tablet): two each.
  for (int t = 0; t < 6; ++t) {
    std::vector<std::string> replicas = {"a", "b", "c"};
    PlacementPolicy::PutLeaderFirst(&replicas, &leaders);
    EXPECT_EQ(std::set<std::string>(replicas.begin(), replicas.end()).size(), 3u);
  }
  EXPECT_EQ(leaders, (std::map<std::string, int64_t>{{"a", 2}, {"b", 2}, {"c", 2}}));

  // Servers already leading tablets get new ones last; ties keep the placement's order.
  leaders = {{"a", 5}, {"b", 1}};
  std::vector<std::string> replicas = {"a", "b", "c"};
  PlacementPolicy::PutLeaderFirst(&replicas, &leaders);
  EXPECT_EQ(replicas, (std::vector<std::string>{"c", "a", "b"}));
  replicas = {"a", "b", "c"};
  PlacementPolicy::PutLeaderFirst(&replicas, &leaders);
  EXPECT_EQ(replicas, (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(leaders["b"], 2);
  EXPECT_EQ(leaders["c"], 1);

  // Random placements of 300 tablets over 10 servers: each leads within two of 30. Fixed seeds:
  // the bound is what the greedy choice gives for these placements, not a guarantee for any.
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    PlacementPolicy policy(seed);
    auto servers = Servers(10);
    std::map<std::string, int64_t> led;
    for (int t = 0; t < 300; ++t) {
      auto chosen = policy.PlaceTablet(&servers, 3);
      BASALT_ASSERT_OK(chosen);
      PlacementPolicy::PutLeaderFirst(&*chosen, &led);
    }
    for (const auto& s : servers) {
      EXPECT_GE(led[s.uuid], 28) << s.uuid << " seed " << seed;
      EXPECT_LE(led[s.uuid], 32) << s.uuid << " seed " << seed;
    }
  }
  std::vector<std::string> none;
  PlacementPolicy::PutLeaderFirst(&none, &leaders);  // No replicas: nothing to do.
  EXPECT_TRUE(none.empty());
}

TEST(PlacementPolicyTest, Errors) {
  PlacementPolicy policy(1);
  auto servers = Servers(2);
  EXPECT_EQ(policy.PlaceTablet(&servers, 3).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(policy.PlaceTablet(&servers, 0).status().code(), absl::StatusCode::kInvalidArgument);
  for (const auto& s : servers) EXPECT_EQ(s.load, 0);
}

}  // namespace placement_policy_test_file
}  // namespace
}  // namespace basalt
