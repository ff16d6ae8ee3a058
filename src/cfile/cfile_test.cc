// Round trips, seeks, predicates and the golden bytes of column files (cfile_writer/reader).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cfile/block_cache.h"
#include "cfile/cfile_format.h"
#include "cfile/cfile_reader.h"
#include "cfile/cfile_test_util.h"
#include "cfile/cfile_writer.h"
#include "cfile/compression.h"
#include "cfile/dict_encoding.h"
#include "cfile/encoding.h"
#include "common/coding.h"
#include "common/column_predicate.h"
#include "common/crc32c.h"
#include "common/datum.h"
#include "common/fault_injection_env.h"
#include "common/key_encoder.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "proto/cfile.pb.h"

namespace basalt::cfile_test {
namespace {
namespace cfile_test_file {

using encoding_test::AllEncodings;
using encoding_test::AllTypes;
using encoding_test::RandomValues;
using encoding_test::SortedCopy;

// GoldenBytes: the file, hex. Tabled byte by byte in docs/cfile.md.
constexpr char kGolden[] =
    // Page 0: rows 3, values 2, payload 13 = null bitmap 0x02 + PLAIN body; CRC.
    "03020d"
    "02"
    "02000000"
    "07000000"
    "ffffffff"
    "e6de6354"
    // Positional index: 1 entry {rows 3, nulls 1, size 20, min -1, max 7}; CRC.
    "01"
    "030114"
    "03"
    "04ffffffff"
    "0407000000"
    "cbf87e7b"
    // Footer (CFileFooterPB).
    "0804120018012001280130033801400148145204081410136801"
    "7204ffffffff7801820104"
    "07000000"
    // Trailer: footer size 41, footer CRC, version 1, magic "BSLTCFIL".
    "29000000"
    "7188e56e"
    "01000000"
    "42534c544346494c";

constexpr CompressionType kCodecs[] = {CompressionType::kNone, CompressionType::kSnappy,
                                       CompressionType::kLz4, CompressionType::kZlib,
                                       CompressionType::kZstd};

Column MakeColumn(DataType type, size_t n, bool nullable, uint64_t null_one_in, Random* rng,
                  bool extremes) {
  Column col(RandomValues(type, n, rng, extremes), nullable);
  if (nullable) {
    for (size_t i = 0; i < n; ++i) {
      if (null_one_in != 0 && rng->OneIn(null_one_in)) BitmapSet(col.nulls.data(), i);
    }
  }
  return col;
}

CFileWriterOptions Options(DataType type, EncodingType enc, CompressionType codec, bool nullable,
                           int32_t block_size = 0) {
  CFileWriterOptions o;
  o.type = type;
  if (type == DataType::kDecimal32) o.type_attributes = {9, 2, 0};
  if (type == DataType::kDecimal64) o.type_attributes = {18, 2, 0};
  if (type == DataType::kDecimal128) o.type_attributes = {38, 2, 0};
  if (type == DataType::kVarchar) o.type_attributes = {0, 0, kMaxVarcharLength};
  o.nullable = nullable;
  o.storage = {enc, codec, block_size};
  return o;
}

class CFileTest : public CFileTestBase {
 protected:
  // A DICT, LZ4 file of `col` (HostColumn below) in pages of 1 KiB.
  BlockId WriteHostFile(const Column& col, Random* rng) {
    return WriteColumn(
        Options(DataType::kString, EncodingType::kDict, CompressionType::kLz4, false, 1024), col,
        rng);
  }
  // Writes `col`, reads it back whole, by random seeks, and twice through a cache.
  void RoundTrip(const CFileWriterOptions& options, const Column& col, Random* rng) {
    const BlockId id = WriteColumn(options, col, rng);
    BlockCache cache(64 << 20);
    auto reader_or = OpenFile(id, &cache);
    BASALT_ASSERT_OK(reader_or);
    CFileReader* reader = reader_or->get();
    EXPECT_EQ(reader->type(), options.type);
    EXPECT_EQ(reader->type_attributes(), options.type_attributes);
    EXPECT_EQ(reader->encoding(), options.storage.encoding);
    EXPECT_EQ(reader->compression(), options.storage.compression);
    EXPECT_EQ(reader->nullable(), options.nullable);
    size_t nulls = 0;
    for (size_t i = 0; i < col.size(); ++i) nulls += col.is_null(i);
    EXPECT_EQ(reader->null_count(), nulls);
    ASSERT_NO_FATAL_FAILURE(ExpectScanMatches(reader, col, rng));
    // Random seeks by ordinal.
    auto it = reader->NewIterator();
    for (int i = 0; i < 20 && col.size() > 0; ++i) {
      const size_t row = rng->Uniform(col.size() + 1);
      BASALT_ASSERT_OK(it->SeekToOrdinal(row));
      const size_t n = 1 + rng->Uniform(40);
      ColumnBlockBuffer buf(options.type, n, true);
      size_t got = 0;
      BASALT_ASSERT_OK(it->Scan(n, buf.block(), &got));
      ASSERT_EQ(got, std::min(n, col.size() - row));
      ASSERT_NO_FATAL_FAILURE(ExpectRows(col, row, buf.block_ref(), got));
    }
    EXPECT_EQ(it->SeekToOrdinal(col.size() + 1).code(), absl::StatusCode::kInvalidArgument);
    // A second full scan is served by the cache.
    auto it2 = reader->NewIterator();
    ColumnBlockBuffer all(options.type, std::max<size_t>(col.size(), 1), true);
    size_t got = 0;
    BASALT_ASSERT_OK(it2->Scan(col.size(), all.block(), &got));
    ASSERT_NO_FATAL_FAILURE(ExpectRows(col, 0, all.block_ref(), got));
    EXPECT_EQ(it2->stats().pages_from_disk, 0);
    EXPECT_EQ(it2->stats().pages_read, static_cast<int64_t>(reader->num_pages()));
    // BIT_PACKED pages, and DICT pages of codes (the first page at least; later ones fall back
    // to plain values once the dictionary is full), are walked once, when loaded.
    if (options.storage.encoding == EncodingType::kBitPacked) {
      EXPECT_EQ(it2->stats().pages_with_layout, it2->stats().pages_decoded);
    } else if (options.storage.encoding == EncodingType::kDict && nulls < col.size()) {
      EXPECT_GE(it2->stats().pages_with_layout, 1);
    } else if (options.storage.encoding != EncodingType::kDict) {
      EXPECT_EQ(it2->stats().pages_with_layout, 0);
    }
    // Without a cache no page is shared: the iterator's decoder walks it, once.
    auto uncached = OpenFile(id);
    BASALT_ASSERT_OK(uncached);
    auto it3 = (*uncached)->NewIterator();
    BASALT_ASSERT_OK(it3->Scan(col.size(), all.block(), &got));
    ASSERT_NO_FATAL_FAILURE(ExpectRows(col, 0, all.block_ref(), got));
    EXPECT_EQ(it3->stats().pages_with_layout, 0);
  }
};

// Every allowed (type, encoding, codec): empty, one value, all NULLs, many small pages of random
// and extreme values with NULLs.
TEST_F(CFileTest, RoundTripEveryTypeEncodingCodec) {
  Random rng(SeedFromEnvOrTime());
  for (DataType type : AllTypes()) {
    const bool var = GetTypeInfo(type).is_variable_length();
    for (EncodingType enc : AllEncodings()) {
      if (!IsEncodingAllowed(type, enc)) continue;
      for (CompressionType codec : kCodecs) {
        SCOPED_TRACE(StrCat(DataTypeName(type), " ", EncodingTypeName(enc), " ",
                            CompressionTypeName(codec)));
        RoundTrip(Options(type, enc, codec, false), MakeColumn(type, 0, false, 0, &rng, false),
                  &rng);
        RoundTrip(Options(type, enc, codec, true), MakeColumn(type, 1, true, 0, &rng, false), &rng);
        RoundTrip(Options(type, enc, codec, true), MakeColumn(type, 300, true, 1, &rng, false),
                  &rng);
        RoundTrip(Options(type, enc, codec, true, 256),
                  MakeColumn(type, var ? 120 : 3000, true, 5, &rng, true), &rng);
        RoundTrip(Options(type, enc, codec, false, 1024),
                  MakeColumn(type, var ? 400 : 5000, false, 0, &rng, false), &rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(CFileTest, DefaultsResolveAndManyPagesForTheDefaultPageSize) {
  Random rng(SeedFromEnvOrTime());
  Column col = MakeColumn(DataType::kInt64, 300000, false, 0, &rng, false);
  CFileWriterOptions o =
      Options(DataType::kInt64, EncodingType::kAuto, CompressionType::kDefault, false);
  const BlockId id = WriteColumn(o, col, &rng);
  auto reader = OpenFile(id).value();
  EXPECT_EQ(reader->encoding(), EncodingType::kBitPacked);
  EXPECT_EQ(reader->compression(), CompressionType::kNone);
  EXPECT_GT(reader->num_pages(), 2u);
  ExpectScanMatches(reader.get(), col, &rng);
}

TEST_F(CFileTest, WriterRejectsBadInput) {
  Random rng(SeedFromEnvOrTime());
  {
    CFileWriter w(Options(DataType::kInt32, EncodingType::kRle, CompressionType::kNone, false),
                  bm_->CreateBlock().value());
    EXPECT_EQ(w.Start().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    CFileWriter w(Options(DataType::kInt32, EncodingType::kPlain, CompressionType::kNone, false),
                  bm_->CreateBlock().value());
    BASALT_ASSERT_OK(w.Start());
    int32_t v[2] = {1, 2};
    uint8_t nulls = 1;
    EXPECT_EQ(w.AppendValues(v, &nulls, 2).code(), absl::StatusCode::kInvalidArgument);
  }
  {
    CFileWriterOptions o =
        Options(DataType::kInt32, EncodingType::kPlain, CompressionType::kNone, false);
    o.is_key = true;
    CFileWriter w(o, bm_->CreateBlock().value());
    BASALT_ASSERT_OK(w.Start());
    int32_t v[3] = {1, 3, 2};
    EXPECT_EQ(w.AppendValues(v, nullptr, 3).code(), absl::StatusCode::kInvalidArgument);
  }
  {
    CFileWriterOptions o =
        Options(DataType::kInt32, EncodingType::kPlain, CompressionType::kNone, true);
    o.is_key = true;
    CFileWriter w(o, bm_->CreateBlock().value());
    EXPECT_EQ(w.Start().code(), absl::StatusCode::kInvalidArgument);
  }
}

// Key files: SeekAtOrAfter lands on the first row >= the key, for present and absent keys,
// with duplicates spanning pages.
TEST_F(CFileTest, SeekAtOrAfterInKeyFiles) {
  Random rng(SeedFromEnvOrTime());
  for (DataType type : {DataType::kInt32, DataType::kInt64, DataType::kDouble, DataType::kString,
                        DataType::kBinary}) {
    for (EncodingType enc : AllEncodings()) {
      if (!IsEncodingAllowed(type, enc)) continue;
      SCOPED_TRACE(StrCat(DataTypeName(type), " ", EncodingTypeName(enc)));
      // Few distinct values, so duplicates run across page boundaries.
      Values raw = RandomValues(type, 3000, &rng, false);
      for (size_t i = 0; i < raw.size(); ++i) {
        if (rng.OneIn(2)) {
          std::memcpy(raw.buf->block()->cell(i), raw.block().cell(rng.Uniform(40)),
                      raw.block().cell_size);
        }
      }
      Column col(SortedCopy(raw), false);
      CFileWriterOptions o = Options(type, enc, CompressionType::kLz4, false, 512);
      o.is_key = true;
      const BlockId id = WriteColumn(o, col, &rng);
      auto reader = OpenFile(id).value();
      ASSERT_TRUE(reader->has_value_index());
      ASSERT_GT(reader->num_pages(), 3u);
      auto it = reader->NewIterator();
      const TypeInfo& ti = GetTypeInfo(type);
      Values probes = RandomValues(type, 200, &rng, true);
      for (size_t p = 0; p < probes.size(); ++p) {
        const void* key = rng.OneIn(2) ? col.cell(rng.Uniform(col.size())) : probes.block().cell(p);
        size_t want = 0;
        while (want < col.size() && ti.Compare(col.cell(want), key) < 0) ++want;
        bool exact = false;
        absl::Status s = it->SeekAtOrAfter(key, &exact);
        if (want == col.size()) {
          ASSERT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
          EXPECT_FALSE(it->HasNext());
          continue;
        }
        BASALT_ASSERT_OK(s);
        ASSERT_EQ(it->ordinal(), want);
        EXPECT_EQ(exact, ti.Compare(col.cell(want), key) == 0);
        std::string encoded;
        EncodeKeyCell(type, key, /*is_last=*/true, &encoded);
        bool exact2 = false;
        BASALT_ASSERT_OK(it->SeekAtOrAfterEncoded(encoded, &exact2));
        ASSERT_EQ(it->ordinal(), want);
        EXPECT_EQ(exact2, exact);
        ColumnBlockBuffer buf(type, 5, true);
        size_t got = 0;
        BASALT_ASSERT_OK(it->Scan(5, buf.block(), &got));
        ASSERT_NO_FATAL_FAILURE(ExpectRows(col, want, buf.block_ref(), got));
      }
    }
  }
}

// Dense sequential keys would fill a 2^20-row page; key files end pages at 64 Ki rows so a seek
// decodes little.
TEST_F(CFileTest, KeyFilePagesAreBoundedInRows) {
  Random rng(SeedFromEnvOrTime());
  const size_t n = 200000;
  Values v(DataType::kInt32, n);
  for (size_t i = 0; i < n; ++i) v.buf->block()->data<int32_t>()[i] = static_cast<int32_t>(i);
  Column col(std::move(v), false);
  CFileWriterOptions o =
      Options(DataType::kInt32, EncodingType::kBitPacked, CompressionType::kNone, false);
  o.is_key = true;
  auto reader = OpenFile(WriteColumn(o, col, &rng)).value();
  EXPECT_EQ(reader->num_pages(),
            (n + cfile_internal::kMaxRowsPerKeyPage - 1) / cfile_internal::kMaxRowsPerKeyPage);
  auto it = reader->NewIterator();
  bool exact = false;
  const int32_t key = 150001;
  BASALT_ASSERT_OK(it->SeekAtOrAfter(&key, &exact));
  EXPECT_TRUE(exact);
  EXPECT_EQ(it->ordinal(), 150001u);
  EXPECT_EQ(it->stats().pages_decoded, 1);
}

TEST_F(CFileTest, SeekAtOrAfterNeedsAKeyFile) {
  Random rng(SeedFromEnvOrTime());
  Column col = MakeColumn(DataType::kInt32, 10, false, 0, &rng, false);
  auto reader = OpenFile(WriteColumn(Options(DataType::kInt32, EncodingType::kPlain,
                                             CompressionType::kNone, false),
                                     col, &rng))
                    .value();
  bool exact;
  int32_t key = 0;
  EXPECT_EQ(reader->NewIterator()->SeekAtOrAfter(&key, &exact).code(),
            absl::StatusCode::kFailedPrecondition);
  // A malformed encoded key is rejected before the file is consulted.
  EXPECT_EQ(reader->NewIterator()->SeekAtOrAfterEncoded("abc", &exact).code(),
            absl::StatusCode::kInvalidArgument);
}

// The model result of `pred` over rows [first, first + n).
std::vector<bool> ModelSelection(const Column& col, const ColumnPredicate& pred, size_t first,
                                 size_t n) {
  std::vector<bool> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = pred.Evaluate(col.is_null(first + i) ? nullptr : col.cell(first + i));
  }
  return out;
}

// Random predicates over random data (all encodings, NULLs) match the model, with and without
// materializing values (DICT then evaluates on codes).
TEST_F(CFileTest, ScanWithPredicateMatchesModel) {
  Random rng(SeedFromEnvOrTime());
  for (DataType type : {DataType::kInt32, DataType::kInt64, DataType::kDouble, DataType::kString,
                        DataType::kBool}) {
    for (EncodingType enc : AllEncodings()) {
      if (!IsEncodingAllowed(type, enc)) continue;
      SCOPED_TRACE(StrCat(DataTypeName(type), " ", EncodingTypeName(enc)));
      Column col = MakeColumn(type, 4000, true, 7, &rng, false);
      if (type == DataType::kString) {  // Low cardinality so DICT stays a dictionary.
        for (size_t i = 0; i < col.size(); ++i) {
          col.values.buf->block()->data<std::string_view>()[i] =
              col.values.block().data<std::string_view>()[rng.Uniform(30)];
        }
      }
      const BlockId id =
          WriteColumn(Options(type, enc, CompressionType::kNone, true, 512), col, &rng);
      auto reader = OpenFile(id).value();
      ColumnSchema cs("c", type, true);
      for (int trial = 0; trial < 12; ++trial) {
        const Datum a = Datum::FromCell(type, col.cell(rng.Uniform(col.size())));
        const Datum b = Datum::FromCell(type, col.cell(rng.Uniform(col.size())));
        std::vector<ColumnPredicate> preds = {
            ColumnPredicate::Range(cs, a.Compare(b) <= 0 ? a : b, a.Compare(b) <= 0 ? b : a)
                .value(),
            ColumnPredicate::Equality(cs, a).value(), ColumnPredicate::InList(cs, {a, b}).value(),
            ColumnPredicate::IsNull(cs), ColumnPredicate::IsNotNull(cs)};
        const ColumnPredicate& pred = preds[trial % preds.size()];
        SCOPED_TRACE(pred.ToString());
        auto it = reader->NewIterator();
        const size_t start = rng.Uniform(col.size());
        BASALT_ASSERT_OK(it->SeekToOrdinal(start));
        const size_t n = 1 + rng.Uniform(col.size());
        std::vector<uint8_t> sel(BitmapSize(n) + 1, 0xff);
        ColumnBlockBuffer buf(type, n, true);
        const bool materialize = rng.OneIn(2);
        size_t got = 0;
        absl::Status s =
            it->ScanWithPredicate(pred, n, sel.data(), materialize ? buf.block() : nullptr, &got);
        BASALT_ASSERT_OK(s);
        ASSERT_EQ(got, std::min(n, col.size() - start));
        const bool value_pred =
            pred.kind() != PredicateKind::kIsNull && pred.kind() != PredicateKind::kIsNotNull;
        if (enc == EncodingType::kDict && !materialize && value_pred &&
            it->stats().pages_decoded > 0) {
          EXPECT_GT(it->stats().ranges_evaluated_encoded, 0);  // Evaluated on codes.
        }
        std::vector<bool> want = ModelSelection(col, pred, start, got);
        for (size_t i = 0; i < got; ++i) {
          ASSERT_EQ(BitmapTest(sel.data(), i), want[i]) << "row " << start + i;
        }
        if (materialize) {
          // Selected rows were decoded into the block.
          for (size_t i = 0; i < got; ++i) {
            if (!want[i]) continue;
            ASSERT_EQ(col.is_null(start + i), buf.block_ref().is_null(i));
            if (!col.is_null(start + i)) {
              ASSERT_TRUE(CellsEqual(col.values.block(), start + i, buf.block_ref(), i));
            }
          }
        }
      }
    }
  }
}

// A selective predicate on sorted data decodes only the pages its zone maps admit.
TEST_F(CFileTest, ZoneMapsSkipPagesWithoutDecoding) {
  Random rng(SeedFromEnvOrTime());
  const size_t n = 100000;
  Values v(DataType::kInt64, n);
  for (size_t i = 0; i < n; ++i) v.buf->block()->data<int64_t>()[i] = static_cast<int64_t>(i);
  Column col(std::move(v), false);
  const BlockId id = WriteColumn(
      Options(DataType::kInt64, EncodingType::kPlain, CompressionType::kNone, false, 4096), col,
      &rng);
  auto reader = OpenFile(id).value();
  ASSERT_GT(reader->num_pages(), 100u);
  ColumnSchema cs("c", DataType::kInt64);
  auto pred = ColumnPredicate::Range(cs, Datum::Int64(50000), Datum::Int64(50100)).value();
  EXPECT_TRUE(reader->MayMatch(pred));
  EXPECT_FALSE(reader->MayMatch(ColumnPredicate::Range(cs, Datum::Int64(n), {}).value()));
  auto it = reader->NewIterator();
  std::vector<uint8_t> sel(BitmapSize(n), 0xff);
  size_t got = 0;
  BASALT_ASSERT_OK(it->ScanWithPredicate(pred, n, sel.data(), nullptr, &got));
  ASSERT_EQ(got, n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(BitmapTest(sel.data(), i), i >= 50000 && i < 50100) << i;
  }
  EXPECT_LE(it->stats().pages_decoded, 2);
  EXPECT_EQ(it->stats().pages_decoded + it->stats().pages_skipped,
            static_cast<int64_t>(reader->num_pages()));
}

// NaN sorts last (IEEE total order) in zone maps as in predicates: a page of NaNs is skipped for
// a finite range and kept for a range that reaches NaN.
TEST_F(CFileTest, ZoneMapsOrderNaNLikePredicates) {
  Random rng(SeedFromEnvOrTime());
  const size_t n = 2000;
  Values v(DataType::kDouble, n);
  for (size_t i = 0; i < n; ++i) {
    v.buf->block()->data<double>()[i] =
        i < n / 2 ? static_cast<double>(i) : std::numeric_limits<double>::quiet_NaN();
  }
  Column col(std::move(v), false);
  const BlockId id = WriteColumn(
      Options(DataType::kDouble, EncodingType::kPlain, CompressionType::kNone, false, 1024), col,
      &rng);
  auto reader = OpenFile(id).value();
  ColumnSchema cs("c", DataType::kDouble);
  auto finite = ColumnPredicate::Range(cs, Datum::Double(0), Datum::Double(1e9)).value();
  auto it = reader->NewIterator();
  std::vector<uint8_t> sel(BitmapSize(n), 0xff);
  size_t got = 0;
  BASALT_ASSERT_OK(it->ScanWithPredicate(finite, n, sel.data(), nullptr, &got));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(BitmapTest(sel.data(), i), i < n / 2) << i;
  EXPECT_GT(it->stats().pages_skipped, 0);
  auto high = ColumnPredicate::Range(cs, Datum::Double(1e9), std::nullopt).value();
  it = reader->NewIterator();
  std::fill(sel.begin(), sel.end(), 0xff);
  BASALT_ASSERT_OK(it->ScanWithPredicate(high, n, sel.data(), nullptr, &got));
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(BitmapTest(sel.data(), i), high.Evaluate(col.cell(i))) << i;
  }
}

// A DICT file whose dictionary fills up switches to PLAIN pages mid-file; scans and predicates
// (on codes for the dictionary pages, on values for the others) still match the model.
TEST_F(CFileTest, DictFallbackToPlainMidFile) {
  Random rng(SeedFromEnvOrTime());
  gflags::FlagSaver saver;
  FLAGS_cfile_dict_max_bytes = 2048;
  Column col = MakeColumn(DataType::kString, 3000, true, 9, &rng, false);
  const BlockId id = WriteColumn(
      Options(DataType::kString, EncodingType::kDict, CompressionType::kLz4, true, 512), col, &rng);
  auto reader = OpenFile(id).value();
  ASSERT_NO_FATAL_FAILURE(ExpectScanMatches(reader.get(), col, &rng));
  ColumnSchema cs("c", DataType::kString, true);
  const Datum a = Datum::FromCell(DataType::kString, col.cell(10));
  const Datum b = Datum::FromCell(DataType::kString, col.cell(2900));
  auto pred = ColumnPredicate::InList(cs, {a, b}).value();
  auto it = reader->NewIterator();
  std::vector<uint8_t> sel(BitmapSize(col.size()), 0xff);
  size_t got = 0;
  BASALT_ASSERT_OK(it->ScanWithPredicate(pred, col.size(), sel.data(), nullptr, &got));
  ASSERT_EQ(got, col.size());
  for (size_t i = 0; i < col.size(); ++i) {
    ASSERT_EQ(BitmapTest(sel.data(), i), pred.Evaluate(col.is_null(i) ? nullptr : col.cell(i)))
        << i;
  }
  EXPECT_GT(it->stats().ranges_evaluated_encoded, 0);
  EXPECT_LT(it->stats().ranges_evaluated_encoded, it->stats().pages_decoded);
}

// Strings drawn from a few names ("host_0" .. "host_9", never "host_5"), each name's rows
// together as a sorted key column would hold them.
Column HostColumn(size_t n) {
  static const std::vector<std::string> kNames = {"host_0", "host_1", "host_2", "host_3", "host_4",
                                                  "host_6", "host_7", "host_8", "host_9"};
  Values v(DataType::kString, n);
  for (size_t i = 0; i < n; ++i) {
    v.buf->block()->data<std::string_view>()[i] = kNames[i * kNames.size() / n];
  }
  return Column(std::move(v), false);
}

// A DICT file whose every page holds codes says so in its footer: a value predicate that no
// dictionary entry matches prunes the file although its zone map admits the value.
TEST_F(CFileTest, CompleteDictionaryPrunesAbsentValues) {
  Random rng(SeedFromEnvOrTime());
  Column col = HostColumn(5000);
  auto reader = OpenFile(WriteHostFile(col, &rng)).value();
  ColumnSchema cs("hostname", DataType::kString);
  auto eq = [&](const char* v) { return ColumnPredicate::Equality(cs, Datum::String(v)).value(); };
  EXPECT_FALSE(
      reader->MayMatch(eq("host_5")));  // Between host_4 and host_6: the zone map admits it.
  EXPECT_TRUE(reader->MayMatch(eq("host_6")));
  EXPECT_FALSE(reader->MayMatch(
      ColumnPredicate::InList(cs, {Datum::String("host_5"), Datum::String("host_55")}).value()));
  EXPECT_FALSE(reader->MayMatch(  // Upper bound exclusive: host_6 is out.
      ColumnPredicate::Range(cs, Datum::String("host_5"), Datum::String("host_6")).value()));
  EXPECT_TRUE(reader->MayMatch(
      ColumnPredicate::Range(cs, Datum::String("host_5"), Datum::String("host_7")).value()));
  EXPECT_TRUE(reader->MayMatch(ColumnPredicate::IsNotNull(cs)));
  // The scans agree.
  ASSERT_NO_FATAL_FAILURE(ExpectScanMatches(reader.get(), col, &rng));
  // Runs of one code are evaluated a block at a time, from any starting row.
  for (const char* v : {"host_0", "host_6", "host_9"}) {
    const ColumnPredicate pred = eq(v);
    auto it = reader->NewIterator();
    const size_t start = rng.Uniform(col.size());
    BASALT_ASSERT_OK(it->SeekToOrdinal(start));
    const size_t n = col.size() - start;
    std::vector<uint8_t> sel(BitmapSize(n) + 1, 0xff);
    size_t got = 0;
    BASALT_ASSERT_OK(it->ScanWithPredicate(pred, n, sel.data(), nullptr, &got));
    ASSERT_EQ(got, n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(BitmapTest(sel.data(), i), pred.Evaluate(col.cell(start + i))) << v << " " << i;
    }
  }
}

// Once the dictionary filled up, later pages hold plain values the dictionary lacks: no pruning
// by the dictionary then.
TEST_F(CFileTest, FullDictionaryDoesNotPrune) {
  Random rng(SeedFromEnvOrTime());
  gflags::FlagSaver saver;
  FLAGS_cfile_dict_max_bytes = 64;  // host_0 .. host_3 or so fit, the rest go plain.
  Column col = HostColumn(5000);
  auto reader = OpenFile(WriteHostFile(col, &rng)).value();
  ColumnSchema cs("hostname", DataType::kString);
  EXPECT_TRUE(reader->MayMatch(ColumnPredicate::Equality(cs, Datum::String("host_9")).value()));
  EXPECT_TRUE(reader->MayMatch(ColumnPredicate::Equality(cs, Datum::String("host_5")).value()));
  ASSERT_NO_FATAL_FAILURE(ExpectScanMatches(reader.get(), col, &rng));
}

// A footer that claims a complete dictionary over a file with plain pages (a corrupt or forged
// footer with a valid CRC) is a clean DATA_LOSS when the plain page is read, not wrong results
// served quietly ever after.
TEST_F(CFileTest, CompleteDictionaryClaimOverPlainPagesIsCorruption) {
  Random rng(SeedFromEnvOrTime());
  std::string bytes;
  {
    gflags::FlagSaver saver;
    FLAGS_cfile_dict_max_bytes = 64;
    Column col = HostColumn(5000);
    bytes = ReadAll(WriteHostFile(col, &rng));
  }
  // Rewrite the footer with dict_complete set, and its size and CRC in the trailer.
  const size_t trailer = bytes.size() - cfile_internal::kTrailerSize;
  const uint32_t footer_size = DecodeFixed32(bytes.data() + trailer);
  pb::CFileFooterPB footer;
  ASSERT_TRUE(footer.ParseFromArray(bytes.data() + trailer - footer_size, footer_size));
  ASSERT_FALSE(footer.dict_complete());
  footer.set_dict_complete(true);
  std::string forged = bytes.substr(0, trailer - footer_size);
  std::string tail;
  ASSERT_TRUE(footer.SerializeToString(&tail));
  forged += tail;
  PutFixed32(&forged, static_cast<uint32_t>(tail.size()));
  PutFixed32(&forged, crc32c::Mask(crc32c::Value(tail)));
  forged += bytes.substr(trailer + 8);
  auto reader = OpenFile(WriteBytes(forged)).value();
  auto it = reader->NewIterator();
  ColumnBlockBuffer buf(DataType::kString, 5000, false);
  size_t got = 0;
  absl::Status s = it->Scan(5000, buf.block(), &got);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("every page holds codes"), std::string::npos) << s;
}

TEST_F(CFileTest, ScanRejectsUnfitOutputBlocks) {
  Random rng(SeedFromEnvOrTime());
  Column col = MakeColumn(DataType::kInt32, 100, true, 3, &rng, false);
  auto reader = OpenFile(WriteColumn(Options(DataType::kInt32, EncodingType::kPlain,
                                             CompressionType::kNone, true),
                                     col, &rng))
                    .value();
  size_t got = 0;
  ColumnBlockBuffer no_nulls(DataType::kInt32, 100, false);
  EXPECT_EQ(reader->NewIterator()->Scan(100, no_nulls.block(), &got).code(),
            absl::StatusCode::kInvalidArgument);
  ColumnBlockBuffer wrong_type(DataType::kInt64, 100, true);
  EXPECT_EQ(reader->NewIterator()->Scan(100, wrong_type.block(), &got).code(),
            absl::StatusCode::kInvalidArgument);
  ColumnBlockBuffer small(DataType::kInt32, 10, true);
  EXPECT_EQ(reader->NewIterator()->Scan(100, small.block(), &got).code(),
            absl::StatusCode::kInvalidArgument);
}

// FinishWithoutFinalize hands the written block back for BlockManager::FinalizeBlocks; files
// read without a cache read every page from the block.
TEST_F(CFileTest, BatchedFinalizeAndUncachedReads) {
  Random rng(SeedFromEnvOrTime());
  std::vector<Column> cols;
  std::vector<std::unique_ptr<WritableBlock>> blocks;
  std::vector<BlockId> ids;
  for (int i = 0; i < 3; ++i) {
    cols.push_back(MakeColumn(DataType::kInt32, 2000, true, 3, &rng, false));
    CFileWriter w(
        Options(DataType::kInt32, EncodingType::kBitPacked, CompressionType::kZstd, true, 512),
        bm_->CreateBlock().value());
    BASALT_ASSERT_OK(w.Start());
    ColumnBlock b = *cols.back().values.buf->block();
    b.null_bitmap = cols.back().nulls.data();
    BASALT_ASSERT_OK(w.AppendBlock(b, cols.back().size()));
    ids.push_back(w.block_id());
    blocks.push_back(w.FinishWithoutFinalize().value());
  }
  std::vector<WritableBlock*> raw;
  for (auto& b : blocks) raw.push_back(b.get());
  BASALT_ASSERT_OK(bm_->FinalizeBlocks(raw));
  for (int i = 0; i < 3; ++i) {
    auto reader = OpenFile(ids[i]).value();
    ASSERT_NO_FATAL_FAILURE(ExpectScanMatches(reader.get(), cols[i], &rng));
    auto it = reader->NewIterator();
    ColumnBlockBuffer buf(DataType::kInt32, 2000, true);
    size_t got = 0;
    BASALT_ASSERT_OK(it->Scan(2000, buf.block(), &got));
    EXPECT_EQ(it->stats().pages_from_disk, static_cast<int64_t>(reader->num_pages()));
  }
}

// An I/O error while writing fails the writer cleanly, naming the file; the block is not
// finalized.
TEST_F(CFileTest, WriteErrorsAreReported) {
  Random rng(SeedFromEnvOrTime());
  for (int fail_after = 0; fail_after < 6; ++fail_after) {
    MemoryEnv base;
    FaultInjectionEnv env(&base);
    auto bm = BlockManager::Open(&env, "/faulty").value();
    env.FailAfter(fail_after, FaultInjectionEnv::OpKind::kAppend);
    auto block = bm->CreateBlock().value();
    const BlockId id = block->id();
    CFileWriter w(
        Options(DataType::kInt64, EncodingType::kPlain, CompressionType::kNone, false, 256),
        std::move(block));
    BASALT_ASSERT_OK(w.Start());
    Column col = MakeColumn(DataType::kInt64, 500, false, 0, &rng, false);
    absl::Status s = w.AppendValues(col.cell(0), nullptr, col.size());
    if (s.ok()) s = w.Finish();
    ASSERT_FALSE(s.ok()) << "fail_after " << fail_after;
    EXPECT_NE(s.message().find(id.ToString()), std::string::npos) << s;
    EXPECT_FALSE(bm->BlockExists(id));
    EXPECT_EQ(w.AppendValues(col.cell(0), nullptr, 1).code(),
              absl::StatusCode::kFailedPrecondition);
  }
}

// The container format of one tiny file, byte for byte: INT32 PLAIN NONE, nullable, rows
// {7, NULL, -1}.
TEST_F(CFileTest, GoldenBytes) {
  int32_t cells[3] = {7, 0, -1};
  uint8_t nulls = 0b010;
  CFileWriter w(Options(DataType::kInt32, EncodingType::kPlain, CompressionType::kNone, true),
                bm_->CreateBlock().value());
  BASALT_ASSERT_OK(w.Start());
  BASALT_ASSERT_OK(w.AppendValues(cells, &nulls, 3));
  const BlockId id = w.block_id();
  BASALT_ASSERT_OK(w.Finish());
  const std::string bytes = ReadAll(id);
  std::string hex;
  for (unsigned char c : bytes) absl::StrAppend(&hex, absl::Hex(c, absl::kZeroPad2));
  EXPECT_EQ(hex, kGolden) << "the column file format changed; update docs/cfile.md";
}

}  // namespace cfile_test_file
}  // namespace
}  // namespace basalt::cfile_test
