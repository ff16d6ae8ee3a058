#include "common/bitmap.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "common/random.h"

namespace basalt {
namespace {
namespace bitmap_test_file {

size_t NaiveCountSet(const uint8_t* bitmap, size_t num_bits) {
  size_t count = 0;
  for (size_t i = 0; i < num_bits; i++) count += BitmapTest(bitmap, i);
  return count;
}

TEST(BitmapTest, SetClearTest) {
  uint8_t bm[3] = {};
  BitmapSet(bm, 0);
  BitmapSet(bm, 9);
  BitmapChange(bm, 23, true);
  EXPECT_EQ(bm[0], 0x01);
  EXPECT_EQ(bm[1], 0x02);
  EXPECT_EQ(bm[2], 0x80);
  BitmapClear(bm, 9);
  BitmapChange(bm, 0, false);
  EXPECT_EQ(bm[0], 0);
  EXPECT_EQ(bm[1], 0);
  EXPECT_TRUE(BitmapTest(bm, 23));
  EXPECT_EQ(BitmapSize(0), 0u);
  EXPECT_EQ(BitmapSize(1), 1u);
  EXPECT_EQ(BitmapSize(64), 8u);
  EXPECT_EQ(BitmapSize(65), 9u);
}

// Every length 0..300 at every byte misalignment 0..7, random bits with varying densities, both
// implementations and the dispatching entry point against a bit-at-a-time count. Bits past
// num_bits are set so counting them would show.
TEST(BitmapTest, CountSetMatchesNaive) {
  Random rng(SeedFromEnvOrTime());
  std::vector<uint8_t> buf(64);
  for (size_t offset = 0; offset < 8; offset++) {
    for (size_t num_bits = 0; num_bits <= 300; num_bits++) {
      const uint32_t density = rng.Uniform(9);  // Each bit set with probability density / 8.
      buf.assign(offset + BitmapSize(num_bits) + 16, 0xff);
      uint8_t* bm = buf.data() + offset;
      for (size_t i = 0; i < num_bits; i++) BitmapChange(bm, i, rng.Uniform(8) < density);
      const size_t want = NaiveCountSet(bm, num_bits);
      ASSERT_EQ(BitmapCountSet(bm, num_bits), want) << "bits " << num_bits << " offset " << offset;
      ASSERT_EQ(bitmap_internal::CountBitsPortable(bm, num_bits), want) << "bits " << num_bits;
      if (bitmap_internal::HasHardwarePopcount()) {
        ASSERT_EQ(bitmap_internal::CountBitsHardware(bm, num_bits), want) << "bits " << num_bits;
      }
    }
  }
}

TEST(BitmapTest, CountSetAllOnesAndLarge) {
  std::vector<uint8_t> ones(1 << 16, 0xff);
  EXPECT_EQ(BitmapCountSet(ones.data(), ones.size() * 8), ones.size() * 8);
  EXPECT_EQ(BitmapCountSet(ones.data(), 12345), 12345u);
  EXPECT_EQ(bitmap_internal::CountBitsPortable(ones.data(), 12345), 12345u);
  std::vector<uint8_t> zeros(1 << 16, 0);
  EXPECT_EQ(BitmapCountSet(zeros.data(), zeros.size() * 8), 0u);
}

}  // namespace bitmap_test_file
}  // namespace
}  // namespace basalt
