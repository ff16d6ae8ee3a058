#pragma once

// BIT_PACKED encoding: frame of reference + bit packing in blocks of 128 values, the default for
// integer-backed types (docs/cfile_encodings.md has the byte table).
//
// Page: u32 count | u8 cell_bytes | ceil(count / 128) blocks. Each block codes 128 values (the
// last block of a page is padded with zero residuals) in one of two modes, whichever is smaller:
//   FOR:   values minus the block minimum (signed), in `width` bits each;
//   DELTA: differences of consecutive values minus their minimum, in `width` bits each, so
//          sequential keys cost a 0-bit block: header only, under 1 bit per value.
// Block: u8 (width | delta << 7) | ref (cell_bytes, LE) | [min_delta (cell_bytes, LE)] |
//        16 * width bytes of residuals.
// Arithmetic is modulo 2^(8 * cell_bytes), so every value, including the type's extremes, round
// trips.
//
// Residuals are laid out *vertically* so unpacking is SIMD work without shuffles: the block is
// `width` rows of 16 bytes; a row holds L = 16 / cell_bytes lanes of cell_bytes each; value i
// belongs to lane i % L at position i / L, and each lane is an LSB-first bit stream of its
// positions across the rows. Unpack routines are specialized per (cell width, bit width) and
// compiled twice, portable (SSE2 on x86-64) and AVX2, picked at run time by CPUID.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cfile/encoding.h"

namespace basalt {

// REQUIRES: IsEncodingAllowed(type, kBitPacked).
std::unique_ptr<PageBuilder> NewBitPackedPageBuilder(DataType type,
                                                     const PageBuilderOptions& options);
std::unique_ptr<PageDecoder> NewBitPackedPageDecoder(DataType type);

namespace bitpacking {

inline constexpr size_t kBlockValues = 128;

// Instruction sets the unpack routines are compiled for.
enum class UnpackIsa : uint8_t { kPortable = 0, kAvx2 = 1 };
UnpackIsa BestSupportedUnpackIsa();
// Forces `isa` (REQUIRES: isa <= BestSupportedUnpackIsa()) so tests cover every variant.
void SetUnpackIsaForTesting(UnpackIsa isa);

// Packs 128 residuals of `width` bits (REQUIRES: each < 2^width) into 16 * width bytes at `out`.
// U is uint8_t, uint16_t, uint32_t or uint64_t; 0 <= width <= 8 * sizeof(U).
template <typename U>
void PackBlock(const U* residuals, int width, uint8_t* out);
// Inverse of PackBlock, adding `ref` to every residual (mod 2^bits): writes 128 values to `out`.
template <typename U>
void UnpackBlock(const uint8_t* in, int width, U ref, U* out);
// Value i (REQUIRES: i < 128) of what UnpackBlock would write, alone.
template <typename U>
U UnpackOne(const uint8_t* in, int width, U ref, size_t i);

}  // namespace bitpacking

// The BIT_PACKED builder and decoder for cells of C++ type T (int8_t..int64_t), exposed for DICT,
// which bit-packs its codes with them. Not thread-safe.
template <typename T>
class BitPackedPageBuilder final : public PageBuilder {
 public:
  explicit BitPackedPageBuilder(const PageBuilderOptions& options);
  size_t Add(const void* cells, size_t n) override;
  bool IsFull() const override;
  size_t count() const override { return count_; }
  std::string_view Finish() override;
  void Reset() override;
  bool GetFirstValue(void* cell) const override;
  bool GetLastValue(void* cell) const override;

 private:
  void FlushBlock();

