#include "consensus/log.h"

#include <stdlib.h>

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "consensus/log_segment.h"
#include "consensus/log_test_util.h"

namespace basalt {
namespace {
namespace log_test_file {

constexpr char kDir[] = "/wal";

LogEntry MakeEntry(uint64_t index, uint64_t term, size_t size = 40) {
  return MakeTestEntry(index, term, size);
}

std::vector<LogEntry> MakeEntries(uint64_t first, size_t n, uint64_t term, size_t size = 40) {
  return MakeTestEntries(first, n, term, size);
}

LogOptions SmallSegments(uint64_t bytes = 1024) {
  LogOptions o;
  o.segment_size_bytes = bytes;
  o.force_fsync = true;
  o.log_id = "tablet-1";
  return o;
}

std::unique_ptr<Log> OpenLog(Env* env, const LogOptions& options, bool start = true) {
  absl::StatusOr<std::unique_ptr<Log>> log = Log::Open(env, kDir, options);
  BASALT_EXPECT_OK(log);
  if (!log.ok()) return nullptr;
  if (start) {
    BASALT_EXPECT_OK((*log)->Start());
  }
  return *std::move(log);
}

// Checks that every entry [lo, hi] reads back, through Entries and Term, as MakeEntry with the
// term `term_of(index)` gives.
void ExpectEntries(const Log& log, uint64_t lo, uint64_t hi,
                   const std::function<uint64_t(uint64_t)>& term_of) {
  uint64_t next = lo;
  while (next <= hi) {
    absl::StatusOr<std::vector<LogEntry>> got = log.Entries(next, hi + 1, 16 << 10);
    BASALT_ASSERT_OK(got);
    ASSERT_FALSE(got->empty());
    for (const LogEntry& e : *got) {
      ASSERT_EQ(e.index, next);
      const LogEntry want = MakeEntry(next, term_of(next), e.data.size());
      ASSERT_EQ(e.term, want.term) << next;
      ASSERT_EQ(e.data, want.data) << next;
      ASSERT_EQ(e.type, want.type) << next;
      ASSERT_EQ(e.timestamp, want.timestamp) << next;
      ASSERT_EQ(*log.Term(next), want.term);
      ++next;
    }
  }
}

void ExpectEntries(const Log& log, uint64_t lo, uint64_t hi, uint64_t term) {
  ExpectEntries(log, lo, hi, [term](uint64_t) { return term; });
}

// Returns the contents of every file in `dir` of `env`.
std::map<std::string, std::string> Snapshot(Env* env) { return FilesIn(env, kDir); }

std::unique_ptr<MemoryEnv> EnvWith(const std::map<std::string, std::string>& files) {
  return EnvWithFiles(kDir, files);
}

TEST(LogTest, FreshLogIsEmpty) {
  MemoryEnv env;
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  EXPECT_EQ(log->FirstIndex(), 1u);
  EXPECT_EQ(log->LastIndex(), 0u);
  EXPECT_EQ(*log->Term(0), 0u);
  EXPECT_TRUE(absl::IsNotFound(log->Term(1).status()));
  EXPECT_TRUE(absl::IsNotFound(log->Entries(1, 2, 100).status()));
  EXPECT_EQ(log->SegmentSeqs(), std::vector<uint64_t>{1});
  EXPECT_TRUE(env.FileExists("/wal/wal-000000001"));
}

// On POSIX files the active segment is zero-filled ahead of its batches (preallocate_bytes).
// A segment's data ends before those zeros, wherever the process stopped.
TEST(LogTest, PreallocatedSegmentsReopenAfterAShutdownOrAKill) {
  Env* env = Env::Default();
  std::string root = JoinPath(testing::TempDir(), "basalt_log_test.XXXXXX");
  ASSERT_NE(mkdtemp(root.data()), nullptr) << "mkdtemp " << root;
  const std::string dir = JoinPath(root, "wal");
  const std::string killed = JoinPath(root, "killed");
  LogOptions o = SmallSegments(64 << 10);
  o.preallocate_bytes = 16 << 10;
  uint64_t next = 1;
  {
    absl::StatusOr<std::unique_ptr<Log>> log = Log::Open(env, dir, o);
    BASALT_ASSERT_OK(log);
    BASALT_ASSERT_OK((*log)->Start());
    while ((*log)->SegmentSeqs().size() < 3) {
      BASALT_ASSERT_OK((*log)->Append(MakeEntries(next, 5, 1, 300)));
      next += 5;
    }
    // The active segment holds zeros after its data, at least the 16 KiB step less a batch;
    // closed ones had theirs cut off when they were closed.
    const std::vector<uint64_t> seqs = (*log)->SegmentSeqs();
    for (uint64_t seq : seqs) {
      std::string contents;
      BASALT_ASSERT_OK(ReadFileToString(env, JoinPath(dir, SegmentFileName(seq)), &contents));
      absl::StatusOr<SegmentScan> scan = ScanSegment(contents, "segment", false);
      BASALT_ASSERT_OK(scan);
      if (seq == seqs.back()) {
        EXPECT_GE(scan->preallocated_bytes, o.preallocate_bytes - 5 * 320);
      } else {
        EXPECT_EQ(scan->preallocated_bytes, 0u) << seq;
      }
    }
    // What a kill -9 leaves: the files as they are now (every append was synced).
    BASALT_ASSERT_OK(env->CreateDirs(killed));
    absl::StatusOr<std::vector<std::string>> names = env->GetChildren(dir);
    BASALT_ASSERT_OK(names);
    for (const std::string& name : *names) {
      std::string contents;
      BASALT_ASSERT_OK(ReadFileToString(env, JoinPath(dir, name), &contents));
      BASALT_ASSERT_OK(WriteStringToFile(env, JoinPath(killed, name), contents, true));
    }
  }
  const uint64_t first_run_end = next - 1;
  auto term_of = [&](uint64_t index) -> uint64_t { return index <= first_run_end ? 1 : 2; };
  for (const std::string& d : {dir, killed}) {
    SCOPED_TRACE(d);
    uint64_t last = first_run_end;
    for (int reopen = 0; reopen < 2; ++reopen) {
      absl::StatusOr<std::unique_ptr<Log>> log = Log::Open(env, d, o);
      BASALT_ASSERT_OK(log);
      BASALT_ASSERT_OK((*log)->Start());
      ASSERT_EQ((*log)->LastIndex(), last);
      ExpectEntries(**log, 1, last, term_of);
      BASALT_ASSERT_OK((*log)->Append(MakeEntries(last + 1, 5, 2, 300)));
      last += 5;
      ExpectEntries(**log, 1, last, term_of);
    }
  }
  BASALT_EXPECT_OK(env->DeleteDirRecursively(root));
}

TEST(LogTest, RoundTripAcrossSegmentsAndReopen) {
  MemoryEnv env;
  Random rng(SeedFromEnvOrTime());
  uint64_t next = 1;
  uint64_t term = 0;
  {
    std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
    while (next <= 600) {
      const size_t n = 1 + rng.Uniform(8);
      term = 1 + next / 100;
      BASALT_ASSERT_OK(log->Append(MakeEntries(next, n, term, rng.Uniform(120))));
      next += n;
    }
    EXPECT_GT(log->SegmentSeqs().size(), 5u);
    EXPECT_EQ(log->LastIndex(), next - 1);
    EXPECT_EQ(log->LastOpId(), (OpId{term, next - 1}));
  }
  // Terms depend on the batch's first index; recompute them from the stored data instead.
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  ASSERT_EQ(log->FirstIndex(), 1u);
  ASSERT_EQ(log->LastIndex(), next - 1);
  absl::StatusOr<std::vector<LogEntry>> all = log->Entries(1, next, UINT64_MAX);
  BASALT_ASSERT_OK(all);
  ASSERT_EQ(all->size(), next - 1);
  for (const LogEntry& e : *all) {
    EXPECT_EQ(e.data, TestEntryData(e.index, e.term, e.data.size()));
    EXPECT_EQ(*log->Term(e.index), e.term);
  }
  // Appendable after reopening.
  BASALT_ASSERT_OK(log->Append(MakeEntries(next, 3, 99)));
  ExpectEntries(*log, next, next + 2, 99);
}

TEST(LogTest, EntriesRespectsMaxBytesButReturnsOne) {
  MemoryEnv env;
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  BASALT_ASSERT_OK(log->Append(MakeEntries(1, 10, 1, 100)));
  EXPECT_EQ(log->Entries(1, 11, 0)->size(), 1u);
  EXPECT_EQ(log->Entries(1, 11, 2 * LogEntrySize(MakeEntry(1, 1, 100)))->size(), 2u);
  EXPECT_EQ(log->Entries(3, 5, UINT64_MAX)->size(), 2u);
  EXPECT_TRUE(absl::IsNotFound(log->Entries(5, 12, UINT64_MAX).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(log->Entries(5, 5, UINT64_MAX).status()));
}

TEST(LogTest, AppendValidation) {
  MemoryEnv env;
  {
    std::unique_ptr<Log> log = OpenLog(&env, SmallSegments(), /*start=*/false);
    EXPECT_TRUE(absl::IsFailedPrecondition(log->Append(MakeEntries(1, 1, 1))));
  }
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  BASALT_ASSERT_OK(log->Append(MakeEntries(1, 3, 2)));
  EXPECT_TRUE(absl::IsInvalidArgument(log->Append({})));
  EXPECT_TRUE(absl::IsInvalidArgument(log->Append(MakeEntries(5, 1, 2))));  // gap
  EXPECT_TRUE(absl::IsInvalidArgument(log->Append(MakeEntries(4, 1, 1))));  // lower term
  std::vector<LogEntry> bad = MakeEntries(4, 2, 2);
  bad[1].index = 9;
  EXPECT_TRUE(absl::IsInvalidArgument(log->Append(bad)));
  EXPECT_EQ(log->LastIndex(), 3u);
  log->Shutdown();
  EXPECT_TRUE(absl::IsFailedPrecondition(log->Append(MakeEntries(4, 1, 2))));
}

// ---- Recovery ----

// Builds a log of several segments and returns its files and, separately, the offset at which
// the final batch of the last segment starts and the index of its first entry.
struct BuiltLog {
  std::map<std::string, std::string> files;
  std::string last_name;
  size_t last_batch_offset = 0;
  uint64_t last_batch_first = 0;
  uint64_t last_index = 0;
};

BuiltLog BuildLog() {
  MemoryEnv env;
  BuiltLog b;
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  uint64_t next = 1;
  for (int i = 0; i < 40; ++i, next += 3) {
    BASALT_EXPECT_OK(log->Append(MakeEntries(next, 3, 1)));
  }
  b.last_name = SegmentFileName(log->SegmentSeqs().back());
  b.last_batch_offset = *env.GetFileSize(JoinPath(kDir, b.last_name));
  b.last_batch_first = next;
  BASALT_EXPECT_OK(log->Append(MakeEntries(next, 3, 2)));
  b.last_index = next + 2;
  EXPECT_EQ(SegmentFileName(log->SegmentSeqs().back()), b.last_name) << "final batch rolled";
  log.reset();
  b.files = Snapshot(&env);
  EXPECT_GE(b.files.size(), 4u);
  return b;
}

TEST(LogRecoveryTest, TruncatedFinalBatchAtEveryOffset) {
  const BuiltLog b = BuildLog();
  const std::string& last = b.files.at(b.last_name);
  for (size_t cut = b.last_batch_offset; cut < last.size(); ++cut) {
    SCOPED_TRACE(StrCat("cut at ", cut));
    auto files = b.files;
    files[b.last_name].resize(cut);
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    {
      std::unique_ptr<Log> log = OpenLog(env.get(), SmallSegments());
      ASSERT_NE(log, nullptr);
      ASSERT_EQ(log->LastIndex(), b.last_batch_first - 1);
      EXPECT_EQ(*env->GetFileSize(JoinPath(kDir, b.last_name)), b.last_batch_offset);
      BASALT_ASSERT_OK(log->Append(MakeEntries(b.last_batch_first, 2, 5)));
    }
    std::unique_ptr<Log> log = OpenLog(env.get(), SmallSegments());
    ASSERT_EQ(log->LastIndex(), b.last_batch_first + 1);
    ExpectEntries(*log, 1, b.last_batch_first + 1,
                  [&](uint64_t i) { return i >= b.last_batch_first ? 5 : 1; });
  }
}

TEST(LogRecoveryTest, GarbageOrZerosInFinalBatchAreATornTail) {
  const BuiltLog b = BuildLog();
  const std::string& last = b.files.at(b.last_name);
  for (size_t pos = b.last_batch_offset; pos < last.size(); ++pos) {
    for (bool zeros : {false, true}) {
      auto files = b.files;
      std::string& f = files[b.last_name];
      if (zeros) {
        std::fill(f.begin() + pos, f.end(), '\0');
      } else {
        f[pos] ^= 0x40;
      }
      std::unique_ptr<MemoryEnv> env = EnvWith(files);
      std::unique_ptr<Log> log = OpenLog(env.get(), SmallSegments(), false);
      ASSERT_NE(log, nullptr) << pos;
      EXPECT_EQ(log->LastIndex(), b.last_batch_first - 1) << pos;
    }
  }
}

TEST(LogRecoveryTest, CorruptMiddleBatchIsDataLoss) {
  BuiltLog b = BuildLog();
  // A batch in the middle of the last segment: the first one after the header.
  const std::string& last = b.files.at(b.last_name);
  SegmentHeader h;
  size_t header_size;
  BASALT_ASSERT_OK(DecodeSegmentHeader(last, "x", &h, &header_size));
  ASSERT_LT(header_size, b.last_batch_offset);
  for (size_t pos = header_size; pos < b.last_batch_offset; ++pos) {
    auto files = b.files;
    files[b.last_name][pos] ^= 0x01;
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    absl::StatusOr<std::unique_ptr<Log>> log = Log::Open(env.get(), kDir, SmallSegments());
    ASSERT_TRUE(absl::IsDataLoss(log.status())) << pos << ": " << log.status();
    EXPECT_NE(log.status().message().find(b.last_name), absl::string_view::npos);
  }
}

TEST(LogRecoveryTest, DamageInANonLastSegmentIsDataLoss) {
  BuiltLog b = BuildLog();
  const std::string first = SegmentFileName(1);
  const std::string& data = b.files.at(first);
  // Flip any byte (header included), or cut off the end: never tolerated outside the last segment.
  for (size_t pos = 0; pos < data.size(); pos += 7) {
    auto files = b.files;
    files[first][pos] ^= 0x80;
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    EXPECT_TRUE(absl::IsDataLoss(Log::Open(env.get(), kDir, SmallSegments()).status())) << pos;
  }
  auto files = b.files;
  files[first].resize(data.size() - 1);
  std::unique_ptr<MemoryEnv> env = EnvWith(files);
  EXPECT_TRUE(absl::IsDataLoss(Log::Open(env.get(), kDir, SmallSegments()).status()));
}

TEST(LogRecoveryTest, MissingSegmentIsDataLoss) {
  BuiltLog b = BuildLog();
  auto files = b.files;
  files.erase(SegmentFileName(2));
  std::unique_ptr<MemoryEnv> env = EnvWith(files);
  EXPECT_TRUE(absl::IsDataLoss(Log::Open(env.get(), kDir, SmallSegments()).status()));
}

TEST(LogRecoveryTest, HalfCreatedLastSegmentAndTempFilesAreRemoved) {
  BuiltLog b = BuildLog();
  uint64_t seq;
  ASSERT_TRUE(ParseSegmentFileName(b.last_name, &seq));
  for (size_t len : {size_t{0}, size_t{5}, kSegmentHeaderFixedSize + 3}) {
    auto files = b.files;
    SegmentHeader h;
    h.seq = seq + 1;
    h.first_index = b.last_index + 1;
    h.log_id = "tablet-1";
    files[SegmentFileName(seq + 1)] = EncodeSegmentHeader(h).substr(0, len);
    files[b.last_name + ".tmp"] = "partial rewrite";
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    std::unique_ptr<Log> log = OpenLog(env.get(), SmallSegments());
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->LastIndex(), b.last_index);
    EXPECT_FALSE(env->FileExists(JoinPath(kDir, SegmentFileName(seq + 1))));
    EXPECT_FALSE(env->FileExists(JoinPath(kDir, b.last_name + ".tmp")));
    BASALT_EXPECT_OK(log->Append(MakeEntries(b.last_index + 1, 1, 3)));
  }
}

TEST(LogRecoveryTest, OtherLogIdIsRefused) {
  BuiltLog b = BuildLog();
  std::unique_ptr<MemoryEnv> env = EnvWith(b.files);
  LogOptions other = SmallSegments();
  other.log_id = "tablet-2";
  EXPECT_TRUE(absl::IsFailedPrecondition(Log::Open(env.get(), kDir, other).status()));
}

// ---- Truncation, GC, reset ----

TEST(LogTest, TruncateSuffixAcrossSegmentsThenAppendThenReopen) {
  MemoryEnv env;
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  for (uint64_t next = 1; next <= 300; next += 5) {
    BASALT_ASSERT_OK(log->Append(MakeEntries(next, 5, 1)));
  }
  const size_t segments_before = log->SegmentSeqs().size();
  ASSERT_GT(segments_before, 5u);
  // 103 is inside a batch [101, 105] of an early segment.
  BASALT_ASSERT_OK(log->TruncateSuffix(103));
  EXPECT_EQ(log->LastIndex(), 102u);
  EXPECT_LT(log->SegmentSeqs().size(), segments_before);
  EXPECT_TRUE(absl::IsNotFound(log->Term(103).status()));
  ExpectEntries(*log, 1, 102, 1);
  BASALT_ASSERT_OK(log->Append(MakeEntries(103, 50, 2)));
  // An append that overlaps replaces the suffix, like TruncateSuffix.
  BASALT_ASSERT_OK(log->Append(MakeEntries(140, 4, 3)));
  EXPECT_EQ(log->LastIndex(), 143u);
  BASALT_EXPECT_OK(log->TruncateSuffix(500));  // nothing to drop
  EXPECT_TRUE(absl::IsInvalidArgument(log->TruncateSuffix(0)));
  auto term_of = [](uint64_t i) -> uint64_t { return i < 103 ? 1 : i < 140 ? 2 : 3; };
  ExpectEntries(*log, 1, 143, term_of);
  log.reset();
  log = OpenLog(&env, SmallSegments());
  EXPECT_EQ(log->LastIndex(), 143u);
  ExpectEntries(*log, 1, 143, term_of);
  // Truncating everything leaves an empty, appendable log.
  BASALT_ASSERT_OK(log->TruncateSuffix(1));
  EXPECT_EQ(log->LastIndex(), 0u);
  BASALT_ASSERT_OK(log->Append(MakeEntries(1, 2, 7)));
  log.reset();
  log = OpenLog(&env, SmallSegments());
  ExpectEntries(*log, 1, 2, 7);
  EXPECT_EQ(log->LastIndex(), 2u);
}

TEST(LogTest, GCKeepsRetainedEntriesAndTheActiveSegment) {
  MemoryEnv env;
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  for (uint64_t next = 1; next <= 400; next += 4) {
    BASALT_ASSERT_OK(log->Append(MakeEntries(next, 4, 1 + next / 50)));
  }
  auto term_of = [](uint64_t i) -> uint64_t { return 1 + ((i - 1) / 4 * 4 + 1) / 50; };
  const std::vector<uint64_t> before = log->SegmentSeqs();
  EXPECT_EQ(*log->GC(1), 0);
  absl::StatusOr<int> deleted = log->GC(200);
  BASALT_ASSERT_OK(deleted);
  EXPECT_GT(*deleted, 0);
  EXPECT_LE(log->FirstIndex(), 200u);
  EXPECT_EQ(log->SegmentSeqs().size(), before.size() - *deleted);
  ExpectEntries(*log, 200, 400, term_of);
  ExpectEntries(*log, log->FirstIndex(), 400, term_of);
  EXPECT_EQ(*log->Term(log->FirstIndex() - 1), term_of(log->FirstIndex() - 1));
  EXPECT_TRUE(absl::IsNotFound(log->Entries(log->FirstIndex() - 1, 400, 10).status()));
  EXPECT_FALSE(env.FileExists(JoinPath(kDir, SegmentFileName(before.front()))));
  // Retaining nothing still keeps the active segment.
  BASALT_ASSERT_OK(log->GC(UINT64_MAX));
  EXPECT_EQ(log->SegmentSeqs(), std::vector<uint64_t>{before.back()});
  EXPECT_EQ(log->LastIndex(), 400u);
  const uint64_t first = log->FirstIndex();
  log.reset();
  log = OpenLog(&env, SmallSegments());
  EXPECT_EQ(log->FirstIndex(), first);
  ExpectEntries(*log, first, 400, term_of);
  BASALT_ASSERT_OK(log->Append(MakeEntries(401, 1, 20)));
}

TEST(LogTest, ResetToSnapshot) {
  MemoryEnv env;
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  for (uint64_t next = 1; next <= 100; next += 5) {
    BASALT_ASSERT_OK(log->Append(MakeEntries(next, 5, 1)));
  }
  BASALT_ASSERT_OK(log->ResetToSnapshot(OpId{4, 1000}));
  EXPECT_EQ(log->FirstIndex(), 1001u);
  EXPECT_EQ(log->LastIndex(), 1000u);
  EXPECT_EQ(*log->Term(1000), 4u);
  EXPECT_EQ(log->SegmentSeqs().size(), 1u);
  BASALT_ASSERT_OK(log->Append(MakeEntries(1001, 3, 4)));
  log.reset();
  log = OpenLog(&env, SmallSegments());
  EXPECT_EQ(log->FirstIndex(), 1001u);
  ExpectEntries(*log, 1001, 1003, 4);
}

// ---- Group commit and concurrency ----

TEST(LogTest, GroupCommitSyncsFewerTimesThanAppends) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments(64 << 10));
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50;
  absl::Mutex mu;
  uint64_t next_index = 1;  // Guarded by mu: index assignment and AsyncAppend go together.
  std::vector<uint64_t> acked;
  std::atomic<int> errors{0};
  absl::Notification release;
  // The first append's callback holds the appender until every thread has queued its appends, so
  // they must share a few group commits.
  {
    absl::MutexLock l(&mu);
    BASALT_ASSERT_OK(log->AsyncAppend(MakeEntries(next_index++, 1, 1), [&](const absl::Status& s) {
      release.WaitForNotification();
    }));
  }
  const int64_t syncs_before = env.num_sync_points();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        absl::MutexLock l(&mu);
        const uint64_t index = next_index++;
        absl::Status s =
            log->AsyncAppend(MakeEntries(index, 1, 1), [&, index](const absl::Status& st) {
              if (!st.ok()) ++errors;
              acked.push_back(index);  // Callbacks run on the one appender thread, in order.
            });
        if (!s.ok()) ++errors;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  release.Notify();
  log->Shutdown();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(acked.size(), size_t{kThreads * kPerThread});
  for (size_t i = 0; i < acked.size(); ++i) ASSERT_EQ(acked[i], i + 2);
  const int64_t syncs = env.num_sync_points() - syncs_before;
  EXPECT_LT(syncs, kThreads * kPerThread / 10) << syncs << " syncs";
  log = OpenLog(&env, SmallSegments(64 << 10), false);
  ExpectEntries(*log, 1, kThreads * kPerThread + 1, 1);
}

TEST(LogTest, ConcurrentReadersWhileAppending) {
  MemoryEnv env;
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments(4096));
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::thread reader([&] {
    while (!done.load()) {
      const uint64_t last = log->LastIndex();
      if (last == 0) continue;
      absl::StatusOr<std::vector<LogEntry>> got = log->Entries(1, last + 1, UINT64_MAX);
      if (!got.ok() || got->size() != last) ++failures;
      for (const LogEntry& e : *got) {
        if (e.data != TestEntryData(e.index, 1, e.data.size())) ++failures;
      }
    }
  });
  for (uint64_t next = 1; next <= 2000; next += 4) {
    BASALT_ASSERT_OK(log->Append(MakeEntries(next, 4, 1)));
  }
  done = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---- Faults ----

TEST(LogFaultTest, InjectedIOErrorsFailCallbacksNotTheProcess) {
  using OpKind = FaultInjectionEnv::OpKind;
  for (OpKind kind : {OpKind::kAppend, OpKind::kSync, OpKind::kCreate, OpKind::kSyncDir}) {
    for (int n = 0; n < 6; ++n) {
      SCOPED_TRACE(StrCat(OpKindName(kind), " fails after ", n));
      MemoryEnv mem;
      FaultInjectionEnv env(&mem);
      std::unique_ptr<Log> log = OpenLog(&env, SmallSegments(300));
      env.FailAfter(n, kind);
      uint64_t acked = 0;
      absl::Status first_error;
      for (uint64_t next = 1; next <= 60; next += 2) {
        absl::Status s = log->Append(MakeEntries(next, 2, 1));
        if (!s.ok()) {
          first_error = s;
          break;
        }
        acked = next + 1;
      }
      ASSERT_FALSE(first_error.ok());
      EXPECT_NE(first_error.message().find("injected"), absl::string_view::npos) << first_error;
      EXPECT_TRUE(absl::IsFailedPrecondition(log->Append(MakeEntries(acked + 1, 1, 1))));
      EXPECT_TRUE(absl::IsFailedPrecondition(log->TruncateSuffix(1)));
      ExpectEntries(*log, 1, acked, 1);  // Readers still work.
      log.reset();
      env.ClearFailures();
      log = OpenLog(&env, SmallSegments(300));
      ASSERT_NE(log, nullptr);
      EXPECT_GE(log->LastIndex(), acked);
      ExpectEntries(*log, 1, acked, 1);
    }
  }
}

TEST(LogFaultTest, ReadErrorsSurfaceAsStatus) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
  BASALT_ASSERT_OK(log->Append(MakeEntries(1, 50, 1)));
  env.FailAfter(0, FaultInjectionEnv::OpKind::kRead);
  EXPECT_FALSE(log->Entries(1, 51, UINT64_MAX).ok());
  log.reset();
  EXPECT_FALSE(Log::Open(&env, kDir, SmallSegments()).ok());
  env.ClearFailures();
}

