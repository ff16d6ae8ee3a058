#include "cfile/bitpacked_encoding.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "cfile/bitshuffle_encoding.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace bitpacked_encoding_test_file {

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
      ASSERT_EQ(bitpacking::UnpackOne<U>(packed.data(), width, ref, i), portable[i]) << i;
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
    BASALT_ASSERT_OK(d.Init(page));
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
    // Any run of groups of 8 comes back alone, as a reader of a few values asks for it.
    for (int trial = 0; trial < 10; trial++) {
      const size_t first = rng.Uniform(n8 / 8);
      const size_t groups = 1 + rng.Uniform(n8 / 8 - first);
      std::vector<uint8_t> part(groups * 8 * cell);
      bitshuffle::UntransposeGroups(out.data(), n8, cell, first, groups, part.data());
      EXPECT_EQ(part, std::vector<uint8_t>(in.begin() + 8 * first * cell,
                                           in.begin() + 8 * (first + groups) * cell))
          << cell << " " << first << " " << groups;
    }
  }
}

// BitPackedPageDecoder block validation: lazy (kOnFirstUse, what NewBitPackedPageDecoder makes)
// against eager (kAtInit, what DICT's code decoder uses). Round trips and generic corruption of
// every encoding are in encoding_test.cc.

using Validation = BitPackedBlockValidation;

// Sequential values 0..n-1: every block is DELTA with width 0, a 17-byte header-only block
// (u8 desc, i64 ref, i64 min_delta), after the 5-byte page header.
constexpr size_t kPageHeader = 5;
constexpr size_t kSeqBlockBytes = 17;

std::string EncodeSequential(size_t n) {
  BitPackedPageBuilder<int64_t> builder{PageBuilderOptions{}};
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  EXPECT_EQ(builder.Add(v.data(), n), n);
  return std::string(builder.Finish());
}

TEST(BitPackedDecoderTest, LazyWalkReportsACorruptBlockWhenReached) {
  std::string page = EncodeSequential(1000);  // 8 blocks, the last one partly padding.
  ASSERT_EQ(page.size(), kPageHeader + 8 * kSeqBlockBytes);
  page[kPageHeader + 7 * kSeqBlockBytes] = static_cast<char>(0x80 | 65);  // Width 65 > 64.

  BitPackedPageDecoder<int64_t> eager(Validation::kAtInit);
  absl::Status s = eager.Init(page);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;

  BitPackedPageDecoder<int64_t> lazy(Validation::kOnFirstUse);
  BASALT_ASSERT_OK(lazy.Init(page));
  ASSERT_EQ(lazy.count(), 1000u);
  std::vector<int64_t> out(1000, -1);
  absl::StatusOr<size_t> k = lazy.DecodeValues(7 * 128, out.data());
  BASALT_ASSERT_OK(k);
  ASSERT_EQ(*k, 7u * 128);
  for (size_t i = 0; i < *k; i++) ASSERT_EQ(out[i], static_cast<int64_t>(i));
  for (int attempt = 0; attempt < 2; attempt++) {  // The error sticks.
    k = lazy.DecodeValues(10, out.data());
    ASSERT_TRUE(absl::IsDataLoss(k.status())) << k.status();
    EXPECT_NE(k.status().message().find("block 7"), std::string::npos) << k.status();
  }
  // The good blocks stay decodable, by position and by value.
  lazy.SeekToPositionInPage(300);
  k = lazy.DecodeValues(3, out.data());
  BASALT_ASSERT_OK(k);
  EXPECT_EQ(out[0], 300);
  EXPECT_EQ(out[2], 302);
  bool exact = false;
  const int64_t target = 500;
  BASALT_ASSERT_OK(lazy.SeekAtOrAfterValue(&target, &exact));
  EXPECT_TRUE(exact);
  EXPECT_EQ(lazy.position(), 500u);
  const int64_t in_bad_block = 990;
  s = lazy.SeekAtOrAfterValue(&in_bad_block, &exact);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
}

