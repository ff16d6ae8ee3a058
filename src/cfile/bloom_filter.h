#pragma once

// Key filters of a rowset, stored in 4 KiB pages: split-block bloom filters over encoded keys
// (kind 1), or exact bitmaps over a dense integer key range (kind 2). Both kinds share the page
// size, the per-page CRC table and the trailer, so a reader loads and verifies pages the same way
// whatever the kind; only the probe differs.
//
// Kind 1, bloom (KeyFilterKind::kBloom): one split-block bloom filter (SBBF: the Parquet / Impala
// / Kudu design) whose 32-byte blocks are grouped 128 to a 4 KiB page. A key is hashed once with
// XXH64 (fixed seed kBloomHashSeed); the hash's high 32 bits pick the block (and so the page)
// uniformly, its low 32 bits pick one bit in each of the block's 8 words through 8 salt constants.
// Any lookup therefore touches exactly one 32-byte block inside one 4 KiB page: a reader keeps the
// small tail (page checksums + trailer, 4 bytes per page + 24) in memory and reads one page per
// probe. Unlike Kudu's one-filter-per-key-range pages, no key index is needed to find the page,
// and sizing uses the whole file's key count, so every page has the same expected load.
//
// Kind 2, key bitmap (KeyFilterKind::kKeyBitmap): bit i of the pages' little-endian byte stream
// (byte i / 8, bit i % 8, LSB first) is set iff the key at offset i from the rowset's first key is
// present. The filter does not store that first key: the caller maps a key to its offset (the
// rowset knows its min key). Exact (no false positives) and 1 bit per value of the key range, so
// it beats the bloom filter's ~17 bits per key when the keys are dense (about 1 integer in 4: 4
// bits per key). One page covers 8 * kBloomPageSize = 32768 consecutive offsets.
//
// The byte layout (every field) is in docs/cfile_blocks.md, "Bloom filters":
//
//   [page 0: 4096 bytes] ... [page P-1] [P x fixed32 masked CRC32C of each page] [trailer: 24 B]
//   trailer = fixed64 num_keys, fixed32 num_pages, u8 version (1), u8 kind (KeyFilterKind),
//             u16 reserved, fixed32 masked CRC32C of (CRC table + trailer bytes 0..15), "BSBF"
//
// The hash function, its seed, the salts, the block/bit selection and the bitmap's bit order are
// an on-disk contract: changing any of them needs a new format version or kind.
//
// Sizing (bloom): for n expected keys and target false-positive rate p, the builder picks the
// largest mean load of keys per block for which the exact SBBF false-positive rate (blocks loaded
// per a Poisson distribution) is at most p, and rounds the block count up to whole pages. For
// p = 0.0001 that is about 9.8 keys per block, 26 bits per key. (The simpler formula
// -8n / ln(1 - p^(1/8)) that Parquet uses ignores load variance and gives about 3x the target.)
// Sizing (bitmap): ceil(num_bits / 32768) pages, at least 1.

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
// Offsets a key bitmap page covers: one bit per offset.
inline constexpr uint64_t kKeyBitmapBitsPerPage = 8 * kBloomPageSize;

// What the pages of a filter hold: trailer byte 13 (the "hash" byte of format version 1, whose
// only value was 1 = XXH64 SBBF). On-disk values: never renumber.
enum class KeyFilterKind : uint8_t {
  kBloom = 1,      // SBBF over XXH64(encoded key, kBloomHashSeed).
  kKeyBitmap = 2,  // Exact bitmap over key offsets from the rowset's first key.
};

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
  // The same at --cfile_bloom_fpr: the size BloomFilterBuilder(expected_keys) would have.
  static uint32_t NumPagesFor(uint64_t expected_keys);
  // Returns the expected false-positive rate of a filter of `num_pages` pages holding `num_keys`.
  static double ExpectedFpr(uint64_t num_keys, uint32_t num_pages);

 private:
  const uint32_t num_pages_;
  uint64_t num_keys_ = 0;
  bool finished_ = false;
  std::vector<uint32_t> words_;  // num_pages_ * 1024 words, the pages in order.
};

// Builds one key bitmap (KeyFilterKind::kKeyBitmap) over offsets [0, num_bits). Lifecycle:
// construct with the size of the key range, Add each key's offset, Finish() once. Memory: the
// filter's size, num_bits / 8 bytes rounded up to whole 4 KiB pages. Invariant: num_keys() is the
// number of distinct offsets added (the number of set bits). Not thread-safe; the caller
// serializes.
class KeyBitmapBuilder {
 public:
  // `num_bits` is the number of offsets covered (max_key - min_key + 1 for a rowset's keys); 0
  // still gets one (empty) page.
  // REQUIRES: NumPagesFor(num_bits) <= kMaxBloomPages (a CHECK failure otherwise): callers compare
  // NumPagesFor with the bloom filter's page count (itself at most kMaxBloomPages) to pick a kind.
  explicit KeyBitmapBuilder(uint64_t num_bits);

  // Sets the bit of `offset`. Adding an offset already set is a no-op: num_keys() counts newly set
  // bits only. REQUIRES: offset < num_bits (a CHECK failure otherwise: a caller's bug).
  void Add(uint64_t offset);

  uint64_t num_keys() const { return num_keys_; }
  uint32_t num_pages() const { return num_pages_; }

  // Returns the serialized filter (num_pages * 4 KiB + 4 * num_pages + 24 bytes); the bits in
  // [num_bits, num_pages * 32768) are zero. REQUIRES: called once; the builder is unusable
  // afterwards.
  std::string Finish();

