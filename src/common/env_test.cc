#include "common/env.h"

#include <stdlib.h>

#include <cerrno>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace env_test_file {

// ---- Path helpers and error mapping (implementation independent) ----

TEST(EnvPathTest, JoinDirAndBaseName) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(JoinPath("/", "b"), "/b");
  EXPECT_EQ(DirName("/a/b"), "/a");
  EXPECT_EQ(DirName("/a"), "/");
  EXPECT_EQ(DirName("/"), "/");
  EXPECT_EQ(DirName("a"), ".");
  EXPECT_EQ(DirName("a/b/"), "a");
  EXPECT_EQ(DirName("a//b"), "a");
  EXPECT_EQ(BaseName("/a/b"), "b");
  EXPECT_EQ(BaseName("a/b/"), "b");
  EXPECT_EQ(BaseName("b"), "b");
  EXPECT_EQ(NormalizePath("/a//b/"), "/a/b");
  EXPECT_EQ(NormalizePath("/"), "/");
  EXPECT_EQ(NormalizePath("///"), "/");
  EXPECT_EQ(NormalizePath("a"), "a");
}

TEST(EnvPathTest, PosixErrorMapping) {
  const absl::Status s = PosixError("open /x/y", ENOENT);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("open /x/y"), std::string::npos) << s;
  EXPECT_NE(s.message().find("No such file"), std::string::npos) << s;
  EXPECT_EQ(PosixError("c", EEXIST).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(PosixError("c", ENOSPC).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(PosixError("c", EDQUOT).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(PosixError("c", EMFILE).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(PosixError("c", ENFILE).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(PosixError("c", ENOMEM).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(PosixError("c", EACCES).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(PosixError("c", ENOTEMPTY).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(PosixError("c", ENOTDIR).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(PosixError("c", EWOULDBLOCK).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(PosixError("c", EIO).code(), absl::StatusCode::kInternal);
}

// ---- One suite, run against every Env implementation ----

enum class EnvKind { kPosix, kMemory, kFaultInjectionOverMemory };

std::string EnvKindName(const testing::TestParamInfo<EnvKind>& info) {
  switch (info.param) {
    case EnvKind::kPosix:
      return "Posix";
    case EnvKind::kMemory:
      return "Memory";
    case EnvKind::kFaultInjectionOverMemory:
      return "FaultInjection";
  }
  return "Unknown";
}

class EnvTest : public testing::TestWithParam<EnvKind> {
 protected:
  void SetUp() override {
    switch (GetParam()) {
      case EnvKind::kPosix: {
        env_ = Env::Default();
        std::string tmpl = JoinPath(testing::TempDir(), "basalt_env_test.XXXXXX");
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr) << "mkdtemp " << tmpl;
        root_ = tmpl;
        break;
      }
      case EnvKind::kMemory:
        memory_env_ = std::make_unique<MemoryEnv>();
        env_ = memory_env_.get();
        break;
      case EnvKind::kFaultInjectionOverMemory:
        memory_env_ = std::make_unique<MemoryEnv>();
        fault_env_ = std::make_unique<FaultInjectionEnv>(memory_env_.get());
        env_ = fault_env_.get();
        break;
    }
    if (root_.empty()) {
      root_ = "/tmp/basalt_env_test";
      BASALT_ASSERT_OK(env_->CreateDirs(root_));
    }
  }

  void TearDown() override {
    if (GetParam() == EnvKind::kPosix && !root_.empty()) {
      BASALT_EXPECT_OK(env_->DeleteDirRecursively(root_));
    }
  }

  std::string Path(std::string_view name) const { return JoinPath(root_, name); }

  void WriteFile(const std::string& path, std::string_view data) {
    BASALT_ASSERT_OK(WriteStringToFile(env_, path, data, /*sync=*/false)) << path;
  }

  std::string ReadFile(const std::string& path) {
    std::string data;
    absl::Status s = ReadFileToString(env_, path, &data);
    BASALT_EXPECT_OK(s);
    return data;
  }

  std::unique_ptr<MemoryEnv> memory_env_;
  std::unique_ptr<FaultInjectionEnv> fault_env_;
  Env* env_ = nullptr;
  std::string root_;
};

TEST_P(EnvTest, WriteThenReadBack) {
  const std::string path = Path("f");
  {
    auto file = env_->NewWritableFile(path);
    BASALT_ASSERT_OK(file);
    EXPECT_EQ((*file)->filename(), path);
    BASALT_ASSERT_OK((*file)->Append("hello "));
    BASALT_ASSERT_OK((*file)->Append(""));
    BASALT_ASSERT_OK((*file)->Append("world"));
    EXPECT_EQ((*file)->Size(), 11u);
    BASALT_ASSERT_OK((*file)->Sync());
    BASALT_ASSERT_OK((*file)->Close());
  }
  EXPECT_TRUE(env_->FileExists(path));
  EXPECT_EQ(*env_->GetFileSize(path), 11u);
  EXPECT_EQ(ReadFile(path), "hello world");

  auto raf = env_->NewRandomAccessFile(path);
  BASALT_ASSERT_OK(raf);
  EXPECT_EQ(*(*raf)->Size(), 11u);
  char scratch[32];
  std::string_view result;
  BASALT_ASSERT_OK((*raf)->ReadAt(6, 5, scratch, &result));
  EXPECT_EQ(result, "world");
  // A read past the end returns the bytes that exist.
  BASALT_ASSERT_OK((*raf)->ReadAt(8, 10, scratch, &result));
  EXPECT_EQ(result, "rld");
  BASALT_ASSERT_OK((*raf)->ReadAt(11, 4, scratch, &result));
  EXPECT_TRUE(result.empty());
  BASALT_ASSERT_OK((*raf)->ReadAt(1000, 4, scratch, &result));
  EXPECT_TRUE(result.empty());

  auto seq = env_->NewSequentialFile(path);
  BASALT_ASSERT_OK(seq);
  BASALT_ASSERT_OK((*seq)->Read(3, scratch, &result));
  EXPECT_EQ(result, "hel");
  BASALT_ASSERT_OK((*seq)->Skip(3));
  BASALT_ASSERT_OK((*seq)->Read(100, scratch, &result));
  EXPECT_EQ(result, "world");
  BASALT_ASSERT_OK((*seq)->Read(100, scratch, &result));
  EXPECT_TRUE(result.empty());
  BASALT_ASSERT_OK((*seq)->Skip(100));
  BASALT_ASSERT_OK((*seq)->Read(1, scratch, &result));
  EXPECT_TRUE(result.empty());
}

TEST_P(EnvTest, NewWritableFileTruncatesAndAppendableAppends) {
  const std::string path = Path("f");
  WriteFile(path, "old contents");
  WriteFile(path, "new");
  EXPECT_EQ(ReadFile(path), "new");
  {
    auto file = env_->NewAppendableFile(path);
    BASALT_ASSERT_OK(file);
    EXPECT_EQ((*file)->Size(), 3u);
    BASALT_ASSERT_OK((*file)->Append("+more"));
    EXPECT_EQ((*file)->Size(), 8u);
    BASALT_ASSERT_OK((*file)->Close());
  }
  EXPECT_EQ(ReadFile(path), "new+more");
  // NewAppendableFile creates a missing file.
  const std::string fresh = Path("fresh");
  {
    auto file = env_->NewAppendableFile(fresh);
    BASALT_ASSERT_OK(file);
    EXPECT_EQ((*file)->Size(), 0u);
    BASALT_ASSERT_OK((*file)->Append("x"));
  }  // Destructor closes (and flushes).
  EXPECT_EQ(ReadFile(fresh), "x");
}

TEST_P(EnvTest, PreallocatedZerosKeepTheSizeAndAppendsOverwriteThem) {
  const std::string path = Path("f");
  auto file = env_->NewWritableFile(path);
  BASALT_ASSERT_OK(file);
  BASALT_ASSERT_OK((*file)->Append("head"));
  BASALT_ASSERT_OK((*file)->PreallocateZeros(100 << 10));
  EXPECT_EQ((*file)->Size(), 4u);
  BASALT_ASSERT_OK((*file)->Append("+tail"));
  BASALT_ASSERT_OK((*file)->PreallocateZeros(8));  // Below what is there: no-op.
  BASALT_ASSERT_OK((*file)->Sync());
  EXPECT_EQ((*file)->Size(), 9u);
  std::string expected = "head+tail";
  // Only the POSIX files are preallocated (the others keep their appended size exactly), until
  // Close() cuts the zeros off.
  if (GetParam() == EnvKind::kPosix) expected.resize(100 << 10, '\0');
  EXPECT_EQ(ReadFile(path), expected);
  BASALT_ASSERT_OK((*file)->Close());
  EXPECT_EQ(ReadFile(path), "head+tail");
}

TEST_P(EnvTest, MissingPathsAreNotFound) {
  const std::string missing = Path("missing");
  EXPECT_FALSE(env_->FileExists(missing));
  auto raf = env_->NewRandomAccessFile(missing);
  EXPECT_EQ(raf.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(raf.status().message().find(missing), std::string::npos) << raf.status();
  EXPECT_EQ(env_->NewSequentialFile(missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->GetFileSize(missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->IsDirectory(missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->DeleteFile(missing).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->RenameFile(missing, Path("x")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->GetChildren(missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->DeleteDir(missing).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->DeleteDirRecursively(missing).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->SyncDir(missing).code(), absl::StatusCode::kNotFound);
  std::string data = "unchanged";
  EXPECT_EQ(ReadFileToString(env_, missing, &data).code(), absl::StatusCode::kNotFound);
  // Creating a file or directory in a missing directory.
  EXPECT_EQ(env_->NewWritableFile(Path("nodir/f")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->NewAppendableFile(Path("nodir/f")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->CreateDir(Path("nodir/d")).code(), absl::StatusCode::kNotFound);
}

TEST_P(EnvTest, Directories) {
  const std::string dir = Path("d");
  BASALT_ASSERT_OK(env_->CreateDir(dir));
  EXPECT_EQ(env_->CreateDir(dir).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(*env_->IsDirectory(dir));
  EXPECT_TRUE(env_->FileExists(dir));
  WriteFile(JoinPath(dir, "b"), "1");
  WriteFile(JoinPath(dir, "a"), "22");
  BASALT_ASSERT_OK(env_->CreateDir(JoinPath(dir, "c")));
  EXPECT_FALSE(*env_->IsDirectory(JoinPath(dir, "a")));
  auto children = env_->GetChildren(dir);
  BASALT_ASSERT_OK(children);
  EXPECT_EQ(*children, (std::vector<std::string>{"a", "b", "c"}));
  // Trailing slashes are ignored.
  EXPECT_EQ(*env_->GetChildren(dir + "/"), *children);
  EXPECT_EQ(env_->GetChildren(JoinPath(dir, "a")).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(env_->GetChildren(JoinPath(dir, "c"))->empty());

  EXPECT_EQ(env_->DeleteDir(dir).code(), absl::StatusCode::kFailedPrecondition);
  BASALT_ASSERT_OK(env_->DeleteDir(JoinPath(dir, "c")));
  BASALT_ASSERT_OK(env_->DeleteFile(JoinPath(dir, "a")));
  EXPECT_EQ(*env_->GetChildren(dir), (std::vector<std::string>{"b"}));
  BASALT_ASSERT_OK(env_->SyncDir(dir));
}

TEST_P(EnvTest, CreateDirsAndDeleteRecursively) {
  const std::string deep = Path("x/y/z");
  BASALT_ASSERT_OK(env_->CreateDirs(deep));
  EXPECT_TRUE(*env_->IsDirectory(deep));
  BASALT_ASSERT_OK(env_->CreateDirs(deep));  // Idempotent.
  BASALT_ASSERT_OK(env_->CreateDirs(Path("x/y/w/")));
  WriteFile(Path("x/y/z/f1"), "1");
  WriteFile(Path("x/f2"), "2");
  // A file in the way.
  EXPECT_EQ(env_->CreateDirs(Path("x/f2")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(env_->CreateDirs(Path("x/f2/sub")).ok());
  BASALT_ASSERT_OK(env_->DeleteDirRecursively(Path("x")));
  EXPECT_FALSE(env_->FileExists(Path("x")));
  EXPECT_TRUE(env_->GetChildren(root_)->empty());
  // DeleteDirRecursively of a plain file deletes it.
  WriteFile(Path("plain"), "p");
  BASALT_ASSERT_OK(env_->DeleteDirRecursively(Path("plain")));
  EXPECT_FALSE(env_->FileExists(Path("plain")));
}

TEST_P(EnvTest, RenameReplacesAtomically) {
  const std::string a = Path("a");
  const std::string b = Path("b");
  WriteFile(a, "new");
  WriteFile(b, "old");
  auto old_reader = env_->NewRandomAccessFile(b);
  BASALT_ASSERT_OK(old_reader);
  BASALT_ASSERT_OK(env_->RenameFile(a, b));
  EXPECT_FALSE(env_->FileExists(a));
  EXPECT_EQ(ReadFile(b), "new");
  // An open reader keeps reading the replaced file.
  char scratch[8];
  std::string_view result;
  BASALT_ASSERT_OK((*old_reader)->ReadAt(0, 8, scratch, &result));
  EXPECT_EQ(result, "old");
  // Rename into a subdirectory, and to a missing directory.
  BASALT_ASSERT_OK(env_->CreateDir(Path("sub")));
  BASALT_ASSERT_OK(env_->RenameFile(b, Path("sub/b")));
  EXPECT_EQ(ReadFile(Path("sub/b")), "new");
  EXPECT_EQ(env_->RenameFile(Path("sub/b"), Path("nodir/b")).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(env_->FileExists(Path("sub/b")));
}

TEST_P(EnvTest, DeletedFileStaysReadableWhileOpen) {
  const std::string path = Path("f");
  WriteFile(path, "still here");
  auto reader = env_->NewRandomAccessFile(path);
  BASALT_ASSERT_OK(reader);
  BASALT_ASSERT_OK(env_->DeleteFile(path));
  EXPECT_FALSE(env_->FileExists(path));
  char scratch[16];
  std::string_view result;
  BASALT_ASSERT_OK((*reader)->ReadAt(0, 16, scratch, &result));
  EXPECT_EQ(result, "still here");
}

TEST_P(EnvTest, LargeRandomAppendsRoundTrip) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rng(seed);
  const std::string path = Path("big");
  std::string expected;
  auto file = env_->NewWritableFile(path);
  BASALT_ASSERT_OK(file);
  auto reader = env_->NewRandomAccessFile(path);
  BASALT_ASSERT_OK(reader);
  while (expected.size() < (1u << 20)) {
    // Mix tiny appends with ones larger than the POSIX write buffer (64 KiB).
    const std::string chunk =
        rng.Bytes(rng.OneIn(20) ? 70000 + rng.Uniform(70000) : rng.Skewed(12));
    BASALT_ASSERT_OK((*file)->Append(chunk));
    expected += chunk;
    ASSERT_EQ((*file)->Size(), expected.size());
    if (rng.OneIn(50)) {
      // After Flush, another reader sees everything appended so far.
      BASALT_ASSERT_OK((*file)->Flush());
      EXPECT_EQ(*(*reader)->Size(), expected.size());
    }
  }
  BASALT_ASSERT_OK((*file)->Sync());
  BASALT_ASSERT_OK((*file)->Close());
  EXPECT_EQ(ReadFile(path), expected);
  std::string scratch(5000, '\0');
  for (int i = 0; i < 100; ++i) {
    const uint64_t offset = rng.Uniform(expected.size());
    const size_t n = rng.Uniform(scratch.size());
    std::string_view result;
    BASALT_ASSERT_OK((*reader)->ReadAt(offset, n, scratch.data(), &result));
    ASSERT_EQ(result, std::string_view(expected).substr(offset, n)) << offset << " " << n;
  }
}

TEST_P(EnvTest, ConcurrentReadsAreSafe) {
  const std::string path = Path("f");
  std::string data;
  for (int i = 0; i < 10000; ++i) data += static_cast<char>('a' + i % 26);
  WriteFile(path, data);
  auto reader = env_->NewRandomAccessFile(path);
  BASALT_ASSERT_OK(reader);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      char scratch[100];
      for (int i = 0; i < 500; ++i) {
        const uint64_t offset = (i * 37 + t * 1000) % 9900;
        std::string_view result;
        if (!(*reader)->ReadAt(offset, 100, scratch, &result).ok() ||
            result != std::string_view(data).substr(offset, 100)) {
          mismatches++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_P(EnvTest, LockFileIsExclusive) {
  const std::string path = Path("LOCK");
  auto lock = env_->LockFile(path);
  BASALT_ASSERT_OK(lock);
  EXPECT_EQ((*lock)->filename(), path);
  EXPECT_TRUE(env_->FileExists(path));
  auto second = env_->LockFile(path);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  BASALT_ASSERT_OK(env_->UnlockFile(*std::move(lock)));
  auto third = env_->LockFile(path);
  BASALT_ASSERT_OK(third);
  third->reset();  // Destruction releases too.
  BASALT_EXPECT_OK(env_->LockFile(path));
  EXPECT_EQ(env_->LockFile(Path("nodir/LOCK")).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(EnvTest, WriteFileAtomicallyCreatesAndReplaces) {
  const std::string path = Path("meta");
  BASALT_ASSERT_OK(WriteFileAtomically(env_, path, "v1"));
  EXPECT_EQ(ReadFile(path), "v1");
  BASALT_ASSERT_OK(WriteFileAtomically(env_, path, std::string(100000, 'z')));
  EXPECT_EQ(ReadFile(path), std::string(100000, 'z'));
  BASALT_ASSERT_OK(WriteFileAtomically(env_, path, ""));
  EXPECT_EQ(ReadFile(path), "");
  // No temporary file is left behind.
  EXPECT_EQ(*env_->GetChildren(root_), (std::vector<std::string>{"meta"}));
  EXPECT_EQ(WriteFileAtomically(env_, Path("nodir/meta"), "x").code(), absl::StatusCode::kNotFound);
}

TEST_P(EnvTest, ReadFileToStringReplacesOutput) {
  const std::string path = Path("f");
  std::string big(200000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  WriteFile(path, big);
  std::string out = "previous junk";
  BASALT_ASSERT_OK(ReadFileToString(env_, path, &out));
  EXPECT_EQ(out, big);
}

TEST_P(EnvTest, OpeningADirectoryAsAFileFails) {
  BASALT_ASSERT_OK(env_->CreateDir(Path("d")));
  EXPECT_FALSE(env_->NewWritableFile(Path("d")).ok());
  EXPECT_EQ(env_->DeleteFile(Path("d")).ok(), false);
  WriteFile(Path("f"), "x");
  EXPECT_EQ(env_->DeleteDir(Path("f")).code(), absl::StatusCode::kFailedPrecondition);
}

INSTANTIATE_TEST_SUITE_P(AllEnvs, EnvTest,
                         testing::Values(EnvKind::kPosix, EnvKind::kMemory,
                                         EnvKind::kFaultInjectionOverMemory),
                         EnvKindName);

}  // namespace env_test_file
}  // namespace
}  // namespace basalt
