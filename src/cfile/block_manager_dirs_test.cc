// BlockManager with several data directories: ids name their directory, groups, reordering,
// and a failing directory (block_manager.h).

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cfile/block_manager.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/env_memory.h"
#include "common/injecting_env.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace block_manager_dirs_test_file {

const std::vector<std::string> kDirs = {"/d0", "/d1", "/d2"};

class BlockManagerDirsTest : public testing::Test {
 protected:
  BlockManagerDirsTest() : env_(&mem_) {}

  std::unique_ptr<BlockManager> OpenOrDie(std::vector<std::string> dirs = kDirs) {
    auto bm = BlockManager::Open(&env_, std::move(dirs));
    CHECK(bm.ok()) << bm.status();
    return *std::move(bm);
  }

  static BlockId Write(BlockManager* bm, std::string_view data) {
    auto block = bm->CreateBlock();
    CHECK(block.ok()) << block.status();
    CHECK((*block)->Append(data).ok());
    CHECK((*block)->Finalize().ok());
    return (*block)->id();
  }

  static std::string Read(const BlockManager* bm, BlockId id) {
    auto block = bm->OpenBlock(id);
    CHECK(block.ok()) << block.status();
    std::string data;
    CHECK((*block)->ReadAt(0, (*block)->size(), &data).ok());
    return data;
  }

  MemoryEnv mem_;
  InjectingEnv env_;
};

TEST_F(BlockManagerDirsTest, TheRootSpreadsBlocksAndAnyManagerReadsThemById) {
  auto bm = OpenOrDie();
  std::set<int> used;
  std::vector<BlockId> ids;
  for (int i = 0; i < 6; ++i) {
    const BlockId id = Write(bm.get(), StrCat("block ", i));
    used.insert(BlockManager::DirOf(id));
    EXPECT_TRUE(bm->BlockPath(id).starts_with(kDirs[BlockManager::DirOf(id)] + "/blocks/"))
        << bm->BlockPath(id);
    EXPECT_TRUE(mem_.FileExists(bm->BlockPath(id)));
    ids.push_back(id);
  }
  EXPECT_EQ(used, (std::set<int>{0, 1, 2}));
  BlockManager* group = bm->ForGroup({2});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Read(group, ids[i]), StrCat("block ", i));
  std::vector<BlockId> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(*group->ListBlocks(), sorted);
  BASALT_EXPECT_OK(group->DeleteBlock(ids[0]));
  EXPECT_FALSE(bm->BlockExists(ids[0]));
}

TEST_F(BlockManagerDirsTest, AGroupCreatesOnlyInItsDirectories) {
  auto bm = OpenOrDie();
  BlockManager* group = bm->ForGroup({2, 0, 2});
  EXPECT_EQ(group->group(), (std::vector<int>{0, 2}));
  EXPECT_EQ(bm->ForGroup({0, 2}), group);
  EXPECT_EQ(bm->ForGroup({0, 1, 2}), bm.get());
  std::set<int> used;
  for (int i = 0; i < 6; ++i) used.insert(BlockManager::DirOf(Write(group, "x")));
  EXPECT_EQ(used, (std::set<int>{0, 2}));
  // Blocks of several directories finalize together.
  auto a = *group->CreateBlock();
  auto b = *group->CreateBlock();
  EXPECT_NE(BlockManager::DirOf(a->id()), BlockManager::DirOf(b->id()));
  BASALT_ASSERT_OK(a->Append("a"));
  BASALT_ASSERT_OK(b->Append("b"));
  WritableBlock* both[] = {a.get(), b.get()};
  BASALT_ASSERT_OK(bm->FinalizeBlocks(both));
  EXPECT_EQ(Read(bm.get(), a->id()), "a");
  EXPECT_EQ(Read(bm.get(), b->id()), "b");
}

TEST_F(BlockManagerDirsTest, IdsStayUniqueAndOldBlocksAreKnownAfterAReopen) {
  auto bm = OpenOrDie();
  std::vector<BlockId> old;
  for (int i = 0; i < 3; ++i) old.push_back(Write(bm.get(), "old"));
  bm.reset();
  bm = OpenOrDie();
  for (BlockId id : old) EXPECT_TRUE(bm->CreatedBeforeOpen(id)) << id.ToString();
  for (int i = 0; i < 3; ++i) {
    const BlockId id = Write(bm.get(), "new");
    EXPECT_FALSE(bm->CreatedBeforeOpen(id)) << id.ToString();
    for (BlockId o : old) EXPECT_NE(id, o);
  }
  // Appending a directory keeps the others' positions.
  bm.reset();
  std::vector<std::string> more = kDirs;
  more.push_back("/d3");
  bm = OpenOrDie(more);
  EXPECT_EQ(Read(bm.get(), old[1]), "old");
  EXPECT_EQ(bm->num_dirs(), 4);
}

