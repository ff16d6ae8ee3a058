#include "tablet/deltamemstore.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/delta_test_util.h"
#include "tablet/row_changelist.h"

namespace basalt {
namespace {
namespace deltamemstore_test_file {

using delta_test::DeleteList;
using delta_test::Model;
using delta_test::ModelRange;
using delta_test::ReinsertInt32;
using delta_test::ToPairs;
using delta_test::UpdateInt32;

HybridTime Ts(uint64_t v) { return HybridTime(v); }

std::vector<DeltaEntry> Collect(const DeltaStore& s, rowid_t start, size_t n) {
  Arena arena(1024);
  std::vector<DeltaEntry> out;
  BASALT_EXPECT_OK(s.CollectEntries(start, n, &arena, &out));
  EXPECT_TRUE(arena.bytes_allocated() == 0) << "the DMS must borrow, not copy";
  return out;
}

TEST(DeltaKeyEncodingTest, RoundTripsAndOrdersLikeDeltaKey) {
  char a[kEncodedDeltaKeySize], b[kEncodedDeltaKeySize];
  const DeltaKey k1{7, Ts(0x0102030405060708)};
  EncodeDeltaKey(k1, a);
  EXPECT_EQ(std::string(a, 12),
            std::string("\x00\x00\x00\x07\x01\x02\x03\x04\x05\x06\x07\x08", 12));
  EXPECT_EQ(DecodeDeltaKey(a), k1);
  Random rng(SeedFromEnvOrTime());
  for (int i = 0; i < 1000; ++i) {
    DeltaKey x{static_cast<rowid_t>(rng.Skewed(32)), Ts(rng.Skewed(63))};
    DeltaKey y{static_cast<rowid_t>(rng.Skewed(32)), Ts(rng.Skewed(63))};
    EncodeDeltaKey(x, a);
    EncodeDeltaKey(y, b);
    const int c = std::string_view(a, 12).compare(std::string_view(b, 12));
    EXPECT_EQ(c < 0, x < y);
    EXPECT_EQ(c == 0, x == y);
  }
}

TEST(DeltaMemStoreTest, EmptyStore) {
  DeltaMemStore dms(3);
  EXPECT_EQ(dms.ToString(), "DMS 3");
  EXPECT_EQ(dms.id(), 3);
  EXPECT_EQ(dms.type(), DeltaType::kRedo);
  EXPECT_TRUE(dms.empty());
  EXPECT_EQ(dms.num_entries(), 0);
  EXPECT_EQ(dms.min_timestamp(), HybridTime::kInvalid);
  EXPECT_EQ(dms.max_timestamp(), HybridTime::kInvalid);
  EXPECT_EQ(dms.min_op_index(), INT64_MAX);
  EXPECT_TRUE(Collect(dms, 0, 1000000).empty());
}

TEST(DeltaMemStoreTest, CollectsRangesInKeyOrderWithStats) {
  DeltaMemStore dms(1);
  const size_t empty_footprint = dms.memory_footprint();
  BASALT_ASSERT_OK(dms.Update(Ts(20), 5, UpdateInt32({{1, 10}}), 7));
  BASALT_ASSERT_OK(dms.Update(Ts(10), 5, UpdateInt32({{1, 9}}), 8));
  BASALT_ASSERT_OK(dms.Update(Ts(15), 2, DeleteList(), 9));
  BASALT_ASSERT_OK(dms.Update(Ts(30), 9, UpdateInt32({{2, std::nullopt}}), 10));
  EXPECT_EQ(dms.num_entries(), 4);
  EXPECT_EQ(dms.min_timestamp(), Ts(10));
  EXPECT_EQ(dms.max_timestamp(), Ts(30));
  EXPECT_EQ(dms.min_op_index(), 7);
  EXPECT_GE(dms.memory_footprint(), empty_footprint);
  EXPECT_EQ(dms.size_bytes(), dms.memory_footprint());

  auto all = Collect(dms, 0, 100);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].key, (DeltaKey{2, Ts(15)}));
  EXPECT_EQ(all[1].key, (DeltaKey{5, Ts(10)}));
  EXPECT_EQ(all[2].key, (DeltaKey{5, Ts(20)}));
  EXPECT_EQ(all[3].key, (DeltaKey{9, Ts(30)}));
  EXPECT_EQ(all[1].changes, UpdateInt32({{1, 9}}));
  EXPECT_EQ(Collect(dms, 5, 1).size(), 2u);
  EXPECT_EQ(Collect(dms, 3, 2).size(), 0u);
  EXPECT_EQ(Collect(dms, 6, 3).size(), 0u);
  EXPECT_EQ(Collect(dms, 9, 0).size(), 0u);
  EXPECT_EQ(Collect(dms, 10, 5).size(), 0u);
  EXPECT_EQ(Collect(dms, 9, SIZE_MAX).size(), 1u);  // No overflow of start + n.
  BASALT_ASSERT_OK(dms.Update(Ts(1), UINT32_MAX, DeleteList()));
  EXPECT_EQ(Collect(dms, UINT32_MAX, 1).size(), 1u);
}

TEST(DeltaMemStoreTest, RejectsBadInput) {
  DeltaMemStore dms(1);
  EXPECT_EQ(dms.Update(Ts(1), 0, "").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dms.Update(Ts(1), 0, "\x09").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dms.Update(Ts(1), 0, std::string("\x01\x02\x05", 3)).code(),
            absl::StatusCode::kInvalidArgument);  // Truncated value.
  EXPECT_EQ(dms.Update(HybridTime::kInvalid, 0, DeleteList()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(dms.empty());
}

TEST(DeltaMemStoreTest, SameRowAndTimestampMerges) {
  DeltaMemStore dms(1);
  BASALT_ASSERT_OK(dms.Update(Ts(5), 1, UpdateInt32({{1, 1}, {2, 2}})));
  BASALT_ASSERT_OK(dms.Update(Ts(5), 1, UpdateInt32({{2, 20}, {3, std::nullopt}})));
  EXPECT_EQ(dms.num_entries(), 1);
  auto e = Collect(dms, 1, 1);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].changes, UpdateInt32({{1, 1}, {2, 20}, {3, std::nullopt}}));

  // UPDATE then DELETE is a DELETE; DELETE then REINSERT is the REINSERT.
  BASALT_ASSERT_OK(dms.Update(Ts(5), 1, DeleteList()));
  EXPECT_EQ(Collect(dms, 1, 1)[0].changes, DeleteList());
  BASALT_ASSERT_OK(dms.Update(Ts(5), 1, ReinsertInt32({{1, 7}, {2, 8}})));
  EXPECT_EQ(Collect(dms, 1, 1)[0].changes, ReinsertInt32({{1, 7}, {2, 8}}));
  // REINSERT then UPDATE stays a REINSERT with the new value.
  BASALT_ASSERT_OK(dms.Update(Ts(5), 1, UpdateInt32({{2, 9}})));
  EXPECT_EQ(Collect(dms, 1, 1)[0].changes, ReinsertInt32({{1, 7}, {2, 9}}));
  // A REINSERT after anything replaces it (WAL replay may re-apply an op the DMS holds).
  BASALT_ASSERT_OK(dms.Update(Ts(5), 1, ReinsertInt32({{1, 1}})));
  EXPECT_EQ(Collect(dms, 1, 1)[0].changes, ReinsertInt32({{1, 1}}));
  // An UPDATE after a DELETE is rejected and changes nothing.
  BASALT_ASSERT_OK(dms.Update(Ts(6), 1, DeleteList()));
  EXPECT_EQ(dms.Update(Ts(6), 1, UpdateInt32({{1, 1}})).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Collect(dms, 1, 1)[1].changes, DeleteList());
  EXPECT_EQ(dms.num_entries(), 2);
}

TEST(DeltaMemStoreTest, RandomizedAgainstModel) {
  Random rng(SeedFromEnvOrTime());
  DeltaMemStore dms(1);
  Model model;
  for (int i = 0; i < 20000; ++i) {
    const DeltaKey key{static_cast<rowid_t>(rng.Uniform(3000)), Ts(1 + rng.Uniform(1000000))};
    if (model.count(key)) continue;
    std::string changes = delta_test::RandomChangeList(&rng);
    BASALT_ASSERT_OK(dms.Update(key.ts, key.row, changes));
    model[key] = changes;
  }
  EXPECT_EQ(dms.num_entries(), static_cast<int64_t>(model.size()));
  for (int i = 0; i < 300; ++i) {
    const auto start = static_cast<rowid_t>(rng.Uniform(3100));
    const size_t n = rng.Skewed(10);
    ASSERT_EQ(ToPairs(Collect(dms, start, n)), ModelRange(model, start, n))
        << "start=" << start << " n=" << n;
  }
}

// One writer adds entries while readers collect random ranges: every reader sees entries in
// order, with the bytes the writer wrote for that key, and never fewer entries of a range than it
// saw before.
TEST(DeltaMemStoreTest, ConcurrentReadersNeverBlockOrLoseEntries) {
  const uint64_t seed = SeedFromEnvOrTime();
  DeltaMemStore dms(1);
  constexpr int kEntries = 30000;
  constexpr rowid_t kRows = 2000;
  std::atomic<bool> done{false};
  auto expected_bytes = [](const DeltaKey& k) {
    return UpdateInt32({{1, static_cast<int32_t>(k.row * 31 + k.ts.value())}});
  };
  auto reader = [&](uint64_t s) {
    Random rng(s);
    std::vector<size_t> seen(kRows / 100, 0);
    while (!done.load(std::memory_order_acquire)) {
      const size_t bucket = rng.Uniform(seen.size());
      auto got = Collect(dms, static_cast<rowid_t>(bucket * 100), 100);
      ASSERT_GE(got.size(), seen[bucket]);
      seen[bucket] = got.size();
      for (size_t i = 0; i < got.size(); ++i) {
        if (i > 0) {
          ASSERT_LT(got[i - 1].key, got[i].key);
        }
        ASSERT_EQ(got[i].changes, expected_bytes(got[i].key));
      }
    }
  };
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) readers.emplace_back(reader, seed + t + 1);
  Random rng(seed);
  for (int i = 0; i < kEntries; ++i) {
    const DeltaKey k{static_cast<rowid_t>(rng.Uniform(kRows)), Ts(i + 1)};
    BASALT_ASSERT_OK(dms.Update(k.ts, k.row, expected_bytes(k)));
  }
  done.store(true, std::memory_order_release);
  for (auto& t : readers) t.join();
  EXPECT_EQ(dms.num_entries(), kEntries);
  EXPECT_EQ(Collect(dms, 0, kRows).size(), static_cast<size_t>(kEntries));
}

TEST(MergeSameTimestampRedosTest, RejectsBadFraming) {
  std::string out;
  EXPECT_EQ(MergeSameTimestampRedos("", DeleteList(), &out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(
      MergeSameTimestampRedos(UpdateInt32({{1, 1}}), std::string("\x01\x02\x09", 3), &out).code(),
      absl::StatusCode::kDataLoss);
}

}  // namespace deltamemstore_test_file
}  // namespace
}  // namespace basalt
