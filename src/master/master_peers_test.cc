#include "master/master_peers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/env.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "master/master_test_util.h"

namespace basalt {
namespace {
namespace master_peers_test_file {

HostPort Hp(const std::string& host, uint16_t port) { return HostPort{host, port}; }

std::vector<MasterPeer> ThreePeers() {
  return {{"a", Hp("m1", 7051)}, {"b", Hp("m2", 7051)}, {"c", Hp("m3", 7051)}};
}

TEST(MasterPeersTest, FindSelf) {
  const std::vector<HostPort> masters = {Hp("m1", 7051), Hp("m2", 7051), Hp("m3", 7051)};
  auto idx = FindSelfInMasters(masters, Hp("m2", 7051));
  BASALT_ASSERT_OK(idx);
  EXPECT_EQ(*idx, 1);

  auto missing = FindSelfInMasters(masters, Hp("m2", 7052));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(missing.status().message()).find("--rpc_advertised_addresses"),
            std::string::npos);

  auto twice = FindSelfInMasters({Hp("m1", 7051), Hp("m1", 7051)}, Hp("m1", 7051));
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MasterPeersTest, StoreLoadRoundTrip) {
  Env* env = Env::Default();
  master_test::TempDir dir("master_peers_rt");
  const std::string path = JoinPath(dir.path(), "master_peers");
  auto none = LoadMasterPeers(env, path);
  BASALT_ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  BASALT_ASSERT_OK(StoreMasterPeers(env, path, ThreePeers()));
  auto loaded = LoadMasterPeers(env, path);
  BASALT_ASSERT_OK(loaded);
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, ThreePeers());
}

// Every truncation and every single-byte change of the file is refused cleanly: DATA_LOSS,
// never a crash and never a silently different group.
TEST(MasterPeersTest, CorruptFileIsDataLoss) {
  Env* env = Env::Default();
  master_test::TempDir dir("master_peers_corrupt");
  const std::string path = JoinPath(dir.path(), "master_peers");
  BASALT_ASSERT_OK(StoreMasterPeers(env, path, ThreePeers()));
  std::string good;
  BASALT_ASSERT_OK(ReadFileToString(env, path, &good));
  for (size_t len = 0; len < good.size(); ++len) {
    BASALT_ASSERT_OK(WriteFileAtomically(env, path, good.substr(0, len)));
    auto r = LoadMasterPeers(env, path);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << "truncated to " << len;
  }
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    BASALT_ASSERT_OK(WriteFileAtomically(env, path, bad));
    auto r = LoadMasterPeers(env, path);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << "byte " << i;
  }
  // Well framed but empty: no group.
  BASALT_ASSERT_OK(StoreMasterPeers(env, path, {}));
  EXPECT_EQ(LoadMasterPeers(env, path).status().code(), absl::StatusCode::kDataLoss);
  // One master is a group that `basalt master remove` shrank.
  BASALT_ASSERT_OK(StoreMasterPeers(env, path, {{"a", Hp("m1", 7051)}}));
  BASALT_EXPECT_OK(LoadMasterPeers(env, path));
}

TEST(MasterPeersTest, ConfiguredMustMatchStored) {
  BASALT_EXPECT_OK(
      CheckMasterPeersMatch(ThreePeers(), {Hp("m3", 7051), Hp("m1", 7051), Hp("m2", 7051)}));
  absl::Status fewer = CheckMasterPeersMatch(ThreePeers(), {Hp("m1", 7051), Hp("m2", 7051)});
  EXPECT_EQ(fewer.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(fewer.message()).find("m3:7051"), std::string::npos) << fewer;
  EXPECT_FALSE(
      CheckMasterPeersMatch(ThreePeers(), {Hp("m1", 7051), Hp("m2", 7051), Hp("m4", 7051)}).ok());
}

TEST(MasterPeersTest, ResolveTimesOutNamingTheMissingMaster) {
  // Nothing listens on port 1: the group cannot form, and the error says which master is missing.
  auto r = ResolveMasterPeers({Hp("127.0.0.1", 1), Hp("127.0.0.1", 2)}, 1, "self",
                              absl::Now() + absl::Milliseconds(300));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(r.status().message()).find("127.0.0.1:1"), std::string::npos) << r.status();
}

}  // namespace master_peers_test_file
}  // namespace
}  // namespace basalt
