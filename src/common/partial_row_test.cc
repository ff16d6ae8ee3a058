#include "common/partial_row.h"
#include "common/status_test_util.h"

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace partial_row_test_file {

class PartialRowTest : public ::testing::Test {
 protected:
  PartialRowTest()
      : schema_(Schema::Create({ColumnSchema("key", DataType::kInt32),
                                ColumnSchema("name", DataType::kString, true),
                                ColumnSchema("small", DataType::kInt8, true),
                                ColumnSchema("d", DataType::kDecimal32, true, std::nullopt,
                                             TypeAttributes{4, 1, 0}),
                                ColumnSchema("vc", DataType::kVarchar, true, std::nullopt,
                                             TypeAttributes{0, 0, 3})},
                               1)
                    .value()) {}
  Schema schema_;
};

TEST_F(PartialRowTest, SetAndGet) {
  PartialRow row(&schema_);
  EXPECT_FALSE(row.AnySet());
  EXPECT_FALSE(row.AllKeyColumnsSet());
  BASALT_ASSERT_OK(row.SetInt32("key", 7));
  BASALT_ASSERT_OK(row.SetString("name", "alice"));
  BASALT_ASSERT_OK(row.SetNull("small"));
  EXPECT_TRUE(row.AllKeyColumnsSet());
  EXPECT_EQ(row.Get(0).int_value(), 7);
  EXPECT_EQ(row.Get(1).string_value(), "alice");
  EXPECT_TRUE(row.IsNull(2));
  EXPECT_FALSE(row.IsSet(3));
  EXPECT_EQ(row.ToString(), "(INT32 key=7, STRING name=\"alice\", INT8 small=NULL)");
  row.Unset(1);
  EXPECT_FALSE(row.IsSet(1));
}

TEST_F(PartialRowTest, SetRejectsBadValuesAndLeavesRowUnchanged) {
  PartialRow row(&schema_);
  EXPECT_EQ(row.SetNull("key").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.Set("key", Datum::String("x")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.Set("small", Datum::Int32(200)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.Set("d", Datum::Decimal32(10000)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.SetString("vc", "abcd").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.SetInt32("missing", 1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(row.Set(99, Datum::Int32(1)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(row.AnySet());
  // Integer Datums convert when they fit.
  BASALT_EXPECT_OK(row.Set("small", Datum::Int64(-100)));
  BASALT_EXPECT_OK(row.Set("d", Datum::Int32(9999)));
  EXPECT_EQ(row.ToString(), "(INT8 small=-100, DECIMAL(4, 1) d=999.9)");
}

TEST_F(PartialRowTest, CopiesOwnTheirStrings) {
  auto row = std::make_unique<PartialRow>(&schema_);
  {
    std::string temp = "temporary";
    BASALT_ASSERT_OK(row->SetString("name", temp));
    temp.assign("overwritten");
  }
  PartialRow copy = *row;
  row.reset();
  EXPECT_EQ(copy.Get(1).string_value(), "temporary");
  PartialRow assigned(&schema_);
  assigned = copy;
  EXPECT_EQ(assigned.Get(1).string_value(), "temporary");
}

}  // namespace partial_row_test_file
}  // namespace
}  // namespace basalt
