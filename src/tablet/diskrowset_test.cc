#include "tablet/diskrowset.h"

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "cfile/block_cache.h"
#include "cfile/bloom_filter.h"
#include "cfile/cfile_writer.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/diskrowset_iterator.h"
#include "tablet/diskrowset_test_util.h"
#include "tablet/row_changelist.h"

namespace basalt {
namespace {
namespace diskrowset_test_file {

using drs_test::RowToString;
using drs_test::TestRow;

constexpr ColumnId kValId = 1;
constexpr ColumnId kStrId = 2;

// (key INT32, val INT64 NULL, s STRING NULL, tag INT32) with ids 0..3. `tag` is key / 100 (so
// sorted) with small pages, so zone maps can skip pages.
Schema TestSchema() {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("val", DataType::kInt64, true),
       ColumnSchema("s", DataType::kString, true),
       ColumnSchema("tag", DataType::kInt32, false, std::nullopt, {},
                    {EncodingType::kPlain, CompressionType::kNone, 1024})},
      1);
  CHECK(s.ok()) << s.status();
  return *s;
}

std::string Key(int32_t k) { return EncodeKey(TestSchema(), {Datum::Int32(k)}); }

TestRow MakeRow(Random* rng, int32_t key) {
  return {
      Datum::Int32(key),
      rng->OneIn(5) ? Datum::Null(DataType::kInt64) : Datum::Int64(rng->UniformRange(-50, 50)),
      rng->OneIn(5) ? Datum::Null(DataType::kString) : Datum::String(StrCat("s", rng->Uniform(20))),
      Datum::Int32(key / 100)};
}

// The change lists of the tests.
std::string UpdateList(const TestRow& row) {
  std::string out;
  RowChangeListEncoder enc(&out);
  enc.SetToUpdate();
  enc.AddColumnUpdate(kValId, DataType::kInt64, row[1].is_null() ? nullptr : row[1].cell());
  enc.AddColumnUpdate(kStrId, DataType::kString, row[2].is_null() ? nullptr : row[2].cell());
  return out;
}
std::string ReinsertList(const TestRow& row) {
  std::string out = UpdateList(row);
  out[0] = static_cast<char>(RowChangeType::kReinsert);
  std::string tag;
  RowChangeListEncoder enc(&tag);
  enc.SetToUpdate();
  enc.AddColumnUpdate(3, DataType::kInt32, row[3].cell());
  return out + tag.substr(1);
}
std::string DeleteList() {
  std::string out;
  RowChangeListEncoder(&out).SetToDelete();
  return out;
}

// A reference model: each key's base row and its later states (nullopt = deleted) by timestamp.
class Model {
 public:
  void AddBase(const TestRow& row) { hist_[row[0].int_value()].push_back({0, row}); }
  void Set(uint64_t ts, int32_t key, std::optional<TestRow> row) {
    hist_[key].push_back({ts, std::move(row)});
  }
  bool IsBase(int32_t key) const { return hist_.contains(key); }
  // The state of `key` at the latest timestamp.
  std::optional<TestRow> Latest(int32_t key) const { return At(key, UINT64_MAX); }
  // The state of `key` with every mutation below `before` applied.
  std::optional<TestRow> At(int32_t key, uint64_t before) const {
    auto it = hist_.find(key);
    if (it == hist_.end()) return std::nullopt;
    std::optional<TestRow> state;
    for (const auto& [ts, row] : it->second) {
      if (ts < before) state = row;
    }
    return state;
  }
  // Rows live before `before` with keys in [lo, hi) that pass `filter`.
  std::vector<TestRow> Scan(uint64_t before, int64_t lo, int64_t hi,
                            const std::function<bool(const TestRow&)>& filter) const {
    std::vector<TestRow> out;
    for (auto it = hist_.lower_bound(static_cast<int32_t>(std::max<int64_t>(lo, INT32_MIN)));
         it != hist_.end() && it->first < hi; ++it) {
      std::optional<TestRow> r = At(it->first, before);
      if (r.has_value() && filter(*r)) out.push_back(*r);
    }
    return out;
  }
  std::vector<int32_t> Keys() const {
    std::vector<int32_t> keys;
    for (const auto& [k, h] : hist_) keys.push_back(k);
    return keys;
  }

 private:
  std::map<int32_t, std::vector<std::pair<uint64_t, std::optional<TestRow>>>> hist_;
};

MvccSnapshot Before(uint64_t ts) { return MvccSnapshot::IncludingAllBefore(HybridTime(ts)); }

class DiskRowSetTest : public drs_test::DiskRowSetTestBase {
 protected:
  DiskRowSetTest() : schema_(TestSchema()), rng_(SeedFromEnvOrTime()) {}

  // Writes rows with the given keys (ascending) into rowset 1 and opens it.
  void WriteAndOpen(const std::vector<int32_t>& keys, BlockCache* cache = nullptr) {
    std::vector<TestRow> rows;
    for (int32_t k : keys) {
      rows.push_back(MakeRow(&rng_, k));
      model_.AddBase(rows.back());
    }
    auto meta = WriteRowSet(schema_, rows, 1, &rng_);
    BASALT_ASSERT_OK(meta);
    meta_ = *meta;
    auto rs = DiskRowSet::Open(meta_, Options(cache));
    BASALT_ASSERT_OK(rs);
    rs_ = *rs;
  }

  // Applies a mutation to the rowset and the model, checking that both agree on the outcome.
  void Mutate(uint64_t ts, int32_t key, const std::string& changes, std::optional<TestRow> state) {
    const std::optional<TestRow> latest = model_.Latest(key);
    absl::Status expected = absl::OkStatus();
    const bool reinsert = changes[0] == static_cast<char>(RowChangeType::kReinsert);
    if (!model_.IsBase(key)) {
      expected = absl::NotFoundError("");
    } else if (reinsert && latest.has_value()) {
      expected = absl::AlreadyExistsError("");
    } else if (!reinsert && !latest.has_value()) {
      expected = absl::NotFoundError("");
    }
    absl::Status s = rs_->MutateRow(HybridTime(ts), Key(key), changes, 0);
    ASSERT_EQ(s.code(), expected.code()) << s << " key " << key;
    if (s.ok()) model_.Set(ts, key, std::move(state));
  }

