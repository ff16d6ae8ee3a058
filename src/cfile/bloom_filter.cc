#include "cfile/bloom_filter.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_format.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_double(cfile_bloom_fpr, 0.001,
              "Target false-positive rate of the bloom filters written for the keys of each "
              "rowset: 0.001 costs about 17 bits per key, 0.0001 about 26 (docs/cfile_blocks.md).");
DEFINE_validator(cfile_bloom_fpr, [](const char*, double value) { return value > 0 && value < 1; });

namespace basalt {
namespace {

// Format version 1: kind 1 is the SBBF with the salts below, XXH64 with kBloomHashSeed; kind 2
// the key bitmap. The kind only changes what the pages mean, so it is not a new version.
constexpr uint8_t kFormatVersion = 1;
constexpr char kMagic[4] = {'B', 'S', 'B', 'F'};
constexpr size_t kWordsPerBlock = kBloomBlockSize / 4;
constexpr size_t kWordsPerPage = kBloomPageSize / 4;

// The SBBF salts of Parquet's spec (and Impala/Kudu): odd constants whose product with the key's
// low 32 bits, shifted right by 27, picks the bit (0..31) set in each word of the block.
constexpr uint32_t kSalts[kWordsPerBlock] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                             0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};

// Index of the block for `hash` among `num_blocks` (uniform in the hash's high 32 bits).
inline uint64_t BlockIndex(uint64_t hash, uint64_t num_blocks) {
  return ((hash >> 32) * num_blocks) >> 32;
}

inline uint32_t BitMask(uint32_t key, int word) { return 1u << ((key * kSalts[word]) >> 27); }

// Probability that a query hashed to a block holding j keys finds all 8 of its bits set.
double BlockFpr(int j) { return std::pow(1.0 - std::pow(31.0 / 32.0, j), kWordsPerBlock); }

// SBBF false-positive rate at a mean of `lambda` keys per block (Poisson-distributed loads).
double FprAtLoad(double lambda) {
  double term = std::exp(-lambda);  // P(load = 0)
  double sum = 0;
  const int limit = static_cast<int>(lambda * 4) + 64;
  for (int j = 0; j < limit; ++j) {
    sum += term * BlockFpr(j);
    term *= lambda / (j + 1);
  }
  return sum;
}

absl::Status Corrupt(std::string_view context, std::string_view what) {
  return absl::DataLossError(StrCat(context, ": corrupt bloom filter: ", what));
}

uint32_t MaskedCrc(std::string_view data) { return crc32c::Mask(crc32c::Value(data)); }

// Appends the tail (page CRC table and trailer) to `out`, which holds exactly the num_pages pages.
// The one writer of the tail for both kinds, so they cannot drift apart.
void AppendTail(std::string* out, uint32_t num_pages, uint64_t num_keys, KeyFilterKind kind) {
  DCHECK_EQ(out->size(), size_t{num_pages} * kBloomPageSize);
  out->reserve(out->size() + BloomFilterLayout::TailSize(num_pages));
  const size_t tail_start = out->size();
  for (uint32_t p = 0; p < num_pages; ++p) {
    PutFixed32(out, MaskedCrc(std::string_view(*out).substr(p * kBloomPageSize, kBloomPageSize)));
  }
  PutFixed64(out, num_keys);
  PutFixed32(out, num_pages);
  out->push_back(static_cast<char>(kFormatVersion));
  out->push_back(static_cast<char>(kind));
  out->append(2, '\0');  // Reserved.
  // Covers the CRC table and the trailer so far: a flipped page CRC or count is caught here.
  PutFixed32(out, MaskedCrc(std::string_view(*out).substr(tail_start)));
  out->append(kMagic, sizeof(kMagic));
}

}  // namespace

uint64_t BloomKeyHash(std::string_view key) {
  return XXH64(key.data(), key.size(), kBloomHashSeed);
}

// ---- BloomFilterBuilder -------------------------------------------------------------------------

BloomFilterBuilder::BloomFilterBuilder(uint64_t expected_keys)
    : BloomFilterBuilder(expected_keys, FLAGS_cfile_bloom_fpr) {}

BloomFilterBuilder::BloomFilterBuilder(uint64_t expected_keys, double fpr)
    : num_pages_(NumPagesFor(expected_keys, fpr)), words_(size_t{num_pages_} * kWordsPerPage, 0) {}

