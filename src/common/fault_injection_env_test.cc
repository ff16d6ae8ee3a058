#include "common/fault_injection_env.h"

#include <stdlib.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/env.h"
#include "common/env_memory.h"
#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace fault_injection_env_test_file {

using OpKind = FaultInjectionEnv::OpKind;

enum class BaseKind { kMemory, kPosix };

// Every test runs over a MemoryEnv and over the POSIX Env (in a temporary directory): the POSIX
// WritableFile buffers appends, which must not resurrect dropped data.
class FaultInjectionEnvTest : public testing::TestWithParam<BaseKind> {
 protected:
  void SetUp() override {
    if (GetParam() == BaseKind::kPosix) {
      base_ = Env::Default();
      std::string tmpl = JoinPath(testing::TempDir(), "basalt_fault_env_test.XXXXXX");
      ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
      root_ = tmpl;
    } else {
      memory_env_ = std::make_unique<MemoryEnv>();
      base_ = memory_env_.get();
      root_ = "/data";
      BASALT_ASSERT_OK(base_->CreateDirs(root_));
    }
    env_ = std::make_unique<FaultInjectionEnv>(base_);
  }

  void TearDown() override {
    env_.reset();
    if (GetParam() == BaseKind::kPosix) {
      BASALT_EXPECT_OK(base_->DeleteDirRecursively(root_));
    }
  }

  std::string Path(std::string_view name) const { return JoinPath(root_, name); }

  // Reads `path` through the base Env; "<missing>" if it does not exist.
  std::string Contents(const std::string& path) {
    std::string data;
    absl::Status s = ReadFileToString(base_, path, &data);
    if (absl::IsNotFound(s)) return "<missing>";
    BASALT_EXPECT_OK(s);
    return data;
  }

  // Writes a file durably (synced data, synced directory).
  void WriteDurably(const std::string& path, std::string_view data) {
    BASALT_ASSERT_OK(WriteStringToFile(env_.get(), path, data, /*sync=*/true));
    BASALT_ASSERT_OK(env_->SyncDir(DirName(path)));
  }

  std::unique_ptr<MemoryEnv> memory_env_;
  Env* base_ = nullptr;
  std::unique_ptr<FaultInjectionEnv> env_;
  std::string root_;
};

TEST_P(FaultInjectionEnvTest, UnsyncedDataIsDroppedSyncedDataKept) {
  const std::string path = Path("wal");
  auto file = env_->NewWritableFile(path);
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK((*file)->Append("synced;"));
  BASALT_ASSERT_OK((*file)->Sync());
  BASALT_ASSERT_OK((*file)->Append("lost"));
  BASALT_ASSERT_OK((*file)->Flush());
  EXPECT_EQ(Contents(path), "synced;lost");
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(path), "synced;");
  // The handle is dead after the crash; using it fails cleanly and destroying it does not write.
  EXPECT_FALSE((*file)->Append("more").ok());
  EXPECT_FALSE((*file)->Sync().ok());
  file->reset();
  EXPECT_EQ(Contents(path), "synced;");
}

TEST_P(FaultInjectionEnvTest, BufferedUnflushedDataIsNotResurrected) {
  const std::string path = Path("f");
  auto file = env_->NewWritableFile(path);
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK((*file)->Append("abc"));
  BASALT_ASSERT_OK((*file)->Sync());
  BASALT_ASSERT_OK((*file)->Append("buffered"));  // Not flushed: may sit in a user buffer.
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  file->reset();
  EXPECT_EQ(Contents(path), "abc");
}

TEST_P(FaultInjectionEnvTest, FileWithoutAnySyncBecomesEmpty) {
  const std::string path = Path("f");
  BASALT_ASSERT_OK(WriteStringToFile(env_.get(), path, "never synced", /*sync=*/false));
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(path), "");
}

TEST_P(FaultInjectionEnvTest, CreateWithoutDirSyncVanishes) {
  const std::string kept = Path("kept");
  const std::string lost = Path("lost");
  WriteDurably(kept, "k");
  BASALT_ASSERT_OK(WriteStringToFile(env_.get(), lost, "l", /*sync=*/true));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(kept), "k");
  EXPECT_EQ(Contents(lost), "<missing>");
}

TEST_P(FaultInjectionEnvTest, DirSyncOfAnotherDirectoryDoesNotHelp) {
  BASALT_ASSERT_OK(env_->CreateDir(Path("a")));
  BASALT_ASSERT_OK(env_->CreateDir(Path("b")));
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK(WriteStringToFile(env_.get(), Path("a/f"), "x", /*sync=*/true));
  BASALT_ASSERT_OK(env_->SyncDir(Path("b")));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(Path("a/f")), "<missing>");
  EXPECT_TRUE(base_->FileExists(Path("a")));
}

