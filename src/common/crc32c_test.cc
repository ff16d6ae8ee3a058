#include "common/crc32c.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/random.h"

namespace basalt::crc32c {
namespace {
namespace crc32c_test_file {

struct Vector {
  std::string data;
  uint32_t crc;
};

// RFC 3720 section B.4 plus the customary check value.
std::vector<Vector> PublishedVectors() {
  std::vector<Vector> v;
  v.push_back({std::string(32, '\0'), 0x8a9136aau});
  v.push_back({std::string(32, '\xff'), 0x62a8ab43u});
  std::string asc(32, '\0'), desc(32, '\0');
  for (int i = 0; i < 32; ++i) {
    asc[i] = static_cast<char>(i);
    desc[i] = static_cast<char>(31 - i);
  }
  v.push_back({asc, 0x46dd794eu});
  v.push_back({desc, 0x113fdb5cu});
  v.push_back({"123456789", 0xe3069283u});
  v.push_back({"", 0u});
  return v;
}

TEST(Crc32cTest, PublishedVectorsDefaultPath) {
  for (const Vector& v : PublishedVectors()) {
    EXPECT_EQ(Value(v.data.data(), v.data.size()), v.crc) << "size=" << v.data.size();
    EXPECT_EQ(Value(v.data), v.crc);
  }
}

TEST(Crc32cTest, PublishedVectorsSoftware) {
  for (const Vector& v : PublishedVectors()) {
    EXPECT_EQ(internal::ExtendSoftware(0, v.data.data(), v.data.size()), v.crc);
  }
}

TEST(Crc32cTest, PublishedVectorsHardware) {
  if (!internal::HardwareAvailable()) GTEST_SKIP() << "CPU lacks SSE4.2";
  for (const Vector& v : PublishedVectors()) {
    EXPECT_EQ(internal::ExtendHardware(0, v.data.data(), v.data.size()), v.crc);
  }
}

TEST(Crc32cTest, PublishedVectorsAtEveryAlignment) {
  // The implementations special-case unaligned heads and short tails; shift the input through
  // every offset of an 8-byte word.
  for (const Vector& v : PublishedVectors()) {
    for (size_t offset = 0; offset < 16; ++offset) {
      std::vector<char> buf(offset + v.data.size() + 1);
      std::memcpy(buf.data() + offset, v.data.data(), v.data.size());
      const char* p = buf.data() + offset;
      EXPECT_EQ(internal::ExtendSoftware(0, p, v.data.size()), v.crc) << "offset=" << offset;
      if (internal::HardwareAvailable()) {
        EXPECT_EQ(internal::ExtendHardware(0, p, v.data.size()), v.crc) << "offset=" << offset;
      }
    }
  }
}

TEST(Crc32cTest, HardwareMatchesSoftwareOnRandomBuffers) {
  if (!internal::HardwareAvailable()) GTEST_SKIP() << "CPU lacks SSE4.2";
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rng(seed);
  const std::string buf = rng.Bytes(70000);
  for (int i = 0; i < 2000; ++i) {
    const size_t len = rng.Skewed(16);
    const size_t offset = rng.Uniform(buf.size() - len + 1);
    const uint32_t init = rng.OneIn(2) ? 0 : rng.Next32();
    const char* p = buf.data() + offset;
    ASSERT_EQ(internal::ExtendHardware(init, p, len), internal::ExtendSoftware(init, p, len))
        << "offset=" << offset << " len=" << len << " init=" << init;
  }
}

TEST(Crc32cTest, ExtendComposes) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rng(seed);
  for (int i = 0; i < 200; ++i) {
    const std::string data = rng.Bytes(rng.Uniform(3000));
    const size_t split = rng.Uniform(data.size() + 1);
    const uint32_t whole = Value(data);
    const uint32_t first = Value(data.data(), split);
    EXPECT_EQ(Extend(first, data.data() + split, data.size() - split), whole);
    EXPECT_EQ(internal::ExtendSoftware(internal::ExtendSoftware(0, data.data(), split),
                                       data.data() + split, data.size() - split),
              whole);
  }
  EXPECT_EQ(Extend(Value("hello ", 6), "world", 5), Value("hello world", 11));
}

TEST(Crc32cTest, DifferentInputsGiveDifferentValues) {
  EXPECT_NE(Value("a", 1), Value("foo", 3));
  EXPECT_NE(Value("foo", 3), Value("bar", 3));
  // A single flipped bit always changes a CRC.
  std::string data(1000, 'x');
  const uint32_t base = Value(data);
  for (size_t i = 0; i < data.size(); i += 37) {
    std::string flipped = data;
    flipped[i] ^= 0x10;
    EXPECT_NE(Value(flipped), base) << "i=" << i;
  }
}

TEST(Crc32cTest, MaskRoundTripsAndChangesValue) {
  const uint32_t crc = Value("foo", 3);
  EXPECT_NE(crc, Mask(crc));
  EXPECT_NE(crc, Mask(Mask(crc)));
  EXPECT_EQ(crc, Unmask(Mask(crc)));
  EXPECT_EQ(crc, Unmask(Unmask(Mask(Mask(crc)))));
  Random rng(42);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t v = rng.Next32();
    EXPECT_EQ(Unmask(Mask(v)), v);
  }
  for (uint32_t v : {0u, 1u, 0xffffffffu, 0x80000000u}) EXPECT_EQ(Unmask(Mask(v)), v);
  // Golden value: the masking formula is part of every on-disk format.
  EXPECT_EQ(Mask(0), kMaskDelta);
  EXPECT_EQ(Mask(0xe3069283u), ((0xe3069283u >> 15) | (0xe3069283u << 17)) + 0xa282ead8u);
}

}  // namespace crc32c_test_file
}  // namespace
}  // namespace basalt::crc32c
