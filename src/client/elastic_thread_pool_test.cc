#include "client/elastic_thread_pool.h"

#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace basalt::client::internal {
namespace {
namespace elastic_thread_pool_test_file {

TEST(ElasticThreadPoolTest, BlockedTasksNeverDelayNewOnes) {
  ElasticThreadPool pool;
  absl::Notification release;
  constexpr int kBlocked = 20;
  absl::BlockingCounter started(kBlocked);
  for (int i = 0; i < kBlocked; ++i) {
    pool.Run([&] {
      started.DecrementCount();
      release.WaitForNotification();
    });
  }
  // Every task started although none finished: each got its own thread.
  started.Wait();
  EXPECT_EQ(pool.num_threads(), kBlocked);
  absl::Notification ran;
  pool.Run([&] { ran.Notify(); });
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  release.Notify();
}

TEST(ElasticThreadPoolTest, ReusesIdleThreads) {
  ElasticThreadPool pool;
  absl::Mutex mu;
  std::set<std::thread::id> ran_on;
  for (int round = 0; round < 50; ++round) {
    absl::BlockingCounter done(4);
    for (int i = 0; i < 4; ++i) {
      pool.Run([&] {
        {
          absl::MutexLock l(&mu);
          ran_on.insert(std::this_thread::get_id());
        }
        done.DecrementCount();
      });
    }
    done.Wait();
    // The tasks are done; once their threads are idle again, the next round needs no new one.
    while (pool.num_idle() < pool.num_threads()) absl::SleepFor(absl::Milliseconds(1));
  }
  // 200 tasks, never more than 4 at once: they ran on at most 4 threads (fewer when a thread
  // was back to idle before the next task of its round came).
  EXPECT_LE(pool.num_threads(), 4);
  absl::MutexLock l(&mu);
  EXPECT_LE(ran_on.size(), 4u);
  EXPECT_GE(ran_on.size(), 1u);
}

TEST(ElasticThreadPoolTest, IdleThreadsExitAndNewTasksStillRun) {
  ElasticThreadPool pool(absl::Milliseconds(20));
  absl::BlockingCounter done(3);
  for (int i = 0; i < 3; ++i) pool.Run([&] { done.DecrementCount(); });
  done.Wait();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (pool.num_threads() > 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(pool.num_threads(), 0);
  absl::Notification ran;
  pool.Run([&] { ran.Notify(); });  // Also joins the threads that exited.
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(ElasticThreadPoolTest, DestructorWaitsForRunningTasks) {
  std::atomic<int> finished{0};
  {
    ElasticThreadPool pool;
    for (int i = 0; i < 8; ++i) {
      pool.Run([&] {
        absl::SleepFor(absl::Milliseconds(20));
        finished.fetch_add(1);
      });
    }
  }
  EXPECT_EQ(finished.load(), 8);
}

}  // namespace elastic_thread_pool_test_file
}  // namespace
}  // namespace basalt::client::internal