  const size_t page_size_;
  std::string buf_;
  T pending_[bitpacking::kBlockValues];
  size_t num_pending_ = 0;
  size_t count_ = 0;
  T first_ = 0;
  T last_ = 0;
};

// Block headers are walked lazily: Init() checks the page header and that the page size is
// plausible for its block count, and each block's header is validated (and the next block's
// offset recorded) the first time a decode or comparison reaches it, so a page load costs O(1)
// and a scan touches each header once, while decoding it. Malformed blocks surface as DATA_LOSS
// from DecodeNext()/SeekAtOrAfterValue() (or, with kAtInit, from Init() as before).
enum class BitPackedBlockValidation : uint8_t {
  kAtInit,      // Init() walks and validates every block header.
  kOnFirstUse,  // Blocks are walked when first decoded.
};

template <typename T>
class BitPackedPageDecoder final : public PageDecoder {
 public:
  using U = std::make_unsigned_t<T>;
  using BlockValidation = BitPackedBlockValidation;
  explicit BitPackedPageDecoder(BlockValidation validation = BlockValidation::kAtInit);
  absl::Status Init(std::string_view page) override;
  // With a layout (the offsets of every block, from ComputeLayout on the same bytes) no block
  // header is walked again.
  absl::Status InitWithLayout(std::string_view page, const PageLayout* layout) override;
  std::unique_ptr<const PageLayout> ComputeLayout(std::string_view page) override;
  size_t count() const override { return count_; }
  size_t position() const override { return pos_; }
  void SeekToPositionInPage(size_t pos) override;
  // A search by block first values: one block decoded instead of one per probe.
  absl::Status SeekAtOrAfterValue(const void* value, bool* exact) override;
  absl::StatusOr<size_t> DecodeNext(size_t n, ColumnBlock* out, size_t dst_offset) override;
  // DecodeNext into a plain array: writes min(n, count() - position()) values and returns it.
  absl::StatusOr<size_t> DecodeValues(size_t n, T* out);
  // DecodeValues for a decoder that cannot fail after Init().
  // REQUIRES: constructed with BlockValidation::kAtInit.
  size_t DecodeRaw(size_t n, T* out);
  // Whether the values from position() to the end of its block (at most n of them) are all one
  // value, which a block stores as a header without residuals (a width-0 FOR block, or a width-0
  // DELTA block whose deltas are 0): then sets *value and *run (how many) without decoding or
  // moving. Sorted or clustered columns (DICT codes of a key column) are mostly such runs.
  // REQUIRES: constructed with BlockValidation::kAtInit.
  bool ConstantRun(size_t n, T* value, size_t* run) const;

 protected:
  absl::Status CompareAt(size_t pos, const void* value, int* result) override;

 private:
  // Makes block `b` usable: validates the headers of blocks [walked_, b] and records the offsets
  // after them. REQUIRES: b < num_blocks_.
  absl::Status EnsureWalked(size_t b) { return b < walked_ ? absl::OkStatus() : WalkTo(b); }
  absl::Status WalkTo(size_t b);
  // A block's header, and where its residuals start.
  struct BlockHeader {
    int width = 0;
    bool delta = false;
    U ref = 0;
    U min_delta = 0;  // 0 in a FOR block.
    const uint8_t* residuals = nullptr;
  };
  // REQUIRES: b < walked_.
  BlockHeader HeaderOf(size_t b) const;
  // Decodes block `b` (all 128 slots, padding included) into `out`. REQUIRES: b < walked_.
  void DecodeBlock(size_t b, U* out) const;
  absl::StatusOr<const U*> ScratchBlock(size_t b);
  // Value i of block b: unpacked alone from a FOR block or the first of a DELTA block, else
  // through ScratchBlock.
  absl::StatusOr<U> ValueAt(size_t b, size_t i);

  const BlockValidation validation_;
  const char* data_ = nullptr;  // The blocks (the page past its header).
  size_t size_ = 0;             // Bytes at data_.
  size_t count_ = 0;
  size_t num_blocks_ = 0;
  size_t pos_ = 0;
  // Blocks [0, walked_) have valid headers; offsets_[0, walked_] are their byte offsets in data_
  // (the last one is where block walked_ starts, or the end). offsets_ is block_offsets_.data(),
  // which WalkTo extends, or a layout's complete offsets (then walked_ == num_blocks_).
  size_t walked_ = 0;
  const uint32_t* offsets_ = nullptr;
  std::vector<uint32_t> block_offsets_;
  alignas(64) U scratch_[bitpacking::kBlockValues];
  size_t scratch_block_ = SIZE_MAX;  // Block held in scratch_, or SIZE_MAX.
};

}  // namespace basalt
