#include "consensus/quorum.h"

#include <string>

#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "consensus/raft_config.h"

namespace basalt {
namespace {
namespace quorum_test_file {

RaftConfig Voters(std::vector<PeerId> voters, std::vector<PeerId> learners = {}) {
  return RaftConfig{std::move(voters), std::move(learners)};
}

TEST(QuorumTest, MajoritySize) {
  EXPECT_EQ(MajoritySize(Voters({"a"})), 1u);
  EXPECT_EQ(MajoritySize(Voters({"a", "b"})), 2u);
  EXPECT_EQ(MajoritySize(Voters({"a", "b", "c"})), 2u);
  EXPECT_EQ(MajoritySize(Voters({"a", "b", "c", "d"})), 3u);
  EXPECT_EQ(MajoritySize(Voters({"a", "b", "c", "d", "e"})), 3u);
}

TEST(QuorumTest, CommittedIndexIsHighestIndexMatchedByMajority) {
  const RaftConfig three = Voters({"a", "b", "c"});
  EXPECT_EQ(CommittedIndex(three, {{"a", 5}, {"b", 3}, {"c", 1}}), 3u);
  EXPECT_EQ(CommittedIndex(three, {{"a", 5}, {"b", 5}, {"c", 1}}), 5u);
  EXPECT_EQ(CommittedIndex(three, {{"a", 7}}), 0u);  // Missing voters count as 0.
  const RaftConfig four = Voters({"a", "b", "c", "d"});
  EXPECT_EQ(CommittedIndex(four, {{"a", 9}, {"b", 8}, {"c", 2}, {"d", 1}}), 2u);
  const RaftConfig five = Voters({"a", "b", "c", "d", "e"});
  EXPECT_EQ(CommittedIndex(five, {{"a", 9}, {"b", 8}, {"c", 7}, {"d", 1}, {"e", 1}}), 7u);
  EXPECT_EQ(CommittedIndex(Voters({}), {{"a", 9}}), 0u);
}

TEST(QuorumTest, LearnersAndNonMembersDoNotCountTowardCommit) {
  const RaftConfig config = Voters({"a", "b", "c"}, {"l1", "l2"});
  EXPECT_EQ(CommittedIndex(config, {{"a", 5}, {"b", 1}, {"c", 1}, {"l1", 5}, {"l2", 5}, {"x", 5}}),
            1u);
}

TEST(QuorumTest, TallyVotes) {
  const RaftConfig three = Voters({"a", "b", "c"});
  EXPECT_EQ(TallyVotes(three, {{"a", true}}), VoteResult::kPending);
  EXPECT_EQ(TallyVotes(three, {{"a", true}, {"b", true}}), VoteResult::kWon);
  EXPECT_EQ(TallyVotes(three, {{"a", true}, {"b", false}}), VoteResult::kPending);
  EXPECT_EQ(TallyVotes(three, {{"a", true}, {"b", false}, {"c", false}}), VoteResult::kLost);
  // Even split of four voters: no majority is possible any more.
  const RaftConfig four = Voters({"a", "b", "c", "d"});
  EXPECT_EQ(TallyVotes(four, {{"a", true}, {"b", true}, {"c", false}}), VoteResult::kPending);
  EXPECT_EQ(TallyVotes(four, {{"a", true}, {"b", true}, {"c", false}, {"d", false}}),
            VoteResult::kLost);
  EXPECT_EQ(TallyVotes(Voters({"a"}), {{"a", true}}), VoteResult::kWon);
}

TEST(QuorumTest, LearnerVotesAreIgnored) {
  const RaftConfig config = Voters({"a", "b", "c"}, {"l"});
  EXPECT_EQ(TallyVotes(config, {{"a", true}, {"l", true}, {"x", true}}), VoteResult::kPending);
  EXPECT_EQ(TallyVotes(config, {{"a", true}, {"b", false}, {"c", false}, {"l", true}}),
            VoteResult::kLost);
}

TEST(QuorumTest, QuorumActive) {
  const RaftConfig config = Voters({"a", "b", "c"}, {"l"});
  EXPECT_FALSE(QuorumActive(config, {{"a", true}, {"l", true}}));
  EXPECT_FALSE(QuorumActive(config, {{"a", true}, {"b", false}}));
  EXPECT_TRUE(QuorumActive(config, {{"a", true}, {"c", true}}));
}

TEST(RaftConfigTest, SingleServerChanges) {
  const RaftConfig config = Voters({"a", "b", "c"});
  auto added = ApplyConfigChange(config, {ConfigChange::Type::kAddLearner, "d"});
  BASALT_ASSERT_OK(added);
  EXPECT_EQ(*added, Voters({"a", "b", "c"}, {"d"}));
  auto promoted = ApplyConfigChange(*added, {ConfigChange::Type::kPromoteLearner, "d"});
  BASALT_ASSERT_OK(promoted);
  EXPECT_EQ(*promoted, Voters({"a", "b", "c", "d"}));
  auto removed = ApplyConfigChange(*promoted, {ConfigChange::Type::kRemovePeer, "b"});
  BASALT_ASSERT_OK(removed);
  EXPECT_EQ(*removed, Voters({"a", "c", "d"}));

  EXPECT_TRUE(absl::IsFailedPrecondition(
      ApplyConfigChange(config, {ConfigChange::Type::kAddLearner, "a"}).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      ApplyConfigChange(config, {ConfigChange::Type::kPromoteLearner, "a"}).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      ApplyConfigChange(config, {ConfigChange::Type::kRemovePeer, "z"}).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      ApplyConfigChange(Voters({"a"}), {ConfigChange::Type::kRemovePeer, "a"}).status()));
}

TEST(RaftConfigTest, DemoteVoterMakesItALearner) {
  const RaftConfig config = Voters({"a", "b", "c"}, {"d"});
  auto demoted = ApplyConfigChange(config, {ConfigChange::Type::kDemoteVoter, "b"});
  BASALT_ASSERT_OK(demoted);
  EXPECT_EQ(*demoted, Voters({"a", "c"}, {"b", "d"}));
  // The demoted voter no longer counts toward commitment or elections.
  EXPECT_EQ(CommittedIndex(*demoted, {{"a", 5}, {"b", 5}, {"c", 1}}), 1u);
  EXPECT_EQ(TallyVotes(*demoted, {{"a", true}, {"b", true}}), VoteResult::kPending);
  EXPECT_FALSE(QuorumActive(*demoted, {{"a", true}, {"b", true}}));
  // And a promotion undoes it.
  auto promoted = ApplyConfigChange(*demoted, {ConfigChange::Type::kPromoteLearner, "b"});
  BASALT_ASSERT_OK(promoted);
  EXPECT_EQ(*promoted, config);

  for (const char* not_voter : {"d", "z"}) {
    auto s = ApplyConfigChange(config, {ConfigChange::Type::kDemoteVoter, not_voter});
    EXPECT_TRUE(absl::IsFailedPrecondition(s.status())) << not_voter << ": " << s.status();
  }
  auto last = ApplyConfigChange(Voters({"a"}, {"l"}), {ConfigChange::Type::kDemoteVoter, "a"});
  EXPECT_TRUE(absl::IsFailedPrecondition(last.status())) << last.status();
}

TEST(RaftConfigTest, ValidateRejectsMalformedConfigs) {
  BASALT_EXPECT_OK(ValidateConfig(Voters({"a", "b"}, {"c"})));
  EXPECT_FALSE(ValidateConfig(Voters({})).ok());
  EXPECT_FALSE(ValidateConfig(Voters({"b", "a"})).ok());
  EXPECT_FALSE(ValidateConfig(Voters({"a", "a"})).ok());
  EXPECT_FALSE(ValidateConfig(Voters({"a"}, {"a"})).ok());
  EXPECT_FALSE(ValidateConfig(Voters({""})).ok());
  EXPECT_EQ(NormalizeConfig(Voters({"b", "a", "b"})), Voters({"a", "b"}));
}

TEST(RaftConfigTest, EncodingRoundTripsAndGoldenBytes) {
  const RaftConfig config = Voters({"a", "bc"}, {"d"});
  const std::string encoded = EncodeConfig(config);
  EXPECT_EQ(encoded, std::string("\x01\x02\x01"
                                 "a"
                                 "\x02"
                                 "bc"
                                 "\x01\x01"
                                 "d",
                                 10));
  auto decoded = DecodeConfig(encoded);
  BASALT_ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, config);
}

TEST(RaftConfigTest, PromoteListIsVersionTwo) {
  RaftConfig config = Voters({"a"}, {"d", "e"});
  config.promote = {"e"};
  const std::string encoded = EncodeConfig(config);
  EXPECT_EQ(encoded, std::string("\x02\x01\x01"
                                 "a"
                                 "\x02\x01"
                                 "d"
                                 "\x01"
                                 "e"
                                 "\x01\x01"
                                 "e",
                                 12));
  auto decoded = DecodeConfig(encoded);
  BASALT_ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, config);
  for (size_t len = 0; len < encoded.size(); ++len) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeConfig(encoded.substr(0, len)).status())) << len;
  }
  // Promoting, removing, or version 2 with nothing to promote.
  auto promoted = ApplyConfigChange(config, {ConfigChange::Type::kPromoteLearner, "e"});
  BASALT_ASSERT_OK(promoted);
  EXPECT_TRUE(promoted->promote.empty());
  EXPECT_EQ(EncodeConfig(*promoted)[0], '\x01');
  auto removed = ApplyConfigChange(config, {ConfigChange::Type::kRemovePeer, "e"});
  BASALT_ASSERT_OK(removed);
  EXPECT_TRUE(removed->promote.empty());
  EXPECT_TRUE(absl::IsDataLoss(DecodeConfig(std::string("\x02\x01\x01"
                                                        "a"
                                                        "\x00\x00",
                                                        6))
                                   .status()));
  // A promote entry that is no learner fails validation.
  config.promote = {"a"};
  EXPECT_FALSE(ValidateConfig(config).ok());
  ConfigChange add{ConfigChange::Type::kAddLearner, "f"};
  add.promote = true;
  auto added = ApplyConfigChange(Voters({"a"}), add);
  BASALT_ASSERT_OK(added);
  EXPECT_EQ(added->promote, std::vector<PeerId>{"f"});
}

