#include "cfile/bitshuffle_encoding.h"

#include <lz4.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cfile/encoding_internal.h"
#include "common/coding.h"
#include "glog/logging.h"

namespace basalt {
namespace bitshuffle {
namespace {

// Transposes an 8x8 bit matrix held in a uint64_t, row r = byte r, column c = bit c: afterwards
// bit (8 * c + r) holds what bit (8 * r + c) held (Hacker's Delight, 7-3). Its own inverse.
inline uint64_t Transpose8x8(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
  x = x ^ t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
  x = x ^ t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
  x = x ^ t ^ (t << 28);
  return x;
}

}  // namespace

void Transpose(const uint8_t* in, size_t n8, size_t cell_bytes, uint8_t* out) {
  DCHECK_EQ(n8 % 8, 0u);
  const size_t plane_bytes = n8 / 8;
  for (size_t m = 0; m < plane_bytes; m++) {
    const uint8_t* group = in + 8 * m * cell_bytes;  // Values 8m .. 8m+7.
    for (size_t k = 0; k < cell_bytes; k++) {
      uint64_t x = 0;
      for (size_t t = 0; t < 8; t++) x |= uint64_t{group[t * cell_bytes + k]} << (8 * t);
      x = Transpose8x8(x);
      for (size_t b = 0; b < 8; b++) out[(8 * k + b) * plane_bytes + m] = uint8_t(x >> (8 * b));
    }
  }
}

void Untranspose(const uint8_t* in, size_t n8, size_t cell_bytes, uint8_t* out) {
  DCHECK_EQ(n8 % 8, 0u);
  UntransposeGroups(in, n8, cell_bytes, 0, n8 / 8, out);
}

void UntransposeGroups(const uint8_t* in, size_t n8, size_t cell_bytes, size_t first_group,
                       size_t num_groups, uint8_t* out) {
  DCHECK_EQ(n8 % 8, 0u);
  DCHECK_LE(8 * (first_group + num_groups), n8);
  const size_t plane_bytes = n8 / 8;
  for (size_t m = first_group; m < first_group + num_groups; m++) {
    uint8_t* group = out + 8 * (m - first_group) * cell_bytes;
    for (size_t k = 0; k < cell_bytes; k++) {
      uint64_t x = 0;
      for (size_t b = 0; b < 8; b++) x |= uint64_t{in[(8 * k + b) * plane_bytes + m]} << (8 * b);
      x = Transpose8x8(x);
      for (size_t t = 0; t < 8; t++) group[t * cell_bytes + k] = uint8_t(x >> (8 * t));
    }
  }
}

}  // namespace bitshuffle

namespace {

using encoding_internal::Corruption;
constexpr std::string_view kBitShuffle = "BIT_SHUFFLE";
constexpr size_t kHeaderBytes = 5;  // u32 count, u8 cell_bytes.

size_t RoundUp8(size_t n) { return (n + 7) / 8 * 8; }

class BitShufflePageBuilder final : public PageBuilder {
 public:
  BitShufflePageBuilder(DataType type, const PageBuilderOptions& options)
      : cell_size_(GetTypeInfo(type).size()), page_size_(options.page_size_bytes) {}

  size_t Add(const void* cells, size_t n) override {
    if (IsFull()) return 0;
    return encoding_internal::AppendFixedCells(cells, n, cell_size_, page_size_, raw_.size(), &raw_,
                                               &count_);
  }
  // Counts the bytes before LZ4: the compressed size is known only at Finish().
  bool IsFull() const override {
    return encoding_internal::IsPageFull(count_, raw_.size(), page_size_);
  }
  size_t count() const override { return count_; }
  std::string_view Finish() override {
    const size_t n8 = RoundUp8(count_);
    raw_.resize(n8 * cell_size_, '\0');
    shuffled_.resize(n8 * cell_size_);
    bitshuffle::Transpose(reinterpret_cast<const uint8_t*>(raw_.data()), n8, cell_size_,
                          shuffled_.data());
    raw_.resize(count_ * cell_size_);
    buf_.clear();
    PutFixed32(&buf_, static_cast<uint32_t>(count_));
    buf_.push_back(static_cast<char>(cell_size_));
    const int bound = LZ4_compressBound(static_cast<int>(shuffled_.size()));
    buf_.resize(kHeaderBytes + bound);
    const int n =
        LZ4_compress_default(reinterpret_cast<const char*>(shuffled_.data()),
                             buf_.data() + kHeaderBytes, static_cast<int>(shuffled_.size()), bound);
    CHECK_GT(n, 0) << "LZ4 compression failed";
    buf_.resize(kHeaderBytes + n);
    return buf_;
  }
  void Reset() override {
    raw_.clear();
    count_ = 0;
  }
  bool GetFirstValue(void* cell) const override { return CopyCell(0, cell); }
  bool GetLastValue(void* cell) const override { return CopyCell(count_ - 1, cell); }

