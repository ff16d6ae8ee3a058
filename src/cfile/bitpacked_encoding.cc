#include "cfile/bitpacked_encoding.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>

#include "cfile/encoding_internal.h"
#include "common/coding.h"
#include "glog/logging.h"

// Forces inlining into the per-instruction-set wrappers, so the loops are compiled with the
// wrapper's target features.
#define BASALT_UNPACK_INLINE __attribute__((always_inline)) inline

namespace basalt {
namespace bitpacking {
namespace {

constexpr size_t kRowBytes = 16;  // One row of residuals: 128 bits, an SSE register.

template <typename U>
constexpr int kBits = 8 * sizeof(U);
template <typename U>
constexpr int kLanes = kRowBytes / sizeof(U);

template <typename U>
constexpr U LowMask(int width) {
  return width >= kBits<U> ? U(~U(0)) : U((U(1) << width) - 1);
}

// The unpack kernel for a compile-time width W. Position p of lane l (value p * L + l) occupies
// bits [p * W, p * W + W) of the lane's stream; rows are loaded once, and after full unrolling
// every shift is a constant and each step is a handful of L-wide vector operations.
template <typename U, int W>
BASALT_UNPACK_INLINE void UnpackImpl(const uint8_t* in, U ref, U* __restrict out) {
  constexpr int L = kLanes<U>;
  constexpr int B = kBits<U>;
  if constexpr (W == 0) {
    for (size_t i = 0; i < kBlockValues; i++) out[i] = ref;
  } else {
    constexpr U mask = LowMask<U>(W);
    U rows[W * L];
    std::memcpy(rows, in, sizeof(rows));
#pragma GCC unroll 64
    for (int p = 0; p < B; p++) {
      const int bit = p * W;
      const int word = bit / B;
      const int shift = bit % B;
      for (int l = 0; l < L; l++) {
        U v = U(rows[word * L + l] >> shift);
        if (shift + W > B) v = U(v | U(rows[(word + 1) * L + l] << (B - shift)));
        out[p * L + l] = U(U(v & mask) + ref);
      }
    }
  }
}

template <typename U>
using UnpackFn = void (*)(const uint8_t*, U, U*);

template <typename U, int W>
void UnpackPortable(const uint8_t* in, U ref, U* out) {
  UnpackImpl<U, W>(in, ref, out);
}

#if defined(__x86_64__)
template <typename U, int W>
__attribute__((target("avx2"))) void UnpackAvx2(const uint8_t* in, U ref, U* out) {
  UnpackImpl<U, W>(in, ref, out);
}
#endif

template <typename U, bool kAvx2, size_t... W>
constexpr std::array<UnpackFn<U>, sizeof...(W)> MakeTable(std::index_sequence<W...>) {
#if defined(__x86_64__)
  if constexpr (kAvx2) return {{&UnpackAvx2<U, static_cast<int>(W)>...}};
#endif
  return {{&UnpackPortable<U, static_cast<int>(W)>...}};
}

template <typename U, bool kAvx2>
const std::array<UnpackFn<U>, kBits<U> + 1>& Table() {
  static constexpr auto table = MakeTable<U, kAvx2>(std::make_index_sequence<kBits<U> + 1>());
  return table;
}

std::atomic<UnpackIsa>& ActiveIsa() {
  static std::atomic<UnpackIsa> isa{BestSupportedUnpackIsa()};
  return isa;
}

}  // namespace

UnpackIsa BestSupportedUnpackIsa() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return UnpackIsa::kAvx2;
#endif
  return UnpackIsa::kPortable;
}

void SetUnpackIsaForTesting(UnpackIsa isa) {
  CHECK(static_cast<int>(isa) <= static_cast<int>(BestSupportedUnpackIsa()))
      << "unpack ISA not supported by this CPU";
  ActiveIsa().store(isa, std::memory_order_relaxed);
}

template <typename U>
void PackBlock(const U* residuals, int width, uint8_t* out) {
  constexpr int L = kLanes<U>;
  constexpr int B = kBits<U>;
  DCHECK(width >= 0 && width <= B);
  U rows[B * L] = {};
  for (int p = 0; p < B && width > 0; p++) {
    const int bit = p * width;
    const int word = bit / B;
    const int shift = bit % B;
    for (int l = 0; l < L; l++) {
      const U v = residuals[p * L + l];
      DCHECK_EQ(v & ~LowMask<U>(width), 0) << "residual wider than " << width << " bits";
      rows[word * L + l] = U(rows[word * L + l] | U(v << shift));
      if (shift + width > B)
        rows[(word + 1) * L + l] = U(rows[(word + 1) * L + l] | (v >> (B - shift)));
    }
  }
  std::memcpy(out, rows, kRowBytes * width);
}

template <typename U>
void UnpackBlock(const uint8_t* in, int width, U ref, U* out) {
  DCHECK(width >= 0 && width <= kBits<U>);
#if defined(__x86_64__)
  if (ActiveIsa().load(std::memory_order_relaxed) == UnpackIsa::kAvx2) {
    Table<U, true>()[width](in, ref, out);
    return;
  }
#endif
  Table<U, false>()[width](in, ref, out);
}

template <typename U>
U UnpackOne(const uint8_t* in, int width, U ref, size_t i) {
  DCHECK(width >= 0 && width <= kBits<U> && i < kBlockValues);
  if (width == 0) return ref;
  // Value i is position i / L of lane i % L: bits [p * width, p * width + width) of the lane's
  // stream, whose word r is the lane's cell in row r (as UnpackImpl reads them).
  constexpr int L = kLanes<U>;
  constexpr int B = kBits<U>;
  const size_t lane = i % L;
  const size_t bit = (i / L) * static_cast<size_t>(width);
  const size_t word = bit / B;
  const int shift = static_cast<int>(bit % B);
  auto cell = [&](size_t w) {
    U v;
    std::memcpy(&v, in + w * kRowBytes + lane * sizeof(U), sizeof(U));
    return v;
  };
  U v = U(cell(word) >> shift);
  if (shift + width > B) v = U(v | U(cell(word + 1) << (B - shift)));
  return U(U(v & LowMask<U>(width)) + ref);
}

template uint8_t UnpackOne<uint8_t>(const uint8_t*, int, uint8_t, size_t);
template uint16_t UnpackOne<uint16_t>(const uint8_t*, int, uint16_t, size_t);
template uint32_t UnpackOne<uint32_t>(const uint8_t*, int, uint32_t, size_t);
template uint64_t UnpackOne<uint64_t>(const uint8_t*, int, uint64_t, size_t);

template void PackBlock<uint8_t>(const uint8_t*, int, uint8_t*);
template void PackBlock<uint16_t>(const uint16_t*, int, uint8_t*);
template void PackBlock<uint32_t>(const uint32_t*, int, uint8_t*);
template void PackBlock<uint64_t>(const uint64_t*, int, uint8_t*);
template void UnpackBlock<uint8_t>(const uint8_t*, int, uint8_t, uint8_t*);
template void UnpackBlock<uint16_t>(const uint8_t*, int, uint16_t, uint16_t*);
template void UnpackBlock<uint32_t>(const uint8_t*, int, uint32_t, uint32_t*);
template void UnpackBlock<uint64_t>(const uint8_t*, int, uint64_t, uint64_t*);

}  // namespace bitpacking

