#include "cfile/block_manager.h"

#include <unistd.h>

#include <ctime>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace block_manager_test_file {

constexpr char kDataDir[] = "/data";

// Returns every file (not directory) under `dir`, recursively, as paths.
std::vector<std::string> AllFiles(Env* env, const std::string& dir) {
  std::vector<std::string> out;
  auto children = env->GetChildren(dir);
  if (!children.ok()) return out;
  for (const std::string& name : *children) {
    const std::string path = JoinPath(dir, name);
    if (*env->IsDirectory(path)) {
      for (std::string& p : AllFiles(env, path)) out.push_back(std::move(p));
    } else {
      out.push_back(path);
    }
  }
  return out;
}

bool HasTempFiles(Env* env) {
  for (const std::string& path : AllFiles(env, kDataDir)) {
    if (path.ends_with(".tmp")) return true;
  }
  return false;
}

std::unique_ptr<BlockManager> OpenOrDie(Env* env) {
  auto bm = BlockManager::Open(env, kDataDir);
  CHECK(bm.ok()) << bm.status();
  return *std::move(bm);
}

// Writes `data` in a few appends and finalizes; returns the id.
BlockId WriteBlock(BlockManager* bm, std::string_view data) {
  auto block = bm->CreateBlock();
  CHECK(block.ok()) << block.status();
  for (size_t pos = 0; pos < data.size(); pos += 1000) {
    CHECK(((*block)->Append(data.substr(pos, 1000))).ok());
  }
  CHECK(((*block)->Finalize()).ok());
  return (*block)->id();
}

std::string ReadBlock(BlockManager* bm, BlockId id) {
  auto block = bm->OpenBlock(id);
  CHECK(block.ok()) << block.status();
  std::string data;
  CHECK(((*block)->ReadAt(0, (*block)->size(), &data)).ok());
  return data;
}

TEST(BlockIdTest, FormatAndParse) {
  const BlockId id(0x0000010000000abcull);
  EXPECT_EQ(id.ToString(), "0000010000000abc");
  EXPECT_EQ(BlockId::FromString("0000010000000abc"), id);
  EXPECT_EQ(BlockId::FromString("ffffffffffffffff")->value(), ~0ull);
  EXPECT_FALSE(BlockId::FromString("0000000000000000").has_value());  // 0 is not a block.
  EXPECT_FALSE(BlockId::FromString("0000010000000ABC").has_value());  // Uppercase.
  EXPECT_FALSE(BlockId::FromString("10000000abc").has_value());
  EXPECT_FALSE(BlockId::FromString("0000010000000abc.tmp").has_value());
  EXPECT_FALSE(BlockId::FromString("000001000000-abc").has_value());
  EXPECT_FALSE(BlockId().valid());
}

TEST(BlockManagerTest, WriteReadListDelete) {
  MemoryEnv env;
  auto bm = OpenOrDie(&env);
  Random rng(SeedFromEnvOrTime());
  const std::string a = rng.Bytes(5000);
  const std::string b = rng.Bytes(1);
  const BlockId id_a = WriteBlock(bm.get(), a);
  const BlockId id_b = WriteBlock(bm.get(), b);
  EXPECT_NE(id_a, id_b);
  EXPECT_EQ(ReadBlock(bm.get(), id_a), a);
  EXPECT_EQ(ReadBlock(bm.get(), id_b), b);
  EXPECT_EQ(*bm->ListBlocks(), (std::vector<BlockId>{id_a, id_b}));
  EXPECT_TRUE(env.FileExists(bm->BlockPath(id_a)));
  EXPECT_EQ(bm->BlockPath(id_a),
            JoinPath(JoinPath("/data/blocks", id_a.ToString().substr(14)), id_a.ToString()));

  auto reader = bm->OpenBlock(id_a);
  BASALT_ASSERT_OK(reader);
  EXPECT_EQ((*reader)->size(), a.size());
  std::string part;
  BASALT_ASSERT_OK((*reader)->ReadAt(4000, 1000, &part));
  EXPECT_EQ(part, a.substr(4000));
  BASALT_ASSERT_OK((*reader)->ReadAt(5000, 0, &part));
  EXPECT_EQ(part, "");

  BASALT_ASSERT_OK(bm->DeleteBlock(id_a));
  EXPECT_FALSE(bm->BlockExists(id_a));
  EXPECT_EQ(bm->OpenBlock(id_a).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bm->DeleteBlock(id_a).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*bm->ListBlocks(), std::vector<BlockId>{id_b});
  // An open reader keeps reading a deleted block.
  BASALT_ASSERT_OK((*reader)->ReadAt(0, 10, &part));
  EXPECT_EQ(part, a.substr(0, 10));
}

