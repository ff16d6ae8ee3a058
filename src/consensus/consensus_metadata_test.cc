#include "consensus/consensus_metadata.h"

#include <string>

#include <gtest/gtest.h>

#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace consensus_metadata_test_file {

constexpr char kPath[] = "/data/cmeta";

ConsensusMetadataContents Initial() {
  ConsensusMetadataContents c;
  c.committed_config.voters = {"a", "b", "c"};
  c.committed_config.learners = {"d"};
  c.peer_addresses = {{"a", "h1:7050"}, {"b", "h2:7050"}, {"c", "h3:7050"}, {"d", "h4:7050"}};
  return c;
}

class ConsensusMetadataTest : public testing::Test {
 protected:
  void SetUp() override { BASALT_ASSERT_OK(env_.CreateDirs("/data")); }
  MemoryEnv env_;
};

TEST_F(ConsensusMetadataTest, CreateLoadRoundTrip) {
  absl::StatusOr<std::unique_ptr<ConsensusMetadata>> cmeta =
      ConsensusMetadata::Create(&env_, kPath, Initial());
  BASALT_ASSERT_OK(cmeta);
  EXPECT_FALSE((*cmeta)->dirty());
  EXPECT_TRUE(absl::IsAlreadyExists(ConsensusMetadata::Create(&env_, kPath, Initial()).status()));

  (*cmeta)->set_current_term(5);
  (*cmeta)->set_voted_for("b");
  EXPECT_TRUE((*cmeta)->dirty());
  BASALT_ASSERT_OK((*cmeta)->Flush());
  EXPECT_FALSE((*cmeta)->dirty());
  const int64_t flushes = (*cmeta)->num_flushes();
  BASALT_ASSERT_OK((*cmeta)->Flush());
  EXPECT_EQ((*cmeta)->num_flushes(), flushes);  // Nothing changed: no write.

  absl::StatusOr<std::unique_ptr<ConsensusMetadata>> loaded = ConsensusMetadata::Load(&env_, kPath);
  BASALT_ASSERT_OK(loaded);
  EXPECT_EQ((*loaded)->current_term(), 5u);
  EXPECT_EQ((*loaded)->voted_for(), "b");
  EXPECT_EQ((*loaded)->contents().committed_config, Initial().committed_config);
  EXPECT_EQ((*loaded)->contents().peer_addresses, Initial().peer_addresses);

  // A new term clears the vote; config changes persist with their index.
  (*loaded)->set_current_term(6);
  EXPECT_EQ((*loaded)->voted_for(), "");
  RaftConfig config{{"a", "b", "c", "d"}, {}};
  (*loaded)->set_committed_config(config, 42);
  (*loaded)->set_hard_state(HardState{6, "a", 40});
  BASALT_ASSERT_OK((*loaded)->Flush());
  loaded = ConsensusMetadata::Load(&env_, kPath);
  BASALT_ASSERT_OK(loaded);
  EXPECT_EQ((*loaded)->hard_state(), (HardState{6, "a", 40}));
  EXPECT_EQ((*loaded)->contents().committed_config, config);
  EXPECT_EQ((*loaded)->contents().committed_config_index, 42u);
}

TEST_F(ConsensusMetadataTest, MissingAndInvalid) {
  EXPECT_TRUE(absl::IsNotFound(ConsensusMetadata::Load(&env_, kPath).status()));
  ConsensusMetadataContents no_voters;
  EXPECT_TRUE(absl::IsInvalidArgument(ConsensusMetadata::Create(&env_, kPath, no_voters).status()));
}

TEST_F(ConsensusMetadataTest, EveryTruncationAndFlipIsDataLoss) {
  ConsensusMetadataContents c = Initial();
  c.hard_state = HardState{9, "c", 77};
  const std::string bytes = EncodeConsensusMetadata(c);
  ASSERT_EQ(*DecodeConsensusMetadata(bytes, "f"), c);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeConsensusMetadata(bytes.substr(0, n), "f").status())) << n;
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[n] ^= static_cast<char>(1 << bit);
      EXPECT_TRUE(absl::IsDataLoss(DecodeConsensusMetadata(bad, "f").status())) << n << "/" << bit;
    }
  }
  EXPECT_TRUE(absl::IsDataLoss(DecodeConsensusMetadata(bytes + "x", "f").status()));
  Random rng(SeedFromEnvOrTime());
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(DecodeConsensusMetadata(rng.Bytes(rng.Uniform(64)), "f").ok());
  }
  BASALT_ASSERT_OK(WriteStringToFile(&env_, kPath, bytes.substr(0, 30), false));
  absl::Status s = ConsensusMetadata::Load(&env_, kPath).status();
  EXPECT_TRUE(absl::IsDataLoss(s));
  EXPECT_NE(s.message().find(kPath), absl::string_view::npos);
}

TEST_F(ConsensusMetadataTest, GoldenEnvelope) {
  ConsensusMetadataContents c;
  c.committed_config.voters = {"a"};
  c.hard_state.term = 1;
  const std::string bytes = EncodeConsensusMetadata(c);
  // magic, version 1, payload length, then the masked crc; payload: term 1 (08 01), voter "a"
  // (22 01 61).
  EXPECT_EQ(bytes.substr(0, 16), std::string("bsltcmet\x01\0\0\0\x05\0\0\0", 16));
  EXPECT_EQ(bytes.substr(20), std::string("\x08\x01\x22\x01\x61", 5));
}

TEST_F(ConsensusMetadataTest, CrashDuringFlushKeepsOldOrNew) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  BASALT_ASSERT_OK(env.CreateDirs("/data"));
  BASALT_ASSERT_OK(env.SyncDir("/"));
  BASALT_ASSERT_OK(ConsensusMetadata::Create(&env, kPath, Initial()));
  for (int k = 0; k < 4; ++k) {
    absl::StatusOr<std::unique_ptr<ConsensusMetadata>> cmeta = ConsensusMetadata::Load(&env, kPath);
    BASALT_ASSERT_OK(cmeta);
    const uint64_t old_term = (*cmeta)->current_term();
    env.SetCrashAtSyncPoint(k);
    (*cmeta)->set_current_term(old_term + 1);
    const bool flushed = (*cmeta)->Flush().ok();
    BASALT_ASSERT_OK(env.DropUnsyncedData());
    absl::StatusOr<std::unique_ptr<ConsensusMetadata>> after = ConsensusMetadata::Load(&env, kPath);
    BASALT_ASSERT_OK(after) << k << ": " << after.status();
    if (flushed) {
      EXPECT_EQ((*after)->current_term(), old_term + 1) << k;
    }
    EXPECT_GE((*after)->current_term(), old_term);
  }
}

}  // namespace consensus_metadata_test_file
}  // namespace
}  // namespace basalt