  // Returns max(1, ceil(num_bits / 32768)), saturated at UINT32_MAX: any value above
  // kMaxBloomPages means the range is too large for a bitmap.
  static uint32_t NumPagesFor(uint64_t num_bits);

 private:
  const uint64_t num_bits_;
  const uint32_t num_pages_;
  uint64_t num_keys_ = 0;
  bool finished_ = false;
  std::string pages_;  // num_pages_ * 4 KiB, the bitmap bytes in order.
};

// The parsed tail of a filter (page checksums and trailer): what a reader keeps in memory to probe
// the filter one page at a time. Typical reader, for a filter of `total_size` bytes at `base`:
//   read the last kBloomTrailerSize bytes → ParseNumPages → read the last TailSize(num_pages)
//   bytes → Parse; then per probe, by kind():
//     kBloom: hash = BloomKeyHash(key); page = PageForHash(hash);
//     kKeyBitmap: offset = key - rowset min key; absent if offset >= num_bits(), else
//       page = PageForOffset(offset);
//   read kBloomPageSize bytes at base + PageOffset(page) → VerifyPage (once per page read, or once
//   when caching it) → PageMayContain(page_bytes, hash) / PageHasOffset(page_bytes, offset).
// Probing with the other kind's methods is a DCHECK failure.
// Errors name `context` (e.g. the block id). Copyable. Const methods are thread-safe.
class BloomFilterLayout {
 public:
  // Validates the trailer (the last kBloomTrailerSize bytes of a filter of `total_size` bytes):
  // magic, version, kind (kBloom or kKeyBitmap), reserved bits, page count and that total_size
  // matches it. Returns the number of pages. DATA_LOSS on any mismatch. The CRC is checked by
  // Parse.
  static absl::StatusOr<uint32_t> ParseNumPages(std::string_view trailer, uint64_t total_size,
                                                std::string_view context);
  // Bytes of the tail (page CRC table and trailer) of a filter with `num_pages` pages.
  static uint64_t TailSize(uint32_t num_pages) { return 4ull * num_pages + kBloomTrailerSize; }
  // Parses the tail (exactly TailSize(num_pages) bytes) and verifies its CRC. DATA_LOSS if corrupt,
  // or if a key bitmap claims more keys than it has bits.
  static absl::StatusOr<BloomFilterLayout> Parse(std::string_view tail, uint64_t total_size,
                                                 std::string_view context);

  uint32_t num_pages() const { return static_cast<uint32_t>(page_crcs_.size()); }
  uint64_t num_keys() const { return num_keys_; }
  KeyFilterKind kind() const { return kind_; }

  // The page holding the block for `hash`. REQUIRES: kind() == kBloom.
  uint32_t PageForHash(uint64_t hash) const;
  // The offset of page `page` from the start of the filter.
  static uint64_t PageOffset(uint32_t page) { return uint64_t{page} * kBloomPageSize; }
  // DATA_LOSS naming the page if `bytes` is not exactly the 4 KiB of page `page` with its CRC.
  absl::Status VerifyPage(uint32_t page, std::string_view bytes) const;
  // Whether the key with hash `hash` may be in the filter. REQUIRES: kind() == kBloom;
  // `page_bytes` is page PageForHash(hash) (kBloomPageSize bytes), ideally verified.
  bool PageMayContain(std::string_view page_bytes, uint64_t hash) const;

  // Offsets a key bitmap covers: num_pages() * 32768. Offsets in [the builder's num_bits,
  // num_bits()) are absent. REQUIRES (this and below): kind() == kKeyBitmap.
  uint64_t num_bits() const;
  // The page holding the bit of `offset`. REQUIRES: offset < num_bits().
  uint32_t PageForOffset(uint64_t offset) const;
  // Whether the key at `offset` is present (exact). REQUIRES: offset < num_bits() (callers check:
  // a larger offset is an absent key); `page_bytes` is page PageForOffset(offset)
  // (kBloomPageSize bytes), ideally verified.
  bool PageHasOffset(std::string_view page_bytes, uint64_t offset) const;

 private:
  std::string context_;  // For error messages.
  KeyFilterKind kind_ = KeyFilterKind::kBloom;
  uint64_t num_keys_ = 0;
  std::vector<uint32_t> page_crcs_;  // Unmasked.
};

// A whole filter of either kind held in memory, verified at Parse. Copyable and movable; const
// methods are thread-safe.
class BloomFilter {
 public:
  // Takes ownership of a serialized filter and verifies every checksum. DATA_LOSS, naming
  // `context`, if it is corrupt in any way.
  static absl::StatusOr<BloomFilter> Parse(std::string data, std::string_view context);

  KeyFilterKind kind() const { return layout_.kind(); }

  // REQUIRES: kind() == kBloom.
  bool MayContain(std::string_view key) const { return MayContainHash(BloomKeyHash(key)); }
  bool MayContainHash(uint64_t hash) const;
  // Whether the key at `offset` is present. REQUIRES: kind() == kKeyBitmap and
  // offset < layout().num_bits().
  bool HasOffset(uint64_t offset) const;

  const BloomFilterLayout& layout() const { return layout_; }

 private:
  BloomFilter(std::string data, BloomFilterLayout layout)
      : data_(std::move(data)), layout_(std::move(layout)) {}

  std::string data_;
  BloomFilterLayout layout_;
};

}  // namespace basalt