  // Checks a scan at `before` over [lo, hi) with `preds` against the model.
  void CheckScan(uint64_t before, std::optional<int32_t> lo, std::optional<int32_t> hi,
                 std::vector<ColumnPredicate> preds,
                 const std::function<bool(const TestRow&)>& filter, size_t max_rows = 1000) {
    ScanSpec spec;
    if (lo) spec.range.lower = Key(*lo);
    if (hi) spec.range.upper = Key(*hi);
    spec.predicates = std::move(preds);
    auto got = Scan(*rs_, schema_, Before(before), spec, max_rows);
    BASALT_ASSERT_OK(got);
    std::vector<TestRow> want = model_.Scan(before, lo.value_or(INT32_MIN),
                                            hi ? int64_t{*hi} : int64_t{INT32_MAX} + 1, filter);
    ASSERT_EQ(got->size(), want.size()) << "before " << before;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ((*got)[i], want[i])
          << i << ": " << RowToString((*got)[i]) << " vs " << RowToString(want[i]);
    }
  }

  ColumnPredicate ValRange(int64_t lo, int64_t hi) {
    return *ColumnPredicate::Range(schema_.column(1), Datum::Int64(lo), Datum::Int64(hi));
  }
  static bool ValIn(const TestRow& r, int64_t lo, int64_t hi) {
    return !r[1].is_null() && r[1].int_value() >= lo && r[1].int_value() < hi;
  }

  Schema schema_;
  Random rng_;
  Model model_;
  RowSetMetadata meta_;
  std::shared_ptr<DiskRowSet> rs_;
};

std::vector<int32_t> EvenKeys(int n) {
  std::vector<int32_t> keys;
  for (int i = 0; i < n; ++i) keys.push_back(2 * i);
  return keys;
}

// The kind of the key filter in block `id`.
KeyFilterKind FilterKindOf(BlockManager* bm, BlockId id) {
  auto block = bm->OpenBlock(id);
  CHECK(block.ok()) << block.status();
  std::string data;
  const absl::Status s = (*block)->ReadAt(0, (*block)->size(), &data);
  CHECK(s.ok()) << s;
  auto filter = BloomFilter::Parse(std::move(data), "filter");
  CHECK(filter.ok()) << filter.status();
  return filter->kind();
}

// Keys 40 apart: a key bitmap would take 40 bits per key, so the rowset gets a bloom filter.
TEST_F(DiskRowSetTest, FindRowWithBloomFilter) {
  std::vector<int32_t> keys;
  for (int32_t i = 0; i < 20000; ++i) keys.push_back(40 * i);
  for (bool cached : {false, true}) {
    SCOPED_TRACE(cached);
    BlockCache cache(8 << 20);
    model_ = Model();
    WriteAndOpen(keys, cached ? &cache : nullptr);
    EXPECT_EQ(FilterKindOf(bm_.get(), meta_.bloom_block), KeyFilterKind::kBloom);
    EXPECT_EQ(rs_->num_rows(), 20000u);
    EXPECT_EQ(rs_->min_key(), Key(0));
    EXPECT_EQ(rs_->max_key(), Key(799960));
    for (int32_t i = 0; i < 20000; i += 7) {
      auto row = rs_->FindRow(Key(40 * i));
      BASALT_ASSERT_OK(row);
      ASSERT_EQ(*row, std::optional<rowid_t>(i));
    }
    // Keys outside [min, max] are answered without probing the bloom filter.
    for (int32_t k : {-5, -1, 799961, 1000000}) {
      auto row = rs_->FindRow(Key(k));
      BASALT_ASSERT_OK(row);
      EXPECT_FALSE(row->has_value());
    }
    const DiskRowSetLookupStats before = rs_->lookup_stats();
    for (int32_t i = 0; i < 19999; ++i) {
      auto row = rs_->FindRow(Key(40 * i + 1));
      BASALT_ASSERT_OK(row);
      ASSERT_FALSE(row->has_value()) << 40 * i + 1;
    }
    const DiskRowSetLookupStats after = rs_->lookup_stats();
    EXPECT_EQ(after.bloom_probes - before.bloom_probes, 19999);
    const int64_t fps = after.bloom_false_positives - before.bloom_false_positives;
    EXPECT_EQ(after.bloom_rejections - before.bloom_rejections + fps, 19999);
    EXPECT_EQ(after.key_index_seeks - before.key_index_seeks, fps);
    // The expected count is 20 (rate 0.001); 100 would be a broken filter.
    EXPECT_LE(fps, 100);
    auto present = rs_->CheckRowPresent(Key(40), nullptr);
    BASALT_ASSERT_OK(present);
    EXPECT_TRUE(*present);
    present = rs_->CheckRowPresent(Key(41), nullptr);
    BASALT_ASSERT_OK(present);
    EXPECT_FALSE(*present);
  }
}

TEST_F(DiskRowSetTest, ScanKeyRangesAndBatchSizes) {
  WriteAndOpen(EvenKeys(5000));
  auto all = [](const TestRow&) { return true; };
  CheckScan(1, std::nullopt, std::nullopt, {}, all);
  CheckScan(1, std::nullopt, std::nullopt, {}, all, 7);
  CheckScan(1, 100, 200, {}, all);
  CheckScan(1, 101, 199, {}, all, 3);
  CheckScan(1, -100, 1, {}, all);
  CheckScan(1, 9997, 20000, {}, all);
  CheckScan(1, 200, 100, {}, all);      // Empty: upper below lower.
  CheckScan(1, 20000, 30000, {}, all);  // Above max_key.
  CheckScan(1, -30, -20, {}, all);      // Below min_key.
  for (int i = 0; i < 50; ++i) {
    const int32_t lo = static_cast<int32_t>(rng_.UniformRange(-10, 10010));
    const int32_t hi = static_cast<int32_t>(rng_.UniformRange(lo, 10010));
    CheckScan(1, lo, hi, {}, all, 1 + rng_.Uniform(2000));
  }
}

