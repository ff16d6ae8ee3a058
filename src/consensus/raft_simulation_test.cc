// Seeded simulation of Raft groups under faults (raft_simulation.h).
//
//   BASALT_SIM_SEEDS=N     runs N seeds instead of the default 1,000;
//   BASALT_SIM_SEED_BASE=B starts at seed B instead of 0;
//   BASALT_TEST_SEED=S     runs exactly seed S (with a full trace on failure).
// Even seeds simulate 3 replicas, odd seeds 5.

#include "consensus/raft_simulation.h"

#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace basalt {
namespace {

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

TEST(RaftSimulationTest, GroupsOfThreeAndFiveStaySafeUnderFaults) {
  const char* single = std::getenv("BASALT_TEST_SEED");
  if (single != nullptr) {
    const uint64_t seed = std::strtoull(single, nullptr, 10);
    std::cerr << "running only seed " << seed << "\n";
    RunSeed(OptionsForSeed(seed));
    return;
  }
  const uint64_t n = EnvOr("BASALT_SIM_SEEDS", 1000);
  const uint64_t base = EnvOr("BASALT_SIM_SEED_BASE", 0);
  std::cerr << "simulating seeds [" << base << ", " << base + n << ")\n";
  int failures = 0;
  for (uint64_t seed = base; seed < base + n && failures < 3; ++seed) {
    failures += !RunSeed(OptionsForSeed(seed));
  }
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

// Returns the first seed in [first, first + count) at which a run with `bug` reports a
// violation. BASALT_SIM_BUG_SEED_BASE and BASALT_SIM_BUG_SEEDS override the range.
std::optional<uint64_t> FirstViolation(RaftOptions::TestingBug bug, uint64_t first, uint64_t count,
                                       std::string* violation) {
  first = EnvOr("BASALT_SIM_BUG_SEED_BASE", first);
  count = EnvOr("BASALT_SIM_BUG_SEEDS", count);
  for (uint64_t seed = first; seed < first + count; ++seed) {
    SimulationOptions options = OptionsForSeed(seed);
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

}  // namespace
}  // namespace basalt
