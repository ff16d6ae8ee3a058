#include "rpc/net_util.h"
#include "common/status_test_util.h"

#include <gtest/gtest.h>

namespace basalt {
namespace {
namespace net_util_test_file {

TEST(NetUtilTest, ParseHostPort) {
  auto hp = ParseHostPort("127.0.0.1:7051", 1);
  BASALT_ASSERT_OK(hp);
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 7051);
  EXPECT_EQ(hp->ToString(), "127.0.0.1:7051");

  hp = ParseHostPort(" localhost ", 7050);
  BASALT_ASSERT_OK(hp);
  EXPECT_EQ(hp->ToString(), "localhost:7050");

  hp = ParseHostPort("[::1]:9", 7050);
  BASALT_ASSERT_OK(hp);
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->ToString(), "[::1]:9");
}

TEST(NetUtilTest, BadAddresses) {
  for (const char* bad : {"", ":5", "h:", "h:x", "h:70000", "::1", "[::1", "[::1]x", "h:-1"}) {
    EXPECT_EQ(ParseHostPort(bad, 1).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(NetUtilTest, List) {
  auto list = ParseHostPortList("a:1, b ,c:3", 7);
  BASALT_ASSERT_OK(list);
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[1].ToString(), "b:7");
  EXPECT_FALSE(ParseHostPortList(" , ", 7).ok());
  EXPECT_FALSE(ParseHostPortList("a:1,b:x", 7).ok());
}

}  // namespace net_util_test_file
}  // namespace
}  // namespace basalt
