#include "tablet/memrowset.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/numeric/int128.h"
#include "common/bitmap.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "tablet/row_changelist.h"

namespace basalt {
namespace {
namespace memrowset_test_file {

// (key INT32, val INT32 NULL, s STRING NULL) with ids 0, 1, 2.
Schema BaseSchema() {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("val", DataType::kInt32, true),
       ColumnSchema("s", DataType::kString, true)},
      1);
  CHECK(s.ok()) << s.status();
  return *s;
}

std::string Key(int32_t k) {
  auto schema = BaseSchema();
  return EncodeKey(schema, {Datum::Int32(k)});
}

// A decoded row of the base schema as scanned.
struct Row {
  int32_t key;
  std::optional<int32_t> val;
  std::optional<std::string> s;
  bool operator==(const Row&) const = default;
};
void PrintTo(const Row& r, std::ostream* os) {
  *os << "{" << r.key << ", " << (r.val ? std::to_string(*r.val) : "NULL") << ", "
      << (r.s ? "\"" + *r.s + "\"" : "NULL") << "}";
}

class MemRowSetTest : public ::testing::Test {
 protected:
  MemRowSetTest() : schema_(BaseSchema()), mrs_(1, schema_) {}

  absl::Status Insert(uint64_t ts, int32_t key, std::optional<int32_t> val,
                      std::optional<std::string> s) {
    alignas(16) uint8_t row[64] = {};
    uint8_t nulls[1] = {0};
    std::memcpy(row + schema_.column_offset(0), &key, 4);
    if (val)
      std::memcpy(row + schema_.column_offset(1), &*val, 4);
    else
      BitmapSet(nulls, 1);
    std::string copy = s.value_or("");  // Dies before the MRS is read: the MRS must copy.
    std::string_view sv = copy;
    if (s)
      std::memcpy(row + schema_.column_offset(2), &sv, sizeof(sv));
    else
      BitmapSet(nulls, 2);
    return mrs_.Insert(HybridTime(ts), row, nulls);
  }
  absl::Status Update(uint64_t ts, int32_t key, std::optional<int32_t> val,
                      std::optional<std::string> s) {
    std::string cl;
    RowChangeListEncoder enc(&cl);
    enc.SetToUpdate();
    enc.AddColumnUpdate(1, DataType::kInt32, val ? &*val : nullptr);
    std::string copy = s.value_or("");
    std::string_view sv = copy;
    enc.AddColumnUpdate(2, DataType::kString, s ? &sv : nullptr);
    return mrs_.MutateRow(HybridTime(ts), Key(key), cl);
  }
  absl::Status Delete(uint64_t ts, int32_t key) {
    std::string cl;
    RowChangeListEncoder(&cl).SetToDelete();
    return mrs_.MutateRow(HybridTime(ts), Key(key), cl);
  }
  // Scans the base schema at `snap` in batches of `batch` rows.
  std::vector<Row> Scan(const MvccSnapshot& snap, EncodedKeyRange range = {}, size_t batch = 7) {
    auto it = mrs_.NewIterator(&schema_, snap, std::move(range));
    CHECK(it->Init().ok());
    ColumnBlockBuffer k(DataType::kInt32, batch, false), v(DataType::kInt32, batch, true),
        s(DataType::kString, batch, true);
    ColumnBlock* blocks[] = {k.block(), v.block(), s.block()};
    std::vector<Row> out;
    while (it->HasNext()) {
      auto n = it->NextBlock(blocks, batch);
      CHECK(n.ok()) << n.status();
      for (size_t i = 0; i < *n; ++i) {
        Row r{k.block()->data<int32_t>()[i], std::nullopt, std::nullopt};
        if (!v.block()->is_null(i)) r.val = v.block()->data<int32_t>()[i];
        if (!s.block()->is_null(i)) r.s = std::string(s.block()->data<std::string_view>()[i]);
        out.push_back(r);
      }
    }
    return out;
  }
  static MvccSnapshot At(uint64_t ts) {
    return MvccSnapshot::IncludingAllBefore(HybridTime(ts + 1));
  }

