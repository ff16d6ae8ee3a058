// History GC (docs/tablet.md "History GC"): the UNDO file GC (Tablet::GcAncientUndoFiles), the
// history GC mark every GC records, and the refusal of snapshot reads older than the mark. The
// clock is manual and the mark short (--tablet_history_max_age_sec=10), so "the mark passes" is
// one clock step.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/status_test_util.h"
#include "tablet/tablet.h"
#include "tablet/tablet_test_util.h"

namespace basalt {
namespace {
namespace history_gc_test_file {

constexpr int kMaxAgeSec = 10;

MvccSnapshot At(HybridTime t) { return MvccSnapshot::IncludingAllBefore(t.Next()); }

// Rows of keys [from, to) as InsertRange writes them.
std::vector<TestRow> Rows(int from, int to) {
  std::vector<TestRow> rows;
  for (int k = from; k < to; ++k) rows.push_back({k, k, std::nullopt, 7});
  return rows;
}

// Inserts keys [from, to) (val = key) as one op of `h`'s tablet; returns its timestamp.
HybridTime InsertRange(TabletHarness* h, int from, int to) {
  std::vector<TestOp> ops;
  for (int k = from; k < to; ++k) ops.push_back({RowOperationType::kInsert, k, k});
  HybridTime ts;
  for (const absl::Status& s : h->Apply(ops, &ts)) TABLET_CHECK_OK(s);
  return ts;
}

// The status of opening a scan of every column at `snap`.
absl::Status TryScan(const Tablet& tablet, const MvccSnapshot& snap) {
  return tablet.NewIterator(tablet.schema(), snap, ScanSpec(), /*ordered=*/true).status();
}

// The documented refusal: INVALID_ARGUMENT saying the snapshot is too old and naming the flag.
void ExpectTooOld(const absl::Status& s) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("too old"), std::string::npos) << s;
  EXPECT_NE(s.message().find("--tablet_history_max_age_sec=10"), std::string::npos) << s;
}

class HistoryGcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLAGS_tablet_history_max_age_sec = kMaxAgeSec;
    TABLET_ASSERT_OK(h_.Create());
  }
  Tablet* tablet() { return h_.tablet(); }
  void Advance(int seconds) { h_.clock()->AdvanceMicros(int64_t{seconds} * 1000000); }

  gflags::FlagSaver saver_;  // First: restores the flag after the tablet is gone.
  MemoryEnv base_env_;
  FaultInjectionEnv env_{&base_env_};  // Passes everything through unless a test says otherwise.
  TabletHarness h_{&env_};
};

TEST_F(HistoryGcTest, UndoFilesPastTheMarkAreDroppedAndRowsStay) {
  const HybridTime t1 = InsertRange(&h_, 0, 500);
  const HybridTime t2 = InsertRange(&h_, 500, 1000);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());  // Writes the inserts' UNDOs (DELETEs).
  const uint64_t undo = tablet()->GetStats().undo_bytes;
  ASSERT_GT(undo, 0u);
  const std::vector<RowSetMetadata> rs = tablet()->RowSetsForTests();
  ASSERT_EQ(rs.size(), 1u);
  ASSERT_EQ(rs[0].undo_blocks.size(), 1u);
  const BlockId undo_block = rs[0].undo_blocks[0];

  // Before the mark passes: nothing to collect, and the past reads exactly.
  EXPECT_EQ(tablet()->AncientUndoBytes(), 0u);
  TABLET_ASSERT_OK(tablet()->GcAncientUndoFiles());
  EXPECT_EQ(tablet()->GetStats().undo_bytes, undo);
  EXPECT_EQ(h_.Scan(At(t1)), Rows(0, 500));

  Advance(kMaxAgeSec + 1);
  EXPECT_EQ(tablet()->AncientUndoBytes(), undo);
  TABLET_ASSERT_OK(tablet()->GcAncientUndoFiles());
  EXPECT_EQ(tablet()->GetStats().undo_bytes, 0u);
  EXPECT_EQ(tablet()->AncientUndoBytes(), 0u);
  EXPECT_TRUE(tablet()->RowSetsForTests()[0].undo_blocks.empty());
  EXPECT_EQ(h_.block_manager()->OpenBlock(undo_block).status().code(), absl::StatusCode::kNotFound);
  const HybridTime mark = tablet()->history_gc_mark();
  EXPECT_GT(mark, t2);

  // At the latest state and at snapshots at or after the mark: every row.
  EXPECT_EQ(h_.Scan(), Rows(0, 1000));
  EXPECT_EQ(h_.Scan(At(mark)), Rows(0, 1000));
  BASALT_EXPECT_OK(tablet()->CheckSnapshotNotTooOld(mark));
  // Before it: refused (the rows of t1 without their UNDOs would be all 1000).
  ExpectTooOld(TryScan(*tablet(), At(t1)));
  ExpectTooOld(tablet()->CheckSnapshotNotTooOld(t1));
}

