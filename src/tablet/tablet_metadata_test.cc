#include "tablet/tablet_metadata.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/status_test_util.h"
#include "common/strings.h"

namespace basalt {
namespace {
namespace tablet_metadata_test_file {

constexpr char kDir[] = "/tablet";
constexpr char kPath[] = "/tablet/superblock";

// (key INT32, name STRING NULL, gone INT64 NULL) with ids 0, 1, 2, then "gone" dropped: rowsets
// written before the drop still list column 2.
Schema TestSchema(DataType key_type = DataType::kInt32) {
  auto s =
      Schema::Create({ColumnSchema("key", key_type), ColumnSchema("name", DataType::kString, true),
                      ColumnSchema("gone", DataType::kInt64, true)},
                     1);
  CHECK(s.ok()) << s.status();
  auto dropped = s->DropColumn("gone");
  CHECK(dropped.ok()) << dropped.status();
  return *dropped;
}

RowSetMetadata TestRowSet(int64_t id, uint64_t first_block, std::string min_key,
                          std::string max_key) {
  RowSetMetadata rs;
  rs.id = id;
  rs.column_blocks = {
      {0, BlockId(first_block)}, {1, BlockId(first_block + 1)}, {2, BlockId(first_block + 2)}};
  rs.key_index_block = BlockId(first_block + 3);
  rs.bloom_block = BlockId(first_block + 4);
  rs.redo_blocks = {BlockId(first_block + 5), BlockId(first_block + 6)};
  rs.undo_blocks = {BlockId(first_block + 7)};
  rs.min_key = std::move(min_key);
  rs.max_key = std::move(max_key);
  rs.num_rows = 1000 + id;
  rs.base_snapshot_before = HybridTime::FromMicros(1'700'000'000'000'000 + id, 7);
  return rs;
}

TabletSuperBlock TestSuperBlock(uint64_t version = 1) {
  TabletSuperBlock sb;
  sb.tablet_id = "tablet-0123";
  sb.schema = TestSchema();
  sb.rowsets.push_back(
      TestRowSet(0, 0x100, std::string("\x80\0\0\x01", 4), std::string("\x80\0\x10\0", 4)));
  sb.rowsets.push_back(TestRowSet(3, 0x200, "", ""));  // Empty keys are valid keys.
  sb.rowsets.push_back(TestRowSet(4, 0x1000000000000, "a", std::string(300, 'z')));
  sb.rowsets[1].redo_blocks.clear();
  sb.rowsets[1].undo_blocks.clear();
  sb.rowsets[2].column_blocks.pop_back();  // Written after the drop.
  sb.next_rowset_id = 5;
  sb.durable_op_index = 12345;
  sb.max_durable_timestamp = HybridTime::FromMicros(1'700'000'000'123'456, 3);
  sb.orphaned_blocks = {BlockId(0x300), BlockId(0xffffffffffffffff)};
  sb.version = version;
  sb.history_gc_mark = HybridTime::FromMicros(1'700'000'000'000'000);
  return sb;
}

class TabletMetadataTest : public ::testing::Test {
 protected:
  void SetUp() override { BASALT_ASSERT_OK(env_.CreateDir(kDir)); }

  MemoryEnv env_;
};

TEST_F(TabletMetadataTest, RoundTrip) {
  const TabletSuperBlock sb = TestSuperBlock();
  BASALT_ASSERT_OK(ValidateSuperBlock(sb)) << ValidateSuperBlock(sb);
  BASALT_ASSERT_OK(WriteSuperBlock(&env_, kPath, sb));
  auto read = ReadSuperBlock(&env_, kPath);
  BASALT_ASSERT_OK(read);
  EXPECT_EQ(*read, sb);
  EXPECT_EQ(read->schema.next_column_id(), 3u);
  EXPECT_EQ(read->rowsets[0].column_blocks.size(), 3u);

  // Overwrite with a newer version; no temporary file is left behind.
  TabletSuperBlock sb2 = TestSuperBlock(2);
  sb2.rowsets.pop_back();
  sb2.durable_op_index = 20000;
  BASALT_ASSERT_OK(WriteSuperBlock(&env_, kPath, sb2));
  read = ReadSuperBlock(&env_, kPath);
  BASALT_ASSERT_OK(read);
  EXPECT_EQ(*read, sb2);
  EXPECT_NE(*read, sb);
  EXPECT_FALSE(env_.FileExists(StrCat(kPath, ".tmp")));
}

// Rowsets of a key of one integer column may have no key index (the column file serves).
TEST_F(TabletMetadataTest, AnIntegerKeyNeedsNoKeyIndex) {
  TabletSuperBlock sb = TestSuperBlock();
  sb.rowsets[0].key_index_block = BlockId();
  BASALT_ASSERT_OK(WriteSuperBlock(&env_, kPath, sb));
  auto read = ReadSuperBlock(&env_, kPath);
  BASALT_ASSERT_OK(read);
  EXPECT_EQ(*read, sb);
  EXPECT_FALSE(read->rowsets[0].key_index_block.valid());
}

TEST_F(TabletMetadataTest, EmptyTablet) {
  TabletSuperBlock sb;
  sb.tablet_id = "t";
  sb.schema = TestSchema();
  BASALT_ASSERT_OK(WriteSuperBlock(&env_, kPath, sb));
  auto read = ReadSuperBlock(&env_, kPath);
  BASALT_ASSERT_OK(read);
  EXPECT_EQ(*read, sb);
  EXPECT_EQ(read->max_durable_timestamp, HybridTime::kMin);
  EXPECT_EQ(read->history_gc_mark, HybridTime::kMin);
}

TEST_F(TabletMetadataTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadSuperBlock(&env_, kPath).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TabletMetadataTest, EnvelopeLayout) {
  const std::string data = EncodeSuperBlock(TestSuperBlock());
  ASSERT_GT(data.size(), 20u);
  EXPECT_EQ(data.substr(0, 8), "bsltsblk");
  EXPECT_EQ(data.substr(8, 4), std::string("\x01\0\0\0", 4));  // Format version 1, LE.
  const uint32_t length = static_cast<uint8_t>(data[12]) | static_cast<uint8_t>(data[13]) << 8 |
                          static_cast<uint8_t>(data[14]) << 16 |
                          static_cast<uint32_t>(static_cast<uint8_t>(data[15])) << 24;
  EXPECT_EQ(length, data.size() - 20);
}

// Each mutation breaks one invariant: Write refuses it (INVALID_ARGUMENT, file untouched) and a
// file holding it with a valid checksum reads as DATA_LOSS.
TEST_F(TabletMetadataTest, InvalidSuperBlocksAreRejected) {
  const std::vector<std::pair<std::string, std::function<void(TabletSuperBlock*)>>> cases = {
      {"empty tablet id", [](TabletSuperBlock* sb) { sb->tablet_id.clear(); }},
      {"empty schema", [](TabletSuperBlock* sb) { sb->schema = Schema(); }},
      {"negative next rowset id", [](TabletSuperBlock* sb) { sb->next_rowset_id = -1; }},
      {"rowset id >= next", [](TabletSuperBlock* sb) { sb->next_rowset_id = 4; }},
      {"negative rowset id", [](TabletSuperBlock* sb) { sb->rowsets[0].id = -2; }},
      {"duplicate rowset id", [](TabletSuperBlock* sb) { sb->rowsets[1].id = 0; }},
      {"negative durable index", [](TabletSuperBlock* sb) { sb->durable_op_index = -1; }},
      {"invalid max timestamp",
       [](TabletSuperBlock* sb) { sb->max_durable_timestamp = HybridTime::kInvalid; }},
      {"invalid history GC mark",
       [](TabletSuperBlock* sb) { sb->history_gc_mark = HybridTime::kInvalid; }},
      {"no rows", [](TabletSuperBlock* sb) { sb->rowsets[2].num_rows = 0; }},
      {"min > max", [](TabletSuperBlock* sb) { sb->rowsets[0].min_key = "\xff"; }},
      {"invalid base snapshot",
       [](TabletSuperBlock* sb) { sb->rowsets[1].base_snapshot_before = HybridTime(); }},
      {"unknown column id",
       [](TabletSuperBlock* sb) { sb->rowsets[0].column_blocks[2].first = 3; }},
      {"column listed twice",
       [](TabletSuperBlock* sb) { sb->rowsets[0].column_blocks[2].first = 1; }},
      {"missing key column",
       [](TabletSuperBlock* sb) {
         sb->rowsets[2].column_blocks.erase(sb->rowsets[2].column_blocks.begin());
       }},
      {"invalid column block",
       [](TabletSuperBlock* sb) { sb->rowsets[0].column_blocks[1].second = BlockId(); }},
      {"no key index for a STRING key",
       [](TabletSuperBlock* sb) {
         sb->schema = TestSchema(DataType::kString);
         sb->rowsets[1].key_index_block = BlockId();
       }},
      {"invalid bloom block", [](TabletSuperBlock* sb) { sb->rowsets[1].bloom_block = BlockId(); }},
      {"invalid redo block",
       [](TabletSuperBlock* sb) { sb->rowsets[0].redo_blocks[1] = BlockId(); }},
      {"invalid undo block",
       [](TabletSuperBlock* sb) { sb->rowsets[0].undo_blocks[0] = BlockId(); }},
      {"invalid orphan", [](TabletSuperBlock* sb) { sb->orphaned_blocks[0] = BlockId(); }},
      {"block twice in a rowset",
       [](TabletSuperBlock* sb) { sb->rowsets[0].bloom_block = sb->rowsets[0].redo_blocks[0]; }},
      {"block in two rowsets",
       [](TabletSuperBlock* sb) { sb->rowsets[1].undo_blocks.push_back(BlockId(0x101)); }},
      {"rowset block also orphaned",
       [](TabletSuperBlock* sb) { sb->orphaned_blocks.push_back(BlockId(0x204)); }},
      {"orphan twice",
       [](TabletSuperBlock* sb) { sb->orphaned_blocks.push_back(sb->orphaned_blocks[0]); }},
  };
  const TabletSuperBlock good = TestSuperBlock();
  BASALT_ASSERT_OK(WriteSuperBlock(&env_, kPath, good));
  for (const auto& [name, mutate] : cases) {
    SCOPED_TRACE(name);
    TabletSuperBlock bad = good;
    mutate(&bad);
    absl::Status s = WriteSuperBlock(&env_, kPath, bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    auto still = ReadSuperBlock(&env_, kPath);
    BASALT_ASSERT_OK(still);
    EXPECT_EQ(*still, good);
    auto decoded = DecodeSuperBlock(EncodeSuperBlock(bad), "bad");
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << decoded.status();
    EXPECT_NE(decoded.status().message().find("superblock bad is corrupt"), std::string::npos)
        << decoded.status();
  }
}

void ExpectDataLoss(std::string_view data, std::string_view what) {
  auto sb = DecodeSuperBlock(data, "f");
  EXPECT_EQ(sb.status().code(), absl::StatusCode::kDataLoss) << what << ": " << sb.status();
}

TEST_F(TabletMetadataTest, EveryFlippedByteIsDataLoss) {
  const std::string good = EncodeSuperBlock(TestSuperBlock());
  BASALT_ASSERT_OK(DecodeSuperBlock(good, "f"));
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      ExpectDataLoss(bad, StrCat("flip byte ", i, " mask ", mask));
    }
  }
}

TEST_F(TabletMetadataTest, TruncatedOrExtendedIsDataLoss) {
  const std::string good = EncodeSuperBlock(TestSuperBlock());
  for (size_t n = 0; n < good.size(); ++n) ExpectDataLoss(good.substr(0, n), StrCat("prefix ", n));
  ExpectDataLoss(good + '\0', "one byte appended");
  ExpectDataLoss(good + good, "doubled");
}

TEST_F(TabletMetadataTest, ZeroedRegionsAreDataLoss) {
  const std::string good = EncodeSuperBlock(TestSuperBlock());
  for (size_t len : {1, 4, 16, 64}) {
    for (size_t start = 0; start < good.size(); start += len) {
      std::string bad = good;
      const size_t end = std::min(good.size(), start + len);
      bool changed = false;
      for (size_t i = start; i < end; ++i) {
        changed |= bad[i] != 0;
        bad[i] = 0;
      }
      if (changed) ExpectDataLoss(bad, StrCat("zero [", start, ", ", end, ")"));
    }
  }
  ExpectDataLoss(std::string(good.size(), '\0'), "all zero");
}

TEST_F(TabletMetadataTest, CorruptFileReadsAsDataLossNamingThePath) {
  std::string data = EncodeSuperBlock(TestSuperBlock());
  data[data.size() / 2] ^= 0x10;
  BASALT_ASSERT_OK(WriteStringToFile(&env_, kPath, data, /*sync=*/false));
  auto sb = ReadSuperBlock(&env_, kPath);
  EXPECT_EQ(sb.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(sb.status().message().find(kPath), std::string::npos) << sb.status();
}

TEST_F(TabletMetadataTest, StaleTemporaryFileIsIgnored) {
  const TabletSuperBlock sb = TestSuperBlock();
  BASALT_ASSERT_OK(WriteSuperBlock(&env_, kPath, sb));
  BASALT_ASSERT_OK(WriteStringToFile(&env_, StrCat(kPath, ".tmp"), "garbage", false));
  auto read = ReadSuperBlock(&env_, kPath);
  BASALT_ASSERT_OK(read);
  EXPECT_EQ(*read, sb);
  BASALT_ASSERT_OK(WriteSuperBlock(&env_, kPath, TestSuperBlock(2)));
  read = ReadSuperBlock(&env_, kPath);
  BASALT_ASSERT_OK(read);
  EXPECT_EQ(read->version, 2u);
}

// Replaces the superblock with the fault-injecting Env crashing after each possible number of
// sync points; after the crash the file holds the old or the new superblock, and the new one
// whenever the write was acknowledged.
class SuperBlockCrashTest : public ::testing::TestWithParam<bool> {
 protected:
  // Sets up a fresh Env with the old superblock durable (if `with_old`).
  void Reset() {
    env_.reset();  // Before the base Env it wraps.
    base_ = std::make_unique<MemoryEnv>();
    env_ = std::make_unique<FaultInjectionEnv>(base_.get());
    BASALT_ASSERT_OK(env_->CreateDir(kDir));
    if (GetParam()) {
      BASALT_ASSERT_OK(WriteSuperBlock(env_.get(), kPath, old_));
    }
    env_->ResetState();
  }

  const TabletSuperBlock old_ = TestSuperBlock(1);
  const TabletSuperBlock new_ = [] {
    TabletSuperBlock sb = TestSuperBlock(2);
    sb.rowsets.erase(sb.rowsets.begin());
    sb.orphaned_blocks.push_back(BlockId(0x100));
    sb.durable_op_index = 99999;
    return sb;
  }();
  std::unique_ptr<MemoryEnv> base_;
  std::unique_ptr<FaultInjectionEnv> env_;
};

TEST_P(SuperBlockCrashTest, CrashAtEverySyncPoint) {
  ASSERT_NO_FATAL_FAILURE(Reset());
  const int64_t before = env_->num_sync_points();
  BASALT_ASSERT_OK(WriteSuperBlock(env_.get(), kPath, new_));
  const int64_t num_sync_points = env_->num_sync_points() - before;
  ASSERT_GE(num_sync_points, 2);  // The file and its directory.
  int saw_old = 0;
  int saw_new = 0;
  for (int64_t k = 0; k <= num_sync_points; ++k) {
    SCOPED_TRACE(StrCat("crash after ", k, " of ", num_sync_points, " sync points"));
    ASSERT_NO_FATAL_FAILURE(Reset());
    env_->SetCrashAtSyncPoint(k);
    const absl::Status write = WriteSuperBlock(env_.get(), kPath, new_);
    BASALT_ASSERT_OK(env_->DropUnsyncedData());
    auto read = ReadSuperBlock(env_.get(), kPath);
    if (write.ok() || k == num_sync_points) {
      BASALT_ASSERT_OK(read);
      EXPECT_EQ(*read, new_);
    }
    if (!read.ok()) {
      ASSERT_FALSE(GetParam()) << read.status();
      EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound) << read.status();
      ++saw_old;
    } else if (*read == old_) {
      ++saw_old;
    } else {
      EXPECT_EQ(*read, new_);
      ++saw_new;
    }
    // The tablet can always write again after the crash.
    BASALT_ASSERT_OK(WriteSuperBlock(env_.get(), kPath, new_));
  }
  EXPECT_GT(saw_old, 0);
  EXPECT_GT(saw_new, 0);
}

TEST_P(SuperBlockCrashTest, FailEveryOperation) {
  using Kind = FaultInjectionEnv::OpKind;
  for (Kind kind :
       {Kind::kCreate, Kind::kAppend, Kind::kSync, Kind::kSyncDir, Kind::kRename, Kind::kRead}) {
    for (int n = 0; n < 3; ++n) {
      SCOPED_TRACE(StrCat(OpKindName(kind), " fails after ", n));
      ASSERT_NO_FATAL_FAILURE(Reset());
      env_->FailAfter(n, kind);
      const absl::Status write = WriteSuperBlock(env_.get(), kPath, new_);
      env_->ClearFailures();
      BASALT_ASSERT_OK(env_->DropUnsyncedData());
      auto read = ReadSuperBlock(env_.get(), kPath);
      if (write.ok()) {
        BASALT_ASSERT_OK(read);
        EXPECT_EQ(*read, new_);
      } else if (read.ok()) {
        EXPECT_TRUE(*read == old_ || *read == new_);
      } else {
        EXPECT_FALSE(GetParam());
        EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound) << read.status();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutOld, SuperBlockCrashTest, ::testing::Bool());

}  // namespace tablet_metadata_test_file
}  // namespace
}  // namespace basalt
