#include "tserver/replica_state.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "common/status_test_util.h"
#include "proto/common.pb.h"
#include "rpc/rpc_status.h"

namespace basalt {
namespace {
namespace replica_state_test_file {

pb::ErrorDetailPB::Code DetailCode(const absl::Status& s) {
  auto d = GetErrorDetail(s);
  return d.has_value() ? d->code() : pb::ErrorDetailPB::UNKNOWN_ERROR;
}

TEST(ReplicaStateTest, BootstrapsThenRunsThenStops) {
  ReplicaStateTracker t("t1");
  EXPECT_EQ(t.state(), ReplicaState::kBootstrapping);
  absl::Status s = t.CheckRunning();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(DetailCode(s), pb::ErrorDetailPB::TABLET_NOT_RUNNING) << s;
  EXPECT_TRUE(t.Set(ReplicaState::kRunning));
  EXPECT_FALSE(t.Set(ReplicaState::kRunning));  // No change.
  BASALT_EXPECT_OK(t.CheckRunning());
  EXPECT_TRUE(t.Set(ReplicaState::kStopping));
  EXPECT_FALSE(t.Set(ReplicaState::kRunning)) << "a stopping replica came back";
  EXPECT_EQ(t.state(), ReplicaState::kStopping);
  EXPECT_EQ(DetailCode(t.CheckRunning()), pb::ErrorDetailPB::TABLET_NOT_RUNNING);
}

TEST(ReplicaStateTest, FailedIsFinalAndKeepsTheFirstError) {
  ReplicaStateTracker t("t1");
  ASSERT_TRUE(t.Set(ReplicaState::kRunning));
  EXPECT_TRUE(t.Set(ReplicaState::kFailed, absl::DataLossError("bad block 7")));
  EXPECT_FALSE(t.Set(ReplicaState::kFailed, absl::UnavailableError("later")));
  EXPECT_FALSE(t.Set(ReplicaState::kRunning));
  EXPECT_FALSE(t.Set(ReplicaState::kStopping));
  EXPECT_EQ(t.state(), ReplicaState::kFailed);
  EXPECT_TRUE(absl::IsDataLoss(t.error())) << t.error();
  absl::Status s = t.CheckRunning();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(DetailCode(s), pb::ErrorDetailPB::TABLET_FAILED) << s;
  EXPECT_NE(s.message().find("bad block 7"), std::string::npos) << s;
  // A stopping replica may still fail (a fault found during shutdown).
  ReplicaStateTracker u("t2");
  ASSERT_TRUE(u.Set(ReplicaState::kStopping));
  EXPECT_TRUE(u.Set(ReplicaState::kFailed, absl::UnavailableError("eio")));
}

TEST(ReplicaStateTest, WaitUntilRunning) {
  ReplicaStateTracker t("t1");
  EXPECT_FALSE(t.WaitUntilRunning(absl::Milliseconds(10)));
  std::thread starter([&] {
    absl::SleepFor(absl::Milliseconds(20));
    t.Set(ReplicaState::kRunning);
  });
  EXPECT_TRUE(t.WaitUntilRunning(absl::Seconds(30)));
  starter.join();
  ReplicaStateTracker f("t2");
  f.Set(ReplicaState::kFailed, absl::UnavailableError("eio"));
  EXPECT_FALSE(f.WaitUntilRunning(absl::Seconds(30)));  // Returns at once: not bootstrapping.
}

TEST(ReplicaStateTest, AwaitEndsOnNotifyOnFailureOrAtTheDeadline) {
  ReplicaStateTracker t("t1");
  t.Set(ReplicaState::kRunning);
  std::atomic<int> value{0};
  // The deadline.
  EXPECT_FALSE(t.Await([&] { return value.load() == 1; }, absl::Now() + absl::Milliseconds(20)));
  // A Notify after the condition changed.
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(20));
    value = 1;
    t.Notify();
  });
  EXPECT_TRUE(t.Await([&] { return value.load() == 1; }, absl::Now() + absl::Seconds(30)));
  setter.join();
  // A failure ends the wait with the condition still false.
  std::thread failer([&] {
    absl::SleepFor(absl::Milliseconds(20));
    t.Set(ReplicaState::kFailed, absl::UnavailableError("eio"));
  });
  const absl::Time start = absl::Now();
  EXPECT_FALSE(t.Await([&] { return value.load() == 2; }, absl::Now() + absl::Seconds(30)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << "the failure did not end the wait";
  failer.join();
}

}  // namespace replica_state_test_file
}  // namespace
}  // namespace basalt