// The workload of the crash test: appends (synchronous and bursts of asynchronous ones), suffix
// truncations, GC and segment rolls. `acked` maps each index to the term of the last version of it
// that was acknowledged and not truncated since; `max_retain` is the highest GC retention index.
struct CrashModel {
  std::map<uint64_t, uint64_t> acked;
  uint64_t max_retain = 0;
};

void RunCrashWorkload(Log* log, uint64_t seed, CrashModel* model) {
  Random rng(seed);
  uint64_t next = 1;
  uint64_t term = 1;
  absl::Mutex mu;
  // At least 40 steps and at least 30 appends (each waits for at least one sync), whatever the
  // seed: the test needs enough sync points to crash at. How many syncs a burst of asynchronous
  // appends takes depends on timing (group commit), the number of appends does not.
  int appends = 0;
  for (int step = 0; step < 40 || appends < 30; ++step) {
    const int op = static_cast<int>(rng.Uniform(10));
    if (op >= 2) ++appends;
    if (op == 0 && next > 3) {
      const uint64_t index = next - 1 - rng.Uniform(std::min<uint64_t>(next - 2, 12));
      // Not into what GC removed (a leader never overwrites entries a follower collected): such a
      // truncation is refused and would end the workload early.
      if (index <= log->FirstIndex()) continue;
      // Whether or not the truncation completes, the entries from `index` on are not owed.
      model->acked.erase(model->acked.lower_bound(index), model->acked.end());
      if (!log->TruncateSuffix(index).ok()) return;
      next = index;
      ++term;
    } else if (op == 1) {
      model->max_retain = std::max(model->max_retain, next / 2);
      if (!log->GC(next / 2).ok()) return;
    } else if (op == 2) {
      // A burst of asynchronous appends, acknowledged by callbacks.
      absl::Notification done;
      std::atomic<int> pending{3};
      bool ok = true;
      for (int i = 0; i < 3; ++i, next += 2) {
        const uint64_t first = next;
        absl::Status s =
            log->AsyncAppend(MakeEntries(first, 2, term), [&, first](const absl::Status& st) {
              if (st.ok()) {
                absl::MutexLock l(&mu);
                model->acked[first] = term;
                model->acked[first + 1] = term;
              }
              if (--pending == 0) done.Notify();
            });
        if (!s.ok()) {
          ok = false;
          if (--pending == 0) done.Notify();
        }
      }
      done.WaitForNotification();
      if (!ok) return;
    } else {
      const size_t n = 1 + rng.Uniform(4);
      if (!log->Append(MakeEntries(next, n, term, rng.Uniform(60))).ok()) return;
      absl::MutexLock l(&mu);
      for (size_t i = 0; i < n; ++i) model->acked[next + i] = term;
      next += n;
    }
  }
}

