// Tests of the DiskRowSet write-path lookup APIs: FindRow with a precomputed bloom hash, the
// resident bloom filter, MutateRowAt, and DeltaTracker::IsDeletedLatest's fast paths.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cfile/block_cache.h"
#include "cfile/bloom_filter.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/diskrowset.h"
#include "tablet/diskrowset_test_util.h"
#include "tablet/row_changelist.h"

namespace basalt {
namespace {
namespace diskrowset_lookup_test_file {

using drs_test::TestRow;

constexpr ColumnId kValId = 1;
constexpr int32_t kRows = 5000;  // Keys 0, 2, ..., 2 * (kRows - 1).

// (key INT32, val INT64 NULL).
Schema LookupSchema() {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("val", DataType::kInt64, true)}, 1);
  CHECK(s.ok()) << s.status();
  return *s;
}

std::string Key(int32_t k) { return EncodeKey(LookupSchema(), {Datum::Int32(k)}); }

std::string UpdateList(int64_t v) {
  std::string out;
  RowChangeListEncoder enc(&out);
  enc.SetToUpdate();
  enc.AddColumnUpdate(kValId, DataType::kInt64, &v);
  return out;
}

std::string DeleteList() {
  std::string out;
  RowChangeListEncoder enc(&out);
  enc.SetToDelete();
  return out;
}

std::string ReinsertList(int64_t v) {
  std::string out = UpdateList(v);
  out[0] = static_cast<char>(RowChangeType::kReinsert);
  return out;
}

class DiskRowSetLookupTest : public drs_test::DiskRowSetTestBase {
 protected:
  void SetUp() override {
    DiskRowSetTestBase::SetUp();
    std::vector<TestRow> rows;
    for (int32_t i = 0; i < kRows; ++i) rows.push_back({Datum::Int32(2 * i), Datum::Int64(i)});
    Random rng(SeedFromEnvOrTime());
    auto meta = WriteRowSet(schema_, rows, 1, &rng);
    BASALT_ASSERT_OK(meta);
    meta_ = *meta;
  }

  std::shared_ptr<DiskRowSet> OpenRowSet(BlockCache* cache = nullptr) {
    auto rs = DiskRowSet::Open(meta_, Options(cache));
    CHECK(rs.ok()) << rs.status();
    return *rs;
  }

