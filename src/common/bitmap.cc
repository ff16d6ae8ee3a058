#include "common/bitmap.h"

namespace basalt {

size_t BitmapCountSet(const uint8_t* bitmap, size_t num_bits) {
  size_t count = 0;
  size_t full_bytes = num_bits / 8;
  for (size_t i = 0; i < full_bytes; i++) count += __builtin_popcount(bitmap[i]);
  for (size_t i = full_bytes * 8; i < num_bits; i++) count += BitmapTest(bitmap, i);
  return count;
}

}  // namespace basalt
