#include "tserver/disk_space_monitor.h"

#include <gtest/gtest.h>

#include "common/env_memory.h"
#include "common/injecting_env.h"
#include "common/status_test_util.h"
#include "proto/common.pb.h"
#include "rpc/rpc_status.h"

namespace basalt {
namespace {
namespace disk_space_monitor_test_file {

TEST(DiskSpaceMonitorTest, AFullDirectoryRefusesWritesUntilSpaceIsFreed) {
  InjectingEnv env(Env::Default());
  DiskSpaceMonitor m(&env, "ts-1", {{"/tmp", true, false, 0}, {"/var/tmp", false, true, 0}},
                     absl::ZeroDuration());
  BASALT_EXPECT_OK(m.CheckRoomForWrites());
  BASALT_EXPECT_OK(m.CheckRoomForData());
  EXPECT_TRUE(m.FullDirs().empty());
  // The WAL directory fills up: writes stop, flushes (data) go on.
  env.SetEnospc("/var/tmp", 1.0);
  absl::Status s = m.CheckRoomForWrites();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  auto detail = GetErrorDetail(s);
  ASSERT_TRUE(detail.has_value()) << s;
  EXPECT_EQ(detail->code(), pb::ErrorDetailPB::DISK_FULL);
  EXPECT_NE(s.message().find("ts-1"), std::string::npos) << s;
  EXPECT_NE(s.message().find("WAL directory /var/tmp"), std::string::npos) << s;
  BASALT_EXPECT_OK(m.CheckRoomForData());
  EXPECT_EQ(m.FullDirs(), std::vector<std::string>{"/var/tmp"});
  // The data directory too.
  env.SetEnospc("/tmp", 1.0);
  absl::Status data = m.CheckRoomForData();
  EXPECT_NE(data.message().find("data directory /tmp"), std::string::npos) << data;
  // Space freed: everything resumes.
  env.SetEnospc("", 0.0);
  BASALT_EXPECT_OK(m.CheckRoomForWrites());
  BASALT_EXPECT_OK(m.CheckRoomForData());
}

// With several data directories, a tablet waits only for the directories it needs: the first
// (metadata), the WAL's and its group's.
TEST(DiskSpaceMonitorTest, AGroupNeedsOnlyItsDirectoriesTheFirstAndTheWal) {
  InjectingEnv env(Env::Default());
  DiskSpaceMonitor m(&env, "ts-1",
                     {{"/tmp", true, true, 0, 0},
                      {"/var/tmp", true, false, 0, 1},
                      {"/dev/shm", true, false, 0, 2}},
                     absl::ZeroDuration());
  env.SetEnospc("/var/tmp", 1.0);
  const std::vector<int> in_1 = {1};
  const std::vector<int> in_2 = {2};
  EXPECT_TRUE(absl::IsResourceExhausted(m.CheckRoomForWrites(in_1)));
  EXPECT_TRUE(absl::IsResourceExhausted(m.CheckRoomForData(in_1)));
  BASALT_EXPECT_OK(m.CheckRoomForWrites(in_2));
  BASALT_EXPECT_OK(m.CheckRoomForData(in_2));
  EXPECT_TRUE(absl::IsResourceExhausted(m.CheckRoomForWrites()));  // No group: every directory.
  env.SetEnospc("/tmp", 1.0);  // The first holds every tablet's metadata and here the WAL.
  EXPECT_TRUE(absl::IsResourceExhausted(m.CheckRoomForWrites(in_2)));
  EXPECT_TRUE(absl::IsResourceExhausted(m.CheckRoomForData(in_2)));
}

TEST(DiskSpaceMonitorTest, TheReserveCountsAsFull) {
  absl::StatusOr<SpaceInfo> info = Env::Default()->GetSpaceInfo("/tmp");
  BASALT_ASSERT_OK(info);
  // A reserve above the free space: full although ENOSPC is far.
  DiskSpaceMonitor above(
      Env::Default(), "ts-1",
      {{"/tmp", true, false, static_cast<int64_t>(info->free_bytes) + (1LL << 40)}},
      absl::ZeroDuration());
  EXPECT_TRUE(absl::IsResourceExhausted(above.CheckRoomForWrites()));
  DiskSpaceMonitor none(Env::Default(), "ts-1", {{"/tmp", true, false, 0}}, absl::ZeroDuration());
  BASALT_EXPECT_OK(none.CheckRoomForWrites());
}

TEST(DiskSpaceMonitorTest, AnEnvWithoutSpaceInformationIsNeverFull) {
  MemoryEnv env;
  DiskSpaceMonitor m(&env, "ts-1", {{"/data", true, true, 1LL << 40}}, absl::ZeroDuration());
  BASALT_EXPECT_OK(m.CheckRoomForWrites());
}

// Free space is read again at most once per refresh interval.
TEST(DiskSpaceMonitorTest, FreeSpaceIsCachedForTheRefreshInterval) {
  InjectingEnv env(Env::Default());
  DiskSpaceMonitor m(&env, "ts-1", {{"/tmp", true, false, 0}}, absl::Hours(1));
  BASALT_EXPECT_OK(m.CheckRoomForWrites());
  env.SetEnospc("/tmp", 1.0);
  BASALT_EXPECT_OK(m.CheckRoomForWrites());  // Not read again yet.
}

}  // namespace disk_space_monitor_test_file
}  // namespace
}  // namespace basalt
