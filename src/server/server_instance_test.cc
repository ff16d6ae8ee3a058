#include "server/server_instance.h"

#include <gtest/gtest.h>

#include "common/env.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace server_instance_test_file {

TEST(ServerInstanceTest, UuidIsStableAcrossOpensAndDirIsLocked) {
  std::string dir = JoinPath(::testing::TempDir(), "server_instance_test_dir");
  Env* env = Env::Default();
  env->DeleteDirRecursively(dir).IgnoreError();
  std::string uuid;
  {
    auto inst = ServerInstance::Open(env, dir, "tserver");
    BASALT_ASSERT_OK(inst);
    uuid = (*inst)->uuid();
    EXPECT_EQ(uuid.size(), 32u);
  }
  auto inst = ServerInstance::Open(env, dir, "tserver");
  BASALT_ASSERT_OK(inst);
  EXPECT_EQ((*inst)->uuid(), uuid);
  EXPECT_EQ(ServerInstance::Open(env, dir, "tserver").status().code(),
            absl::StatusCode::kFailedPrecondition);
  inst->reset();
  EXPECT_EQ(ServerInstance::Open(env, dir, "master").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ServerInstanceTest, CorruptInstanceFileIsDataLoss) {
  std::string dir = JoinPath(::testing::TempDir(), "server_instance_test_corrupt");
  Env* env = Env::Default();
  env->DeleteDirRecursively(dir).IgnoreError();
  BASALT_ASSERT_OK(env->CreateDirs(dir));
  for (const char* bad : {"", "tserver", "tserver xyz\n", "tserver 0123\n",
                          "tserver 0123456789abcdef0123456789abcdeF\n"}) {
    BASALT_ASSERT_OK(WriteFileAtomically(env, JoinPath(dir, "instance"), bad));
    EXPECT_EQ(ServerInstance::Open(env, dir, "tserver").status().code(),
              absl::StatusCode::kDataLoss)
        << bad;
  }
}

TEST(ServerInstanceTest, GenerateUuid) {
  std::string a = GenerateUuid(), b = GenerateUuid();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace server_instance_test_file
}  // namespace
}  // namespace basalt