TEST_F(DiskRowSetTest, PredicatesArePushedIntoTheFiles) {
  WriteAndOpen(EvenKeys(20000));
  CheckScan(1, std::nullopt, std::nullopt, {ValRange(-5, 5)},
            [](const TestRow& r) { return ValIn(r, -5, 5); });
  CheckScan(1, 1000, 9000, {ValRange(0, 100), ValRange(-100, 10)},
            [](const TestRow& r) { return ValIn(r, 0, 10); });
  CheckScan(1, std::nullopt, std::nullopt, {ColumnPredicate::IsNull(schema_.column(1))},
            [](const TestRow& r) { return r[1].is_null(); });
  auto eq = *ColumnPredicate::Equality(schema_.column(2), Datum::String("s3"));
  CheckScan(1, std::nullopt, std::nullopt, {eq},
            [](const TestRow& r) { return !r[2].is_null() && r[2].string_value() == "s3"; });
  CheckScan(1, std::nullopt, std::nullopt, {ColumnPredicate::None(schema_.column(1))},
            [](const TestRow&) { return false; });

  // A selective predicate on the sorted column: the zone maps skip almost every page.
  auto tag = *ColumnPredicate::Range(schema_.column(3), Datum::Int32(150), Datum::Int32(152));
  auto it = rs_->NewIterator(&schema_, Before(1), {{}, {tag}});
  BASALT_ASSERT_OK(it);
  auto rows = drs_test::Drain(it->get(), schema_, 1024);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(rows->size(), 100u);  // Keys 30000..30398.
  auto* drs_it = static_cast<DiskRowSetIterator*>(it->get());
  EXPECT_GT(drs_it->file_stats().pages_skipped, 50);
  EXPECT_EQ(drs_it->stats().chunks_with_deltas, 0);

  // A predicate no row of the file can match ends the scan at Init.
  auto none = *ColumnPredicate::Equality(schema_.column(3), Datum::Int32(1000));
  it = rs_->NewIterator(&schema_, Before(1), {{}, {none}});
  BASALT_ASSERT_OK(it);
  EXPECT_FALSE((*it)->HasNext());
}

TEST_F(DiskRowSetTest, ProjectionWithAddedDroppedAndReorderedColumns) {
  WriteAndOpen(EvenKeys(3000));
  // Drops `val` and `tag`, adds `added` (default 7) and `note` (nullable, no default), and puts
  // the key last.
  auto altered = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("s", DataType::kString, true),
       ColumnSchema("added", DataType::kInt32, false, Datum::Int32(7)),
       ColumnSchema("note", DataType::kString, true)},
      1, {0, 2, 10, 11});
  BASALT_ASSERT_OK(altered);
  auto proj = altered->Project({"s", "added", "note", "key"});
  BASALT_ASSERT_OK(proj);
  auto eq7 = *ColumnPredicate::Equality(proj->column(1), Datum::Int32(7));
  auto got = Scan(*rs_, *proj, Before(1), {{Key(100), Key(200)}, {eq7}});
  BASALT_ASSERT_OK(got);
  ASSERT_EQ(got->size(), 50u);
  for (size_t i = 0; i < got->size(); ++i) {
    const TestRow want = *model_.Latest(100 + 2 * static_cast<int32_t>(i));
    EXPECT_EQ((*got)[i],
              (TestRow{want[2], Datum::Int32(7), Datum::Null(DataType::kString), want[0]}));
  }
  auto eq8 = *ColumnPredicate::Equality(proj->column(1), Datum::Int32(8));
  got = Scan(*rs_, *proj, Before(1), {{}, {eq8}});
  BASALT_ASSERT_OK(got);
  EXPECT_TRUE(got->empty());
  auto is_null = ColumnPredicate::IsNull(proj->column(2));
  got = Scan(*rs_, *proj, Before(1), {{}, {is_null}});
  BASALT_ASSERT_OK(got);
  EXPECT_EQ(got->size(), 3000u);

  // A missing NOT NULL column without a default, a type change, a NOT NULL projection of a
  // nullable column, a predicate on a column outside the projection.
  auto bad = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("x", DataType::kInt32)}, 1, {0, 12});
  EXPECT_TRUE(absl::IsInvalidArgument(Scan(*rs_, *bad, Before(1)).status()));
  bad = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("val", DataType::kInt32, true)}, 1,
      {0, 1});
  EXPECT_TRUE(absl::IsInvalidArgument(Scan(*rs_, *bad, Before(1)).status()));
  bad = Schema::Create({ColumnSchema("key", DataType::kInt32),
                        ColumnSchema("val", DataType::kInt64, false, Datum::Int64(0))},
                       1, {0, 1});
  EXPECT_TRUE(absl::IsInvalidArgument(Scan(*rs_, *bad, Before(1)).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(Scan(*rs_, *proj, Before(1), {{}, {ValRange(0, 1)}}).status()));
}

TEST_F(DiskRowSetTest, KeyColumnsAfterTheLeadOfAProjectionSurviveReinserts) {
  WriteAndOpen(EvenKeys(100));
  Mutate(10, 20, DeleteList(), std::nullopt);
  TestRow r = MakeRow(&rng_, 20);
  Mutate(11, 20, ReinsertList(r), r);
  // The key is the projection's last column, so only the rowset knows it is a key column.
  auto proj = schema_.Project({"s", "tag", "key"});
  BASALT_ASSERT_OK(proj);
  ASSERT_EQ(proj->num_key_columns(), 0);
  auto got = Scan(*rs_, *proj, Before(100), {{Key(18), Key(24)}, {}});
  BASALT_ASSERT_OK(got);
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[1], (TestRow{r[2], r[3], Datum::Int32(20)})) << RowToString((*got)[1]);
}