  Schema schema_;
  MemRowSet mrs_;
};

TEST_F(MemRowSetTest, InsertDuplicateUpdateDeleteReinsert) {
  BASALT_ASSERT_OK(Insert(10, 1, 100, "a"));
  BASALT_ASSERT_OK(Insert(10, 2, std::nullopt, std::nullopt));
  EXPECT_EQ(Insert(11, 1, 5, "x").code(), absl::StatusCode::kAlreadyExists);
  BASALT_ASSERT_OK(Update(20, 1, 101, std::nullopt));
  EXPECT_EQ(Update(20, 3, 1, "z").code(), absl::StatusCode::kNotFound);
  BASALT_ASSERT_OK(Delete(30, 1));
  EXPECT_EQ(Delete(31, 1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Update(31, 1, 1, "q").code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(mrs_.CheckRowPresentLatest(Key(1)));
  EXPECT_TRUE(mrs_.CheckRowPresentLatest(Key(2)));
  BASALT_ASSERT_OK(Insert(40, 1, 200, "re"));  // Reinsert.
  EXPECT_EQ(Insert(41, 1, 5, "x").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(mrs_.entry_count(), 2);

  EXPECT_TRUE(Scan(At(9)).empty());
  EXPECT_EQ(Scan(At(10)), (std::vector<Row>{{1, 100, "a"}, {2, std::nullopt, std::nullopt}}));
  EXPECT_EQ(Scan(At(25)), (std::vector<Row>{{1, 101, std::nullopt}, {2, {}, {}}}));
  EXPECT_EQ(Scan(At(30)), (std::vector<Row>{{2, {}, {}}}));
  EXPECT_EQ(Scan(At(40)), (std::vector<Row>{{1, 200, "re"}, {2, {}, {}}}));
  EXPECT_TRUE(mrs_.CheckRowPresent(Key(1), At(29)));
  EXPECT_FALSE(mrs_.CheckRowPresent(Key(1), At(35)));
  EXPECT_TRUE(mrs_.CheckRowPresent(Key(1), At(40)));
  EXPECT_FALSE(mrs_.CheckRowPresent(Key(1), At(5)));

  // The raw chain as the flusher sees it.
  const MRSRow* row = mrs_.FindRow(Key(1));
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->insert_timestamp(), HybridTime(10));
  std::vector<std::string> chain;
  for (const Mutation* m = row->redo_head(); m != nullptr; m = m->next()) {
    chain.push_back(StrCat(m->timestamp().value(), ":", RowChangeListToString(m->changelist())));
  }
  EXPECT_EQ(chain, (std::vector<std::string>{"20:UPDATE(col 1=<4 bytes>, col 2=NULL)", "30:DELETE",
                                             "40:REINSERT(col 1=<4 bytes>, col 2=<2 bytes>)"}));
}

TEST_F(MemRowSetTest, RejectsBadMutationsAndNulls) {
  BASALT_ASSERT_OK(Insert(1, 1, 1, "a"));
  EXPECT_EQ(mrs_.MutateRow(HybridTime(2), Key(1), "\x07").code(),
            absl::StatusCode::kInvalidArgument);
  std::string cl;
  RowChangeListEncoder enc(&cl);
  enc.SetToUpdate();
  int32_t v = 5;
  enc.AddColumnUpdate(0, DataType::kInt32, &v);  // Key column.
  EXPECT_EQ(mrs_.MutateRow(HybridTime(2), Key(1), cl).code(), absl::StatusCode::kInvalidArgument);
  alignas(16) uint8_t row[64] = {};
  uint8_t nulls[1] = {1};  // NULL key.
  EXPECT_EQ(mrs_.Insert(HybridTime(3), row, nulls).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MemRowSetTest, FrozenAcceptsMutationsOnly) {
  BASALT_ASSERT_OK(Insert(1, 1, 1, "a"));
  mrs_.Freeze();
  EXPECT_EQ(Insert(2, 2, 1, "b").code(), absl::StatusCode::kFailedPrecondition);
  BASALT_EXPECT_OK(Update(3, 1, 7, "c"));
  EXPECT_EQ(Scan(MvccSnapshot::IncludingAll()), (std::vector<Row>{{1, 7, "c"}}));
}

// A deleted row's key goes back into the frozen MRS (as a REINSERT), so a key never ends up in two
// rowsets; a live key is still ALREADY_EXISTS.
TEST_F(MemRowSetTest, FrozenReinsertsDeletedRowsInPlace) {
  BASALT_ASSERT_OK(Insert(1, 1, 1, "a"));
  BASALT_ASSERT_OK(Delete(2, 1));
  mrs_.Freeze();
  BASALT_EXPECT_OK(Insert(3, 1, 9, "z"));
  EXPECT_EQ(Insert(4, 1, 9, "z").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Scan(MvccSnapshot::IncludingAll()), (std::vector<Row>{{1, 9, "z"}}));
  EXPECT_EQ(mrs_.entry_count(), 1);
}

// The flusher's view: every row in key order, deleted ones included, with its full chain, and
// chains that keep growing after the MRS is frozen.
TEST_F(MemRowSetTest, RawIteratorSeesDeletedRowsAndLateMutations) {
  BASALT_ASSERT_OK(Insert(1, 5, 1, "a"));
  BASALT_ASSERT_OK(Insert(1, 3, 1, "b"));
  BASALT_ASSERT_OK(Delete(2, 3));
  mrs_.Freeze();
  auto chain_length = [](const MRSRow* row) {
    int n = 0;
    for (const Mutation* m = row->redo_head(); m != nullptr; m = m->next()) ++n;
    return n;
  };
  MRSTree::Iterator it = mrs_.NewRawIterator();
  it.SeekToStart();
  ASSERT_TRUE(it.Valid());
  const MRSRow* first = it.entry();
  EXPECT_EQ(first->key(), Key(3));
  EXPECT_EQ(chain_length(first), 1);
  it.Next();
  ASSERT_TRUE(it.Valid());
  const MRSRow* second = it.entry();
  EXPECT_EQ(second->key(), Key(5));
  EXPECT_EQ(chain_length(second), 0);
  int32_t val;
  std::memcpy(&val, second->row_data() + schema_.column_offset(1), 4);
  EXPECT_EQ(val, 1);
  EXPECT_FALSE(BitmapTest(second->null_bitmap(), 1));
  it.Next();
  EXPECT_FALSE(it.Valid());
  // A mutation that arrives during the flush is appended where the flusher will find it.
  BASALT_ASSERT_OK(Update(3, 5, 2, "c"));
  ASSERT_NE(second->redo_head(), nullptr);
  EXPECT_EQ(second->redo_head()->timestamp(), HybridTime(3));
}

TEST_F(MemRowSetTest, KeyBoundsAndBatches) {
  for (int i = 0; i < 1000; ++i) BASALT_ASSERT_OK(Insert(1, i * 2, i, std::to_string(i)));
  auto rows = Scan(At(1), {Key(101), Key(301)}, 13);
  ASSERT_EQ(rows.size(), 100u);
  EXPECT_EQ(rows.front().key, 102);
  EXPECT_EQ(rows.back().key, 300);
  for (const Row& r : rows) EXPECT_EQ(r.s, std::to_string(r.key / 2));
  EXPECT_EQ(Scan(At(1), {Key(2000), ""}).size(), 0u);
  EXPECT_EQ(Scan(At(1), {"", Key(10)}).size(), 5u);
  EXPECT_EQ(Scan(At(1), {}, 1000).size(), 1000u);
  EXPECT_GT(mrs_.memory_footprint(), 1000u * 16);
}

TEST_F(MemRowSetTest, ProjectionWithAddedAndDroppedColumns) {
  BASALT_ASSERT_OK(Insert(1, 1, 10, "a"));
  BASALT_ASSERT_OK(Insert(1, 2, 20, "b"));
  BASALT_ASSERT_OK(Update(2, 2, 21, "bb"));
  // The table later dropped "val" and added "d" (default 7) and "n" (nullable, no default).
  auto dropped = schema_.DropColumn("val");
  BASALT_ASSERT_OK(dropped);
  auto added = dropped->AddColumn(ColumnSchema("d", DataType::kInt64, false, Datum::Int64(7)));
  BASALT_ASSERT_OK(added);
  auto proj = added->AddColumn(ColumnSchema("n", DataType::kString, true));
  BASALT_ASSERT_OK(proj);
  ASSERT_EQ(proj->num_columns(), 4);  // key, s, d, n
  auto it = mrs_.NewIterator(&*proj, At(5));
  BASALT_ASSERT_OK(it->Init());
  ColumnBlockBuffer k(DataType::kInt32, 8, false), s(DataType::kString, 8, true),
      d(DataType::kInt64, 8, false), n(DataType::kString, 8, true);
  ColumnBlock* blocks[] = {k.block(), s.block(), d.block(), n.block()};
  auto got = it->NextBlock(blocks, 8);
  BASALT_ASSERT_OK(got);
  ASSERT_EQ(*got, 2u);
  EXPECT_EQ(s.block()->data<std::string_view>()[1], "bb");
  EXPECT_EQ(d.block()->data<int64_t>()[0], 7);
  EXPECT_EQ(d.block()->data<int64_t>()[1], 7);
  EXPECT_TRUE(n.block()->is_null(0));
  EXPECT_TRUE(n.block()->is_null(1));
  // Wrong block set.
  ColumnBlock* too_few[] = {k.block()};
  EXPECT_EQ(it->NextBlock(too_few, 8).status().code(), absl::StatusCode::kInvalidArgument);

  // A NOT NULL column without a default cannot be projected; nor a type change.
  auto bad_schema = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("x", DataType::kInt32)}, 1, {0, 9});
  BASALT_ASSERT_OK(bad_schema);
  EXPECT_EQ(mrs_.NewIterator(&*bad_schema, At(5))->Init().code(),
            absl::StatusCode::kInvalidArgument);
  auto retyped = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("val", DataType::kInt64, true)}, 1,
      {0, 1});
  BASALT_ASSERT_OK(retyped);
  EXPECT_EQ(mrs_.NewIterator(&*retyped, At(5))->Init().code(), absl::StatusCode::kInvalidArgument);
}

