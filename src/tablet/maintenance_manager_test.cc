#include "tablet/maintenance_manager.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/status_test_util.h"
#include "tablet/memory_budget.h"

namespace basalt {
namespace {
namespace maintenance_manager_test_file {

// A maintenance op whose stats, Prepare() answer and Perform() result the test sets. Perform()
// can be held until Release(). Detects any overlap of its own methods. Thread-safe.
class FakeOp : public MaintenanceOp {
 public:
  explicit FakeOp(std::string name) : MaintenanceOp(std::move(name)) {}

  void set_stats(const MaintenanceOpStats& stats) {
    absl::MutexLock l(&mu_);
    stats_ = stats;
  }
  void set_prepare_result(bool ready) {
    absl::MutexLock l(&mu_);
    prepare_result_ = ready;
  }
  void set_perform_status(absl::Status status) {
    absl::MutexLock l(&mu_);
    perform_status_ = std::move(status);
  }
  // Runs at the start of every Perform().
  void set_perform_hook(std::function<void()> hook) {
    absl::MutexLock l(&mu_);
    hook_ = std::move(hook);
  }
  // From now on Perform() blocks until Release().
  void Hold() {
    absl::MutexLock l(&mu_);
    released_ = false;
  }
  void Release() {
    absl::MutexLock l(&mu_);
    released_ = true;
  }
  // Blocks until a Perform() call is in progress.
  void WaitUntilPerforming() {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(&performing_));
  }

  int performs() const { return performs_.load(); }
  int prepares() const { return prepares_.load(); }
  bool overlapped() const { return overlapped_.load(); }

  void UpdateStats(MaintenanceOpStats* stats) override {
    Enter();
    absl::MutexLock l(&mu_);
    *stats = stats_;
    Leave();
  }
  bool Prepare() override {
    Enter();
    ++prepares_;
    absl::MutexLock l(&mu_);
    Leave();
    return prepare_result_;
  }
  absl::Status Perform() override {
    Enter();
    std::function<void()> hook;
    {
      absl::MutexLock l(&mu_);
      performing_ = true;
      hook = hook_;
    }
    if (hook) hook();
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(&released_));
    performing_ = false;
    ++performs_;
    Leave();
    return perform_status_;
  }

 private:
  void Enter() {
    if (in_method_.fetch_add(1) != 0) overlapped_ = true;
  }
  void Leave() { in_method_.fetch_sub(1); }

  absl::Mutex mu_;
  MaintenanceOpStats stats_ ABSL_GUARDED_BY(mu_);
  bool prepare_result_ ABSL_GUARDED_BY(mu_) = true;
  absl::Status perform_status_ ABSL_GUARDED_BY(mu_);
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
  bool released_ ABSL_GUARDED_BY(mu_) = true;
  bool performing_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int> performs_{0};
  std::atomic<int> prepares_{0};
  std::atomic<int> in_method_{0};
  std::atomic<bool> overlapped_{false};
};

MaintenanceOpStats Runnable(MaintenanceOpStats stats) {
  stats.runnable = true;
  return stats;
}

class MaintenanceManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryBudgetOptions budget_options;
    budget_options.limit_bytes = 1000;  // Pressure at 600.
    budget_options.clock = &clock_;
    auto budget = MemoryBudget::Create(budget_options);
    BASALT_ASSERT_OK(budget);
    budget_ = std::move(*budget);
    memory_ = budget_->RegisterConsumer("tablets");

    options_.num_threads = 1;
    options_.log_target_retention_bytes = 1000;
    options_.memory_budget = budget_.get();
    options_.clock = &clock_;
    options_.start_scheduler_thread = false;
  }

  void TearDown() override {
    if (mm_ != nullptr) {
      for (auto& op : ops_) op->Release();
      mm_->Shutdown();
      for (auto& op : ops_) {
        EXPECT_FALSE(op->overlapped()) << op->name();
        mm_->UnregisterOp(op.get());
      }
      mm_.reset();
    }
    memory_.reset();
  }

  void StartManager() {
    mm_ = std::make_unique<MaintenanceManager>(options_);
    mm_->Start();
  }

  FakeOp* AddOp(const std::string& name, MaintenanceOpStats stats) {
    ops_.push_back(std::make_unique<FakeOp>(name));
    ops_.back()->set_stats(stats);
    mm_->RegisterOp(ops_.back().get());
    return ops_.back().get();
  }

  // Runs one pass and waits for the op it started (if any) to finish.
  MaintenanceOp* RunPass() {
    MaintenanceOp* op = mm_->RunSchedulingPassForTests();
    mm_->WaitForIdleForTests();
    return op;
  }

  ManualClock clock_;
  std::unique_ptr<MemoryBudget> budget_;
  std::unique_ptr<MemoryBudget::Consumer> memory_;
  MaintenanceManager::Options options_;
  std::vector<std::unique_ptr<FakeOp>> ops_;
  std::unique_ptr<MaintenanceManager> mm_;
};