 private:
  bool CopyCell(size_t i, void* cell) const {
    if (count_ == 0) return false;
    std::memcpy(cell, raw_.data() + i * cell_size_, cell_size_);
    return true;
  }

  const size_t cell_size_;
  const size_t page_size_;
  std::string raw_;
  std::vector<uint8_t> shuffled_;
  std::string buf_;
  size_t count_ = 0;
};

// Decompresses and untransposes the whole page in Init(); decoding is then a copy.
class BitShufflePageDecoder final : public encoding_internal::PositionedPageDecoder {
 public:
  explicit BitShufflePageDecoder(DataType type)
      : type_info_(GetTypeInfo(type)), cell_size_(type_info_.size()) {}

  absl::Status Init(std::string_view page) override {
    uint32_t count;
    BASALT_RETURN_IF_ERROR(encoding_internal::ReadPageCount(kBitShuffle, &page, &count));
    if (page.empty() || static_cast<uint8_t>(page[0]) != cell_size_) {
      return Corruption(kBitShuffle, "cell width does not match the column's ", cell_size_,
                        " bytes");
    }
    page.remove_prefix(1);
    const size_t n8 = RoundUp8(count);
    const size_t expected = n8 * cell_size_;
    // LZ4 expands at most 255:1, so a count claiming more is corrupt; checked before allocating.
    if (expected > 255 * page.size() + 16) {
      return Corruption(kBitShuffle, count, " values cannot come from ", page.size(),
                        " bytes of LZ4 data");
    }
    shuffled_.resize(expected);
    const int got = LZ4_decompress_safe(page.data(), reinterpret_cast<char*>(shuffled_.data()),
                                        static_cast<int>(page.size()), static_cast<int>(expected));
    if (got < 0 || static_cast<size_t>(got) != expected) {
      return Corruption(kBitShuffle, "LZ4 data of ", page.size(), " bytes does not decompress to ",
                        expected, " bytes (result ", got, ")");
    }
    n8_ = n8;
    // Values are untransposed when read, only the groups of 8 a read touches.
    ResetPosition(count);
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> DecodeNext(size_t n, ColumnBlock* out, size_t dst_offset) override {
    const size_t k = std::min(n, count_ - pos_);
    if (k == 0) return 0;  // Empty pages have no buffers to copy from.
    DCHECK_LE(dst_offset + k, out->capacity);
    std::memcpy(out->cell(dst_offset), Cells(pos_, k), k * cell_size_);
    pos_ += k;
    return k;
  }

 protected:
  absl::Status CompareAt(size_t pos, const void* value, int* result) override {
    *result = encoding_internal::CompareUnalignedCell(
        type_info_, reinterpret_cast<const char*>(Cells(pos, 1)), value);
    return absl::OkStatus();
  }

 private:
  // Cells [pos, pos + k) of the page, untransposed into values_. REQUIRES: pos + k <= count_.
  const uint8_t* Cells(size_t pos, size_t k) {
    const size_t first = pos / 8;
    const size_t groups = (pos + k + 7) / 8 - first;
    values_.resize(groups * 8 * cell_size_);
    bitshuffle::UntransposeGroups(shuffled_.data(), n8_, cell_size_, first, groups, values_.data());
    return values_.data() + (pos - 8 * first) * cell_size_;
  }

  const TypeInfo& type_info_;
  const size_t cell_size_;
  size_t n8_ = 0;
  std::vector<uint8_t> shuffled_;  // The page's bit-planes.
  std::vector<uint8_t> values_;    // The groups of 8 cells the last read untransposed.
};

}  // namespace

std::unique_ptr<PageBuilder> NewBitShufflePageBuilder(DataType type,
                                                      const PageBuilderOptions& options) {
  return std::make_unique<BitShufflePageBuilder>(type, options);
}

std::unique_ptr<PageDecoder> NewBitShufflePageDecoder(DataType type) {
  return std::make_unique<BitShufflePageDecoder>(type);
}

}  // namespace basalt
