#include "tablet/delta_tracker.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "cfile/block_cache.h"
#include "common/bitmap.h"
#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/delta_applier.h"
#include "tablet/delta_file.h"
#include "tablet/delta_test_util.h"
#include "tablet/deltamemstore.h"

namespace basalt {
namespace {
namespace delta_tracker_test_file {

using delta_test::DeleteList;
using delta_test::Model;
using delta_test::ModelRange;
using delta_test::ReinsertInt32;
using delta_test::ToPairs;
using delta_test::UpdateInt32;

HybridTime Ts(uint64_t v) { return HybridTime(v); }

using Pairs = std::vector<std::pair<DeltaKey, std::string>>;

Pairs CollectAll(std::span<const std::shared_ptr<const DeltaStore>> stores, rowid_t start = 0,
                 size_t n = SIZE_MAX) {
  Arena arena(4096);
  std::vector<DeltaEntry> out;
  absl::Status s = DeltaTracker::CollectMerged(stores, start, n, &arena, &out);
  BASALT_EXPECT_OK(s);
  return ToPairs(out);
}

class DeltaTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenBlockManager(); }
  void OpenBlockManager() {
    bm_.reset();
    bm_ = BlockManager::Open(&env_, "/data").value();
  }
  DeltaTrackerOptions Options(rowid_t num_rows = 1000) {
    DeltaTrackerOptions o;
    o.block_manager = bm_.get();
    o.name = "rowset 1";
    o.num_rows = num_rows;
    return o;
  }
  std::unique_ptr<DeltaTracker> OpenTracker(std::vector<BlockId> redos = {},
                                            std::vector<BlockId> undos = {},
                                            rowid_t num_rows = 1000) {
    auto t = DeltaTracker::Open(Options(num_rows), redos, undos);
    BASALT_EXPECT_OK(t);
    return t.ok() ? *std::move(t) : nullptr;
  }
  BlockId WriteFile(DeltaType type, const Model& model) {
    auto block = bm_->CreateBlock().value();
    const BlockId id = block->id();
    DeltaFileWriter w(type, std::move(block));
    BASALT_EXPECT_OK(w.Start());
    for (const auto& [k, v] : model) BASALT_EXPECT_OK(w.Append(k, v));
    BASALT_EXPECT_OK(w.Finish());
    return id;
  }
  Pairs Redos(const DeltaTracker& t) { return CollectAll(t.GetStores().redos); }

