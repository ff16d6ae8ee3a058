#include "cfile/bloom_filter.h"

#include <map>
#include <string>

#include "common/coding.h"
#include "common/crc32c.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {

// An encoded INT64 key (docs/keys.md): big-endian with the sign bit flipped.
std::string Int64Key(int64_t v) {
  char buf[8];
  EncodeBigEndian64(buf, static_cast<uint64_t>(v) ^ (1ull << 63));
  return std::string(buf, 8);
}

// Builds a filter over keys [first, first + n) sized for `n` keys.
std::string BuildInt64Filter(int64_t first, int64_t n, double fpr) {
  BloomFilterBuilder builder(n, fpr);
  for (int64_t i = 0; i < n; ++i) builder.AddKey(Int64Key(first + i));
  EXPECT_EQ(builder.num_keys(), static_cast<uint64_t>(n));
  return builder.Finish();
}

TEST(BloomFilterTest, HashIsXxh64WithTheFixedSeed) {
  // Golden values from an independent (Python) transcription of XXH64 with seed
  // 0x9e3779b97f4a7c15. The hash is an on-disk contract and must never change.
  EXPECT_EQ(BloomKeyHash(""), 0xc4349fc93c010000ull);
  EXPECT_EQ(BloomKeyHash("abc"), 0x2ed0f59d6b43ac8bull);
  EXPECT_EQ(BloomKeyHash("0123456789abcdef0123456789abcdefXYZ"), 0x615da4ec6ef54fc1ull);
}

TEST(BloomFilterTest, GoldenBytes) {
  BloomFilterBuilder builder(3, 0.01);
  ASSERT_EQ(builder.num_pages(), 1u);
  builder.AddKey("a");
  builder.AddKey("b");
  builder.AddKey("c");
  const std::string bytes = builder.Finish();
  ASSERT_EQ(bytes.size(), 4096u + 4 + 24);
  // The set words (index, value), computed by the same independent Python transcription of the
  // block and bit selection (docs/cfile_blocks.md); every other word is zero.
  const std::map<int, uint32_t> expected = {
      {88, 0x00000004u},  {89, 0x00000040u},  {90, 0x00010000u},  {91, 0x00020000u},
      {92, 0x20000000u},  {93, 0x00002000u},  {94, 0x00008000u},  {95, 0x00000040u},
      {616, 0x00020000u}, {617, 0x40000000u}, {618, 0x00100000u}, {619, 0x00000080u},
      {620, 0x01000000u}, {621, 0x00000010u}, {622, 0x00000010u}, {623, 0x00000080u},
      {920, 0x00000080u}, {921, 0x01000000u}, {922, 0x00020000u}, {923, 0x01000000u},
      {924, 0x00400000u}, {925, 0x00001000u}, {926, 0x00008000u}, {927, 0x00010000u}};
  for (int w = 0; w < 1024; ++w) {
    auto it = expected.find(w);
    EXPECT_EQ(DecodeFixed32(bytes.data() + 4 * w), it == expected.end() ? 0 : it->second) << w;
  }
  const std::string_view trailer = std::string_view(bytes).substr(4100);
  EXPECT_EQ(DecodeFixed64(trailer.data()), 3u);      // num_keys
  EXPECT_EQ(DecodeFixed32(trailer.data() + 8), 1u);  // num_pages
  EXPECT_EQ(trailer.substr(12, 4), std::string_view("\x01\x01\x00\x00", 4));
  EXPECT_EQ(trailer.substr(20), "BSBF");
  EXPECT_EQ(crc32c::Unmask(DecodeFixed32(bytes.data() + 4096)), crc32c::Value(bytes.data(), 4096));
  // Pins the whole encoding (hash, salts, block choice): a change here is a format change.
  EXPECT_EQ(crc32c::Value(bytes), 0x43e9abfau);
}

TEST(BloomFilterTest, SizingMeetsTheTarget) {
  EXPECT_EQ(BloomFilterBuilder::NumPagesFor(0, 0.0001), 1u);
  EXPECT_EQ(BloomFilterBuilder::NumPagesFor(1, 0.0001), 1u);
  uint32_t last = 0;
  for (uint64_t n : {1000, 10000, 100000, 1000000, 10000000}) {
    const uint32_t pages = BloomFilterBuilder::NumPagesFor(n, 0.0001);
    EXPECT_GE(pages, last);
    last = pages;
    EXPECT_LE(BloomFilterBuilder::ExpectedFpr(n, pages), 0.0001) << n;
    if (n >= 100000) {
      const double bits_per_key = pages * 4096.0 * 8 / n;
      EXPECT_GT(bits_per_key, 24);
      EXPECT_LT(bits_per_key, 28);
    }
  }
  EXPECT_LT(BloomFilterBuilder::NumPagesFor(1000000, 0.01),
            BloomFilterBuilder::NumPagesFor(1000000, 0.0001));
  EXPECT_EQ(BloomFilterBuilder::NumPagesFor(1ull << 40, 0.0001), kMaxBloomPages);
}

