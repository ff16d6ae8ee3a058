#include "common/column_block.h"

#include <vector>

#include "common/random.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace column_block_test_file {

TEST(ColumnBlockTest, ExpandNonNullCellsSpreadsValuesOverNonNullRows) {
  Random rng(SeedFromEnvOrTime());
  for (int iter = 0; iter < 50; iter++) {
    const size_t cap = 1 + rng.Uniform(200);
    ColumnBlockBuffer buf(DataType::kInt32, cap, /*nullable=*/true);
    ColumnBlock* b = buf.block();
    const size_t offset = rng.Uniform(cap);
    const size_t rows = rng.Uniform(cap - offset + 1);
    std::vector<int32_t> want(rows);
    size_t values = 0;
    for (size_t r = 0; r < rows; r++) {
      const bool null = rng.OneIn(3);
      b->SetNull(offset + r, null);
      want[r] = null ? 0 : 1000 + static_cast<int32_t>(values++);
    }
    for (size_t j = 0; j < values; j++) b->data<int32_t>()[offset + j] = 1000 + int32_t(j);
    for (size_t j = offset + values; j < cap; j++) b->data<int32_t>()[j] = -7;  // Untouched.
    ExpandNonNullCells(b, offset, rows, values);
    for (size_t r = 0; r < rows; r++) {
      ASSERT_EQ(b->is_null(offset + r), want[r] == 0);
      ASSERT_EQ(b->data<int32_t>()[offset + r], want[r]) << r;
    }
    for (size_t j = offset + rows; j < cap; j++) {
      if (j >= offset + values) {
        ASSERT_EQ(b->data<int32_t>()[j], -7);
      }
    }
  }
}

TEST(ColumnBlockTest, BufferIsAlignedAndSized) {
  ColumnBlockBuffer buf(DataType::kDecimal128, 10, false);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.block()->cells) % 64, 0u);
  EXPECT_EQ(buf.block()->cell_size, 16u);
  EXPECT_EQ(buf.block()->null_bitmap, nullptr);
  EXPECT_FALSE(buf.block()->is_null(3));
  EXPECT_NE(buf.block()->arena, nullptr);
}

}  // namespace column_block_test_file
}  // namespace
}  // namespace basalt
