#include "tserver/tombstone_voter.h"

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace tombstone_voter_test_file {

RaftMessage Request(MessageType type, uint64_t term, OpId last, const char* from = "c") {
  RaftMessage m;
  m.type = type;
  m.from = from;
  m.to = "t";
  m.term = term;
  m.log_term = last.term;
  m.index = last.index;
  return m;
}

TEST(TombstoneVoterTest, VotesLikeARaftFollowerWithoutALeader) {
  const OpId last{3, 40};
  HardState hs{3, "", 0};
  // A newer term with a log at least as new: granted, term and vote to persist.
  auto r = TombstoneVoter::Decide(Request(MessageType::kVote, 4, {3, 40}), last, &hs);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->reject);
  EXPECT_EQ(r->type, MessageType::kVoteResponse);
  EXPECT_EQ(r->to, "c");
  EXPECT_EQ(r->term, 4u);
  EXPECT_EQ(hs.term, 4u);
  EXPECT_EQ(hs.vote, "c");
  // The same candidate again: granted; another one in that term: refused.
  r = TombstoneVoter::Decide(Request(MessageType::kVote, 4, {3, 40}), last, &hs);
  EXPECT_FALSE(r->reject);
  r = TombstoneVoter::Decide(Request(MessageType::kVote, 4, {5, 1}, "d"), last, &hs);
  EXPECT_TRUE(r->reject);
  EXPECT_EQ(hs.vote, "c");
  // A stale vote request gets no answer; a stale pre-vote learns the term.
  EXPECT_FALSE(TombstoneVoter::Decide(Request(MessageType::kVote, 3, {9, 9}), last, &hs));
  r = TombstoneVoter::Decide(Request(MessageType::kPreVote, 3, {9, 9}), last, &hs);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->reject);
  EXPECT_EQ(r->term, 4u);
}

TEST(TombstoneVoterTest, RefusesCandidatesBehindItsLastLoggedOp) {
  const OpId last{3, 40};
  HardState hs{3, "", 0};
  // Shorter log of the same term, or an older last term: refused, but the newer term is adopted
  // (a vote request of a newer term moves a Raft follower to it).
  auto r = TombstoneVoter::Decide(Request(MessageType::kVote, 5, {3, 39}), last, &hs);
  EXPECT_TRUE(r->reject);
  EXPECT_EQ(hs.term, 5u);
  EXPECT_TRUE(hs.vote.empty());
  r = TombstoneVoter::Decide(Request(MessageType::kVote, 6, {2, 100}), last, &hs);
  EXPECT_TRUE(r->reject);
  EXPECT_EQ(r->term, 6u);
  // A later last term wins whatever its index.
  r = TombstoneVoter::Decide(Request(MessageType::kVote, 6, {4, 1}), last, &hs);
  EXPECT_FALSE(r->reject);
  EXPECT_EQ(hs.vote, "c");
}

TEST(TombstoneVoterTest, PreVotesChangeNothing) {
  const OpId last{3, 40};
  HardState hs{3, "x", 0};
  // A pre-vote for a later term is granted although a vote was cast in this one; no state moves.
  auto r = TombstoneVoter::Decide(Request(MessageType::kPreVote, 4, {3, 40}), last, &hs);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->reject);
  EXPECT_EQ(r->type, MessageType::kPreVoteResponse);
  EXPECT_EQ(r->term, 4u);
  EXPECT_EQ(hs, (HardState{3, "x", 0}));
  // For the current term it is refused (the vote went to x), and behind the log it is refused.
  EXPECT_TRUE(
      TombstoneVoter::Decide(Request(MessageType::kPreVote, 3, {3, 40}), last, &hs)->reject);
  EXPECT_TRUE(TombstoneVoter::Decide(Request(MessageType::kPreVote, 9, {3, 1}), last, &hs)->reject);
  // Other messages are not its business.
  EXPECT_FALSE(TombstoneVoter::Decide(Request(MessageType::kAppend, 9, {3, 40}), last, &hs));
}

}  // namespace tombstone_voter_test_file
}  // namespace
}  // namespace basalt