  MemoryEnv mem_;
  FaultInjectionEnv env_{&mem_};
  std::unique_ptr<BlockManager> bm_;
};

TEST_F(DeltaTrackerTest, UpdateValidatesAndLandsInTheDMS) {
  auto t = OpenTracker();
  EXPECT_EQ(t->Update(Ts(1), 1000, DeleteList(), 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Update(Ts(1), 1, "\x05", 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->dms_entries(), 0);
  EXPECT_EQ(t->dms_min_timestamp(), HybridTime::kInvalid);
  EXPECT_EQ(t->min_unflushed_op_index(), INT64_MAX);
  BASALT_ASSERT_OK(t->Update(Ts(9), 3, UpdateInt32({{1, 1}}), 12));
  BASALT_ASSERT_OK(t->Update(Ts(7), 5, DeleteList(), 11));
  EXPECT_EQ(t->dms_entries(), 2);
  EXPECT_GT(t->dms_memory(), 0u);
  EXPECT_EQ(t->dms_min_timestamp(), Ts(7));
  EXPECT_EQ(t->min_unflushed_op_index(), 11);
  const auto stores = t->GetStores();
  EXPECT_TRUE(stores.undos.empty());
  ASSERT_EQ(stores.redos.size(), 1u);
  EXPECT_EQ(Redos(*t), (Pairs{{{3, Ts(9)}, UpdateInt32({{1, 1}})}, {{5, Ts(7)}, DeleteList()}}));
  EXPECT_EQ(*t->IsDeletedLatest(5), true);
  EXPECT_EQ(*t->IsDeletedLatest(3), false);
  EXPECT_EQ(*t->LatestRedoTimestamp(3), Ts(9));
  EXPECT_EQ(*t->LatestRedoTimestamp(4), HybridTime::kInvalid);
}

TEST_F(DeltaTrackerTest, CollectMergedIsAStableKWayMerge) {
  auto a = std::make_shared<DeltaMemStore>(1);
  auto b = std::make_shared<DeltaMemStore>(2);
  auto c = std::make_shared<DeltaMemStore>(3);
  const std::string x = UpdateInt32({{1, 1}}), y = UpdateInt32({{1, 2}}), z = DeleteList();
  BASALT_ASSERT_OK(a->Update(Ts(5), 1, x));
  BASALT_ASSERT_OK(b->Update(Ts(5), 1, y));  // Same key in two stores: a's first.
  BASALT_ASSERT_OK(c->Update(Ts(1), 1, z));
  BASALT_ASSERT_OK(b->Update(Ts(2), 0, z));
  BASALT_ASSERT_OK(a->Update(Ts(3), 2, z));
  std::vector<std::shared_ptr<const DeltaStore>> stores = {a, b, c};
  EXPECT_EQ(
      CollectAll(stores),
      (Pairs{{{0, Ts(2)}, z}, {{1, Ts(1)}, z}, {{1, Ts(5)}, x}, {{1, Ts(5)}, y}, {{2, Ts(3)}, z}}));
  EXPECT_EQ(CollectAll(stores, 1, 1).size(), 3u);
  // Appends after what *out holds.
  Arena arena(256);
  std::vector<DeltaEntry> out = {{{99, Ts(1)}, z}};
  BASALT_ASSERT_OK(DeltaTracker::CollectMerged(stores, 2, 1, &arena, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].key, (DeltaKey{2, Ts(3)}));
  // Randomized: the merge equals a stable sort of the concatenation.
  Random rng(SeedFromEnvOrTime());
  std::vector<std::shared_ptr<const DeltaStore>> many;
  Pairs concat;
  for (int s = 0; s < 5; ++s) {
    auto d = std::make_shared<DeltaMemStore>(10 + s);
    Model m;
    for (int i = 0; i < 300; ++i) {
      m[DeltaKey{static_cast<rowid_t>(rng.Uniform(100)), Ts(1 + rng.Uniform(50))}] =
          delta_test::RandomChangeList(&rng);
    }
    for (const auto& [k, v] : m) BASALT_ASSERT_OK(d->Update(k.ts, k.row, v));
    concat.insert(concat.end(), m.begin(), m.end());
    many.push_back(d);
  }
  std::stable_sort(concat.begin(), concat.end(),
                   [](const auto& l, const auto& r) { return l.first < r.first; });
  EXPECT_EQ(CollectAll(many), concat);
}

TEST_F(DeltaTrackerTest, FlushMovesTheDMSToAFileAndSurvivesReopen) {
  auto t = OpenTracker();
  BASALT_EXPECT_OK(t->FlushDMS());  // Empty: nothing to do.
  EXPECT_EQ(t->num_redo_files(), 0u);
  Random rng(SeedFromEnvOrTime());
  Model model;
  for (int i = 0; i < 500; ++i) {
    const DeltaKey k{static_cast<rowid_t>(rng.Uniform(1000)), Ts(1 + i)};
    model[k] = delta_test::RandomChangeList(&rng);
    BASALT_ASSERT_OK(t->Update(k.ts, k.row, model[k], 100 + i));
  }
  const Pairs before = Redos(*t);
  ASSERT_EQ(before, ModelRange(model, 0, 1000));
  BASALT_ASSERT_OK(t->FlushDMS());
  EXPECT_EQ(t->num_redo_files(), 1u);
  EXPECT_EQ(t->dms_entries(), 0);
  EXPECT_EQ(t->min_unflushed_op_index(), INT64_MAX);
  EXPECT_GT(t->redo_file_bytes(), 0u);
  EXPECT_EQ(Redos(*t), before);
  BASALT_ASSERT_OK(t->Update(Ts(10000), 7, DeleteList(), 1));
  model[DeltaKey{7, Ts(10000)}] = DeleteList();
  BASALT_ASSERT_OK(t->FlushDMS());
  const std::vector<BlockId> redos = t->redo_blocks();
  ASSERT_EQ(redos.size(), 2u);
  t.reset();
  auto reopened = OpenTracker(redos);
  EXPECT_EQ(Redos(*reopened), ModelRange(model, 0, 1000));
  EXPECT_EQ(reopened->redo_blocks(), redos);
}

TEST_F(DeltaTrackerTest, MinorCompactionMergesFilesIdentically) {
  auto t = OpenTracker();
  BASALT_EXPECT_OK(t->MinorCompactRedoFiles());  // No files: nothing to do.
  Random rng(SeedFromEnvOrTime());
  Model model;
  uint64_t ts = 1;
  for (int f = 0; f < 4; ++f) {
    for (int i = 0; i < 200; ++i, ++ts) {
      const DeltaKey k{static_cast<rowid_t>(rng.Uniform(1000)), Ts(ts)};
      model[k] = delta_test::RandomChangeList(&rng);
      BASALT_ASSERT_OK(t->Update(k.ts, k.row, model[k], 0));
    }
    BASALT_ASSERT_OK(t->FlushDMS());
  }
  // Two ops of one batch on one row split by a flush: the compaction merges them.
  BASALT_ASSERT_OK(t->Update(Ts(ts), 3, UpdateInt32({{1, 1}, {2, 2}}), 0));
  BASALT_ASSERT_OK(t->FlushDMS());
  BASALT_ASSERT_OK(t->Update(Ts(ts), 3, UpdateInt32({{2, 5}}), 0));
  BASALT_ASSERT_OK(t->FlushDMS());
  model[DeltaKey{3, Ts(ts)}] = UpdateInt32({{1, 1}, {2, 5}});
  BASALT_ASSERT_OK(t->Update(Ts(ts + 1), 4, DeleteList(), 0));  // Stays in the DMS.
  model[DeltaKey{4, Ts(ts + 1)}] = DeleteList();

  const std::vector<BlockId> old_files = t->redo_blocks();
  ASSERT_EQ(old_files.size(), 6u);
  const auto pinned = t->GetStores();  // A scan in progress keeps the old files readable.
  BASALT_ASSERT_OK(t->MinorCompactRedoFiles());
  EXPECT_EQ(t->num_redo_files(), 1u);
  EXPECT_EQ(Redos(*t), ModelRange(model, 0, 1000));
  EXPECT_EQ(CollectAll(pinned.redos).size(), ModelRange(model, 0, 1000).size() + 1);
  EXPECT_EQ(t->TakeObsoleteBlocks(), old_files);
  EXPECT_TRUE(t->TakeObsoleteBlocks().empty());
  // The compacted file comes first, a later flush after it; both reopen.
  BASALT_ASSERT_OK(t->FlushDMS());
  const std::vector<BlockId> now = t->redo_blocks();
  ASSERT_EQ(now.size(), 2u);
  t.reset();
  EXPECT_EQ(Redos(*OpenTracker(now)), ModelRange(model, 0, 1000));
}

TEST_F(DeltaTrackerTest, LivenessAcrossUndoAndRedo) {
  // Row 1: inserted at 10 (UNDO DELETE), updated at 20, deleted at 30 (REDO), reinserted at 40.
  // Row 2: inserted at 5, deleted at 15, reinserted at 20 (the base row): UNDOs DELETE at 5,
  // REINSERT at 15 (it existed before the delete), DELETE at 20 (it did not exist before).
  Model undo;
  undo[DeltaKey{1, Ts(10)}] = DeleteList();
  undo[DeltaKey{2, Ts(5)}] = DeleteList();
  undo[DeltaKey{2, Ts(15)}] = ReinsertInt32({{1, 3}});
  undo[DeltaKey{2, Ts(20)}] = DeleteList();
  const BlockId undo_id = WriteFile(DeltaType::kUndo, undo);
  Model redo;
  redo[DeltaKey{1, Ts(20)}] = UpdateInt32({{1, 5}});
  redo[DeltaKey{1, Ts(30)}] = DeleteList();
  const BlockId redo_id = WriteFile(DeltaType::kRedo, redo);
  auto t = OpenTracker({redo_id}, {undo_id});
  BASALT_ASSERT_OK(t->Update(Ts(40), 1, ReinsertInt32({{1, 6}}), 0));
  EXPECT_GT(t->undo_file_bytes(), 0u);
  EXPECT_EQ(t->undo_blocks(), std::vector<BlockId>{undo_id});
  auto live = [&](rowid_t row, uint64_t before) {
    return *t->IsLiveAt(row, MvccSnapshot::IncludingAllBefore(Ts(before)));
  };
  EXPECT_FALSE(live(1, 10));
  EXPECT_TRUE(live(1, 11));
  EXPECT_TRUE(live(1, 30));
  EXPECT_FALSE(live(1, 31));
  EXPECT_TRUE(live(1, 41));
  EXPECT_FALSE(live(2, 5));
  EXPECT_TRUE(live(2, 6));
  EXPECT_TRUE(live(2, 15));
  EXPECT_FALSE(live(2, 16));
  EXPECT_FALSE(live(2, 20));
  EXPECT_TRUE(live(2, 21));
  EXPECT_TRUE(live(3, 1));  // No deltas.
  EXPECT_FALSE(*t->IsDeletedLatest(1));
  EXPECT_FALSE(*t->IsDeletedLatest(2));  // UNDOs do not matter for the latest state.
  EXPECT_EQ(*t->LatestRedoTimestamp(1), Ts(40));
  BASALT_ASSERT_OK(t->Update(Ts(50), 1, DeleteList(), 0));
  EXPECT_TRUE(*t->IsDeletedLatest(1));
}

TEST_F(DeltaTrackerTest, OpenChecksTheFiles) {
  Model m;
  m[DeltaKey{5, Ts(1)}] = DeleteList();
  const BlockId redo = WriteFile(DeltaType::kRedo, m);
  const BlockId undo = WriteFile(DeltaType::kUndo, m);
  auto code = [&](std::vector<BlockId> r, std::vector<BlockId> u, rowid_t rows = 1000) {
    return DeltaTracker::Open(Options(rows), r, u).status().code();
  };
  EXPECT_EQ(code({redo}, {undo}), absl::StatusCode::kOk);
  EXPECT_EQ(code({undo}, {}), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code({}, {redo}), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code({redo}, {}, 5), absl::StatusCode::kDataLoss);  // Row 5 of a 5-row rowset.
  EXPECT_EQ(code({BlockId(12345)}, {}), absl::StatusCode::kNotFound);
  auto s = DeltaTracker::Open(Options(), {}, {redo}).status();
  EXPECT_NE(s.message().find(redo.ToString()), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("rowset 1"), absl::string_view::npos) << s;
}

TEST_F(DeltaTrackerTest, FailedFlushKeepsTheDMSAndRetries) {
  auto t = OpenTracker();
  BASALT_ASSERT_OK(t->Update(Ts(1), 1, DeleteList(), 5));
  // A full disk (an EIO would fail the data directory for good: block_manager.h).
  env_.FailAfter(0, FaultInjectionEnv::OpKind::kSync, /*one_shot=*/false,
                 absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(t->FlushDMS().ok());
  env_.ClearFailures();
  EXPECT_EQ(t->num_redo_files(), 0u);
  EXPECT_EQ(t->GetStores().redos.size(), 2u);  // The frozen DMS and the new one.
  BASALT_ASSERT_OK(t->Update(Ts(2), 2, DeleteList(), 6));
  EXPECT_EQ(t->dms_entries(), 2);
  EXPECT_EQ(t->min_unflushed_op_index(), 5);
  EXPECT_EQ(Redos(*t).size(), 2u);
  BASALT_ASSERT_OK(t->FlushDMS());  // Retries the frozen DMS.
  EXPECT_EQ(t->num_redo_files(), 1u);
  EXPECT_EQ(t->dms_entries(), 1);
  EXPECT_EQ(t->min_unflushed_op_index(), 6);
  BASALT_ASSERT_OK(t->FlushDMS());
  EXPECT_EQ(t->num_redo_files(), 2u);
  EXPECT_EQ(Redos(*t).size(), 2u);
  EXPECT_EQ(bm_->ListBlocks()->size(), 2u);  // The failed attempt left no block.
}

// Crash (lose unsynced data) at every sync point of a flush: after reopening the block manager
// the new file is either complete (and holds exactly the DMS's entries) or absent.
TEST_F(DeltaTrackerTest, CrashAtEverySyncPointOfAFlush) {
  Random rng(SeedFromEnvOrTime());
  Model model;
  for (int i = 0; i < 300; ++i) {
    model[DeltaKey{static_cast<rowid_t>(rng.Uniform(1000)), Ts(1 + i)}] =
        delta_test::RandomChangeList(&rng);
  }
  int64_t total = -1;
  int complete = 0, absent = 0;
  for (int64_t k = 0; total < 0 || k <= total; ++k) {
    SCOPED_TRACE(testing::Message() << "crash at sync point " << k);
    OpenBlockManager();
    const std::vector<BlockId> existing = bm_->ListBlocks().value();
    auto t = OpenTracker();
    for (const auto& [key, v] : model) BASALT_ASSERT_OK(t->Update(key.ts, key.row, v, 0));
    const int64_t start = env_.num_sync_points();
    if (total >= 0) env_.SetCrashAtSyncPoint(k);
    const bool ok = t->FlushDMS().ok();
    if (total < 0) {
      ASSERT_TRUE(ok);
      total = env_.num_sync_points() - start;
      ASSERT_GE(total, 2);
    }
    t.reset();
    bm_.reset();
    BASALT_ASSERT_OK(env_.DropUnsyncedData());
    OpenBlockManager();
    std::vector<BlockId> added;
    const std::vector<BlockId> now = bm_->ListBlocks().value();
    for (BlockId id : now) {
      if (std::find(existing.begin(), existing.end(), id) == existing.end()) added.push_back(id);
    }
    if (ok) {
      ASSERT_EQ(added.size(), 1u);
    }
    ASSERT_LE(added.size(), 1u);
    ++(added.empty() ? absent : complete);
    if (!added.empty()) {
      auto reopened = OpenTracker(added);
      ASSERT_NE(reopened, nullptr);
      EXPECT_EQ(Redos(*reopened), ModelRange(model, 0, 1000));
    }
  }
  EXPECT_GT(absent, 0);
  EXPECT_GT(complete, 1);  // The uncrashed run and at least the crash after the last sync.
}

// Readers take StoreSets and apply deltas while the writer updates and a maintenance thread
// flushes and compacts: each reader sees, per row, a growing prefix of the row's updates (never
// losing one it saw) in order, and its final value matches the number of updates it saw.
TEST_F(DeltaTrackerTest, ConcurrentReadersFlushesAndCompactions) {
  const uint64_t seed = SeedFromEnvOrTime();
  constexpr rowid_t kRows = 200;
  constexpr int kUpdates = 20000;
  auto t = OpenTracker({}, {}, kRows);
  const Schema proj =
      Schema::Create({ColumnSchema("key", DataType::kInt32), ColumnSchema("v", DataType::kInt32)},
                     1)
          .value();
  std::atomic<bool> done{false};
  std::atomic<int64_t> reads{0};
  auto reader = [&](uint64_t s) {
    Random rng(s);
    std::vector<int32_t> seen(kRows, 0);  // Updates seen per row.
    const DeltaApplier applier(&proj);
    while (!done.load(std::memory_order_acquire)) {
      const auto start = static_cast<rowid_t>(rng.Uniform(kRows));
      const size_t n = std::min<size_t>(kRows - start, 1 + rng.Uniform(50));
      const DeltaTracker::StoreSet set = t->GetStores();
      Arena arena(4096);
      std::vector<DeltaEntry> redos;
      BASALT_ASSERT_OK(DeltaTracker::CollectMerged(set.redos, start, n, &arena, &redos));
      ColumnBlockBuffer key(DataType::kInt32, n, false), val(DataType::kInt32, n, false);
      std::vector<ColumnBlock*> blocks = {key.block(), val.block()};
      for (size_t i = 0; i < n; ++i) val.block()->data<int32_t>()[i] = 0;
      std::vector<uint8_t> live(BitmapSize(n), 0xFF);
      BASALT_ASSERT_OK(
          applier.Apply(MvccSnapshot::IncludingAll(), start, n, {}, redos, blocks, live.data()));
      std::vector<int32_t> count(n, 0);
      for (const DeltaEntry& e : redos) ++count[e.key.row - start];
      for (size_t i = 0; i < n; ++i) {
        // The writer sets v to the row's update number (1, 2, ...): the last applied value is
        // the number of updates collected, and never falls back.
        ASSERT_EQ(val.block()->data<int32_t>()[i], count[i]) << "row " << start + i;
        ASSERT_GE(count[i], seen[start + i]) << "row " << start + i << " lost an update";
        seen[start + i] = count[i];
      }
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::atomic<bool> writer_done{false};
  std::thread maintenance([&] {
    while (!writer_done.load(std::memory_order_acquire)) {
      BASALT_ASSERT_OK(t->FlushDMS());
      if (t->num_redo_files() >= 4) {
        BASALT_ASSERT_OK(t->MinorCompactRedoFiles());
      }
    }
  });
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) readers.emplace_back(reader, seed + 1 + i);
  Random rng(seed);
  std::vector<int32_t> updates(kRows, 0);
  for (int i = 0; i < kUpdates; ++i) {
    const auto row = static_cast<rowid_t>(rng.Uniform(kRows));
    BASALT_ASSERT_OK(t->Update(Ts(1 + i), row, UpdateInt32({{1, ++updates[row]}}), i));
  }
  writer_done.store(true, std::memory_order_release);
  maintenance.join();
  done.store(true, std::memory_order_release);
  for (auto& r : readers) r.join();
  EXPECT_GT(reads.load(), 0);
  BASALT_ASSERT_OK(t->FlushDMS());
  BASALT_ASSERT_OK(t->MinorCompactRedoFiles());
  EXPECT_EQ(static_cast<int>(Redos(*t).size()), kUpdates);
}

}  // namespace delta_tracker_test_file
}  // namespace
}  // namespace basalt

namespace basalt {
namespace {
namespace delta_tracker_test_file {

// Rough per-operation costs of the delta read path (run with --gtest_also_run_disabled_tests).
TEST_F(DeltaTrackerTest, DISABLED_Benchmark) {
  auto ns_per = [](int64_t n, auto&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) fn(i);
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
           static_cast<double>(n);
  };
  constexpr rowid_t kRows = 1 << 20;
  auto t = OpenTracker({}, {}, kRows);
  Arena arena(4096);
  std::vector<DeltaEntry> out;
  const double empty_ns = ns_per(1000000, [&](int64_t i) {
    const auto set = t->GetStores();
    out.clear();
    CHECK(DeltaTracker::CollectMerged(set.redos, (i * 1024) % kRows, 1024, &arena, &out).ok());
  });
  Random rng(1);
  const std::string upd = UpdateInt32({{1, 7}});
  const double update_ns = ns_per(1000000, [&](int64_t i) {
    CHECK(t->Update(Ts(1 + i), static_cast<rowid_t>(rng.Uniform(kRows)), upd, 0).ok());
  });
  const double dms_collect_ns = ns_per(10000, [&](int64_t i) {
    out.clear();
    CHECK(DeltaTracker::CollectMerged(t->GetStores().redos, (i * 1024) % kRows, 1024, &arena, &out)
              .ok());
  });
  CHECK(t->FlushDMS().ok());
  BlockCache cache(256 << 20);
  auto cached = DeltaTracker::Open(
                    [&] {
                      auto o = Options(kRows);
                      o.block_cache = &cache;
                      return o;
                    }(),
                    t->redo_blocks(), {})
                    .value();
  const double file_collect_ns = ns_per(10000, [&](int64_t i) {
    arena.Reset();
    out.clear();
    CHECK(DeltaTracker::CollectMerged(cached->GetStores().redos, (i * 1024) % kRows, 1024, &arena,
                                      &out)
              .ok());
  });
  const Schema proj =
      Schema::Create({ColumnSchema("key", DataType::kInt32), ColumnSchema("v", DataType::kInt32)},
                     1)
          .value();
  const DeltaApplier applier(&proj);
  ColumnBlockBuffer key(DataType::kInt32, 1024, false), val(DataType::kInt32, 1024, false);
  std::vector<ColumnBlock*> blocks = {key.block(), val.block()};
  std::vector<uint8_t> live(128, 0xFF);
  out.clear();
  CHECK(DeltaTracker::CollectMerged(cached->GetStores().redos, 0, 1024, &arena, &out).ok());
  const MvccSnapshot snap = MvccSnapshot::IncludingAll();
  const double apply_ns = ns_per(100000, [&](int64_t) {
    CHECK(applier.Apply(snap, 0, 1024, {}, out, blocks, live.data()).ok());
  });
  printf(
      "{\"empty_getstores_collect_ns\": %.1f, \"dms_update_ns\": %.1f, "
      "\"dms_collect_1024_rows_ns\": %.1f, \"file_collect_1024_rows_ns\": %.1f, "
      "\"apply_1024_rows_ns\": %.1f, \"entries_per_1024_rows\": %zu}\n",
      empty_ns, update_ns, dms_collect_ns, file_collect_ns, apply_ns, out.size());
}

}  // namespace delta_tracker_test_file
}  // namespace
}  // namespace basalt
