#include "common/serial_task_pool.h"

#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace basalt {
namespace {
namespace serial_task_pool_test_file {

TEST(SerialTaskPoolTest, OneTokenRunsItsTasksInOrderOneAtATime) {
  SerialTaskPool pool(4);
  auto token = pool.NewToken();
  absl::Mutex mu;
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  absl::Notification last;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(token->Submit([&, i] {
      const int now = ++running;
      int seen = max_running.load();
      while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
      }
      {
        absl::MutexLock l(&mu);
        order.push_back(i);
      }
      --running;
      if (i == 199) last.Notify();
    }));
  }
  ASSERT_TRUE(last.WaitForNotificationWithTimeout(absl::Seconds(30)));
  token->Shutdown();
  EXPECT_EQ(max_running.load(), 1);
  absl::MutexLock l(&mu);
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

TEST(SerialTaskPoolTest, TokensRunInParallel) {
  SerialTaskPool pool(2);
  auto a = pool.NewToken();
  auto b = pool.NewToken();
  // A's task waits for B's: with a single shared queue this would deadlock.
  absl::Notification b_ran;
  absl::Notification a_done;
  ASSERT_TRUE(a->Submit([&] {
    EXPECT_TRUE(b_ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
    a_done.Notify();
  }));
  ASSERT_TRUE(b->Submit([&] { b_ran.Notify(); }));
  EXPECT_TRUE(a_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(SerialTaskPoolTest, ShutdownWaitsForTheRunningTaskAndDropsTheQueue) {
  SerialTaskPool pool(1);
  auto token = pool.NewToken();
  absl::Notification started;
  absl::Notification release;
  std::atomic<bool> finished{false};
  std::atomic<int> later_ran{0};
  ASSERT_TRUE(token->Submit([&] {
    started.Notify();
    release.WaitForNotification();
    finished = true;
  }));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(token->Submit([&] { ++later_ran; }));
  started.WaitForNotification();
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    release.Notify();
  });
  token->Shutdown();
  EXPECT_TRUE(finished.load()) << "Shutdown returned while a task still ran";
  EXPECT_EQ(later_ran.load(), 0);
  EXPECT_FALSE(token->Submit([&] { ++later_ran; }));
  releaser.join();
  // The pool still serves other tokens.
  auto other = pool.NewToken();
  absl::Notification ran;
  ASSERT_TRUE(other->Submit([&] { ran.Notify(); }));
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(SerialTaskPoolTest, DrainRunsEveryQueuedTaskFirst) {
  SerialTaskPool pool(1);
  auto token = pool.NewToken();
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(token->Submit([&] {
      absl::SleepFor(absl::Microseconds(200));
      ++ran;
    }));
  }
  token->Drain();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_FALSE(token->Submit([] {})) << "a drained token took a task";
}

TEST(SerialTaskPoolTest, DestroyingAQueuedTokenUnlinksIt) {
  SerialTaskPool pool(1);
  auto blocker = pool.NewToken();
  absl::Notification release;
  ASSERT_TRUE(blocker->Submit([&] { release.WaitForNotification(); }));
  {
    auto queued = pool.NewToken();
    ASSERT_TRUE(queued->Submit([] { FAIL() << "a dropped task ran"; }));
  }  // Destroyed while waiting in the ready queue.
  release.Notify();
  blocker->Shutdown();
}

}  // namespace serial_task_pool_test_file
}  // namespace
}  // namespace basalt
