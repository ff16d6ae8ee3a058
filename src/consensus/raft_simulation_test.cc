// Seeded simulation of Raft groups under faults (raft_simulation.h).
//
//   BASALT_SIM_SEEDS=N     runs N seeds in each of the two suites instead of the defaults (600
//                          without membership changes, 400 with them: ~6 s each; the default
//                          suite samples, a search for a rare violation runs many more);
//   BASALT_SIM_SEED_BASE=B starts at seed B instead of 0;
//   BASALT_TEST_SEED=S     runs exactly seed S (with a full trace on failure).
// Even seeds simulate 3 replicas, odd seeds 5. The membership suite adds 2 spare nodes and random
// membership changes, with automatic promotion of learners on seeds 2 and 3 modulo 4.

#include "consensus/raft_simulation.h"

#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace raft_simulation_test_file {

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::strtoull(v, nullptr, 10);
}

SimulationOptions OptionsForSeed(uint64_t seed) {
  SimulationOptions options;
  options.seed = seed;
  options.num_nodes = seed % 2 == 0 ? 3 : 5;
  return options;
}

SimulationOptions MembershipOptionsForSeed(uint64_t seed) {
  SimulationOptions options = OptionsForSeed(seed);
  options.spare_nodes = 2;
  options.membership_per_mille_per_tick = 100;
  options.auto_promote_learners = seed % 4 >= 2;
  return options;
}

// Runs `seed`; on a violation, runs it again with tracing and prints how to reproduce it.
bool RunSeed(SimulationOptions options) {
  SimulationResult r = RunRaftSimulation(options);
  if (r.ok) return true;
  options.trace = true;
  SimulationResult traced = RunRaftSimulation(options);
  ADD_FAILURE() << r.violation << "\nreproduce with BASALT_TEST_SEED=" << options.seed
                << "\nlast events:\n"
                << traced.trace;
  return false;
}

// Runs the seeds the environment asks for (see the top of this file), stopping after 3 failures.
void RunSeeds(SimulationOptions (*options_for_seed)(uint64_t), uint64_t default_seeds) {
  const char* single = std::getenv("BASALT_TEST_SEED");
  if (single != nullptr) {
    const uint64_t seed = std::strtoull(single, nullptr, 10);
    std::cerr << "running only seed " << seed << "\n";
    RunSeed(options_for_seed(seed));
    return;
  }
  const uint64_t n = EnvOr("BASALT_SIM_SEEDS", default_seeds);
  const uint64_t base = EnvOr("BASALT_SIM_SEED_BASE", 0);
  std::cerr << "simulating seeds [" << base << ", " << base + n << ")\n";
  int failures = 0;
  for (uint64_t seed = base; seed < base + n && failures < 3; ++seed) {
    failures += !RunSeed(options_for_seed(seed));
  }
}

TEST(RaftSimulationTest, GroupsOfThreeAndFiveStaySafeUnderFaults) { RunSeeds(OptionsForSeed, 600); }

TEST(RaftSimulationTest, MembershipChangesStaySafeUnderFaults) {
  RunSeeds(MembershipOptionsForSeed, 400);
}

TEST(RaftSimulationTest, SameSeedReplaysExactly) {
  SimulationOptions options = OptionsForSeed(12345);
  options.trace = true;
  const SimulationResult a = RunRaftSimulation(options);
  const SimulationResult b = RunRaftSimulation(options);
  ASSERT_TRUE(a.ok) << a.violation;
  EXPECT_EQ(a.trace, b.trace);
  EXPECT_EQ(a.final_commit_index, b.final_commit_index);
  EXPECT_FALSE(a.trace.empty());
}

// The simulation must not be vacuous: across seeds it elects many leaders, crashes replicas,
// partitions the network and acknowledges client requests.
TEST(RaftSimulationTest, RunsExerciseElectionsFaultsAndClients) {
  int leaders = 0, crashes = 0, partitions = 0, acked = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const SimulationResult r = RunRaftSimulation(OptionsForSeed(seed));
    ASSERT_TRUE(r.ok) << r.violation;
    leaders += r.leaders_elected;
    crashes += r.crashes;
    partitions += r.partitions;
    acked += r.ops_acknowledged;
  }
  EXPECT_GT(leaders, 100);
  EXPECT_GT(crashes, 50);
  EXPECT_GT(partitions, 50);
  EXPECT_GT(acked, 50 * 30);
}

