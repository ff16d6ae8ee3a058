// Crash safety of flushes, compactions and history GC: the Env is cut at every sync point of the
// operation (unsynced data lost, as in a power failure), the tablet is reopened, and nothing
// acknowledged as flushed may be missing.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/status_test_util.h"
#include "tablet/tablet.h"
#include "tablet/tablet_test_util.h"

namespace basalt {
namespace {
namespace tablet_crash_test_file {

struct Scenario {
  std::string name;
  // Prepares the tablet; everything it leaves flushed is acknowledged.
  std::function<void(TabletHarness*)> setup;
  // The operation crashed at each of its sync points.
  std::function<absl::Status(Tablet*)> op;
};

void Load(TabletHarness* h, int from, int to) {
  for (int k = from; k < to; k += 50) {
    std::vector<TestOp> ops;
    for (int i = k; i < std::min(to, k + 50); ++i) {
      ops.push_back({RowOperationType::kInsert, i, i, false, "row" + std::to_string(i)});
    }
    for (const absl::Status& s : h->Apply(ops)) BASALT_ASSERT_OK(s);
  }
}

void FlushAll(TabletHarness* h) {
  TABLET_ASSERT_OK(h->tablet()->FlushMemRowSet());
  TABLET_ASSERT_OK(h->tablet()->FlushDeltas());
}

std::vector<Scenario> Scenarios() {
  return {
      {"flush",
       [](TabletHarness* h) {
         Load(h, 0, 300);
         FlushAll(h);
         for (int k = 0; k < 300; k += 7) TABLET_ASSERT_OK(h->Update(k, -k));
         TABLET_ASSERT_OK(h->tablet()->FlushDeltas());
         Load(h, 300, 600);  // In the MRS: lost unless the crashed flush completed.
         TABLET_ASSERT_OK(h->Delete(5));
       },
       [](Tablet* t) { return t->FlushMemRowSet(); }},
      {"merge compaction",
       [](TabletHarness* h) {
         Load(h, 0, 300);
         FlushAll(h);
         Load(h, 1000, 1200);
         Load(h, 300, 450);  // Overlaps the first rowset's range.
         FlushAll(h);
         for (int k = 0; k < 450; k += 11) TABLET_ASSERT_OK(h->Delete(k));
         FlushAll(h);
       },
       [](Tablet* t) { return t->Compact(/*all=*/true); }},
      {"delta flush",
       [](TabletHarness* h) {
         Load(h, 0, 400);
         FlushAll(h);
         for (int k = 0; k < 400; k += 3) TABLET_ASSERT_OK(h->Update(k, 7));
       },
       [](Tablet* t) { return t->FlushDeltas(); }},
      {"major delta compaction",
       [](TabletHarness* h) {
         Load(h, 0, 400);
         FlushAll(h);
         for (int k = 0; k < 400; k += 3) TABLET_ASSERT_OK(h->Update(k, 9));
         FlushAll(h);
       },
       [](Tablet* t) { return t->MajorCompactDeltas(); }},
      {"history GC",
       [](TabletHarness* h) {
         Load(h, 0, 300);
         FlushAll(h);
         Load(h, 300, 450);
         FlushAll(h);
         // Past the mark (--tablet_history_max_age_sec after the inserts): every UNDO file goes.
         h->clock()->AdvanceMicros(int64_t{FLAGS_tablet_history_max_age_sec + 1} * 1000000);
       },
       [](Tablet* t) { return t->GcAncientUndoFiles(); }},
  };
}

class TabletCrashTest : public ::testing::TestWithParam<int> {};

TEST_P(TabletCrashTest, NothingFlushedIsLostAtAnySyncPoint) {
  Scenario sc = Scenarios()[GetParam()];
  SCOPED_TRACE(sc.name);
  // Count the operation's sync points, and record the durable states before and after it (what
  // a crash right then would keep).
  std::vector<TestRow> durable_before, durable_after;
  int64_t sync_points = 0;
  for (bool run_op : {false, true}) {
    MemoryEnv base;
    FaultInjectionEnv env(&base);
    TabletHarness h(&env);
    TABLET_ASSERT_OK(h.Create());
    sc.setup(&h);
    if (run_op) {
      int64_t before = env.num_sync_points();
      TABLET_ASSERT_OK(sc.op(h.tablet()));
      sync_points = env.num_sync_points() - before;
    }
    h.Close();
    TABLET_ASSERT_OK(env.DropUnsyncedData());
    TABLET_ASSERT_OK(h.Reopen());
    (run_op ? durable_after : durable_before) = h.Scan();
  }
  ASSERT_GT(sync_points, 0);
  if (sc.name == "flush" || sc.name == "delta flush") {
    ASSERT_NE(durable_before, durable_after) << "the operation must change the durable state";
  } else {
    ASSERT_EQ(durable_before, durable_after) << "a compaction must not change what is read";
  }
  for (int64_t k = 0; k <= sync_points; ++k) {
    SCOPED_TRACE(testing::Message()
                 << "crash after " << k << " of " << sync_points << " sync points");
    MemoryEnv base;
    FaultInjectionEnv env(&base);
    TabletHarness h(&env);
    TABLET_ASSERT_OK(h.Create());
    sc.setup(&h);
    env.SetCrashAtSyncPoint(k);
    absl::Status s = sc.op(h.tablet());
    h.Close();
    TABLET_ASSERT_OK(env.DropUnsyncedData());
    TABLET_ASSERT_OK(h.Reopen());
    std::vector<TestRow> got = h.Scan();
    if (s.ok()) {
      EXPECT_EQ(got, durable_after) << "acknowledged operation lost";
    } else {
      EXPECT_TRUE(got == durable_before || got == durable_after)
          << "got " << got.size() << " rows; before " << durable_before.size() << ", after "
          << durable_after.size();
    }
    // The reopened tablet keeps working: flush and compact what it has.
    TABLET_ASSERT_OK(h.Insert(5000, 1));
    TABLET_ASSERT_OK(h.tablet()->FlushMemRowSet());
    TABLET_ASSERT_OK(h.tablet()->Compact(/*all=*/true));
    EXPECT_EQ(h.Scan().size(), got.size() + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, TabletCrashTest,
                         ::testing::Range(0, static_cast<int>(Scenarios().size())));

}  // namespace tablet_crash_test_file
}  // namespace
}  // namespace basalt