uint32_t BloomFilterBuilder::NumPagesFor(uint64_t expected_keys, double fpr) {
  CHECK(fpr > 0 && fpr < 1) << "bloom filter false-positive rate " << fpr << " not in (0, 1)";
  // FprAtLoad is increasing in the load: bisect for the largest load meeting `fpr`.
  double lo = 1e-3, hi = 200;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (FprAtLoad(mid) <= fpr ? lo : hi) = mid;
  }
  const double blocks = std::ceil(static_cast<double>(expected_keys) / lo);
  const double pages = std::ceil(blocks / kBloomBlocksPerPage);
  if (pages > kMaxBloomPages) {
    LOG(WARNING) << "bloom filter for " << expected_keys << " keys capped at " << kMaxBloomPages
                 << " pages; its false-positive rate will exceed " << fpr;
    return kMaxBloomPages;
  }
  return std::max<uint32_t>(1, static_cast<uint32_t>(pages));
}

uint32_t BloomFilterBuilder::NumPagesFor(uint64_t expected_keys) {
  return NumPagesFor(expected_keys, FLAGS_cfile_bloom_fpr);
}

double BloomFilterBuilder::ExpectedFpr(uint64_t num_keys, uint32_t num_pages) {
  return FprAtLoad(static_cast<double>(num_keys) /
                   (static_cast<double>(num_pages) * kBloomBlocksPerPage));
}

void BloomFilterBuilder::AddHash(uint64_t hash) {
  DCHECK(!finished_);
  const uint64_t block = BlockIndex(hash, uint64_t{num_pages_} * kBloomBlocksPerPage);
  uint32_t* words = &words_[block * kWordsPerBlock];
  const auto key = static_cast<uint32_t>(hash);
  for (size_t i = 0; i < kWordsPerBlock; ++i) words[i] |= BitMask(key, i);
  ++num_keys_;
}

std::string BloomFilterBuilder::Finish() {
  CHECK(!finished_) << "BloomFilterBuilder::Finish called twice";
  finished_ = true;
  std::string out;
  out.reserve(size_t{num_pages_} * kBloomPageSize + BloomFilterLayout::TailSize(num_pages_));
  for (uint32_t w : words_) PutFixed32(&out, w);  // Little-endian words.
  AppendTail(&out, num_pages_, num_keys_, KeyFilterKind::kBloom);
  words_ = {};
  return out;
}

// ---- KeyBitmapBuilder ---------------------------------------------------------------------------

namespace {

// NumPagesFor, checked against the limit before the constructor allocates anything.
uint32_t CheckedBitmapPages(uint64_t num_bits) {
  const uint32_t pages = KeyBitmapBuilder::NumPagesFor(num_bits);
  CHECK_LE(pages, kMaxBloomPages) << "key bitmap of " << num_bits << " bits needs " << pages
                                  << " pages; callers must check KeyBitmapBuilder::NumPagesFor";
  return pages;
}

}  // namespace

KeyBitmapBuilder::KeyBitmapBuilder(uint64_t num_bits)
    : num_bits_(num_bits),
      num_pages_(CheckedBitmapPages(num_bits)),
      pages_(size_t{num_pages_} * kBloomPageSize, '\0') {}

uint32_t KeyBitmapBuilder::NumPagesFor(uint64_t num_bits) {
  // Written as a quotient plus a remainder test: (num_bits + 32767) would overflow near 2^64.
  const uint64_t pages =
      num_bits / kKeyBitmapBitsPerPage + (num_bits % kKeyBitmapBitsPerPage != 0 ? 1 : 0);
  return static_cast<uint32_t>(
      std::clamp<uint64_t>(pages, 1, std::numeric_limits<uint32_t>::max()));
}

void KeyBitmapBuilder::Add(uint64_t offset) {
  DCHECK(!finished_);
  CHECK_LT(offset, num_bits_) << "key offset outside the key bitmap's range";
  auto& byte = reinterpret_cast<uint8_t&>(pages_[offset / 8]);
  const auto mask = static_cast<uint8_t>(1u << (offset % 8));
  // Counts only newly set bits, so num_keys is the number of distinct keys, which a reader checks
  // against the rowset's row count.
  num_keys_ += (byte & mask) == 0;
  byte |= mask;
}

