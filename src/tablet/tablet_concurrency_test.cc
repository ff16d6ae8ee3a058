// Scans running while a writer and maintenance (flushes, compactions) run must each see exactly
// one MVCC snapshot.

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/tablet.h"
#include "tablet/tablet_test_util.h"

namespace basalt {
namespace {
namespace tablet_concurrency_test_file {

constexpr int kBaseRows = 100;
constexpr int kNewPerBatch = 5;

// Batch v >= 1 sets val = v on base rows 0..99 and inserts 5 new rows with val = v. A consistent
// snapshot therefore shows every base row with one value v and exactly 5 * v new rows.
void CheckConsistent(const std::vector<TestRow>& rows) {
  ASSERT_GE(rows.size(), static_cast<size_t>(kBaseRows));
  int32_t v = *rows[0].val;
  int extra = 0;
  for (const TestRow& r : rows) {
    if (r.key < kBaseRows) {
      ASSERT_EQ(*r.val, v) << "row " << r.key << " from another snapshot";
    } else {
      ASSERT_LE(*r.val, v);
      ++extra;
    }
  }
  ASSERT_EQ(extra, kNewPerBatch * v);
}

TEST(TabletConcurrencyTest, ScansSeeOneSnapshotWhileWritesFlushesAndCompactionsRun) {
  uint64_t seed = SeedFromEnvOrTime();
  TabletHarness h;
  h.set_rowset_target_bytes(8 << 10);
  TABLET_ASSERT_OK(h.Create());
  {
    std::vector<TestOp> ops;
    for (int k = 0; k < kBaseRows; ++k) ops.push_back({RowOperationType::kInsert, k, 0});
    for (const absl::Status& s : h.Apply(ops)) BASALT_ASSERT_OK(s);
  }
  constexpr int kBatches = 400;
  std::atomic<bool> done{false};
  std::atomic<int> scans{0};
  std::thread writer([&] {
    for (int v = 1; v <= kBatches; ++v) {
      std::vector<TestOp> ops;
      for (int k = 0; k < kBaseRows; ++k) ops.push_back({RowOperationType::kUpdate, k, v});
      for (int i = 0; i < kNewPerBatch; ++i) {
        ops.push_back({RowOperationType::kInsert, kBaseRows + (v - 1) * kNewPerBatch + i, v});
      }
      for (const absl::Status& s : h.Apply(ops)) BASALT_ASSERT_OK(s);
    }
    done = true;
  });
  std::thread maintenance([&] {
    Random rng(seed);
    while (!done) {
      Tablet* t = h.tablet();
      absl::Status s;
      switch (rng.Uniform(5)) {
        case 0:
          s = t->FlushMemRowSet();
          break;
        case 1:
          s = t->FlushDeltas();
          break;
        case 2:
          s = t->Compact(rng.OneIn(2));
          break;
        case 3:
          s = t->MajorCompactDeltas();
          break;
        default:
          s = t->MinorCompactDeltas();
          break;
      }
      BASALT_ASSERT_OK(s);
    }
  });
  std::vector<std::thread> scanners;
  for (int i = 0; i < 2; ++i) {
    scanners.emplace_back([&, i] {
      while (!done) {
        CheckConsistent(h.Scan(std::nullopt, /*ordered=*/i == 0));
        ++scans;
      }
    });
  }
  writer.join();
  maintenance.join();
  for (auto& t : scanners) t.join();
  CheckConsistent(h.Scan());
  EXPECT_GT(scans.load(), 0);
  EXPECT_GT(h.tablet()->GetStats().flushes, 0);
}

}  // namespace tablet_concurrency_test_file
}  // namespace
}  // namespace basalt
