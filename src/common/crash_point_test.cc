#include "common/crash_point.h"

#include <unistd.h>

#include <csignal>

#include <gflags/gflags.h>
#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace crash_point_test_file {

TEST(CrashPointTest, ParsesANameAndAnOptionalPositivePass) {
  std::optional<CrashPointSpec> s = ParseCrashPointSpec("flush_done");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "flush_done");
  EXPECT_EQ(s->hit, 1);
  s = ParseCrashPointSpec("flush_done:3");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "flush_done");
  EXPECT_EQ(s->hit, 3);
  for (const char* bad : {"", ":2", "x:", "x:0", "x:-1", "x:2a", "x: 2"}) {
    EXPECT_FALSE(ParseCrashPointSpec(bad).has_value()) << bad;
  }
}

// Restores --fault_crash_at_point after a test.
class CrashPointDeathTest : public ::testing::Test {
 protected:
  void TearDown() override { FLAGS_fault_crash_at_point = ""; }
  gflags::FlagSaver saver_;
};

TEST_F(CrashPointDeathTest, AnArmedPointKillsTheProcessWithSigkillAtTheNamedPass) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  FLAGS_fault_crash_at_point = "here:2";
  EXPECT_EXIT(
      {
        MaybeCrashAt("elsewhere");
        MaybeCrashAt("here");  // Pass 1: survives.
        MaybeCrashAt("elsewhere");
        MaybeCrashAt("here");  // Pass 2: dies.
        _exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "");
}

TEST_F(CrashPointDeathTest, UnarmedOrMalformedPointsDoNothing) {
  FLAGS_fault_crash_at_point = "";
  MaybeCrashAt("here");
  FLAGS_fault_crash_at_point = "here:zero";
  MaybeCrashAt("here");
  FLAGS_fault_crash_at_point = "there";
  MaybeCrashAt("here");
  SUCCEED();  // Still alive.
}

}  // namespace crash_point_test_file
}  // namespace
}  // namespace basalt
