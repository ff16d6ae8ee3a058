#include "cfile/bloom_filter.h"

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/coding.h"
#include "common/crc32c.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace bloom_filter_test_file {

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
  auto filter = BloomFilter::Parse(bytes, "golden");
  BASALT_ASSERT_OK(filter);
  EXPECT_EQ(filter->kind(), KeyFilterKind::kBloom);
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

// Flips and zeroes every byte of the tail of `good` (a valid filter of either kind) and a sample
// of its page bytes, and truncates it at random lengths: each must be DATA_LOSS naming the filter.
void ExpectEveryCorruptionIsDataLoss(const std::string& good, Random& rng) {
  BASALT_ASSERT_OK(BloomFilter::Parse(good, "f"));
  auto expect_corrupt = [](std::string bad, std::string_view what) {
    auto parsed = BloomFilter::Parse(std::move(bad), "block 00ab bloom");
    ASSERT_FALSE(parsed.ok()) << what;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss)
        << what << ": " << parsed.status();
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

TEST(BloomFilterTest, CorruptionIsDataLossNamingTheFilter) {
  Random rng(SeedFromEnvOrTime());
  ExpectEveryCorruptionIsDataLoss(BuildInt64Filter(0, 5000, 0.0001), rng);
}

// ---- Key bitmaps (KeyFilterKind::kKeyBitmap) ----------------------------------------------------

// Parses the tail of `bytes` as a paged reader does (trailer, then tail), without the pages.
absl::StatusOr<BloomFilterLayout> ParseTail(std::string_view bytes, std::string_view context) {
  if (bytes.size() < kBloomTrailerSize) return absl::DataLossError("short");
  auto num_pages = BloomFilterLayout::ParseNumPages(bytes.substr(bytes.size() - kBloomTrailerSize),
                                                    bytes.size(), context);
  if (!num_pages.ok()) return num_pages.status();
  return BloomFilterLayout::Parse(
      bytes.substr(bytes.size() - BloomFilterLayout::TailSize(*num_pages)), bytes.size(), context);
}

// Rewrites the trailer CRC of `filter` so that an edit of the trailer fields passes the checksum
// and reaches the field checks.
void ResealTrailer(std::string* filter) {
  const uint32_t pages = DecodeFixed32(filter->data() + filter->size() - 16);
  const size_t tail_start = filter->size() - BloomFilterLayout::TailSize(pages);
  const size_t covered = filter->size() - 8 - tail_start;
  EncodeFixed32(filter->data() + filter->size() - 8,
                crc32c::Mask(crc32c::Value(filter->data() + tail_start, covered)));
}

TEST(KeyBitmapTest, GoldenBytes) {
  KeyBitmapBuilder builder(40000);
  ASSERT_EQ(builder.num_pages(), 2u);
  for (uint64_t offset : {0, 9, 32767, 32768, 39999, 9}) builder.Add(offset);
  EXPECT_EQ(builder.num_keys(), 5u);  // 9 twice is one key.
  const std::string bytes = builder.Finish();
  ASSERT_EQ(bytes.size(), 2 * 4096u + 2 * 4 + 24);
  // Bit i is byte i / 8, bit i % 8 (LSB first); every other byte is zero.
  const std::map<size_t, uint8_t> expected = {
      {0, 0x01}, {1, 0x02}, {4095, 0x80}, {4096, 0x01}, {4096 + 903, 0x80}};
  for (size_t i = 0; i < 8192; ++i) {
    auto it = expected.find(i);
    EXPECT_EQ(static_cast<uint8_t>(bytes[i]), it == expected.end() ? 0 : it->second) << i;
  }
  const std::string_view trailer = std::string_view(bytes).substr(8192 + 8);
  EXPECT_EQ(DecodeFixed64(trailer.data()), 5u);                               // num_keys
  EXPECT_EQ(DecodeFixed32(trailer.data() + 8), 2u);                           // num_pages
  EXPECT_EQ(trailer.substr(12, 4), std::string_view("\x01\x02\x00\x00", 4));  // version, kind
  EXPECT_EQ(trailer.substr(20), "BSBF");
  // Values from an independent Python transcription of the layout (bitwise CRC32C, LevelDB mask).
  EXPECT_EQ(crc32c::Unmask(DecodeFixed32(bytes.data() + 8192)), 0x825314cdu);
  EXPECT_EQ(crc32c::Unmask(DecodeFixed32(bytes.data() + 8196)), 0x267eb4f7u);
  EXPECT_EQ(crc32c::Value(bytes), 0x75d50152u);
  auto filter = BloomFilter::Parse(bytes, "golden");
  BASALT_ASSERT_OK(filter);
  EXPECT_EQ(filter->kind(), KeyFilterKind::kKeyBitmap);
  EXPECT_EQ(filter->layout().num_bits(), 65536u);
  EXPECT_EQ(filter->layout().num_keys(), 5u);
}

TEST(KeyBitmapTest, NumPagesForBoundaries) {
  EXPECT_EQ(KeyBitmapBuilder::NumPagesFor(0), 1u);
  EXPECT_EQ(KeyBitmapBuilder::NumPagesFor(1), 1u);
  EXPECT_EQ(KeyBitmapBuilder::NumPagesFor(8 * 4096), 1u);
  EXPECT_EQ(KeyBitmapBuilder::NumPagesFor(8 * 4096 + 1), 2u);
  EXPECT_EQ(KeyBitmapBuilder::NumPagesFor(uint64_t{kMaxBloomPages} * 8 * 4096), kMaxBloomPages);
  EXPECT_EQ(KeyBitmapBuilder::NumPagesFor(uint64_t{kMaxBloomPages} * 8 * 4096 + 1),
            kMaxBloomPages + 1);
  // Saturates rather than wrapping to a small count.
  EXPECT_EQ(KeyBitmapBuilder::NumPagesFor(~uint64_t{0}), std::numeric_limits<uint32_t>::max());

  KeyBitmapBuilder empty(0);
  EXPECT_EQ(empty.num_pages(), 1u);
  const std::string bytes = empty.Finish();
  EXPECT_EQ(bytes.size(), 4096u + 4 + 24);
  auto filter = BloomFilter::Parse(bytes, "empty");
  BASALT_ASSERT_OK(filter);
  EXPECT_EQ(filter->layout().num_keys(), 0u);
  for (uint64_t i = 0; i < filter->layout().num_bits(); ++i) ASSERT_FALSE(filter->HasOffset(i));
}

TEST(KeyBitmapTest, DenseKeysCostFarLessThanTheBloomFilter) {
  // A hash-partitioned sequential key: every 4th integer of a 4M range, 4 bits per key.
  constexpr uint64_t kKeys = 1000000;
  const uint32_t bitmap_pages = KeyBitmapBuilder::NumPagesFor(4 * kKeys);
  const uint32_t bloom_pages = BloomFilterBuilder::NumPagesFor(kKeys, 0.001);
  EXPECT_EQ(bitmap_pages, 123u);             // ceil(4e6 / 32768)
  EXPECT_LT(bitmap_pages * 4, bloom_pages);  // Bloom: about 17 bits per key.
}

TEST(KeyBitmapTest, RoundTripRandomOffsets) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937_64 gen(seed);
  for (uint64_t num_bits : {1, 7, 8, 9, 32768, 32769, 100003}) {
    SCOPED_TRACE(testing::Message() << "num_bits=" << num_bits);
    std::uniform_int_distribution<uint64_t> pick(0, num_bits - 1);
    KeyBitmapBuilder builder(num_bits);
    std::set<uint64_t> added;
    // About a quarter of the range, with repeats: a repeat must not count as a key.
    for (uint64_t i = 0; i < num_bits / 4 + 2; ++i) {
      const uint64_t offset = pick(gen);
      builder.Add(offset);
      added.insert(offset);
    }
    EXPECT_EQ(builder.num_keys(), added.size());
    const std::string bytes = builder.Finish();

    auto filter = BloomFilter::Parse(bytes, "whole");
    BASALT_ASSERT_OK(filter);
    ASSERT_EQ(filter->kind(), KeyFilterKind::kKeyBitmap);
    EXPECT_EQ(filter->layout().num_keys(), added.size());
    auto layout = ParseTail(bytes, "paged");
    BASALT_ASSERT_OK(layout);
    ASSERT_EQ(layout->kind(), KeyFilterKind::kKeyBitmap);
    EXPECT_EQ(layout->num_keys(), added.size());
    ASSERT_EQ(layout->num_bits(), uint64_t{layout->num_pages()} * 8 * 4096);
    ASSERT_GE(layout->num_bits(), num_bits);

    // Exact: every offset of the whole bitmap, including the padding past num_bits, is present
    // iff it was added.
    const std::string_view all(bytes);
    for (uint64_t offset = 0; offset < layout->num_bits(); ++offset) {
      const bool want = added.count(offset) > 0;
      const uint32_t page = layout->PageForOffset(offset);
      ASSERT_EQ(page, offset / (8 * 4096));
      const std::string_view page_bytes =
          all.substr(BloomFilterLayout::PageOffset(page), kBloomPageSize);
      if (offset % (8 * 4096) == 0) {
        BASALT_ASSERT_OK(layout->VerifyPage(page, page_bytes));
      }
      ASSERT_EQ(layout->PageHasOffset(page_bytes, offset), want) << offset;
      ASSERT_EQ(filter->HasOffset(offset), want) << offset;
    }
  }
}

