#include "tablet/mvcc.h"

#include <thread>

#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace mvcc_test_file {

HybridTime T(uint64_t v) { return HybridTime(v); }

TEST(MvccTest, SnapshotBasics) {
  MvccSnapshot none;
  EXPECT_FALSE(none.IsCommitted(T(1)));
  MvccSnapshot s = MvccSnapshot::IncludingAllBefore(T(10));
  EXPECT_TRUE(s.IsCommitted(T(9)));
  EXPECT_FALSE(s.IsCommitted(T(10)));
  EXPECT_FALSE(s.MayHaveCommittedOpsAtOrAfter(T(10)));
  EXPECT_TRUE(s.MayHaveUncommittedOpsAtOrBefore(T(10)));
  EXPECT_FALSE(s.MayHaveUncommittedOpsAtOrBefore(T(9)));
  EXPECT_TRUE(MvccSnapshot::IncludingAll().IsCommitted(T(1)));
}

TEST(MvccTest, WatermarkAndOutOfOrderCommit) {
  MvccManager mvcc;
  BASALT_ASSERT_OK(mvcc.StartOp(T(10)));
  BASALT_ASSERT_OK(mvcc.StartOp(T(20)));
  BASALT_ASSERT_OK(mvcc.StartOp(T(30)));
  EXPECT_EQ(mvcc.num_in_flight(), 3);
  EXPECT_EQ(mvcc.earliest_in_flight(), T(10));

  mvcc.FinishOp(T(20));
  MvccSnapshot s = mvcc.SnapshotForRead();
  EXPECT_FALSE(s.IsCommitted(T(10)));
  EXPECT_TRUE(s.IsCommitted(T(20)));
  EXPECT_FALSE(s.IsCommitted(T(30)));
  EXPECT_FALSE(s.IsCommitted(T(25)));
  EXPECT_EQ(s.committed_after().size(), 1u);

  mvcc.FinishOp(T(10));
  s = mvcc.SnapshotForRead();
  EXPECT_TRUE(s.IsCommitted(T(10)));
  EXPECT_TRUE(s.IsCommitted(T(20)));
  EXPECT_FALSE(s.IsCommitted(T(30)));
  // Safe time still at its start: the watermark stays low, the committed set carries them.
  EXPECT_EQ(mvcc.all_committed_before(), T(1));

  mvcc.AdjustSafeTime(T(30));
  // Op 30 is still in flight, so the watermark stops there.
  EXPECT_EQ(mvcc.all_committed_before(), T(30));
  s = mvcc.SnapshotForRead();
  EXPECT_TRUE(s.committed_after().empty());
  EXPECT_TRUE(s.IsCommitted(T(29)));
  EXPECT_FALSE(s.IsCommitted(T(30)));

  mvcc.AbortOp(T(30));
  EXPECT_EQ(mvcc.all_committed_before(), T(31));
  s = mvcc.SnapshotForRead();
  // Aborted: below the watermark it reads as "committed", but no row carries its timestamp.
  EXPECT_TRUE(s.IsCommitted(T(30)));
  EXPECT_FALSE(s.IsCommitted(T(31)));
}

TEST(MvccTest, StartOpPreconditions) {
  MvccManager mvcc;
  EXPECT_EQ(mvcc.StartOp(HybridTime::kInvalid).code(), absl::StatusCode::kInvalidArgument);
  BASALT_ASSERT_OK(mvcc.StartOp(T(5)));
  EXPECT_EQ(mvcc.StartOp(T(5)).code(), absl::StatusCode::kFailedPrecondition);
  mvcc.FinishOp(T(5));
  EXPECT_EQ(mvcc.StartOp(T(5)).code(), absl::StatusCode::kFailedPrecondition);
  mvcc.AdjustSafeTime(T(100));
  EXPECT_EQ(mvcc.StartOp(T(50)).code(), absl::StatusCode::kFailedPrecondition);
  mvcc.AdjustSafeTime(T(60));  // Never lowers.
  EXPECT_EQ(mvcc.safe_time(), T(100));
  BASALT_EXPECT_OK(mvcc.StartOp(T(101)));
}

TEST(MvccTest, WaitTimesOutWhileOpInFlightOrSafeTimeBehind) {
  MvccManager mvcc;
  BASALT_ASSERT_OK(mvcc.StartOp(T(10)));
  mvcc.AdjustSafeTime(T(20));  // Op 10 is already in flight; this is allowed.
  auto r = mvcc.WaitForSnapshotWithAllApplied(T(15), absl::Now() + absl::Milliseconds(20));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  mvcc.FinishOp(T(10));
  r = mvcc.WaitForSnapshotWithAllApplied(T(15), absl::Now());
  BASALT_ASSERT_OK(r);
  EXPECT_TRUE(r->IsCommitted(T(15)));
  EXPECT_FALSE(r->IsCommitted(T(16)));
  // Safe time behind the requested time.
  r = mvcc.WaitForSnapshotWithAllApplied(T(25), absl::Now() + absl::Milliseconds(10));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  // An already-expired deadline still succeeds when nothing needs waiting for.
  BASALT_EXPECT_OK(mvcc.WaitForSnapshotWithAllApplied(T(20), absl::InfinitePast()));
}

TEST(MvccTest, WaiterWakesWhenOpFinishesAndSafeTimeAdvances) {
  MvccManager mvcc;
  BASALT_ASSERT_OK(mvcc.StartOp(T(10)));
  absl::Notification started;
  absl::StatusOr<MvccSnapshot> result;
  std::thread waiter([&] {
    started.Notify();
    result = mvcc.WaitForSnapshotWithAllApplied(T(50), absl::InfiniteFuture());
  });
  started.WaitForNotification();
  mvcc.FinishOp(T(10));
  BASALT_ASSERT_OK(mvcc.StartOp(T(40)));
  mvcc.AdjustSafeTime(T(60));
  mvcc.FinishOp(T(40));
  waiter.join();
  BASALT_ASSERT_OK(result);
  EXPECT_TRUE(result->IsCommitted(T(40)));
  EXPECT_TRUE(result->IsCommitted(T(50)));
  EXPECT_FALSE(result->IsCommitted(T(51)));
}

}  // namespace mvcc_test_file
}  // namespace
}  // namespace basalt