// Random inserts/updates/deletes with increasing timestamps, checked against a versioned model
// by scans at random earlier snapshots.
TEST_F(MemRowSetTest, RandomOpsMatchModelAtEverySnapshot) {
  Random rnd(SeedFromEnvOrTime());
  // model[ts] = the full table after op ts.
  std::vector<std::map<int32_t, Row>> history(1);
  constexpr int kOps = 3000;
  for (uint64_t ts = 1; ts <= kOps; ++ts) {
    std::map<int32_t, Row> cur = history.back();
    int32_t key = static_cast<int32_t>(rnd.Uniform(300));
    std::optional<int32_t> val;
    if (!rnd.OneIn(5)) val = static_cast<int32_t>(rnd.Next32());
    std::optional<std::string> s;
    if (!rnd.OneIn(5)) s = rnd.RandomString(rnd.Uniform(20));
    bool exists = cur.count(key) != 0;
    switch (rnd.Uniform(3)) {
      case 0:
        ASSERT_EQ(Insert(ts, key, val, s).code(),
                  exists ? absl::StatusCode::kAlreadyExists : absl::StatusCode::kOk);
        if (!exists) cur[key] = Row{key, val, s};
        break;
      case 1:
        ASSERT_EQ(Update(ts, key, val, s).code(),
                  exists ? absl::StatusCode::kOk : absl::StatusCode::kNotFound);
        if (exists) cur[key] = Row{key, val, s};
        break;
      default:
        ASSERT_EQ(Delete(ts, key).code(),
                  exists ? absl::StatusCode::kOk : absl::StatusCode::kNotFound);
        cur.erase(key);
    }
    history.push_back(std::move(cur));
  }
  for (int i = 0; i < 60; ++i) {
    uint64_t ts = i == 0 ? kOps : rnd.Uniform(kOps + 1);
    std::vector<Row> expected;
    for (const auto& [k, r] : history[ts]) expected.push_back(r);
    std::vector<Row> got = Scan(At(ts));
    ASSERT_EQ(got.size(), expected.size()) << "at ts " << ts;
    for (size_t j = 0; j < got.size(); ++j) {
      ASSERT_EQ(got[j], expected[j]) << "row " << j << " at ts " << ts;
    }
  }
}

