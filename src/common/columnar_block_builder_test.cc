#include "common/columnar_block_builder.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "proto/common.pb.h"

namespace basalt {
namespace {
namespace columnar_block_builder_test_file {

std::string Bytes(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }

// Golden bytes of the wire form (proto/common.proto, docs/tserver.md "Scan batches") across two
// appends: LE fixed cells, num_rows + 1 uint32 offsets, an LSB-first null bitmap only when a cell
// is NULL, and the output column order taken from `inputs`.
TEST(ColumnarBlockBuilderTest, GoldenBytesAcrossAppends) {
  ColumnBlockBuffer ints(DataType::kInt32, 4, /*nullable=*/false);
  ColumnBlockBuffer strs(DataType::kString, 4, /*nullable=*/true);
  ColumnBlockBuffer opt(DataType::kInt16, 4, /*nullable=*/true);
  ColumnBlock* blocks[] = {ints.block(), strs.block(), opt.block()};
  // Output: strs, ints, opt.
  ColumnarBlockBuilder b({DataType::kString, DataType::kInt32, DataType::kInt16}, {1, 0, 2});

  ints.block()->data<int32_t>()[0] = 1;
  ints.block()->data<int32_t>()[1] = 0x01020304;
  auto* sv = strs.block()->data<std::string_view>();
  sv[0] = "ab";
  strs.block()->SetNull(0, false);
  sv[1] = std::string_view();
  strs.block()->SetNull(1, true);
  opt.block()->data<int16_t>()[0] = -2;
  opt.block()->data<int16_t>()[1] = 7;
  opt.block()->SetNull(0, false);
  opt.block()->SetNull(1, false);
  b.Append(blocks, 2);

  ints.block()->data<int32_t>()[0] = -1;
  sv[0] = "xyz";
  strs.block()->SetNull(0, false);
  opt.block()->data<int16_t>()[0] = 0;
  opt.block()->SetNull(0, false);
  b.Append(blocks, 1);
  EXPECT_EQ(b.num_rows(), 3u);

  pb::ColumnarRowBlockPB out;
  b.Finish(&out);
  EXPECT_EQ(out.num_rows(), 3);
  ASSERT_EQ(out.columns_size(), 3);
  EXPECT_EQ(out.columns(0).data(), "abxyz");
  EXPECT_EQ(out.columns(0).offsets(), Bytes({0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0}));
  EXPECT_EQ(out.columns(0).null_bitmap(), Bytes({0x02}));
  EXPECT_EQ(out.columns(1).data(), Bytes({1, 0, 0, 0, 4, 3, 2, 1, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_TRUE(out.columns(1).offsets().empty());
  EXPECT_TRUE(out.columns(1).null_bitmap().empty());
  // Nullable but no NULL: no bitmap.
  EXPECT_EQ(out.columns(2).data(), Bytes({0xfe, 0xff, 7, 0, 0, 0}));
  EXPECT_TRUE(out.columns(2).null_bitmap().empty());
}

TEST(ColumnarBlockBuilderTest, EmptyBatch) {
  ColumnarBlockBuilder b({DataType::kBinary}, {0});
  pb::ColumnarRowBlockPB out;
  b.Finish(&out);
  EXPECT_EQ(out.num_rows(), 0);
  ASSERT_EQ(out.columns_size(), 1);
  EXPECT_EQ(out.columns(0).offsets(), Bytes({0, 0, 0, 0}));
  EXPECT_TRUE(out.columns(0).data().empty());
}

}  // namespace columnar_block_builder_test_file
}  // namespace
}  // namespace basalt
