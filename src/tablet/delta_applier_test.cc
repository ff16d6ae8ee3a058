#include "tablet/delta_applier.h"

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/bitmap.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/delta_test_util.h"
#include "tablet/row_changelist.h"

namespace basalt {
namespace {
namespace delta_applier_test_file {

using delta_test::DeleteList;
using delta_test::ReinsertInt32;
using delta_test::UpdateInt32;

// key INT32 (id 0), a INT32 NULL (id 1), b INT32 NOT NULL DEFAULT 7 (id 2), s STRING NULL
// (id 3), l INT64 NULL DEFAULT 99 (id 4). Change lists may also name id 8, a dropped column.
Schema TableSchema() {
  return Schema::Create(
             {ColumnSchema("key", DataType::kInt32), ColumnSchema("a", DataType::kInt32, true),
              ColumnSchema("b", DataType::kInt32, false, Datum::Int32(7)),
              ColumnSchema("s", DataType::kString, true),
              ColumnSchema("l", DataType::kInt64, true, Datum::Int64(99))},
             1, {0, 1, 2, 3, 4})
      .value();
}

// Owns one block per projected column plus the live bitmap.
struct Batch {
  Batch(const Schema& projection, size_t n) : live(BitmapSize(n), 0xFF) {
    for (int i = 0; i < projection.num_columns(); ++i) {
      const ColumnSchema& c = projection.column(i);
      buffers.push_back(std::make_unique<ColumnBlockBuffer>(c.type(), n, c.is_nullable()));
      blocks.push_back(buffers.back()->block());
    }
  }
  std::vector<std::unique_ptr<ColumnBlockBuffer>> buffers;
  std::vector<ColumnBlock*> blocks;
  std::vector<uint8_t> live;
};

// A reference cell: NULL, an integer, or a string.
struct Cell {
  bool null = true;
  int64_t i = 0;
  std::string s;
  bool operator==(const Cell&) const = default;
};
void PrintTo(const Cell& c, std::ostream* os) {
  if (c.null) {
    *os << "NULL";
  } else {
    *os << c.i << "/\"" << c.s << "\"";
  }
}

Cell ReadCell(const ColumnBlock& b, size_t row) {
  Cell c;
  if (b.is_null(row)) return c;
  c.null = false;
  if (b.type == DataType::kString) {
    std::string_view v;
    std::memcpy(&v, b.cell(row), sizeof(v));
    c.s = std::string(v);
  } else if (b.type == DataType::kInt64) {
    std::memcpy(&c.i, b.cell(row), 8);
  } else {
    int32_t v;
    std::memcpy(&v, b.cell(row), 4);
    c.i = v;
  }
  return c;
}

Cell FromUpdate(DataType type, const ColumnUpdate& u) {
  Cell c;
  if (u.is_null) return c;
  c.null = false;
  if (type == DataType::kString) {
    c.s = std::string(u.value);
  } else if (type == DataType::kInt64) {
    std::memcpy(&c.i, u.value.data(), 8);
  } else {
    int32_t v;
    std::memcpy(&v, u.value.data(), 4);
    c.i = v;
  }
  return c;
}

// The brute-force reference: one row at a time, entries found by scanning the whole spans,
// state kept as a map from column id.
struct RefRow {
  bool live = true;
  std::map<ColumnId, Cell> cells;
};

void RefApply(const Schema& proj, std::string_view changes, bool is_redo, RefRow* row) {
  RowChangeListDecoder dec(changes);
  CHECK(dec.Init().ok());
  if (dec.is_delete()) {
    row->live = false;
    return;
  }
  if (dec.is_reinsert()) {
    row->live = true;
    if (is_redo) {
      for (int j = proj.num_key_columns(); j < proj.num_columns(); ++j) {
        const auto& def = proj.column(j).default_value();
        Cell c;
        if (def && !def->is_null()) {
          c = ReadCell(
              ColumnBlock{proj.column(j).type(), proj.column(j).type_info().size(),
                          reinterpret_cast<uint8_t*>(const_cast<void*>(def->cell())), nullptr, 1},
              0);
        } else if (!proj.column(j).is_nullable()) {
          continue;
        }
        row->cells[proj.column_id(j)] = c;
      }
    }
  }
  ColumnUpdate u;
  while (dec.HasNext()) {
    CHECK(dec.ReadNext(&u).ok());
    const int j = proj.find_column_by_id(u.column_id);
    if (j >= 0) row->cells[u.column_id] = FromUpdate(proj.column(j).type(), u);
  }
}

std::string RandomList(Random* rng, bool undo_reinsert_complete) {
  const uint64_t kind = rng->Uniform(8);
  if (kind == 0) return DeleteList();
  std::string out;
  RowChangeListEncoder enc(&out);
  const bool reinsert = kind == 1;
  reinsert ? enc.SetToReinsert() : enc.SetToUpdate();
  bool any = false;
  for (ColumnId id : {1, 2, 3, 4, 8}) {
    bool take = reinsert ? (id != 4 || undo_reinsert_complete || rng->OneIn(2)) : rng->OneIn(2);
    if (id == 8) take = rng->OneIn(3);
    if (!take) continue;
    any = true;
    const bool null = id != 2 && rng->OneIn(4);
    const int32_t i32 = static_cast<int32_t>(rng->Uniform(1000));
    const int64_t i64 = static_cast<int64_t>(rng->Next64());
    const std::string str = rng->RandomString(rng->Uniform(12));
    const std::string_view sv = str;
    const DataType type = id == 3   ? DataType::kString
                          : id == 4 ? DataType::kInt64
                                    : DataType::kInt32;
    const void* cell = null      ? nullptr
                       : id == 3 ? static_cast<const void*>(&sv)
                       : id == 4 ? static_cast<const void*>(&i64)
                                 : static_cast<const void*>(&i32);
    enc.AddColumnUpdate(id, type, cell);
  }
  if (!any) {
    const int32_t v = 5;
    enc.AddColumnUpdate(2, DataType::kInt32, &v);
  }
  return out;
}

TEST(DeltaApplierTest, MatchesBruteForceReference) {
  Random rng(SeedFromEnvOrTime());
  const Schema table = TableSchema();
  const Schema proj = table.Project({"key", "s", "a", "l", "b"}).value();
  // A column added after every delta was written: reads as its default.
  const Schema wide =
      proj.AddColumn(ColumnSchema("added", DataType::kInt32, false, Datum::Int32(-1))).value();
  const DeltaApplier applier(&wide);
  for (int iter = 0; iter < 300; ++iter) {
    // A snapshot with holes: ops 1..199 started, a random subset finished.
    MvccManager mvcc;
    for (uint64_t ts = 1; ts < 200; ++ts) BASALT_ASSERT_OK(mvcc.StartOp(HybridTime(ts)));
    const uint64_t finish_below = rng.Uniform(210);
    for (uint64_t ts = 1; ts < 200; ++ts) {
      if (ts < finish_below || rng.OneIn(3)) mvcc.FinishOp(HybridTime(ts));
    }
    const MvccSnapshot snap = mvcc.SnapshotForRead();
    const rowid_t start = static_cast<rowid_t>(rng.Uniform(1000));
    const size_t n = 1 + rng.Uniform(40);
    std::deque<std::string> storage;  // Stable addresses: entries point into it.
    std::vector<DeltaEntry> undos, redos;
    for (size_t i = 0; i < n; ++i) {
      // UNDOs at ts 1..99, REDOs at 100..199 (every UNDO below every REDO).
      for (uint64_t ts = 1; ts < 100; ts += 1 + rng.Uniform(40)) {
        storage.push_back(RandomList(&rng, true));
        undos.push_back(
            {DeltaKey{static_cast<rowid_t>(start + i), HybridTime(ts)}, storage.back()});
      }
      for (uint64_t ts = 100; ts < 200; ts += 1 + rng.Uniform(40)) {
        storage.push_back(RandomList(&rng, false));
        redos.push_back(
            {DeltaKey{static_cast<rowid_t>(start + i), HybridTime(ts)}, storage.back()});
      }
    }
    Batch batch(wide, n);
    std::vector<RefRow> ref(n);
    for (size_t i = 0; i < n; ++i) {
      for (int j = 0; j < wide.num_columns(); ++j) {  // Random base values.
        ColumnBlock* b = batch.blocks[j];
        if (b->null_bitmap != nullptr) b->SetNull(i, rng.OneIn(3));
        const int64_t v = rng.Uniform(100);
        std::memcpy(b->cell(i), &v, std::min<size_t>(8, b->cell_size));
        if (b->type == DataType::kString) {
          const std::string_view sv = "base";
          std::memcpy(b->cell(i), &sv, sizeof(sv));
        }
        ref[i].cells[wide.column_id(j)] = ReadCell(*b, i);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const rowid_t row = static_cast<rowid_t>(start + i);
      std::vector<const DeltaEntry*> mine;
      for (const DeltaEntry& e : undos) {
        if (e.key.row == row) mine.insert(mine.begin(), &e);  // Newest first.
      }
      for (const DeltaEntry* e : mine) {
        if (!snap.IsCommitted(e->key.ts)) RefApply(wide, e->changes, false, &ref[i]);
      }
      for (const DeltaEntry& e : redos) {
        if (e.key.row == row && snap.IsCommitted(e.key.ts))
          RefApply(wide, e.changes, true, &ref[i]);
      }
    }
    absl::Status s = applier.Apply(snap, start, n, undos, redos, batch.blocks, batch.live.data());
    BASALT_ASSERT_OK(s);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(BitmapTest(batch.live.data(), i), ref[i].live) << "iter " << iter << " row " << i;
      if (!ref[i].live) continue;
      for (int j = 0; j < wide.num_columns(); ++j) {
        ASSERT_EQ(ReadCell(*batch.blocks[j], i), ref[i].cells[wide.column_id(j)])
            << "iter " << iter << " row " << i << " column " << wide.column(j).name();
      }
    }
  }
}

class DeltaApplierCasesTest : public ::testing::Test {
 protected:
  DeltaApplierCasesTest() : proj_(TableSchema()), batch_(proj_, 4) {
    for (size_t i = 0; i < 4; ++i) {
      for (ColumnBlock* b : batch_.blocks) {
        std::memset(b->cell(i), 0, b->cell_size);
        if (b->null_bitmap) b->SetNull(i, false);
      }
      const std::string_view sv = "x";
      std::memcpy(batch_.blocks[3]->cell(i), &sv, sizeof(sv));
    }
  }
  absl::Status Apply(std::vector<DeltaEntry> undos, std::vector<DeltaEntry> redos,
                     const MvccSnapshot& snap = MvccSnapshot::IncludingAll()) {
    return ApplyDeltas(proj_, snap, 10, 4, undos, redos, batch_.blocks, batch_.live.data());
  }
  int32_t A(size_t i) { return batch_.blocks[1]->data<int32_t>()[i]; }
  int32_t B(size_t i) { return batch_.blocks[2]->data<int32_t>()[i]; }
  const Schema proj_;
  Batch batch_;
};

TEST_F(DeltaApplierCasesTest, RedoSequenceAndReinsertDefaults) {
  const std::string u1 = UpdateInt32({{1, 5}, {2, 6}});
  const std::string del = DeleteList();
  const std::string re = ReinsertInt32({{1, 8}});  // b, s, l absent: default, NULL, default.
  BASALT_ASSERT_OK(Apply({}, {{{10, HybridTime(1)}, u1},
                              {{11, HybridTime(1)}, u1},
                              {{11, HybridTime(2)}, del},
                              {{12, HybridTime(1)}, del},
                              {{12, HybridTime(3)}, re}}));
  EXPECT_EQ(A(0), 5);
  EXPECT_EQ(B(0), 6);
  EXPECT_FALSE(BitmapTest(batch_.live.data(), 1));
  EXPECT_TRUE(BitmapTest(batch_.live.data(), 2));
  EXPECT_EQ(A(2), 8);
  EXPECT_EQ(B(2), 7);
  EXPECT_TRUE(batch_.blocks[3]->is_null(2));
  EXPECT_EQ(batch_.blocks[4]->data<int64_t>()[2], 99);
  EXPECT_TRUE(BitmapTest(batch_.live.data(), 3));
}

TEST_F(DeltaApplierCasesTest, UndosNewestFirstThenRedos) {
  // Base a = 0. UNDO at 5 sets a = 1, UNDO at 3 sets a = 2; REDO at 10 sets a = 3.
  const std::string a1 = UpdateInt32({{1, 1}}), a2 = UpdateInt32({{1, 2}});
  const std::string a3 = UpdateInt32({{1, 3}}), del = DeleteList();
  const std::string re = ReinsertInt32({{1, 42}});
  std::vector<DeltaEntry> undos = {{{10, HybridTime(3)}, a2},
                                   {{10, HybridTime(5)}, a1},
                                   {{11, HybridTime(4)}, del},
                                   {{12, HybridTime(6)}, re}};
  std::vector<DeltaEntry> redos = {{{10, HybridTime(10)}, a3}};
  // Snapshot {1, 2}: both UNDOs apply, 5 then 3, so the older value wins.
  absl::Status s = Apply(undos, redos, MvccSnapshot::IncludingAllBefore(HybridTime(3)));
  BASALT_ASSERT_OK(s);
  EXPECT_EQ(A(0), 2);
  // Snapshot {1, 2, 3}: only the UNDO at 5 applies. Row 11 was inserted at 4: it did not exist
  // yet. Row 12 was deleted at 6: it existed, with a = 42.
  batch_.live.assign(1, 0xFF);
  BASALT_ASSERT_OK(Apply(undos, redos, MvccSnapshot::IncludingAllBefore(HybridTime(4))));
  EXPECT_EQ(A(0), 1);
  EXPECT_FALSE(BitmapTest(batch_.live.data(), 1));
  EXPECT_TRUE(BitmapTest(batch_.live.data(), 2));
  EXPECT_EQ(A(2), 42);
  // Everything: no UNDO applies, the REDO does.
  batch_.live.assign(1, 0xFF);
  BASALT_ASSERT_OK(Apply(undos, redos, MvccSnapshot::IncludingAll()));
  EXPECT_EQ(A(0), 3);
}

TEST_F(DeltaApplierCasesTest, CorruptOrMisplacedEntries) {
  auto code = [&](std::vector<DeltaEntry> redos) { return Apply({}, std::move(redos)).code(); };
  std::string three_bytes =
      "\x01\x02\x03"
      "abc";  // a := 3-byte value.
  EXPECT_EQ(code({{{10, HybridTime(1)}, three_bytes}}), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code({{{10, HybridTime(1)}, UpdateInt32({{2, std::nullopt}})}}),
            absl::StatusCode::kDataLoss);  // NULL in NOT NULL b.
  EXPECT_EQ(code({{{10, HybridTime(1)}, UpdateInt32({{0, 1}})}}),
            absl::StatusCode::kDataLoss);  // Key column.
  EXPECT_EQ(code({{{10, HybridTime(1)}, "\x09"}}), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code({{{9, HybridTime(1)}, DeleteList()}}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{{14, HybridTime(1)}, DeleteList()}}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{{11, HybridTime(1)}, DeleteList()}, {{10, HybridTime(1)}, DeleteList()}}),
            absl::StatusCode::kInvalidArgument);
  // An entry the snapshot excludes is not even decoded.
  BASALT_EXPECT_OK(Apply({}, {{{10, HybridTime(5)}, "\x09"}}, MvccSnapshot::IncludingNone()));
  std::vector<ColumnBlock*> too_few(batch_.blocks.begin(), batch_.blocks.end() - 1);
  EXPECT_EQ(ApplyDeltas(proj_, MvccSnapshot::IncludingAll(), 10, 4, {},
                        {{{10, HybridTime(1)}, DeleteList()}}, too_few, batch_.live.data())
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DeltaApplierKeyTest, KeyColumnIdsProtectNonLeadingKeys) {
  const Schema proj = TableSchema().Project({"a", "key"}).value();
  ASSERT_EQ(proj.num_key_columns(), 0);
  Batch batch(proj, 1);
  batch.blocks[0]->SetNull(0, false);
  batch.blocks[1]->data<int32_t>()[0] = 1234;
  const std::string re = ReinsertInt32({{1, 5}});
  const std::vector<DeltaEntry> redos = {{{0, HybridTime(1)}, re}};
  const ColumnId key_id = 0;
  absl::Status s =
      DeltaApplier(&proj, {&key_id, 1})
          .Apply(MvccSnapshot::IncludingAll(), 0, 1, {}, redos, batch.blocks, batch.live.data());
  BASALT_ASSERT_OK(s);
  EXPECT_EQ(batch.blocks[0]->data<int32_t>()[0], 5);
  EXPECT_EQ(batch.blocks[1]->data<int32_t>()[0], 1234);
}

TEST(DeltaApplierHelpersTest, TouchesAndAffects) {
  const std::string upd = UpdateInt32({{1, 5}});
  const std::string del = DeleteList();
  const std::string re = ReinsertInt32({{1, 5}});
  const std::vector<DeltaEntry> updates = {{{0, HybridTime(5)}, upd}, {{1, HybridTime(6)}, del}};
  EXPECT_TRUE(AnyEntryTouches(updates, std::vector<ColumnId>{1}));
  EXPECT_FALSE(AnyEntryTouches(updates, std::vector<ColumnId>{2, 3}));
  EXPECT_FALSE(AnyEntryTouches({}, std::vector<ColumnId>{1}));
  const std::vector<DeltaEntry> reinserts = {{{0, HybridTime(5)}, re}};
  EXPECT_TRUE(AnyEntryTouches(reinserts, std::vector<ColumnId>{7}));
  const std::vector<DeltaEntry> corrupt = {{{0, HybridTime(5)}, "\x01\x02"}};
  EXPECT_TRUE(AnyEntryTouches(corrupt, std::vector<ColumnId>{7}));

  const MvccSnapshot snap = MvccSnapshot::IncludingAllBefore(HybridTime(6));
  EXPECT_TRUE(AnyEntryAffects(updates, snap, DeltaType::kRedo));  // ts 5 committed.
  EXPECT_TRUE(AnyEntryAffects(updates, snap, DeltaType::kUndo));  // ts 6 not committed.
  EXPECT_FALSE(AnyEntryAffects(updates, MvccSnapshot::IncludingNone(), DeltaType::kRedo));
  EXPECT_FALSE(AnyEntryAffects(updates, MvccSnapshot::IncludingAll(), DeltaType::kUndo));
}

}  // namespace delta_applier_test_file
}  // namespace
}  // namespace basalt