TEST_F(MaintenanceManagerTest, MemoryPressureRunsTheOpAnchoringTheMostMemory) {
  StartManager();
  AddOp("perf", Runnable({.ram_anchored_bytes = 100, .perf_improvement = 5}));
  FakeOp* big = AddOp("big-mrs", Runnable({.ram_anchored_bytes = 300}));
  AddOp("wal", Runnable({.ram_anchored_bytes = 10, .logs_retained_bytes = 1 << 30}));
  AddOp("not-runnable", {.ram_anchored_bytes = 900});

  memory_->Set(600);
  EXPECT_EQ(RunPass(), big);
  EXPECT_EQ(big->performs(), 1);
  MaintenanceManagerStatus status = mm_->GetStatus();
  ASSERT_EQ(status.completed.size(), 1u);
  EXPECT_EQ(status.completed[0].name, "big-mrs");
  EXPECT_NE(status.completed[0].reason.find("memory pressure"), std::string::npos);
  ASSERT_EQ(status.ops.size(), 4u);
  EXPECT_EQ(status.ops[1].last_stats.ram_anchored_bytes, 300);

  // Ties on memory are broken by WAL retained.
  ops_[1]->set_stats(Runnable({.ram_anchored_bytes = 10, .logs_retained_bytes = 5}));
  ops_[0]->set_stats(Runnable({.ram_anchored_bytes = 10}));
  EXPECT_EQ(RunPass(), ops_[2].get());
}

TEST_F(MaintenanceManagerTest, PressureWithoutMemoryAnchoringOpsFallsThrough) {
  StartManager();
  FakeOp* perf = AddOp("compact", Runnable({.perf_improvement = 0.5}));
  memory_->Set(900);
  EXPECT_EQ(RunPass(), perf);
}

TEST_F(MaintenanceManagerTest, WalRetentionAboveTargetComesBeforePerf) {
  StartManager();
  AddOp("perf", Runnable({.perf_improvement = 50}));
  AddOp("wal-small", Runnable({.ram_anchored_bytes = 1, .logs_retained_bytes = 5000}));
  FakeOp* wal =
      AddOp("wal-more-ram", Runnable({.ram_anchored_bytes = 50, .logs_retained_bytes = 5000}));
  EXPECT_EQ(RunPass(), wal);
  EXPECT_NE(mm_->GetStatus().completed[0].reason.find("WAL"), std::string::npos);

  // At or below the target, retention is no reason to run.
  ops_[1]->set_stats(Runnable({.logs_retained_bytes = 1000}));
  ops_[2]->set_stats(Runnable({.logs_retained_bytes = 999}));
  EXPECT_EQ(RunPass(), ops_[0].get());
}

TEST_F(MaintenanceManagerTest, BestPerfScoreAboveThresholdScaledByWorkload) {
  StartManager();
  FakeOp* a = AddOp("a", Runnable({.perf_improvement = 1.0}));
  FakeOp* b = AddOp("b", Runnable({.perf_improvement = 0.6, .workload_score = 1.0}));
  EXPECT_EQ(RunPass(), b);  // 0.6 * 2 > 1.0.
  b->set_stats(Runnable({.perf_improvement = 0.4, .workload_score = 1.0}));
  EXPECT_EQ(RunPass(), a);

  // Tiny improvements are not worth running, whatever the workload.
  a->set_stats(Runnable({.perf_improvement = 1e-6, .workload_score = 1e6}));
  b->set_stats(Runnable({.perf_improvement = 0}));
  EXPECT_EQ(RunPass(), nullptr);
  EXPECT_EQ(a->prepares() + b->prepares(), 2);
}

TEST_F(MaintenanceManagerTest, HistoryGcAlternatesWithPerfOps) {
  StartManager();
  FakeOp* gc = AddOp("gc", Runnable({.data_retained_bytes = 100}));
  FakeOp* perf = AddOp("perf", Runnable({.perf_improvement = 1}));
  std::vector<MaintenanceOp*> chosen;
  for (int i = 0; i < 4; ++i) chosen.push_back(RunPass());
  EXPECT_EQ(chosen, (std::vector<MaintenanceOp*>{gc, perf, gc, perf}));
  // Alone, GC runs every time.
  perf->set_stats({});
  EXPECT_EQ(RunPass(), gc);
  EXPECT_EQ(RunPass(), gc);
}

