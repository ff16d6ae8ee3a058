#include "common/key_encoder.h"

#include <gtest/gtest.h>

#include "common/test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/strings/escaping.h"
#include "common/partial_row.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"

namespace basalt {
namespace {
namespace key_encoder_test_file {

std::string Hex(std::string_view s) { return absl::BytesToHexString(ToAbsl(s)); }

std::string EncodeCell(const Datum& d, bool is_last = true) {
  std::string out;
  EncodeKeyCell(d.type(), d.cell(), is_last, &out);
  return out;
}

int Sign(int v) { return (v > 0) - (v < 0); }

// memcmp order with the shorter string first on a common prefix (std::string::compare).
int ByteCompare(const std::string& a, const std::string& b) { return Sign(a.compare(b)); }

using testing_util::DoubleBits;
using testing_util::FloatBits;

TEST(KeyEncoderTest, IntegerLayout) {
  EXPECT_EQ(Hex(EncodeCell(Datum::Int32(0))), "80000000");
  EXPECT_EQ(Hex(EncodeCell(Datum::Int32(1))), "80000001");
  EXPECT_EQ(Hex(EncodeCell(Datum::Int32(-1))), "7fffffff");
  EXPECT_EQ(Hex(EncodeCell(Datum::Int32(std::numeric_limits<int32_t>::min()))), "00000000");
  EXPECT_EQ(Hex(EncodeCell(Datum::Int32(std::numeric_limits<int32_t>::max()))), "ffffffff");
  EXPECT_EQ(Hex(EncodeCell(Datum::Int8(-128))), "00");
  EXPECT_EQ(Hex(EncodeCell(Datum::Int8(5))), "85");
  EXPECT_EQ(Hex(EncodeCell(Datum::Int16(256))), "8100");
  EXPECT_EQ(Hex(EncodeCell(Datum::Int64(-2))), "7ffffffffffffffe");
  EXPECT_EQ(Hex(EncodeCell(Datum::UnixtimeMicros(0x0102030405060708))), "8102030405060708");
  EXPECT_EQ(Hex(EncodeCell(Datum::Date(-1))), "7fffffff");
  EXPECT_EQ(Hex(EncodeCell(Datum::Decimal32(3))), "80000003");
  EXPECT_EQ(Hex(EncodeCell(Datum::Decimal64(3))), "8000000000000003");
  EXPECT_EQ(Hex(EncodeCell(Datum::Decimal128(absl::MakeInt128(1, 2)))),
            "80000000000000010000000000000002");
  EXPECT_EQ(Hex(EncodeCell(Datum::Decimal128(-1))), "7fffffffffffffffffffffffffffffff");
}

TEST(KeyEncoderTest, BoolAndFloatLayout) {
  EXPECT_EQ(Hex(EncodeCell(Datum::Bool(false))), "00");
  EXPECT_EQ(Hex(EncodeCell(Datum::Bool(true))), "01");
  EXPECT_EQ(Hex(EncodeCell(Datum::Float(0.0f))), "80000000");
  EXPECT_EQ(Hex(EncodeCell(Datum::Float(-0.0f))), "7fffffff");
  EXPECT_EQ(Hex(EncodeCell(Datum::Float(1.0f))), "bf800000");
  EXPECT_EQ(Hex(EncodeCell(Datum::Float(-1.0f))), "407fffff");
  EXPECT_EQ(Hex(EncodeCell(Datum::Float(INFINITY))), "ff800000");
  EXPECT_EQ(Hex(EncodeCell(Datum::Float(-INFINITY))), "007fffff");
  EXPECT_EQ(Hex(EncodeCell(FloatBits(0x7fc00000))), "ffc00000");  // Quiet NaN.
  EXPECT_EQ(Hex(EncodeCell(Datum::Double(1.0))), "bff0000000000000");
  EXPECT_EQ(Hex(EncodeCell(Datum::Double(-0.0))), "7fffffffffffffff");
}

TEST(KeyEncoderTest, StringLayout) {
  std::string with_zero("a\0b", 3);
  EXPECT_EQ(Hex(EncodeCell(Datum::String(with_zero), true)), "610062");
  EXPECT_EQ(Hex(EncodeCell(Datum::String(with_zero), false)),
            "6100016200"
            "00");
  EXPECT_EQ(Hex(EncodeCell(Datum::String(""), true)), "");
  EXPECT_EQ(Hex(EncodeCell(Datum::String(""), false)), "0000");
  EXPECT_EQ(Hex(EncodeCell(Datum::Binary("\xff"), false)), "ff0000");
  EXPECT_EQ(Hex(EncodeCell(Datum::Varchar(std::string(2, '\0')), false)), "000100010000");
}

// Values of each type in strictly ascending TypeInfo::Compare order.
std::vector<Datum> AscendingValues(DataType type) {
  std::vector<Datum> v;
  switch (type) {
    case DataType::kBool:
      return {Datum::Bool(false), Datum::Bool(true)};
    case DataType::kInt8:
      return {Datum::Int8(-128), Datum::Int8(-1), Datum::Int8(0), Datum::Int8(1), Datum::Int8(127)};
    case DataType::kInt16:
      return {Datum::Int16(-32768), Datum::Int16(-256), Datum::Int16(-1),   Datum::Int16(0),
              Datum::Int16(255),    Datum::Int16(256),  Datum::Int16(32767)};
    case DataType::kInt32:
    case DataType::kDate:
    case DataType::kDecimal32:
      for (int64_t x : {int64_t{INT32_MIN}, int64_t{INT32_MIN} + 1, int64_t{-65536}, int64_t{-1},
                        int64_t{0}, int64_t{1}, int64_t{255}, int64_t{256}, int64_t{INT32_MAX}}) {
        v.push_back(Datum::Int64(x).CastTo(type).value());
      }
      return v;
    case DataType::kInt64:
    case DataType::kUnixtimeMicros:
    case DataType::kDecimal64:
      for (int64_t x : {INT64_MIN, INT64_MIN + 1, int64_t{-4294967296}, int64_t{-1}, int64_t{0},
                        int64_t{1}, int64_t{4294967296}, INT64_MAX}) {
        v.push_back(Datum::Int64(x).CastTo(type).value());
      }
      return v;
    case DataType::kDecimal128:
      for (absl::int128 x : {std::numeric_limits<absl::int128>::min(), absl::MakeInt128(-1, 0),
                             absl::int128(-1), absl::int128(0), absl::int128(1),
                             absl::MakeInt128(1, 0), std::numeric_limits<absl::int128>::max()}) {
        v.push_back(Datum::Decimal128(x));
      }
      return v;
    case DataType::kFloat:
      return {FloatBits(0xffffffff),
              FloatBits(0xffc00000),  // -NaNs
              Datum::Float(-INFINITY),
              Datum::Float(-std::numeric_limits<float>::max()),
              Datum::Float(-1.0f),
              Datum::Float(-std::numeric_limits<float>::denorm_min()),
              Datum::Float(-0.0f),
              Datum::Float(0.0f),
              Datum::Float(std::numeric_limits<float>::denorm_min()),
              Datum::Float(1.0f),
              Datum::Float(std::numeric_limits<float>::max()),
              Datum::Float(INFINITY),
              FloatBits(0x7fc00000),
              FloatBits(0x7fffffff)};
    case DataType::kDouble:
      return {DoubleBits(0xffffffffffffffff),
              Datum::Double(-INFINITY),
              Datum::Double(-1e300),
              Datum::Double(-1.0),
              Datum::Double(-0.0),
              Datum::Double(0.0),
              Datum::Double(std::numeric_limits<double>::denorm_min()),
              Datum::Double(1.0),
              Datum::Double(INFINITY),
              DoubleBits(0x7ff8000000000000)};
    case DataType::kString:
    case DataType::kBinary:
    case DataType::kVarchar:
      for (std::string s : {std::string(""), std::string(1, '\0'), std::string(2, '\0'),
                            std::string("\0\x01", 2), std::string("\x01"), std::string("a"),
                            std::string("a\0", 2), std::string("a\0b", 3), std::string("a\x01"),
                            std::string("ab"), std::string("\xff"), std::string("\xff\xff")}) {
        std::string_view view(s);
        v.push_back(Datum::FromCell(type, &view));
      }
      return v;
    default:
      return v;
  }
}

TEST(KeyEncoderTest, EveryTypeOrdersLikeCompareAndRoundTrips) {
  for (int t = 1; t <= kMaxDataType; t++) {
    DataType type = static_cast<DataType>(t);
    const TypeInfo& info = GetTypeInfo(type);
    std::vector<Datum> values = AscendingValues(type);
    ASSERT_GE(values.size(), 2u) << info.name();
    for (bool is_last : {true, false}) {
      SCOPED_TRACE(StrCat(info.name(), is_last ? " last" : " not last"));
      for (size_t i = 0; i < values.size(); i++) {
        std::string ei = EncodeCell(values[i], is_last);
        for (size_t j = 0; j < values.size(); j++) {
          ASSERT_EQ(Sign(info.Compare(values[i].cell(), values[j].cell())), Sign(int(i) - int(j)))
              << values[i].ToString() << " vs " << values[j].ToString();
          EXPECT_EQ(ByteCompare(ei, EncodeCell(values[j], is_last)), Sign(int(i) - int(j)))
              << values[i].ToString() << " vs " << values[j].ToString();
        }
        std::string_view input = ei;
        absl::StatusOr<Datum> back = DecodeKeyCell(type, is_last, &input);
        BASALT_ASSERT_OK(back);
        EXPECT_TRUE(input.empty());
        EXPECT_EQ(back->type(), type);
        EXPECT_EQ(EncodeCell(*back, is_last), ei);  // Bit-exact, NaN payloads included.
      }
    }
  }
}

class KeyEncoderSchemaTest : public ::testing::Test {
 protected:
  // Key (i INT32, s STRING, l INT64, d DOUBLE, b BINARY), then a non-key column.
  KeyEncoderSchemaTest()
      : schema_(
            Schema::Create(
                {ColumnSchema("i", DataType::kInt32), ColumnSchema("s", DataType::kString),
                 ColumnSchema("l", DataType::kInt64), ColumnSchema("d", DataType::kDouble),
                 ColumnSchema("b", DataType::kBinary), ColumnSchema("v", DataType::kInt32, true)},
                5)
                .value()) {}