// A page whose size cannot match its block count fails Init() in both modes; one that merely
// ends early or late fails lazily when the walk reaches the end.
TEST(BitPackedDecoderTest, PageSizeChecks) {
  const std::string good = EncodeSequential(1000);
  const std::string trailing = good + "x";
  const std::string missing_last = good.substr(0, kPageHeader + 7 * kSeqBlockBytes);
  const std::string too_short = good.substr(0, kPageHeader + 10);
  const std::string too_long = good + std::string(8 * (1 + 16 + 16 * 64), '\0');
  for (Validation v : {Validation::kAtInit, Validation::kOnFirstUse}) {
    SCOPED_TRACE(v == Validation::kAtInit ? "eager" : "lazy");
    BitPackedPageDecoder<int64_t> d(v);
    EXPECT_TRUE(absl::IsDataLoss(d.Init(too_short)));
    EXPECT_TRUE(absl::IsDataLoss(d.Init(too_long)));
    for (const std::string* page : {&trailing, &missing_last}) {
      absl::Status s = d.Init(*page);
      if (v == Validation::kAtInit) {
        EXPECT_TRUE(absl::IsDataLoss(s)) << s;
        continue;
      }
      BASALT_ASSERT_OK(s);
      std::vector<int64_t> out(1000);
      absl::StatusOr<size_t> k = d.DecodeValues(1000, out.data());
      EXPECT_TRUE(absl::IsDataLoss(k.status())) << k.status();
    }
    BASALT_ASSERT_OK(d.Init(good));
    std::vector<int64_t> out(1000);
    absl::StatusOr<size_t> k = d.DecodeValues(1000, out.data());
    BASALT_ASSERT_OK(k);
    EXPECT_EQ(*k, 1000u);
    EXPECT_EQ(out[999], 999);
  }
}

// `n` values of random bit widths (0 to 32), so that a page mixes block sizes.
std::vector<int32_t> MixedWidthValues(size_t n, Random* rng) {
  std::vector<int32_t> values(n);
  for (size_t i = 0; i < n; i++) {
    const int bits = static_cast<int>(rng->Uniform(33));
    values[i] = static_cast<int32_t>(bits == 0 ? 0 : rng->Next64() >> (64 - bits));
  }
  return values;
}

std::string EncodeInt32s(const std::vector<int32_t>& values) {
  BitPackedPageBuilder<int32_t> builder{PageBuilderOptions{}};
  EXPECT_EQ(builder.Add(values.data(), values.size()), values.size());
  return std::string(builder.Finish());
}

// Random values of mixed widths, read back through random seeks and reads by a lazy and an eager
// decoder, which must agree with the input (and so with each other).
TEST(BitPackedDecoderTest, LazyAndEagerDecodeTheSame) {
  Random rng(SeedFromEnvOrTime());
  const std::vector<int32_t> values = MixedWidthValues(5000, &rng);
  const std::string page = EncodeInt32s(values);
  BitPackedPageDecoder<int32_t> lazy(Validation::kOnFirstUse);
  BitPackedPageDecoder<int32_t> eager(Validation::kAtInit);
  BASALT_ASSERT_OK(lazy.Init(page));
  BASALT_ASSERT_OK(eager.Init(page));
  std::vector<int32_t> a(400), b(400);
  for (int i = 0; i < 200; i++) {
    const size_t pos = rng.Uniform(values.size() + 1);
    const size_t n = rng.Uniform(400);
    lazy.SeekToPositionInPage(pos);
    eager.SeekToPositionInPage(pos);
    absl::StatusOr<size_t> ka = lazy.DecodeValues(n, a.data());
    BASALT_ASSERT_OK(ka);
    const size_t kb = eager.DecodeRaw(n, b.data());
    ASSERT_EQ(*ka, std::min(n, values.size() - pos));
    ASSERT_EQ(kb, *ka);
    for (size_t j = 0; j < kb; j++) {
      ASSERT_EQ(a[j], values[pos + j]) << "position " << pos + j;
      ASSERT_EQ(b[j], values[pos + j]) << "position " << pos + j;
    }
  }
}

// Sorted values as key columns hold them: runs of consecutive values (DELTA blocks of width 0),
// duplicates, gaps of every size and both signs, so FOR and DELTA blocks of many widths mix.
template <typename T>
std::vector<T> SortedMixedValues(size_t n, Random* rng) {
  std::vector<T> values(n);
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < n; i++) values[i] = static_cast<T>(U(rng->Next64()));
  // Runs: copy a value forward with a step of 0 or 1 for a while.
  for (size_t i = 1; i < n; i++) {
    if (rng->OneIn(3)) {
      const size_t len = 1 + rng->Uniform(300);
      const U step = U(rng->Uniform(2));
      for (size_t j = i; j < std::min(n, i + len); j++)
        values[j] = static_cast<T>(U(U(values[j - 1]) + step));
      i += len;
    }
  }
  std::sort(values.begin(), values.end());
  return values;
}