TEST_F(MaintenanceManagerTest, DeclinedPrepareFallsBackToTheNextOp) {
  StartManager();
  FakeOp* best = AddOp("best", Runnable({.perf_improvement = 9}));
  FakeOp* next = AddOp("next", Runnable({.perf_improvement = 1}));
  best->set_prepare_result(false);
  EXPECT_EQ(RunPass(), next);
  EXPECT_EQ(best->prepares(), 1);
  EXPECT_EQ(best->performs(), 0);
  EXPECT_EQ(next->performs(), 1);
  next->set_prepare_result(false);
  EXPECT_EQ(RunPass(), nullptr);
}

TEST_F(MaintenanceManagerTest, NeverRunsTheSameOpTwiceConcurrently) {
  options_.num_threads = 3;
  StartManager();
  FakeOp* hot = AddOp("hot", Runnable({.perf_improvement = 10}));
  FakeOp* other = AddOp("other", Runnable({.perf_improvement = 1}));
  hot->Hold();
  other->Hold();
  EXPECT_EQ(mm_->RunSchedulingPassForTests(), hot);
  hot->WaitUntilPerforming();
  // The best op is running: the free workers get the next best, then nothing.
  EXPECT_EQ(mm_->RunSchedulingPassForTests(), other);
  EXPECT_EQ(mm_->RunSchedulingPassForTests(), nullptr);
  other->WaitUntilPerforming();
  MaintenanceManagerStatus status = mm_->GetStatus();
  ASSERT_EQ(status.running.size(), 2u);
  EXPECT_TRUE(status.ops[0].running);
  hot->Release();
  other->Release();
  mm_->WaitForIdleForTests();
  EXPECT_EQ(hot->performs(), 1);
  EXPECT_EQ(mm_->GetStatus().running.size(), 0u);
}

TEST_F(MaintenanceManagerTest, BusyWorkersMeanNoPass) {
  StartManager();  // One worker.
  FakeOp* a = AddOp("a", Runnable({.perf_improvement = 2}));
  AddOp("b", Runnable({.perf_improvement = 1}));
  a->Hold();
  EXPECT_EQ(mm_->RunSchedulingPassForTests(), a);
  EXPECT_EQ(mm_->RunSchedulingPassForTests(), nullptr);
  a->Release();
  mm_->WaitForIdleForTests();
  EXPECT_EQ(RunPass(), a);
}

TEST_F(MaintenanceManagerTest, UnregisterWaitsForTheRunningInstance) {
  StartManager();
  FakeOp* op = AddOp("flush", Runnable({.perf_improvement = 1}));
  op->Hold();
  std::atomic<bool> unregistered{false};
  ASSERT_EQ(mm_->RunSchedulingPassForTests(), op);
  op->WaitUntilPerforming();
  std::thread t([&] {
    mm_->UnregisterOp(op);
    unregistered = true;
  });
  // Wait until UnregisterOp has begun (or, wrongly, returned); it must then be waiting.
  while (!unregistered.load()) {
    MaintenanceManagerStatus status = mm_->GetStatus();
    if (!status.ops.empty() && status.ops[0].unregistering) break;
    std::this_thread::yield();
  }
  EXPECT_FALSE(unregistered.load());
  op->Release();
  t.join();
  EXPECT_TRUE(unregistered.load());
  EXPECT_EQ(op->performs(), 1);
  EXPECT_TRUE(mm_->GetStatus().ops.empty());
  ops_.clear();  // Already unregistered.
}

TEST_F(MaintenanceManagerTest, ShutdownWaitsForRunningOps) {
  StartManager();
  FakeOp* op = AddOp("compact", Runnable({.perf_improvement = 1}));
  op->Hold();
  ASSERT_EQ(mm_->RunSchedulingPassForTests(), op);
  op->WaitUntilPerforming();
  std::atomic<bool> shut_down{false};
  std::thread t([&] {
    mm_->Shutdown();
    shut_down = true;
  });
  while (!shut_down.load() && !mm_->GetStatus().shutting_down) std::this_thread::yield();
  EXPECT_FALSE(shut_down.load());
  op->Release();
  t.join();
  EXPECT_EQ(op->performs(), 1);
  ASSERT_EQ(mm_->GetStatus().completed.size(), 1u);
  BASALT_EXPECT_OK(mm_->GetStatus().completed[0].status);
  // Nothing runs after shutdown; unregistering still works (TearDown).
  EXPECT_EQ(mm_->RunSchedulingPassForTests(), nullptr);
  mm_->Shutdown();  // Idempotent.
}

