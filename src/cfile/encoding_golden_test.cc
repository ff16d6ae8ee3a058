// Golden byte vectors: a small fixed input per encoding, so a format change is never silent.
// If one of these fails after an intended format change, bump the cfile format version and
// update docs/cfile_encodings.md together with the vector.

#include <string>
#include <vector>

#include "cfile/dict_encoding.h"
#include "cfile/encoding.h"
#include "common/status_test_util.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace encoding_golden_test_file {

std::string Hex(std::string_view s) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

template <typename T>
std::string EncodeOne(DataType type, EncodingType enc, const std::vector<T>& values,
                      DictionaryBuilder* dict = nullptr) {
  PageBuilderOptions opts;
  opts.dictionary = dict;
  auto b = CreatePageBuilder(type, enc, opts).value();
  EXPECT_EQ(b->Add(values.data(), values.size()), values.size());
  std::string page(b->Finish());
  // The golden page also decodes back to the input.
  std::unique_ptr<Dictionary> parsed;
  PageDecoderOptions dopts;
  if (dict != nullptr) {
    parsed = Dictionary::Parse(dict->FinishDictionary()).value();
    dopts.dictionary = parsed.get();
  }
  auto d = CreatePageDecoder(type, enc, dopts).value();
  BASALT_EXPECT_OK(d->Init(page));
  ColumnBlockBuffer out(type, values.size(), false);
  EXPECT_EQ(*d->DecodeNext(values.size(), out.block(), 0), values.size());
  for (size_t i = 0; i < values.size(); i++) EXPECT_EQ(out.block()->data<T>()[i], values[i]);
  return Hex(page);
}

TEST(EncodingGoldenTest, Plain) {
  EXPECT_EQ(EncodeOne<int32_t>(DataType::kInt32, EncodingType::kPlain, {1, -2, 300}),
            "0300000001000000feffffff2c010000");
  EXPECT_EQ(EncodeOne<std::string_view>(DataType::kString, EncodingType::kPlain, {"ab", "", "c"}),
            "03000000020000000200000003000000616263");
}

TEST(EncodingGoldenTest, BitPacked) {
  // Sequential: one DELTA block of width 0 (descriptor 0x80, base 9, min delta 1).
  EXPECT_EQ(EncodeOne<int32_t>(DataType::kInt32, EncodingType::kBitPacked, {10, 11, 12, 13}),
            "0400000004800900000001000000");
  // FOR block: min -1, residuals 0, 4, 2, 1 in 3 bits, lanes of 4 values.
  EXPECT_EQ(EncodeOne<int16_t>(DataType::kInt16, EncodingType::kBitPacked, {-1, 3, 1, 0}),
            "040000000203ffff000004000200010000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000");
}

TEST(EncodingGoldenTest, BitShuffle) {
  EXPECT_EQ(EncodeOne<double>(DataType::kDouble, EncodingType::kBitShuffle, {1.0, 2.0, -0.0}),
            "03000000081f00010020c0010101010101010101010204");
}

TEST(EncodingGoldenTest, Rle) {
  std::vector<uint8_t> v(20, 1);
  v.push_back(0);
  v.push_back(1);
  EXPECT_EQ(EncodeOne<uint8_t>(DataType::kBool, EncodingType::kRle, v), "16000000520502");
}

TEST(EncodingGoldenTest, Dict) {
  DictionaryBuilder dict(1 << 20);
  EXPECT_EQ(EncodeOne<std::string_view>(DataType::kString, EncodingType::kDict,
                                        {"red", "green", "red", "blue"}, &dict),
            "00040000000402000000000000000001000000000000000200000000000000000000000000000000"
            "000000");
  EXPECT_EQ(Hex(dict.FinishDictionary()),
            "0300000003000000080000000c000000726564677265656e626c7565");
}

TEST(EncodingGoldenTest, Prefix) {
  EXPECT_EQ(EncodeOne<std::string_view>(DataType::kString, EncodingType::kPrefix,
                                        {"apple", "apply", "banana"}),
            "03000000010000000000000000056170706c65040179000662616e616e61");
}

}  // namespace encoding_golden_test_file
}  // namespace
}  // namespace basalt
