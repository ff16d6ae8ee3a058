#include "tablet/tablet_maintenance.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "tablet/memory_budget.h"
#include "tablet/tablet.h"
#include "tablet/tablet_test_util.h"

namespace basalt {
namespace {
namespace tablet_maintenance_test_file {

class TabletMaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TABLET_ASSERT_OK(h_.Create());
    MaintenanceManager::Options o;
    o.start_scheduler_thread = false;
    o.clock = h_.clock();
    mm_ = std::make_unique<MaintenanceManager>(o);
    mm_->Start();
    maintenance_ = std::make_unique<TabletMaintenance>(h_.tablet(), h_.clock());
    maintenance_->RegisterWith(mm_.get());
  }
  void TearDown() override {
    maintenance_.reset();
    mm_->Shutdown();
  }
  // Runs one scheduling pass and waits for the op it chose; returns its name or "".
  std::string RunPass() {
    MaintenanceOp* op = mm_->RunSchedulingPassForTests();
    mm_->WaitForIdleForTests();
    return op == nullptr ? "" : op->name();
  }
  void Load(int from, int to) {
    for (int k = from; k < to; ++k) TABLET_ASSERT_OK(h_.Insert(k, k));
  }

  std::unique_ptr<MemoryBudget> budget_;  // Declared first: outlives the tablet and manager.
  TabletHarness h_;
  std::unique_ptr<MaintenanceManager> mm_;
  std::unique_ptr<TabletMaintenance> maintenance_;
};

TEST_F(TabletMaintenanceTest, NothingToDoOnAFreshTablet) { EXPECT_EQ(RunPass(), ""); }

TEST_F(TabletMaintenanceTest, OldMemRowSetIsFlushed) {
  Load(0, 100);
  EXPECT_EQ(RunPass(), "");  // Small and young.
  h_.clock()->SetNowMicros(h_.clock()->NowMicros() +
                           (int64_t{FLAGS_flush_threshold_secs} + 1) * 1000000);
  EXPECT_EQ(RunPass(), "FlushMRS(t1)");
  EXPECT_EQ(h_.tablet()->GetStats().mrs_rows, 0);
  EXPECT_EQ(h_.tablet()->GetStats().num_rowsets, 1);
}

TEST_F(TabletMaintenanceTest, LargeMemRowSetIsFlushed) {
  gflags::FlagSaver saver;
  FLAGS_flush_threshold_mb = 1;
  Load(0, 20000);  // ~1.6 MB of MemRowSet.
  EXPECT_EQ(RunPass(), "FlushMRS(t1)");
  EXPECT_EQ(h_.tablet()->GetStats().mrs_rows, 0);
}

TEST_F(TabletMaintenanceTest, AncientUndoFilesAreGarbageCollected) {
  gflags::FlagSaver saver;
  FLAGS_tablet_history_max_age_sec = 10;
  Load(0, 1000);
  TABLET_ASSERT_OK(h_.tablet()->FlushMemRowSet());
  const uint64_t undo = h_.tablet()->GetStats().undo_bytes;
  ASSERT_GT(undo, 0u);
  EXPECT_EQ(RunPass(), "");  // The history is younger than the mark.
  h_.clock()->SetNowMicros(h_.clock()->NowMicros() + 11 * 1000000);
  MaintenanceOpStats stats;
  for (const auto& op : maintenance_->ops()) {
    if (op->name() == "UndoHistoryGC(t1)") op->UpdateStats(&stats);
  }
  EXPECT_TRUE(stats.runnable);
  EXPECT_EQ(stats.data_retained_bytes, static_cast<int64_t>(undo));
  EXPECT_EQ(RunPass(), "UndoHistoryGC(t1)");
  EXPECT_EQ(h_.tablet()->GetStats().undo_bytes, 0u);
  EXPECT_EQ(h_.Scan().size(), 1000u);
  EXPECT_EQ(RunPass(), "");
}

TEST_F(TabletMaintenanceTest, OverlappingRowSetsAreCompacted) {
  for (int round = 0; round < 4; ++round) {
    // Interleaved keys: every rowset spans the whole key range.
    for (int k = round; k < 2000; k += 4) TABLET_ASSERT_OK(h_.Insert(k, k));
    TABLET_ASSERT_OK(h_.tablet()->FlushMemRowSet());
  }
  EXPECT_EQ(h_.tablet()->GetStats().num_rowsets, 4);
  EXPECT_GT(h_.tablet()->MergeCompactionQuality(), 0.5);
  EXPECT_EQ(RunPass(), "CompactRowSets(t1)");
  EXPECT_EQ(h_.tablet()->GetStats().num_rowsets, 1);
  EXPECT_EQ(h_.Scan().size(), 2000u);
  EXPECT_EQ(RunPass(), "");
}

TEST_F(TabletMaintenanceTest, HeavilyUpdatedRowSetGetsMajorDeltaCompaction) {
  gflags::FlagSaver saver;
  FLAGS_tablet_major_delta_compaction_ratio = 0.005;  // REDOs compress far better than rows.
  Load(0, 2000);
  TABLET_ASSERT_OK(h_.tablet()->FlushMemRowSet());
  for (int pass = 0; pass < 3; ++pass) {
    for (int k = 0; k < 2000; ++k) TABLET_ASSERT_OK(h_.Update(k, pass));
    TABLET_ASSERT_OK(h_.tablet()->FlushDeltas());
  }
  EXPECT_GT(h_.tablet()->GetStats().max_redo_ratio, 0.005);
  EXPECT_EQ(RunPass(), "MajorDeltaCompaction(t1)");
  EXPECT_EQ(h_.tablet()->GetStats().max_redo_files, 0u);
  std::vector<TestRow> rows = h_.Scan();
  ASSERT_EQ(rows.size(), 2000u);
  EXPECT_EQ(rows[10].val, 2);
}

TEST_F(TabletMaintenanceTest, MemoryPressureFlushesFirst) {
  MemoryBudgetOptions bo;
  bo.limit_bytes = 4 << 20;
  bo.clock = h_.clock();
  auto budget = MemoryBudget::Create(bo);
  BASALT_ASSERT_OK(budget);
  budget_ = std::move(*budget);
  maintenance_.reset();
  mm_->Shutdown();
  MaintenanceManager::Options o;
  o.start_scheduler_thread = false;
  o.clock = h_.clock();
  o.memory_budget = budget_.get();
  mm_ = std::make_unique<MaintenanceManager>(o);
  mm_->Start();
  h_.set_memory_budget(budget_.get());
  TABLET_ASSERT_OK(h_.Reopen());
  maintenance_ = std::make_unique<TabletMaintenance>(h_.tablet(), h_.clock());
  maintenance_->RegisterWith(mm_.get());
  Load(0, 40000);  // ~3 MB: past the 60% pressure mark of 4 MiB.
  EXPECT_TRUE(budget_->UnderPressure());
  EXPECT_EQ(RunPass(), "FlushMRS(t1)");
  // The next write reports the freed memory.
  TABLET_ASSERT_OK(h_.Insert(100000, 1));
  EXPECT_FALSE(budget_->UnderPressure());
}

}  // namespace tablet_maintenance_test_file
}  // namespace
}  // namespace basalt