std::string KeyBitmapBuilder::Finish() {
  CHECK(!finished_) << "KeyBitmapBuilder::Finish called twice";
  finished_ = true;
  std::string out = std::move(pages_);
  AppendTail(&out, num_pages_, num_keys_, KeyFilterKind::kKeyBitmap);
  return out;
}

// ---- BloomFilterLayout --------------------------------------------------------------------------

absl::StatusOr<uint32_t> BloomFilterLayout::ParseNumPages(std::string_view trailer,
                                                          uint64_t total_size,
                                                          std::string_view context) {
  if (trailer.size() != kBloomTrailerSize || total_size < kBloomTrailerSize) {
    return Corrupt(context, absl::StrFormat("%d bytes is too short for the trailer", total_size));
  }
  if (std::memcmp(trailer.data() + 20, kMagic, sizeof(kMagic)) != 0) {
    return Corrupt(context, "bad magic");
  }
  const auto version = static_cast<uint8_t>(trailer[12]);
  const auto kind = static_cast<uint8_t>(trailer[13]);
  const bool known_kind = kind == static_cast<uint8_t>(KeyFilterKind::kBloom) ||
                          kind == static_cast<uint8_t>(KeyFilterKind::kKeyBitmap);
  if (version != kFormatVersion || !known_kind || trailer[14] != 0 || trailer[15] != 0) {
    return Corrupt(
        context,
        absl::StrFormat("unsupported format version %d, filter kind %d or flags", version, kind));
  }
  const uint32_t num_pages = DecodeFixed32(trailer.data() + 8);
  if (num_pages == 0 || num_pages > kMaxBloomPages) {
    return Corrupt(context, absl::StrFormat("bad page count %d", num_pages));
  }
  const uint64_t expected = PageOffset(num_pages) + TailSize(num_pages);
  if (total_size != expected) {
    return Corrupt(context, absl::StrFormat("size %d does not match %d pages (%d bytes)",
                                            total_size, num_pages, expected));
  }
  return num_pages;
}

absl::StatusOr<BloomFilterLayout> BloomFilterLayout::Parse(std::string_view tail,
                                                           uint64_t total_size,
                                                           std::string_view context) {
  if (tail.size() < kBloomTrailerSize) return Corrupt(context, "tail too short");
  const std::string_view trailer = tail.substr(tail.size() - kBloomTrailerSize);
  auto num_pages = ParseNumPages(trailer, total_size, context);
  if (!num_pages.ok()) return num_pages.status();
  if (tail.size() != TailSize(*num_pages)) {
    return Corrupt(context,
                   absl::StrFormat("tail of %d bytes for %d pages", tail.size(), *num_pages));
  }
  const size_t covered = tail.size() - 8;  // CRC table and trailer bytes 0..15.
  if (crc32c::Unmask(DecodeFixed32(tail.data() + covered)) != crc32c::Value(tail.data(), covered)) {
    return Corrupt(context, "trailer checksum mismatch");
  }
  BloomFilterLayout layout;
  layout.context_ = std::string(context);
  layout.kind_ = static_cast<KeyFilterKind>(trailer[13]);  // ParseNumPages checked it.
  layout.num_keys_ = DecodeFixed64(trailer.data());
  layout.page_crcs_.resize(*num_pages);
  for (uint32_t p = 0; p < *num_pages; ++p) {
    layout.page_crcs_[p] = crc32c::Unmask(DecodeFixed32(tail.data() + 4 * p));
  }
  // After page_crcs_ is filled: num_bits() counts its pages. The CRC matched, so this is a
  // writer's bug rather than a flipped bit; either way the filter cannot be trusted. (A bloom
  // filter's count is informational: any value is possible.)
  if (layout.kind_ == KeyFilterKind::kKeyBitmap && layout.num_keys_ > layout.num_bits()) {
    return Corrupt(context, absl::StrFormat("key bitmap of %d bits claims %d keys",
                                            layout.num_bits(), layout.num_keys_));
  }
  return layout;
}

uint32_t BloomFilterLayout::PageForHash(uint64_t hash) const {
  DCHECK(kind_ == KeyFilterKind::kBloom) << "hash probe of a key bitmap";
  return static_cast<uint32_t>(BlockIndex(hash, uint64_t{num_pages()} * kBloomBlocksPerPage) /
                               kBloomBlocksPerPage);
}