TEST_F(DiskRowSetTest, IteratorContract) {
  WriteAndOpen(EvenKeys(100));
  auto it = rs_->NewIterator(&schema_, Before(1), {});
  BASALT_ASSERT_OK(it);
  BASALT_EXPECT_OK((*it)->Init());  // Already initialized by NewIterator: a no-op.
  RowBlockBuffers small(schema_, 10);
  EXPECT_TRUE(absl::IsInvalidArgument((*it)->NextBlock(small.blocks(), 11).status()));
  EXPECT_TRUE(absl::IsInvalidArgument((*it)->NextBlock(small.blocks().subspan(1), 10).status()));
  auto rows = drs_test::Drain(it->get(), schema_, 10);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(rows->size(), 100u);
  // A base iterator takes no scan spec.
  DiskRowSetIterator base(rs_.get(), &schema_, std::nullopt, {{Key(1), ""}, {}});
  EXPECT_TRUE(absl::IsInvalidArgument(base.Init()));
  DiskRowSetIterator uninit(rs_.get(), &schema_, Before(1), {});
  EXPECT_FALSE(uninit.HasNext());
  EXPECT_TRUE(absl::IsFailedPrecondition(uninit.NextBlock(small.blocks(), 10).status()));
}

TEST_F(DiskRowSetTest, ExplicitKeyColumnIds) {
  WriteAndOpen(EvenKeys(100));
  DiskRowSetOptions opts = Options();
  opts.key_column_ids = {0};
  auto rs = DiskRowSet::Open(meta_, opts);
  BASALT_ASSERT_OK(rs);
  rs_ = *rs;
  Mutate(10, 20, DeleteList(), std::nullopt);
  TestRow r = MakeRow(&rng_, 20);
  Mutate(11, 20, ReinsertList(r), r);
  auto proj = schema_.Project({"val", "key"});
  auto got = Scan(*rs_, *proj, Before(100), {{Key(20), Key(21)}, {}});
  BASALT_ASSERT_OK(got);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0], (TestRow{r[1], Datum::Int32(20)})) << RowToString((*got)[0]);
}

TEST_F(DiskRowSetTest, SnapshotReadsWithDeltasAndGhostRows) {
  WriteAndOpen(EvenKeys(2000));
  // ts 1000..: update rows key % 3 == 0; ts 2000..: delete key % 5 == 0; ts 3000..: reinsert
  // key % 10 == 0; ts 4000..: update key % 7 == 0.
  uint64_t ts = 1000;
  for (int32_t k : model_.Keys()) {
    if (k % 3 != 0) continue;
    TestRow r = *model_.Latest(k);
    r[1] = Datum::Int64(1000 + k);
    r[2] = Datum::String("updated");
    Mutate(ts++, k, UpdateList(r), r);
  }
  ts = 2000;
  for (int32_t k : model_.Keys()) {
    if (k % 5 == 0) Mutate(ts++, k, DeleteList(), std::nullopt);
  }
  ts = 3000;
  for (int32_t k : model_.Keys()) {
    if (k % 10 != 0) continue;
    TestRow r = MakeRow(&rng_, k);
    r[1] = Datum::Null(DataType::kInt64);
    Mutate(ts++, k, ReinsertList(r), r);
  }
  ts = 4000;
  for (int32_t k : model_.Keys()) {
    if (k % 7 != 0) continue;
    TestRow r = model_.Latest(k).value_or(MakeRow(&rng_, k));
    r[1] = Datum::Int64(-k);
    Mutate(ts++, k, UpdateList(r), r);  // NOT_FOUND for deleted rows (k % 5 == 0, k % 10 != 0).
  }
  // Mutations the rowset must refuse.
  Mutate(5000, 10, ReinsertList(*model_.Latest(10)), std::nullopt);  // Live: ALREADY_EXISTS.
  Mutate(5001, 5, UpdateList(MakeRow(&rng_, 5)), std::nullopt);      // Not a base key.
  Mutate(5002, 5, ReinsertList(MakeRow(&rng_, 5)), std::nullopt);
  EXPECT_TRUE(absl::IsInvalidArgument(rs_->MutateRow(HybridTime(5003), Key(2), "\x09", 0)));

  auto all = [](const TestRow&) { return true; };
  auto updated_val = [](const TestRow& r) { return ValIn(r, 1000, 1500); };
  for (uint64_t before : {1, 1000, 1500, 2500, 3500, 4500, 10000}) {
    SCOPED_TRACE(before);
    CheckScan(before, std::nullopt, std::nullopt, {}, all);
    CheckScan(before, 500, 1500, {}, all, 100);
    CheckScan(before, std::nullopt, std::nullopt, {ValRange(1000, 1500)}, updated_val);
    auto tag = *ColumnPredicate::Range(schema_.column(3), Datum::Int32(5), Datum::Int32(9));
    CheckScan(before, std::nullopt, std::nullopt, {tag},
              [](const TestRow& r) { return r[3].int_value() >= 5 && r[3].int_value() < 9; });
    for (int32_t k : {0, 2, 10, 14, 20, 30, 3998}) {
      const MvccSnapshot snap = Before(before);
      auto present = rs_->CheckRowPresent(Key(k), &snap);
      BASALT_ASSERT_OK(present);
      EXPECT_EQ(*present, model_.At(k, before).has_value()) << k;
    }
  }
  // The predicate on `val` was evaluated after applying deltas, the one on `tag` in the files.
  auto it = rs_->NewIterator(&schema_, Before(10000), {{}, {ValRange(1000, 1500)}});
  BASALT_ASSERT_OK(it);
  BASALT_ASSERT_OK(drs_test::Drain(it->get(), schema_));
  EXPECT_GT(static_cast<DiskRowSetIterator*>(it->get())->stats().chunks_evaluated_after_deltas, 0);

  // Flush the DMS, reopen from the current metadata: same answers.
  BASALT_ASSERT_OK(rs_->delta_tracker()->FlushDMS());
  const RowSetMetadata current = rs_->CurrentMetadata();
  EXPECT_EQ(current.redo_blocks.size(), 1u);
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t before : {1500, 2500, 3500, 10000}) {
      CheckScan(before, std::nullopt, std::nullopt, {}, all);
      CheckScan(before, std::nullopt, std::nullopt, {ValRange(1000, 1500)}, updated_val);
    }
    auto reopened = DiskRowSet::Open(current, Options());
    BASALT_ASSERT_OK(reopened);
    rs_ = *reopened;
  }
}