TEST(LogFaultTest, CrashAtEverySyncPointKeepsAcknowledgedEntries) {
  const uint64_t seed = SeedFromEnvOrTime();
  int64_t total_sync_points;
  {
    MemoryEnv mem;
    FaultInjectionEnv env(&mem);
    std::unique_ptr<Log> log = OpenLog(&env, SmallSegments(400));
    CrashModel model;
    RunCrashWorkload(log.get(), seed, &model);
    log.reset();
    total_sync_points = env.num_sync_points();
  }
  ASSERT_GE(total_sync_points, 30) << "seed " << seed;
  for (int64_t k = 0; k <= total_sync_points; ++k) {
    SCOPED_TRACE(StrCat("crash at sync point ", k, " of ", total_sync_points, ", seed ", seed));
    MemoryEnv mem;
    FaultInjectionEnv env(&mem);
    CrashModel model;
    {
      std::unique_ptr<Log> log = OpenLog(&env, SmallSegments(400));
      env.SetCrashAtSyncPoint(k);
      RunCrashWorkload(log.get(), seed, &model);
    }
    BASALT_ASSERT_OK(env.DropUnsyncedData());
    std::unique_ptr<Log> log = OpenLog(&env, SmallSegments(400));
    ASSERT_NE(log, nullptr);
    EXPECT_LE(log->FirstIndex(), std::max<uint64_t>(model.max_retain, 1));
    for (const auto& [index, term] : model.acked) {
      if (index < log->FirstIndex()) continue;
      ASSERT_LE(index, log->LastIndex());
      absl::StatusOr<std::vector<LogEntry>> e = log->Entries(index, index + 1, 0);
      BASALT_ASSERT_OK(e);
      ASSERT_EQ((*e)[0].term, term) << index;
      ASSERT_EQ((*e)[0].data, TestEntryData(index, term, (*e)[0].data.size()));
    }
    // Whatever survived is a readable log that accepts appends.
    if (log->LastIndex() >= log->FirstIndex()) {
      BASALT_ASSERT_OK(log->Entries(log->FirstIndex(), log->LastIndex() + 1, UINT64_MAX));
    }
    const OpId last = log->LastOpId();
    BASALT_ASSERT_OK(log->Append(MakeEntries(last.index + 1, 1, last.term + 1)));
  }
}

