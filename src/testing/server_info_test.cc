#include "testing/server_info.h"

#include <gtest/gtest.h>

#include <string>

#include "common/env.h"
#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace server_info_test_file {

constexpr char kGood[] =
    "{\"uuid\": \"0123456789abcdef0123456789abcdef\", \"rpc_port\": 7050, \"http_port\": 0, "
    "\"pid\": 1234}\n";

TEST(ServerInfoTest, ParsesWhatWriteServerInfoWrites) {
  auto info = ParseServerInfo(kGood);
  BASALT_ASSERT_OK(info);
  EXPECT_EQ(info->uuid, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(info->rpc_port, 7050);
  EXPECT_EQ(info->http_port, 0);
  EXPECT_EQ(info->pid, 1234);
}

TEST(ServerInfoTest, AcceptsAnyKeyOrderWhitespaceAndExtraKeys) {
  auto info = ParseServerInfo(
      "\n\t{ \"pid\":7,\"http_port\" : 8051 ,\r\n \"extra\": \"a\\\"b\", \"n\": -3, "
      "\"uuid\":\"u\", \"rpc_port\":65535 }  ");
  BASALT_ASSERT_OK(info);
  EXPECT_EQ(info->uuid, "u");
  EXPECT_EQ(info->rpc_port, 65535);
  EXPECT_EQ(info->http_port, 8051);
  EXPECT_EQ(info->pid, 7);
}

TEST(ServerInfoTest, MalformedFilesAreDataLoss) {
  const char* bad[] = {
      "",
      "{",
      "{}",
      "[]",
      "null",
      "{\"uuid\": \"u\", \"rpc_port\": 1, \"http_port\": 0}",             // no pid
      "{\"uuid\": \"u\", \"http_port\": 0, \"pid\": 1}",                  // no rpc_port
      "{\"rpc_port\": 1, \"http_port\": 0, \"pid\": 1}",                  // no uuid
      "{\"uuid\": \"\", \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1}",  // empty uuid
      "{\"uuid\": 5, \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1}",     // wrong type
      "{\"uuid\": \"u\", \"rpc_port\": \"1\", \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": \"u\", \"rpc_port\": 70000, \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": \"u\", \"rpc_port\": -1, \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": \"u\", \"rpc_port\": 1, \"http_port\": 0, \"pid\": 0}",
      "{\"uuid\": \"u\", \"rpc_port\": 1.5, \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": \"u\", \"rpc_port\": 1, \"http_port\": 0, \"pid\": 99999999999999999999}",
      "{\"uuid\": \"u\", \"uuid\": \"v\", \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": \"u\", \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1} x",
      "{\"uuid\": \"u\", \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1,}",
      "{\"uuid\": \"u\" \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": \"u\\n\", \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": \"u, \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": {\"a\": 1}, \"rpc_port\": 1, \"http_port\": 0, \"pid\": 1}",
      "{\"uuid\": \"u\", \"rpc_port\": 1, \"http_port\": 0, \"pid\": -",
  };
  for (const char* s : bad) {
    auto info = ParseServerInfo(s);
    EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss) << "input: " << s;
  }
}

TEST(ServerInfoTest, EveryTruncationFailsCleanly) {
  std::string good = kGood;
  good.pop_back();  // The trailing newline is optional.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(ParseServerInfo(good.substr(0, n)).status().code(), absl::StatusCode::kDataLoss)
        << "prefix of " << n << " bytes";
  }
}

TEST(ServerInfoTest, RandomCorruptionNeverCrashes) {
  Random rnd(SeedFromEnvOrTime());
  const std::string good = kGood;
  for (int i = 0; i < 5000; ++i) {
    std::string s = good;
    int flips = 1 + static_cast<int>(rnd.Uniform(4));
    for (int f = 0; f < flips; ++f) s[rnd.Uniform(s.size())] = static_cast<char>(rnd.Next32());
    auto info = ParseServerInfo(s);
    if (!info.ok()) {
      EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss) << s;
    }
  }
}

TEST(ServerInfoTest, ReadServerInfoReportsMissingAndBadFiles) {
  Env* env = Env::Default();
  std::string path = JoinPath(::testing::TempDir(), "server_info_test_info.json");
  env->DeleteFile(path).IgnoreError();
  EXPECT_EQ(ReadServerInfo(env, path).status().code(), absl::StatusCode::kNotFound);
  BASALT_ASSERT_OK(WriteFileAtomically(env, path, "{\"uuid\": 1"));
  auto info = ReadServerInfo(env, path);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(info.status().message().find(path), absl::string_view::npos) << info.status();
  BASALT_ASSERT_OK(WriteFileAtomically(env, path, kGood));
  info = ReadServerInfo(env, path);
  BASALT_ASSERT_OK(info);
  EXPECT_EQ(info->rpc_port, 7050);
}

}  // namespace server_info_test_file
}  // namespace
}  // namespace basalt