// Measures the false-positive rate on 1M absent keys and checks there is no false negative.
void MeasureFpr(int64_t num_keys, double fpr) {
  SCOPED_TRACE(testing::Message() << "keys=" << num_keys << " fpr=" << fpr);
  Random rng(SeedFromEnvOrTime());
  const int64_t first = static_cast<int64_t>(rng.Next64() >> 2);
  auto filter = BloomFilter::Parse(BuildInt64Filter(first, num_keys, fpr), "test");
  BASALT_ASSERT_OK(filter);
  for (int64_t i = 0; i < num_keys; ++i) {
    ASSERT_TRUE(filter->MayContain(Int64Key(first + i))) << "false negative for " << first + i;
  }
  constexpr int kProbes = 1000000;
  int false_positives = 0;
  for (int i = 0; i < kProbes; ++i) {
    // Keys just above the inserted range: absent, and as structured as the present ones.
    false_positives += filter->MayContain(Int64Key(first + num_keys + i));
  }
  const double measured = static_cast<double>(false_positives) / kProbes;
  LOG(INFO) << "bloom: " << num_keys << " keys, " << filter->layout().num_pages()
            << " pages, target fpr " << fpr << ", measured " << measured;
  EXPECT_LE(measured, 2 * fpr);
  EXPECT_GE(measured, fpr / 4);  // Not absurdly oversized either.
}

TEST(BloomFilterTest, FalsePositiveRateOnOneMillionAbsentKeys) {
  MeasureFpr(1000000, 0.0001);
  MeasureFpr(100000, 0.01);
}

TEST(BloomFilterTest, PagedProbesMatchTheInMemoryFilter) {
  Random rng(SeedFromEnvOrTime());
  const std::string bytes = BuildInt64Filter(0, 20000, 0.001);
  auto filter = *BloomFilter::Parse(bytes, "test");
  const std::string_view all(bytes);
  auto num_pages = BloomFilterLayout::ParseNumPages(all.substr(all.size() - kBloomTrailerSize),
                                                    all.size(), "paged");
  BASALT_ASSERT_OK(num_pages);
  EXPECT_GT(*num_pages, 1u);
  auto layout = BloomFilterLayout::Parse(
      all.substr(all.size() - BloomFilterLayout::TailSize(*num_pages)), all.size(), "paged");
  BASALT_ASSERT_OK(layout);
  EXPECT_EQ(layout->num_keys(), 20000u);
  std::vector<int> pages_hit(*num_pages);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t hash = BloomKeyHash(Int64Key(static_cast<int64_t>(rng.Uniform(40000))));
    const uint32_t page = layout->PageForHash(hash);
    ASSERT_LT(page, *num_pages);
    ++pages_hit[page];
    const std::string_view page_bytes =
        all.substr(BloomFilterLayout::PageOffset(page), kBloomPageSize);
    BASALT_ASSERT_OK(layout->VerifyPage(page, page_bytes));
    EXPECT_EQ(layout->PageMayContain(page_bytes, hash), filter.MayContainHash(hash));
  }
  for (int hits : pages_hit) EXPECT_GT(hits, 0);  // Probes spread over every page.
  EXPECT_EQ(layout->VerifyPage(0, all.substr(4096, 4096)).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(layout->VerifyPage(0, all.substr(0, 100)).code(), absl::StatusCode::kDataLoss);
}

TEST(BloomFilterTest, MoreKeysThanExpectedStillHasNoFalseNegatives) {
  BloomFilterBuilder builder(10);
  for (int i = 0; i < 50000; ++i) builder.AddKey(Int64Key(i));
  auto filter = *BloomFilter::Parse(builder.Finish(), "test");
  for (int i = 0; i < 50000; ++i) ASSERT_TRUE(filter.MayContain(Int64Key(i))) << i;
}

TEST(BloomFilterTest, CorruptionIsDataLossNamingTheFilter) {
  Random rng(SeedFromEnvOrTime());
  const std::string good = BuildInt64Filter(0, 5000, 0.0001);
  BASALT_ASSERT_OK(BloomFilter::Parse(good, "f"));
  auto expect_corrupt = [](std::string bad, std::string_view what) {
    auto parsed = BloomFilter::Parse(std::move(bad), "block 00ab bloom");
    ASSERT_FALSE(parsed.ok()) << what;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss) << what;
    EXPECT_NE(parsed.status().message().find("block 00ab bloom"), absl::string_view::npos)
        << parsed.status();
  };
  const size_t pages_end =
      good.size() - BloomFilterLayout::TailSize(DecodeFixed32(good.data() + good.size() - 16));
  // Every byte of the tail, and a sample of page bytes, flipped and zeroed.
  for (size_t i = 0; i < good.size(); i += (i >= pages_end ? 1 : 1 + rng.Uniform(200))) {
    std::string bad = good;
    bad[i] ^= static_cast<char>(1 << rng.Uniform(8));
    expect_corrupt(bad, StrCat("flip ", i));
    if (good[i] != 0) {
      bad = good;
      bad[i] = 0;
      expect_corrupt(bad, StrCat("zero ", i));
    }
  }
  for (size_t len = 0; len < good.size(); len += 1 + rng.Uniform(300)) {
    expect_corrupt(good.substr(0, len), StrCat("truncate ", len));
  }
  expect_corrupt(good.substr(1), "drop first byte");
  expect_corrupt(good + "x", "extra byte");
  expect_corrupt(std::string(good.size(), '\0'), "zeros");
}

}  // namespace
}  // namespace basalt
