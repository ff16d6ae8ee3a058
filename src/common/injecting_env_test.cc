#include "common/injecting_env.h"

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "common/env_memory.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace injecting_env_test_file {

class InjectingEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BASALT_ASSERT_OK(base_.CreateDirs("/disk1"));
    BASALT_ASSERT_OK(base_.CreateDirs("/disk10"));
    BASALT_ASSERT_OK(WriteStringToFile(&base_, "/disk1/f", "hello", true));
    BASALT_ASSERT_OK(WriteStringToFile(&base_, "/disk10/f", "other", true));
  }
  MemoryEnv base_;
  InjectingEnv env_{&base_};
};

TEST_F(InjectingEnvTest, NothingIsInjectedByDefault) {
  std::string data;
  BASALT_EXPECT_OK(ReadFileToString(&env_, "/disk1/f", &data));
  EXPECT_EQ(data, "hello");
  BASALT_EXPECT_OK(WriteFileAtomically(&env_, "/disk1/g", "x"));
}

// EIO hits every operation under the prefix (reads of files already open too), and only there.
TEST_F(InjectingEnvTest, EioFailsEveryOperationUnderThePrefix) {
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> open = env_.NewRandomAccessFile("/disk1/f");
  BASALT_ASSERT_OK(open);
  env_.SetEio("/disk1", 1.0);
  char scratch[8];
  std::string_view got;
  absl::Status read = (*open)->ReadAt(0, 5, scratch, &got);
  EXPECT_TRUE(absl::IsInternal(read)) << read;
  EXPECT_NE(read.message().find("Input/output error"), std::string::npos) << read;
  EXPECT_NE(read.message().find("/disk1/f"), std::string::npos) << read;
  std::string data;
  EXPECT_FALSE(ReadFileToString(&env_, "/disk1/f", &data).ok());
  EXPECT_FALSE(WriteFileAtomically(&env_, "/disk1/g", "x").ok());
  EXPECT_FALSE(env_.DeleteFile("/disk1/f").ok());
  EXPECT_FALSE(env_.GetChildren("/disk1").ok());
  // "/disk10" is not under "/disk1".
  BASALT_EXPECT_OK(ReadFileToString(&env_, "/disk10/f", &data));
  EXPECT_EQ(data, "other");
  env_.SetEio("/disk1", 0.0);
  BASALT_EXPECT_OK((*open)->ReadAt(0, 5, scratch, &got));
  EXPECT_EQ(got, "hello");
}

// With a trigger file, EIO starts when the file appears and stops when it goes (within 100 ms).
TEST_F(InjectingEnvTest, EioWaitsForItsTriggerFile) {
  env_.SetEio("/disk1", 1.0);
  env_.SetEioTrigger("/trigger");
  std::string data;
  BASALT_EXPECT_OK(ReadFileToString(&env_, "/disk1/f", &data));
  BASALT_ASSERT_OK(WriteStringToFile(&base_, "/trigger", "", true));
  absl::SleepFor(absl::Milliseconds(150));
  EXPECT_TRUE(absl::IsInternal(ReadFileToString(&env_, "/disk1/f", &data)));
  BASALT_ASSERT_OK(base_.DeleteFile("/trigger"));
  absl::SleepFor(absl::Milliseconds(150));
  BASALT_EXPECT_OK(ReadFileToString(&env_, "/disk1/f", &data));
}

// ENOSPC hits what takes space; reads go on, and the free space reads as 0.
TEST_F(InjectingEnvTest, EnospcFailsWritesOnlyAndEmptiesTheFreeSpace) {
  absl::StatusOr<std::unique_ptr<WritableFile>> log = env_.NewAppendableFile("/disk1/log");
  BASALT_ASSERT_OK(log);
  env_.SetEnospc("/disk1", 1.0);
  absl::Status append = (*log)->Append("entry");
  EXPECT_TRUE(absl::IsResourceExhausted(append)) << append;
  EXPECT_NE(append.message().find("No space left on device"), std::string::npos) << append;
  EXPECT_TRUE(absl::IsResourceExhausted(WriteFileAtomically(&env_, "/disk1/g", "x")));
  std::string data;
  BASALT_EXPECT_OK(ReadFileToString(&env_, "/disk1/f", &data));
  BASALT_EXPECT_OK(env_.DeleteFile("/disk1/f"));  // Deleting frees space: never refused.
  env_.SetEnospc("/disk1", 0.0);
  BASALT_EXPECT_OK((*log)->Append("entry"));
}

TEST(InjectingEnvSpaceTest, FreeSpaceReadsAsZeroUnderAFullPrefix) {
  InjectingEnv env(Env::Default());
  absl::StatusOr<SpaceInfo> tmp = env.GetSpaceInfo("/tmp");
  BASALT_ASSERT_OK(tmp);
  EXPECT_GT(tmp->capacity_bytes, 0u);
  EXPECT_GT(tmp->free_bytes, 0u);
  env.SetEnospc("/tmp", 1.0);
  absl::StatusOr<SpaceInfo> full = env.GetSpaceInfo("/tmp");
  BASALT_ASSERT_OK(full);
  EXPECT_EQ(full->free_bytes, 0u);
  EXPECT_EQ(full->capacity_bytes, tmp->capacity_bytes);
}

}  // namespace injecting_env_test_file
}  // namespace
}  // namespace basalt