TEST_F(BlockManagerDirsTest, AReorderedListIsRefused) {
  auto bm = OpenOrDie();
  for (int i = 0; i < 3; ++i) Write(bm.get(), "x");
  bm.reset();
  auto reordered = BlockManager::Open(&env_, std::vector<std::string>{"/d0", "/d2", "/d1"});
  ASSERT_EQ(reordered.status().code(), absl::StatusCode::kFailedPrecondition) << reordered.status();
  EXPECT_NE(reordered.status().message().find("positions"), std::string_view::npos)
      << reordered.status();
}

TEST_F(BlockManagerDirsTest, BadListsAreInvalidArguments) {
  EXPECT_EQ(BlockManager::Open(&env_, std::vector<std::string>{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BlockManager::Open(&env_, std::vector<std::string>{"/d0", "/d0/"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BlockManager::Open(&env_, std::vector<std::string>{"/d0", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(BlockManagerDirsTest, EioFailsOnlyItsDirectoryOnceAndTellsTheOwner) {
  auto bm = OpenOrDie();
  std::vector<BlockId> in_dir;
  for (int i = 0; i < 3; ++i) in_dir.push_back(Write(bm.get(), StrCat("v", i)));
  std::vector<int> reported;
  bm->SetDirFailureCallback([&](int dir, const std::string& path, const absl::Status& error) {
    EXPECT_EQ(path, kDirs[dir]);
    EXPECT_FALSE(error.ok());
    reported.push_back(dir);
  });
  BlockManager* group1 = bm->ForGroup({1});
  // ENOSPC is no disk failure.
  env_.SetEnospc("/d1/", 1.0);
  EXPECT_EQ(group1->CreateBlock().status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(bm->DirFailed(1));
  env_.SetEnospc("", 0);
  // EIO on a read fails the directory.
  env_.SetEio("/d1/", 1.0);
  BlockId in_d1;
  for (BlockId id : in_dir) {
    if (BlockManager::DirOf(id) == 1) in_d1 = id;
  }
  EXPECT_FALSE(bm->OpenBlock(in_d1).ok());
  EXPECT_TRUE(bm->DirFailed(1));
  EXPECT_FALSE(bm->DirFailed(0));
  EXPECT_FALSE(bm->DirFailed(2));
  EXPECT_EQ(reported, std::vector<int>{1});
  env_.SetEio("", 0);  // Even once the disk answers again, the directory stays failed.
  absl::StatusOr<std::unique_ptr<ReadableBlock>> r = bm->OpenBlock(in_d1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("data directory /d1 failed"), std::string_view::npos)
      << r.status();
  EXPECT_FALSE(group1->CreateBlock().ok());
  EXPECT_FALSE(bm->Dirs()[1].error.ok());
  // The root creates in the other directories only; listing leaves the failed one out.
  for (int i = 0; i < 4; ++i) EXPECT_NE(BlockManager::DirOf(Write(bm.get(), "y")), 1);
  const absl::StatusOr<std::vector<BlockId>> listed = bm->ListBlocks();
  BASALT_ASSERT_OK(listed);
  for (BlockId id : *listed) EXPECT_NE(BlockManager::DirOf(id), 1);
  for (size_t i = 0; i < in_dir.size(); ++i) {
    if (in_dir[i] != in_d1) {
      EXPECT_EQ(Read(bm.get(), in_dir[i]), StrCat("v", i));
    }
  }
  bm->MarkDirFailed(1, absl::InternalError("again"));
  EXPECT_EQ(reported, std::vector<int>{1});
}

TEST_F(BlockManagerDirsTest, AWriteErrorFailsTheDirectoryAndLeavesNoBlock) {
  auto bm = OpenOrDie();
  BlockManager* group2 = bm->ForGroup({2});
  auto block = *group2->CreateBlock();
  const std::string final_path = bm->BlockPath(block->id());
  ASSERT_TRUE(mem_.FileExists(final_path + ".tmp"));
  env_.SetEio("/d2/", 1.0);
  EXPECT_FALSE(block->Append("data").ok());
  EXPECT_TRUE(bm->DirFailed(2));
  env_.SetEio("", 0);
  // The disk answers again, the directory stays failed: nothing more is written there.
  for (int i = 0; i < 2; ++i) {
    auto other = *bm->ForGroup({2, 0})->CreateBlock();
    EXPECT_EQ(BlockManager::DirOf(other->id()), 0);
  }
  BASALT_EXPECT_OK(block->Abort());
  EXPECT_FALSE(mem_.FileExists(final_path + ".tmp"));
  EXPECT_FALSE(mem_.FileExists(final_path));
}

// A block of a directory that fails while it is written is neither appended to nor finalized.
TEST_F(BlockManagerDirsTest, NothingBecomesDurableInADirectoryThatFailedMeanwhile) {
  auto bm = OpenOrDie();
  auto a = *bm->ForGroup({1})->CreateBlock();
  auto b = *bm->ForGroup({1})->CreateBlock();
  BASALT_ASSERT_OK(a->Append("a"));
  BASALT_ASSERT_OK(b->Append("b"));
  bm->MarkDirFailed(1, absl::InternalError("write: Input/output error"));
  EXPECT_FALSE(a->Append("more").ok());
  absl::Status s = b->Finalize();
  EXPECT_NE(s.message().find("data directory /d1 failed"), std::string_view::npos) << s;
  EXPECT_FALSE(mem_.FileExists(bm->BlockPath(b->id())));
}

// Ids stay unique when a directory is replaced by an empty one (a new disk): metadata that named
// blocks of the old disk must never name a new block.
TEST_F(BlockManagerDirsTest, AnEmptiedDirectoryNeverReusesAnId) {
  auto bm = OpenOrDie();
  std::set<BlockId> old;
  for (int i = 0; i < 6; ++i) old.insert(Write(bm->ForGroup({1}), "old"));
  bm.reset();
  BASALT_ASSERT_OK(mem_.DeleteDirRecursively("/d1"));
  bm = OpenOrDie();
  for (int i = 0; i < 6; ++i) {
    const BlockId id = Write(bm->ForGroup({1}), "new");
    EXPECT_FALSE(old.contains(id)) << id.ToString();
  }
}

// Data written with the old id layout (epoch << 40 | counter, a 12-byte EPOCH) stays readable and
// no new id collides with an old one, even one whose block is gone.
TEST_F(BlockManagerDirsTest, OldIdsAndEpochFilesKeepIdsUnique) {
  OpenOrDie({"/d0"}).reset();  // Creates the layout.
  const BlockId old_id((uint64_t{7} << 40) | 300);
  BASALT_ASSERT_OK(WriteStringToFile(
      &mem_,
      StrCat("/d0/blocks/", absl::StrFormat("%02x", old_id.value() & 0xff), "/", old_id.ToString()),
      "old block", true));
  // A version 1 EPOCH naming a later old epoch (9) whose blocks were all deleted.
  char buf[12];
  EncodeFixed64(buf, 9);
  EncodeFixed32(buf + 8, crc32c::Mask(crc32c::Value(buf, 8)));
  BASALT_ASSERT_OK(WriteStringToFile(&mem_, "/d0/blocks/EPOCH", std::string_view(buf, 12), true));
  auto bm = OpenOrDie({"/d0"});
  EXPECT_EQ(BlockManager::DirOf(old_id), 0);
  EXPECT_EQ(Read(bm.get(), old_id), "old block");
  EXPECT_TRUE(bm->CreatedBeforeOpen(old_id));
  // Any id of old epoch 9 is below every new one.
  const BlockId newest_old((uint64_t{9} << 40) | ((uint64_t{1} << 40) - 1));
  EXPECT_GT(Write(bm.get(), "new"), newest_old);
  // The EPOCH file is rewritten in the current version.
  std::string epoch;
  BASALT_ASSERT_OK(ReadFileToString(&mem_, "/d0/blocks/EPOCH", &epoch));
  EXPECT_EQ(epoch.size(), 16u);
}

TEST_F(BlockManagerDirsTest, OpenStartsTheOtherDirectoriesWhenALaterOneFails) {
  OpenOrDie().reset();  // Creates them all.
  env_.SetEio("/d1/", 1.0);
  auto bm = BlockManager::Open(&env_, kDirs);
  BASALT_ASSERT_OK(bm);
  EXPECT_TRUE((*bm)->DirFailed(1));
  EXPECT_FALSE((*bm)->Dirs()[1].error.ok());
  BASALT_EXPECT_OK((*bm)->Dirs()[0].error);
  for (int i = 0; i < 4; ++i) EXPECT_NE(BlockManager::DirOf(Write(bm->get(), "z")), 1);
  bm->reset();
  // The first directory must open.
  env_.SetEio("/d0/", 1.0);
  EXPECT_FALSE(BlockManager::Open(&env_, kDirs).ok());
}

}  // namespace block_manager_dirs_test_file
}  // namespace
}  // namespace basalt
