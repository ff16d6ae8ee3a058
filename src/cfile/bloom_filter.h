#pragma once

// Split-block bloom filters over encoded keys, stored in 4 KiB pages.
//
// The filter is one split-block bloom filter (SBBF: the Parquet / Impala / Kudu design) whose
// 32-byte blocks are grouped 128 to a 4 KiB page. A key is hashed once with XXH64 (fixed seed
// kBloomHashSeed); the hash's high 32 bits pick the block (and so the page) uniformly, its low
// 32 bits pick one bit in each of the block's 8 words through 8 salt constants. Any lookup
// therefore touches exactly one 32-byte block inside one 4 KiB page: a reader keeps the small
// tail (page checksums + trailer, 4 bytes per page + 24) in memory and reads one page per probe.
// Unlike Kudu's one-filter-per-key-range pages, no key index is needed to find the page, and
// sizing uses the whole file's key count, so every page has the same expected load.
//
// The byte layout (every field) is in docs/cfile_blocks.md, "Bloom filters":
//
//   [page 0: 4096 bytes] ... [page P-1] [P x fixed32 masked CRC32C of each page] [trailer: 24 B]
//   trailer = fixed64 num_keys, fixed32 num_pages, u8 version, u8 hash, u16 reserved,
//             fixed32 masked CRC32C of (CRC table + trailer bytes 0..15), "BSBF"
//
// The hash function, its seed, the salts and the block/bit selection are an on-disk contract:
// changing any of them needs a new format version.
//
// Sizing: for n expected keys and target false-positive rate p, the builder picks the largest
// mean load of keys per block for which the exact SBBF false-positive rate (blocks loaded per a
// Poisson distribution) is at most p, and rounds the block count up to whole pages. For
// p = 0.0001 that is about 9.8 keys per block, 26 bits per key. (The simpler formula
// -8n / ln(1 - p^(1/8)) that Parquet uses ignores load variance and gives about 3x the target.)

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt {

inline constexpr size_t kBloomPageSize = 4096;
inline constexpr size_t kBloomBlockSize = 32;  // 8 x 32-bit words.
inline constexpr size_t kBloomBlocksPerPage = kBloomPageSize / kBloomBlockSize;
inline constexpr size_t kBloomTrailerSize = 24;
// Limits a filter to 1 GiB (about 330 million keys at p = 0.0001) and keeps block arithmetic in
// 64 bits.
inline constexpr uint32_t kMaxBloomPages = 1u << 18;
// The XXH64 seed of key hashes. On-disk contract: never change it.
inline constexpr uint64_t kBloomHashSeed = 0x9e3779b97f4a7c15ull;

// Returns the bloom hash of an encoded key: XXH64(key, kBloomHashSeed). Hash a key once and probe
// many filters with MayContainHash.
uint64_t BloomKeyHash(std::string_view key);

// Builds one filter. Lifecycle: construct with the expected key count, AddKey/AddHash, Finish()
// once. Adding more keys than expected is allowed (no false negatives) but raises the false-
// positive rate above the target. Memory: the filter's size, about 3.3 bytes per expected key at
// p = 0.0001. Not thread-safe; the caller serializes.
class BloomFilterBuilder {
 public:
  // Targets --cfile_bloom_fpr.
  explicit BloomFilterBuilder(uint64_t expected_keys);
  // REQUIRES: 0 < fpr < 1.
  BloomFilterBuilder(uint64_t expected_keys, double fpr);

  void AddKey(std::string_view key) { AddHash(BloomKeyHash(key)); }
  void AddHash(uint64_t hash);

  uint64_t num_keys() const { return num_keys_; }
  uint32_t num_pages() const { return num_pages_; }

  // Returns the serialized filter (num_pages * 4 KiB + 4 * num_pages + 24 bytes).
  // REQUIRES: called once; the builder is unusable afterwards.
  std::string Finish();

  // Returns the number of pages for `expected_keys` keys at false-positive rate `fpr`: at least 1,
  // at most kMaxBloomPages. REQUIRES: 0 < fpr < 1.
  static uint32_t NumPagesFor(uint64_t expected_keys, double fpr);
  // Returns the expected false-positive rate of a filter of `num_pages` pages holding `num_keys`.
  static double ExpectedFpr(uint64_t num_keys, uint32_t num_pages);

 private:
  const uint32_t num_pages_;
  uint64_t num_keys_ = 0;
  bool finished_ = false;
  std::vector<uint32_t> words_;  // num_pages_ * 1024 words, the pages in order.
};

// The parsed tail of a filter (page checksums and trailer): what a reader keeps in memory to probe
// the filter one page at a time. Typical reader, for a filter of `total_size` bytes at `base`:
//   read the last kBloomTrailerSize bytes → ParseNumPages → read the last TailSize(num_pages)
//   bytes → Parse; then per probe: hash = BloomKeyHash(key); page = PageForHash(hash); read
//   kBloomPageSize bytes at base + PageOffset(page) → VerifyPage (once per page read, or once
//   when caching it) → PageMayContain.
// Errors name `context` (e.g. the block id). Copyable. Const methods are thread-safe.
class BloomFilterLayout {
 public:
  // Validates the trailer (the last kBloomTrailerSize bytes of a filter of `total_size` bytes):
  // magic, version, hash function, reserved bits, page count and that total_size matches it.
  // Returns the number of pages. DATA_LOSS on any mismatch. The CRC is checked by Parse.
  static absl::StatusOr<uint32_t> ParseNumPages(std::string_view trailer, uint64_t total_size,
                                                std::string_view context);
  // Bytes of the tail (page CRC table and trailer) of a filter with `num_pages` pages.
  static uint64_t TailSize(uint32_t num_pages) { return 4ull * num_pages + kBloomTrailerSize; }
  // Parses the tail (exactly TailSize(num_pages) bytes) and verifies its CRC. DATA_LOSS if corrupt.
  static absl::StatusOr<BloomFilterLayout> Parse(std::string_view tail, uint64_t total_size,
                                                 std::string_view context);

  uint32_t num_pages() const { return static_cast<uint32_t>(page_crcs_.size()); }
  uint64_t num_keys() const { return num_keys_; }

  // The page holding the block for `hash`.
  uint32_t PageForHash(uint64_t hash) const;
  // The offset of page `page` from the start of the filter.
  static uint64_t PageOffset(uint32_t page) { return uint64_t{page} * kBloomPageSize; }
  // DATA_LOSS naming the page if `bytes` is not exactly the 4 KiB of page `page` with its CRC.
  absl::Status VerifyPage(uint32_t page, std::string_view bytes) const;
  // Whether the key with hash `hash` may be in the filter.
  // REQUIRES: `page_bytes` is page PageForHash(hash) (kBloomPageSize bytes), ideally verified.
  bool PageMayContain(std::string_view page_bytes, uint64_t hash) const;

 private:
  std::string context_;  // For error messages.
  uint64_t num_keys_ = 0;
  std::vector<uint32_t> page_crcs_;  // Unmasked.
};

// A whole filter held in memory, verified at Parse. Copyable and movable; const methods are
// thread-safe.
class BloomFilter {
 public:
  // Takes ownership of a serialized filter and verifies every checksum. DATA_LOSS, naming
  // `context`, if it is corrupt in any way.
  static absl::StatusOr<BloomFilter> Parse(std::string data, std::string_view context);

  bool MayContain(std::string_view key) const { return MayContainHash(BloomKeyHash(key)); }
  bool MayContainHash(uint64_t hash) const;

  const BloomFilterLayout& layout() const { return layout_; }

 private:
  BloomFilter(std::string data, BloomFilterLayout layout)
      : data_(std::move(data)), layout_(std::move(layout)) {}

  std::string data_;
  BloomFilterLayout layout_;
};

}  // namespace basalt
