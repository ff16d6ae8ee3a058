#include "tserver/block_gc.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/metrics.h"
#include "common/status_test_util.h"
#include "tserver/block_test_util.h"
#include "tserver/tserver_test_util.h"

namespace basalt {
namespace {
namespace block_gc_test_file {

using block_test::DataDirTest;

class BlockGcTest : public DataDirTest {
 protected:
  BlockGcOptions Options() { return DirOptions<BlockGcOptions>(&metrics_); }
  absl::StatusOr<BlockGcResult> RunGc() { return BlockGc(Options()).RunOnce(); }

  std::vector<BlockId> Listed() { return *bm()->ListBlocks(); }
  bool Exists(BlockId id) { return bm()->BlockExists(id); }
  // Every block the superblocks of the live tablets name.
  std::vector<BlockId> NamedByTablets() {
    std::vector<BlockId> out;
    for (const auto& [id, t] : tablets_) {
      for (const RowSetBlock& b : RowSetBlocks(id)) out.push_back(b.id);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  double Metric(std::string_view name) {
    // The sample line "<name> <value>" (not the # HELP / # TYPE lines).
    const std::string text = "\n" + metrics_.RenderPrometheus();
    const size_t at = text.find("\n" + std::string(name) + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + name.size() + 2));
  }

  MetricRegistry metrics_;
};

// Blocks a crash left behind (finalized, never named) are deleted at the next start; every block
// a superblock names is kept.
TEST_F(BlockGcTest, OrphansOfAnEarlierProcessAreDeletedAndNamedBlocksKept) {
  AddTabletWithEveryKindOfBlock("t1");
  AddTabletWithEveryKindOfBlock("t2", 60);
  const BlockId orphan1 = WriteUnnamedBlock("a crash between finalize and superblock");
  const BlockId orphan2 = WriteUnnamedBlock("another");
  const std::vector<BlockId> named = NamedByTablets();
  Restart();
  auto r = RunGc();
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->deleted_blocks, 2);
  EXPECT_EQ(r->deleted_bytes, int64_t{39 + 7});
  EXPECT_FALSE(Exists(orphan1));
  EXPECT_FALSE(Exists(orphan2));
  EXPECT_EQ(Listed(), named);
  EXPECT_EQ(Metric("basalt_block_gc_deleted_blocks_total"), 2);
  EXPECT_EQ(Metric("basalt_block_gc_deleted_bytes_total"), 46);
  // The tablets still read every row.
  for (const auto& [id, t] : tablets_) EXPECT_GT(t->GetStats().num_rowsets, 0) << id;
  // Nothing left to do.
  r = RunGc();
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->deleted_blocks, 0);
}

// A flush, compaction or copy of this process may hold finalized blocks no superblock names yet:
// blocks of the current epoch are never deleted; after a restart they are.
TEST_F(BlockGcTest, BlocksOfTheCurrentProcessAreNeverDeleted) {
  AddTabletWithEveryKindOfBlock("t1");
  Restart();
  const BlockId in_flight = WriteUnnamedBlock("finalized, superblock not written yet");
  auto writing = bm()->CreateBlock();  // Still being written (a temporary file).
  BASALT_ASSERT_OK(writing);
  BASALT_ASSERT_OK((*writing)->Append("partial"));
  auto r = RunGc();
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->deleted_blocks, 0);
  EXPECT_TRUE(Exists(in_flight));
  BASALT_ASSERT_OK((*writing)->Finalize());
  EXPECT_EQ(RunGc()->deleted_blocks, 0);
  // The process "crashes" before naming them: the next one deletes both.
  writing->reset();
  Restart();
  r = RunGc();
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->deleted_blocks, 2);
  EXPECT_EQ(Listed(), NamedByTablets());
}