TEST(BlockManagerTest, ReadPastEndIsDataLossNamingTheBlock) {
  MemoryEnv env;
  auto bm = OpenOrDie(&env);
  const BlockId id = WriteBlock(bm.get(), "0123456789");
  auto reader = *bm->OpenBlock(id);
  std::string out;
  for (auto [offset, n] : {std::pair<uint64_t, size_t>{5, 6}, {10, 1}, {11, 0}, {~0ull, 2}}) {
    absl::Status s = reader->ReadAt(offset, n, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << offset << " " << n;
    EXPECT_NE(s.message().find(id.ToString()), absl::string_view::npos) << s;
  }
}

TEST(BlockManagerTest, AReadHookSeesEveryReadAndItsErrorFailsTheRead) {
  MemoryEnv env;
  auto bm = OpenOrDie(&env);
  const BlockId id = WriteBlock(bm.get(), "0123456789");
  std::vector<size_t> reads;
  absl::Status fail;
  auto reader = bm->OpenBlock(id, [&](size_t n) {
    reads.push_back(n);
    return fail;
  });
  BASALT_ASSERT_OK(reader);
  std::string out;
  BASALT_ASSERT_OK((*reader)->ReadAt(2, 3, &out));
  EXPECT_EQ(out, "234");
  BASALT_ASSERT_OK((*reader)->ReadAt(0, 10, &out));
  EXPECT_EQ(reads, (std::vector<size_t>{3, 10}));
  fail = absl::CancelledError("stop");
  EXPECT_EQ((*reader)->ReadAt(0, 1, &out).code(), absl::StatusCode::kCancelled);
  // A read past the end is refused before the hook runs.
  EXPECT_EQ((*reader)->ReadAt(5, 6, &out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(reads.size(), 3u);
  EXPECT_EQ(bm->OpenBlock(BlockId(id.value() + 1), [](size_t) { return absl::OkStatus(); })
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

TEST(BlockManagerTest, AbortAndDestructorRemoveTheTempFile) {
  MemoryEnv env;
  auto bm = OpenOrDie(&env);
  {
    auto block = *bm->CreateBlock();
    BASALT_ASSERT_OK(block->Append("abc"));
    EXPECT_EQ(block->bytes_written(), 3u);
    EXPECT_TRUE(HasTempFiles(&env));
    BASALT_ASSERT_OK(block->Abort());
    EXPECT_FALSE(HasTempFiles(&env));
    BASALT_EXPECT_OK(block->Abort());
    EXPECT_EQ(block->Append("x").code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(block->Finalize().code(), absl::StatusCode::kFailedPrecondition);
  }
  {
    auto block = *bm->CreateBlock();
    BASALT_ASSERT_OK(block->Append("abc"));
  }  // Destroyed unfinished.
  EXPECT_FALSE(HasTempFiles(&env));
  EXPECT_TRUE(bm->ListBlocks()->empty());

  auto block = *bm->CreateBlock();
  BASALT_ASSERT_OK(block->Finalize());
  EXPECT_EQ(block->Append("x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(block->Abort().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadBlock(bm.get(), block->id()), "");  // An empty block is valid.
}

TEST(BlockManagerTest, SecondOpenOfTheSameDirectoryIsUnavailable) {
  MemoryEnv env;
  auto bm = OpenOrDie(&env);
  EXPECT_EQ(BlockManager::Open(&env, kDataDir).status().code(), absl::StatusCode::kUnavailable);
  bm.reset();
  BASALT_EXPECT_OK(BlockManager::Open(&env, kDataDir));
}

// OpenBlockReadOnly reads a finalized block next to an open manager (which holds the lock) and
// after it closed, and never creates, writes or deletes a file (unlike Open, which writes EPOCH
// and removes temporary files).
TEST(BlockManagerTest, OpenBlockReadOnlyNeitherLocksNorWrites) {
  MemoryEnv env;
  auto bm = OpenOrDie(&env);
  const BlockId id = WriteBlock(bm.get(), "read me");
  auto read_epoch = [&] {
    std::string epoch;
    CHECK(ReadFileToString(&env, JoinPath(bm->blocks_dir(), "EPOCH"), &epoch).ok());
    return epoch;
  };
  auto check_read = [&] {
    auto block = BlockManager::OpenBlockReadOnly(&env, kDataDir, id);
    BASALT_ASSERT_OK(block);
    EXPECT_EQ((*block)->id(), id);
    std::string data;
    BASALT_ASSERT_OK((*block)->ReadAt(0, (*block)->size(), &data));
    EXPECT_EQ(data, "read me");
    EXPECT_EQ((*block)->ReadAt(5, 10, &data).code(), absl::StatusCode::kDataLoss);
  };
  // While the manager holds the lock.
  std::vector<std::string> files = AllFiles(&env, kDataDir);
  const std::string epoch = read_epoch();
  check_read();
  EXPECT_EQ(AllFiles(&env, kDataDir), files);
  EXPECT_EQ(read_epoch(), epoch);
  EXPECT_EQ(BlockManager::Open(&env, kDataDir).status().code(), absl::StatusCode::kUnavailable);
  // With a block being written: its temporary file (which Open() would delete) stays.
  auto pending = *bm->CreateBlock();
  BASALT_ASSERT_OK(pending->Append("tmp"));
  files = AllFiles(&env, kDataDir);
  check_read();
  EXPECT_EQ(AllFiles(&env, kDataDir), files);
  EXPECT_EQ(read_epoch(), epoch);

  const BlockId missing(id.value() + 100);
  EXPECT_EQ(BlockManager::OpenBlockReadOnly(&env, kDataDir, missing).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(BlockManager::OpenBlockReadOnly(&env, kDataDir, BlockId()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BlockManager::OpenBlockReadOnly(&env, "/nowhere", id).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(env.FileExists("/nowhere"));
}

TEST(BlockManagerTest, OpenRemovesTempFilesAndKeepsUnknownFiles) {
  MemoryEnv env;
  auto bm = OpenOrDie(&env);
  const BlockId kept = WriteBlock(bm.get(), "kept");
  bm.reset();
  // What a crash in the middle of writing leaves behind, plus a stray file.
  const std::string tmp = "/data/blocks/07/0000010000000007.tmp";
  BASALT_ASSERT_OK(WriteStringToFile(&env, tmp, "partial", false));
  BASALT_ASSERT_OK(WriteStringToFile(&env, "/data/blocks/07/README", "x", false));
  bm = OpenOrDie(&env);
  EXPECT_FALSE(env.FileExists(tmp));
  EXPECT_TRUE(env.FileExists("/data/blocks/07/README"));
  EXPECT_EQ(*bm->ListBlocks(), std::vector<BlockId>{kept});
}

TEST(BlockManagerTest, IdsAreNeverReusedAcrossRestartsEvenAfterDeletes) {
  MemoryEnv env;
  std::set<BlockId> seen;
  uint64_t last_epoch = 0;
  for (int round = 0; round < 4; ++round) {
    auto bm = OpenOrDie(&env);
    EXPECT_GT(bm->epoch(), last_epoch);
    last_epoch = bm->epoch();
    for (int i = 0; i < 300; ++i) {  // More than 256: wraps around the subdirectories.
      auto block = *bm->CreateBlock();
      EXPECT_TRUE(seen.insert(block->id()).second) << block->id().ToString();
      if (i % 2 == 0) {
        BASALT_ASSERT_OK(block->Finalize());
        if (round % 2 == 1) {
          BASALT_ASSERT_OK(bm->DeleteBlock(block->id()));  // Delete them all.
        }
      }
    }
  }
}

TEST(BlockManagerTest, EpochSurvivesLossOfTheEpochFile) {
  MemoryEnv env;
  BlockId last;
  {
    auto bm = OpenOrDie(&env);
    last = WriteBlock(bm.get(), "x");
  }
  BASALT_ASSERT_OK(env.DeleteFile("/data/blocks/EPOCH"));
  auto bm = OpenOrDie(&env);
  EXPECT_GT(bm->epoch(), last.value() >> BlockManager::kCounterBits);
  EXPECT_GT((*bm->CreateBlock())->id(), last);
}

TEST(BlockManagerTest, CorruptEpochFileIsDataLoss) {
  MemoryEnv env;
  OpenOrDie(&env).reset();
  std::string epoch;
  BASALT_ASSERT_OK(ReadFileToString(&env, "/data/blocks/EPOCH", &epoch));
  ASSERT_EQ(epoch.size(), 16u);
  for (size_t i = 0; i <= epoch.size(); ++i) {
    std::string bad = epoch;
    if (i < epoch.size()) {
      bad[i] ^= 0x10;
    } else {
      bad.pop_back();  // Truncated.
    }
    BASALT_ASSERT_OK(WriteStringToFile(&env, "/data/blocks/EPOCH", bad, false));
    absl::Status s = BlockManager::Open(&env, kDataDir).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << i << " " << s;
    EXPECT_NE(s.message().find("EPOCH"), absl::string_view::npos) << s;
  }
}

TEST(BlockManagerTest, FinalizeBlocksBatchesDirectorySyncs) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  auto bm = OpenOrDie(&env);
  std::vector<std::unique_ptr<WritableBlock>> blocks;
  std::vector<WritableBlock*> ptrs;
  for (int i = 0; i < 3; ++i) {
    blocks.push_back(*bm->CreateBlock());
    BASALT_ASSERT_OK(blocks.back()->Append(std::string(10 + i, 'a' + i)));
    ptrs.push_back(blocks.back().get());
  }
  const int64_t before = env.num_sync_points();
  BASALT_ASSERT_OK(bm->FinalizeBlocks(ptrs));
  // One sync per file, one per distinct subdirectory (consecutive ids: 3 subdirectories).
  EXPECT_EQ(env.num_sync_points() - before, 6);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ReadBlock(bm.get(), blocks[i]->id()), std::string(10 + i, 'a' + i));
  }
}

TEST(BlockManagerTest, InjectedErrorsLeaveNoBlockBehind) {
  using OpKind = FaultInjectionEnv::OpKind;
  for (OpKind kind : {OpKind::kAppend, OpKind::kSync, OpKind::kRename, OpKind::kSyncDir}) {
    SCOPED_TRACE(OpKindName(kind));
    MemoryEnv mem;
    FaultInjectionEnv env(&mem);
    auto bm = OpenOrDie(&env);
    auto block = *bm->CreateBlock();
    env.FailAfter(0, kind, /*one_shot=*/true);
    absl::Status s = block->Append("data");
    if (s.ok()) s = block->Finalize();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(block->id().ToString()), absl::string_view::npos) << s;
    env.ClearFailures();
    EXPECT_FALSE(bm->BlockExists(block->id()));
    EXPECT_FALSE(HasTempFiles(&env));
    EXPECT_TRUE(bm->ListBlocks()->empty());
    BASALT_EXPECT_OK(block->Abort());
  }
}

// Writes `num_blocks` blocks and finalizes them together, crashing after `crash_at` sync points,
// then recovers and checks that each block is absent or complete, never partial.
void CrashWhileFinalizing(int num_blocks, int64_t crash_at, int64_t* sync_points_used) {
  SCOPED_TRACE(testing::Message() << "blocks=" << num_blocks << " crash_at=" << crash_at);
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  auto bm = OpenOrDie(&env);
  const std::string old_data(3000, 'o');
  const BlockId old_id = WriteBlock(bm.get(), old_data);

  std::vector<std::unique_ptr<WritableBlock>> blocks;
  std::vector<WritableBlock*> ptrs;
  std::vector<std::string> contents;
  const int64_t start = env.num_sync_points();
  env.SetCrashAtSyncPoint(crash_at);
  for (int i = 0; i < num_blocks; ++i) {
    auto block = bm->CreateBlock();
    if (!block.ok()) break;  // Crashed already.
    contents.push_back(std::string(2500 + i, static_cast<char>('a' + i)));
    (void)(*block)->Append(std::string_view(contents.back()).substr(0, 1000));
    (void)(*block)->Append(std::string_view(contents.back()).substr(1000));
    ptrs.push_back(block->get());
    blocks.push_back(*std::move(block));
  }
  const bool finalized = bm->FinalizeBlocks(ptrs).ok();
  *sync_points_used = env.num_sync_points() - start;
  std::vector<BlockId> ids;
  for (WritableBlock* b : ptrs) ids.push_back(b->id());
  blocks.clear();
  bm.reset();
  BASALT_ASSERT_OK(env.DropUnsyncedData());

  bm = OpenOrDie(&env);
  EXPECT_FALSE(HasTempFiles(&env));
  EXPECT_EQ(ReadBlock(bm.get(), old_id), old_data);
  for (size_t i = 0; i < ids.size(); ++i) {
    const BlockId id = ids[i];
    if (finalized) {
      EXPECT_TRUE(bm->BlockExists(id)) << id.ToString();
    }
    if (bm->BlockExists(id)) {
      EXPECT_EQ(ReadBlock(bm.get(), id), contents[i]) << id.ToString();
    }
  }
  // New ids stay unique after the crash.
  for (BlockId id : ids) EXPECT_GT((*bm->CreateBlock())->id(), id);
}

TEST(BlockManagerTest, CrashAtEverySyncPointLeavesNoPartialBlock) {
  for (int num_blocks : {1, 3}) {
    int64_t total = 0;
    CrashWhileFinalizing(num_blocks, /*crash_at=*/1000, &total);  // No crash: counts them.
    ASSERT_EQ(total, 2 * num_blocks);
    for (int64_t k = 0; k <= total; ++k) {
      int64_t unused;
      CrashWhileFinalizing(num_blocks, k, &unused);
    }
  }
}

TEST(BlockManagerTest, CrashDuringOpenOfAFreshDirectoryRecovers) {
  int64_t total = 0;
  {
    MemoryEnv mem;
    FaultInjectionEnv env(&mem);
    OpenOrDie(&env).reset();
    total = env.num_sync_points();
  }
  ASSERT_GT(total, 0);
  for (int64_t k = 0; k <= total; ++k) {
    SCOPED_TRACE(k);
    MemoryEnv mem;
    FaultInjectionEnv env(&mem);
    BASALT_ASSERT_OK(mem.CreateDirs(kDataDir));
    env.SetCrashAtSyncPoint(k);
    (void)BlockManager::Open(&env, kDataDir);
    BASALT_ASSERT_OK(env.DropUnsyncedData());
    auto bm = OpenOrDie(&env);
    const BlockId id = WriteBlock(bm.get(), "after");
    EXPECT_EQ(ReadBlock(bm.get(), id), "after");
  }
}

TEST(BlockManagerTest, UnsyncedDeleteMayBeUndoneButNeverLeavesAPartialBlock) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  auto bm = OpenOrDie(&env);
  const std::string data(4096, 'd');
  const BlockId id = WriteBlock(bm.get(), data);
  BASALT_ASSERT_OK(bm->DeleteBlock(id));
  bm.reset();
  BASALT_ASSERT_OK(env.DropUnsyncedData());
  bm = OpenOrDie(&env);
  ASSERT_EQ(*bm->ListBlocks(), std::vector<BlockId>{id});  // An orphan for GC.
  EXPECT_EQ(ReadBlock(bm.get(), id), data);
}

TEST(BlockManagerTest, WorksOnThePosixEnv) {
  Env* env = Env::Default();
  const std::string dir =
      JoinPath(testing::TempDir(), StrCat("block_manager_test_", getpid(), "_", time(nullptr)));
  {
    auto bm = BlockManager::Open(env, dir);
    BASALT_ASSERT_OK(bm);
    EXPECT_EQ(BlockManager::Open(env, dir).status().code(), absl::StatusCode::kUnavailable);
    const BlockId id = WriteBlock(bm->get(), "posix block");
    EXPECT_EQ(ReadBlock(bm->get(), id), "posix block");
    EXPECT_EQ(*(*bm)->ListBlocks(), std::vector<BlockId>{id});
  }
  BASALT_ASSERT_OK(env->DeleteDirRecursively(dir));
}

}  // namespace block_manager_test_file
}  // namespace
}  // namespace basalt