TEST_F(MaintenanceManagerTest, FailedPerformIsRecordedAndBackedOff) {
  StartManager();
  FakeOp* bad = AddOp("bad", Runnable({.perf_improvement = 5}));
  FakeOp* good = AddOp("good", Runnable({.perf_improvement = 1}));
  bad->set_perform_status(absl::DataLossError("corrupt delta file"));
  EXPECT_EQ(RunPass(), bad);
  MaintenanceManagerStatus status = mm_->GetStatus();
  EXPECT_EQ(status.completed[0].status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(status.ops[0].consecutive_failures, 1);

  // Backing off for 1 s: the manager carries on with the other op.
  EXPECT_EQ(RunPass(), good);
  clock_.AdvanceMicros(1000000);
  EXPECT_EQ(RunPass(), bad);
  // Second failure: 2 s.
  clock_.AdvanceMicros(1000000);
  EXPECT_EQ(RunPass(), good);
  clock_.AdvanceMicros(1000000);
  bad->set_perform_status(absl::OkStatus());
  EXPECT_EQ(RunPass(), bad);
  EXPECT_EQ(mm_->GetStatus().ops[0].consecutive_failures, 0);
  EXPECT_EQ(RunPass(), bad);  // No backoff after a success.
}

TEST_F(MaintenanceManagerTest, CompletedHistoryKeepsTheNewestWithDurations) {
  options_.history_size = 3;
  StartManager();
  FakeOp* op = AddOp("op", Runnable({.perf_improvement = 1}));
  int64_t run_micros = 0;
  op->set_perform_hook([&] { clock_.AdvanceMicros(run_micros); });
  for (int i = 1; i <= 5; ++i) {
    run_micros = i * 1000;
    ASSERT_EQ(RunPass(), op);
  }
  MaintenanceManagerStatus status = mm_->GetStatus();
  ASSERT_EQ(status.completed.size(), 3u);
  EXPECT_EQ(status.completed[0].duration, absl::Milliseconds(5));
  EXPECT_EQ(status.completed[1].duration, absl::Milliseconds(4));
  EXPECT_EQ(status.completed[2].duration, absl::Milliseconds(3));
  EXPECT_GT(status.completed[0].start_wall_micros, status.completed[1].start_wall_micros);
}

TEST_F(MaintenanceManagerTest, RunningOpsAreListed) {
  StartManager();
  FakeOp* op = AddOp("flush-mrs", Runnable({.ram_anchored_bytes = 10}));
  op->Hold();
  memory_->Set(700);
  ASSERT_EQ(mm_->RunSchedulingPassForTests(), op);
  op->WaitUntilPerforming();
  clock_.AdvanceMicros(7000);
  MaintenanceManagerStatus status = mm_->GetStatus();
  ASSERT_EQ(status.running.size(), 1u);
  EXPECT_EQ(status.running[0].name, "flush-mrs");
  EXPECT_EQ(status.running[0].duration, absl::Milliseconds(7));
  EXPECT_NE(status.running[0].reason.find("memory pressure"), std::string::npos);
  op->Release();
}

TEST(MaintenanceOpDeathTest, DestroyingARegisteredOpIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        MaintenanceManager::Options options;
        options.start_scheduler_thread = false;
        MaintenanceManager mm(options);
        auto op = std::make_unique<FakeOp>("leaked");
        mm.RegisterOp(op.get());
        op.reset();
      },
      "destroyed while still registered");
}

// With the real scheduler thread: a pressure crossing wakes it long before its poll.
TEST_F(MaintenanceManagerTest, MemoryPressureWakesTheScheduler) {
  options_.start_scheduler_thread = true;
  options_.polling_interval = absl::Hours(1);
  StartManager();
  absl::Notification flushed;
  FakeOp* op = AddOp("flush", Runnable({.ram_anchored_bytes = 500}));
  op->set_perform_hook([&] {
    if (!flushed.HasBeenNotified()) flushed.Notify();
    memory_->Set(0);  // The flush frees the memory: no more pressure.
  });
  memory_->Set(650);
  ASSERT_TRUE(flushed.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

// Many always-runnable ops on several workers with the real scheduler: no op ever overlaps with
// itself (FakeOp checks; TearDown asserts).
TEST_F(MaintenanceManagerTest, SchedulerStressNeverOverlapsAnOp) {
  options_.start_scheduler_thread = true;
  options_.num_threads = 3;
  StartManager();
  std::atomic<int> total{0};
  absl::Notification done;
  for (int i = 0; i < 5; ++i) {
    FakeOp* op = AddOp("op" + std::to_string(i), Runnable({.perf_improvement = 1.0 + i}));
    op->set_perform_hook([&] {
      if (++total == 500) done.Notify();
    });
  }
  mm_->WakeUp();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  mm_->Shutdown();
  int performs = 0;
  for (auto& op : ops_) performs += op->performs();
  EXPECT_GE(performs, 500);
  // The best op is never starved by a copy of itself: it runs whenever a worker is free.
  EXPECT_GT(ops_.back()->performs(), 0);
}

}  // namespace maintenance_manager_test_file
}  // namespace
}  // namespace basalt