TEST(KeyBitmapTest, CorruptionIsDataLossNamingTheFilter) {
  Random rng(SeedFromEnvOrTime());
  KeyBitmapBuilder builder(50000);
  for (uint64_t i = 0; i < 50000; i += 4) builder.Add(i);
  const std::string good = builder.Finish();
  ExpectEveryCorruptionIsDataLoss(good, rng);

  auto layout = ParseTail(good, "f");
  BASALT_ASSERT_OK(layout);
  const size_t trailer = good.size() - kBloomTrailerSize;
  auto expect_data_loss = [](const absl::Status& s, const std::string& message) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find(message), absl::string_view::npos) << s;
  };

  // A flipped bit in a page: caught by the page's CRC (it would be a false negative or positive).
  std::string flipped = good;
  flipped[4096 + 17] ^= 0x10;
  expect_data_loss(layout->VerifyPage(1, std::string_view(flipped).substr(4096, kBloomPageSize)),
                   "page 1: checksum mismatch");

  // An unknown kind, even with a valid trailer CRC.
  std::string kind3 = good;
  kind3[trailer + 13] = 3;
  ResealTrailer(&kind3);
  expect_data_loss(
      BloomFilterLayout::ParseNumPages(std::string_view(kind3).substr(trailer), kind3.size(), "k3")
          .status(),
      "filter kind 3");
  expect_data_loss(BloomFilter::Parse(kind3, "k3").status(), "k3: corrupt bloom filter");

  // More keys than bits, with a valid CRC (a writer's bug); exactly num_bits is fine.
  std::string too_many = good;
  EncodeFixed64(too_many.data() + trailer, layout->num_bits() + 1);
  ResealTrailer(&too_many);
  expect_data_loss(ParseTail(too_many, "n").status(), "claims 65537 keys");
  expect_data_loss(BloomFilter::Parse(too_many, "n").status(), "claims 65537 keys");
  std::string full = good;
  EncodeFixed64(full.data() + trailer, layout->num_bits());
  ResealTrailer(&full);
  BASALT_EXPECT_OK(BloomFilter::Parse(full, "full"));

  // Truncated by one byte, and to the tail alone.
  expect_data_loss(BloomFilter::Parse(good.substr(0, good.size() - 1), "t").status(), "t:");
  expect_data_loss(ParseTail(std::string_view(good).substr(4096), "t").status(), "t:");
}