// One writer applies MVCC ops while three readers scan. Each op adds exactly 1 to the sum of
// "val" over live rows (insert a row with val 1; update val += 1; or delete a row and reinsert
// it with val + 1 in the same op), and "s" always spells "val". So a scan at a snapshot that
// contains ops 1..n must see sum == n and s == to_string(val) in every row: a torn or mixed
// snapshot breaks one of them.
// Where the concurrency test gets its snapshots: the MvccManager, or (for ThreadSanitizer runs,
// which cannot see through the uninstrumented packaged absl::Mutex) a plain atomic counter of
// applied ops.
class ConcurrentScanTest : public MemRowSetTest, public ::testing::WithParamInterface<bool> {
 protected:
  bool use_mvcc_manager() const { return GetParam(); }
  // The snapshot and the number of ops it contains (ops have timestamps 1, 2, ...).
  MvccSnapshot TakeSnapshot(int64_t* num_ops) {
    if (!use_mvcc_manager()) {
      uint64_t applied = applied_.load(std::memory_order_acquire);
      *num_ops = static_cast<int64_t>(applied);
      return MvccSnapshot::IncludingAllBefore(HybridTime(applied + 1));
    }
    MvccSnapshot snap = mvcc_.SnapshotForRead();
    // The ops below the watermark plus the listed ones.
    *num_ops = static_cast<int64_t>(snap.all_committed_before().value()) - 1 +
               static_cast<int64_t>(snap.committed_after().size());
    return snap;
  }
  void StartOp(uint64_t ts) {
    if (use_mvcc_manager()) {
      BASALT_ASSERT_OK(mvcc_.StartOp(HybridTime(ts)));
    }
  }
  void FinishOp(uint64_t ts) {
    if (use_mvcc_manager()) {
      mvcc_.FinishOp(HybridTime(ts));
      mvcc_.AdjustSafeTime(HybridTime(ts));
    } else {
      applied_.store(ts, std::memory_order_release);
    }
  }
  // Scans until the writer is done (and at least 10 times), checking the invariants.
  void ReaderLoop() {
    while (!done_.load() || scans_.load() < 10) {
      int64_t num_ops;
      MvccSnapshot snap = TakeSnapshot(&num_ops);
      int64_t sum = 0;
      int32_t prev_key = -1;
      for (const Row& r : Scan(snap, {}, 64)) {
        ASSERT_GT(r.key, prev_key);
        prev_key = r.key;
        ASSERT_TRUE(r.val.has_value());
        ASSERT_EQ(r.s, std::to_string(*r.val));
        sum += *r.val;
      }
      ASSERT_EQ(sum, num_ops);
      scans_.fetch_add(1);
    }
  }