TEST_P(FaultInjectionEnvTest, UnsyncedDirectoryVanishesWithItsContents) {
  BASALT_ASSERT_OK(env_->CreateDirs(Path("x/y")));
  WriteDurably(Path("x/y/f"), "data");  // Syncs x/y but never root_ or x.
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_FALSE(base_->FileExists(Path("x")));
  // With the whole chain synced, everything survives.
  BASALT_ASSERT_OK(env_->CreateDirs(Path("x/y")));
  WriteDurably(Path("x/y/f"), "data");
  BASALT_ASSERT_OK(env_->SyncDir(Path("x")));
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(Path("x/y/f")), "data");
}

TEST_P(FaultInjectionEnvTest, RenameWithoutDirSyncIsReverted) {
  const std::string target = Path("CURRENT");
  const std::string tmp = Path("CURRENT.tmp");
  WriteDurably(target, "old");
  WriteDurably(tmp, "new");
  BASALT_ASSERT_OK(env_->RenameFile(tmp, target));
  EXPECT_EQ(Contents(target), "new");
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(target), "old");
  EXPECT_EQ(Contents(tmp), "new");
  // Synced, the rename sticks.
  BASALT_ASSERT_OK(env_->RenameFile(tmp, target));
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(target), "new");
  EXPECT_EQ(Contents(tmp), "<missing>");
}

TEST_P(FaultInjectionEnvTest, RenamedFileKeepsItsSyncedSize) {
  const std::string a = Path("a");
  auto file = env_->NewWritableFile(a);
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK((*file)->Append("durable"));
  BASALT_ASSERT_OK((*file)->Sync());
  BASALT_ASSERT_OK(env_->RenameFile(a, Path("b")));
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  // The writer follows the file across the rename, as on POSIX.
  BASALT_ASSERT_OK((*file)->Append("+volatile"));
  BASALT_ASSERT_OK((*file)->Flush());
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(Path("b")), "durable");
  EXPECT_EQ(Contents(a), "<missing>");
}

TEST_P(FaultInjectionEnvTest, DeleteWithoutDirSyncIsReverted) {
  const std::string path = Path("f");
  auto file = env_->NewWritableFile(path);
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK((*file)->Append("durable"));
  BASALT_ASSERT_OK((*file)->Sync());
  BASALT_ASSERT_OK((*file)->Append("+not"));
  BASALT_ASSERT_OK((*file)->Close());
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK(env_->DeleteFile(path));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(path), "durable");
  BASALT_ASSERT_OK(env_->DeleteFile(path));
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(path), "<missing>");
  file->reset();
}

TEST_P(FaultInjectionEnvTest, AppendableFileTreatsExistingDataAsDurable) {
  const std::string path = Path("log");
  BASALT_ASSERT_OK(WriteStringToFile(base_, path, "preexisting;", /*sync=*/false));
  auto file = env_->NewAppendableFile(path);
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK((*file)->Append("tail"));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(path), "preexisting;");
}

// Runs WriteFileAtomically with a crash after each possible number of sync points and checks
// that the file always holds the old or the new contents afterwards.
TEST_P(FaultInjectionEnvTest, WriteFileAtomicallySurvivesCrashAtEverySyncPoint) {
  const std::string path = Path("superblock");
  for (const bool existed : {false, true}) {
    SCOPED_TRACE(existed ? "replacing" : "creating");
    const std::string old_contents = existed ? "old superblock" : "<missing>";
    const std::string new_contents(5000, 'N');
    // Count the sync points of one undisturbed run.
    if (existed) WriteDurably(path, old_contents);
    int64_t before = env_->num_sync_points();
    BASALT_ASSERT_OK(WriteFileAtomically(env_.get(), path, new_contents));
    const int64_t sync_points = env_->num_sync_points() - before;
    ASSERT_GE(sync_points, 2);  // File sync and directory sync.
    bool saw_old = false, saw_new = false;
    for (int64_t k = 0; k <= sync_points; ++k) {
      SCOPED_TRACE(testing::Message() << "crash after sync point " << k);
      if (existed) {
        WriteDurably(path, old_contents);
      } else if (base_->FileExists(path)) {
        BASALT_ASSERT_OK(env_->DeleteFile(path));
        BASALT_ASSERT_OK(env_->SyncDir(root_));
      }
      env_->SetCrashAtSyncPoint(k);
      const absl::Status s = WriteFileAtomically(env_.get(), path, new_contents);
      EXPECT_EQ(s.ok(), k == sync_points) << s;
      BASALT_ASSERT_OK(env_->DropUnsyncedData());
      const std::string after = Contents(path);
      EXPECT_TRUE(after == old_contents || after == new_contents) << after.substr(0, 40);
      saw_old |= after == old_contents;
      saw_new |= after == new_contents;
      if (k == sync_points) {
        EXPECT_EQ(after, new_contents);
      }
    }
    EXPECT_TRUE(saw_old);
    EXPECT_TRUE(saw_new);
  }
}