// A compaction's superblock lists its inputs as orphans until it deletes them; an unfinished
// copy lists its blocks in copy_blocks: the GC leaves both to their owners.
TEST_F(BlockGcTest, OrphanedBlocksOfASuperBlockAndCopyBlocksAreKept) {
  Tablet* t = AddTablet("t1");
  Write(t, RowOperationType::kInsert, 0, 50);
  BASALT_ASSERT_OK(t->FlushMemRowSet());
  const std::string path = JoinPath(TabletDir("t1"), kSuperBlockFileName);
  auto sb = ReadSuperBlock(env(), path);
  BASALT_ASSERT_OK(sb);
  const std::vector<BlockId> inputs = sb->rowsets[0].AllBlocks();
  sb->orphaned_blocks = inputs;
  sb->rowsets.clear();
  BASALT_ASSERT_OK(WriteSuperBlock(env(), path, *sb));
  AddTablet("copy", ReplicaDataState::kCopying);
  const BlockId copied = WriteUnnamedBlock("copied");
  BASALT_ASSERT_OK(WriteFileAtomically(env(), JoinPath(TabletDir("copy"), kCopyBlocksFileName),
                                       copied.ToString() + "\n"));
  Restart(/*reopen_tablets=*/false);  // Tablet::Open would delete the orphans itself.
  auto r = RunGc();
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->deleted_blocks, 0);
  for (BlockId id : inputs) EXPECT_TRUE(Exists(id)) << id.ToString();
  EXPECT_TRUE(Exists(copied));
}

// When the metadata of one tablet cannot be read, a block it names could look unreferenced:
// nothing at all is deleted, until it can be read again.
TEST_F(BlockGcTest, AnUnreadableSuperBlockDeletesNothing) {
  AddTabletWithEveryKindOfBlock("t1");
  AddTabletWithEveryKindOfBlock("t2", 60);
  const BlockId orphan = WriteUnnamedBlock();
  Restart();
  const std::string path = JoinPath(TabletDir("t2"), kSuperBlockFileName);
  std::string good;
  BASALT_ASSERT_OK(ReadFileToString(env(), path, &good));
  std::string bad = good;
  bad[bad.size() / 2] ^= 1;
  BASALT_ASSERT_OK(WriteStringToFile(env(), path, bad, false));
  const std::vector<BlockId> before = Listed();
  auto r = RunGc();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_NE(r.status().message().find("t2"), std::string::npos) << r.status();
  EXPECT_EQ(Listed(), before);
  EXPECT_EQ(Metric("basalt_block_gc_skipped_runs_total"), 1);
  // A ready replica whose superblock is missing: the same.
  BASALT_ASSERT_OK(env()->DeleteFile(path));
  EXPECT_EQ(RunGc().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Listed(), before);
  // Readable again: the orphan goes, t2's blocks stay.
  BASALT_ASSERT_OK(WriteStringToFile(env(), path, good, false));
  r = RunGc();
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->deleted_blocks, 1);
  EXPECT_FALSE(Exists(orphan));
}

// The blocks of a replica deleted by directory (one that failed to open) are found too.
TEST_F(BlockGcTest, BlocksOfADirectoryDeletedWithoutItsSuperBlockAreDeleted) {
  AddTabletWithEveryKindOfBlock("t1");
  AddTabletWithEveryKindOfBlock("gone", 60);
  const std::vector<BlockId> gone = [&] {
    std::vector<BlockId> ids;
    for (const RowSetBlock& b : RowSetBlocks("gone")) ids.push_back(b.id);
    return ids;
  }();
  tablets_.erase("gone");
  BASALT_ASSERT_OK(env()->DeleteDirRecursively(TabletDir("gone")));
  Restart();
  auto r = RunGc();
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->deleted_blocks, static_cast<int64_t>(gone.size()));
  EXPECT_EQ(Listed(), NamedByTablets());
}

TEST_F(BlockGcTest, TheThreadRunsEveryIntervalAndStopsPromptly) {
  AddTabletWithEveryKindOfBlock("t1");
  const BlockId orphan = WriteUnnamedBlock();
  Restart();
  BlockGcOptions o = Options();
  o.interval = absl::Milliseconds(10);
  BlockGc gc(o);
  gc.Start();
  ASSERT_TRUE(WaitFor([&] { return !Exists(orphan); }, absl::Seconds(30)));
  gc.Shutdown();
  // With a long interval, Shutdown does not wait for it.
  o.interval = absl::Hours(1);
  BlockGc idle(o);
  idle.Start();
  idle.Shutdown();
}

}  // namespace block_gc_test_file
}  // namespace
}  // namespace basalt