  MvccManager mvcc_;
  std::atomic<uint64_t> applied_{0};
  std::atomic<bool> done_{false};
  std::atomic<int> scans_{0};
};

// One writer applies ops while three readers scan. Each op adds exactly 1 to the sum of "val"
// over live rows (insert a row with val 1; update val += 1; or delete a row and reinsert it with
// val + 1 in the same op), and "s" always spells "val". So a scan at a snapshot that contains
// ops 1..n must see sum == n and s == to_string(val) in every row: a torn or mixed snapshot
// breaks one of them.
TEST_P(ConcurrentScanTest, ScansSeeConsistentSnapshots) {
  Random rnd(SeedFromEnvOrTime());
  constexpr int kOps = 30000;
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) readers.emplace_back([this] { ReaderLoop(); });
  std::map<int32_t, int32_t> live;
  for (uint64_t ts = 1; ts <= kOps; ++ts) {
    StartOp(ts);
    int32_t key = static_cast<int32_t>(ts % 3 == 0 ? ts : rnd.Uniform(kOps * 4));
    auto it = live.find(key);
    if (it == live.end()) {
      BASALT_ASSERT_OK(Insert(ts, key, 1, "1"));
      live[key] = 1;
    } else if (rnd.OneIn(3)) {
      BASALT_ASSERT_OK(Delete(ts, key));
      BASALT_ASSERT_OK(Insert(ts, key, it->second + 1, std::to_string(it->second + 1)));
      ++it->second;
    } else {
      BASALT_ASSERT_OK(Update(ts, key, it->second + 1, std::to_string(it->second + 1)));
      ++it->second;
    }
    FinishOp(ts);
  }
  done_.store(true);
  for (auto& t : readers) t.join();
  EXPECT_GE(scans_.load(), 10);
  LOG(INFO) << "scans=" << scans_.load() << " rows=" << mrs_.entry_count()
            << " fast_path_inserts=" << mrs_.tree().fast_path_inserts()
            << " reader_retries=" << mrs_.tree().reader_retries();
}

INSTANTIATE_TEST_SUITE_P(Snapshots, ConcurrentScanTest, ::testing::Values(true, false),
                         [](const auto& info) {
                           return std::string(info.param ? "MvccManager" : "AtomicCounter");
                         });

