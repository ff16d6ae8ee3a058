#pragma once

// Bitmaps with one bit per column or row, LSB first within each byte: bit i is
// (bitmap[i / 8] >> (i % 8)) & 1. Used by row buffers, the row-operation wire format and
// selection vectors.

#include <cstddef>
#include <cstdint>

namespace basalt {

// Bytes of a bitmap with one bit per column/row.
inline size_t BitmapSize(size_t num_bits) { return (num_bits + 7) / 8; }
inline bool BitmapTest(const uint8_t* bitmap, size_t i) { return (bitmap[i >> 3] >> (i & 7)) & 1; }
inline void BitmapSet(uint8_t* bitmap, size_t i) { bitmap[i >> 3] |= uint8_t(1u << (i & 7)); }
inline void BitmapClear(uint8_t* bitmap, size_t i) { bitmap[i >> 3] &= uint8_t(~(1u << (i & 7))); }
inline void BitmapChange(uint8_t* bitmap, size_t i, bool v) {
  v ? BitmapSet(bitmap, i) : BitmapClear(bitmap, i);
}

// Number of set bits among the first `num_bits`. Counts a 64-bit word at a time, with the POPCNT
// instruction when the CPU has it (checked once at run time).
size_t BitmapCountSet(const uint8_t* bitmap, size_t num_bits);

namespace bitmap_internal {
// The two implementations BitmapCountSet picks from, exposed so tests cover both.
// CountBitsHardware REQUIRES HasHardwarePopcount().
size_t CountBitsPortable(const uint8_t* bitmap, size_t num_bits);
size_t CountBitsHardware(const uint8_t* bitmap, size_t num_bits);
bool HasHardwarePopcount();
}  // namespace bitmap_internal

}  // namespace basalt
