#include "tablet/diskrowset_writer.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cfile/bloom_filter.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/diskrowset.h"
#include "tablet/diskrowset_test_util.h"

namespace basalt {
namespace {
namespace diskrowset_writer_test_file {

using drs_test::KeyOf;
using drs_test::RowToString;
using drs_test::TestRow;

// A schema with a composite key (INT64, STRING) and one column of every type, some nullable.
Schema WideSchema() {
  auto s = Schema::Create(
      {ColumnSchema("k0", DataType::kInt64), ColumnSchema("k1", DataType::kString),
       ColumnSchema("b", DataType::kBool), ColumnSchema("i8", DataType::kInt8, true),
       ColumnSchema("i16", DataType::kInt16), ColumnSchema("i32", DataType::kInt32, true),
       ColumnSchema("i64", DataType::kInt64), ColumnSchema("f", DataType::kFloat, true),
       ColumnSchema("d", DataType::kDouble), ColumnSchema("s", DataType::kString, true),
       ColumnSchema("bin", DataType::kBinary), ColumnSchema("ts", DataType::kUnixtimeMicros),
       ColumnSchema("date", DataType::kDate, true),
       ColumnSchema("dec32", DataType::kDecimal32, false, std::nullopt, {9, 2, 0}),
       ColumnSchema("dec64", DataType::kDecimal64, false, std::nullopt, {18, 4, 0}),
       ColumnSchema("dec128", DataType::kDecimal128, true, std::nullopt, {38, 10, 0}),
       ColumnSchema("vc", DataType::kVarchar, false, std::nullopt, {0, 0, 10})},
      2);
  CHECK(s.ok()) << s.status();
  return *s;
}

// A random row of WideSchema with key (k0, k1); nullable columns are NULL one time in four.
TestRow WideRow(Random* rng, int64_t k0, std::string k1) {
  auto maybe_null = [&](DataType t, Datum d) { return rng->OneIn(4) ? Datum::Null(t) : d; };
  return {Datum::Int64(k0),
          Datum::String(k1),
          Datum::Bool(rng->OneIn(2)),
          maybe_null(DataType::kInt8, Datum::Int8(static_cast<int8_t>(rng->Next32()))),
          Datum::Int16(static_cast<int16_t>(rng->Next32())),
          maybe_null(DataType::kInt32, Datum::Int32(static_cast<int32_t>(rng->Next32()))),
          Datum::Int64(static_cast<int64_t>(rng->Next64())),
          maybe_null(DataType::kFloat, Datum::Float(static_cast<float>(rng->NextDouble()))),
          Datum::Double(rng->NextDouble() * 1e6 - 5e5),
          maybe_null(DataType::kString, Datum::String(StrCat("v", rng->Uniform(50)))),
          Datum::Binary(rng->Bytes(rng->Uniform(20))),
          Datum::UnixtimeMicros(1'700'000'000'000'000 + static_cast<int64_t>(rng->Uniform(1e9))),
          maybe_null(DataType::kDate, Datum::Date(static_cast<int32_t>(rng->Uniform(30000)))),
          Datum::Decimal32(static_cast<int32_t>(rng->UniformRange(-999'999'999, 999'999'999))),
          Datum::Decimal64(rng->UniformRange(-999'999'999'999'999'999, 999'999'999'999'999'999)),
          maybe_null(DataType::kDecimal128,
                     Datum::Decimal128(absl::int128(rng->UniformRange(-1e18, 1e18)) * 1000)),
          Datum::Varchar(rng->RandomString(rng->Uniform(11)))};
}

// `n` random rows of WideSchema in key order.
std::vector<TestRow> WideRows(const Schema& schema, Random* rng, size_t n) {
  std::map<std::string, TestRow> by_key;
  while (by_key.size() < n) {
    TestRow row = WideRow(rng, rng->UniformRange(-100, 100), rng->Bytes(rng->Uniform(6)));
    by_key.emplace(KeyOf(schema, row), std::move(row));
  }
  std::vector<TestRow> rows;
  for (auto& [key, row] : by_key) rows.push_back(std::move(row));
  return rows;
}

class DiskRowSetWriterTest : public drs_test::DiskRowSetTestBase {
 protected:
  DiskRowSetWriterTest() : schema_(WideSchema()), rng_(SeedFromEnvOrTime()) {}

  // Appends `rows` in one call to `writer`.
  absl::Status Append(DiskRowSetWriter* writer, const std::vector<TestRow>& rows) {
    drs_test::ColumnarRows chunk(schema_, std::max<size_t>(rows.size(), 1));
    std::vector<std::string> keys;
    for (const TestRow& r : rows) {
      chunk.Append(r);
      keys.push_back(KeyOf(schema_, r));
    }
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<const ColumnBlock*> cols(chunk.blocks().begin(), chunk.blocks().end());
    return writer->AppendBlock(cols, views, rows.size());
  }

  Schema schema_;
  Random rng_;
};

TEST_F(DiskRowSetWriterTest, RoundTripEveryType) {
  const std::vector<TestRow> rows = WideRows(schema_, &rng_, 5000);
  auto meta = WriteRowSet(schema_, rows, 7, &rng_);
  BASALT_ASSERT_OK(meta);
  EXPECT_EQ(meta->id, 7);
  EXPECT_EQ(meta->num_rows, rows.size());
  EXPECT_EQ(meta->min_key, KeyOf(schema_, rows.front()));
  EXPECT_EQ(meta->max_key, KeyOf(schema_, rows.back()));
  EXPECT_TRUE(meta->redo_blocks.empty());
  EXPECT_TRUE(meta->undo_blocks.empty());
  EXPECT_FALSE(meta->base_snapshot_before.is_valid());
  ASSERT_EQ(meta->column_blocks.size(), static_cast<size_t>(schema_.num_columns()));
  for (int i = 0; i < schema_.num_columns(); ++i) {
    EXPECT_EQ(meta->column_blocks[i].first, schema_.column_id(i));
  }
  const std::vector<BlockId> all = meta->AllBlocks();
  EXPECT_EQ(all.size(), static_cast<size_t>(schema_.num_columns()) + 2);
  for (BlockId id : all) EXPECT_TRUE(bm_->BlockExists(id)) << id.ToString();

  auto rs = DiskRowSet::Open(*meta, Options());
  BASALT_ASSERT_OK(rs);
  auto base = (*rs)->NewBaseIterator(&schema_);
  BASALT_ASSERT_OK(base);
  auto got = drs_test::Drain(base->get(), schema_, 777);
  BASALT_ASSERT_OK(got);
  ASSERT_EQ(got->size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ((*got)[i], rows[i]) << i << ": " << RowToString((*got)[i]) << " vs "
                                  << RowToString(rows[i]);
  }
  auto scanned = Scan(**rs, schema_, MvccSnapshot::IncludingAll(), {}, 333);
  BASALT_ASSERT_OK(scanned);
  EXPECT_EQ(*scanned, rows);
}

TEST_F(DiskRowSetWriterTest, RejectsKeysOutOfOrder) {
  DiskRowSetWriter writer(bm_.get(), &schema_, 1, 100);
  BASALT_ASSERT_OK(writer.Open());
  TestRow a = WideRow(&rng_, 1, "a");
  TestRow b = WideRow(&rng_, 1, "b");
  TestRow c = WideRow(&rng_, 2, "");
  // A duplicate within one call, then a key below the last one of an earlier call.
  EXPECT_TRUE(absl::IsInvalidArgument(Append(&writer, {a, a})));
  EXPECT_TRUE(absl::IsInvalidArgument(Append(&writer, {b, a})));
  EXPECT_EQ(writer.rows_written(), 0u);
  BASALT_ASSERT_OK(Append(&writer, {b}));
  EXPECT_TRUE(absl::IsInvalidArgument(Append(&writer, {a})));
  EXPECT_TRUE(absl::IsInvalidArgument(Append(&writer, {b})));
  // The writer stays usable after a rejected call.
  BASALT_ASSERT_OK(Append(&writer, {c}));
  EXPECT_EQ(writer.rows_written(), 2u);
  std::vector<std::unique_ptr<WritableBlock>> blocks;
  auto meta = writer.FinishWithoutFinalize(&blocks);
  BASALT_ASSERT_OK(meta);
  EXPECT_EQ(meta->min_key, KeyOf(schema_, b));
  EXPECT_EQ(meta->max_key, KeyOf(schema_, c));
  EXPECT_EQ(blocks.size(), static_cast<size_t>(schema_.num_columns()) + 2);
}

TEST_F(DiskRowSetWriterTest, RejectsBlocksThatDoNotFit) {
  DiskRowSetWriter writer(bm_.get(), &schema_, 1, 100);
  TestRow a = WideRow(&rng_, 1, "a");
  EXPECT_TRUE(absl::IsFailedPrecondition(Append(&writer, {a})));  // Not open.
  BASALT_ASSERT_OK(writer.Open());
  EXPECT_TRUE(absl::IsFailedPrecondition(writer.Open()));
  drs_test::ColumnarRows chunk(schema_, 1);
  chunk.Append(a);
  std::string key = KeyOf(schema_, a);
  std::vector<std::string_view> keys = {key};
  std::vector<const ColumnBlock*> cols(chunk.blocks().begin(), chunk.blocks().end());
  // Too few columns, a block of the wrong type, too few keys, too many rows.
  EXPECT_TRUE(
      absl::IsInvalidArgument(writer.AppendBlock(absl::MakeConstSpan(cols).subspan(1), keys, 1)));
  std::swap(cols[2], cols[3]);
  EXPECT_TRUE(absl::IsInvalidArgument(writer.AppendBlock(cols, keys, 1)));
  std::swap(cols[2], cols[3]);
  EXPECT_TRUE(absl::IsInvalidArgument(writer.AppendBlock(cols, {}, 1)));
  EXPECT_TRUE(absl::IsInvalidArgument(writer.AppendBlock(cols, keys, 2)));
  BASALT_ASSERT_OK(writer.AppendBlock(cols, keys, 1));
  EXPECT_EQ(writer.rows_written(), 1u);
}

TEST_F(DiskRowSetWriterTest, NullInNotNullColumnFailsTheWriter) {
  DiskRowSetWriter writer(bm_.get(), &schema_, 1, 100);
  BASALT_ASSERT_OK(writer.Open());
  drs_test::ColumnarRows chunk(schema_, 1);
  chunk.Append(WideRow(&rng_, 1, "a"));
  std::string key = KeyOf(schema_, WideRow(&rng_, 1, "a"));
  std::vector<std::string_view> keys = {key};
  std::vector<const ColumnBlock*> cols(chunk.blocks().begin(), chunk.blocks().end());
  // Column "i16" is NOT NULL; hand it a null bitmap marking the row NULL.
  ColumnBlock bad = *cols[4];
  uint8_t nulls[1] = {1};
  bad.null_bitmap = nulls;
  cols[4] = &bad;
  EXPECT_TRUE(absl::IsInvalidArgument(writer.AppendBlock(cols, keys, 1)));
  std::vector<std::unique_ptr<WritableBlock>> blocks;
  EXPECT_FALSE(writer.FinishWithoutFinalize(&blocks).ok());
  EXPECT_TRUE(blocks.empty());
}

TEST_F(DiskRowSetWriterTest, NoRowsIsFailedPreconditionAndLeavesNoBlocks) {
  {
    DiskRowSetWriter writer(bm_.get(), &schema_, 1, 100);
    BASALT_ASSERT_OK(writer.Open());
    std::vector<std::unique_ptr<WritableBlock>> blocks;
    auto meta = writer.FinishWithoutFinalize(&blocks);
    EXPECT_TRUE(absl::IsFailedPrecondition(meta.status())) << meta.status();
    EXPECT_TRUE(blocks.empty());
  }
  {
    // A writer destroyed before finishing aborts its blocks.
    DiskRowSetWriter writer(bm_.get(), &schema_, 2, 100);
    BASALT_ASSERT_OK(writer.Open());
    BASALT_ASSERT_OK(Append(&writer, WideRows(schema_, &rng_, 100)));
  }
  auto listed = bm_->ListBlocks();
  BASALT_ASSERT_OK(listed);
  EXPECT_TRUE(listed->empty());
  std::vector<std::string> children;
  for (int i = 0; i < 256; ++i) {
    auto c = env_.GetChildren(StrCat(bm_->blocks_dir(), "/", absl::Hex(i, absl::kZeroPad2)));
    BASALT_ASSERT_OK(c);
    children.insert(children.end(), c->begin(), c->end());
  }
  EXPECT_TRUE(children.empty()) << children.front();
}

TEST_F(DiskRowSetWriterTest, BytesWrittenCountsEveryFile) {
  DiskRowSetWriter writer(bm_.get(), &schema_, 1, 20000);
  BASALT_ASSERT_OK(writer.Open());
  const std::vector<TestRow> rows = WideRows(schema_, &rng_, 20000);
  uint64_t last = writer.bytes_written();
  for (size_t i = 0; i < rows.size(); i += 2000) {
    BASALT_ASSERT_OK(
        Append(&writer, std::vector<TestRow>(rows.begin() + i, rows.begin() + i + 2000)));
    EXPECT_GE(writer.bytes_written(), last);
    last = writer.bytes_written();
  }
  EXPECT_GT(last, 0u);  // Pages were flushed along the way.
  std::vector<std::unique_ptr<WritableBlock>> blocks;
  auto meta = writer.FinishWithoutFinalize(&blocks);
  BASALT_ASSERT_OK(meta);
  uint64_t total = 0;
  for (const auto& b : blocks) total += b->bytes_written();
  EXPECT_EQ(writer.bytes_written(), total);
  // The bloom filter is sized for 20000 keys at 0.0001: about 26 bits per key.
  EXPECT_GE(blocks.back()->bytes_written(), 20000u * 26 / 8 / 2);
}

TEST_F(DiskRowSetWriterTest, BloomFilterIsSizedForTheRowsWritten) {
  // The caller expected a million rows but wrote 1000: the filter is sized for 1000 keys (one
  // 4 KiB page), not 3 MiB.
  DiskRowSetWriter writer(bm_.get(), &schema_, 1, 1 << 20);
  BASALT_ASSERT_OK(writer.Open());
  BASALT_ASSERT_OK(Append(&writer, WideRows(schema_, &rng_, 1000)));
  std::vector<std::unique_ptr<WritableBlock>> blocks;
  BASALT_ASSERT_OK(writer.FinishWithoutFinalize(&blocks));
  EXPECT_EQ(blocks.back()->bytes_written(), kBloomPageSize + 4 + kBloomTrailerSize);
}

}  // namespace diskrowset_writer_test_file
}  // namespace
}  // namespace basalt