// A schema without nullable columns stores no null bitmap, and one with a DECIMAL128 cell keeps
// its rows' data 16-byte aligned (the rows are 8-byte aligned otherwise). Mutation chains append
// in order without a tail pointer in the row.
TEST(MemRowSetLayoutTest, NoNullBitmapSixteenByteCellsAndLongChains) {
  auto schema = Schema::Create(
      {ColumnSchema("key", DataType::kInt32),
       ColumnSchema("d", DataType::kDecimal128, false, std::nullopt, TypeAttributes{38, 2, 0}),
       ColumnSchema("v", DataType::kInt32)},
      1);
  ASSERT_TRUE(schema.ok()) << schema.status();
  MemRowSet mrs(1, *schema);
  auto cell_d = [](int32_t k) { return absl::int128(k) * 1'000'000'000'000'000'000 + k; };
  constexpr int kRows = 1000;
  for (int32_t k = 0; k < kRows; ++k) {
    alignas(kRowAlignment) uint8_t row[64] = {};
    const absl::int128 d = cell_d(k);
    const int32_t v = -k;
    std::memcpy(row + schema->column_offset(0), &k, 4);
    std::memcpy(row + schema->column_offset(1), &d, sizeof(d));
    std::memcpy(row + schema->column_offset(2), &v, 4);
    BASALT_ASSERT_OK(mrs.Insert(HybridTime(k + 1), row, nullptr));
  }
  for (int32_t k = 0; k < kRows; ++k) {
    const MRSRow* r = mrs.FindRow(EncodeKey(*schema, {Datum::Int32(k)}));
    ASSERT_NE(r, nullptr) << k;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r->row_data()) % kRowAlignment, 0u) << k;
    absl::int128 d;
    int32_t key, v;
    std::memcpy(&key, r->row_data() + schema->column_offset(0), 4);
    std::memcpy(&d, r->row_data() + schema->column_offset(1), sizeof(d));
    std::memcpy(&v, r->row_data() + schema->column_offset(2), 4);
    EXPECT_EQ(key, k);
    EXPECT_EQ(d, cell_d(k));
    EXPECT_EQ(v, -k);
    for (int c = 0; c < 3; ++c) EXPECT_FALSE(BitmapTest(r->null_bitmap(), c)) << k;
  }
  // 200 updates of one row and one of another, interleaved with it.
  const std::string key7 = EncodeKey(*schema, {Datum::Int32(7)});
  for (int32_t i = 0; i < 200; ++i) {
    std::string cl;
    RowChangeListEncoder enc(&cl);
    enc.SetToUpdate();
    enc.AddColumnUpdate(2, DataType::kInt32, &i);
    BASALT_ASSERT_OK(mrs.MutateRow(HybridTime(2 * kRows + 2 * i), key7, cl));
    if (i == 100) {
      BASALT_ASSERT_OK(mrs.MutateRow(HybridTime(2 * kRows + 2 * i + 1),
                                     EncodeKey(*schema, {Datum::Int32(8)}), cl));
    }
  }
  int n = 0;
  for (const Mutation* m = mrs.FindRow(key7)->redo_head(); m != nullptr; m = m->next(), ++n) {
    EXPECT_EQ(m->timestamp(), HybridTime(2 * kRows + 2 * n));
  }
  EXPECT_EQ(n, 200);
  const MRSRow* r8 = mrs.FindRow(EncodeKey(*schema, {Datum::Int32(8)}));
  ASSERT_NE(r8->redo_head(), nullptr);
  EXPECT_EQ(r8->redo_head()->next(), nullptr);
}