  // Small domains so that ties and shared prefixes are common.
  std::vector<Datum> RandomKey(Random* rng) {
    static const double kDoubles[] = {-INFINITY, -1.5, -0.0, 0.0, 2.5, INFINITY, NAN};
    return {Datum::Int32(static_cast<int32_t>(rng->UniformRange(-2, 2))),
            Datum::String(RandomBytes(rng)), Datum::Int64(rng->UniformRange(-3, 3)),
            Datum::Double(kDoubles[rng->Uniform(7)]), Datum::Binary(RandomBytes(rng))};
  }

  // Up to 4 bytes from {0x00, 0x01, 'a', 0xff}.
  static std::string RandomBytes(Random* rng) {
    static const char kAlphabet[] = {'\0', '\x01', 'a', '\xff'};
    std::string s(rng->Uniform(5), '\0');
    for (char& c : s) c = kAlphabet[rng->Uniform(4)];
    return s;
  }

  static int CompareKeys(const std::vector<Datum>& a, const std::vector<Datum>& b) {
    for (size_t i = 0; i < a.size(); i++) {
      int c = a[i].Compare(b[i]);
      if (c != 0) return Sign(c);
    }
    return 0;
  }

  Schema schema_;
};

TEST_F(KeyEncoderSchemaTest, RandomCompositeKeysSortLikeDatums) {
  Random rng(SeedFromEnvOrTime());
  std::vector<std::vector<Datum>> keys;
  for (int i = 0; i < 3000; i++) keys.push_back(RandomKey(&rng));
  std::sort(keys.begin(), keys.end(),
            [](const auto& a, const auto& b) { return CompareKeys(a, b) < 0; });
  std::vector<std::string> encoded;
  for (const auto& k : keys) encoded.push_back(EncodeKey(schema_, k));
  // Adjacent pairs in Datum order must have the same order (and equality) under memcmp; with
  // transitivity this makes the two orders identical.
  for (size_t i = 0; i + 1 < keys.size(); i++) {
    ASSERT_EQ(ByteCompare(encoded[i], encoded[i + 1]), CompareKeys(keys[i], keys[i + 1]))
        << "keys " << i << " and " << i + 1 << ": " << Hex(encoded[i]) << " vs "
        << Hex(encoded[i + 1]);
  }
  // And a sample of arbitrary pairs, to check beyond neighbours.
  for (int n = 0; n < 3000; n++) {
    size_t a = rng.Uniform(keys.size()), b = rng.Uniform(keys.size());
    ASSERT_EQ(ByteCompare(encoded[a], encoded[b]), CompareKeys(keys[a], keys[b]));
  }
  for (size_t i = 0; i < keys.size(); i++) {
    absl::StatusOr<std::vector<Datum>> back = DecodeKey(schema_, encoded[i]);
    BASALT_ASSERT_OK(back) << back.status() << " for " << Hex(encoded[i]);
    ASSERT_EQ(CompareKeys(*back, keys[i]), 0);
  }
}

TEST_F(KeyEncoderSchemaTest, RowBufferPartialRowAndDatumFormsAgree) {
  Random rng(SeedFromEnvOrTime());
  for (int n = 0; n < 100; n++) {
    std::vector<Datum> key = RandomKey(&rng);
    PartialRow row(&schema_);
    for (int i = 0; i < 5; i++) BASALT_ASSERT_OK(row.Set(i, key[i]));
    BASALT_ASSERT_OK(row.SetNull(5));
    std::string expected = EncodeKey(schema_, key);
    EXPECT_EQ(EncodeKey(schema_, row), expected);
    EXPECT_EQ(EncodeKey(schema_, row.row_data()), expected);
    std::string cols;
    EncodeColumns(schema_, row, {0, 1, 2, 3, 4}, &cols);
    EXPECT_EQ(cols, expected);
  }
}

TEST_F(KeyEncoderSchemaTest, PrefixIsBytePrefixOfFullKeys) {
  Random rng(SeedFromEnvOrTime());
  for (int n = 0; n < 300; n++) {
    std::vector<Datum> key = RandomKey(&rng);
    std::string full = EncodeKey(schema_, key);
    for (size_t len = 0; len <= key.size(); len++) {
      std::vector<Datum> prefix(key.begin(), key.begin() + len);
      std::string p = EncodeKeyPrefix(schema_, prefix);
      ASSERT_EQ(full.compare(0, p.size(), p), 0) << "prefix of " << len << " columns";
      std::string succ = PrefixSuccessor(p);
      EXPECT_TRUE(succ.empty() || full < succ);
    }
  }
  // A key whose leading column differs lies outside [prefix, PrefixSuccessor(prefix)).
  std::string p = EncodeKeyPrefix(schema_, {Datum::Int32(1), Datum::String("a")});
  std::string other = EncodeKey(schema_, {Datum::Int32(1), Datum::String("a\x01"), Datum::Int64(0),
                                          Datum::Double(0), Datum::Binary("")});
  EXPECT_GE(other, PrefixSuccessor(p));
}

TEST_F(KeyEncoderSchemaTest, ColumnSubsetsRoundTrip) {
  PartialRow row(&schema_);
  BASALT_ASSERT_OK(row.Set(0, Datum::Int32(-7)));
  BASALT_ASSERT_OK(row.Set(1, Datum::String(std::string("x\0y", 3))));
  BASALT_ASSERT_OK(row.Set(3, Datum::Double(2.5)));
  // The last listed column (s) is raw, the first (d) fixed width.
  std::string out;
  EncodeColumns(schema_, row, {3, 1}, &out);
  EXPECT_EQ(Hex(out),
            "c004000000000000"
            "780079");
  out.clear();
  EncodeColumns(schema_, row, {1, 0}, &out);
  EXPECT_EQ(Hex(out),
            "7800017900"
            "00"
            "7ffffff9");
  absl::StatusOr<std::vector<Datum>> back = DecodeColumns(schema_, {1, 0}, out);
  BASALT_ASSERT_OK(back);
  EXPECT_EQ((*back)[0], Datum::String(std::string("x\0y", 3)));
  EXPECT_EQ((*back)[1], Datum::Int32(-7));
}

TEST(KeyEncoderSuccessorTest, Successors) {
  EXPECT_EQ(KeySuccessor("ab"), std::string("ab\0", 3));
  EXPECT_EQ(KeySuccessor(""), std::string(1, '\0'));
  EXPECT_EQ(PrefixSuccessor("ab"), "ac");
  EXPECT_EQ(PrefixSuccessor("a\xff\xff"), "b");
  EXPECT_EQ(PrefixSuccessor("\xff\xff"), "");
  EXPECT_EQ(PrefixSuccessor(""), "");
}

TEST(KeyEncoderDecodeTest, MalformedInputsAreErrors) {
  Schema schema =
      Schema::Create({ColumnSchema("s", DataType::kString), ColumnSchema("i", DataType::kInt32)}, 2)
          .value();
  auto code = [&](std::string bytes) { return DecodeKey(schema, bytes).status().code(); };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  BASALT_EXPECT_OK(DecodeKey(schema, std::string("ab\0\0\x80\0\0\x01", 8)));
  EXPECT_EQ(code(""), kInvalid);                                        // Nothing at all.
  EXPECT_EQ(code("ab"), kInvalid);                                      // No terminator.
  EXPECT_EQ(code(std::string("ab\0", 3)), kInvalid);                    // Truncated escape.
  EXPECT_EQ(code(std::string("ab\0\x02\x80\0\0\x01", 8)), kInvalid);    // Bad escape.
  EXPECT_EQ(code(std::string("ab\0\0\x80\0\0", 7)), kInvalid);          // Truncated INT32.
  EXPECT_EQ(code(std::string("ab\0\0\x80\0\0\x01\x05", 9)), kInvalid);  // Trailing byte.
  absl::Status s = DecodeKey(schema, std::string("ab\0\x02", 4)).status();
  EXPECT_NE(s.message().find("key column s"), std::string_view::npos) << s;

  Schema typed =
      Schema::Create(
          {ColumnSchema("b", DataType::kBool),
           ColumnSchema("d", DataType::kDecimal32, false, std::nullopt, TypeAttributes{3, 1, 0}),
           ColumnSchema("v", DataType::kVarchar, false, std::nullopt, TypeAttributes{0, 0, 2})},
          3)
          .value();
  auto typed_code = [&](std::string bytes) { return DecodeKey(typed, bytes).status().code(); };
  std::string good_d = EncodeCell(Datum::Decimal32(999));
  BASALT_EXPECT_OK(DecodeKey(typed, std::string("\x01", 1) + good_d + "ab"));
  EXPECT_EQ(typed_code(std::string("\x02", 1) + good_d + "ab"), kInvalid);  // BOOL byte.
  EXPECT_EQ(typed_code(std::string("\x01", 1) + EncodeCell(Datum::Decimal32(1000)) + "ab"),
            kInvalid);                                                        // Precision.
  EXPECT_EQ(typed_code(std::string("\x01", 1) + good_d + "abc"), kInvalid);   // VARCHAR length.
  EXPECT_EQ(typed_code(std::string("\x01", 1) + good_d + "\xc3"), kInvalid);  // Bad UTF-8.
}

TEST_F(KeyEncoderSchemaTest, CorruptKeysDecodeToErrorOrCanonicalKey) {
  Random rng(SeedFromEnvOrTime());
  int ok = 0, errors = 0;
  for (int n = 0; n < 5000; n++) {
    std::string bytes = EncodeKey(schema_, RandomKey(&rng));
    switch (rng.Uniform(4)) {
      case 0:  // Truncate.
        bytes.resize(rng.Uniform(bytes.size() + 1));
        break;
      case 1:  // Overwrite a byte (zeros are likely, to hit the escapes).
        if (!bytes.empty()) bytes[rng.Uniform(bytes.size())] = rng.OneIn(2) ? 0 : rng.Next32();
        break;
      case 2:  // Insert a byte.
        bytes.insert(bytes.begin() + rng.Uniform(bytes.size() + 1),
                     static_cast<char>(rng.OneIn(2) ? 0 : rng.Next32()));
        break;
      case 3:  // Delete a byte.
        if (!bytes.empty()) bytes.erase(rng.Uniform(bytes.size()), 1);
        break;
    }
    absl::StatusOr<std::vector<Datum>> decoded = DecodeKey(schema_, bytes);
    if (decoded.ok()) {
      ok++;
      // The encoding is canonical: whatever decodes re-encodes to the same bytes.
      ASSERT_EQ(Hex(EncodeKey(schema_, *decoded)), Hex(bytes));
    } else {
      errors++;
      ASSERT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument) << decoded.status();
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(errors, 0);
}

}  // namespace key_encoder_test_file
}  // namespace
}  // namespace basalt