namespace {

using bitpacking::kBlockValues;
constexpr size_t kRowBytes = 16;
using encoding_internal::Corruption;
constexpr std::string_view kBitPacked = "BIT_PACKED";
constexpr uint8_t kDeltaFlag = 0x80;
constexpr uint8_t kWidthMask = 0x7f;

// Bytes of the largest possible block of T: the page-full rule reserves room for one.
template <typename T>
constexpr size_t kMaxBlockBytes = 1 + 2 * sizeof(T) + kRowBytes * 8 * sizeof(T);

template <typename U>
void PutCell(std::string* buf, U v) {
  buf->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
template <typename U>
U GetCell(const char* p) {
  U v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

template <typename T>
BitPackedPageBuilder<T>::BitPackedPageBuilder(const PageBuilderOptions& options)
    : page_size_(options.page_size_bytes) {
  Reset();
}

template <typename T>
size_t BitPackedPageBuilder<T>::Add(const void* cells, size_t n) {
  const T* values = static_cast<const T*>(cells);
  size_t taken = 0;
  while (taken < n && !IsFull()) {
    const size_t k = std::min(n - taken, kBlockValues - num_pending_);
    std::memcpy(pending_ + num_pending_, values + taken, k * sizeof(T));
    if (count_ == 0) first_ = values[0];
    num_pending_ += k;
    count_ += k;
    taken += k;
    if (num_pending_ == kBlockValues) FlushBlock();
  }
  if (taken > 0) last_ = values[taken - 1];
  return taken;
}

template <typename T>
bool BitPackedPageBuilder<T>::IsFull() const {
  // Only whole blocks end a page (kMaxValuesPerPage is a multiple of 128), and the room of one
  // worst-case block is reserved, so the page ends within the target.
  return num_pending_ == 0 &&
         encoding_internal::IsPageFull(count_, buf_.size() + kMaxBlockBytes<T>, page_size_);
}

// Codes pending_[0, num_pending_) as one block, FOR or DELTA, whichever is smaller.
template <typename T>
void BitPackedPageBuilder<T>::FlushBlock() {
  using U = std::make_unsigned_t<T>;
  const size_t n = num_pending_;
  DCHECK_GT(n, 0u);
  T min = pending_[0], max = pending_[0];
  T dmin = 0, dmax = 0;
  for (size_t i = 1; i < n; i++) {
    min = std::min(min, pending_[i]);
    max = std::max(max, pending_[i]);
    const T d = static_cast<T>(U(U(pending_[i]) - U(pending_[i - 1])));
    dmin = i == 1 ? d : std::min(dmin, d);
    dmax = i == 1 ? d : std::max(dmax, d);
  }
  const int for_width = std::bit_width(U(U(max) - U(min)));
  const int delta_width = std::bit_width(U(U(dmax) - U(dmin)));
  const bool use_delta = kRowBytes * delta_width + sizeof(T) < kRowBytes * for_width;
  U residuals[kBlockValues] = {};
  int width;
  if (use_delta) {
    width = delta_width;
    buf_.push_back(static_cast<char>(width | kDeltaFlag));
    PutCell<U>(&buf_, U(U(pending_[0]) - U(dmin)));
    PutCell<U>(&buf_, U(dmin));
    for (size_t i = 1; i < n; i++) {
      residuals[i] = U(U(U(pending_[i]) - U(pending_[i - 1])) - U(dmin));
    }
  } else {
    width = for_width;
    buf_.push_back(static_cast<char>(width));
    PutCell<U>(&buf_, U(min));
    for (size_t i = 0; i < n; i++) residuals[i] = U(U(pending_[i]) - U(min));
  }
  const size_t at = buf_.size();
  buf_.resize(at + kRowBytes * width);
  bitpacking::PackBlock<U>(residuals, width, reinterpret_cast<uint8_t*>(buf_.data() + at));
  num_pending_ = 0;
}

template <typename T>
std::string_view BitPackedPageBuilder<T>::Finish() {
  if (num_pending_ > 0) FlushBlock();
  encoding_internal::PatchPageCount(&buf_, 0, count_);
  return buf_;
}

template <typename T>
void BitPackedPageBuilder<T>::Reset() {
  buf_.clear();
  encoding_internal::PutPageCountPlaceholder(&buf_);
  buf_.push_back(static_cast<char>(sizeof(T)));
  num_pending_ = 0;
  count_ = 0;
}

template <typename T>
bool BitPackedPageBuilder<T>::GetFirstValue(void* cell) const {
  if (count_ == 0) return false;
  std::memcpy(cell, &first_, sizeof(T));
  return true;
}

template <typename T>
bool BitPackedPageBuilder<T>::GetLastValue(void* cell) const {
  if (count_ == 0) return false;
  std::memcpy(cell, &last_, sizeof(T));
  return true;
}

template <typename T>
BitPackedPageDecoder<T>::BitPackedPageDecoder(BlockValidation validation)
    : validation_(validation) {}

template <typename T>
absl::Status BitPackedPageDecoder<T>::Init(std::string_view page) {
  return InitWithLayout(page, nullptr);
}

namespace {

// A BIT_PACKED page's block offsets: num_blocks + 1 entries, the last one the end of the blocks.
class BitPackedLayout final : public PageLayout {
 public:
  explicit BitPackedLayout(std::vector<uint32_t> offsets) : offsets_(std::move(offsets)) {}
  size_t MemoryUsage() const override { return offsets_.capacity() * sizeof(uint32_t); }
  const std::vector<uint32_t>& offsets() const { return offsets_; }

 private:
  const std::vector<uint32_t> offsets_;
};

}  // namespace

template <typename T>
absl::Status BitPackedPageDecoder<T>::InitWithLayout(std::string_view page,
                                                     const PageLayout* layout) {
  uint32_t count;
  BASALT_RETURN_IF_ERROR(encoding_internal::ReadPageCount(kBitPacked, &page, &count));
  if (page.empty() || static_cast<uint8_t>(page[0]) != sizeof(T)) {
    return Corruption(kBitPacked, "cell width ",
                      page.empty() ? -1 : static_cast<int>(static_cast<uint8_t>(page[0])),
                      " does not match the column's ", sizeof(T), " bytes");
  }
  page.remove_prefix(1);
  const size_t num_blocks = (count + kBlockValues - 1) / kBlockValues;
  // Every block holds between a bare FOR header and the largest block.
  if (page.size() < num_blocks * (1 + sizeof(T)) || page.size() > num_blocks * kMaxBlockBytes<T>) {
    return Corruption(kBitPacked, page.size(), " bytes cannot hold ", num_blocks, " blocks of ",
                      sizeof(T), "-byte values");
  }
  data_ = page.data();
  size_ = page.size();
  count_ = count;
  num_blocks_ = num_blocks;
  pos_ = 0;
  scratch_block_ = SIZE_MAX;
  const auto* l = dynamic_cast<const BitPackedLayout*>(layout);
  // A layout of other bytes would send decodes out of the page: its end must be this page's.
  if (l != nullptr && l->offsets().size() == num_blocks + 1 && l->offsets().back() == size_) {
    offsets_ = l->offsets().data();
    walked_ = num_blocks;
    return absl::OkStatus();
  }
  if (block_offsets_.size() < num_blocks + 1) block_offsets_.resize(num_blocks + 1);
  block_offsets_[0] = 0;
  offsets_ = block_offsets_.data();
  walked_ = 0;
  if (validation_ == BlockValidation::kAtInit && num_blocks > 0) {
    if (absl::Status s = WalkTo(num_blocks - 1); !s.ok()) {
      count_ = 0;  // Nothing of a malformed page is decodable.
      return s;
    }
  }
  return absl::OkStatus();
}

template <typename T>
std::unique_ptr<const PageLayout> BitPackedPageDecoder<T>::ComputeLayout(std::string_view page) {
  if (!Init(page).ok()) return nullptr;
  if (num_blocks_ > 0 && !EnsureWalked(num_blocks_ - 1).ok()) return nullptr;
  return std::make_unique<BitPackedLayout>(
      std::vector<uint32_t>(block_offsets_.begin(), block_offsets_.begin() + num_blocks_ + 1));
}

template <typename T>
absl::Status BitPackedPageDecoder<T>::WalkTo(size_t b) {
  DCHECK_LT(b, num_blocks_);
  DCHECK_EQ(offsets_, block_offsets_.data()) << "a layout's blocks are all walked";
  size_t off = block_offsets_[walked_];
  for (; walked_ <= b; walked_++) {
    if (off >= size_) {
      return Corruption(kBitPacked, "block ", walked_, " of ", num_blocks_, " starts past the end");
    }
    const uint8_t desc = static_cast<uint8_t>(data_[off]);
    const size_t width = desc & kWidthMask;
    if (width > 8 * sizeof(T)) {
      return Corruption(kBitPacked, "block ", walked_, " has bit width ", width, " for ",
                        8 * sizeof(T), "-bit values");
    }
    const size_t bytes = 1 + sizeof(T) * ((desc & kDeltaFlag) ? 2 : 1) + kRowBytes * width;
    if (bytes > size_ - off) {
      return Corruption(kBitPacked, "block ", walked_, " at offset ", off + 5, " needs ", bytes,
                        " bytes, ", size_ - off, " left");
    }
    off += bytes;
    block_offsets_[walked_ + 1] = static_cast<uint32_t>(off);
  }
  if (walked_ == num_blocks_ && off != size_) {
    walked_--;  // Keep failing: the last block is not usable.
    return Corruption(kBitPacked, size_ - off, " trailing bytes after ", num_blocks_, " blocks");
  }
  return absl::OkStatus();
}

template <typename T>
void BitPackedPageDecoder<T>::SeekToPositionInPage(size_t pos) {
  DCHECK_LE(pos, count_);
  pos_ = pos;
}

template <typename T>
typename BitPackedPageDecoder<T>::BlockHeader BitPackedPageDecoder<T>::HeaderOf(size_t b) const {
  DCHECK_LT(b, walked_);
  const char* p = data_ + offsets_[b];
  const uint8_t desc = static_cast<uint8_t>(*p++);
  BlockHeader h;
  h.width = desc & kWidthMask;
  h.delta = (desc & kDeltaFlag) != 0;
  h.ref = GetCell<U>(p);
  p += sizeof(U);
  if (h.delta) {
    h.min_delta = GetCell<U>(p);
    p += sizeof(U);
  }
  h.residuals = reinterpret_cast<const uint8_t*>(p);
  return h;
}

template <typename T>
void BitPackedPageDecoder<T>::DecodeBlock(size_t b, U* out) const {
  const BlockHeader h = HeaderOf(b);
  if (!h.delta) {
    bitpacking::UnpackBlock<U>(h.residuals, h.width, h.ref, out);
    return;
  }
  bitpacking::UnpackBlock<U>(h.residuals, h.width, h.min_delta, out);
  U acc = h.ref;
  for (size_t i = 0; i < kBlockValues; i++) {
    acc = U(acc + out[i]);
    out[i] = acc;
  }
}

template <typename T>
absl::StatusOr<typename BitPackedPageDecoder<T>::U> BitPackedPageDecoder<T>::ValueAt(size_t b,
                                                                                     size_t i) {
  if (scratch_block_ == b) return scratch_[i];
  BASALT_RETURN_IF_ERROR(EnsureWalked(b));
  const BlockHeader h = HeaderOf(b);
  if (!h.delta) return bitpacking::UnpackOne<U>(h.residuals, h.width, h.ref, i);
  if (i == 0) {  // The first value is the reference plus the first delta.
    return U(h.ref + bitpacking::UnpackOne<U>(h.residuals, h.width, h.min_delta, 0));
  }
  BASALT_ASSIGN_OR_RETURN(const U* block, ScratchBlock(b));  // Later values need every delta.
  return block[i];
}

template <typename T>
absl::Status BitPackedPageDecoder<T>::SeekAtOrAfterValue(const void* value, bool* exact) {
  // The page is sorted (REQUIRES of the interface). First the block: the first one whose first
  // value is >= the target, found from first values alone (no block decoded); the position is
  // then in the block before it, the only one decoded. The generic search compared values
  // through whole-block decodes, one per probe.
  T target;
  std::memcpy(&target, value, sizeof(T));
  size_t lo = 0, hi = num_blocks_;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    BASALT_ASSIGN_OR_RETURN(const U first, ValueAt(mid, 0));
    if (static_cast<T>(first) < target) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  size_t pos = lo * kBlockValues;  // Block lo starts at or after the target (or is the end).
  if (lo > 0) {
    const size_t b = lo - 1;
    BASALT_ASSIGN_OR_RETURN(const U* block, ScratchBlock(b));
    const size_t n = std::min(kBlockValues, count_ - b * kBlockValues);
    const U* it =
        std::lower_bound(block, block + n, target, [](U v, T t) { return static_cast<T>(v) < t; });
    pos = b * kBlockValues + static_cast<size_t>(it - block);
  }
  pos = std::min(pos, count_);
  SeekToPositionInPage(pos);
  if (pos == count_) {
    *exact = false;
    return absl::NotFoundError("every value in the page is smaller than the sought value");
  }
  BASALT_ASSIGN_OR_RETURN(const U v, ValueAt(pos / kBlockValues, pos % kBlockValues));
  *exact = static_cast<T>(v) == target;
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<const typename BitPackedPageDecoder<T>::U*> BitPackedPageDecoder<T>::ScratchBlock(
    size_t b) {
  if (scratch_block_ != b) {
    BASALT_RETURN_IF_ERROR(EnsureWalked(b));
    DecodeBlock(b, scratch_);
    scratch_block_ = b;
  }
  return scratch_;
}

template <typename T>
absl::StatusOr<size_t> BitPackedPageDecoder<T>::DecodeValues(size_t n, T* out) {
  const size_t k = std::min(n, count_ - pos_);
  U* dst = reinterpret_cast<U*>(out);
  size_t done = 0;
  while (done < k) {
    const size_t b = pos_ / kBlockValues;
    const size_t in_block = pos_ % kBlockValues;
    const size_t take = std::min(k - done, kBlockValues - in_block);
    if (take == kBlockValues) {
      BASALT_RETURN_IF_ERROR(EnsureWalked(b));
      DecodeBlock(b, dst + done);  // Whole block straight into the output.
    } else if (take == 1 && scratch_block_ != b) {
      // One value (a point lookup's cell): unpacked alone where the block allows it.
      BASALT_ASSIGN_OR_RETURN(dst[done], ValueAt(b, in_block));
    } else {
      BASALT_ASSIGN_OR_RETURN(const U* block, ScratchBlock(b));
      std::memcpy(dst + done, block + in_block, take * sizeof(U));
    }
    done += take;
    pos_ += take;
  }
  return k;
}

template <typename T>
size_t BitPackedPageDecoder<T>::DecodeRaw(size_t n, T* out) {
  DCHECK(validation_ == BlockValidation::kAtInit);
  absl::StatusOr<size_t> k = DecodeValues(n, out);
  CHECK(k.ok()) << k.status();  // Init() validated every block.
  return *k;
}

template <typename T>
bool BitPackedPageDecoder<T>::ConstantRun(size_t n, T* value, size_t* run) const {
  DCHECK(validation_ == BlockValidation::kAtInit);
  if (pos_ >= count_ || n == 0) return false;
  // A width-0 FOR block, or a width-0 DELTA block whose deltas are 0 (min_delta 0).
  const BlockHeader h = HeaderOf(pos_ / kBlockValues);
  if (h.width != 0 || h.min_delta != 0) return false;
  *value = static_cast<T>(h.ref);
  *run = std::min({n, kBlockValues - pos_ % kBlockValues, count_ - pos_});
  return true;
}

template <typename T>
absl::StatusOr<size_t> BitPackedPageDecoder<T>::DecodeNext(size_t n, ColumnBlock* out,
                                                           size_t dst_offset) {
  DCHECK_EQ(out->cell_size, sizeof(T));
  DCHECK_LE(dst_offset + std::min(n, count_ - pos_), out->capacity);
  return DecodeValues(n, out->data<T>() + dst_offset);
}

template <typename T>
absl::Status BitPackedPageDecoder<T>::CompareAt(size_t pos, const void* value, int* result) {
  BASALT_ASSIGN_OR_RETURN(const U* block, ScratchBlock(pos / kBlockValues));
  const T v = static_cast<T>(block[pos % kBlockValues]);
  T target;
  std::memcpy(&target, value, sizeof(T));
  *result = (v > target) - (v < target);
  return absl::OkStatus();
}

template class BitPackedPageBuilder<int8_t>;
template class BitPackedPageBuilder<int16_t>;
template class BitPackedPageBuilder<int32_t>;
template class BitPackedPageBuilder<int64_t>;
template class BitPackedPageDecoder<int8_t>;
template class BitPackedPageDecoder<int16_t>;
template class BitPackedPageDecoder<int32_t>;
template class BitPackedPageDecoder<int64_t>;

std::unique_ptr<PageBuilder> NewBitPackedPageBuilder(DataType type,
                                                     const PageBuilderOptions& options) {
  switch (GetTypeInfo(type).size()) {
    case 1:
      return std::make_unique<BitPackedPageBuilder<int8_t>>(options);
    case 2:
      return std::make_unique<BitPackedPageBuilder<int16_t>>(options);
    case 4:
      return std::make_unique<BitPackedPageBuilder<int32_t>>(options);
    case 8:
      return std::make_unique<BitPackedPageBuilder<int64_t>>(options);
  }
  LOG(FATAL) << "BIT_PACKED cannot store " << DataTypeName(type);
  return nullptr;
}

std::unique_ptr<PageDecoder> NewBitPackedPageDecoder(DataType type) {
  // Every caller of a PageDecoder handles DecodeNext() errors, so blocks are walked lazily.
  constexpr auto kLazy = BitPackedBlockValidation::kOnFirstUse;
  switch (GetTypeInfo(type).size()) {
    case 1:
      return std::make_unique<BitPackedPageDecoder<int8_t>>(kLazy);
    case 2:
      return std::make_unique<BitPackedPageDecoder<int16_t>>(kLazy);
    case 4:
      return std::make_unique<BitPackedPageDecoder<int32_t>>(kLazy);
    case 8:
      return std::make_unique<BitPackedPageDecoder<int64_t>>(kLazy);
  }
  LOG(FATAL) << "BIT_PACKED cannot store " << DataTypeName(type);
  return nullptr;
}

}  // namespace basalt