TEST(LogFaultTest, CrashDuringResetLeavesOldOrNewLog) {
  for (int64_t k = 0; k < 8; ++k) {
    SCOPED_TRACE(StrCat("crash at sync point ", k));
    MemoryEnv mem;
    FaultInjectionEnv env(&mem);
    absl::Status reset;
    {
      std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
      for (uint64_t next = 1; next <= 100; next += 5) {
        BASALT_ASSERT_OK(log->Append(MakeEntries(next, 5, 1)));
      }
      env.SetCrashAtSyncPoint(k);
      reset = log->ResetToSnapshot(OpId{3, 500});
    }
    BASALT_ASSERT_OK(env.DropUnsyncedData());
    std::unique_ptr<Log> log = OpenLog(&env, SmallSegments());
    ASSERT_NE(log, nullptr);
    if (log->FirstIndex() == 1) {
      EXPECT_FALSE(reset.ok());
      ExpectEntries(*log, 1, 100, 1);
    } else {
      EXPECT_EQ(log->FirstIndex(), 501u);
      EXPECT_EQ(log->LastOpId(), (OpId{3, 500}));
      EXPECT_EQ(log->SegmentSeqs().size(), 1u);
    }
    if (reset.ok()) {
      EXPECT_EQ(log->FirstIndex(), 501u);
    }
  }
}

// ---- Real file system ----

TEST(LogPosixTest, AppendSyncReopen) {
  std::string tmpl = JoinPath(testing::TempDir(), "basalt_log_test.XXXXXX");
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = JoinPath(tmpl, "wal");
  Env* env = Env::Default();
  {
    absl::StatusOr<std::unique_ptr<Log>> log = Log::Open(env, dir, SmallSegments(8192));
    BASALT_ASSERT_OK(log);
    BASALT_ASSERT_OK((*log)->Start());
    for (uint64_t next = 1; next <= 500; next += 5) {
      BASALT_ASSERT_OK((*log)->Append(MakeEntries(next, 5, 3)));
    }
    EXPECT_GT((*log)->num_syncs(), 0);
    BASALT_ASSERT_OK((*log)->TruncateSuffix(451));
  }
  {
    absl::StatusOr<std::unique_ptr<Log>> log = Log::Open(env, dir, SmallSegments(8192));
    BASALT_ASSERT_OK(log);
    EXPECT_EQ((*log)->LastIndex(), 450u);
    ExpectEntries(**log, 1, 450, 3);
  }
  BASALT_ASSERT_OK(env->DeleteDirRecursively(tmpl));
}

}  // namespace log_test_file
}  // namespace
}  // namespace basalt
