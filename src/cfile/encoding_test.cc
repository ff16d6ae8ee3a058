// Round-trip, positional decoding, seek and corruption tests for every allowed (type, encoding).

#include "cfile/encoding.h"

#include <string>
#include <vector>

#include "cfile/encoding_test_util.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace encoding_test_file {

using encoding_test::AllEncodings;
using encoding_test::AllTypes;
using encoding_test::CellsEqual;
using encoding_test::CellString;
using encoding_test::EncodedPages;
using encoding_test::Values;

struct Pair {
  DataType type;
  EncodingType encoding;
};

std::vector<Pair> AllowedPairs() {
  std::vector<Pair> out;
  for (DataType t : AllTypes()) {
    for (EncodingType e : AllEncodings()) {
      if (IsEncodingAllowed(t, e)) out.push_back({t, e});
    }
  }
  return out;
}

std::string Name(const Pair& p) {
  return StrCat(DataTypeName(p.type), "/", EncodingTypeName(p.encoding));
}

// Decodes every page with random batch sizes into one block and compares with `values`.
void DecodeAllAndCompare(const Values& values, EncodingType enc, const EncodedPages& pages,
                         Random* rng) {
  auto decoder = encoding_test::MakeDecoder(values.type, enc, pages);
  ColumnBlockBuffer out(values.type, values.size(), false);
  size_t at = 0;
  for (size_t p = 0; p < pages.pages.size(); p++) {
    BASALT_ASSERT_OK(decoder->Init(pages.pages[p])) << "page " << p;
    ASSERT_EQ(decoder->count(), pages.counts[p]);
    while (decoder->position() < decoder->count()) {
      const size_t batch = 1 + rng->Skewed(9);
      auto n = decoder->DecodeNext(batch, out.block(), at);
      BASALT_ASSERT_OK(n);
      ASSERT_EQ(*n, std::min(batch, pages.counts[p] - (decoder->position() - *n)));
      at += *n;
    }
    auto none = decoder->DecodeNext(10, out.block(), at);
    BASALT_ASSERT_OK(none);
    EXPECT_EQ(*none, 0u);
  }
  ASSERT_EQ(at, values.size());
  for (size_t i = 0; i < values.size(); i++) {
    ASSERT_TRUE(CellsEqual(values.block(), i, out.block_ref(), i))
        << "value " << i << ": want " << CellString(values.block(), i) << " got "
        << CellString(out.block_ref(), i);
  }
}

class EncodingRoundTripTest : public ::testing::TestWithParam<Pair> {
 protected:
  void RoundTrip(size_t n, size_t page_size, bool extremes) {
    Random rng(seed_);
    Values v = encoding_test::RandomValues(GetParam().type, n, &rng, extremes);
    EncodedPages pages = encoding_test::Encode(v, GetParam().encoding, page_size, &rng);
    DecodeAllAndCompare(v, GetParam().encoding, pages, &rng);
  }
  const uint64_t seed_ = SeedFromEnvOrTime();
};

TEST_P(EncodingRoundTripTest, EmptyPage) { RoundTrip(0, kDefaultPageSizeBytes, false); }
TEST_P(EncodingRoundTripTest, OneValue) { RoundTrip(1, kDefaultPageSizeBytes, false); }
TEST_P(EncodingRoundTripTest, ManyValuesOnePage) { RoundTrip(3001, kDefaultPageSizeBytes, false); }
TEST_P(EncodingRoundTripTest, ManyPages) {
  Random rng(seed_);
  Values v = encoding_test::RandomValues(GetParam().type, 20000, &rng, false);
  EncodedPages pages = encoding_test::Encode(v, GetParam().encoding, 1024, &rng);
  EXPECT_GT(pages.pages.size(), 1u);
  // Pages end near the target; bit-packed pages may also stop one worst-case block early.
  for (const std::string& p : pages.pages) EXPECT_LT(p.size(), 1024u + 2 * kMaxCellBytes + 2100);
  DecodeAllAndCompare(v, GetParam().encoding, pages, &rng);
}
TEST_P(EncodingRoundTripTest, Extremes) { RoundTrip(700, 4096, true); }
TEST_P(EncodingRoundTripTest, TinyPages) { RoundTrip(300, 1, false); }