TEST_F(DiskRowSetTest, RandomOpsMatchModel) {
  const int n = 100 + static_cast<int>(rng_.Uniform(3000));
  std::vector<int32_t> keys;
  for (int32_t k = static_cast<int32_t>(rng_.Uniform(10)); static_cast<int>(keys.size()) < n;
       k += 1 + static_cast<int32_t>(rng_.Uniform(5))) {
    keys.push_back(k);
  }
  WriteAndOpen(keys);
  const int32_t max_key = keys.back() + 5;
  uint64_t ts = 1;
  // Projections with the key after other columns (key columns found by the rowset itself) and
  // without the key.
  const Schema val_key = *schema_.Project({"val", "key"});
  const Schema s_tag = *schema_.Project({"s", "tag"});
  for (int step = 0; step < 3000; ++step) {
    const int32_t key = static_cast<int32_t>(rng_.UniformRange(-2, max_key));
    const uint64_t op = rng_.Uniform(100);
    if (op < 40) {
      TestRow r = MakeRow(&rng_, key);
      Mutate(++ts, key, UpdateList(r), r);
    } else if (op < 55) {
      Mutate(++ts, key, DeleteList(), std::nullopt);
    } else if (op < 70) {
      TestRow r = MakeRow(&rng_, key);
      Mutate(++ts, key, ReinsertList(r), r);
    } else if (op < 72) {
      BASALT_ASSERT_OK(rs_->delta_tracker()->FlushDMS());
      if (rng_.OneIn(2)) {
        auto reopened = DiskRowSet::Open(rs_->CurrentMetadata(), Options());
        BASALT_ASSERT_OK(reopened);
        rs_ = *reopened;
      }
    } else if (op < 80) {
      const uint64_t before = 1 + rng_.Uniform(ts + 1);
      std::optional<int32_t> lo, hi;
      if (rng_.OneIn(2)) lo = static_cast<int32_t>(rng_.UniformRange(-2, max_key));
      if (rng_.OneIn(2)) hi = static_cast<int32_t>(rng_.UniformRange(lo.value_or(0), max_key));
      const size_t max_rows = 1 + rng_.Uniform(700);
      switch (rng_.Uniform(4)) {
        case 0:
          CheckScan(
              before, lo, hi, {}, [](const TestRow&) { return true; }, max_rows);
          break;
        case 1:
          CheckScan(
              before, lo, hi, {ValRange(-10, 10)},
              [](const TestRow& r) { return ValIn(r, -10, 10); }, max_rows);
          break;
        case 2:
          CheckScan(
              before, lo, hi, {ColumnPredicate::IsNotNull(schema_.column(2))},
              [](const TestRow& r) { return !r[2].is_null(); }, max_rows);
          break;
        default: {
          const int32_t t = static_cast<int32_t>(rng_.Uniform(max_key / 100 + 1));
          CheckScan(
              before, lo, hi, {*ColumnPredicate::Equality(schema_.column(3), Datum::Int32(t))},
              [t](const TestRow& r) { return r[3].int_value() == t; }, max_rows);
        }
      }
    } else {
      const uint64_t before = 1 + rng_.Uniform(ts + 1);
      MvccSnapshot snap = Before(before);
      auto present = rs_->CheckRowPresent(Key(key), rng_.OneIn(2) ? &snap : nullptr);
      BASALT_ASSERT_OK(present);
    }
    if (HasFatalFailure()) return;
  }
}

TEST_F(DiskRowSetTest, ConcurrentScansSeeOneSnapshot) {
  WriteAndOpen(EvenKeys(3000));
  std::atomic<uint64_t> committed{1};  // Every mutation below this is applied.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    Random rng(rng_.Next64());
    for (uint64_t ts = 1; ts < 3000; ++ts) {
      const int32_t key = 2 * static_cast<int32_t>(rng.Uniform(3000));
      TestRow r = MakeRow(&rng, key);
      absl::Status s = rs_->MutateRow(HybridTime(ts), Key(key), UpdateList(r), 0);
      BASALT_EXPECT_OK(s);
      committed.store(ts + 1, std::memory_order_release);
      if (ts % 500 == 0) {
        BASALT_EXPECT_OK(rs_->delta_tracker()->FlushDMS());
      }
    }
    stop = true;
  });
  int scans = 0;
  while (!stop || scans < 3) {
    const uint64_t before = committed.load(std::memory_order_acquire);
    auto first = Scan(*rs_, schema_, Before(before), {}, 256);
    auto second = Scan(*rs_, schema_, Before(before), {}, 999);
    ASSERT_TRUE(first.ok() && second.ok());
    ASSERT_EQ(first->size(), 3000u);
    ASSERT_EQ(*first, *second) << "snapshot " << before;
    ++scans;
  }
  writer.join();
}

// A key of one integer column has no separate key index: the column's own file (a sorted key
// file) answers lookups and maps range bounds of any byte length to ordinals.
TEST_F(DiskRowSetTest, AnIntegerKeyColumnIsItsOwnKeyIndex) {
  WriteAndOpen(EvenKeys(5000));
  EXPECT_FALSE(meta_.key_index_block.valid());
  EXPECT_EQ(meta_.AllBlocks().size(), meta_.column_blocks.size() + 1);  // Columns and bloom.
  for (int32_t k = -3; k < 10003; k += 5) {
    auto row = rs_->FindRow(Key(k));
    BASALT_ASSERT_OK(row);
    EXPECT_EQ(*row,
              k % 2 == 0 && k >= 0 && k < 10000 ? std::optional<rowid_t>(k / 2) : std::nullopt)
        << k;
  }
  // Bounds: whole keys, their successors (5 bytes), prefixes (1-3 bytes) and none.
  auto bound = [&](int kind) -> std::string {
    const std::string key = Key(static_cast<int32_t>(rng_.UniformRange(-20, 10020)));
    switch (kind) {
      case 0:
        return key;
      case 1:
        return KeySuccessor(key);
      case 2:
        return key.substr(0, 1 + rng_.Uniform(3));
      default:
        return "";
    }
  };
  for (int i = 0; i < 300; ++i) {
    ScanSpec spec;
    spec.range.lower = bound(static_cast<int>(rng_.Uniform(4)));
    spec.range.upper = bound(static_cast<int>(rng_.Uniform(4)));
    auto got = Scan(*rs_, schema_, Before(1), spec, 1 + rng_.Uniform(700));
    BASALT_ASSERT_OK(got);
    const std::vector<TestRow> want =
        model_.Scan(1, INT32_MIN, int64_t{INT32_MAX} + 1, [&](const TestRow& r) {
          const std::string key = Key(static_cast<int32_t>(r[0].int_value()));
          return key >= spec.range.lower && (spec.range.upper.empty() || key < spec.range.upper);
        });
    ASSERT_EQ(*got, want) << "range " << absl::CHexEscape(spec.range.lower) << " .. "
                          << absl::CHexEscape(spec.range.upper);
  }
}

