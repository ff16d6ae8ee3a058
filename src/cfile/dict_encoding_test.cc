#include "cfile/dict_encoding.h"

#include <string>
#include <vector>

#include "cfile/encoding_test_util.h"
#include "common/column_predicate.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace dict_encoding_test_file {

std::vector<std::string> LowCardinality(size_t n, Random* rng) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; i++) out.push_back("v" + std::to_string(rng->Skewed(7)));
  return out;
}

TEST(DictEncodingTest, PredicateOnCodesEqualsPredicateOnValues) {
  Random rng(SeedFromEnvOrTime());
  const size_t n = 5000;
  encoding_test::Values v(DataType::kString, n);
  v.strings = LowCardinality(n, &rng);
  for (size_t i = 0; i < n; i++) v.buf->block()->data<std::string_view>()[i] = v.strings[i];
  encoding_test::EncodedPages pages = encoding_test::Encode(v, EncodingType::kDict, 512, &rng);
  ASSERT_GT(pages.pages.size(), 1u);
  auto decoder = encoding_test::MakeDecoder(DataType::kString, EncodingType::kDict, pages);
  const ColumnSchema col("s", DataType::kString);
  std::vector<ColumnPredicate> preds = {
      *ColumnPredicate::Equality(col, Datum::String("v3")),
      *ColumnPredicate::Range(col, Datum::String("v1"), Datum::String("v5")),
      *ColumnPredicate::InList(
          col, {Datum::String("v0"), Datum::String("v12"), Datum::String("absent")}),
      *ColumnPredicate::Equality(col, Datum::String("absent")),
      ColumnPredicate::IsNotNull(col),
      ColumnPredicate::IsNull(col),
  };
  for (const ColumnPredicate& pred : preds) {
    SCOPED_TRACE(pred.ToString());
    auto prepared = decoder->PreparePredicate(pred);
    BASALT_ASSERT_OK(prepared);
    // Evaluate page by page at an unaligned offset, with random batch sizes.
    const size_t offset = rng.Uniform(9);
    std::vector<uint8_t> on_codes(BitmapSize(n + offset) + 8, 0xff);
    size_t at = offset;
    for (const std::string& page : pages.pages) {
      BASALT_ASSERT_OK(decoder->Init(page));
      ASSERT_TRUE(decoder->CanEvaluateOnEncoded());
      while (decoder->position() < decoder->count()) {
        auto k = decoder->EvaluatePredicate(**prepared, 1 + rng.Skewed(11), on_codes.data(), at);
        BASALT_ASSERT_OK(k);
        at += *k;
      }
    }
    ASSERT_EQ(at, n + offset);
    std::vector<uint8_t> on_values(BitmapSize(n) + 8, 0xff);
    pred.EvaluateVector(v.block().cells, nullptr, n, on_values.data());
    size_t matches = 0;
    for (size_t i = 0; i < n; i++) {
      ASSERT_EQ(BitmapTest(on_codes.data(), offset + i), BitmapTest(on_values.data(), i)) << i;
      matches += BitmapTest(on_values.data(), i);
    }
    for (size_t i = 0; i < offset; i++) EXPECT_TRUE(BitmapTest(on_codes.data(), i));
    if (pred.kind() == PredicateKind::kEquality && pred.lower()->ToString() == "\"v3\"") {
      EXPECT_GT(matches, 0u);
    }
  }
}

TEST(DictEncodingTest, FallsBackToPlainWhenDictionaryIsFull) {
  Random rng(SeedFromEnvOrTime());
  const size_t n = 3000;
  encoding_test::Values v = encoding_test::RandomValues(DataType::kBinary, n, &rng, false);
  // Distinct values: the 2 KiB dictionary fills after a few dozen values.
  for (size_t i = 0; i < n; i++) {
    v.strings[i] = "unique-" + std::to_string(i);
    v.buf->block()->data<std::string_view>()[i] = v.strings[i];
  }
  encoding_test::EncodedPages pages =
      encoding_test::Encode(v, EncodingType::kDict, 4096, &rng, /*dict_max_bytes=*/2048);
  ASSERT_GT(pages.pages.size(), 2u);
  EXPECT_EQ(pages.pages[0][0], 0) << "first page uses the dictionary";
  EXPECT_LE(pages.dictionary.size(), 2048u + 4 + 16);
  auto decoder = encoding_test::MakeDecoder(DataType::kBinary, EncodingType::kDict, pages);
  size_t at = 0;
  ColumnBlockBuffer out(DataType::kBinary, n, false);
  for (size_t p = 0; p < pages.pages.size(); p++) {
    EXPECT_EQ(pages.pages[p][0], p == 0 ? 0 : 1) << "page " << p;
    BASALT_ASSERT_OK(decoder->Init(pages.pages[p]));
    EXPECT_EQ(decoder->CanEvaluateOnEncoded(), p == 0);
    at += *decoder->DecodeNext(n, out.block(), at);
  }
  ASSERT_EQ(at, n);
  for (size_t i = 0; i < n; i++) {
    ASSERT_EQ(out.block()->data<std::string_view>()[i], v.strings[i]);
  }
}

TEST(DictEncodingTest, CodesPastTheDictionaryAreDataLoss) {
  Random rng(SeedFromEnvOrTime());
  encoding_test::Values v(DataType::kString, 300);
  v.strings = LowCardinality(300, &rng);
  for (size_t i = 0; i < 300; i++) v.buf->block()->data<std::string_view>()[i] = v.strings[i];
  encoding_test::EncodedPages pages = encoding_test::Encode(v, EncodingType::kDict, 1 << 20, &rng);
  // A dictionary with only one entry: most codes are out of range.
  DictionaryBuilder small;
  small.Add("only");
  auto dict = Dictionary::Parse(small.FinishDictionary()).value();
  auto decoder = CreatePageDecoder(DataType::kString, EncodingType::kDict, {dict.get()}).value();
  BASALT_ASSERT_OK(decoder->Init(pages.pages[0]));
  ColumnBlockBuffer out(DataType::kString, 300, false);
  auto s = decoder->DecodeNext(300, out.block(), 0);
  EXPECT_TRUE(absl::IsDataLoss(s.status())) << s.status();
  EXPECT_TRUE(absl::IsDataLoss(Dictionary::Parse("\x05\x00").status()));
}

TEST(DictEncodingTest, BuilderAssignsCodesInOrderOfFirstAppearance) {
  DictionaryBuilder b(100);
  EXPECT_EQ(b.Add("x"), 0u);
  EXPECT_EQ(b.Add("y"), 1u);
  EXPECT_EQ(b.Add("x"), 0u);
  EXPECT_EQ(b.Add(""), 2u);
  EXPECT_EQ(b.num_entries(), 3u);
  EXPECT_EQ(b.size_bytes(), 4u + 12 + 2);
  EXPECT_FALSE(b.IsFull());
  b.Add(std::string(100, 'z'));
  EXPECT_TRUE(b.IsFull());
  EXPECT_EQ(b.FinishDictionary().size(), b.size_bytes());
}

}  // namespace dict_encoding_test_file
}  // namespace
}  // namespace basalt