// A sorted page searched by value lands where std::lower_bound does, for targets below, among,
// between and above the values, on a fresh decoder and after other seeks; single values read at
// any position match.
template <typename T>
void CheckSortedSeeks(Random* rng) {
  for (size_t n : {size_t{1}, size_t{127}, size_t{128}, size_t{129}, size_t{3000}}) {
    SCOPED_TRACE(testing::Message() << sizeof(T) << "-byte values, " << n << " of them");
    const std::vector<T> values = SortedMixedValues<T>(n, rng);
    BitPackedPageBuilder<T> builder{PageBuilderOptions{}};
    ASSERT_EQ(builder.Add(values.data(), values.size()), values.size());
    const std::string page(builder.Finish());
    BitPackedPageDecoder<T> reused(Validation::kOnFirstUse);
    BASALT_ASSERT_OK(reused.Init(page));
    for (int i = 0; i < 300; i++) {
      T target;
      switch (rng->Uniform(3)) {
        case 0:
          target = values[rng->Uniform(n)];
          break;
        case 1:
          target = static_cast<T>(values[rng->Uniform(n)] + static_cast<T>(rng->Uniform(3)) - 1);
          break;
        default:
          target = static_cast<T>(rng->Next64());
      }
      const size_t want = static_cast<size_t>(
          std::lower_bound(values.begin(), values.end(), target) - values.begin());
      BitPackedPageDecoder<T> fresh(Validation::kOnFirstUse);
      BASALT_ASSERT_OK(fresh.Init(page));
      for (BitPackedPageDecoder<T>* d : {&fresh, &reused}) {
        bool exact = true;
        absl::Status s = d->SeekAtOrAfterValue(&target, &exact);
        ASSERT_EQ(d->position(), want) << "target " << int64_t{target};
        if (want == n) {
          EXPECT_TRUE(absl::IsNotFound(s)) << s;
          EXPECT_FALSE(exact);
        } else {
          BASALT_ASSERT_OK(s);
          EXPECT_EQ(exact, values[want] == target) << "target " << int64_t{target};
        }
      }
      const size_t pos = rng->Uniform(n);
      BitPackedPageDecoder<T> one(Validation::kOnFirstUse);
      BASALT_ASSERT_OK(one.Init(page));
      for (BitPackedPageDecoder<T>* d : {&one, &reused}) {
        d->SeekToPositionInPage(pos);
        T got = 0;
        absl::StatusOr<size_t> k = d->DecodeValues(1, &got);
        BASALT_ASSERT_OK(k);
        ASSERT_EQ(*k, 1u);
        ASSERT_EQ(got, values[pos]) << "position " << pos;
      }
    }
  }
}

TEST(BitPackedDecoderTest, SortedPagesSeekLikeLowerBound) {
  Random rng(SeedFromEnvOrTime());
  CheckSortedSeeks<int8_t>(&rng);
  CheckSortedSeeks<int16_t>(&rng);
  CheckSortedSeeks<int32_t>(&rng);
  CheckSortedSeeks<int64_t>(&rng);
}