TEST_F(HistoryGcTest, SnapshotOlderThanTheMarkIsRefusedBeforeAnyGc) {
  const HybridTime t1 = InsertRange(&h_, 0, 100);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  BASALT_EXPECT_OK(tablet()->CheckSnapshotNotTooOld(t1));
  Advance(kMaxAgeSec + 1);
  const absl::Status s = tablet()->CheckSnapshotNotTooOld(t1);
  ExpectTooOld(s);
  EXPECT_NE(s.message().find(t1.ToString()), std::string::npos) << s;
  BASALT_EXPECT_OK(tablet()->CheckSnapshotNotTooOld(h_.hybrid_clock()->Now()));
  // No GC has removed history at t1 yet (the flush's mark lay below it), so the tablet itself
  // still reads t1 exactly; the rule above makes the outcome independent of whether one has.
  EXPECT_LT(tablet()->history_gc_mark(), t1);
  EXPECT_EQ(h_.Scan(At(t1)), Rows(0, 100));
}

TEST_F(HistoryGcTest, AScanStartedBeforeGcStaysExact) {
  const HybridTime t1 = InsertRange(&h_, 0, 300);
  InsertRange(&h_, 300, 600);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  const Schema schema = tablet()->schema();
  auto it = tablet()->NewIterator(schema, At(t1), ScanSpec(), /*ordered=*/true);
  BASALT_ASSERT_OK(it.status());
  // The GC drops the UNDO file and deletes its block while the scan has not read a row.
  Advance(kMaxAgeSec + 1);
  TABLET_ASSERT_OK(tablet()->GcAncientUndoFiles());
  ASSERT_EQ(tablet()->GetStats().undo_bytes, 0u);
  // The scan pinned the file when it was created: it still sees the past exactly.
  EXPECT_EQ(TabletHarness::ReadAll(it->get(), schema), Rows(0, 300));
  ExpectTooOld(TryScan(*tablet(), At(t1)));
}

TEST_F(HistoryGcTest, StraddlingFileWaitsAndCompactionDropsItsOldPart) {
  const HybridTime t1 = InsertRange(&h_, 0, 200);
  Advance(8);
  const HybridTime t2 = InsertRange(&h_, 200, 400);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());  // One UNDO file spanning t1..t2.
  const uint64_t undo = tablet()->GetStats().undo_bytes;
  Advance(kMaxAgeSec - 8 + 3);  // The mark is now 3 s after t1, 5 s before t2.
  EXPECT_EQ(tablet()->AncientUndoBytes(), 0u) << "a file straddling the mark is kept whole";
  TABLET_ASSERT_OK(tablet()->GcAncientUndoFiles());
  EXPECT_EQ(tablet()->GetStats().undo_bytes, undo);

  // A compaction drops the UNDOs older than the mark (those of t1's rows) and records its mark.
  TABLET_ASSERT_OK(tablet()->Compact(/*all=*/true));
  const HybridTime mark = tablet()->history_gc_mark();
  EXPECT_GT(mark, t1);
  EXPECT_LT(mark, t2);
  EXPECT_GT(tablet()->GetStats().undo_bytes, 0u);
  EXPECT_LT(tablet()->GetStats().undo_bytes, undo);
  EXPECT_EQ(h_.Scan(At(mark)), Rows(0, 200));
  ExpectTooOld(TryScan(*tablet(), At(t1)));

  Advance(kMaxAgeSec);  // Past t2 too.
  TABLET_ASSERT_OK(tablet()->GcAncientUndoFiles());
  EXPECT_EQ(tablet()->GetStats().undo_bytes, 0u);
  EXPECT_EQ(h_.Scan(), Rows(0, 400));
}

