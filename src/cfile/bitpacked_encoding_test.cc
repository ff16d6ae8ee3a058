#include "cfile/bitpacked_encoding.h"

#include <cstring>
#include <vector>

#include "cfile/bitshuffle_encoding.h"
#include "common/random.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {

using bitpacking::kBlockValues;

template <typename U>
void CheckAllWidths(Random* rng) {
  const auto best = bitpacking::BestSupportedUnpackIsa();
  for (int width = 0; width <= 8 * int{sizeof(U)}; width++) {
    SCOPED_TRACE(testing::Message() << sizeof(U) << "-byte values, width " << width);
    U residuals[kBlockValues];
    const U mask = width >= 8 * int{sizeof(U)} ? U(~U(0)) : U((U(1) << width) - 1);
    for (size_t i = 0; i < kBlockValues; i++) residuals[i] = U(rng->Next64() & mask);
    if (width > 0) residuals[rng->Uniform(kBlockValues)] = mask;  // The widest residual.
    std::vector<uint8_t> packed(16 * width + 1, 0xee);
    bitpacking::PackBlock<U>(residuals, width, packed.data());
    EXPECT_EQ(packed.back(), 0xee) << "PackBlock wrote past 16 * width bytes";
    const U ref = U(rng->Next64());
    U portable[kBlockValues], fast[kBlockValues];
    bitpacking::SetUnpackIsaForTesting(bitpacking::UnpackIsa::kPortable);
    bitpacking::UnpackBlock<U>(packed.data(), width, ref, portable);
    bitpacking::SetUnpackIsaForTesting(best);
    bitpacking::UnpackBlock<U>(packed.data(), width, ref, fast);
    for (size_t i = 0; i < kBlockValues; i++) {
      ASSERT_EQ(portable[i], U(residuals[i] + ref)) << i;
      ASSERT_EQ(fast[i], portable[i]) << i;
    }
  }
}

TEST(BitPackingTest, PackUnpackEveryWidthBothIsas) {
  Random rng(SeedFromEnvOrTime());
  CheckAllWidths<uint8_t>(&rng);
  CheckAllWidths<uint16_t>(&rng);
  CheckAllWidths<uint32_t>(&rng);
  CheckAllWidths<uint64_t>(&rng);
}

TEST(BitPackingTest, SequentialKeysCostUnderOneBitPerValue) {
  BitPackedPageBuilder<int32_t> b({});
  std::vector<int32_t> keys(100000);
  for (size_t i = 0; i < keys.size(); i++) keys[i] = 1000 + static_cast<int32_t>(i);
  ASSERT_EQ(b.Add(keys.data(), keys.size()), keys.size());
  const size_t bytes = b.Finish().size();
  EXPECT_LE(8.0 * bytes / keys.size(), 1.0) << bytes << " bytes";
}

TEST(BitPackingTest, DecodesTheSameWithEitherIsa) {
  Random rng(SeedFromEnvOrTime());
  std::vector<int64_t> v(10000);
  for (size_t i = 0; i < v.size(); i++) v[i] = int64_t(i * 1000) + rng.UniformRange(-50, 50);
  BitPackedPageBuilder<int64_t> b({});
  ASSERT_EQ(b.Add(v.data(), v.size()), v.size());
  const std::string page(b.Finish());
  for (auto isa : {bitpacking::UnpackIsa::kPortable, bitpacking::BestSupportedUnpackIsa()}) {
    bitpacking::SetUnpackIsaForTesting(isa);
    BitPackedPageDecoder<int64_t> d;
    ASSERT_TRUE(d.Init(page).ok());
    std::vector<int64_t> out(v.size());
    ASSERT_EQ(d.DecodeRaw(v.size(), out.data()), v.size());
    EXPECT_EQ(out, v);
  }
  bitpacking::SetUnpackIsaForTesting(bitpacking::BestSupportedUnpackIsa());
}

TEST(BitShuffleTest, TransposeMatchesBitByBitReference) {
  Random rng(SeedFromEnvOrTime());
  for (size_t cell : {1, 2, 4, 8, 16}) {
    const size_t n8 = 8 * (1 + rng.Uniform(20));
    std::vector<uint8_t> in(n8 * cell), out(n8 * cell), back(n8 * cell), want(n8 * cell, 0);
    rng.Fill(reinterpret_cast<char*>(in.data()), in.size());
    // Plane 8k + b holds bit b of byte k of every value, value v at bit v % 8 of byte v / 8.
    for (size_t v = 0; v < n8; v++) {
      for (size_t k = 0; k < cell; k++) {
        for (size_t b = 0; b < 8; b++) {
          if ((in[v * cell + k] >> b) & 1) want[(8 * k + b) * (n8 / 8) + v / 8] |= 1 << (v % 8);
        }
      }
    }
    bitshuffle::Transpose(in.data(), n8, cell, out.data());
    EXPECT_EQ(out, want) << cell;
    bitshuffle::Untranspose(out.data(), n8, cell, back.data());
    EXPECT_EQ(back, in) << cell;
  }
}

}  // namespace
}  // namespace basalt