// Dense integer keys get an exact key bitmap (here 2 bits per key, against about 17 for the
// bloom filter): an absent key never reaches the key column. Sparse ones keep the bloom filter.
TEST_F(DiskRowSetTest, DenseIntegerKeysGetAnExactKeyBitmap) {
  WriteAndOpen(EvenKeys(20000));
  EXPECT_EQ(FilterKindOf(bm_.get(), meta_.bloom_block), KeyFilterKind::kKeyBitmap);
  const DiskRowSetLookupStats before = rs_->lookup_stats();
  for (int32_t k = 1; k < 39998; k += 2) {
    auto row = rs_->FindRow(Key(k));
    BASALT_ASSERT_OK(row);
    ASSERT_FALSE(row->has_value()) << k;
  }
  const DiskRowSetLookupStats after = rs_->lookup_stats();
  EXPECT_EQ(after.bloom_probes - before.bloom_probes, 19999);
  EXPECT_EQ(after.bloom_rejections - before.bloom_rejections, 19999);
  EXPECT_EQ(after.key_index_seeks - before.key_index_seeks, 0);
  for (int32_t k = 2; k < 39998; k += 2) {
    auto row = rs_->FindRow(Key(k));
    BASALT_ASSERT_OK(row);
    ASSERT_EQ(*row, std::optional<rowid_t>(k / 2));
  }

  std::vector<int32_t> sparse;
  for (int32_t k = -5'000'000; k < 5'000'000; k += 1000) sparse.push_back(k);
  model_ = Model();
  WriteAndOpen(sparse);
  EXPECT_EQ(FilterKindOf(bm_.get(), meta_.bloom_block), KeyFilterKind::kBloom);
  for (int32_t k : {-5'000'000, -4'999'999, 0, 1, 4'999'000}) {
    auto row = rs_->FindRow(Key(k));
    BASALT_ASSERT_OK(row);
    EXPECT_EQ(row->has_value(), k % 1000 == 0) << k;
  }
}

// A key bitmap too small for the rowset's key range is DATA_LOSS at Open.
TEST_F(DiskRowSetTest, AKeyBitmapThatCannotCoverTheKeysIsDataLoss) {
  std::vector<int32_t> keys;
  for (int32_t k = 0; k < 100 * 1000; k += 100) keys.push_back(k);  // A range of 99,901.
  WriteAndOpen(keys);
  KeyBitmapBuilder small(kKeyBitmapBitsPerPage);  // One page: 32,768 bits.
  for (uint64_t i = 0; i < keys.size(); ++i) small.Add(i);
  auto block = bm_->CreateBlock();
  BASALT_ASSERT_OK(block);
  BASALT_ASSERT_OK((*block)->Append(small.Finish()));
  BASALT_ASSERT_OK((*block)->Finalize());
  RowSetMetadata m = meta_;
  m.bloom_block = (*block)->id();
  absl::Status s = DiskRowSet::Open(m, Options()).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("cannot cover a key range of 99901"), std::string::npos) << s;
}

// Every integer-backed key type, negative keys and the types' extremes: dense keys get a key
// bitmap, sparse ones a bloom filter, and lookups and range scans agree with the keys written.
class IntegerKeyTest : public drs_test::DiskRowSetTestBase {};

Datum IntegerDatum(DataType type, int64_t v) {
  switch (type) {
    case DataType::kInt8:
      return Datum::Int8(static_cast<int8_t>(v));
    case DataType::kInt16:
      return Datum::Int16(static_cast<int16_t>(v));
    case DataType::kInt32:
      return Datum::Int32(static_cast<int32_t>(v));
    case DataType::kDate:
      return Datum::Date(static_cast<int32_t>(v));
    case DataType::kUnixtimeMicros:
      return Datum::UnixtimeMicros(v);
    case DataType::kDecimal64:
      return Datum::Decimal64(v);
    default:
      return Datum::Int64(v);
  }
}

