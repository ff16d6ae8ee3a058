#include "common/datum.h"
#include "common/status_test_util.h"

#include <limits>

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace datum_test_file {

TEST(DatumTest, SerializedCellRoundTripForEveryType) {
  const Datum values[] = {
      Datum::Bool(true),
      Datum::Int8(-8),
      Datum::Int16(-1600),
      Datum::Int32(1 << 30),
      Datum::Int64(-(1ll << 60)),
      Datum::Float(1.5f),
      Datum::Double(-2.25),
      Datum::String("hi\0there"),
      Datum::Binary(std::string("\0\xff", 2)),
      Datum::Varchar("v"),
      Datum::UnixtimeMicros(1700000000000000),
      Datum::Date(-5),
      Datum::Decimal32(-12345),
      Datum::Decimal64(1234567890123),
      Datum::Decimal128(absl::MakeInt128(7, 9)),
  };
  for (const Datum& d : values) {
    std::string bytes = d.SerializeCell();
    auto back = Datum::FromSerializedCell(d.type(), bytes);
    BASALT_ASSERT_OK(back);
    EXPECT_EQ(*back, d) << d.ToString();
    // The cell view survives copies and moves.
    Datum copy = d;
    Datum moved = std::move(copy);
    EXPECT_EQ(moved.Compare(d), 0);
    EXPECT_EQ(Datum::FromCell(d.type(), moved.cell()), d);
  }
}

TEST(DatumTest, FromSerializedCellRejectsBadSizes) {
  EXPECT_FALSE(Datum::FromSerializedCell(DataType::kInt32, "abc").ok());
  EXPECT_FALSE(Datum::FromSerializedCell(DataType::kInt64, "").ok());
  EXPECT_FALSE(Datum::FromSerializedCell(DataType::kBool, std::string(1, '\x02')).ok());
  EXPECT_FALSE(Datum::FromSerializedCell(static_cast<DataType>(99), "a").ok());
  EXPECT_FALSE(
      Datum::FromSerializedCell(DataType::kString, std::string(kMaxCellBytes + 1, 'a')).ok());
  BASALT_EXPECT_OK(Datum::FromSerializedCell(DataType::kString, ""));
}

TEST(DatumTest, CastBetweenIntegerTypesChecksRange) {
  auto d = Datum::Int64(300).CastTo(DataType::kInt16);
  BASALT_ASSERT_OK(d);
  EXPECT_EQ(d->type(), DataType::kInt16);
  EXPECT_EQ(d->int_value(), 300);
  EXPECT_FALSE(Datum::Int64(300).CastTo(DataType::kInt8).ok());
  EXPECT_FALSE(Datum::Int32(-129).CastTo(DataType::kInt8).ok());
  EXPECT_EQ(Datum::Int32(-128).CastTo(DataType::kInt8)->int_value(), -128);
  EXPECT_EQ(Datum::Int32(5).CastTo(DataType::kDecimal128)->int128_value(), 5);
  EXPECT_EQ(Datum::Int64(7).CastTo(DataType::kUnixtimeMicros)->int_value(), 7);
  EXPECT_FALSE(Datum::Int32(1).CastTo(DataType::kString).ok());
  EXPECT_FALSE(Datum::Double(1).CastTo(DataType::kInt32).ok());
  EXPECT_FALSE(Datum::Decimal128(absl::int128(1) << 70).CastTo(DataType::kInt64).ok());
}

TEST(DatumTest, CompareOrdersNullFirst) {
  EXPECT_LT(Datum::Null(DataType::kInt32).Compare(Datum::Int32(-5)), 0);
  EXPECT_GT(Datum::Int32(-5).Compare(Datum::Null(DataType::kInt32)), 0);
  EXPECT_EQ(Datum::Null(DataType::kInt32).Compare(Datum::Null(DataType::kInt32)), 0);
  EXPECT_LT(Datum::String("a").Compare(Datum::String("b")), 0);
  EXPECT_LT(Datum::Int64(std::numeric_limits<int64_t>::min()).Compare(Datum::Int64(0)), 0);
}

TEST(DatumTest, ToString) {
  EXPECT_EQ(Datum::Int32(42).ToString(), "42");
  EXPECT_EQ(Datum::String("a\"b").ToString(), "\"a\\\"b\"");
  EXPECT_EQ(Datum::Binary("\x01\xab").ToString(), "0x01ab");
  EXPECT_EQ(Datum::Bool(false).ToString(), "false");
  EXPECT_EQ(Datum::Null(DataType::kInt8).ToString(), "NULL");
  EXPECT_EQ(Datum::Date(0).ToString(), "1970-01-01");
}

}  // namespace datum_test_file
}  // namespace
}  // namespace basalt