absl::Status BloomFilterLayout::VerifyPage(uint32_t page, std::string_view bytes) const {
  if (page >= num_pages()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bloom page %d out of range (%d pages)", page, num_pages()));
  }
  if (bytes.size() != kBloomPageSize) {
    return Corrupt(context_, absl::StrFormat("page %d: %d bytes, expected %d", page, bytes.size(),
                                             kBloomPageSize));
  }
  if (crc32c::Value(bytes) != page_crcs_[page]) {
    return Corrupt(context_, absl::StrFormat("page %d: checksum mismatch", page));
  }
  return absl::OkStatus();
}

bool BloomFilterLayout::PageMayContain(std::string_view page_bytes, uint64_t hash) const {
  DCHECK(kind_ == KeyFilterKind::kBloom) << "hash probe of a key bitmap";
  DCHECK_EQ(page_bytes.size(), kBloomPageSize);
  const uint64_t block = BlockIndex(hash, uint64_t{num_pages()} * kBloomBlocksPerPage);
  const char* p = page_bytes.data() + (block % kBloomBlocksPerPage) * kBloomBlockSize;
  const auto key = static_cast<uint32_t>(hash);
  uint32_t missing = 0;
  for (size_t i = 0; i < kWordsPerBlock; ++i) {
    const uint32_t mask = BitMask(key, i);
    missing |= ~DecodeFixed32(p + 4 * i) & mask;
  }
  return missing == 0;
}

uint64_t BloomFilterLayout::num_bits() const {
  DCHECK(kind_ == KeyFilterKind::kKeyBitmap) << "num_bits of a bloom filter";
  return uint64_t{num_pages()} * kKeyBitmapBitsPerPage;
}

uint32_t BloomFilterLayout::PageForOffset(uint64_t offset) const {
  DCHECK(kind_ == KeyFilterKind::kKeyBitmap) << "offset probe of a bloom filter";
  DCHECK_LT(offset, num_bits());
  return static_cast<uint32_t>(offset / kKeyBitmapBitsPerPage);
}

bool BloomFilterLayout::PageHasOffset(std::string_view page_bytes, uint64_t offset) const {
  DCHECK(kind_ == KeyFilterKind::kKeyBitmap) << "offset probe of a bloom filter";
  DCHECK_LT(offset, num_bits());
  DCHECK_EQ(page_bytes.size(), kBloomPageSize);
  // Bit `offset` of the whole bitmap is bit `bit` of its page: byte bit / 8, LSB first.
  const uint64_t bit = offset % kKeyBitmapBitsPerPage;
  return (static_cast<uint8_t>(page_bytes[bit / 8]) >> (bit % 8)) & 1;
}

// ---- BloomFilter --------------------------------------------------------------------------------

absl::StatusOr<BloomFilter> BloomFilter::Parse(std::string data, std::string_view context) {
  if (data.size() < kBloomTrailerSize) {
    return Corrupt(context, absl::StrFormat("%d bytes is too short", data.size()));
  }
  const std::string_view all(data);
  auto num_pages = BloomFilterLayout::ParseNumPages(all.substr(all.size() - kBloomTrailerSize),
                                                    all.size(), context);
  if (!num_pages.ok()) return num_pages.status();
  auto layout = BloomFilterLayout::Parse(all.substr(BloomFilterLayout::PageOffset(*num_pages)),
                                         all.size(), context);
  if (!layout.ok()) return layout.status();
  for (uint32_t p = 0; p < *num_pages; ++p) {
    BASALT_RETURN_IF_ERROR(
        layout->VerifyPage(p, all.substr(BloomFilterLayout::PageOffset(p), kBloomPageSize)));
  }
  return BloomFilter(std::move(data), *std::move(layout));
}

bool BloomFilter::MayContainHash(uint64_t hash) const {
  DCHECK(kind() == KeyFilterKind::kBloom) << "hash probe of a key bitmap";
  const uint32_t page = layout_.PageForHash(hash);
  return layout_.PageMayContain(
      std::string_view(data_).substr(BloomFilterLayout::PageOffset(page), kBloomPageSize), hash);
}

bool BloomFilter::HasOffset(uint64_t offset) const {
  const uint32_t page = layout_.PageForOffset(offset);
  return layout_.PageHasOffset(
      std::string_view(data_).substr(BloomFilterLayout::PageOffset(page), kBloomPageSize), offset);
}

}  // namespace basalt