TEST_F(IntegerKeyTest, EveryWidthSignAndExtreme) {
  Random rng(SeedFromEnvOrTime());
  auto stepped = [](int64_t lo, int64_t hi, int64_t step) {
    std::vector<int64_t> v;
    for (int64_t k = lo; k <= hi; k += step) v.push_back(k);
    return v;
  };
  struct Case {
    DataType type;
    std::vector<int64_t> keys;
    KeyFilterKind kind;
  };
  std::vector<int64_t> int8_keys;
  for (int64_t k = -128; k <= 127; ++k) {
    if (k % 5 != 0) int8_keys.push_back(k);
  }
  std::vector<int64_t> dense_then_far = stepped(0, 4999, 1);
  dense_then_far.push_back(1'000'000'000'000);
  const std::vector<Case> cases = {
      {DataType::kInt8, int8_keys, KeyFilterKind::kKeyBitmap},
      {DataType::kInt16, stepped(-30000, 30000, 7), KeyFilterKind::kKeyBitmap},
      {DataType::kInt64, stepped(-1'000'000, -990'000, 3), KeyFilterKind::kKeyBitmap},
      {DataType::kInt64,
       {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX},
       KeyFilterKind::kBloom},
      {DataType::kDate, stepped(-1000, 1000, 2), KeyFilterKind::kKeyBitmap},
      {DataType::kUnixtimeMicros, stepped(-5'000'000'000, 5'000'000'000, 1'000'000),
       KeyFilterKind::kBloom},
      {DataType::kDecimal64, stepped(-500, 500, 1), KeyFilterKind::kKeyBitmap},
      // 20 bits per key: the bitmap is kept to the end, then loses to the bloom filter (~17).
      {DataType::kInt32, stepped(-300'000, 300'000, 20), KeyFilterKind::kBloom},
      // Dense, then one far key: the bitmap's keys move to the bloom filter mid-way.
      {DataType::kInt64, dense_then_far, KeyFilterKind::kBloom},
  };
  int64_t id = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(StrCat(DataTypeName(c.type), ", ", c.keys.size(), " keys"));
    const TypeAttributes attrs =
        c.type == DataType::kDecimal64 ? TypeAttributes{18, 2, 0} : TypeAttributes{};
    const Schema schema = *Schema::Create({ColumnSchema("k", c.type, false, std::nullopt, attrs),
                                           ColumnSchema("v", DataType::kInt32, true)},
                                          1);
    auto key = [&](int64_t v) { return EncodeKey(schema, {IntegerDatum(c.type, v)}); };
    std::vector<TestRow> rows;
    for (int64_t k : c.keys) rows.push_back({IntegerDatum(c.type, k), Datum::Int32(7)});
    auto meta = WriteRowSet(schema, rows, ++id, &rng);
    BASALT_ASSERT_OK(meta);
    EXPECT_FALSE(meta->key_index_block.valid());
    EXPECT_EQ(FilterKindOf(bm_.get(), meta->bloom_block), c.kind);
    auto rs = DiskRowSet::Open(*meta, Options());
    BASALT_ASSERT_OK(rs);
    const std::set<int64_t> present(c.keys.begin(), c.keys.end());
    for (size_t i = 0; i < c.keys.size(); ++i) {
      auto row = (*rs)->FindRow(key(c.keys[i]));
      BASALT_ASSERT_OK(row);
      ASSERT_EQ(*row, std::optional<rowid_t>(i)) << c.keys[i];
      for (int64_t d : {-1, 1}) {
        absl::int128 lo, hi;
        IntegerStorageRange(c.type, &lo, &hi);
        const absl::int128 other_wide = absl::int128(c.keys[i]) + d;
        if (other_wide < lo || other_wide > hi) continue;  // Outside the type.
        const auto other = static_cast<int64_t>(other_wide);
        if (present.contains(other)) continue;
        row = (*rs)->FindRow(key(other));
        BASALT_ASSERT_OK(row);
        ASSERT_FALSE(row->has_value()) << other;
      }
    }
    // Keys of another width inside [min, max] are no row's key.
    for (const std::string& odd : {KeySuccessor(key(c.keys[0])), key(c.keys[1]).substr(1)}) {
      if (odd <= (*rs)->min_key() || odd >= (*rs)->max_key()) continue;
      auto row = (*rs)->FindRow(odd);
      BASALT_ASSERT_OK(row);
      EXPECT_FALSE(row->has_value());
    }
    for (int i = 0; i < 30; ++i) {
      const size_t a = rng.Uniform(c.keys.size());
      const size_t b = a + rng.Uniform(c.keys.size() - a + 1);
      ScanSpec spec;
      spec.range.lower = key(c.keys[a]);
      if (b < c.keys.size()) spec.range.upper = key(c.keys[b]);
      auto got = Scan(**rs, schema, Before(1), spec);
      BASALT_ASSERT_OK(got);
      ASSERT_EQ(got->size(), b - a);
      if (b > a) {
        EXPECT_EQ((*got)[0][0], rows[a][0]);
      }
    }
  }
}

// Rowsets written before integer keys lost their key index still open and answer through it.
TEST_F(DiskRowSetTest, AnIntegerKeyRowSetWithAKeyIndexStillOpens) {
  WriteAndOpen(EvenKeys(3000));
  CFileWriterOptions o;
  o.type = DataType::kBinary;
  o.is_key = true;
  o.storage.encoding = EncodingType::kPrefix;
  auto block = bm_->CreateBlock();
  BASALT_ASSERT_OK(block);
  CFileWriter index(o, std::move(*block));
  BASALT_ASSERT_OK(index.Start());
  for (int32_t k : EvenKeys(3000)) {
    const std::string key = Key(k);
    const std::string_view cell = key;
    BASALT_ASSERT_OK(index.AppendValues(&cell, nullptr, 1));
  }
  // ...and a bloom filter: a key bitmap needs the key column as the index.
  BloomFilterBuilder bloom(3000);
  for (int32_t k : EvenKeys(3000)) bloom.AddKey(Key(k));
  auto bloom_block = bm_->CreateBlock();
  BASALT_ASSERT_OK(bloom_block);
  BASALT_ASSERT_OK((*bloom_block)->Append(bloom.Finish()));
  BASALT_ASSERT_OK(index.Finish());
  RowSetMetadata legacy = meta_;
  legacy.key_index_block = index.block_id();
  absl::Status s = DiskRowSet::Open(legacy, Options()).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;  // The new rowset's key bitmap.
  EXPECT_NE(s.message().find("not one integer column"), std::string::npos) << s;
  legacy.bloom_block = (*bloom_block)->id();
  BASALT_ASSERT_OK((*bloom_block)->Finalize());
  auto rs = DiskRowSet::Open(legacy, Options());
  BASALT_ASSERT_OK(rs);
  EXPECT_GT((*rs)->base_size_bytes(), rs_->base_size_bytes());  // The index is counted.
  for (int32_t k : {-1, 0, 1, 2, 2999, 3000, 5998, 5999}) {
    auto row = (*rs)->FindRow(Key(k));
    BASALT_ASSERT_OK(row);
    EXPECT_EQ(*row, k % 2 == 0 && k >= 0 && k < 6000 ? std::optional<rowid_t>(k / 2) : std::nullopt)
        << k;
  }
  ScanSpec spec;
  spec.range.lower = Key(100);
  spec.range.upper = KeySuccessor(Key(200));
  auto got = Scan(**rs, schema_, Before(1), spec);
  BASALT_ASSERT_OK(got);
  EXPECT_EQ(got->size(), 51u);
}

// Corruption: a rowset whose blocks are missing or damaged fails cleanly.
class DiskRowSetCorruptionTest : public DiskRowSetTest {
 protected:
  void SetUp() override {
    DiskRowSetTest::SetUp();
    WriteAndOpen(EvenKeys(3000));
    rs_.reset();
  }
  // Opens the rowset and, if that works, scans it fully and looks up keys; returns the first
  // error.
  absl::Status OpenScanAndLookUp(const RowSetMetadata& meta) {
    auto rs = DiskRowSet::Open(meta, Options());
    if (!rs.ok()) return rs.status();
    auto rows = Scan(**rs, schema_, Before(1));
    if (!rows.ok()) return rows.status();
    for (int32_t k = -1; k < 6001; k += 3) {
      auto row = (*rs)->FindRow(Key(k));
      if (!row.ok()) return row.status();
    }
    return absl::OkStatus();
  }
  BlockId ColumnBlockOf(ColumnId id) const {
    for (const auto& [cid, block] : meta_.column_blocks) {
      if (cid == id) return block;
    }
    return BlockId();
  }
};

TEST_F(DiskRowSetCorruptionTest, MissingBlocks) {
  for (BlockId id : meta_.AllBlocks()) {
    std::string data;
    BASALT_ASSERT_OK(ReadFileToString(&env_, bm_->BlockPath(id), &data));
    BASALT_ASSERT_OK(bm_->DeleteBlock(id));
    absl::Status s = DiskRowSet::Open(meta_, Options()).status();
    EXPECT_TRUE(absl::IsNotFound(s)) << s;
    EXPECT_NE(s.message().find("rowset 1"), std::string::npos) << s;
    BASALT_ASSERT_OK(WriteStringToFile(&env_, bm_->BlockPath(id), data, false));
  }
  BASALT_EXPECT_OK(OpenScanAndLookUp(meta_));
}

TEST_F(DiskRowSetCorruptionTest, MetadataThatDisagreesWithTheFiles) {
  RowSetMetadata m = meta_;
  m.num_rows += 1;
  EXPECT_TRUE(absl::IsDataLoss(DiskRowSet::Open(m, Options()).status()));
  m = meta_;
  m.min_key = Key(-2);
  EXPECT_TRUE(absl::IsDataLoss(DiskRowSet::Open(m, Options()).status()));
  m = meta_;
  m.max_key = Key(5996);
  EXPECT_TRUE(absl::IsDataLoss(DiskRowSet::Open(m, Options()).status()));
  m = meta_;
  std::swap(m.bloom_block, m.key_index_block);
  EXPECT_TRUE(absl::IsDataLoss(DiskRowSet::Open(m, Options()).status()));
  m = meta_;
  m.column_blocks.push_back(m.column_blocks.front());
  EXPECT_TRUE(absl::IsDataLoss(DiskRowSet::Open(m, Options()).status()));
  m = meta_;
  m.num_rows = 0;
  EXPECT_TRUE(absl::IsDataLoss(DiskRowSet::Open(m, Options()).status()));
  // Without a key index the first column must be a sorted integer key file: `val` is not.
  m = meta_;
  std::swap(m.column_blocks[0], m.column_blocks[1]);
  absl::Status s = DiskRowSet::Open(m, Options()).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("not a sorted integer key file"), std::string::npos) << s;
}

