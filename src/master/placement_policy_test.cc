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
