#include "tserver/block_references.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "tserver/block_test_util.h"

namespace basalt {
namespace {
namespace block_references_test_file {

using block_test::DataDirTest;
using block_test::kTabletsDir;

class BlockReferencesTest : public DataDirTest {};

// A key of one integer column has no key index block: nothing of that kind is listed.
TEST_F(BlockReferencesTest, ARowSetOfAnIntegerKeyListsNoKeyIndex) {
  TabletSuperBlock sb;
  sb.tablet_id = "t1";
  sb.schema = *Schema::Create({ColumnSchema("key", DataType::kInt64)}, 1);
  RowSetMetadata rs;
  rs.column_blocks = {{0, BlockId(0x10)}};
  rs.bloom_block = BlockId(0x11);
  rs.min_key = rs.max_key = std::string(8, '\x80');
  rs.num_rows = 1;
  rs.base_snapshot_before = HybridTime::FromMicros(1);
  sb.rowsets = {rs};
  sb.next_rowset_id = 1;
  BASALT_ASSERT_OK(env()->CreateDirs(TabletDir("t1")));
  SetReplicaState("t1", ReplicaDataState::kReady);
  BASALT_ASSERT_OK(WriteSuperBlock(env(), JoinPath(TabletDir("t1"), kSuperBlockFileName), sb));
  const TabletBlockRefs refs = ReadTabletBlockRefs(env(), kTabletsDir, "t1");
  BASALT_ASSERT_OK(refs.status);
  ASSERT_EQ(refs.rowset_blocks.size(), 2u);
  EXPECT_EQ(refs.rowset_blocks[0].kind, RowSetBlockKind::kColumn);
  EXPECT_EQ(refs.rowset_blocks[1].id, BlockId(0x11));
  EXPECT_EQ(refs.rowset_blocks[1].kind, RowSetBlockKind::kBloom);
}

TEST_F(BlockReferencesTest, ARowSetNamesEachOfItsBlocksWithItsKind) {
  Tablet* t = AddTabletWithEveryKindOfBlock("t1");
  const TabletBlockRefs refs = ReadTabletBlockRefs(env(), kTabletsDir, "t1");
  BASALT_ASSERT_OK(refs.status);
  EXPECT_EQ(refs.state, ReplicaDataState::kReady);
  std::vector<RowSetBlock> expected;
  for (const RowSetMetadata& rs : t->RowSetsForTests()) {
    for (const auto& [col, id] : rs.column_blocks)
      expected.push_back({id, RowSetBlockKind::kColumn});
    expected.push_back({rs.key_index_block, RowSetBlockKind::kKeyIndex});
    expected.push_back({rs.bloom_block, RowSetBlockKind::kBloom});
    for (BlockId id : rs.redo_blocks) expected.push_back({id, RowSetBlockKind::kRedo});
    for (BlockId id : rs.undo_blocks) expected.push_back({id, RowSetBlockKind::kUndo});
  }
  ASSERT_EQ(refs.rowset_blocks.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(refs.rowset_blocks[i].id, expected[i].id) << i;
    EXPECT_EQ(refs.rowset_blocks[i].kind, expected[i].kind) << i;
  }
}

TEST_F(BlockReferencesTest, TombstonesCopiesAndCreationsNameWhatTheirFilesSay) {
  AddTablet("tomb", ReplicaDataState::kTombstoned);
  BASALT_ASSERT_OK(env()->DeleteFile(JoinPath(TabletDir("tomb"), kSuperBlockFileName)));
  AddTablet("copy", ReplicaDataState::kCopying);
  BASALT_ASSERT_OK(env()->DeleteFile(JoinPath(TabletDir("copy"), kSuperBlockFileName)));
  const BlockId copied = WriteUnnamedBlock();
  BASALT_ASSERT_OK(WriteFileAtomically(env(), JoinPath(TabletDir("copy"), kCopyBlocksFileName),
                                       copied.ToString() + "\nnot-a-block\n"));
  BASALT_ASSERT_OK(env()->CreateDirs(TabletDir("creating")));  // Nothing written yet.
  BASALT_ASSERT_OK(WriteStringToFile(env(), JoinPath(kTabletsDir, "stray-file"), "x", false));

  auto all = ReadAllTabletBlockRefs(env(), kTabletsDir);
  BASALT_ASSERT_OK(all);
  ASSERT_EQ(all->size(), 3u);  // Not the stray file.
  for (const TabletBlockRefs& r : *all) {
    BASALT_EXPECT_OK(r.status) << r.tablet_id;
    EXPECT_TRUE(r.rowset_blocks.empty()) << r.tablet_id;
    if (r.tablet_id == "copy") {
      EXPECT_EQ(r.state, ReplicaDataState::kCopying);
      EXPECT_EQ(r.copy_blocks, std::vector<BlockId>{copied});
    } else if (r.tablet_id == "tomb") {
      EXPECT_EQ(r.state, ReplicaDataState::kTombstoned);
    } else {
      EXPECT_EQ(r.tablet_id, "creating");
      EXPECT_FALSE(r.state.has_value());
    }
  }
}

TEST_F(BlockReferencesTest, OrphanedBlocksOfTheSuperBlockAreNamed) {
  Tablet* t = AddTablet("t1");
  Write(t, RowOperationType::kInsert, 0, 50);
  BASALT_ASSERT_OK(t->FlushMemRowSet());
  const std::vector<RowSetBlock> before = RowSetBlocks("t1");
  // A superblock as a compaction writes it, before it deletes its inputs.
  auto sb = ReadSuperBlock(env(), JoinPath(TabletDir("t1"), kSuperBlockFileName));
  BASALT_ASSERT_OK(sb);
  sb->orphaned_blocks.push_back(before.front().id);
  sb->rowsets.clear();
  BASALT_ASSERT_OK(WriteSuperBlock(env(), JoinPath(TabletDir("t1"), kSuperBlockFileName), *sb));
  const TabletBlockRefs refs = ReadTabletBlockRefs(env(), kTabletsDir, "t1");
  BASALT_ASSERT_OK(refs.status);
  EXPECT_TRUE(refs.rowset_blocks.empty());
  EXPECT_EQ(refs.orphaned_blocks, std::vector<BlockId>{before.front().id});
}

// Whenever the blocks of a directory may be unknown, its entry carries an error.
TEST_F(BlockReferencesTest, UnreadableMetadataIsAnError) {
  AddTabletWithEveryKindOfBlock("t1");
  const std::string superblock = JoinPath(TabletDir("t1"), kSuperBlockFileName);
  std::string bytes;
  BASALT_ASSERT_OK(ReadFileToString(env(), superblock, &bytes));

  // A corrupt superblock.
  std::string bad = bytes;
  bad[bad.size() / 2] ^= 1;
  BASALT_ASSERT_OK(WriteStringToFile(env(), superblock, bad, false));
  EXPECT_EQ(ReadTabletBlockRefs(env(), kTabletsDir, "t1").status.code(),
            absl::StatusCode::kDataLoss);
  // A ready replica without a superblock.
  BASALT_ASSERT_OK(env()->DeleteFile(superblock));
  EXPECT_EQ(ReadTabletBlockRefs(env(), kTabletsDir, "t1").status.code(),
            absl::StatusCode::kFailedPrecondition);
  // No superblock and a corrupt replica file.
  BASALT_ASSERT_OK(
      WriteStringToFile(env(), JoinPath(TabletDir("t1"), kReplicaFileName), "garbage", false));
  EXPECT_EQ(ReadTabletBlockRefs(env(), kTabletsDir, "t1").status.code(),
            absl::StatusCode::kDataLoss);
  // An unreadable copy_blocks (a directory in its place).
  BASALT_ASSERT_OK(WriteStringToFile(env(), superblock, bytes, false));
  SetReplicaState("t1", ReplicaDataState::kCopying);
  BASALT_EXPECT_OK(ReadTabletBlockRefs(env(), kTabletsDir, "t1").status);
  const std::string copy_blocks = JoinPath(TabletDir("t1"), kCopyBlocksFileName);
  BASALT_ASSERT_OK(env()->CreateDir(copy_blocks));
  const absl::Status s = ReadTabletBlockRefs(env(), kTabletsDir, "t1").status;
  EXPECT_FALSE(s.ok() || absl::IsNotFound(s)) << s;
  // Any read error of the superblock.
  BASALT_ASSERT_OK(env()->DeleteDir(copy_blocks));
  env_.FailAfter(0, FaultInjectionEnv::OpKind::kRead);
  EXPECT_EQ(ReadTabletBlockRefs(env(), kTabletsDir, "t1").status.code(),
            absl::StatusCode::kInternal);
  env_.ClearFailures();
  // The directory listing.
  EXPECT_EQ(ReadAllTabletBlockRefs(env(), "/no/such/dir").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace block_references_test_file
}  // namespace
}  // namespace basalt