TEST_P(EncodingRoundTripTest, DecodeFromArbitraryPositions) {
  Random rng(seed_);
  Values v = encoding_test::RandomValues(GetParam().type, 2000, &rng, false);
  EncodedPages pages = encoding_test::Encode(v, GetParam().encoding, kDefaultPageSizeBytes, &rng);
  ASSERT_EQ(pages.pages.size(), 1u);
  auto decoder = encoding_test::MakeDecoder(v.type, GetParam().encoding, pages);
  BASALT_ASSERT_OK(decoder->Init(pages.pages[0]));
  ColumnBlockBuffer out(v.type, 300, false);
  for (int iter = 0; iter < 200; iter++) {
    const size_t pos = rng.Uniform(v.size() + 1);
    const size_t n = rng.Uniform(300);
    decoder->SeekToPositionInPage(pos);
    ASSERT_EQ(decoder->position(), pos);
    auto got = decoder->DecodeNext(n, out.block(), 0);
    BASALT_ASSERT_OK(got);
    ASSERT_EQ(*got, std::min(n, v.size() - pos));
    for (size_t j = 0; j < *got; j++) {
      ASSERT_TRUE(CellsEqual(v.block(), pos + j, out.block_ref(), j)) << pos << "+" << j;
    }
  }
}

TEST_P(EncodingRoundTripTest, SeekAtOrAfterValue) {
  Random rng(seed_);
  Values sorted = encoding_test::SortedCopy(
      encoding_test::RandomValues(GetParam().type, 1500, &rng, /*extremes=*/true));
  EncodedPages pages = encoding_test::Encode(sorted, GetParam().encoding, size_t{1} << 30, &rng,
                                             /*dict_max_bytes=*/size_t{1} << 30);
  ASSERT_EQ(pages.pages.size(), 1u);
  auto decoder = encoding_test::MakeDecoder(sorted.type, GetParam().encoding, pages);
  BASALT_ASSERT_OK(decoder->Init(pages.pages[0]));
  const TypeInfo& ti = GetTypeInfo(sorted.type);
  Values probes = encoding_test::RandomValues(GetParam().type, 300, &rng, true);
  ColumnBlockBuffer out(sorted.type, 1, false);
  for (size_t k = 0; k < 600; k++) {
    // Half the probes are values in the page, half arbitrary values.
    const void* probe =
        k % 2 == 0 ? sorted.block().cell(rng.Uniform(sorted.size())) : probes.block().cell(k / 2);
    size_t want = 0;
    while (want < sorted.size() && ti.Compare(sorted.block().cell(want), probe) < 0) want++;
    bool exact = true;
    absl::Status s = decoder->SeekAtOrAfterValue(probe, &exact);
    if (want == sorted.size()) {
      EXPECT_TRUE(absl::IsNotFound(s)) << s;
      EXPECT_FALSE(exact);
      EXPECT_EQ(decoder->position(), sorted.size());
      continue;
    }
    BASALT_ASSERT_OK(s);
    ASSERT_EQ(decoder->position(), want);
    EXPECT_EQ(exact, ti.Compare(sorted.block().cell(want), probe) == 0);
    ASSERT_EQ(*decoder->DecodeNext(1, out.block(), 0), 1u);
    EXPECT_TRUE(CellsEqual(sorted.block(), want, out.block_ref(), 0));
  }
}

// Flips, zeroes and truncates bytes of an encoded page at many positions: Init or decoding
// returns DATA_LOSS, or decodes values, but never crashes or reads out of bounds (run under the
// sanitizer build to check the latter).
TEST_P(EncodingRoundTripTest, Corruption) {
  Random rng(seed_);
  Values v = encoding_test::RandomValues(GetParam().type, 600, &rng, false);
  EncodedPages pages = encoding_test::Encode(v, GetParam().encoding, kDefaultPageSizeBytes, &rng);
  ASSERT_EQ(pages.pages.size(), 1u);
  auto decoder = encoding_test::MakeDecoder(v.type, GetParam().encoding, pages);
  const std::string& good = pages.pages[0];
  ColumnBlockBuffer out(v.type, kMaxValuesPerPage, false);
  size_t errors = 0;
  auto exercise = [&](const std::string& page) {
    // A private copy so ASan catches any read past the end.
    std::unique_ptr<char[]> copy(new char[page.size()]);
    std::memcpy(copy.get(), page.data(), page.size());
    absl::Status s = decoder->Init(std::string_view(copy.get(), page.size()));
    if (!s.ok()) {
      EXPECT_TRUE(absl::IsDataLoss(s)) << s;
      errors++;
      return;
    }
    out.arena()->Reset();
    size_t at = 0;
    while (decoder->position() < decoder->count()) {
      auto n = decoder->DecodeNext(1 + rng.Uniform(200), out.block(), at);
      if (!n.ok()) {
        EXPECT_TRUE(absl::IsDataLoss(n.status())) << n.status();
        errors++;
        return;
      }
      at += *n;
    }
    bool exact;
    decoder->SeekToPositionInPage(rng.Uniform(decoder->count() + 1));
    absl::Status seek = decoder->SeekAtOrAfterValue(v.block().cell(0), &exact);
    EXPECT_TRUE(seek.ok() || absl::IsNotFound(seek) || absl::IsDataLoss(seek)) << seek;
  };
  std::vector<size_t> positions;
  for (size_t i = 0; i < std::min<size_t>(good.size(), 64); i++) positions.push_back(i);
  for (int i = 0; i < 100; i++) positions.push_back(rng.Uniform(good.size()));
  for (size_t pos : positions) {
    std::string flipped = good;
    flipped[pos] = static_cast<char>(flipped[pos] ^ (1 << rng.Uniform(8)));
    exercise(flipped);
    std::string zeroed = good;
    zeroed[pos] = 0;
    exercise(zeroed);
    std::string ff = good;
    ff[pos] = static_cast<char>(0xff);
    exercise(ff);
    exercise(good.substr(0, pos));
  }
  // Truncating at every position below the header must be caught.
  EXPECT_GT(errors, 0u);
  exercise(good);
}