TEST_F(HistoryGcTest, UpdatedRowsKeepTheirRecentHistory) {
  const HybridTime t1 = InsertRange(&h_, 0, 100);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  Advance(kMaxAgeSec + 1);
  HybridTime t_update;
  BASALT_ASSERT_OK(h_.Apply({{RowOperationType::kUpdate, 5, 55}}, &t_update)[0]);
  TABLET_ASSERT_OK(tablet()->FlushDeltas());
  TABLET_ASSERT_OK(tablet()->MajorCompactDeltas());  // UNDO of the update: recent, kept.
  TABLET_ASSERT_OK(tablet()->GcAncientUndoFiles());
  EXPECT_GT(tablet()->GetStats().undo_bytes, 0u);
  EXPECT_GT(tablet()->history_gc_mark(), t1);
  std::vector<TestRow> before_update = Rows(0, 100);
  EXPECT_EQ(h_.Scan(At(HybridTime(t_update.value() - 1))), before_update)
      << "the update's UNDO was lost";
  std::vector<TestRow> latest = before_update;
  latest[5].val = 55;
  EXPECT_EQ(h_.Scan(), latest);
}

TEST_F(HistoryGcTest, GcIsDurableAndTheMarkSurvivesACrash) {
  const HybridTime t1 = InsertRange(&h_, 0, 300);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  InsertRange(&h_, 300, 400);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  ASSERT_EQ(tablet()->RowSetsForTests().size(), 2u);
  Advance(kMaxAgeSec + 1);
  TABLET_ASSERT_OK(tablet()->GcAncientUndoFiles());
  const HybridTime mark = tablet()->history_gc_mark();
  ASSERT_GT(mark, t1);

  // A power failure: whatever was not synced is lost.
  h_.Close();
  TABLET_ASSERT_OK(env_.DropUnsyncedData());
  TABLET_ASSERT_OK(h_.Reopen());
  EXPECT_EQ(tablet()->GetStats().undo_bytes, 0u);
  for (const RowSetMetadata& rs : tablet()->RowSetsForTests()) {
    EXPECT_TRUE(rs.undo_blocks.empty());
  }
  EXPECT_EQ(tablet()->history_gc_mark(), mark);
  EXPECT_EQ(h_.Scan(), Rows(0, 400));
  ExpectTooOld(TryScan(*tablet(), At(t1)));
  // The reopened tablet keeps working.
  InsertRange(&h_, 400, 500);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  TABLET_ASSERT_OK(tablet()->Compact(/*all=*/true));
  EXPECT_EQ(h_.Scan(), Rows(0, 500));
}

// The superblock is the commit point: when its write fails, the dropped files' blocks must still
// be there for the superblock on disk, which lists them.
TEST_F(HistoryGcTest, FailedSuperBlockWriteKeepsTheBlocks) {
  InsertRange(&h_, 0, 300);
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  Advance(kMaxAgeSec + 1);
  env_.FailAfter(0, FaultInjectionEnv::OpKind::kRename);  // WriteSuperBlock's rename.
  const absl::Status s = tablet()->GcAncientUndoFiles();
  EXPECT_FALSE(s.ok()) << s;
  env_.ClearFailures();
  TABLET_ASSERT_OK(h_.Reopen());  // Every block the old superblock names is there.
  EXPECT_GT(tablet()->GetStats().undo_bytes, 0u);
  EXPECT_EQ(h_.Scan(), Rows(0, 300));
  TABLET_ASSERT_OK(tablet()->GcAncientUndoFiles());
  EXPECT_EQ(tablet()->GetStats().undo_bytes, 0u);
}

}  // namespace history_gc_test_file
}  // namespace
}  // namespace basalt