TEST_F(DiskRowSetCorruptionTest, DamagedFilesGiveDataLoss) {
  // Trailers (footer CRC, magic) are checked at Open.
  for (BlockId id : meta_.AllBlocks()) {
    FlipByte(id, -1);
    absl::Status s = DiskRowSet::Open(meta_, Options()).status();
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
    FlipByte(id, -1);
    Truncate(id, 10);
    s = DiskRowSet::Open(meta_, Options()).status();
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  }
}

TEST_F(DiskRowSetCorruptionTest, DamagedPagesFailScansAndLookups) {
  // A flipped byte in the first page of `val`: Open works (pages are read lazily), the scan
  // fails.
  FlipByte(ColumnBlockOf(kValId), 5);
  auto rs = DiskRowSet::Open(meta_, Options());
  BASALT_ASSERT_OK(rs);
  absl::Status s = Scan(**rs, schema_, Before(1)).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("rowset 1"), std::string::npos) << s;
  FlipByte(ColumnBlockOf(kValId), 5);
  // A flipped byte in the bloom filter's only page: lookups that probe it fail.
  FlipByte(meta_.bloom_block, 100);
  rs = DiskRowSet::Open(meta_, Options());
  BASALT_ASSERT_OK(rs);
  EXPECT_TRUE(absl::IsDataLoss((*rs)->FindRow(Key(11)).status()));
}

TEST_F(DiskRowSetCorruptionTest, RandomDamageNeverCrashes) {
  const std::vector<BlockId> blocks = meta_.AllBlocks();
  int errors = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const BlockId id = blocks[rng_.Uniform(blocks.size())];
    std::string path = bm_->BlockPath(id), data;
    BASALT_ASSERT_OK(ReadFileToString(&env_, path, &data));
    std::string damaged = data;
    switch (rng_.Uniform(3)) {
      case 0:
        damaged[rng_.Uniform(damaged.size())] ^= static_cast<char>(1 + rng_.Uniform(255));
        break;
      case 1:
        damaged.resize(rng_.Uniform(damaged.size()));
        break;
      default: {
        const size_t at = rng_.Uniform(damaged.size());
        std::fill(damaged.begin() + at,
                  damaged.begin() + std::min(damaged.size(), at + 1 + rng_.Uniform(64)), '\0');
      }
    }
    BASALT_ASSERT_OK(WriteStringToFile(&env_, path, damaged, false));
    errors += !OpenScanAndLookUp(meta_).ok();
    BASALT_ASSERT_OK(WriteStringToFile(&env_, path, data, false));
  }
  EXPECT_GT(errors, 0);
  BASALT_EXPECT_OK(OpenScanAndLookUp(meta_));
}

}  // namespace diskrowset_test_file
}  // namespace
}  // namespace basalt
