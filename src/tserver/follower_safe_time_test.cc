#include "tserver/follower_safe_time.h"

#include <algorithm>
#include <map>
#include <utility>

#include <gtest/gtest.h>

#include "common/random.h"

namespace basalt {
namespace {
namespace follower_safe_time_test_file {

TEST(FollowerSafeTimeTest, AdoptsAPairOnlyOnceItsIndexIsApplied) {
  FollowerSafeTime st;
  st.OnApplied(10, 2);
  EXPECT_FALSE(st.OnLeaderPair(2, 100, 12));
  EXPECT_EQ(st.get(), 0u);
  EXPECT_FALSE(st.OnApplied(11, 2));
  EXPECT_EQ(st.get(), 0u);
  EXPECT_TRUE(st.OnApplied(12, 2));
  EXPECT_EQ(st.get(), 100u);
  EXPECT_EQ(st.num_pending(), 0u);
  // Index already applied: adopted at once.
  EXPECT_TRUE(st.OnLeaderPair(2, 150, 12));
  EXPECT_EQ(st.get(), 150u);
}

TEST(FollowerSafeTimeTest, NeverDecreases) {
  FollowerSafeTime st;
  st.OnApplied(5, 1);
  EXPECT_TRUE(st.OnLeaderPair(1, 500, 5));
  EXPECT_FALSE(st.OnLeaderPair(1, 400, 5));
  EXPECT_EQ(st.get(), 500u);
  EXPECT_FALSE(st.OnLeaderPair(2, 300, 3));  // A new leader whose clock lags.
  EXPECT_EQ(st.get(), 500u);
}

TEST(FollowerSafeTimeTest, PendingPairsAdoptInOrderAndStayBounded) {
  FollowerSafeTime st;
  st.OnApplied(1, 1);
  for (uint64_t i = 0; i < 20; ++i) st.OnLeaderPair(1, 1000 + i, 10 + i);
  EXPECT_EQ(st.num_pending(), FollowerSafeTime::kMaxPending);
  // The first kMaxPending - 1 pairs and the newest are kept.
  EXPECT_TRUE(st.OnApplied(10, 1));
  EXPECT_EQ(st.get(), 1000u);
  EXPECT_TRUE(st.OnApplied(16, 1));
  EXPECT_EQ(st.get(), 1006u);
  EXPECT_FALSE(st.OnApplied(28, 1));
  EXPECT_TRUE(st.OnApplied(29, 1));
  EXPECT_EQ(st.get(), 1019u);
  EXPECT_EQ(st.num_pending(), 0u);
  // An idle leader repeats its index with later times: one pending pair, the latest time.
  st.OnLeaderPair(1, 2000, 40);
  st.OnLeaderPair(1, 2001, 40);
  EXPECT_EQ(st.num_pending(), 1u);
  EXPECT_TRUE(st.OnApplied(40, 1));
  EXPECT_EQ(st.get(), 2001u);
}

TEST(FollowerSafeTimeTest, TermsReplaceOrDropPendingPairs) {
  FollowerSafeTime st;
  st.OnApplied(3, 1);
  st.OnLeaderPair(2, 100, 10);
  EXPECT_FALSE(st.OnLeaderPair(1, 200, 3));  // An older term: ignored, even if applied.
  EXPECT_EQ(st.get(), 0u);
  EXPECT_EQ(st.num_pending(), 1u);
  // An entry of a later term than the pair's leader: its entries may have been replaced.
  EXPECT_FALSE(st.OnApplied(4, 3));
  EXPECT_EQ(st.num_pending(), 0u);
  EXPECT_FALSE(st.OnApplied(10, 3));
  EXPECT_EQ(st.get(), 0u);
  // A newer term's pair replaces the pending ones.
  st.OnLeaderPair(3, 300, 12);
  st.OnLeaderPair(4, 400, 11);
  EXPECT_EQ(st.num_pending(), 1u);
  EXPECT_TRUE(st.OnApplied(11, 4));
  EXPECT_EQ(st.get(), 400u);
  // Applied entries of a later term than the pair's leader never count for it.
  st.OnApplied(20, 5);
  EXPECT_FALSE(st.OnLeaderPair(4, 500, 15));
  EXPECT_EQ(st.get(), 400u);
}

// Random pairs and applies: the safe time never decreases, every adopted time is that of a pair
// whose index was applied by then (and that was not dropped by a later term's entry), and once
// everything is applied in one term the newest pair of that term is adopted.
TEST(FollowerSafeTimeTest, RandomSequencesKeepTheInvariants) {
  Random rng(SeedFromEnvOrTime());
  for (int iter = 0; iter < 300; ++iter) {
    FollowerSafeTime st;
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> pairs;  // time -> (term, index)
    uint64_t applied = 0, applied_term = 0, term = 1, time = 0, index = 0, prev = 0;
    for (int step = 0; step < 300; ++step) {
      if (rng.OneIn(3)) {
        if (rng.OneIn(15)) ++term;
        time += 1 + rng.Uniform(10);
        index = std::max(index, applied) + rng.Uniform(5);
        pairs[time] = {term, index};
        st.OnLeaderPair(term, time, index);
      } else {
        applied_term = rng.OneIn(10) ? term : applied_term;
        st.OnApplied(++applied, applied_term);
      }
      ASSERT_GE(st.get(), prev);
      if (st.get() != prev) {
        ASSERT_EQ(pairs.count(st.get()), 1u);
        const auto [pair_term, pair_index] = pairs[st.get()];
        ASSERT_LE(pair_index, applied) << "adopted before its index was applied";
        ASSERT_LE(applied_term, pair_term) << "adopted after an entry of a later term";
      }
      prev = st.get();
    }
    // Catch up in the current term: the newest pair is adopted.
    st.OnApplied(std::max(applied, index) + 1, term);
    st.OnLeaderPair(term, time + 1, index);
    EXPECT_EQ(st.get(), time + 1);
  }
}

}  // namespace follower_safe_time_test_file
}  // namespace
}  // namespace basalt
