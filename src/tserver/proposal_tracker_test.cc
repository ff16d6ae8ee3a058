#include "tserver/proposal_tracker.h"

#include <thread>

#include <gtest/gtest.h>

#include "absl/time/clock.h"

namespace basalt {
namespace {
namespace proposal_tracker_test_file {

std::shared_ptr<PendingOp> Op(ProposalTracker* t, uint64_t ts) {
  auto op = std::make_shared<PendingOp>();
  op->seq = t->NextSeq();
  op->ts = HybridTime(ts);
  return op;
}

TEST(ProposalTrackerTest, SequencesIncreaseFromARandomStart) {
  ProposalTracker a, b;
  const uint64_t first = a.NextSeq();
  EXPECT_EQ(a.NextSeq(), first + 1);
  EXPECT_NE(b.NextSeq(), first) << "two incarnations started at the same sequence";
}

TEST(ProposalTrackerTest, ApplyTakesItsOwnOpOnce) {
  ProposalTracker t;
  auto op = Op(&t, 100);
  t.Add(op);
  EXPECT_EQ(t.Take(op->seq, HybridTime(101)), nullptr) << "matched another timestamp";
  EXPECT_EQ(t.Take(op->seq + 1, HybridTime(100)), nullptr);
  EXPECT_EQ(t.Take(op->seq, HybridTime(100)), op);
  EXPECT_EQ(t.Take(op->seq, HybridTime(100)), nullptr);
  EXPECT_FALSE(t.Abandon(op->seq)) << "abandoned an op Apply owns";
}

TEST(ProposalTrackerTest, AbandonedOpsAreNotTaken) {
  ProposalTracker t;
  auto op = Op(&t, 100);
  t.Add(op);
  EXPECT_TRUE(t.Abandon(op->seq));
  EXPECT_EQ(t.Take(op->seq, HybridTime(100)), nullptr);
}

TEST(ProposalTrackerTest, SnapshotsWaitForOpsAtOrBelowTheirTime) {
  ProposalTracker t;
  auto low = Op(&t, 100);
  auto high = Op(&t, 200);
  t.Add(low);
  t.Add(high);
  EXPECT_TRUE(t.AwaitNoneAtOrBelow(HybridTime(99), absl::Now()));
  EXPECT_FALSE(t.AwaitNoneAtOrBelow(HybridTime(100), absl::Now() + absl::Milliseconds(10)));
  std::thread done([&] {
    absl::SleepFor(absl::Milliseconds(20));
    t.Done(*low);
  });
  EXPECT_TRUE(t.AwaitNoneAtOrBelow(HybridTime(199), absl::Now() + absl::Seconds(30)));
  done.join();
  EXPECT_FALSE(t.AwaitNoneAtOrBelow(HybridTime(200), absl::Now()));
  // Taken by Apply, an op stays in flight until its proposal completes.
  ASSERT_EQ(t.Take(high->seq, high->ts), high);
  EXPECT_FALSE(t.AwaitNoneAtOrBelow(HybridTime(200), absl::Now()));
  t.Done(*high);
  EXPECT_TRUE(t.AwaitNoneAtOrBelow(HybridTime(1000), absl::Now()));
}

}  // namespace proposal_tracker_test_file
}  // namespace
}  // namespace basalt