TEST(KeyBitmapTest, MisuseIsACheckFailure) {
  EXPECT_DEATH(KeyBitmapBuilder(10).Add(10), "outside the key bitmap");
  EXPECT_DEATH(KeyBitmapBuilder(uint64_t{kMaxBloomPages} * 8 * 4096 + 1),
               "callers must check KeyBitmapBuilder::NumPagesFor");
  KeyBitmapBuilder bitmap_builder(100);
  bitmap_builder.Add(3);
  auto bitmap = BloomFilter::Parse(bitmap_builder.Finish(), "bitmap");
  BASALT_ASSERT_OK(bitmap);
  auto bloom = BloomFilter::Parse(BuildInt64Filter(0, 10, 0.01), "bloom");
  BASALT_ASSERT_OK(bloom);
  // Probing with the other kind's method is a caller's bug, checked in debug builds.
  EXPECT_DEBUG_DEATH(bitmap->MayContainHash(1), "hash probe of a key bitmap");
  EXPECT_DEBUG_DEATH(bitmap->layout().PageForHash(1), "hash probe of a key bitmap");
  EXPECT_DEBUG_DEATH(bloom->HasOffset(0), "offset probe of a bloom filter");
  EXPECT_DEBUG_DEATH(bloom->layout().num_bits(), "num_bits of a bloom filter");
}

}  // namespace bloom_filter_test_file
}  // namespace
}  // namespace basalt
