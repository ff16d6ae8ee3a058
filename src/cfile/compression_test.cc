#include "cfile/compression.h"

#include <cstring>
#include <memory>
#include <string>

#include "common/random.h"
#include "common/status_test_util.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"

DECLARE_string(cfile_default_compression_codec);

namespace basalt {
namespace {
namespace compression_test_file {

constexpr size_t kGuard = 64;
constexpr char kGuardByte = '\xab';

// Decompresses `in` into a buffer of `len` bytes followed by guard bytes; fails the test if the
// codec wrote past `len`. Returns the status and, on OK, the output.
absl::Status UncompressGuarded(const CompressionCodec& codec, std::string_view in, size_t len,
                               std::string* out) {
  std::unique_ptr<char[]> buf(new char[len + kGuard]);
  std::memset(buf.get(), kGuardByte, len + kGuard);
  absl::Status s = codec.Uncompress(in, buf.get(), len);
  for (size_t i = 0; i < kGuard; ++i) {
    if (buf[len + i] != kGuardByte) {
      ADD_FAILURE() << CompressionTypeName(codec.type()) << " wrote past the output buffer";
      break;
    }
  }
  if (s.ok()) out->assign(buf.get(), len);
  return s;
}

// Text-like data that every codec shrinks.
std::string Compressible(Random* rng, size_t n) {
  static constexpr std::string_view kWords[] = {"alpha ",  "beta ",   "gamma ", "delta ",
                                                "basalt ", "column ", "page ",  "0123 "};
  std::string s;
  while (s.size() < n) s += kWords[rng->Uniform(std::size(kWords))];
  s.resize(n);
  return s;
}

class CodecTest : public testing::TestWithParam<CompressionType> {
 protected:
  CodecTest() : rng_(SeedFromEnvOrTime()) {}
  const CompressionCodec& codec() const { return **GetCompressionCodec(GetParam()); }

  void RoundTrip(const std::string& in) {
    std::string compressed;
    BASALT_ASSERT_OK(codec().Compress(in, &compressed));
    EXPECT_LE(compressed.size(), codec().MaxCompressedLength(in.size()));
    std::string out;
    BASALT_ASSERT_OK(UncompressGuarded(codec(), compressed, in.size(), &out));
    EXPECT_EQ(out, in);
  }