// A layout (every block's offset, computed once per cached page) gives the same values as
// walking; a page malformed anywhere has none, and a layout of other bytes is not used.
TEST(BitPackedDecoderTest, LayoutDecodesLikeTheWalk) {
  Random rng(SeedFromEnvOrTime());
  const std::vector<int32_t> values = MixedWidthValues(3000, &rng);
  const std::string page = EncodeInt32s(values);
  BitPackedPageDecoder<int32_t> d(Validation::kOnFirstUse);
  std::unique_ptr<const PageLayout> layout = d.ComputeLayout(page);
  ASSERT_NE(layout, nullptr);
  EXPECT_GE(layout->MemoryUsage(), (values.size() / kBlockValues + 1) * sizeof(uint32_t));

  // A layout of another page (fewer blocks) is ignored: the decoder walks its own.
  const std::string other =
      EncodeInt32s(std::vector<int32_t>(values.begin(), values.begin() + 1000));
  std::unique_ptr<const PageLayout> other_layout = d.ComputeLayout(other);
  ASSERT_NE(other_layout, nullptr);

  for (const PageLayout* l : {layout.get(), other_layout.get()}) {
    BitPackedPageDecoder<int32_t> with(Validation::kOnFirstUse);
    BASALT_ASSERT_OK(with.InitWithLayout(page, l));
    ASSERT_EQ(with.count(), values.size());
    std::vector<int32_t> out(300);
    for (int i = 0; i < 100; i++) {
      const size_t pos = rng.Uniform(values.size() + 1);
      const size_t n = rng.Uniform(300);
      with.SeekToPositionInPage(pos);
      absl::StatusOr<size_t> k = with.DecodeValues(n, out.data());
      BASALT_ASSERT_OK(k);
      ASSERT_EQ(*k, std::min(n, values.size() - pos));
      for (size_t j = 0; j < *k; j++) ASSERT_EQ(out[j], values[pos + j]) << "position " << pos + j;
    }
  }

  // Malformed pages: a bad block header, a missing last block, trailing bytes.
  std::string bad_block = EncodeSequential(1000);
  bad_block[kPageHeader + 7 * kSeqBlockBytes] = static_cast<char>(0x80 | 65);
  const std::string good = EncodeSequential(1000);
  BitPackedPageDecoder<int64_t> d64(Validation::kOnFirstUse);
  EXPECT_NE(d64.ComputeLayout(good), nullptr);
  for (const std::string& malformed : {bad_block, good.substr(0, kPageHeader + 7 * kSeqBlockBytes),
                                       good + "x", good.substr(0, kPageHeader + 10)}) {
    EXPECT_EQ(d64.ComputeLayout(malformed), nullptr) << malformed.size() << " bytes";
  }
  // Without a layout the bad block is still reported when reached, and the others decode.
  BASALT_ASSERT_OK(d64.InitWithLayout(bad_block, nullptr));
  std::vector<int64_t> out(1000);
  absl::StatusOr<size_t> k = d64.DecodeValues(7 * 128, out.data());
  BASALT_ASSERT_OK(k);
  k = d64.DecodeValues(10, out.data());
  EXPECT_TRUE(absl::IsDataLoss(k.status())) << k.status();
}

// ConstantRun reports exactly the blocks holding one value (width-0 FOR, or width-0 DELTA with no
// step), from any position to its block's end; never a sequential block (width-0 DELTA that
// steps by 1) nor a block of mixed values.
TEST(BitPackedDecoderTest, ConstantRunFindsOnlyBlocksOfOneValue) {
  Random rng(SeedFromEnvOrTime());
  std::vector<int32_t> values;
  std::vector<bool> constant_block;
  for (int b = 0; b < 40; b++) {
    const int kind = static_cast<int>(rng.Uniform(3));  // 0: one value, 1: sequential, 2: mixed.
    const int32_t base = static_cast<int32_t>(rng.Uniform(1000));
    for (size_t i = 0; i < kBlockValues; i++) {
      values.push_back(kind == 0   ? base
                       : kind == 1 ? base + static_cast<int32_t>(i)
                                   : static_cast<int32_t>(rng.Uniform(1000)));
    }
    constant_block.push_back(kind == 0);
  }
  values.resize(values.size() - rng.Uniform(kBlockValues));  // A partial last block.
  BitPackedPageBuilder<int32_t> builder{PageBuilderOptions{}};
  ASSERT_EQ(builder.Add(values.data(), values.size()), values.size());
  const std::string page(builder.Finish());
  BitPackedPageDecoder<int32_t> d(Validation::kAtInit);
  BASALT_ASSERT_OK(d.Init(page));
  for (int i = 0; i < 300; i++) {
    const size_t pos = rng.Uniform(values.size());
    const size_t n = 1 + rng.Uniform(2 * kBlockValues);
    d.SeekToPositionInPage(pos);
    int32_t value = -1;
    size_t run = 0;
    const bool got = d.ConstantRun(n, &value, &run);
    ASSERT_EQ(got, constant_block[pos / kBlockValues]) << "position " << pos;
    EXPECT_EQ(d.position(), pos);  // Never moves.
    if (!got) continue;
    const size_t block_end = std::min((pos / kBlockValues + 1) * kBlockValues, values.size());
    ASSERT_EQ(run, std::min(n, block_end - pos)) << "position " << pos;
    for (size_t j = pos; j < pos + run; j++) ASSERT_EQ(values[j], value) << "position " << j;
  }
  d.SeekToPositionInPage(values.size());
  int32_t value;
  size_t run;
  EXPECT_FALSE(d.ConstantRun(10, &value, &run));  // At the end.
}

}  // namespace bitpacked_encoding_test_file
}  // namespace
}  // namespace basalt
