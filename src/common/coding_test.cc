#include "common/coding.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace coding_test_file {

TEST(CodingTest, FixedRoundTripIsLittleEndian) {
  std::string s;
  PutFixed32(&s, 0x04030201);
  PutFixed64(&s, 0x0807060504030201ull);
  ASSERT_EQ(s.size(), 12u);
  EXPECT_EQ(s.substr(0, 4), std::string("\x01\x02\x03\x04", 4));
  std::string_view in(s);
  uint32_t a;
  uint64_t b;
  ASSERT_TRUE(GetFixed32(&in, &a));
  ASSERT_TRUE(GetFixed64(&in, &b));
  EXPECT_EQ(a, 0x04030201u);
  EXPECT_EQ(b, 0x0807060504030201ull);
  EXPECT_TRUE(in.empty());
  EXPECT_FALSE(GetFixed32(&in, &a));
}

TEST(CodingTest, BigEndianOrdersLikeMemcmp) {
  char a[8], b[8];
  EncodeBigEndian64(a, 0x00ff);
  EncodeBigEndian64(b, 0x0100);
  EXPECT_LT(std::memcmp(a, b, 8), 0);
  EXPECT_EQ(DecodeBigEndian64(b), 0x0100u);
  EncodeBigEndian32(a, 0xdeadbeef);
  EXPECT_EQ(static_cast<unsigned char>(a[0]), 0xde);
  EXPECT_EQ(DecodeBigEndian32(a), 0xdeadbeefu);
}

TEST(CodingTest, Varint64RoundTripAtEveryLength) {
  std::vector<uint64_t> values = {0,
                                  1,
                                  127,
                                  128,
                                  16383,
                                  16384,
                                  (1ull << 32) - 1,
                                  1ull << 32,
                                  std::numeric_limits<uint64_t>::max()};
  for (int shift = 0; shift < 64; shift++) values.push_back(1ull << shift);
  std::string s;
  for (uint64_t v : values) PutVarint64(&s, v);
  std::string_view in(s);
  for (uint64_t v : values) {
    uint64_t got;
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
  }
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(VarintLength(std::numeric_limits<uint64_t>::max()), kMaxVarint64Length);
}

TEST(CodingTest, Varint32RejectsTruncatedAndOverlong) {
  std::string s;
  PutVarint32(&s, std::numeric_limits<uint32_t>::max());
  ASSERT_EQ(s.size(), 5u);
  for (size_t len = 0; len < s.size(); len++) {
    std::string_view in(s.data(), len);
    uint32_t v;
    EXPECT_FALSE(GetVarint32(&in, &v)) << "len " << len;
  }
  // A fifth byte carrying more than 4 bits would overflow 32 bits.
  std::string overlong("\xff\xff\xff\xff\x1f", 5);
  std::string_view in(overlong);
  uint32_t v;
  EXPECT_FALSE(GetVarint32(&in, &v));
  // Eleven continuation bytes never end a 64-bit varint.
  std::string endless(11, '\x80');
  std::string_view in64(endless);
  uint64_t v64;
  EXPECT_FALSE(GetVarint64(&in64, &v64));
}

TEST(CodingTest, LengthPrefixedRejectsShortPayload) {
  std::string s;
  PutLengthPrefixed(&s, "hello");
  std::string_view in(s);
  std::string_view out;
  ASSERT_TRUE(GetLengthPrefixed(&in, &out));
  EXPECT_EQ(out, "hello");
  std::string_view cut(s.data(), s.size() - 1);
  EXPECT_FALSE(GetLengthPrefixed(&cut, &out));
}

}  // namespace coding_test_file
}  // namespace
}  // namespace basalt