// Membership runs are not vacuous either: leaders accept every kind of change, fresh nodes
// replace deleted ones and removed ones come back, and many configurations commit.
TEST(RaftSimulationTest, MembershipRunsExerciseEveryChange) {
  SimulationResult sum;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const SimulationResult r = RunRaftSimulation(MembershipOptionsForSeed(seed));
    ASSERT_TRUE(r.ok) << r.violation;
    sum.leaders_elected += r.leaders_elected;
    sum.ops_acknowledged += r.ops_acknowledged;
    sum.learners_added += r.learners_added;
    sum.nodes_readded += r.nodes_readded;
    sum.promotions += r.promotions;
    sum.demotions += r.demotions;
    sum.removals += r.removals;
    sum.configs_committed += r.configs_committed;
    sum.configs_overwritten += r.configs_overwritten;
    sum.removed_node_campaigns += r.removed_node_campaigns;
  }
  std::cerr << "50 seeds: " << sum.leaders_elected << " leaders, " << sum.ops_acknowledged
            << " acks, " << sum.learners_added << " learners added, " << sum.nodes_readded
            << " re-added, " << sum.promotions << " promotions, " << sum.demotions << " demotions, "
            << sum.removals << " removals, " << sum.configs_committed
            << " configurations committed, " << sum.configs_overwritten << " overwritten, "
            << sum.removed_node_campaigns << " campaign messages from removed nodes\n";
  EXPECT_GT(sum.leaders_elected, 100);
  EXPECT_GT(sum.ops_acknowledged, 50 * 30);
  EXPECT_GT(sum.learners_added, 50);
  EXPECT_GT(sum.nodes_readded, 20);
  EXPECT_GT(sum.promotions, 50);
  EXPECT_GT(sum.demotions, 20);
  EXPECT_GT(sum.removals, 50);
  EXPECT_GT(sum.configs_committed, 200);
  EXPECT_GT(sum.configs_overwritten, 0);
  EXPECT_GT(sum.removed_node_campaigns, 0);
}

// Returns the first seed in [first, first + count) at which a run with `bug` reports a
// violation. BASALT_SIM_BUG_SEED_BASE and BASALT_SIM_BUG_SEEDS override the range.
std::optional<uint64_t> FirstViolation(RaftOptions::TestingBug bug, uint64_t first, uint64_t count,
                                       std::string* violation) {
  first = EnvOr("BASALT_SIM_BUG_SEED_BASE", first);
  count = EnvOr("BASALT_SIM_BUG_SEEDS", count);
  for (uint64_t seed = first; seed < first + count; ++seed) {
    SimulationOptions options = bug == RaftOptions::TestingBug::kAllowConcurrentConfigChanges
                                    ? MembershipOptionsForSeed(seed)
                                    : OptionsForSeed(seed);
    options.bug = bug;
    SimulationResult r = RunRaftSimulation(options);
    if (!r.ok) {
      *violation = r.violation;
      return seed;
    }
  }
  return std::nullopt;
}

// The Figure 8 scenario of the Raft paper. The checker's electable-log check catches the premature
// commit as soon as it happens (first at seed 192), without waiting for the unlucky election.
TEST(RaftSimulationTest, CatchesCommittingOldTermEntriesByCounting) {
  std::string violation;
  auto seed =
      FirstViolation(RaftOptions::TestingBug::kCommitOldTermEntriesByCounting, 0, 500, &violation);
  ASSERT_TRUE(seed.has_value()) << "the checker missed a §5.4.2 violation";
  std::cerr << "caught at seed " << *seed << ": " << violation << "\n";
}

TEST(RaftSimulationTest, CatchesGrantingVotesWithoutLogCheck) {
  std::string violation;
  auto seed =
      FirstViolation(RaftOptions::TestingBug::kGrantVoteWithoutLogCheck, 0, 200, &violation);
  ASSERT_TRUE(seed.has_value()) << "the checker missed a §5.4.1 violation";
  std::cerr << "caught at seed " << *seed << ": " << violation << "\n";
}

// Two uncommitted configuration changes at once move the majority by two servers, so the new one
// need not overlap the old one: e.g. with "remove n1" and "promote n6" both pending in a group of
// five, n2, n3 and n6 commit an entry that n0 lacks while n0, n1 and n4, a majority of the old
// configuration, could still elect n0. Caught within the first seeds.
TEST(RaftSimulationTest, CatchesConcurrentConfigChanges) {
  std::string violation;
  auto seed =
      FirstViolation(RaftOptions::TestingBug::kAllowConcurrentConfigChanges, 0, 500, &violation);
  ASSERT_TRUE(seed.has_value()) << "the checker missed two configuration changes in flight";
  std::cerr << "caught at seed " << *seed << ": " << violation << "\n";
}

// A removed node must not come back under its id with an empty log while stale configurations
// may still name it a voter (docs/raft.md "Membership"): it grants any vote, so a stale candidate
// can win without committed entries.
TEST(RaftSimulationTest, CatchesReaddingANodeWithAnEmptyLog) {
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    SimulationOptions options = MembershipOptionsForSeed(seed);
    options.readd_with_empty_log = true;
    SimulationResult r = RunRaftSimulation(options);
    if (!r.ok) {
      std::cerr << "caught at seed " << seed << ": " << r.violation << "\n";
      return;
    }
  }
  FAIL() << "the checker missed a node re-added with an empty log";
}

}  // namespace raft_simulation_test_file
}  // namespace
}  // namespace basalt