// String cells of a schema without nullable columns are copied (no null bitmap to consult), and
// a string key column's cell points into the row's encoded key when its bytes are there verbatim.
TEST(MemRowSetLayoutTest, StringCellsWithoutABitmapAndKeyStringsInTheKey) {
  auto schema =
      Schema::Create({ColumnSchema("k1", DataType::kString), ColumnSchema("k2", DataType::kInt32),
                      ColumnSchema("k3", DataType::kString), ColumnSchema("v", DataType::kString),
                      ColumnSchema("w", DataType::kInt32)},
                     3);
  ASSERT_TRUE(schema.ok()) << schema.status();
  MemRowSet mrs(1, *schema);
  struct Case {
    std::string k1;
    int32_t k2;
    std::string k3;
    std::string v;
  };
  const std::vector<Case> cases = {
      {"host_1", 7, "us-west", "value one"},
      {std::string("a\0b", 3), 8, "z", "v2"},  // k1 escaped in the key: k1, k3 copied.
      {"", 9, std::string("tail\0", 5), ""},   // Empty k1; k3 ends in 0x00.
      {"x", -1, "", std::string(1000, 'q')},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& want = cases[c];
    // The row's strings live in buffers clobbered right after the insert: the MRS must not
    // point at them.
    std::string k1 = want.k1, k3 = want.k3, v = want.v;
    std::string_view k1v = k1, k3v = k3, vv = v;
    alignas(kRowAlignment) uint8_t row[128] = {};
    std::memcpy(row + schema->column_offset(0), &k1v, sizeof(k1v));
    std::memcpy(row + schema->column_offset(1), &want.k2, 4);
    std::memcpy(row + schema->column_offset(2), &k3v, sizeof(k3v));
    std::memcpy(row + schema->column_offset(3), &vv, sizeof(vv));
    const int32_t w = static_cast<int32_t>(c);
    std::memcpy(row + schema->column_offset(4), &w, 4);
    BASALT_ASSERT_OK(mrs.Insert(HybridTime(c + 1), row, nullptr));
    std::fill(k1.begin(), k1.end(), '#');
    std::fill(k3.begin(), k3.end(), '#');
    std::fill(v.begin(), v.end(), '#');
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& want = cases[c];
    const std::string key =
        EncodeKey(*schema, {Datum::String(want.k1), Datum::Int32(want.k2), Datum::String(want.k3)});
    const MRSRow* r = mrs.FindRow(key);
    ASSERT_NE(r, nullptr) << c;
    auto cell = [&](int col) {
      std::string_view sv;
      std::memcpy(&sv, r->row_data() + schema->column_offset(col), sizeof(sv));
      return sv;
    };
    EXPECT_EQ(cell(0), want.k1) << c;
    EXPECT_EQ(cell(2), want.k3) << c;
    EXPECT_EQ(cell(3), want.v) << c;
    auto in_key = [&](std::string_view sv) {
      return sv.data() >= r->key().data() &&
             sv.data() + sv.size() <= r->key().data() + r->key().size();
    };
    const bool k1_verbatim = want.k1.find('\0') == std::string::npos;
    EXPECT_EQ(in_key(cell(0)), k1_verbatim) << c;
    EXPECT_EQ(in_key(cell(2)), k1_verbatim && want.k3.find('\0') == std::string::npos) << c;
    EXPECT_FALSE(in_key(cell(3)) && !want.v.empty()) << c;
  }
}

// The W1 table's rows (three INT32 columns, none nullable) take 24 bytes of header, 12 of cells
// and 4 of key: 40 bytes in the arena, and about 18 more in B-tree slots (docs/tablet.md).
TEST(MemRowSetLayoutTest, ThreeInt32ColumnsTakeUnderSixtyBytesARow) {
  auto schema =
      Schema::Create({ColumnSchema("key", DataType::kInt32), ColumnSchema("a", DataType::kInt32),
                      ColumnSchema("b", DataType::kInt32)},
                     1);
  ASSERT_TRUE(schema.ok()) << schema.status();
  MemRowSet mrs(1, *schema);
  // The footprint grows a whole arena block at a time (up to 8 MiB): rows per byte are measured
  // over the last block filled completely, from the jump that allocated it to the next jump.
  std::vector<std::pair<int, size_t>> jumps;  // (rows before the insert, footprint after it)
  size_t last = mrs.memory_footprint();
  for (int32_t k = 0; k < 300'000; ++k) {
    uint8_t row[12];
    std::memcpy(row, &k, 4);
    std::memcpy(row + 4, &k, 4);
    std::memcpy(row + 8, &k, 4);
    BASALT_ASSERT_OK(mrs.Insert(HybridTime(k + 1), row, nullptr));
    if (mrs.memory_footprint() != last) {
      jumps.emplace_back(k, mrs.memory_footprint() - last);
      last = mrs.memory_footprint();
    }
  }
  ASSERT_GE(jumps.size(), 3u);
  const auto& [rows_at_alloc, block] = jumps[jumps.size() - 2];
  const int rows_in_block = jumps.back().first - rows_at_alloc;
  EXPECT_GE(block, size_t{1} << 20);
  const double per_row = static_cast<double>(block) / rows_in_block;
  EXPECT_LT(per_row, 60.0) << block << " bytes held " << rows_in_block << " rows";
  EXPECT_GT(per_row, 40.0) << block << " bytes held " << rows_in_block << " rows";
}

}  // namespace memrowset_test_file
}  // namespace
}  // namespace basalt
