#include "common/bitmap.h"

#include <cstring>

namespace basalt {
namespace bitmap_internal {
namespace {

inline uint64_t LoadWord(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

// Bit count of a 64-bit word without the POPCNT instruction (SWAR), so the portable build does
// not call libgcc's __popcountdi2 once per word.
inline int PopcountSwar(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

// Counts the set bits among the first `num_bits` of `p`, a word at a time; `popcount` is inlined
// so each caller is compiled with its own target features.
template <typename Popcount>
__attribute__((always_inline)) inline size_t CountBits(const uint8_t* p, size_t num_bits,
                                                       Popcount popcount) {
  const size_t num_bytes = num_bits / 8;
  size_t i = 0;
  // Four independent accumulators keep the adds off one dependency chain.
  size_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  for (; i + 32 <= num_bytes; i += 32) {
    c0 += popcount(LoadWord(p + i));
    c1 += popcount(LoadWord(p + i + 8));
    c2 += popcount(LoadWord(p + i + 16));
    c3 += popcount(LoadWord(p + i + 24));
  }
  size_t count = c0 + c1 + c2 + c3;
  for (; i + 8 <= num_bytes; i += 8) count += popcount(LoadWord(p + i));
  // The last partial word: whole bytes, then the bits of a partial byte.
  if (const size_t tail_bits = num_bits - 8 * i; tail_bits > 0) {
    uint64_t tail = 0;
    std::memcpy(&tail, p + i, BitmapSize(tail_bits));
    count += popcount(tail & (~uint64_t{0} >> (64 - tail_bits)));
  }
  return count;
}

using CountFn = size_t (*)(const uint8_t*, size_t);

CountFn ChooseCountFn() { return HasHardwarePopcount() ? &CountBitsHardware : &CountBitsPortable; }

}  // namespace

size_t CountBitsPortable(const uint8_t* bitmap, size_t num_bits) {
  return CountBits(bitmap, num_bits, [](uint64_t w) { return PopcountSwar(w); });
}

#if defined(__x86_64__)
__attribute__((target("popcnt"))) size_t CountBitsHardware(const uint8_t* bitmap, size_t num_bits) {
  return CountBits(bitmap, num_bits, [](uint64_t w) { return __builtin_popcountll(w); });
}

bool HasHardwarePopcount() {
  static const bool has = __builtin_cpu_supports("popcnt");
  return has;
}
#else
// Elsewhere __builtin_popcountll is the target's own instruction or libgcc's fallback.
size_t CountBitsHardware(const uint8_t* bitmap, size_t num_bits) {
  return CountBits(bitmap, num_bits, [](uint64_t w) { return __builtin_popcountll(w); });
}

bool HasHardwarePopcount() { return true; }
#endif

}  // namespace bitmap_internal

size_t BitmapCountSet(const uint8_t* bitmap, size_t num_bits) {
  static const bitmap_internal::CountFn count_bits = bitmap_internal::ChooseCountFn();
  return count_bits(bitmap, num_bits);
}

}  // namespace basalt
