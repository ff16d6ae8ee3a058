#include "tools/host_probe.h"

#include <dirent.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "common/status_test_util.h"

namespace basalt::tools {
namespace {
namespace host_probe_test_file {

// Files in `dir` (other than . and ..).
int CountEntries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") ++n;
  }
  closedir(d);
  return n;
}

TEST(HostProbeTest, EveryFigureIsMeasuredAndTheProbeFileRemoved) {
  std::string dir = ::testing::TempDir() + "/host_probe_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  absl::StatusOr<HostProbeResult> r = ProbeHost(dir, absl::Milliseconds(20));
  BASALT_ASSERT_OK(r);
  EXPECT_GT(r->syscall_us, 0);
  EXPECT_GT(r->thread_round_trip_us, 0);
  EXPECT_GT(r->loopback_round_trips_per_sec_blocking, 0);
  EXPECT_GT(r->loopback_round_trips_per_sec_polling, 0);
  EXPECT_GT(r->fdatasync_p50_us, 0);
  EXPECT_GT(r->fdatasyncs_per_sec, 0);
  EXPECT_EQ(CountEntries(dir), 0);  // The disk probe's file is gone.
  rmdir(dir.c_str());
}

TEST(HostProbeTest, AMissingDirectoryIsNotFound) {
  absl::StatusOr<HostProbeResult> r =
      ProbeHost(::testing::TempDir() + "/no/such/dir", absl::Milliseconds(5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_NE(r.status().message().find("no/such/dir"), std::string_view::npos) << r.status();
}

}  // namespace host_probe_test_file
}  // namespace
}  // namespace basalt::tools