  const Schema schema_ = LookupSchema();
  RowSetMetadata meta_;
};

TEST_F(DiskRowSetLookupTest, FindRowWithHashMatchesFindRow) {
  BlockCache cache(1 << 20);
  Random rng(SeedFromEnvOrTime());
  for (BlockCache* c : {static_cast<BlockCache*>(nullptr), &cache}) {
    std::shared_ptr<DiskRowSet> rs = OpenRowSet(c);
    for (int i = 0; i < 3000; ++i) {
      const int32_t k = static_cast<int32_t>(rng.Uniform(2 * kRows + 20)) - 10;
      const std::string key = Key(k);
      const std::optional<rowid_t> want =
          k >= 0 && k < 2 * kRows && k % 2 == 0 ? std::optional<rowid_t>(k / 2) : std::nullopt;
      auto plain = rs->FindRow(key);
      auto hashed = rs->FindRow(key, BloomKeyHash(key));
      ASSERT_TRUE(plain.ok() && hashed.ok()) << plain.status() << " " << hashed.status();
      EXPECT_EQ(*plain, want) << k;
      EXPECT_EQ(*hashed, want) << k;
    }
    // Every probe of an absent in-range key ended at the bloom filter or the key index.
    const DiskRowSetLookupStats st = rs->lookup_stats();
    EXPECT_GT(st.bloom_probes, 0);
    EXPECT_GT(st.bloom_rejections, 0);
  }
}

TEST_F(DiskRowSetLookupTest, ResidentBloomFilterSurvivesTheCacheAndItsFile) {
  // Once a page was probed it is resident: the filter's file no longer matters for it.
  std::shared_ptr<DiskRowSet> rs = OpenRowSet();
  std::vector<std::string> absent;
  for (int32_t k = 1; k < 2 * kRows - 1; k += 2) absent.push_back(Key(k));
  std::vector<std::optional<rowid_t>> first;
  for (const std::string& key : absent) first.push_back(*rs->FindRow(key));
  const int64_t seeks = rs->lookup_stats().key_index_seeks;
  // Damage the filter's only page (5000 keys fit one) on disk: the resident copy keeps answering
  // the same way.
  FlipByte(meta_.bloom_block, 100);
  for (size_t i = 0; i < absent.size(); ++i) {
    auto row = rs->FindRow(absent[i]);
    BASALT_ASSERT_OK(row);
    EXPECT_EQ(*row, first[i]);
  }
  EXPECT_EQ(rs->lookup_stats().key_index_seeks, 2 * seeks);
  // A new rowset reads the damaged page and reports it.
  std::shared_ptr<DiskRowSet> fresh = OpenRowSet();
  EXPECT_TRUE(absl::IsDataLoss(fresh->FindRow(absent[0]).status()));
}

TEST_F(DiskRowSetLookupTest, MutateRowAtChecksLiveness) {
  std::shared_ptr<DiskRowSet> rs = OpenRowSet();
  const rowid_t row = 7;  // Key 14.
  const std::string key = Key(14);
  HybridTime ts(100);
  auto next = [&] { return ts = HybridTime(ts.value() + 1); };
  BASALT_EXPECT_OK(rs->MutateRowAt(next(), row, UpdateList(1), 0));
  EXPECT_TRUE(absl::IsAlreadyExists(rs->MutateRowAt(next(), row, ReinsertList(2), 0)));
  EXPECT_TRUE(*rs->CheckRowPresent(key, nullptr));
  BASALT_EXPECT_OK(rs->MutateRowAt(next(), row, DeleteList(), 0));
  EXPECT_FALSE(*rs->CheckRowPresent(key, nullptr));
  EXPECT_TRUE(absl::IsNotFound(rs->MutateRowAt(next(), row, UpdateList(3), 0)));
  EXPECT_TRUE(absl::IsNotFound(rs->MutateRowAt(next(), row, DeleteList(), 0)));
  BASALT_EXPECT_OK(rs->MutateRowAt(next(), row, ReinsertList(4), 0));
  EXPECT_TRUE(*rs->CheckRowPresent(key, nullptr));
  // Other rows are untouched; bad input is INVALID_ARGUMENT.
  EXPECT_TRUE(*rs->CheckRowPresent(Key(16), nullptr));
  EXPECT_TRUE(absl::IsInvalidArgument(rs->MutateRowAt(next(), kRows, UpdateList(5), 0)));
  EXPECT_TRUE(absl::IsInvalidArgument(rs->MutateRowAt(next(), row, "", 0)));
  EXPECT_TRUE(absl::IsInvalidArgument(rs->MutateRowAt(next(), row, "\x09", 0)));
  // MutateRow by key and MutateRowAt agree.
  BASALT_EXPECT_OK(rs->MutateRow(next(), Key(16), DeleteList(), 0));
  EXPECT_TRUE(absl::IsNotFound(rs->MutateRowAt(next(), 8, DeleteList(), 0)));
}

TEST_F(DiskRowSetLookupTest, DeletedStateSurvivesFlushAndReopen) {
  // IsDeletedLatest answers from the DMS, from REDO files (after FlushDMS), and after a reopen
  // (the tracker learns from Open that its files may hold DELETEs).
  Random rng(SeedFromEnvOrTime());
  std::shared_ptr<DiskRowSet> rs = OpenRowSet();
  std::vector<bool> deleted(kRows, false);
  HybridTime ts(1000);
  auto mutate_some = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const auto row = static_cast<rowid_t>(rng.Uniform(kRows));
      ts = HybridTime(ts.value() + 1);
      const std::string list =
          deleted[row] ? ReinsertList(i) : (rng.OneIn(2) ? DeleteList() : UpdateList(i));
      BASALT_ASSERT_OK(rs->MutateRowAt(ts, row, list, 0));
      if (list[0] != static_cast<char>(RowChangeType::kUpdate)) deleted[row] = !deleted[row];
    }
  };
  auto check = [&] {
    for (rowid_t row = 0; row < kRows; ++row) {
      auto d = rs->delta_tracker()->IsDeletedLatest(row);
      BASALT_ASSERT_OK(d);
      ASSERT_EQ(*d, deleted[row]) << "row " << row;
      EXPECT_EQ(*rs->CheckRowPresent(Key(2 * static_cast<int32_t>(row)), nullptr), !deleted[row]);
    }
  };
  // Only UPDATEs so far: nothing is deleted.
  for (rowid_t row = 0; row < 100; ++row) {
    ts = HybridTime(ts.value() + 1);
    BASALT_ASSERT_OK(rs->MutateRowAt(ts, row, UpdateList(row), 0));
  }
  check();
  mutate_some(300);
  check();
  BASALT_ASSERT_OK(rs->delta_tracker()->FlushDMS());
  check();
  mutate_some(300);
  check();
  BASALT_ASSERT_OK(rs->delta_tracker()->FlushDMS());
  auto reopened = DiskRowSet::Open(rs->CurrentMetadata(), Options());
  BASALT_ASSERT_OK(reopened);
  rs = *reopened;
  check();
}

}  // namespace diskrowset_lookup_test_file
}  // namespace
}  // namespace basalt
