#include "tserver/replica_file.h"

#include <string>

#include <gtest/gtest.h>

#include "common/key_encoder.h"
#include "common/status_test_util.h"
#include "tserver/tserver_test_util.h"

namespace basalt {
namespace {
namespace replica_file_test_file {

TabletReplicaMeta TestMeta(const Schema& schema) {
  TabletReplicaMeta m;
  m.tablet_id = "tablet-7";
  m.table_id = "table-id";
  m.table_name = "t";
  m.partition_schema = *PartitionSchema::Create(schema, {{{"key"}, 4, 17}}, {"key"});
  m.partition = Partition({2}, std::string("\0\0\0\2", 4), std::string("\0\0\0\3", 4));
  return m;
}

TEST(ReplicaFileTest, RoundTrip) {
  const Schema schema = TestSchema();
  const TabletReplicaMeta m = TestMeta(schema);
  const std::string bytes = EncodeReplicaFile(m);
  EXPECT_EQ(bytes.substr(0, 8), "BSLTREP1");
  absl::StatusOr<TabletReplicaMeta> d = DecodeReplicaFile(bytes, "f", schema);
  BASALT_ASSERT_OK(d);
  EXPECT_EQ(d->tablet_id, m.tablet_id);
  EXPECT_EQ(d->table_id, m.table_id);
  EXPECT_EQ(d->table_name, m.table_name);
  EXPECT_EQ(d->partition, m.partition);
  EXPECT_EQ(d->partition_schema.hash_levels(), m.partition_schema.hash_levels());
  EXPECT_EQ(d->partition_schema.range_column_indexes(), m.partition_schema.range_column_indexes());
}

// A tombstone records the op it votes with; any other state change clears it.
TEST(ReplicaFileTest, TombstoneLastLoggedRoundTrip) {
  const Schema schema = TestSchema();
  const std::string ready = EncodeReplicaFile(TestMeta(schema));
  absl::StatusOr<ReplicaFileHeader> h = PeekReplicaFile(ready, "f");
  BASALT_ASSERT_OK(h);
  EXPECT_FALSE(h->tombstone_last_logged.has_value());
  absl::StatusOr<std::string> tomb =
      ChangeReplicaFileState(ready, "f", ReplicaDataState::kTombstoned, OpId{7, 1234});
  BASALT_ASSERT_OK(tomb);
  h = PeekReplicaFile(*tomb, "f");
  BASALT_ASSERT_OK(h);
  EXPECT_EQ(h->state, ReplicaDataState::kTombstoned);
  ASSERT_TRUE(h->tombstone_last_logged.has_value());
  EXPECT_EQ(*h->tombstone_last_logged, (OpId{7, 1234}));
  absl::StatusOr<std::string> back = ChangeReplicaFileState(*tomb, "f", ReplicaDataState::kReady);
  BASALT_ASSERT_OK(back);
  EXPECT_FALSE(PeekReplicaFile(*back, "f")->tombstone_last_logged.has_value());
}

// Every flipped bit and every truncation is a clean DATA_LOSS naming the file.
TEST(ReplicaFileTest, CorruptionIsDataLoss) {
  const Schema schema = TestSchema();
  const std::string bytes = EncodeReplicaFile(TestMeta(schema));
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      absl::StatusOr<TabletReplicaMeta> d = DecodeReplicaFile(bad, "replica-file", schema);
      ASSERT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << "byte " << i << " bit " << bit;
      EXPECT_NE(std::string(d.status().message()).find("replica-file"), std::string::npos);
    }
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeReplicaFile(bytes.substr(0, n), "f", schema).status().code(),
              absl::StatusCode::kDataLoss)
        << n;
  }
  EXPECT_EQ(DecodeReplicaFile(bytes + "x", "f", schema).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace replica_file_test_file
}  // namespace
}  // namespace basalt