INSTANTIATE_TEST_SUITE_P(AllPairs, EncodingRoundTripTest, ::testing::ValuesIn(AllowedPairs()),
                         [](const ::testing::TestParamInfo<Pair>& info) {
                           std::string n = Name(info.param);
                           for (char& c : n) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

TEST(EncodingTest, ResolveEncodingDefaults) {
  EXPECT_EQ(*ResolveEncoding(DataType::kInt32, EncodingType::kAuto), EncodingType::kBitPacked);
  EXPECT_EQ(*ResolveEncoding(DataType::kDate, EncodingType::kAuto), EncodingType::kBitPacked);
  EXPECT_EQ(*ResolveEncoding(DataType::kUnixtimeMicros, EncodingType::kAuto),
            EncodingType::kBitPacked);
  EXPECT_EQ(*ResolveEncoding(DataType::kDecimal64, EncodingType::kAuto), EncodingType::kBitPacked);
  EXPECT_EQ(*ResolveEncoding(DataType::kDouble, EncodingType::kAuto), EncodingType::kBitShuffle);
  EXPECT_EQ(*ResolveEncoding(DataType::kFloat, EncodingType::kAuto), EncodingType::kBitShuffle);
  EXPECT_EQ(*ResolveEncoding(DataType::kBool, EncodingType::kAuto), EncodingType::kRle);
  EXPECT_EQ(*ResolveEncoding(DataType::kVarchar, EncodingType::kAuto), EncodingType::kDict);
  EXPECT_EQ(*ResolveEncoding(DataType::kBinary, EncodingType::kAuto), EncodingType::kDict);
  EXPECT_EQ(*ResolveEncoding(DataType::kDecimal128, EncodingType::kAuto), EncodingType::kPlain);
  EXPECT_EQ(*ResolveEncoding(DataType::kString, EncodingType::kPrefix), EncodingType::kPrefix);
  // Every type's default is allowed for it.
  for (DataType t : AllTypes()) EXPECT_TRUE(IsEncodingAllowed(t, DefaultEncoding(t)));
}

TEST(EncodingTest, DisallowedPairsAreRejected) {
  auto s = ResolveEncoding(DataType::kString, EncodingType::kBitPacked);
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
  EXPECT_NE(s.status().message().find("BIT_PACKED cannot store STRING"), std::string::npos)
      << s.status();
  EXPECT_NE(s.status().message().find("allowed: PLAIN, DICT, PREFIX"), std::string::npos)
      << s.status();
  EXPECT_FALSE(IsEncodingAllowed(DataType::kDouble, EncodingType::kBitPacked));
  EXPECT_FALSE(IsEncodingAllowed(DataType::kInt32, EncodingType::kRle));
  EXPECT_FALSE(IsEncodingAllowed(DataType::kBool, EncodingType::kBitShuffle));
  EXPECT_FALSE(IsEncodingAllowed(DataType::kDecimal128, EncodingType::kBitPacked));
  EXPECT_FALSE(IsEncodingAllowed(DataType::kInt64, EncodingType::kDict));
  EXPECT_TRUE(absl::IsInvalidArgument(
      CreatePageBuilder(DataType::kFloat, EncodingType::kRle, {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      CreatePageDecoder(DataType::kString, EncodingType::kDict, {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      CreatePageBuilder(DataType::kString, EncodingType::kDict, {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      CreatePageBuilder(DataType::kInt32, EncodingType::kAuto, {}).status()));
}

TEST(EncodingTest, PagesEndAtMaxValuesPerPage) {
  // Constant bools compress to nothing: the value cap ends the page.
  auto builder = *CreatePageBuilder(DataType::kBool, EncodingType::kRle, {});
  std::vector<uint8_t> ones(kMaxValuesPerPage + 10, 1);
  EXPECT_EQ(builder->Add(ones.data(), ones.size()), kMaxValuesPerPage);
  EXPECT_TRUE(builder->IsFull());
  EXPECT_EQ(builder->Add(ones.data(), 1), 0u);
  EXPECT_LT(builder->Finish().size(), 16u);
}

}  // namespace encoding_test_file
}  // namespace
}  // namespace basalt
