#include "tserver/data_dir_group.h"

#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace data_dir_group_test_file {

TEST(DataDirGroupTest, TakesTheLeastLoadedHealthyDirectories) {
  EXPECT_EQ(ChooseDataDirGroup({false, false, false, false}, {3, 1, 2, 1}, 2),
            (std::vector<int>{1, 3}));
  EXPECT_EQ(ChooseDataDirGroup({false, true, false, false}, {3, 0, 2, 1}, 2),
            (std::vector<int>{2, 3}));
  // Ties go to the lower position.
  EXPECT_EQ(ChooseDataDirGroup({false, false, false}, {0, 0, 0}, 2), (std::vector<int>{0, 1}));
}

TEST(DataDirGroupTest, ZeroOrTooLargeATargetTakesEveryHealthyDirectory) {
  EXPECT_EQ(ChooseDataDirGroup({false, true, false}, {5, 0, 5}, 0), (std::vector<int>{0, 2}));
  EXPECT_EQ(ChooseDataDirGroup({false, false}, {0, 0}, 3), (std::vector<int>{0, 1}));
  EXPECT_EQ(ChooseDataDirGroup({false}, {7}, 3), (std::vector<int>{0}));
}

TEST(DataDirGroupTest, NoHealthyDirectoryIsAnEmptyGroup) {
  EXPECT_TRUE(ChooseDataDirGroup({true, true}, {0, 0}, 1).empty());
}

}  // namespace data_dir_group_test_file
}  // namespace
}  // namespace basalt