// Same property with a failure injected at every single operation instead of a crash.
TEST_P(FaultInjectionEnvTest, WriteFileAtomicallySurvivesFailureOfEveryOperation) {
  const std::string path = Path("superblock");
  for (int n = 0;; ++n) {
    SCOPED_TRACE(testing::Message() << "failing operation " << n);
    WriteDurably(path, "old");
    env_->FailAfter(n, OpKind::kAny, /*one_shot=*/true);
    const int64_t failures_before = env_->num_injected_failures();
    const absl::Status s = WriteFileAtomically(env_.get(), path, "new");
    const bool injected = env_->num_injected_failures() > failures_before;
    env_->ClearFailures();
    if (injected) {
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.message().find("injected"), std::string::npos) << s;
    }
    BASALT_ASSERT_OK(env_->DropUnsyncedData());
    const std::string after = Contents(path);
    EXPECT_TRUE(after == "old" || after == "new") << after;
    if (!injected) {
      BASALT_EXPECT_OK(s);
      EXPECT_EQ(after, "new");
      break;
    }
    ASSERT_LT(n, 100) << "operation count does not converge";
  }
}

TEST_P(FaultInjectionEnvTest, FailAfterCountsOperationsOfOneKind) {
  auto file = env_->NewWritableFile(Path("f"));
  BASALT_ASSERT_OK(file);
  env_->FailAfter(2, OpKind::kAppend);
  BASALT_EXPECT_OK((*file)->Append("a"));
  BASALT_EXPECT_OK((*file)->Sync());  // Other kinds are not counted and do not fail.
  BASALT_EXPECT_OK((*file)->Append("b"));
  const absl::Status s = (*file)->Append("c");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("injected"), std::string::npos) << s;
  EXPECT_FALSE((*file)->Append("d").ok());  // Persistent.
  EXPECT_EQ(env_->num_injected_failures(), 2);
  BASALT_EXPECT_OK((*file)->Sync());
  env_->ClearFailures();
  BASALT_EXPECT_OK((*file)->Append("e"));
  BASALT_ASSERT_OK((*file)->Close());
  EXPECT_EQ(Contents(Path("f")), "abe");  // Failed appends had no effect.
}

TEST_P(FaultInjectionEnvTest, OneShotFailureAndEachKind) {
  env_->FailAfter(0, OpKind::kCreate, /*one_shot=*/true);
  EXPECT_FALSE(env_->NewWritableFile(Path("f")).ok());
  EXPECT_FALSE(base_->FileExists(Path("f")));
  auto file = env_->NewWritableFile(Path("f"));
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK((*file)->Append("x"));
  BASALT_ASSERT_OK((*file)->Close());

  env_->FailAfter(0, OpKind::kSync, true);
  auto f2 = env_->NewAppendableFile(Path("f"));
  BASALT_ASSERT_OK(f2);
  EXPECT_FALSE((*f2)->Sync().ok());
  BASALT_EXPECT_OK((*f2)->Sync());
  f2->reset();

  env_->FailAfter(0, OpKind::kRename, true);
  EXPECT_FALSE(env_->RenameFile(Path("f"), Path("g")).ok());
  EXPECT_TRUE(base_->FileExists(Path("f")));

  env_->FailAfter(0, OpKind::kDelete, true);
  EXPECT_FALSE(env_->DeleteFile(Path("f")).ok());
  EXPECT_TRUE(base_->FileExists(Path("f")));

  env_->FailAfter(0, OpKind::kSyncDir, true);
  EXPECT_FALSE(env_->SyncDir(root_).ok());
  BASALT_EXPECT_OK(env_->SyncDir(root_));

  env_->FailAfter(1, OpKind::kRead, true);
  auto reader = env_->NewRandomAccessFile(Path("f"));
  BASALT_ASSERT_OK(reader);
  char scratch[4];
  std::string_view result = "junk";
  EXPECT_FALSE((*reader)->ReadAt(0, 1, scratch, &result).ok());
  EXPECT_TRUE(result.empty());
  BASALT_ASSERT_OK((*reader)->ReadAt(0, 1, scratch, &result));
  EXPECT_EQ(result, "x");
  EXPECT_EQ(env_->num_injected_failures(), 6);
}

