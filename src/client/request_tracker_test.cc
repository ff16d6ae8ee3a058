#include "client/request_tracker.h"

#include <gtest/gtest.h>

namespace basalt::client::internal {
namespace {
namespace request_tracker_test_file {

TEST(RequestTrackerTest, TheWatermarkIsTheLowestIncompleteRequest) {
  RequestTracker t;
  EXPECT_EQ(t.client_id().size(), 32u);
  EXPECT_NE(RequestTracker().client_id(), t.client_id());
  EXPECT_EQ(t.FirstIncomplete(), 1u);
  const uint64_t a = t.Start();
  const uint64_t b = t.Start();
  const uint64_t c = t.Start();
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(t.FirstIncomplete(), a);
  t.Complete(b);
  EXPECT_EQ(t.FirstIncomplete(), a);  // b is done, a is not: a may still be retried.
  t.Complete(a);
  EXPECT_EQ(t.FirstIncomplete(), c);
  t.Complete(c);
  EXPECT_EQ(t.FirstIncomplete(), c + 1);
}

}  // namespace request_tracker_test_file
}  // namespace
}  // namespace basalt::client::internal
