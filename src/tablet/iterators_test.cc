// Tests of the generic scan iterators (filter_iterator.h, union_iterator.h, merge_iterator.h)
// and their helpers (row_block_util.h), against brute force over random data.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/bitmap.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "tablet/filter_iterator.h"
#include "tablet/iterators_test_util.h"
#include "tablet/memrowset.h"
#include "tablet/merge_iterator.h"
#include "tablet/row_block_util.h"
#include "tablet/union_iterator.h"

namespace basalt {
namespace {
namespace iterators_test_file {

using iterators_test::ColumnarRows;
using iterators_test::Drain;
using iterators_test::FakeIteratorOptions;
using iterators_test::FakeRowIterator;
using iterators_test::ReadRow;
using iterators_test::RowToString;
using iterators_test::TestRow;

Schema MustCreate(std::vector<ColumnSchema> cols, int num_keys) {
  auto s = Schema::Create(std::move(cols), num_keys);
  CHECK(s.ok()) << s.status();
  return *s;
}

enum class Layout {
  kIntKey,        // (k INT32, v INT64 NULL, s STRING NULL)
  kIntKeyFixed,   // (k INT32, v INT64 NULL): no variable-length column.
  kCompositeKey,  // (a STRING, b INT64, v INT32 NULL, s STRING NULL), key (a, b).
  kDoubleKey,     // (d DOUBLE, s STRING NULL)
};

Schema MakeSchema(Layout layout) {
  switch (layout) {
    case Layout::kIntKey:
      return MustCreate(
          {ColumnSchema("k", DataType::kInt32), ColumnSchema("v", DataType::kInt64, true),
           ColumnSchema("s", DataType::kString, true)},
          1);
    case Layout::kIntKeyFixed:
      return MustCreate(
          {ColumnSchema("k", DataType::kInt32), ColumnSchema("v", DataType::kInt64, true)}, 1);
    case Layout::kCompositeKey:
      return MustCreate(
          {ColumnSchema("a", DataType::kString), ColumnSchema("b", DataType::kInt64),
           ColumnSchema("v", DataType::kInt32, true), ColumnSchema("s", DataType::kString, true)},
          2);
    case Layout::kDoubleKey:
      return MustCreate(
          {ColumnSchema("d", DataType::kDouble), ColumnSchema("s", DataType::kString, true)}, 1);
  }
  LOG(FATAL) << "unknown layout";
}

// A random value of the column's type from a small domain, so keys collide and interleave.
// Strings include NUL bytes (escaped in non-last key positions).
Datum RandomValue(Random* rng, const ColumnSchema& col, int64_t domain) {
  if (col.is_nullable() && rng->OneIn(4)) return Datum::Null(col.type());
  switch (col.type()) {
    case DataType::kInt32:
      return Datum::Int32(static_cast<int32_t>(rng->UniformRange(-domain, domain)));
    case DataType::kInt64:
      return Datum::Int64(rng->UniformRange(-domain, domain) * (int64_t{1} << 33));
    case DataType::kDouble: {
      static constexpr double kSpecial[] = {-0.0, 0.0, 1e300, -1e300, HUGE_VAL, -HUGE_VAL, NAN};
      if (rng->OneIn(8)) return Datum::Double(kSpecial[rng->Uniform(std::size(kSpecial))]);
      return Datum::Double(static_cast<double>(rng->UniformRange(-domain, domain)) / 4);
    }
    case DataType::kString: {
      std::string s;
      const size_t len = rng->Uniform(5);
      for (size_t i = 0; i < len; ++i) s.push_back("ab\0z"[rng->Uniform(4)]);
      return Datum::String(s);
    }
    default:
      LOG(FATAL) << "unexpected type " << col.ToString();
  }
}

TestRow RandomRow(Random* rng, const Schema& schema, int64_t domain) {
  TestRow row;
  for (const ColumnSchema& col : schema.columns()) row.push_back(RandomValue(rng, col, domain));
  return row;
}

std::string KeyOf(const Schema& schema, const TestRow& row) {
  return EncodeKey(schema, std::vector<Datum>(row.begin(), row.begin() + schema.num_key_columns()));
}

// Up to `n` random rows with distinct keys, sorted by encoded key (an order independent of
// RowKeyComparator).
std::vector<TestRow> RandomSortedRows(Random* rng, const Schema& schema, size_t n) {
  std::vector<std::pair<std::string, TestRow>> keyed;
  const int64_t domain = static_cast<int64_t>(n) * 2 + 4;
  for (size_t i = 0; i < n; ++i) {
    TestRow row = RandomRow(rng, schema, domain);
    keyed.emplace_back(KeyOf(schema, row), std::move(row));
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  keyed.erase(std::unique(keyed.begin(), keyed.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              keyed.end());
  std::vector<TestRow> rows;
  for (auto& [key, row] : keyed) rows.push_back(std::move(row));
  return rows;
}

std::unique_ptr<ColumnarRows> ToColumnar(const Schema& schema, const std::vector<TestRow>& rows) {
  auto out = std::make_unique<ColumnarRows>(schema, std::max<size_t>(rows.size(), 1));
  for (const TestRow& r : rows) out->Append(r);
  return out;
}

FakeIteratorOptions RandomFakeOptions(Random* rng) {
  FakeIteratorOptions o;
  o.max_batch = 1 + rng->Skewed(7);
  o.full_batches = rng->OneIn(3);
  static constexpr int kEmptyOneIn[] = {0, 2, 5};
  o.empty_batch_one_in = kEmptyOneIn[rng->Uniform(3)];
  o.trailing_empty_batch = rng->OneIn(3);
  return o;
}

void ExpectSameRows(const std::vector<TestRow>& expected, const std::vector<TestRow>& actual,
                    const std::string& context) {
  ASSERT_EQ(expected.size(), actual.size()) << context;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(expected[i] == actual[i])
        << context << " row " << i << ": expected " << RowToString(expected[i]) << " got "
        << RowToString(actual[i]);
  }
}

// ---------------------------------------------------------------------------------------------
// row_block_util

TEST(RowBlockUtilTest, CopyBitsMatchesBitByBit) {
  Random rng(SeedFromEnvOrTime());
  for (int iter = 0; iter < 2000; ++iter) {
    uint8_t src[40], dst[40], expected[40];
    rng.Fill(reinterpret_cast<char*>(src), sizeof(src));
    rng.Fill(reinterpret_cast<char*>(dst), sizeof(dst));
    const size_t n = rng.Uniform(150);
    const size_t so = rng.Uniform(320 - n);
    const bool in_place = rng.OneIn(3);
    const size_t dof = in_place ? rng.Uniform(so + 1) : rng.Uniform(320 - n);
    uint8_t* target = in_place ? src : dst;
    std::memcpy(expected, target, sizeof(expected));
    for (size_t i = 0; i < n; ++i) BitmapChange(expected, dof + i, BitmapTest(src, so + i));
    CopyBits(src, so, target, dof, n);
    ASSERT_EQ(0, std::memcmp(expected, target, sizeof(expected)))
        << "n=" << n << " so=" << so << " do=" << dof << " in_place=" << in_place;
  }
}

TEST(RowBlockUtilTest, CopyAndGatherRowsMatchBruteForce) {
  Random rng(SeedFromEnvOrTime());
  const Schema schema = MakeSchema(Layout::kCompositeKey);
  for (int iter = 0; iter < 200; ++iter) {
    const size_t n = 1 + rng.Uniform(200);
    std::vector<TestRow> rows;
    for (size_t i = 0; i < n; ++i) rows.push_back(RandomRow(&rng, schema, 50));
    auto data = ToColumnar(schema, rows);
    // CopyRows of a random range to a random offset of other blocks.
    RowBlockBuffers other(schema, 2 * n);
    const size_t from = rng.Uniform(n), len = rng.Uniform(n - from + 1), to = rng.Uniform(n);
    CopyRows(data->blocks(), from, other.blocks(), to, len);
    for (size_t i = 0; i < len; ++i) {
      ASSERT_TRUE(ReadRow(schema, other.blocks(), to + i) == rows[from + i]) << "row " << i;
    }
    // GatherSelectedInPlace against filtering the row list.
    std::vector<uint8_t> sel(BitmapSize(n) + 8, 0);
    std::vector<TestRow> expected;
    const uint64_t density = rng.Uniform(4);  // 0: all, else 1/density unselected.
    for (size_t i = 0; i < n; ++i) {
      if (density == 0 || !rng.OneIn(density + 1)) {
        BitmapSet(sel.data(), i);
        expected.push_back(rows[i]);
      }
    }
    std::vector<uint32_t> scratch;
    const size_t dst_row = rng.Uniform(n);
    ASSERT_EQ(expected.size(),
              GatherSelected(data->blocks(), sel.data(), n, other.blocks(), dst_row, &scratch));
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_TRUE(ReadRow(schema, other.blocks(), dst_row + i) == expected[i]) << "row " << i;
    }
    const size_t k = GatherSelectedInPlace(data->blocks(), sel.data(), n, &scratch);
    ASSERT_EQ(expected.size(), k);
    for (size_t i = 0; i < k; ++i) {
      ASSERT_TRUE(ReadRow(schema, data->blocks(), i) == expected[i]) << "row " << i;
    }
  }
}

TEST(RowBlockUtilTest, CopyRowsIntoBlocksWithoutOrFromBlocksWithoutNullBitmap) {
  ColumnBlockBuffer nullable(DataType::kInt32, 16, true), plain(DataType::kInt32, 16, false);
  ColumnBlock* n[] = {nullable.block()};
  ColumnBlock* p[] = {plain.block()};
  for (int i = 0; i < 16; ++i) {
    nullable.block()->data<int32_t>()[i] = i;
    nullable.block()->SetNull(i, true);
    plain.block()->data<int32_t>()[i] = 100 + i;
  }
  CopyRows(n, 3, p, 0, 4);  // No null bitmap to write: cells only.
  EXPECT_EQ(plain.block()->data<int32_t>()[0], 3);
  CopyRows(p, 8, n, 5, 3);  // Source without bitmap: non-NULL.
  for (int i = 0; i < 16; ++i) EXPECT_EQ(nullable.block()->is_null(i), i < 5 || i >= 8) << i;
  EXPECT_EQ(nullable.block()->data<int32_t>()[6], 109);
}

TEST(RowBlockUtilTest, KeyComparatorAndEncodeKeyOfRowAgreeWithEncodeKey) {
  Random rng(SeedFromEnvOrTime());
  for (Layout layout : {Layout::kIntKey, Layout::kCompositeKey, Layout::kDoubleKey}) {
    const Schema schema = MakeSchema(layout);
    std::vector<TestRow> rows;
    for (int i = 0; i < 300; ++i) rows.push_back(RandomRow(&rng, schema, 20));
    auto data = ToColumnar(schema, rows);
    RowKeyComparator cmp(schema);
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string key = KeyOf(schema, rows[i]);
      ASSERT_EQ(key, EncodeKeyOfRow(schema, data->blocks(), i)) << RowToString(rows[i]);
      const size_t j = rng.Uniform(rows.size());
      const std::string other = KeyOf(schema, rows[j]);
      const int expected = (key > other) - (key < other);
      ASSERT_EQ(expected, cmp.Compare(data->blocks(), i, data->blocks(), j))
          << RowToString(rows[i]) << " vs " << RowToString(rows[j]);
    }
  }
}

TEST(RowBlockUtilTest, CheckBlocksFitProjection) {
  const Schema schema = MakeSchema(Layout::kIntKeyFixed);
  RowBlockBuffers ok(schema, 10);
  BASALT_EXPECT_OK(CheckBlocksFitProjection(schema, ok.blocks(), 10));
  EXPECT_EQ(CheckBlocksFitProjection(schema, ok.blocks(), 11).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckBlocksFitProjection(schema, ok.blocks().subspan(1), 10).code(),
            absl::StatusCode::kInvalidArgument);
  ColumnBlockBuffer k(DataType::kInt32, 10, false), v(DataType::kInt64, 10, false);
  ColumnBlock* no_bitmap[] = {k.block(), v.block()};
  EXPECT_EQ(CheckBlocksFitProjection(schema, no_bitmap, 10).code(),
            absl::StatusCode::kInvalidArgument);
  ColumnBlock* wrong_type[] = {k.block(), k.block()};
  EXPECT_EQ(CheckBlocksFitProjection(schema, wrong_type, 10).code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// FilterIterator

// A random predicate on a random column of Layout::kIntKey.
ColumnPredicate RandomPredicate(Random* rng, const Schema& schema) {
  const ColumnSchema& col = schema.column(static_cast<int>(rng->Uniform(schema.num_columns())));
  const int64_t domain = 40;
  auto value = [&] {
    Datum d;
    do d = RandomValue(rng, col, domain);
    while (d.is_null());
    return d;
  };
  switch (rng->Uniform(6)) {
    case 0:
      return ColumnPredicate::IsNull(col);
    case 1:
      return ColumnPredicate::IsNotNull(col);
    case 2:
      return *ColumnPredicate::Equality(col, value());
    case 3:
      return *ColumnPredicate::InList(col, {value(), value(), value()});
    default: {
      std::optional<Datum> lo, hi;
      if (!rng->OneIn(4)) lo = value();
      if (!rng->OneIn(4)) hi = value();
      return *ColumnPredicate::Range(col, lo, hi);
    }
  }
}

bool RowMatches(const Schema& schema, const std::vector<ColumnPredicate>& preds,
                const TestRow& row) {
  for (const ColumnPredicate& p : preds) {
    const Datum& d = row[schema.find_column(p.column().name())];
    if (!p.Evaluate(d.is_null() ? nullptr : d.cell())) return false;
  }
  return true;
}

TEST(FilterIteratorTest, RandomPredicatesMatchBruteForce) {
  Random rng(SeedFromEnvOrTime());
  const Schema schema = MakeSchema(Layout::kIntKey);
  for (int iter = 0; iter < 1000; ++iter) {
    const size_t n = rng.Skewed(10);
    std::vector<TestRow> rows;
    for (size_t i = 0; i < n; ++i) rows.push_back(RandomRow(&rng, schema, 40));
    auto data = ToColumnar(schema, rows);
    std::vector<ColumnPredicate> preds;
    for (uint64_t i = rng.Uniform(4); i > 0; --i) preds.push_back(RandomPredicate(&rng, schema));
    std::vector<TestRow> expected;
    for (const TestRow& r : rows) {
      if (RowMatches(schema, preds, r)) expected.push_back(r);
    }
    std::vector<size_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    FilterIterator it(
        std::make_unique<FakeRowIterator>(data.get(), all, RandomFakeOptions(&rng), rng.Next64()),
        &schema, preds);
    BASALT_ASSERT_OK(it.Init());
    std::vector<TestRow> actual;
    std::vector<size_t> sizes;
    const size_t max_rows = 1 + rng.Skewed(8);
    BASALT_ASSERT_OK(Drain(&it, schema, max_rows, &actual, &sizes));
    std::string context = StrCat("iter ", iter, " preds:");
    for (const auto& p : preds) StrAppend(&context, " [", p.ToString(), "]");
    ExpectSameRows(expected, actual, context);
    // Empty batches only at the end.
    for (size_t i = 0; i + 1 < sizes.size(); ++i) ASSERT_GT(sizes[i], 0u) << context;
    EXPECT_EQ(it.rows_examined(), static_cast<int64_t>(n));
    EXPECT_EQ(it.rows_returned(), static_cast<int64_t>(expected.size()));
  }
}

TEST(FilterIteratorTest, Errors) {
  const Schema schema = MakeSchema(Layout::kIntKey);
  auto data = ToColumnar(schema, {});
  auto make = [&](std::vector<ColumnPredicate> preds, FakeIteratorOptions o = {}) {
    return std::make_unique<FilterIterator>(
        std::make_unique<FakeRowIterator>(data.get(), std::vector<size_t>{}, o, 1), &schema,
        std::move(preds));
  };
  ColumnSchema missing("nope", DataType::kInt32);
  EXPECT_EQ(make({ColumnPredicate::IsNull(missing)})->Init().code(), absl::StatusCode::kNotFound);
  ColumnSchema wrong_type("k", DataType::kInt64);
  EXPECT_EQ(make({*ColumnPredicate::Equality(wrong_type, Datum::Int64(1))})->Init().code(),
            absl::StatusCode::kInvalidArgument);
  FakeIteratorOptions fail_init;
  fail_init.fail_init = true;
  EXPECT_EQ(make({}, fail_init)->Init().code(), absl::StatusCode::kInternal);

  FakeIteratorOptions trailing;
  trailing.trailing_empty_batch = true;
  auto it = make({}, trailing);
  RowBlockBuffers buffers(schema, 4);
  EXPECT_EQ(it->NextBlock(buffers.blocks(), 4).status().code(),
            absl::StatusCode::kFailedPrecondition);
  BASALT_ASSERT_OK(it->Init());
  EXPECT_EQ(it->NextBlock(buffers.blocks(), 5).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(it->HasNext());
  EXPECT_EQ(*it->NextBlock(buffers.blocks(), 4), 0u);
  EXPECT_FALSE(it->HasNext());
}

// Inserts `row` (a row of `schema`) into `mrs` at timestamp 1.
void InsertIntoMrs(MemRowSet* mrs, const Schema& schema, const TestRow& row) {
  alignas(kRowAlignment) uint8_t data[256] = {};
  uint8_t nulls[8] = {};
  CHECK_LE(schema.fixed_row_size(), sizeof(data));
  for (int c = 0; c < schema.num_columns(); ++c) {
    if (row[c].is_null()) {
      BitmapSet(nulls, c);
    } else {
      std::memcpy(data + schema.column_offset(c), row[c].cell(),
                  schema.column(c).type_info().size());
    }
  }
  CHECK(mrs->Insert(HybridTime(1), data, nulls).ok());
}

TEST(FilterIteratorTest, OverMemRowSet) {
  Random rng(SeedFromEnvOrTime());
  const Schema schema = MakeSchema(Layout::kIntKey);
  MemRowSet mrs(1, schema);
  const std::vector<TestRow> rows = RandomSortedRows(&rng, schema, 2000);
  for (const TestRow& r : rows) InsertIntoMrs(&mrs, schema, r);
  for (int iter = 0; iter < 20; ++iter) {
    std::vector<ColumnPredicate> preds = {RandomPredicate(&rng, schema),
                                          RandomPredicate(&rng, schema)};
    std::vector<TestRow> expected;
    for (const TestRow& r : rows) {
      if (RowMatches(schema, preds, r)) expected.push_back(r);
    }
    FilterIterator it(mrs.NewIterator(&schema, MvccSnapshot::IncludingAll()), &schema, preds);
    BASALT_ASSERT_OK(it.Init());
    std::vector<TestRow> actual;
    BASALT_ASSERT_OK(Drain(&it, schema, 1 + rng.Uniform(300), &actual));
    ExpectSameRows(expected, actual, StrCat("iter ", iter));
  }
}

// ---------------------------------------------------------------------------------------------
// UnionIterator

TEST(UnionIteratorTest, YieldsChildrenInOrder) {
  Random rng(SeedFromEnvOrTime());
  const Schema schema = MakeSchema(Layout::kIntKey);
  for (int iter = 0; iter < 200; ++iter) {
    const size_t n = rng.Skewed(9);
    std::vector<TestRow> rows;
    for (size_t i = 0; i < n; ++i) rows.push_back(RandomRow(&rng, schema, 1000));
    auto data = ToColumnar(schema, rows);
    // Consecutive slices, some empty, one child per slice.
    const size_t k = rng.Uniform(6);
    std::vector<size_t> cuts = {0, n};
    for (size_t i = 1; i < k; ++i) cuts.push_back(rng.Uniform(n + 1));
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::unique_ptr<RowBlockIterator>> children;
    std::vector<TestRow> expected;
    for (size_t c = 0; k > 0 && c + 1 < cuts.size(); ++c) {
      std::vector<size_t> idx(cuts[c + 1] - cuts[c]);
      std::iota(idx.begin(), idx.end(), cuts[c]);
      for (size_t i : idx) expected.push_back(rows[i]);
      children.push_back(std::make_unique<FakeRowIterator>(data.get(), std::move(idx),
                                                           RandomFakeOptions(&rng), rng.Next64()));
    }
    UnionIterator it(std::move(children));
    BASALT_ASSERT_OK(it.Init());
    std::vector<TestRow> actual;
    std::vector<size_t> sizes;
    BASALT_ASSERT_OK(Drain(&it, schema, 1 + rng.Skewed(7), &actual, &sizes));
    ExpectSameRows(expected, actual, StrCat("iter ", iter));
    for (size_t i = 0; i + 1 < sizes.size(); ++i) ASSERT_GT(sizes[i], 0u);
  }
}

// Wraps an iterator and counts its destruction.
class CountingIterator : public RowBlockIterator {
 public:
  CountingIterator(std::unique_ptr<RowBlockIterator> inner, int* destroyed)
      : inner_(std::move(inner)), destroyed_(destroyed) {}
  ~CountingIterator() override { ++*destroyed_; }
  absl::Status Init() override { return inner_->Init(); }
  bool HasNext() const override { return inner_->HasNext(); }
  absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks,
                                   size_t max_rows) override {
    return inner_->NextBlock(blocks, max_rows);
  }

 private:
  std::unique_ptr<RowBlockIterator> inner_;
  int* destroyed_;
};

// Children of one row each, keys 0, 1, 2, ... in child order, counted on destruction.
std::vector<std::unique_ptr<RowBlockIterator>> CountedSingleRowChildren(const ColumnarRows* data,
                                                                        int* destroyed) {
  std::vector<std::unique_ptr<RowBlockIterator>> children;
  for (size_t i = 0; i < data->num_rows(); ++i) {
    children.push_back(std::make_unique<CountingIterator>(
        std::make_unique<FakeRowIterator>(data, std::vector<size_t>{i}, FakeIteratorOptions{}, i),
        destroyed));
  }
  return children;
}

TEST(UnionIteratorTest, ReleasesExhaustedChildrenAtTheNextCall) {
  const Schema schema = MakeSchema(Layout::kIntKey);
  auto data = ToColumnar(schema, {{Datum::Int32(0), Datum::Int64(0), Datum::String("a")},
                                  {Datum::Int32(1), Datum::Int64(1), Datum::String("b")},
                                  {Datum::Int32(2), Datum::Int64(2), Datum::String("c")}});
  int destroyed = 0;
  UnionIterator it(CountedSingleRowChildren(data.get(), &destroyed));
  BASALT_ASSERT_OK(it.Init());
  RowBlockBuffers out(schema, 4);
  for (int call = 0; call < 3; ++call) {
    ASSERT_EQ(*it.NextBlock(out.blocks(), 4), 1u);
    // The child that served this batch is alive while its strings may be read.
    EXPECT_EQ(destroyed, call);
    EXPECT_EQ(out.blocks()[2]->data<std::string_view>()[0], std::string(1, 'a' + call));
  }
  EXPECT_FALSE(it.HasNext());
}

TEST(UnionIteratorTest, PropagatesChildErrors) {
  const Schema schema = MakeSchema(Layout::kIntKeyFixed);
  auto data = ToColumnar(schema, {{Datum::Int32(1), Datum::Int64(2)}});
  FakeIteratorOptions fail;
  fail.fail_at_call = 1;
  std::vector<std::unique_ptr<RowBlockIterator>> children;
  children.push_back(std::make_unique<FakeRowIterator>(data.get(), std::vector<size_t>{0},
                                                       FakeIteratorOptions{}, 1));
  children.push_back(
      std::make_unique<FakeRowIterator>(data.get(), std::vector<size_t>{0}, fail, 1));
  UnionIterator it(std::move(children));
  BASALT_ASSERT_OK(it.Init());
  std::vector<TestRow> out;
  EXPECT_EQ(Drain(&it, schema, 8, &out).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(out.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// MergeIterator

enum class Spread { kInterleaved, kDisjoint, kClustered };

// Assigns each of `n` sorted rows to one of `k` children: at random, in k contiguous ranges
// (given to the children in random order), or in random-length clusters.
std::vector<std::vector<size_t>> SpreadRows(Random* rng, size_t n, size_t k, Spread spread) {
  std::vector<std::vector<size_t>> out(k);
  if (spread == Spread::kDisjoint) {
    std::vector<size_t> cuts = {0, n};
    for (size_t i = 1; i < k; ++i) cuts.push_back(rng->Uniform(n + 1));
    std::sort(cuts.begin(), cuts.end());
    std::vector<size_t> order(k);
    std::iota(order.begin(), order.end(), 0);
    for (size_t i = k; i > 1; --i) std::swap(order[i - 1], order[rng->Uniform(i)]);
    for (size_t c = 0; c < k; ++c) {
      for (size_t r = cuts[c]; r < cuts[c + 1]; ++r) out[order[c]].push_back(r);
    }
    return out;
  }
  size_t child = 0;
  for (size_t r = 0; r < n; ++r) {
    if (spread == Spread::kInterleaved || rng->OneIn(20)) child = rng->Uniform(k);
    out[child].push_back(r);
  }
  return out;
}

struct MergeCase {
  Layout layout;
  size_t num_rows;
  size_t num_children;
  Spread spread;
  size_t child_batch_rows;
  size_t max_rows;
};

void RunMergeCase(Random* rng, const MergeCase& mc, const std::string& context) {
  const Schema schema = MakeSchema(mc.layout);
  const std::vector<TestRow> rows = RandomSortedRows(rng, schema, mc.num_rows);
  auto data = ToColumnar(schema, rows);
  std::vector<std::vector<size_t>> parts = SpreadRows(rng, rows.size(), mc.num_children, mc.spread);
  std::vector<std::unique_ptr<RowBlockIterator>> children;
  for (auto& part : parts) {
    if (rng->OneIn(6)) part.clear();  // Empty children.
    children.push_back(
        std::make_unique<FakeRowIterator>(data.get(), part, RandomFakeOptions(rng), rng->Next64()));
  }
  std::vector<TestRow> expected;
  std::vector<bool> kept(rows.size(), false);
  for (const auto& part : parts) {
    for (size_t r : part) kept[r] = true;
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    if (kept[r]) expected.push_back(rows[r]);
  }
  MergeIterator it(std::move(children), &schema, mc.child_batch_rows);
  BASALT_ASSERT_OK(it.Init()) << context;
  std::vector<TestRow> actual;
  std::vector<size_t> sizes;
  BASALT_ASSERT_OK(Drain(&it, schema, mc.max_rows, &actual, &sizes)) << context;
  ExpectSameRows(expected, actual, context);
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    ASSERT_GT(sizes[i], 0u) << context << " batch " << i;
    // Without variable-length columns batches are full.
    if (mc.layout == Layout::kIntKeyFixed) {
      ASSERT_EQ(sizes[i], mc.max_rows) << context;
    }
  }
}

TEST(MergeIteratorTest, RandomMergesMatchBruteForce) {
  Random rng(SeedFromEnvOrTime());
  static constexpr Layout kLayouts[] = {Layout::kIntKey, Layout::kIntKeyFixed,
                                        Layout::kCompositeKey, Layout::kDoubleKey};
  static constexpr Spread kSpreads[] = {Spread::kInterleaved, Spread::kDisjoint,
                                        Spread::kClustered};
  for (int iter = 0; iter < 1500; ++iter) {
    MergeCase mc;
    mc.layout = kLayouts[rng.Uniform(4)];
    mc.num_rows = rng.Skewed(10);
    mc.num_children = 1 + rng.Uniform(8);
    mc.spread = kSpreads[rng.Uniform(3)];
    mc.child_batch_rows = 1 + rng.Skewed(7);
    mc.max_rows = 1 + rng.Skewed(8);
    RunMergeCase(
        &rng, mc,
        StrCat("iter ", iter, " layout ", static_cast<int>(mc.layout), " rows ", mc.num_rows,
               " children ", mc.num_children, " spread ", static_cast<int>(mc.spread),
               " child batch ", mc.child_batch_rows, " max_rows ", mc.max_rows));
  }
}

TEST(MergeIteratorTest, DisjointChildrenAreCopiedInWholeBatches) {
  const Schema schema = MakeSchema(Layout::kIntKeyFixed);
  constexpr int kPerChild = 1000;
  std::vector<TestRow> rows;
  for (int i = 0; i < 4 * kPerChild; ++i) rows.push_back({Datum::Int32(i), Datum::Int64(-i)});
  auto data = ToColumnar(schema, rows);
  std::vector<std::unique_ptr<RowBlockIterator>> children;
  FakeIteratorOptions full;
  full.full_batches = true;
  full.max_batch = 100;
  for (int c : {2, 0, 3, 1}) {
    std::vector<size_t> idx(kPerChild);
    std::iota(idx.begin(), idx.end(), c * kPerChild);
    children.push_back(std::make_unique<FakeRowIterator>(data.get(), idx, full, c));
  }
  MergeIterator it(std::move(children), &schema, 100);
  BASALT_ASSERT_OK(it.Init());
  std::vector<TestRow> actual;
  BASALT_ASSERT_OK(Drain(&it, schema, 250, &actual));
  ExpectSameRows(rows, actual, "disjoint");
  // 40 child batches of 100 rows, cut by 16 output batches of 250: at most 40 + 16 runs.
  EXPECT_LE(it.num_runs(), 56);
}

TEST(MergeIteratorTest, InterleavedChildrenAlternate) {
  const Schema schema = MakeSchema(Layout::kIntKey);
  std::vector<TestRow> rows;
  for (int i = 0; i < 300; ++i) {
    rows.push_back({Datum::Int32(i), Datum::Int64(i), Datum::String(std::to_string(i))});
  }
  auto data = ToColumnar(schema, rows);
  std::vector<std::unique_ptr<RowBlockIterator>> children;
  for (int c = 0; c < 3; ++c) {
    std::vector<size_t> idx;
    for (int i = c; i < 300; i += 3) idx.push_back(i);
    children.push_back(
        std::make_unique<FakeRowIterator>(data.get(), idx, FakeIteratorOptions{}, c));
  }
  MergeIterator it(std::move(children), &schema, 16);
  BASALT_ASSERT_OK(it.Init());
  std::vector<TestRow> actual;
  BASALT_ASSERT_OK(Drain(&it, schema, 64, &actual));
  ExpectSameRows(rows, actual, "interleaved");
  EXPECT_EQ(it.num_runs(), 300);
}

TEST(MergeIteratorTest, Errors) {
  const Schema schema = MakeSchema(Layout::kIntKeyFixed);
  auto data = ToColumnar(schema, {{Datum::Int32(1), Datum::Int64(2)}});
  // A projection without key columns cannot be merged.
  auto no_key = schema.Project({"v"});
  BASALT_ASSERT_OK(no_key);
  ASSERT_EQ(no_key->num_key_columns(), 0);
  EXPECT_EQ(MergeIterator({}, &*no_key).Init().code(), absl::StatusCode::kInvalidArgument);

  FakeIteratorOptions fail_init;
  fail_init.fail_init = true;
  std::vector<std::unique_ptr<RowBlockIterator>> children;
  children.push_back(
      std::make_unique<FakeRowIterator>(data.get(), std::vector<size_t>{0}, fail_init, 1));
  EXPECT_EQ(MergeIterator(std::move(children), &schema).Init().code(), absl::StatusCode::kInternal);

  FakeIteratorOptions fail_next;
  fail_next.fail_at_call = 1;
  children.clear();
  children.push_back(
      std::make_unique<FakeRowIterator>(data.get(), std::vector<size_t>{0}, fail_next, 1));
  MergeIterator it(std::move(children), &schema);
  RowBlockBuffers buffers(schema, 4);
  EXPECT_EQ(it.NextBlock(buffers.blocks(), 4).status().code(),
            absl::StatusCode::kFailedPrecondition);
  BASALT_ASSERT_OK(it.Init());
  EXPECT_EQ(it.NextBlock(buffers.blocks(), 5).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(it.NextBlock(buffers.blocks(), 4).status().code(), absl::StatusCode::kInternal);

  MergeIterator empty({}, &schema);
  BASALT_ASSERT_OK(empty.Init());
  EXPECT_FALSE(empty.HasNext());
}

TEST(MergeIteratorTest, ReleasesExhaustedChildrenAtTheNextCall) {
  const Schema schema = MakeSchema(Layout::kIntKey);
  auto data = ToColumnar(schema, {{Datum::Int32(0), Datum::Int64(0), Datum::String("a")},
                                  {Datum::Int32(1), Datum::Int64(1), Datum::String("b")},
                                  {Datum::Int32(2), Datum::Int64(2), Datum::String("c")}});
  int destroyed = 0;
  MergeIterator it(CountedSingleRowChildren(data.get(), &destroyed), &schema);
  BASALT_ASSERT_OK(it.Init());
  RowBlockBuffers out(schema, 2);
  ASSERT_EQ(*it.NextBlock(out.blocks(), 2), 2u);
  EXPECT_EQ(destroyed, 0);  // Rows 0 and 1 still point into children 0 and 1.
  ASSERT_EQ(*it.NextBlock(out.blocks(), 2), 1u);
  EXPECT_EQ(destroyed, 2);
  EXPECT_EQ(out.blocks()[2]->data<std::string_view>()[0], "c");
  EXPECT_FALSE(it.HasNext());
}

TEST(MergeIteratorTest, DuplicateKeysAreABrokenInvariant) {
  const Schema schema = MakeSchema(Layout::kCompositeKey);
  auto data = ToColumnar(schema, {{Datum::String("k"), Datum::Int64(1), Datum::Int32(1),
                                   Datum::Null(DataType::kString)}});
  auto merge = [&] {
    std::vector<std::unique_ptr<RowBlockIterator>> children;
    for (int c = 0; c < 2; ++c) {
      children.push_back(std::make_unique<FakeRowIterator>(data.get(), std::vector<size_t>{0},
                                                           FakeIteratorOptions{}, c));
    }
    MergeIterator it(std::move(children), &schema);
    CHECK(it.Init().ok());
    std::vector<TestRow> out;
    CHECK(Drain(&it, schema, 8, &out).ok());
    return out.size();
  };
  // Debug builds stop at the DCHECK; release builds emit both rows.
  EXPECT_DEBUG_DEATH(EXPECT_EQ(merge(), 2u), "duplicate key");
}

TEST(MergeIteratorTest, OverMemRowSets) {
  Random rng(SeedFromEnvOrTime());
  const Schema schema = MakeSchema(Layout::kIntKey);
  const std::vector<TestRow> rows = RandomSortedRows(&rng, schema, 3000);
  std::vector<std::unique_ptr<MemRowSet>> mrss;
  for (int i = 0; i < 4; ++i) mrss.push_back(std::make_unique<MemRowSet>(i, schema));
  for (const TestRow& r : rows) InsertIntoMrs(mrss[rng.Uniform(4)].get(), schema, r);
  std::vector<std::unique_ptr<RowBlockIterator>> children;
  for (auto& m : mrss) children.push_back(m->NewIterator(&schema, MvccSnapshot::IncludingAll()));
  MergeIterator it(std::move(children), &schema, 1 + rng.Uniform(200));
  BASALT_ASSERT_OK(it.Init());
  std::vector<TestRow> actual;
  BASALT_ASSERT_OK(Drain(&it, schema, 1 + rng.Uniform(500), &actual));
  ExpectSameRows(rows, actual, "mrs merge");
}

// Thread CPU seconds (less disturbed by other processes than wall time on a shared machine).
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// Merges 4 children of 1M rows (INT32 key, INT64 value) `reps` times; returns the best rows per
// CPU second. The children are FakeRowIterators serving full batches by memcpy.
double MergeRowsPerSec(bool interleaved, int reps) {
  const Schema schema =
      MustCreate({ColumnSchema("k", DataType::kInt32), ColumnSchema("v", DataType::kInt64)}, 1);
  constexpr size_t kChildren = 4, kPerChild = 1 << 20, kBatch = 1024;
  std::vector<std::unique_ptr<ColumnarRows>> data;
  for (size_t c = 0; c < kChildren; ++c) {
    data.push_back(std::make_unique<ColumnarRows>(schema, kPerChild));
    int32_t* k = data.back()->blocks()[0]->data<int32_t>();
    int64_t* v = data.back()->blocks()[1]->data<int64_t>();
    for (size_t i = 0; i < kPerChild; ++i) {
      k[i] = static_cast<int32_t>(interleaved ? i * kChildren + c : c * kPerChild + i);
      v[i] = static_cast<int64_t>(i);
    }
    data.back()->SetNumRows(kPerChild);
  }
  std::vector<size_t> idx(kPerChild);
  std::iota(idx.begin(), idx.end(), 0);
  FakeIteratorOptions o;
  o.full_batches = true;
  o.poison = false;
  o.max_batch = kBatch;
  RowBlockBuffers out(schema, kBatch);
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<std::unique_ptr<RowBlockIterator>> children;
    for (size_t c = 0; c < kChildren; ++c) {
      children.push_back(std::make_unique<FakeRowIterator>(data[c].get(), idx, o, c));
    }
    MergeIterator it(std::move(children), &schema, kBatch);
    CHECK(it.Init().ok());
    size_t total = 0;
    int32_t last = -1;
    const double start = ThreadCpuSeconds();
    while (it.HasNext()) {
      auto n = it.NextBlock(out.blocks(), kBatch);
      CHECK(n.ok());
      total += *n;
      if (*n > 0) last = out.blocks()[0]->data<int32_t>()[*n - 1];
    }
    const double secs = ThreadCpuSeconds() - start;
    CHECK_EQ(total, kChildren * kPerChild);
    CHECK_EQ(last, static_cast<int32_t>(kChildren * kPerChild - 1));
    best = std::max(best, static_cast<double>(total) / secs);
  }
  return best;
}

// Run with --gtest_also_run_disabled_tests --gtest_filter='*MergeThroughput*'. Prints JSON.
TEST(MergeIteratorTest, DISABLED_MergeThroughput) {
  for (bool interleaved : {false, true}) {
    printf(
        "{\"merge\": \"%s\", \"children\": 4, \"rows_per_child\": %d, "
        "\"best_rows_per_cpu_sec\": %.0f}\n",
        interleaved ? "interleaved" : "disjoint", 1 << 20, MergeRowsPerSec(interleaved, 5));
  }
}

}  // namespace iterators_test_file
}  // namespace
}  // namespace basalt