  Random rng_;
};

TEST_P(CodecTest, RoundTrips) {
  EXPECT_EQ(codec().type(), GetParam());
  RoundTrip("");
  RoundTrip("x");
  RoundTrip(std::string(1, '\0'));
  RoundTrip(rng_.Bytes(100 * 1024));
  RoundTrip(std::string(256 * 1024, 'z'));
  for (int i = 0; i < 20; ++i) RoundTrip(rng_.Bytes(rng_.Skewed(16)));
}

TEST_P(CodecTest, ShrinksCompressibleData) {
  const std::string in = Compressible(&rng_, 64 * 1024);
  std::string compressed;
  BASALT_ASSERT_OK(codec().Compress(in, &compressed));
  if (GetParam() == CompressionType::kNone) {
    EXPECT_EQ(compressed, in);
  } else {
    EXPECT_LT(compressed.size(), in.size() / 2) << CompressionTypeName(GetParam());
  }
}

TEST_P(CodecTest, WrongLengthIsDataLoss) {
  const std::string in = Compressible(&rng_, 1000);
  std::string compressed, out;
  BASALT_ASSERT_OK(codec().Compress(in, &compressed));
  for (size_t len : {size_t{0}, size_t{999}, size_t{1001}, size_t{4000}}) {
    absl::Status s = UncompressGuarded(codec(), compressed, len, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << len << " " << s;
  }
}

TEST_P(CodecTest, CorruptInputIsAnErrorNeverACrash) {
  // Half compressible, half random, so the stream has both matches and literals.
  const std::string in = Compressible(&rng_, 3000) + rng_.Bytes(1000);
  std::string compressed, out;
  BASALT_ASSERT_OK(codec().Compress(in, &compressed));
  int errors = 0;
  auto check = [&](const std::string& bad) {
    absl::Status s = UncompressGuarded(codec(), bad, in.size(), &out);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
      ++errors;
    }
  };
  for (size_t i = 0; i < compressed.size(); ++i) {
    std::string bad = compressed;
    bad[i] ^= static_cast<char>(1 << rng_.Uniform(8));
    check(bad);
    bad = compressed;
    bad[i] = 0;
    check(bad);
    check(compressed.substr(0, i));  // Truncated.
  }
  check(compressed + "junk");
  check(std::string());
  // Truncation always loses data (NONE included), so most variants must fail.
  EXPECT_GE(errors, static_cast<int>(compressed.size()));
}

TEST_P(CodecTest, RandomGarbageIsAnErrorNeverACrash) {
  std::string out;
  for (int i = 0; i < 2000; ++i) {
    const std::string garbage = rng_.Bytes(rng_.Skewed(12));
    const size_t len = rng_.Skewed(14);
    absl::Status s = UncompressGuarded(codec(), garbage, len, &out);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecTest,
                         testing::Values(CompressionType::kNone, CompressionType::kSnappy,
                                         CompressionType::kLz4, CompressionType::kZlib,
                                         CompressionType::kZstd),
                         [](const testing::TestParamInfo<CompressionType>& info) {
                           return std::string(CompressionTypeName(info.param));
                         });

TEST(CompressionTest, GetCodecRejectsDefaultAndUnknownTypes) {
  EXPECT_EQ(GetCompressionCodec(CompressionType::kDefault).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GetCompressionCodec(static_cast<CompressionType>(77)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CompressionTest, ParseCompressionType) {
  EXPECT_EQ(*ParseCompressionType("lz4"), CompressionType::kLz4);
  EXPECT_EQ(*ParseCompressionType("ZSTD"), CompressionType::kZstd);
  EXPECT_EQ(*ParseCompressionType("Snappy"), CompressionType::kSnappy);
  EXPECT_EQ(*ParseCompressionType("none"), CompressionType::kNone);
  EXPECT_EQ(*ParseCompressionType("zlib"), CompressionType::kZlib);
  EXPECT_EQ(*ParseCompressionType("default"), CompressionType::kDefault);
  EXPECT_EQ(ParseCompressionType("gzip").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCompressionType("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CompressionTest, ResolveCompressionDefaults) {
  gflags::FlagSaver saver;
  EXPECT_EQ(ResolveCompression(DataType::kInt32, CompressionType::kDefault),
            CompressionType::kNone);
  EXPECT_EQ(ResolveCompression(DataType::kDouble, CompressionType::kDefault),
            CompressionType::kNone);
  EXPECT_EQ(ResolveCompression(DataType::kString, CompressionType::kDefault),
            CompressionType::kLz4);
  EXPECT_EQ(ResolveCompression(DataType::kBinary, CompressionType::kDefault),
            CompressionType::kLz4);
  EXPECT_EQ(ResolveCompression(DataType::kInt32, CompressionType::kZstd), CompressionType::kZstd);

  EXPECT_TRUE(gflags::SetCommandLineOption("cfile_default_compression_codec", "gzip").empty());
  EXPECT_EQ(FLAGS_cfile_default_compression_codec, "");  // The validator refused "gzip".
  ASSERT_FALSE(gflags::SetCommandLineOption("cfile_default_compression_codec", "zstd").empty());
  EXPECT_EQ(ResolveCompression(DataType::kInt32, CompressionType::kDefault),
            CompressionType::kZstd);
  EXPECT_EQ(ResolveCompression(DataType::kString, CompressionType::kDefault),
            CompressionType::kZstd);
  EXPECT_EQ(ResolveCompression(DataType::kString, CompressionType::kNone), CompressionType::kNone);
}

}  // namespace compression_test_file
}  // namespace
}  // namespace basalt
