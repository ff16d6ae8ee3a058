#include "master/ts_manager.h"

#include <gtest/gtest.h>

#include "common/clock.h"

namespace basalt {
namespace {
namespace ts_manager_test_file {

TEST(TsManagerTest, LivenessFollowsTheClock) {
  ManualClock clock;
  TsManager m(&clock, /*unresponsive_timeout_ms=*/1000);
  auto r = m.Heartbeat("a", HostPort{"h", 1}, HostPort{}, 3, /*full_report=*/false);
  EXPECT_FALSE(r.was_known);
  EXPECT_TRUE(r.needs_full_report);
  m.Heartbeat("b", HostPort{"h", 2}, HostPort{}, 0, true);
  EXPECT_EQ(m.NumLive(), 2);

  clock.AdvanceMicros(600 * 1000);
  r = m.Heartbeat("a", HostPort{"h", 11}, HostPort{}, 4, true);
  EXPECT_TRUE(r.was_known);
  EXPECT_FALSE(r.needs_full_report);
  clock.AdvanceMicros(500 * 1000);  // b: 1100 ms since its heartbeat; a: 500 ms.
  auto live = m.GetLive();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].uuid, "a");
  EXPECT_EQ(live[0].rpc_address.port, 11);
  EXPECT_EQ(live[0].num_live_tablets, 4);
  EXPECT_EQ(live[0].millis_since_heartbeat, 500);
  auto b = m.Get("b");
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->live);
  EXPECT_TRUE(b->full_report_received);
  EXPECT_FALSE(m.Get("c").has_value());

  // A dead server that heartbeats again is live again.
  m.Heartbeat("b", HostPort{"h", 2}, HostPort{}, 0, false);
  EXPECT_EQ(m.NumLive(), 2);
  EXPECT_EQ(m.GetAll().size(), 2u);
}

}  // namespace ts_manager_test_file
}  // namespace
}  // namespace basalt