TEST_P(FaultInjectionEnvTest, CrashStateFailsMutationsButNotReads) {
  WriteDurably(Path("f"), "data");
  env_->SetCrashAtSyncPoint(1);
  EXPECT_FALSE(env_->crashed());
  auto file = env_->NewWritableFile(Path("g"));
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK((*file)->Append("g"));
  BASALT_ASSERT_OK((*file)->Sync());  // Sync point 1: the crash happens right after it.
  EXPECT_TRUE(env_->crashed());
  EXPECT_FALSE((*file)->Append("h").ok());
  EXPECT_FALSE((*file)->Sync().ok());
  EXPECT_FALSE(env_->SyncDir(root_).ok());
  EXPECT_FALSE(env_->CreateDir(Path("d")).ok());
  EXPECT_FALSE(env_->DeleteFile(Path("f")).ok());
  EXPECT_FALSE(env_->RenameFile(Path("f"), Path("h")).ok());
  std::string data;
  BASALT_EXPECT_OK(ReadFileToString(env_.get(), Path("f"), &data));
  EXPECT_EQ(data, "data");
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_FALSE(env_->crashed());
  EXPECT_EQ(Contents(Path("g")), "<missing>");  // Its directory was never synced.
  file->reset();
  BASALT_EXPECT_OK(env_->NewWritableFile(Path("g")));
}

TEST_P(FaultInjectionEnvTest, SyncPointsCountFileAndDirectorySyncs) {
  EXPECT_EQ(env_->num_sync_points(), 0);
  auto file = env_->NewWritableFile(Path("f"));
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK((*file)->Append("x"));
  BASALT_ASSERT_OK((*file)->Flush());
  BASALT_ASSERT_OK((*file)->Close());
  EXPECT_EQ(env_->num_sync_points(), 0);
  file = env_->NewAppendableFile(Path("f"));
  BASALT_ASSERT_OK((*file)->Sync());
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  EXPECT_EQ(env_->num_sync_points(), 2);
  env_->FailAfter(0, OpKind::kSync, true);
  EXPECT_FALSE((*file)->Sync().ok());
  EXPECT_EQ(env_->num_sync_points(), 2);  // A failed sync is not a sync point.
}

TEST_P(FaultInjectionEnvTest, ResetStateMakesEverythingDurable) {
  auto file = env_->NewWritableFile(Path("f"));
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK((*file)->Append("all of it"));
  BASALT_ASSERT_OK((*file)->Close());
  env_->ResetState();
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  EXPECT_EQ(Contents(Path("f")), "all of it");
}

TEST_P(FaultInjectionEnvTest, RandomFailuresNeverCrash) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rng(seed);
  env_->FailRandomly(0.2, seed);
  int ok = 0, failed = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string path = Path(std::to_string(rng.Uniform(5)));
    absl::Status s;
    switch (rng.Uniform(5)) {
      case 0:
        s = WriteStringToFile(env_.get(), path, rng.Bytes(rng.Uniform(100)), rng.OneIn(2));
        break;
      case 1:
        s = WriteFileAtomically(env_.get(), path, rng.Bytes(rng.Uniform(100)));
        break;
      case 2:
        s = env_->RenameFile(path, Path(std::to_string(rng.Uniform(5))));
        break;
      case 3:
        s = env_->DeleteFile(path);
        break;
      case 4: {
        std::string data;
        s = ReadFileToString(env_.get(), path, &data);
        break;
      }
    }
    (s.ok() ? ok : failed)++;
    if (rng.OneIn(30)) {
      BASALT_ASSERT_OK(env_->DropUnsyncedData());
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
  EXPECT_GT(env_->num_injected_failures(), 0);
}

TEST_P(FaultInjectionEnvTest, ConcurrentWritersAndSyncs) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto file = env_->NewWritableFile(Path(std::to_string(t)));
      BASALT_ASSERT_OK(file);
      for (int i = 0; i < 200; ++i) {
        BASALT_ASSERT_OK((*file)->Append("0123456789"));
        if (i % 10 == 9) {
          BASALT_ASSERT_OK((*file)->Sync());
        }
      }
      BASALT_ASSERT_OK((*file)->Append("tail"));
      BASALT_ASSERT_OK((*file)->Close());
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(env_->num_sync_points(), kThreads * 20);
  BASALT_ASSERT_OK(env_->SyncDir(root_));
  BASALT_ASSERT_OK(env_->DropUnsyncedData());
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(Contents(Path(std::to_string(t))).size(), 2000u);
  }
}

INSTANTIATE_TEST_SUITE_P(Bases, FaultInjectionEnvTest,
                         testing::Values(BaseKind::kMemory, BaseKind::kPosix),
                         [](const testing::TestParamInfo<BaseKind>& info) {
                           return info.param == BaseKind::kMemory ? "Memory" : "Posix";
                         });

}  // namespace fault_injection_env_test_file
}  // namespace
}  // namespace basalt
