#include "common/types.h"
#include "common/status_test_util.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace types_test_file {

TEST(TypesTest, EveryTypeHasTraitsAndARoundTrippingName) {
  for (int t = 1; t <= kMaxDataType; t++) {
    auto type = static_cast<DataType>(t);
    const TypeInfo& info = GetTypeInfo(type);
    EXPECT_EQ(info.type(), type);
    EXPECT_GT(info.size(), 0u);
    if (info.is_decimal()) continue;  // "DECIMAL" resolves by precision instead.
    auto parsed = ParseDataTypeName(info.name());
    BASALT_ASSERT_OK(parsed) << info.name();
    EXPECT_EQ(*parsed, type);
  }
  EXPECT_EQ(*ParseDataTypeName("int32"), DataType::kInt32);
  EXPECT_FALSE(ParseDataTypeName("INT33").ok());
  EXPECT_FALSE(IsValidDataType(0));
  EXPECT_FALSE(IsValidDataType(kMaxDataType + 1));
}

TEST(TypesTest, CellSizes) {
  EXPECT_EQ(GetTypeInfo(DataType::kBool).size(), 1u);
  EXPECT_EQ(GetTypeInfo(DataType::kInt16).size(), 2u);
  EXPECT_EQ(GetTypeInfo(DataType::kDate).size(), 4u);
  EXPECT_EQ(GetTypeInfo(DataType::kUnixtimeMicros).size(), 8u);
  EXPECT_EQ(GetTypeInfo(DataType::kDecimal128).size(), 16u);
  EXPECT_TRUE(GetTypeInfo(DataType::kVarchar).is_variable_length());
  EXPECT_FALSE(GetTypeInfo(DataType::kDouble).is_variable_length());
}

TEST(TypesTest, DecimalStorageFollowsPrecision) {
  EXPECT_EQ(*DecimalTypeForPrecision(1), DataType::kDecimal32);
  EXPECT_EQ(*DecimalTypeForPrecision(9), DataType::kDecimal32);
  EXPECT_EQ(*DecimalTypeForPrecision(10), DataType::kDecimal64);
  EXPECT_EQ(*DecimalTypeForPrecision(18), DataType::kDecimal64);
  EXPECT_EQ(*DecimalTypeForPrecision(19), DataType::kDecimal128);
  EXPECT_EQ(*DecimalTypeForPrecision(38), DataType::kDecimal128);
  EXPECT_FALSE(DecimalTypeForPrecision(0).ok());
  EXPECT_FALSE(DecimalTypeForPrecision(39).ok());
}

TEST(TypesTest, ValidateTypeAttributes) {
  BASALT_EXPECT_OK(ValidateTypeAttributes(DataType::kDecimal64, {12, 2, 0}));
  EXPECT_FALSE(ValidateTypeAttributes(DataType::kDecimal64, {9, 2, 0}).ok());  // Wrong storage.
  EXPECT_FALSE(ValidateTypeAttributes(DataType::kDecimal32, {5, 6, 0}).ok());  // Scale > prec.
  EXPECT_FALSE(ValidateTypeAttributes(DataType::kDecimal32, {5, -1, 0}).ok());
  BASALT_EXPECT_OK(ValidateTypeAttributes(DataType::kVarchar, {0, 0, 10}));
  EXPECT_FALSE(ValidateTypeAttributes(DataType::kVarchar, {0, 0, 0}).ok());
  EXPECT_FALSE(ValidateTypeAttributes(DataType::kVarchar, {0, 0, kMaxVarcharLength + 1}).ok());
  BASALT_EXPECT_OK(ValidateTypeAttributes(DataType::kInt32, {}));
  EXPECT_FALSE(ValidateTypeAttributes(DataType::kInt32, {0, 0, 4}).ok());
}