TEST(RaftConfigTest, CorruptEncodingIsDataLossNeverACrash) {
  const std::string encoded = EncodeConfig(Voters({"alpha", "beta", "gamma"}, {"delta"}));
  for (size_t len = 0; len < encoded.size(); ++len) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeConfig(encoded.substr(0, len)).status())) << len;
  }
  EXPECT_TRUE(absl::IsDataLoss(DecodeConfig(encoded + "x").status()));
  for (size_t i = 0; i < encoded.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = encoded;
      flipped[i] ^= static_cast<char>(1 << bit);
      auto s = DecodeConfig(flipped);  // May decode to another valid config; must not crash.
      if (!s.ok()) {
        EXPECT_TRUE(absl::IsDataLoss(s.status()));
      }
    }
    std::string zeroed = encoded;
    zeroed[i] = 0;
    auto s = DecodeConfig(zeroed);
    if (!s.ok()) {
      EXPECT_TRUE(absl::IsDataLoss(s.status()));
    }
  }
  // Duplicate voters decode structurally but fail validation.
  EXPECT_TRUE(absl::IsDataLoss(DecodeConfig(std::string("\x01\x02\x01"
                                                        "a"
                                                        "\x01"
                                                        "a"
                                                        "\x00",
                                                        7))
                                   .status()));
}

}  // namespace quorum_test_file
}  // namespace
}  // namespace basalt