TEST(TypesTest, ValidateCellEnforcesLimits) {
  int32_t d = 99999;
  BASALT_EXPECT_OK(ValidateCell(DataType::kDecimal32, {5, 2, 0}, &d));
  d = 100000;
  EXPECT_FALSE(ValidateCell(DataType::kDecimal32, {5, 2, 0}, &d).ok());
  d = -100000;
  EXPECT_FALSE(ValidateCell(DataType::kDecimal32, {5, 2, 0}, &d).ok());
  absl::int128 big = absl::MakeInt128(0x4b3b4ca85a86c47a, 0x098a224000000000);  // 10^38
  EXPECT_FALSE(ValidateCell(DataType::kDecimal128, {38, 0, 0}, &big).ok());
  big -= 1;
  BASALT_EXPECT_OK(ValidateCell(DataType::kDecimal128, {38, 0, 0}, &big));

  std::string_view s = "h\xc3\xa9llo";  // 5 characters, 6 bytes.
  BASALT_EXPECT_OK(ValidateCell(DataType::kVarchar, {0, 0, 5}, &s));
  EXPECT_FALSE(ValidateCell(DataType::kVarchar, {0, 0, 4}, &s).ok());
  std::string_view bad = "\xc3";
  EXPECT_FALSE(ValidateCell(DataType::kVarchar, {0, 0, 5}, &bad).ok());
  BASALT_EXPECT_OK(ValidateCell(DataType::kBinary, {}, &bad));  // Binary is any bytes.
  std::string huge(kMaxCellBytes + 1, 'x');
  std::string_view huge_view = huge;
  EXPECT_FALSE(ValidateCell(DataType::kString, {}, &huge_view).ok());
  uint8_t b = 2;
  EXPECT_FALSE(ValidateCell(DataType::kBool, {}, &b).ok());
}

TEST(TypesTest, Utf8Length) {
  EXPECT_EQ(Utf8Length(""), 0);
  EXPECT_EQ(Utf8Length("abc"), 3);
  EXPECT_EQ(Utf8Length("\xe2\x82\xac"), 1);       // Euro sign.
  EXPECT_EQ(Utf8Length("\xf0\x9f\x98\x80"), 1);   // Emoji.
  EXPECT_EQ(Utf8Length("\xc0\x80"), -1);          // Overlong NUL.
  EXPECT_EQ(Utf8Length("\xed\xa0\x80"), -1);      // Surrogate.
  EXPECT_EQ(Utf8Length("\xf4\x90\x80\x80"), -1);  // Past U+10FFFF.
  EXPECT_EQ(Utf8Length("\xe2\x82"), -1);          // Truncated.
}

TEST(TypesTest, FloatCompareIsTheIeeeTotalOrder) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double ordered[] = {-nan, -inf, -1e300, -1.0, -0.0, 0.0, 1e-300, 1.0, inf, nan};
  const TypeInfo& info = GetTypeInfo(DataType::kDouble);
  for (size_t i = 0; i < std::size(ordered); i++) {
    for (size_t j = 0; j < std::size(ordered); j++) {
      int expected = i < j ? -1 : (i > j ? 1 : 0);
      EXPECT_EQ(info.Compare(&ordered[i], &ordered[j]), expected) << i << " vs " << j;
    }
  }
  float a = -2.5f, b = 3.0f;
  EXPECT_LT(GetTypeInfo(DataType::kFloat).Compare(&a, &b), 0);
}

TEST(TypesTest, CompareStringsBytewise) {
  std::string_view a("a\0b", 3), b("a\xff", 2), c("a", 1);
  const TypeInfo& info = GetTypeInfo(DataType::kBinary);
  EXPECT_LT(info.Compare(&c, &a), 0);
  EXPECT_LT(info.Compare(&a, &b), 0);  // Unsigned byte order: 0x00 < 0xff.
  EXPECT_EQ(info.Compare(&a, &a), 0);
}

TEST(TypesTest, DebugStrings) {
  std::string out;
  int32_t date = 19000;  // 2022-01-08.
  GetTypeInfo(DataType::kDate).AppendDebugString(&date, &out);
  EXPECT_EQ(out, "2022-01-08");
  out.clear();
  int64_t ts = -1;
  GetTypeInfo(DataType::kUnixtimeMicros).AppendDebugString(&ts, &out);
  EXPECT_EQ(out, "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatDecimal(-1234, 2), "-12.34");
  EXPECT_EQ(FormatDecimal(5, 3), "0.005");
  EXPECT_EQ(FormatDecimal(0, 0), "0");
  EXPECT_EQ(FormatDecimal(std::numeric_limits<absl::int128>::min(), 0),
            "-170141183460469231731687303715884105728");
}

}  // namespace types_test_file
}  // namespace
}  // namespace basalt
