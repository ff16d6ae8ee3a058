#include "consensus/server_log.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/coding.h"
#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "consensus/log.h"
#include "consensus/log_segment.h"
#include "consensus/log_test_util.h"

namespace basalt {
namespace {
namespace server_log_test_file {

constexpr char kDir[] = "/server-wal";

// ---- Entries and what a group must hold ----

// Whether `e` is the entry MakeEntry made for its index and `term` (of any size).
void ExpectIsEntry(const LogEntry& e, uint64_t index, uint64_t term) {
  ASSERT_EQ(e.index, index);
  ASSERT_EQ(e.term, term) << "entry " << index;
  const LogEntry want = MakeTestEntry(index, term, e.data.size());
  EXPECT_EQ(e.data, want.data) << "entry " << index;
  EXPECT_EQ(e.type, want.type) << "entry " << index;
  EXPECT_EQ(e.timestamp, want.timestamp) << "entry " << index;
}

// What a group's log must hold: the entries [first, first + terms.size()) with these terms, after
// the entry (first - 1, prev_term).
struct GroupModel {
  uint64_t first = 1;
  uint64_t prev_term = 0;
  std::vector<uint64_t> terms;

  uint64_t last() const { return first + terms.size() - 1; }
  uint64_t next() const { return first + terms.size(); }
  uint64_t TermAt(uint64_t index) const {
    return index + 1 == first ? prev_term : terms.at(index - first);
  }
  uint64_t last_term() const { return TermAt(last()); }
  // Entries [from, from + n) of `term` replace those from `from` on.
  void Append(uint64_t from, size_t n, uint64_t term) {
    CHECK(from >= first && from <= next()) << from;
    terms.resize(from - first);
    terms.insert(terms.end(), n, term);
  }
  void Truncate(uint64_t index) {
    if (index <= last()) terms.resize(index - first);
  }
  void Reset(OpId snapshot) {
    first = snapshot.index + 1;
    prev_term = snapshot.term;
    terms.clear();
  }
};

// Checks that `log` holds what `m` says from its first index on, and that its first index is
// m.first, or in [m.first, max_first] if max_first is set (a GC may have dropped entries below
// it).
void ExpectGroup(const Log& log, const GroupModel& m, uint64_t max_first = 0) {
  const uint64_t first = log.FirstIndex();
  if (max_first == 0) {
    ASSERT_EQ(first, m.first);
  } else {
    ASSERT_GE(first, m.first);
    ASSERT_LE(first, max_first);
  }
  ASSERT_EQ(log.LastIndex(), m.last());
  absl::StatusOr<uint64_t> prev = log.Term(first - 1);
  BASALT_ASSERT_OK(prev);
  EXPECT_EQ(*prev, m.TermAt(first - 1)) << "term before the first index " << first;
  EXPECT_TRUE(absl::IsNotFound(log.Term(m.next()).status()));
  EXPECT_EQ(log.LastOpId(), (OpId{m.last_term(), m.last()}));
  uint64_t next = first;
  while (next <= m.last()) {
    absl::StatusOr<std::vector<LogEntry>> got = log.Entries(next, m.next(), 16 << 10);
    BASALT_ASSERT_OK(got) << "reading from " << next;
    ASSERT_FALSE(got->empty());
    for (const LogEntry& e : *got) {
      ASSERT_NO_FATAL_FAILURE(ExpectIsEntry(e, next, m.TermAt(next)));
      absl::StatusOr<uint64_t> term = log.Term(next);
      BASALT_ASSERT_OK(term);
      ASSERT_EQ(*term, m.TermAt(next)) << next;
      ++next;
    }
  }
}

LogOptions Options(uint64_t segment_bytes = 4096, bool force_fsync = true) {
  LogOptions o;
  o.segment_size_bytes = segment_bytes;
  o.force_fsync = force_fsync;
  o.preallocate_bytes = 0;
  return o;
}

std::unique_ptr<ServerLog> OpenServer(Env* env, const LogOptions& o, bool start = true) {
  absl::StatusOr<std::unique_ptr<ServerLog>> server = ServerLog::Open(env, kDir, o);
  BASALT_EXPECT_OK(server);
  if (!server.ok()) return nullptr;
  if (start) {
    BASALT_EXPECT_OK((*server)->Start());
  }
  return *std::move(server);
}

std::unique_ptr<Log> OpenGroup(ServerLog* server, const std::string& id, bool start = true) {
  absl::StatusOr<std::unique_ptr<Log>> log = server->OpenGroup(id);
  BASALT_EXPECT_OK(log) << id;
  if (!log.ok()) return nullptr;
  if (start) {
    BASALT_EXPECT_OK((*log)->Start()) << id;
  }
  return *std::move(log);
}

// A server log and the logs of its open groups, which Close() shuts down first.
struct Server {
  std::unique_ptr<ServerLog> log;
  std::map<std::string, std::unique_ptr<Log>> groups;

  Server(Env* env, const LogOptions& o, const std::vector<std::string>& ids, bool start = true)
      : log(OpenServer(env, o, start)) {
    if (log == nullptr) return;
    for (const std::string& id : ids) groups[id] = OpenGroup(log.get(), id, start);
  }
  ~Server() { Close(); }
  // Whether the server log and every group opened (OpenServer and OpenGroup printed why not).
  bool opened() const {
    if (log == nullptr) return false;
    for (const auto& [id, g] : groups) {
      if (g == nullptr) return false;
    }
    return true;
  }
  Log& operator[](const std::string& id) { return *groups.at(id); }
  void Close() {
    groups.clear();
    log.reset();
  }
};

// Appends n entries of `term` at m->next() to `log` and to the model.
void AppendTo(Log& log, GroupModel* m, size_t n, uint64_t term, size_t size = 0) {
  BASALT_ASSERT_OK(log.Append(MakeTestEntries(m->next(), n, term, size)));
  m->Append(m->next(), n, term);
}

// The contents of every file in kDir of `env`.
std::map<std::string, std::string> Snapshot(Env* env) { return FilesIn(env, kDir); }

std::unique_ptr<MemoryEnv> EnvWith(const std::map<std::string, std::string>& files) {
  return EnvWithFiles(kDir, files);
}

// The segment files in kDir, by sequence number.
std::vector<uint64_t> SegmentFilesIn(Env* env) {
  std::vector<uint64_t> seqs;
  absl::StatusOr<std::vector<std::string>> names = env->GetChildren(kDir);
  BASALT_EXPECT_OK(names);
  if (!names.ok()) return seqs;
  for (const std::string& name : *names) {
    uint64_t seq;
    if (ParseSegmentFileName(name, &seq)) seqs.push_back(seq);
  }
  std::sort(seqs.begin(), seqs.end());
  return seqs;
}

// (offset, size) of each frame of a server log segment's contents.
std::vector<std::pair<uint64_t, uint32_t>> FramesOf(const std::string& contents) {
  std::vector<std::pair<uint64_t, uint32_t>> frames;
  SegmentHeader header;
  size_t header_size = 0;
  BASALT_EXPECT_OK(DecodeSegmentHeader(contents, "segment", &header, &header_size));
  absl::StatusOr<FrameWalk> walk =
      WalkFrames(contents, header_size, "segment", /*allow_torn_tail=*/false,
                 [&](std::string_view, uint64_t offset, uint32_t size) {
                   frames.emplace_back(offset, size);
                   return absl::OkStatus();
                 });
  BASALT_EXPECT_OK(walk);
  return frames;
}

// ---- Basics ----

TEST(ServerLogTest, FreshServerLogAndGroupIds) {
  MemoryEnv env;
  std::unique_ptr<ServerLog> server = OpenServer(&env, Options());
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->SegmentSeqs(), std::vector<uint64_t>{1});
  EXPECT_TRUE(env.FileExists(JoinPath(kDir, SegmentFileName(1))));
  EXPECT_TRUE(server->GroupIds().empty());
  EXPECT_FALSE(server->HasGroup("a"));
  EXPECT_TRUE(absl::IsInvalidArgument(server->OpenGroup("").status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(server->OpenGroup(std::string(kMaxLogIdBytes + 1, 'x')).status()));
  const std::string long_id(kMaxLogIdBytes, 'l');  // A two-byte length in every record.
  {
    std::unique_ptr<Log> a = OpenGroup(server.get(), "a", /*start=*/false);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->FirstIndex(), 1u);
    EXPECT_EQ(a->LastIndex(), 0u);
    EXPECT_EQ(*a->Term(0), 0u);
    EXPECT_TRUE(absl::IsNotFound(a->Term(1).status()));
    EXPECT_TRUE(absl::IsNotFound(a->Entries(1, 2, 100).status()));
    EXPECT_TRUE(absl::IsFailedPrecondition(a->Append(MakeTestEntries(1, 1, 1))));  // Not started.
    absl::StatusOr<std::unique_ptr<Log>> again = server->OpenGroup("a");
    EXPECT_TRUE(absl::IsFailedPrecondition(again.status())) << again.status();
    BASALT_ASSERT_OK(a->Start());
    BASALT_ASSERT_OK(a->Append(MakeTestEntries(1, 3, 1)));
    EXPECT_TRUE(absl::IsInvalidArgument(a->Append(MakeTestEntries(5, 1, 1))));  // A gap.
    EXPECT_TRUE(absl::IsInvalidArgument(a->Append(MakeTestEntries(4, 1, 0))));  // A lower term.
    std::unique_ptr<Log> l = OpenGroup(server.get(), long_id);
    ASSERT_NE(l, nullptr);
    BASALT_ASSERT_OK(l->Append(MakeTestEntries(1, 2, 4)));
    EXPECT_EQ(server->GroupIds(), (std::vector<std::string>{"a", long_id}));
  }
  server = OpenServer(&env, Options());
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->GroupIds(), (std::vector<std::string>{"a", long_id}));
  std::unique_ptr<Log> a = OpenGroup(server.get(), "a");
  std::unique_ptr<Log> l = OpenGroup(server.get(), long_id);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(l, nullptr);
  ExpectGroup(*a, GroupModel{1, 0, {1, 1, 1}});
  ExpectGroup(*l, GroupModel{1, 0, {4, 4}});
}

// Several groups append through one server log, across segments; a reopen brings back each
// group's entries exactly, and they keep appending.
TEST(ServerLogTest, GroupsRoundTripThroughReopen) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(StrCat("seed ", seed));
  Random rng(seed);
  MemoryEnv env;
  const std::vector<std::string> ids = {"tablet-a", "tablet-b", "tablet-c", "tablet-d"};
  std::map<std::string, GroupModel> models;
  {
    Server s(&env, Options(), ids);
    ASSERT_TRUE(s.opened());
    for (int i = 0; i < 200; ++i) {
      const std::string& id = ids[rng.Uniform(ids.size())];
      GroupModel& m = models[id];
      const uint64_t term = std::max<uint64_t>(1, m.last_term() + (rng.OneIn(8) ? 1 : 0));
      ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m, 1 + rng.Uniform(5), term, rng.Uniform(200)));
    }
    EXPECT_GT(s.log->SegmentSeqs().size(), 5u);
    for (const std::string& id : ids) {
      SCOPED_TRACE(id);
      ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], models[id]));
    }
  }
  for (int reopen = 0; reopen < 2; ++reopen) {
    SCOPED_TRACE(StrCat("reopen ", reopen));
    // Readable before anything starts.
    Server s(&env, Options(), ids, /*start=*/false);
    ASSERT_TRUE(s.opened());
    EXPECT_EQ(s.log->GroupIds(), ids);
    for (const std::string& id : ids) {
      SCOPED_TRACE(id);
      EXPECT_TRUE(s.log->HasGroup(id));
      ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], models[id]));
    }
    BASALT_ASSERT_OK(s.log->Start());
    for (const std::string& id : ids) {
      BASALT_ASSERT_OK(s[id].Start());
      GroupModel& m = models[id];
      ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m, 3, m.last_term() + 1));
      ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m));
    }
  }
}

// ---- Group commit ----

// Groups that append at the same time share writes and syncs. The first batch's callback holds
// the server log's writer until every group has queued a batch, so at least those batches share
// one sync whatever the timing; then the groups go on with blocking Appends concurrently.
TEST(ServerLogTest, GroupCommitAcrossGroups) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);  // Counts the syncs that really happen.
  constexpr int kGroups = 8;
  constexpr int kPerGroup = 30;
  std::unique_ptr<ServerLog> server = OpenServer(&env, Options(1 << 20));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<Log>> groups;
  for (int g = 0; g < kGroups; ++g) {
    groups.push_back(OpenGroup(server.get(), StrCat("tablet-", g)));
    ASSERT_NE(groups.back(), nullptr);
  }
  const int64_t syncs_before = server->num_syncs();
  const int64_t sync_points_before = env.num_sync_points();
  absl::Notification holding;
  absl::Notification release;
  BASALT_ASSERT_OK(groups[0]->AsyncAppend(MakeTestEntries(1, 1, 1), [&](const absl::Status& s) {
    BASALT_EXPECT_OK(s);
    holding.Notify();
    release.WaitForNotification();
  }));
  holding.WaitForNotification();
  absl::BlockingCounter queued(kGroups);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int g = 0; g < kGroups; ++g) {
    threads.emplace_back([&, g] {
      Log* log = groups[g].get();
      uint64_t next = g == 0 ? 2 : 1;
      absl::Notification first_done;
      absl::Status first;
      absl::Status s = log->AsyncAppend(MakeTestEntries(next, 1, 1), [&](const absl::Status& st) {
        first = st;
        first_done.Notify();
      });
      queued.DecrementCount();
      if (!s.ok()) {
        ++failures;
        return;
      }
      first_done.WaitForNotification();
      if (!first.ok()) ++failures;
      for (int i = 1; i < kPerGroup; ++i) {
        if (!log->Append(MakeTestEntries(next + i, 1, 1)).ok()) ++failures;
      }
    });
  }
  queued.Wait();
  release.Notify();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const int64_t appends = 1 + kGroups * kPerGroup;
  const int64_t syncs = server->num_syncs() - syncs_before;
  EXPECT_LT(syncs, appends) << syncs << " syncs for " << appends << " appends";
  EXPECT_GT(syncs, 0);
  // num_syncs counts the syncs of the file system (no segment was created meanwhile).
  EXPECT_EQ(env.num_sync_points() - sync_points_before, syncs);
  std::vector<GroupModel> models(kGroups);
  for (int g = 0; g < kGroups; ++g) models[g].Append(1, g == 0 ? kPerGroup + 1 : kPerGroup, 1);
  for (int g = 0; g < kGroups; ++g) {
    SCOPED_TRACE(g);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(*groups[g], models[g]));
  }
  groups.clear();
  server = OpenServer(&env, Options(1 << 20), /*start=*/false);
  ASSERT_NE(server, nullptr);
  for (int g = 0; g < kGroups; ++g) {
    SCOPED_TRACE(g);
    std::unique_ptr<Log> log = OpenGroup(server.get(), StrCat("tablet-", g), false);
    ASSERT_NE(log, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(*log, models[g]));
  }
}

// Appends whose callers wait are written by those callers: the writer thread is not woken for
// them (docs/wal.md "Writing"), only for work nobody waits for.
TEST(ServerLogTest, WaitingCallersWriteTheirRoundsThemselves) {
  MemoryEnv env;
  Server server(&env, Options(1 << 20), {"a", "b", "c"});
  ASSERT_TRUE(server.opened());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (const std::string id : {"a", "b", "c"}) {
    threads.emplace_back([&, id] {
      for (uint64_t i = 1; i <= 50; ++i) {
        if (!server[id].Append(MakeTestEntries(i, 1, 1)).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(server.log->stats().writer_thread_turns, 0);
  EXPECT_GT(server.log->stats().rounds, 0);

  absl::Notification done;
  BASALT_ASSERT_OK(server["a"].AsyncAppend(MakeTestEntries(51, 1, 1), [&](const absl::Status& st) {
    BASALT_EXPECT_OK(st);
    done.Notify();
  }));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_GE(server.log->stats().writer_thread_turns, 1);
}

// ---- Truncation, replacement, reset ----

TEST(ServerLogTest, TruncateReplaceAndResetSurviveReopen) {
  MemoryEnv env;
  const LogOptions o = Options(2048);
  const std::vector<std::string> ids = {"trunc", "follower", "snap", "snap-empty"};
  std::map<std::string, GroupModel> m;
  {
    Server s(&env, o, ids);
    ASSERT_TRUE(s.opened());
    // Interleaved, so that every group has records in several segments.
    for (int i = 0; i < 10; ++i) {
      for (const std::string& id : ids) ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m[id], 4, 1));
    }
    ASSERT_GT(s.log->SegmentSeqs().size(), 4u);

    // Into the batch [21, 24], written segments ago.
    Log& trunc = s["trunc"];
    BASALT_ASSERT_OK(trunc.TruncateSuffix(23));
    m["trunc"].Truncate(23);
    EXPECT_EQ(trunc.LastIndex(), 22u);
    EXPECT_TRUE(absl::IsNotFound(trunc.Term(23).status()));
    ASSERT_NO_FATAL_FAILURE(AppendTo(trunc, &m["trunc"], 8, 2));
    BASALT_EXPECT_OK(trunc.TruncateSuffix(100));  // Nothing to drop.
    EXPECT_TRUE(absl::IsInvalidArgument(trunc.TruncateSuffix(0)));

    // A follower's conflicting entries replace its suffix, also one still queued.
    Log& follower = s["follower"];
    absl::Notification done[3];
    absl::Status status[3];
    auto callback = [&](int i) {
      return [&, i](const absl::Status& st) {
        status[i] = st;
        done[i].Notify();
      };
    };
    BASALT_ASSERT_OK(follower.AsyncAppend(MakeTestEntries(12, 6, 3), callback(0)));
    BASALT_ASSERT_OK(follower.AsyncAppend(MakeTestEntries(18, 5, 3), callback(1)));
    BASALT_ASSERT_OK(follower.AsyncAppend(MakeTestEntries(20, 2, 4), callback(2)));
    for (int i = 0; i < 3; ++i) {
      done[i].WaitForNotification();
      BASALT_EXPECT_OK(status[i]) << i;
    }
    m["follower"].Append(12, 6, 3);
    m["follower"].Append(18, 5, 3);
    m["follower"].Append(20, 2, 4);
    EXPECT_EQ(follower.LastIndex(), 21u);

    BASALT_ASSERT_OK(s["snap"].ResetToSnapshot(OpId{5, 100}));
    m["snap"].Reset(OpId{5, 100});
    EXPECT_EQ(s["snap"].FirstIndex(), 101u);
    EXPECT_EQ(s["snap"].LastIndex(), 100u);
    EXPECT_TRUE(absl::IsNotFound(s["snap"].Entries(40, 41, 100).status()));
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["snap"], &m["snap"], 3, 5));

    BASALT_ASSERT_OK(s["snap-empty"].ResetToSnapshot(OpId{7, 50}));
    m["snap-empty"].Reset(OpId{7, 50});
    for (const std::string& id : ids) {
      SCOPED_TRACE(id);
      ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id]));
    }
  }
  {
    Server s(&env, o, ids);
    ASSERT_TRUE(s.opened());
    for (const std::string& id : ids) {
      SCOPED_TRACE(id);
      ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id]));
    }
    // Truncating everything leaves an empty, appendable log; a reset one appends after it.
    BASALT_ASSERT_OK(s["trunc"].TruncateSuffix(1));
    m["trunc"].Truncate(1);
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["trunc"], &m["trunc"], 2, 7));
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["snap-empty"], &m["snap-empty"], 2, 7));
  }
  Server s(&env, o, ids, /*start=*/false);
  ASSERT_TRUE(s.opened());
  for (const std::string& id : ids) {
    SCOPED_TRACE(id);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id]));
  }
}

// ---- Collecting segments ----

TEST(ServerLogTest, GCDeletesOldSegmentsAndRetainedEntriesSurviveReopen) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(StrCat("seed ", seed));
  Random rng(seed);
  MemoryEnv env;
  const LogOptions o = Options(4096, /*force_fsync=*/false);
  const std::vector<std::string> ids = {"g1", "g2", "g3"};
  std::map<std::string, GroupModel> m;
  std::map<std::string, uint64_t> retained;  // The last GC's retain_from_index.
  size_t shrinks = 0;
  uint64_t created = 0;
  {
    Server s(&env, o, ids);
    ASSERT_TRUE(s.opened());
    for (int round = 1; round <= 80; ++round) {
      for (const std::string& id : ids) {
        ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m[id], 1 + rng.Uniform(4), 1 + round / 20));
      }
      if (round % 8 != 0) continue;
      const size_t before = s.log->SegmentSeqs().size();
      for (const std::string& id : ids) {
        SCOPED_TRACE(id);
        const uint64_t retain = m[id].last() - rng.Uniform(6);
        BASALT_ASSERT_OK(s[id].GC(retain));
        retained[id] = retain;
        EXPECT_LE(s[id].FirstIndex(), retain);
        ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id], retain));
      }
      const std::vector<uint64_t> seqs = s.log->SegmentSeqs();
      if (seqs.size() < before) ++shrinks;
      // The segments collected are gone from the directory, the others are there.
      EXPECT_EQ(SegmentFilesIn(&env), seqs);
    }
    const std::vector<uint64_t> seqs = s.log->SegmentSeqs();
    created = seqs.back();
    EXPECT_GT(seqs.front(), 1u);
    EXPECT_LT(seqs.size(), created / 3) << "segments " << seqs.front() << ".." << seqs.back();
  }
  EXPECT_GE(shrinks, 5u);
  Server s(&env, o, ids);
  ASSERT_TRUE(s.opened());
  EXPECT_EQ(s.log->SegmentSeqs().back(), created);
  for (const std::string& id : ids) {
    SCOPED_TRACE(id);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id], retained[id]));
    ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m[id], 2, 9));
    BASALT_ASSERT_OK(s[id].GC(m[id].last()));
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id], m[id].last()));
  }
}

// A group that stops writing pins the oldest segment; while the others keep writing and
// collecting, its entries get rewritten into the active segment, so the number of segments
// stays bounded, and a restart still finds them, after the same previous entry.
TEST(ServerLogTest, IdleGroupIsRewrittenSoSegmentsStayBounded) {
  MemoryEnv env;
  const LogOptions o = Options(4096, /*force_fsync=*/false);
  const std::vector<std::string> busy = {"busy-1", "busy-2"};
  std::map<std::string, GroupModel> m;
  size_t most = 0;
  {
    Server s(&env, o, {"busy-1", "busy-2", "idle-open"});
    ASSERT_TRUE(s.opened());
    // An idle group after a snapshot (its previous term is not 0), kept open...
    BASALT_ASSERT_OK(s["idle-open"].ResetToSnapshot(OpId{3, 100}));
    m["idle-open"].Reset(OpId{3, 100});
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["idle-open"], &m["idle-open"], 5, 4));
    // ... and one closed.
    {
      std::unique_ptr<Log> closed = OpenGroup(s.log.get(), "idle-closed");
      ASSERT_NE(closed, nullptr);
      ASSERT_NO_FATAL_FAILURE(AppendTo(*closed, &m["idle-closed"], 6, 2));
      ASSERT_NO_FATAL_FAILURE(AppendTo(*closed, &m["idle-closed"], 2, 3));
    }
    for (int round = 0; round < 200; ++round) {
      for (const std::string& id : busy) {
        ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m[id], 3, 1 + round / 50, 200));
        BASALT_ASSERT_OK(s[id].GC(m[id].last()));
      }
      const size_t n = s.log->SegmentSeqs().size();
      most = std::max(most, n);
      // A collection that leaves more than kRewriteAboveSegments rewrites the idle groups and
      // deletes what they pinned; one more if the two idle groups pinned different segments.
      ASSERT_LE(n, ServerLog::kRewriteAboveSegments + 1) << "round " << round;
    }
    const std::vector<uint64_t> seqs = s.log->SegmentSeqs();
    EXPECT_GT(seqs.front(), 1u);
    EXPECT_GT(seqs.back(), 8 * (ServerLog::kRewriteAboveSegments + 1));
    EXPECT_EQ(SegmentFilesIn(&env), seqs);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["idle-open"], m["idle-open"]));
  }
  LOG(INFO) << "at most " << most << " segments";
  Server s(&env, o, {"busy-1", "busy-2", "idle-open", "idle-closed"});
  ASSERT_TRUE(s.opened());
  for (const std::string id : {"idle-open", "idle-closed"}) {
    SCOPED_TRACE(id);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id]));
    ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m[id], 1, m[id].last_term()));
  }
  EXPECT_EQ(*s["idle-open"].Term(100), 3u);
  for (const std::string& id : busy) {
    SCOPED_TRACE(id);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id], m[id].last()));
  }
}

// ---- Dropping and importing groups ----

TEST(ServerLogTest, DropGroup) {
  MemoryEnv env;
  const LogOptions o = Options(2048);
  const std::vector<std::string> kept = {"keep-1", "keep-2"};
  std::map<std::string, GroupModel> m;
  {
    Server s(&env, o, {"keep-1", "dropped", "keep-2"});
    ASSERT_TRUE(s.opened());
    for (int i = 0; i < 8; ++i) {
      for (const auto& [id, log] : s.groups) ASSERT_NO_FATAL_FAILURE(AppendTo(*log, &m[id], 3, 2));
    }
    absl::Status open = s.log->DropGroup("keep-1");
    EXPECT_TRUE(absl::IsFailedPrecondition(open)) << open;
    s.groups.erase("dropped");
    EXPECT_TRUE(s.log->HasGroup("dropped"));  // Closed, with its entries.
    BASALT_ASSERT_OK(s.log->DropGroup("dropped"));
    EXPECT_FALSE(s.log->HasGroup("dropped"));
    EXPECT_EQ(s.log->GroupIds(), kept);
    BASALT_EXPECT_OK(s.log->DropGroup("never-there"));
    for (const std::string& id : kept) ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m[id], 2, 3));
  }
  {
    Server s(&env, o, kept);
    ASSERT_TRUE(s.opened());
    EXPECT_EQ(s.log->GroupIds(), kept);
    EXPECT_FALSE(s.log->HasGroup("dropped"));
    for (const std::string& id : kept) {
      SCOPED_TRACE(id);
      ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id]));
    }
    // A group of the same id starts over, without the dropped entries.
    std::unique_ptr<Log> again = OpenGroup(s.log.get(), "dropped");
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->FirstIndex(), 1u);
    EXPECT_EQ(again->LastIndex(), 0u);
    EXPECT_EQ(*again->Term(0), 0u);
    m["dropped"] = GroupModel();
    ASSERT_NO_FATAL_FAILURE(AppendTo(*again, &m["dropped"], 2, 9));
  }
  Server s(&env, o, {"keep-1", "dropped", "keep-2"});
  ASSERT_TRUE(s.opened());
  for (const auto& [id, log] : s.groups) {
    SCOPED_TRACE(id);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(*log, m[id]));
  }
  s.groups.erase("dropped");
  s.groups.clear();
  s.log->Shutdown();
  EXPECT_TRUE(absl::IsFailedPrecondition(s.log->DropGroup("dropped")));
}

// DropGroup and ImportGroup work before Start (they run on the calling thread when nobody else
// writes), and what they did survives a reopen.
TEST(ServerLogTest, DropAndImportWorkBeforeStart) {
  MemoryEnv env;
  {
    Server s(&env, Options(), {"a"});
    ASSERT_TRUE(s.opened());
    BASALT_ASSERT_OK(s["a"].Append(MakeTestEntries(1, 2, 1)));
  }
  std::unique_ptr<ServerLog> server = OpenServer(&env, Options(), /*start=*/false);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(server->HasGroup("a"));
  BASALT_ASSERT_OK(server->DropGroup("a"));
  LogOptions own = Options();
  own.log_id = "b";
  absl::StatusOr<std::unique_ptr<Log>> old = Log::Open(&env, "/own/b", own);
  BASALT_ASSERT_OK(old);
  BASALT_ASSERT_OK((*old)->Start());
  BASALT_ASSERT_OK((*old)->Append(MakeTestEntries(1, 3, 2)));
  BASALT_ASSERT_OK(server->ImportGroup("b", **old));
  server.reset();
  server = OpenServer(&env, Options(), /*start=*/false);
  ASSERT_NE(server, nullptr);
  EXPECT_FALSE(server->HasGroup("a"));
  ASSERT_TRUE(server->HasGroup("b"));
  absl::StatusOr<std::unique_ptr<Log>> b = server->OpenGroup("b");
  BASALT_ASSERT_OK(b);
  EXPECT_EQ((*b)->LastOpId(), (OpId{2, 3}));
}

TEST(ServerLogTest, ImportGroup) {
  MemoryEnv env;
  LogOptions own = Options(1024);
  // A group's own log that collected its start, so its first index is not 1.
  own.log_id = "tablet-a";
  absl::StatusOr<std::unique_ptr<Log>> old_a = Log::Open(&env, "/own/a", own);
  BASALT_ASSERT_OK(old_a);
  BASALT_ASSERT_OK((*old_a)->Start());
  GroupModel a;
  for (int i = 0; i < 20; ++i) ASSERT_NO_FATAL_FAILURE(AppendTo(**old_a, &a, 3, 1 + i / 7));
  BASALT_ASSERT_OK((*old_a)->GC(31));
  ASSERT_GT((*old_a)->FirstIndex(), 1u);
  ASSERT_LE((*old_a)->FirstIndex(), 31u);
  // From here on, the model is what the old log holds.
  {
    GroupModel from(a);
    from.first = (*old_a)->FirstIndex();
    from.prev_term = a.TermAt(from.first - 1);
    from.terms.assign(a.terms.begin() + (from.first - 1), a.terms.end());
    a = from;
  }
  ASSERT_NE(a.prev_term, a.last_term());  // Term(FirstIndex() - 1) is not just any term.
  ASSERT_NO_FATAL_FAILURE(ExpectGroup(**old_a, a));
  // One reset to a snapshot, with no entries after it.
  own.log_id = "tablet-b";
  absl::StatusOr<std::unique_ptr<Log>> old_b = Log::Open(&env, "/own/b", own);
  BASALT_ASSERT_OK(old_b);
  BASALT_ASSERT_OK((*old_b)->Start());
  BASALT_ASSERT_OK((*old_b)->Append(MakeTestEntries(1, 10, 2)));
  BASALT_ASSERT_OK((*old_b)->ResetToSnapshot(OpId{6, 500}));
  GroupModel b;
  b.Reset(OpId{6, 500});
  ASSERT_NO_FATAL_FAILURE(ExpectGroup(**old_b, b));

  const LogOptions o = Options(2048);
  {
    std::unique_ptr<ServerLog> server = OpenServer(&env, o);
    ASSERT_NE(server, nullptr);
    // The server log held other entries of tablet-a already: the import replaces them.
    {
      std::unique_ptr<Log> stale = OpenGroup(server.get(), "tablet-a");
      ASSERT_NE(stale, nullptr);
      BASALT_ASSERT_OK(stale->Append(MakeTestEntries(1, 40, 9)));
    }
    BASALT_ASSERT_OK(server->ImportGroup("tablet-a", **old_a));
    BASALT_ASSERT_OK(server->ImportGroup("tablet-b", **old_b));
    {
      std::unique_ptr<Log> open = OpenGroup(server.get(), "tablet-c");
      ASSERT_NE(open, nullptr);
      absl::Status s = server->ImportGroup("tablet-c", **old_a);
      EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    }
    (*old_a)->Shutdown();
    (*old_b)->Shutdown();
    std::unique_ptr<Log> imported = OpenGroup(server.get(), "tablet-a");
    ASSERT_NE(imported, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(*imported, a));
  }
  for (int reopen = 0; reopen < 2; ++reopen) {
    SCOPED_TRACE(StrCat("reopen ", reopen));
    Server s(&env, o, {"tablet-a", "tablet-b"});
    ASSERT_TRUE(s.opened());
    EXPECT_EQ(s.log->GroupIds(), (std::vector<std::string>{"tablet-a", "tablet-b"}));
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["tablet-a"], a));
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["tablet-b"], b));
    EXPECT_EQ(*s["tablet-b"].Term(500), 6u);
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["tablet-a"], &a, 2, a.last_term()));
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["tablet-b"], &b, 2, 6));
  }
}

// ---- Recovery of damaged directories ----

// A server log of three groups over several segments, and where its final record, an append of
// g1, starts in the last segment.
struct BuiltServerLog {
  std::map<std::string, std::string> files;
  std::string last_name;
  uint64_t final_record_offset = 0;
  std::map<std::string, GroupModel> before_final;  // The groups without the final record.
  std::map<std::string, GroupModel> models;        // With it.
};

const std::vector<std::string>& BuiltIds() {
  static const auto* const ids = new std::vector<std::string>{"g1", "g2", "g3"};
  return *ids;
}

BuiltServerLog BuildServerLog() {
  MemoryEnv env;
  BuiltServerLog b;
  {
    Server s(&env, Options(), BuiltIds());
    EXPECT_TRUE(s.opened());
    if (!s.opened()) return b;
    // Until there are four segments and the last one holds a few records.
    for (int i = 0;
         s.log->SegmentSeqs().size() < 4 ||
         *env.GetFileSize(JoinPath(kDir, SegmentFileName(s.log->SegmentSeqs().back()))) < 1500;
         ++i) {
      const std::string& id = BuiltIds()[i % 3];
      EXPECT_NO_FATAL_FAILURE(AppendTo(s[id], &b.models[id], 3, 1));
    }
    const uint64_t seq = s.log->SegmentSeqs().back();
    b.last_name = SegmentFileName(seq);
    b.final_record_offset = *env.GetFileSize(JoinPath(kDir, b.last_name));
    b.before_final = b.models;
    EXPECT_NO_FATAL_FAILURE(AppendTo(s["g1"], &b.models["g1"], 3, 2));
    EXPECT_EQ(s.log->SegmentSeqs().back(), seq) << "the final record started a segment";
  }
  b.files = Snapshot(&env);
  EXPECT_GE(b.files.size(), 4u);
  // The last segment holds records before the final one.
  EXPECT_GE(FramesOf(b.files[b.last_name]).size(), 3u);
  return b;
}

// Opens the server log in `env` and checks every group against `models`.
void ExpectServerLog(Env* env, const std::map<std::string, GroupModel>& models) {
  Server s(env, Options(), BuiltIds(), /*start=*/false);
  ASSERT_TRUE(s.opened());
  for (const std::string& id : BuiltIds()) {
    SCOPED_TRACE(id);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], models.at(id)));
  }
}

TEST(ServerLogRecoveryTest, TornFinalRecordIsCutAtEveryOffset) {
  const BuiltServerLog b = BuildServerLog();
  const std::string& last = b.files.at(b.last_name);
  ASSERT_LT(b.final_record_offset, last.size());
  for (size_t cut = b.final_record_offset; cut < last.size(); ++cut) {
    SCOPED_TRACE(StrCat("cut at ", cut));
    auto files = b.files;
    files[b.last_name].resize(cut);
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    std::map<std::string, GroupModel> models = b.before_final;
    {
      Server s(env.get(), Options(), BuiltIds());
      ASSERT_TRUE(s.opened());
      // The tail is cut off the file, so what is appended next follows the last record.
      EXPECT_EQ(*env->GetFileSize(JoinPath(kDir, b.last_name)), b.final_record_offset);
      for (const std::string& id : BuiltIds()) {
        SCOPED_TRACE(id);
        ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], models[id]));
      }
      ASSERT_NO_FATAL_FAILURE(AppendTo(s["g1"], &models["g1"], 2, 5));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectServerLog(env.get(), models));
  }
}

TEST(ServerLogRecoveryTest, GarbageOrZerosAfterOrInTheFinalRecordAreATornTail) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(StrCat("seed ", seed));
  Random rng(seed);
  const BuiltServerLog b = BuildServerLog();
  for (size_t len : {1, 5, 11, 12, 13, 40, 300}) {
    SCOPED_TRACE(StrCat(len, " bytes of garbage"));
    auto files = b.files;
    files[b.last_name] += rng.Bytes(len);
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    ASSERT_NO_FATAL_FAILURE(ExpectServerLog(env.get(), b.models));
    EXPECT_EQ(*env->GetFileSize(JoinPath(kDir, b.last_name)), b.files.at(b.last_name).size());
  }
  const std::string& last = b.files.at(b.last_name);
  for (size_t pos = b.final_record_offset; pos < last.size(); ++pos) {
    for (bool zeros : {false, true}) {
      SCOPED_TRACE(StrCat(zeros ? "zeros from " : "a flipped byte at ", pos));
      auto files = b.files;
      std::string& f = files[b.last_name];
      if (zeros) {
        std::fill(f.begin() + pos, f.end(), '\0');
      } else {
        f[pos] ^= 0x40;
      }
      std::unique_ptr<MemoryEnv> env = EnvWith(files);
      ASSERT_NO_FATAL_FAILURE(ExpectServerLog(env.get(), b.before_final));
    }
  }
}

TEST(ServerLogRecoveryTest, DamagedRecordFollowedByAValidOneIsDataLoss) {
  const BuiltServerLog b = BuildServerLog();
  const std::vector<std::pair<uint64_t, uint32_t>> frames = FramesOf(b.files.at(b.last_name));
  ASSERT_GE(frames.size(), 2u);
  // Every byte of the first record of the last segment, frame header included.
  const auto [offset, size] = frames.front();
  for (uint64_t pos = offset; pos < offset + size; ++pos) {
    auto files = b.files;
    files[b.last_name][pos] ^= 0x01;
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    absl::StatusOr<std::unique_ptr<ServerLog>> s = ServerLog::Open(env.get(), kDir, Options());
    ASSERT_TRUE(absl::IsDataLoss(s.status())) << pos << ": " << s.status();
    EXPECT_NE(s.status().message().find(b.last_name), std::string_view::npos) << s.status();
  }
}

TEST(ServerLogRecoveryTest, DamageInASegmentBeforeTheLastIsDataLoss) {
  const BuiltServerLog b = BuildServerLog();
  const std::string first = SegmentFileName(1);
  const std::string& data = b.files.at(first);
  for (size_t pos = 0; pos < data.size(); pos += 7) {
    auto files = b.files;
    files[first][pos] ^= 0x80;
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    absl::Status s = ServerLog::Open(env.get(), kDir, Options()).status();
    EXPECT_TRUE(absl::IsDataLoss(s)) << pos << ": " << s;
    EXPECT_NE(s.message().find(first), std::string_view::npos) << s;
  }
  auto files = b.files;
  files[first].resize(data.size() - 1);
  std::unique_ptr<MemoryEnv> env = EnvWith(files);
  absl::Status s = ServerLog::Open(env.get(), kDir, Options()).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
}

TEST(ServerLogRecoveryTest, MissingSegmentIsDataLoss) {
  const BuiltServerLog b = BuildServerLog();
  auto files = b.files;
  ASSERT_EQ(files.erase(SegmentFileName(2)), 1u);
  std::unique_ptr<MemoryEnv> env = EnvWith(files);
  absl::Status s = ServerLog::Open(env.get(), kDir, Options()).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find(SegmentFileName(2)), std::string_view::npos) << s;
}

TEST(ServerLogRecoveryTest, HalfCreatedLastSegmentAndTempFilesAreRemoved) {
  const BuiltServerLog b = BuildServerLog();
  uint64_t seq;
  ASSERT_TRUE(ParseSegmentFileName(b.last_name, &seq));
  SegmentHeader h;
  h.flags = kSegmentFlagServerLog;
  h.seq = seq + 1;
  const std::string header = EncodeSegmentHeader(h);
  for (size_t len : {size_t{0}, size_t{5}, header.size() - 1}) {
    SCOPED_TRACE(StrCat(len, " bytes of the header"));
    auto files = b.files;
    files[SegmentFileName(seq + 1)] = header.substr(0, len);
    files[b.last_name + ".tmp"] = "partial rewrite";
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    ASSERT_NO_FATAL_FAILURE(ExpectServerLog(env.get(), b.models));
    EXPECT_FALSE(env->FileExists(JoinPath(kDir, SegmentFileName(seq + 1))));
    EXPECT_FALSE(env->FileExists(JoinPath(kDir, b.last_name + ".tmp")));
  }
}

TEST(ServerLogRecoveryTest, SegmentOfAGroupsOwnLogIsRefused) {
  const BuiltServerLog b = BuildServerLog();
  MemoryEnv own_env;
  LogOptions own = Options();
  own.log_id = "g1";
  {
    absl::StatusOr<std::unique_ptr<Log>> log = Log::Open(&own_env, "/own", own);
    BASALT_ASSERT_OK(log);
    BASALT_ASSERT_OK((*log)->Start());
    BASALT_ASSERT_OK((*log)->Append(MakeTestEntries(1, 5, 1)));
  }
  std::string own_segment;
  BASALT_ASSERT_OK(ReadFileToString(&own_env, "/own/" + SegmentFileName(1), &own_segment));
  uint64_t last_seq;
  ASSERT_TRUE(ParseSegmentFileName(b.last_name, &last_seq));
  // Alone, after the server log's segments, or in place of its first one.
  const std::vector<std::map<std::string, std::string>> cases = {
      {{SegmentFileName(1), own_segment}},
      [&] {
        auto files = b.files;
        files[SegmentFileName(last_seq + 1)] = own_segment;
        return files;
      }(),
      [&] {
        auto files = b.files;
        files[SegmentFileName(1)] = own_segment;
        return files;
      }(),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::unique_ptr<MemoryEnv> env = EnvWith(cases[i]);
    absl::Status s = ServerLog::Open(env.get(), kDir, Options()).status();
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << "case " << i << ": " << s;
  }
}

// The writer's round holds the records of every group that queued one (group commit). A crash
// that cuts such a round anywhere leaves a torn tail: the whole round goes, whatever the cut
// leaves whole of its records, and everything before it stays.
TEST(ServerLogRecoveryTest, TornRoundOfSeveralGroupsIsCutAtEveryOffset) {
  MemoryEnv build_env;
  std::map<std::string, GroupModel> before;  // Without the last round.
  uint64_t round_offset = 0;
  std::string last_name;
  {
    Server s(&build_env, Options(1 << 20), BuiltIds());
    ASSERT_TRUE(s.opened());
    for (const std::string& id : BuiltIds()) {
      ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &before[id], 3, 1));
    }
    last_name = SegmentFileName(s.log->SegmentSeqs().back());
    // The callback of g1's batch holds the writer until the others have queued theirs, which then
    // go out in one round.
    absl::Notification holding;
    absl::Notification release;
    BASALT_ASSERT_OK(s["g1"].AsyncAppend(MakeTestEntries(before["g1"].next(), 1, 1),
                                         [&](const absl::Status& st) {
                                           BASALT_EXPECT_OK(st);
                                           holding.Notify();
                                           release.WaitForNotification();
                                         }));
    holding.WaitForNotification();
    before["g1"].Append(before["g1"].next(), 1, 1);
    round_offset = *build_env.GetFileSize(JoinPath(kDir, last_name));
    absl::BlockingCounter done(3);
    for (const std::string& id : BuiltIds()) {
      BASALT_ASSERT_OK(
          s[id].AsyncAppend(MakeTestEntries(before[id].next(), 2, 2), [&](const absl::Status& st) {
            BASALT_EXPECT_OK(st);
            done.DecrementCount();
          }));
    }
    release.Notify();
    done.Wait();
  }
  const std::map<std::string, std::string> files = Snapshot(&build_env);
  const std::string& last = files.at(last_name);
  ASSERT_EQ(FramesOf(last).back().first, round_offset) << "the appends took more than one round";
  {
    std::map<std::string, GroupModel> all = before;
    for (const std::string& id : BuiltIds()) all[id].Append(all[id].next(), 2, 2);
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    ASSERT_NO_FATAL_FAILURE(ExpectServerLog(env.get(), all));
  }
  for (size_t cut = round_offset; cut < last.size(); ++cut) {
    SCOPED_TRACE(StrCat("cut at ", cut, " of the round [", round_offset, ", ", last.size(), ")"));
    auto cut_files = files;
    cut_files[last_name].resize(cut);
    std::unique_ptr<MemoryEnv> env = EnvWith(cut_files);
    ASSERT_NO_FATAL_FAILURE(ExpectServerLog(env.get(), before));
  }
}

// ---- Records whose checksums are valid but whose contents are not ----

std::string Batch(uint64_t first, uint32_t count, const std::vector<LogEntry>& entries) {
  std::string out;
  PutVarint64(&out, first);
  PutVarint32(&out, count);
  for (const LogEntry& e : entries) AppendEncodedEntry(e, &out);
  return out;
}

std::string Batch(const std::vector<LogEntry>& entries) {
  return Batch(entries.front().index, static_cast<uint32_t>(entries.size()), entries);
}

// [u8 kind][varint32 group id length][group id][varint64 prev term][batch]
std::string AppendPayload(uint8_t kind, std::string_view group, uint64_t prev_term,
                          std::string_view batch) {
  std::string out(1, static_cast<char>(kind));
  PutLengthPrefixed(&out, group);
  PutVarint64(&out, prev_term);
  out.append(batch);
  return out;
}

std::string RecordPayload(RecordKind kind, std::string_view group,
                          const std::vector<uint64_t>& values) {
  std::string out(1, static_cast<char>(kind));
  PutLengthPrefixed(&out, group);
  for (uint64_t v : values) PutVarint64(&out, v);
  return out;
}

// A round of the writer: one frame whose payload is the frames of its records (log_segment.h).
std::string Round(const std::vector<std::string>& payloads) {
  std::string records;
  for (const std::string& p : payloads) records += FrameBuilder::FrameOf(p);
  return FrameBuilder::FrameOf(records);
}

TEST(ServerLogRecoveryTest, RecordPayloadsMatchTheEncoders) {
  const std::vector<LogEntry> entries = MakeTestEntries(7, 3, 2);
  std::string encoded;
  for (const LogEntry& e : entries) AppendEncodedEntry(e, &encoded);
  std::string frame = "x";  // Appended after what *dst holds.
  AppendAppendRecordFrame("g1", 1, 7, 3, encoded, &frame);
  const std::string payload = AppendPayload(1, "g1", 1, Batch(entries));
  EXPECT_EQ(frame, "x" + FrameBuilder::FrameOf(payload));
  ServerRecord r;
  BASALT_ASSERT_OK(DecodeServerRecord(payload, &r));
  EXPECT_EQ(r.kind, RecordKind::kAppend);
  EXPECT_EQ(r.group, "g1");
  EXPECT_EQ(r.prev_term, 1u);
  EXPECT_EQ(r.batch, Batch(entries));
  ServerRecord reset;
  reset.kind = RecordKind::kReset;
  reset.group = "g2";
  reset.index = 300;
  reset.term = 4;
  EXPECT_EQ(EncodeRecordFrame(reset),
            FrameBuilder::FrameOf(RecordPayload(RecordKind::kReset, "g2", {300, 4})));
  ServerRecord truncate;
  truncate.kind = RecordKind::kTruncate;
  truncate.group = "g3";
  truncate.index = 12;
  EXPECT_EQ(EncodeRecordFrame(truncate),
            FrameBuilder::FrameOf(RecordPayload(RecordKind::kTruncate, "g3", {12})));
  ServerRecord drop;
  drop.kind = RecordKind::kDrop;
  drop.group = "g4";
  EXPECT_EQ(EncodeRecordFrame(drop),
            FrameBuilder::FrameOf(RecordPayload(RecordKind::kDrop, "g4", {})));
}

// Each field of a record, made wrong inside a frame with valid checksums, appended to the last
// segment (alone at its end, or followed by a valid record): the decoder or the replay must
// catch it, with DATA_LOSS naming the file, never a crash and never a log that accepts it.
TEST(ServerLogRecoveryTest, MalformedRecordsWithValidChecksumsAreDataLoss) {
  const BuiltServerLog b = BuildServerLog();
  const GroupModel& g1 = b.models.at("g1");
  const GroupModel& g2 = b.models.at("g2");
  const uint64_t n = g1.next();
  const uint64_t t = g1.last_term();
  ASSERT_GT(n, g2.next());  // g1's next entries would leave a gap in g2.
  const std::vector<LogEntry> next3 = MakeTestEntries(n, 3, t);
  const std::string batch = Batch(next3);
  const std::string good = AppendPayload(1, "g1", t, batch);

  // The harness accepts the valid record: g1 gets three more entries.
  {
    auto files = b.files;
    files[b.last_name] += Round({good});
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    auto models = b.models;
    models["g1"].Append(n, 3, t);
    ASSERT_NO_FATAL_FAILURE(ExpectServerLog(env.get(), models));
  }

  std::vector<std::pair<std::string, std::vector<std::string>>> cases;
  auto add = [&](std::string name, std::string payload) {
    cases.push_back({std::move(name), {std::move(payload)}});
  };
  add("empty payload", "");
  // The kind byte.
  for (uint8_t kind : {0, 5, 0x7f, 0xff}) {
    add(StrCat("kind ", kind), AppendPayload(kind, "g1", t, batch));
  }
  // An append's body read as a truncation, a reset or a drop has bytes left over.
  for (uint8_t kind : {2, 3, 4}) {
    add(StrCat("append body under kind ", kind), AppendPayload(kind, "g1", t, batch));
  }
  // The group id's length.
  {
    std::string p = good;
    p[1] = 0;
    add("group id length 0", p);
    p = good;
    p[1] = 3;  // Swallows the previous term.
    add("group id length one too long", p);
    p = good;
    p[1] = 1;
    add("group id length one too short", p);
    p = std::string(1, 1);
    PutVarint32(&p, static_cast<uint32_t>(good.size()));
    p += good.substr(2);
    add("group id length past the record", p);
    add("group id of 256 bytes", AppendPayload(1, std::string(kMaxLogIdBytes + 1, 'g'), t, batch));
    add("group id length unterminated", std::string("\x01\x80", 2));
  }
  // The group id: another group's, whose log these entries do not continue.
  add("group id of another group", AppendPayload(1, "g2", t, batch));
  // The previous term.
  add("previous term not the log's",
      AppendPayload(1, "g1", t + 1, Batch(MakeTestEntries(n, 3, t + 1))));
  add("previous term above the entries' terms (a new group)", AppendPayload(1, "g9", t + 1, batch));
  add("previous term missing", RecordPayload(RecordKind::kAppend, "g1", {}));
  add("previous term unterminated", RecordPayload(RecordKind::kAppend, "g1", {}) + "\xff\xff");
  // The batch.
  add("no batch", RecordPayload(RecordKind::kAppend, "g1", {t}));
  add("batch first index 0", AppendPayload(1, "g1", t, Batch(0, 3, next3)));
  add("batch count 0", AppendPayload(1, "g1", t, Batch(n, 0, next3)));
  add("batch count huge", AppendPayload(1, "g1", t, Batch(n, 1u << 30, next3)));
  add("batch count above its entries", AppendPayload(1, "g1", t, Batch(n, 4, next3)));
  add("batch count below its entries", AppendPayload(1, "g1", t, Batch(n, 2, next3)));
  add("batch first index overflows",
      AppendPayload(1, "g9", t, Batch(UINT64_MAX, 3, MakeTestEntries(1, 3, t))));
  add("batch after a gap", AppendPayload(1, "g1", t, Batch(n + 5, 3, next3)));
  {
    std::vector<LogEntry> decreasing = MakeTestEntries(n, 3, t + 2);
    decreasing[2].term = t + 1;
    add("batch with decreasing terms", AppendPayload(1, "g1", t, Batch(decreasing)));
    std::string p = AppendPayload(1, "g1", t, batch);
    // The type byte of the first entry: after the record header, the batch header and the term.
    const size_t type_at = good.size() - batch.size() + 2 + 1;
    ASSERT_LE(static_cast<uint8_t>(p[type_at]), 2) << "not a type byte";
    p[type_at] = 7;
    add("entry of unknown type", p);
    add("batch truncated", AppendPayload(1, "g1", t, batch.substr(0, batch.size() - 3)));
    add("batch with a byte left over", AppendPayload(1, "g1", t, batch + "x"));
  }
  // The other kinds.
  add("truncation at index 0", RecordPayload(RecordKind::kTruncate, "g1", {0}));
  add("truncation without an index", RecordPayload(RecordKind::kTruncate, "g1", {}));
  add("truncation with a byte left over", RecordPayload(RecordKind::kTruncate, "g1", {5}) + "x");
  add("reset without a term", RecordPayload(RecordKind::kReset, "g1", {100}));
  add("reset with a byte left over", RecordPayload(RecordKind::kReset, "g1", {100, 3}) + "x");
  add("drop with a byte left over", RecordPayload(RecordKind::kDrop, "g1", {}) + "x");
  cases.push_back({"truncation below the first index after a reset",
                   {RecordPayload(RecordKind::kReset, "g3", {100, 3}),
                    RecordPayload(RecordKind::kTruncate, "g3", {50})}});
  // A malformed record after a valid one in the same round.
  cases.push_back({"malformed second record of a round", {good, AppendPayload(0, "g1", t, batch)}});

  for (const auto& [name, payloads] : cases) {
    for (bool valid_after : {false, true}) {
      SCOPED_TRACE(StrCat(name, valid_after ? ", followed by a valid record" : ""));
      auto files = b.files;
      std::string& last = files[b.last_name];
      last += Round(payloads);
      if (valid_after) {
        last += Round(
            {AppendPayload(1, "g2", g2.last_term(), Batch(MakeTestEntries(g2.next(), 1, 9)))});
      }
      std::unique_ptr<MemoryEnv> env = EnvWith(files);
      absl::Status s = ServerLog::Open(env.get(), kDir, Options()).status();
      ASSERT_TRUE(absl::IsDataLoss(s)) << s;
      EXPECT_NE(s.message().find(b.last_name), std::string_view::npos) << s;
      EXPECT_NE(s.message().find("offset"), std::string_view::npos) << s;
    }
  }
}

// A round whose checksum is valid but whose records are not whole, valid frames.
TEST(ServerLogRecoveryTest, MalformedRoundsWithValidChecksumsAreDataLoss) {
  const BuiltServerLog b = BuildServerLog();
  const GroupModel& g1 = b.models.at("g1");
  const std::string record = FrameBuilder::FrameOf(
      AppendPayload(1, "g1", g1.last_term(), Batch(MakeTestEntries(g1.next(), 2, g1.last_term()))));
  std::string bad_crc = record;
  bad_crc[kFrameHeaderSize] ^= 1;  // The record's payload, under its own crc.
  const std::vector<std::pair<std::string, std::string>> rounds = {
      {"a record failing its crc", bad_crc},
      {"half a record after a whole one", record + record.substr(0, record.size() / 2)},
      {"a record header cut short", record.substr(0, kFrameHeaderSize - 1)},
      {"bytes that are no frame", std::string(20, '\x7f')},
  };
  for (const auto& [name, payload] : rounds) {
    SCOPED_TRACE(name);
    auto files = b.files;
    files[b.last_name] += FrameBuilder::FrameOf(payload);
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    absl::Status s = ServerLog::Open(env.get(), kDir, Options()).status();
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
    EXPECT_NE(s.message().find(b.last_name), std::string_view::npos) << s;
  }
}

// A reset record whose index is the largest one would make the group's first index overflow to
// 0 (and its last index UINT64_MAX): impossible for a log, so corrupt bytes, DATA_LOSS.
TEST(ServerLogRecoveryTest, ResetRecordToTheLargestIndexIsDataLoss) {
  const BuiltServerLog b = BuildServerLog();
  for (const std::string group : {"g1", "g9"}) {
    SCOPED_TRACE(group);
    auto files = b.files;
    files[b.last_name] += Round({RecordPayload(RecordKind::kReset, group, {UINT64_MAX, 3})});
    std::unique_ptr<MemoryEnv> env = EnvWith(files);
    absl::StatusOr<std::unique_ptr<ServerLog>> s = ServerLog::Open(env.get(), kDir, Options());
    EXPECT_TRUE(absl::IsDataLoss(s.status())) << s.status();
    if (!s.ok()) continue;
    std::unique_ptr<Log> log = OpenGroup(s->get(), group, /*start=*/false);
    ASSERT_NE(log, nullptr);
    ADD_FAILURE() << "the group opens with first index " << log->FirstIndex() << " and last index "
                  << log->LastIndex();
  }
}

// ---- Recovery after collecting segments ----

// A group truncates (or overwrites) entries it wrote segments ago, then collects what is below
// its new entries: its oldest segment goes, while a later one that another group still needs
// keeps the group's older, since-truncated record. A restart must replay that to the state the
// group had, not refuse the directory.
void TruncateAfterTheOldestSegmentWasCollectedAndReopen(bool explicit_truncate) {
  SCOPED_TRACE(explicit_truncate ? "TruncateSuffix then Append" : "an overlapping Append");
  MemoryEnv env;
  const LogOptions o = Options(4096, /*force_fsync=*/false);
  GroupModel a;
  GroupModel b;
  {
    Server s(&env, o, {"a", "b"});
    ASSERT_TRUE(s.opened());
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["a"], &a, 3, 1, 1000));  // Segment 1.
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["a"], &a, 3, 1, 1000));  // Segment 2.
    ASSERT_EQ(s.log->SegmentSeqs(), (std::vector<uint64_t>{1, 2}));
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["b"], &b, 1, 1));  // b pins segment 2.
    if (explicit_truncate) {
      BASALT_ASSERT_OK(s["a"].TruncateSuffix(2));
      a.Truncate(2);
    }
    BASALT_ASSERT_OK(s["a"].Append(MakeTestEntries(2, 2, 2)));
    a.Append(2, 2, 2);
    ASSERT_EQ(s.log->SegmentSeqs(), (std::vector<uint64_t>{1, 2}));
    // a's entry 1 (segment 1) is collected: a and b need only segment 2.
    BASALT_ASSERT_OK(s["a"].GC(3));
    EXPECT_EQ(s.log->SegmentSeqs(), std::vector<uint64_t>{2});
    EXPECT_FALSE(env.FileExists(JoinPath(kDir, SegmentFileName(1))));
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["a"], a, 3));
  }
  Server s(&env, o, {"a", "b"});
  ASSERT_TRUE(s.opened()) << "the server log does not reopen";
  ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["a"], a, 3));
  ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["b"], b));
}

TEST(ServerLogTest, TruncationAfterTheOldestSegmentWasCollectedSurvivesReopen) {
  TruncateAfterTheOldestSegmentWasCollectedAndReopen(true);
  TruncateAfterTheOldestSegmentWasCollectedAndReopen(false);
}

// A batch whose tail was truncated and replaced stays in its record; reading across it must
// return the entries that replaced the tail, as Term() says, not the old ones.
TEST(ServerLogTest, EntriesAfterAPartialTruncationAreTheNewOnes) {
  MemoryEnv env;
  GroupModel m;
  {
    Server s(&env, Options(), {"a"});
    ASSERT_TRUE(s.opened());
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["a"], &m, 4, 1));  // One batch [1, 4].
    BASALT_ASSERT_OK(s["a"].TruncateSuffix(3));
    m.Truncate(3);
    ASSERT_NO_FATAL_FAILURE(AppendTo(s["a"], &m, 2, 2));  // [3, 4] again, in term 2.
    absl::StatusOr<std::vector<LogEntry>> all = s["a"].Entries(1, 5, UINT64_MAX);
    BASALT_ASSERT_OK(all);
    ASSERT_EQ(all->size(), 4u);
    for (const LogEntry& e : *all) {
      EXPECT_EQ(e.term, *s["a"].Term(e.index)) << "entry " << e.index;
    }
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["a"], m));
    // A follower's overlapping append: [4, 5] in term 3.
    BASALT_ASSERT_OK(s["a"].Append(MakeTestEntries(4, 2, 3)));
    m.Append(4, 2, 3);
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["a"], m));
  }
  Server s(&env, Options(), {"a"});
  ASSERT_TRUE(s.opened());
  ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["a"], m));
}

// ---- Faults ----

TEST(ServerLogFaultTest, AWriteErrorFailsEveryGroupAndAckedEntriesSurvive) {
  using OpKind = FaultInjectionEnv::OpKind;
  for (OpKind kind : {OpKind::kAppend, OpKind::kSync, OpKind::kCreate, OpKind::kSyncDir}) {
    for (int after = 0; after < 4; ++after) {
      SCOPED_TRACE(StrCat(OpKindName(kind), " fails after ", after));
      MemoryEnv mem;
      FaultInjectionEnv env(&mem);
      const LogOptions o = Options(600);
      std::map<std::string, GroupModel> m;
      {
        Server s(&env, o, BuiltIds());
        ASSERT_TRUE(s.opened());
        env.FailAfter(after, kind);
        absl::Status error;
        for (int i = 0; i < 60 && error.ok(); ++i) {
          const std::string& id = BuiltIds()[i % 3];
          error = s[id].Append(MakeTestEntries(m[id].next(), 2, 1));
          if (error.ok()) m[id].Append(m[id].next(), 2, 1);
        }
        ASSERT_FALSE(error.ok()) << "nothing failed";
        EXPECT_NE(error.message().find("injected"), std::string_view::npos) << error;
        for (const std::string& id : BuiltIds()) {
          SCOPED_TRACE(id);
          // Every group fails with the error (the one whose append failed: FAILED_PRECONDITION).
          absl::Status later = s[id].Append(MakeTestEntries(m[id].next(), 1, 1));
          EXPECT_FALSE(later.ok()) << "an append after the failure succeeded";
          EXPECT_NE(later.message().find("injected"), std::string_view::npos) << later;
          ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], m[id]));  // Readers still work.
        }
      }
      env.ClearFailures();
      Server s(&env, o, BuiltIds());
      ASSERT_TRUE(s.opened());
      for (const std::string& id : BuiltIds()) {
        SCOPED_TRACE(id);
        // The failed append may or may not have reached the disk.
        EXPECT_GE(s[id].LastIndex(), m[id].last());
        GroupModel acked = m[id];
        if (s[id].LastIndex() > acked.last()) acked.Append(acked.next(), 2, 1);
        ASSERT_NO_FATAL_FAILURE(ExpectGroup(s[id], acked));
      }
    }
  }
}

// A write that fails before its sync (a full disk) fails the operations of its round, not the
// server log: a GC that shared the round (it writes nothing) succeeds and leaves its group
// writable, the group whose append failed fails, and once the disk has room other groups write
// again and everything acknowledged survives a reopen.
TEST(ServerLogFaultTest, AFailedWriteFailsOnlyTheAppendsOfItsRound) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  const LogOptions o = Options();
  std::map<std::string, GroupModel> m;
  {
    // The server log's thread is not started: the blocking GC below writes the round itself,
    // and so takes the append queued before it into the same round.
    std::unique_ptr<ServerLog> log = OpenServer(&env, o, /*start=*/false);
    ASSERT_NE(log, nullptr);
    std::unique_ptr<Log> a = OpenGroup(log.get(), "a");
    std::unique_ptr<Log> b = OpenGroup(log.get(), "b");
    ASSERT_TRUE(a != nullptr && b != nullptr);
    ASSERT_NO_FATAL_FAILURE(AppendTo(*a, &m["a"], 3, 1));
    ASSERT_NO_FATAL_FAILURE(AppendTo(*b, &m["b"], 3, 1));
    absl::Status appended = absl::UnknownError("not called");
    BASALT_ASSERT_OK(a->AsyncAppend(MakeTestEntries(m["a"].next(), 2, 1),
                                    [&](const absl::Status& s) { appended = s; }));
    env.FailAfter(0, FaultInjectionEnv::OpKind::kAppend);
    BASALT_EXPECT_OK(b->GC(2));
    env.ClearFailures();
    EXPECT_NE(appended.message().find("injected"), std::string_view::npos) << appended;
    // b goes on (the next round cuts the failed bytes off first); a failed.
    ASSERT_NO_FATAL_FAILURE(AppendTo(*b, &m["b"], 2, 1));
    absl::Status later = a->Append(MakeTestEntries(m["a"].next(), 1, 1));
    EXPECT_TRUE(absl::IsFailedPrecondition(later)) << later;
    ASSERT_NO_FATAL_FAILURE(ExpectGroup(*a, m["a"]));
  }
  Server s(&env, o, {"a", "b"});
  ASSERT_TRUE(s.opened());
  ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["a"], m["a"]));
  ASSERT_NO_FATAL_FAILURE(ExpectGroup(s["b"], m["b"]));
  ASSERT_NO_FATAL_FAILURE(AppendTo(s["a"], &m["a"], 1, 2));
}

// A segment whose deletion fails stays, and so do the newer ones collected with it: the segments
// on disk stay consecutive (recovery refuses a gap) and match what the server log lists.
TEST(ServerLogFaultTest, AFailedSegmentDeletionKeepsTheSegmentsConsecutive) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  const LogOptions o = Options(1024);
  const std::vector<std::string> ids = {"g1", "g2"};
  std::map<std::string, GroupModel> m;
  bool failed_some = false;
  {
    Server s(&env, o, ids);
    ASSERT_TRUE(s.opened());
    for (int round = 1; round <= 48; ++round) {
      for (const std::string& id : ids) ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m[id], 3, 1));
      if (round % 8 != 0) continue;
      const bool inject = round == 16 || round == 32;
      if (inject) env.FailAfter(1, FaultInjectionEnv::OpKind::kDelete);
      const std::vector<uint64_t> before = s.log->SegmentSeqs();
      for (const std::string& id : ids) BASALT_ASSERT_OK(s[id].GC(m[id].last()));
      env.ClearFailures();
      const std::vector<uint64_t> seqs = s.log->SegmentSeqs();
      if (inject && seqs.front() > before.front() && seqs.front() < before.back()) {
        failed_some = true;  // Deleted the first, kept the one that failed.
      }
      EXPECT_EQ(SegmentFilesIn(&mem), seqs) << "round " << round;
      for (size_t i = 1; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], seqs[i - 1] + 1);
    }
  }
  EXPECT_TRUE(failed_some) << "no deletion failed halfway through a collection";
  Server s(&env, o, ids);
  ASSERT_TRUE(s.opened());
  for (const std::string& id : ids) {
    SCOPED_TRACE(id);
    EXPECT_EQ(s[id].LastIndex(), m[id].last());
    ASSERT_NO_FATAL_FAILURE(AppendTo(s[id], &m[id], 2, 2));
  }
}

// The crash workload over three groups: synchronous appends, bursts of asynchronous appends to
// every group (which share writes), a follower's overlapping appends, truncations, GC, resets to
// a snapshot, and segment rolls. For each group, `acked` maps each index to the term of the last
// version of it that was acknowledged and not replaced since; `max_first` bounds the group's
// first index (GC retention, resets).
struct CrashGroup {
  std::map<uint64_t, uint64_t> acked;
  uint64_t max_first = 1;
  uint64_t next = 1;
  uint64_t term = 1;
};

void RunCrashWorkload(const std::vector<Log*>& logs, uint64_t seed,
                      std::vector<CrashGroup>* model) {
  Random rng(seed);
  absl::Mutex mu;  // Callbacks run on the server log's writer.
  int appends = 0;
  for (int step = 0; step < 60 || appends < 40; ++step) {
    const size_t g = rng.Uniform(logs.size());
    Log* log = logs[g];
    CrashGroup& c = (*model)[g];
    const int op = static_cast<int>(rng.Uniform(16));
    if (op == 0 && c.next > log->FirstIndex() + 2) {
      const uint64_t index = c.next - 1 - rng.Uniform(std::min<uint64_t>(c.next - 2, 10));
      if (index <= log->FirstIndex()) continue;
      {
        absl::MutexLock l(&mu);
        c.acked.erase(c.acked.lower_bound(index), c.acked.end());
      }
      if (!log->TruncateSuffix(index).ok()) return;
      c.next = index;
      ++c.term;
    } else if (op == 1) {
      const uint64_t retain = c.next - std::min<uint64_t>(c.next - 1, rng.Uniform(4));
      c.max_first = std::max(c.max_first, retain);
      if (!log->GC(retain).ok()) return;
    } else if (op == 2) {
      const OpId snapshot{c.term + 1, c.next + 3};
      {
        absl::MutexLock l(&mu);
        c.acked.clear();
      }
      c.max_first = std::max(c.max_first, snapshot.index + 1);
      if (!log->ResetToSnapshot(snapshot).ok()) return;
      c.next = snapshot.index + 1;
      c.term = snapshot.term;
    } else if (op == 3 && c.next > log->FirstIndex() + 3) {
      // A follower's entries that replace its last two.
      const uint64_t first = c.next - 2;
      ++c.term;
      {
        absl::MutexLock l(&mu);
        c.acked.erase(c.acked.lower_bound(first), c.acked.end());
      }
      ++appends;
      if (!log->Append(MakeTestEntries(first, 3, c.term)).ok()) return;
      absl::MutexLock l(&mu);
      for (uint64_t i = first; i < first + 3; ++i) c.acked[i] = c.term;
      c.next = first + 3;
    } else if (op <= 6) {
      // A burst: every group queues two batches at once.
      absl::BlockingCounter pending(static_cast<int>(2 * logs.size()));
      bool ok = true;
      for (int round = 0; round < 2; ++round) {
        for (size_t h = 0; h < logs.size(); ++h) {
          CrashGroup& d = (*model)[h];
          const uint64_t first = d.next;
          const uint64_t term = d.term;
          ++appends;
          absl::Status s = logs[h]->AsyncAppend(MakeTestEntries(first, 2, term),
                                                [&, first, term, h](const absl::Status& st) {
                                                  if (st.ok()) {
                                                    absl::MutexLock l(&mu);
                                                    (*model)[h].acked[first] = term;
                                                    (*model)[h].acked[first + 1] = term;
                                                  }
                                                  pending.DecrementCount();
                                                });
          if (!s.ok()) {
            ok = false;
            pending.DecrementCount();
          }
          d.next += 2;
        }
      }
      pending.Wait();
      if (!ok) return;
    } else {
      const size_t n = 1 + rng.Uniform(4);
      ++appends;
      if (!log->Append(MakeTestEntries(c.next, n, c.term, 1 + rng.Uniform(100))).ok()) return;
      absl::MutexLock l(&mu);
      for (size_t i = 0; i < n; ++i) c.acked[c.next + i] = c.term;
      c.next += n;
    }
  }
  // Every group collects all but its last entries, so segments go whatever the steps were.
  for (size_t g = 0; g < logs.size(); ++g) {
    CrashGroup& c = (*model)[g];
    c.max_first = std::max(c.max_first, c.next);
    if (!logs[g]->GC(c.next).ok()) return;
  }
}

TEST(ServerLogFaultTest, CrashAtEverySyncPointKeepsAcknowledgedEntries) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(StrCat("seed ", seed));
  const LogOptions o = Options(1024);
  const std::vector<std::string>& ids = BuiltIds();
  auto run = [&](FaultInjectionEnv* env, int64_t crash_at, std::vector<CrashGroup>* model) {
    Server s(env, o, ids);
    ASSERT_TRUE(s.opened());
    if (crash_at >= 0) env->SetCrashAtSyncPoint(crash_at);
    std::vector<Log*> logs;
    for (const std::string& id : ids) logs.push_back(&s[id]);
    RunCrashWorkload(logs, seed, model);
  };
  int64_t total_sync_points;
  {
    MemoryEnv mem;
    FaultInjectionEnv env(&mem);
    std::vector<CrashGroup> model(ids.size());
    ASSERT_NO_FATAL_FAILURE(run(&env, -1, &model));
    total_sync_points = env.num_sync_points();
    LOG(INFO) << "segments at the end: " << SegmentFilesIn(&env).front() << ".."
              << SegmentFilesIn(&env).back();
  }
  ASSERT_GE(total_sync_points, 40);
  LOG(INFO) << total_sync_points << " sync points";
  for (int64_t k = 0; k <= total_sync_points; ++k) {
    SCOPED_TRACE(StrCat("crash at sync point ", k, " of ", total_sync_points));
    MemoryEnv mem;
    FaultInjectionEnv env(&mem);
    std::vector<CrashGroup> model(ids.size());
    ASSERT_NO_FATAL_FAILURE(run(&env, k, &model));
    BASALT_ASSERT_OK(env.DropUnsyncedData());
    Server s(&env, o, ids);
    ASSERT_TRUE(s.opened());
    for (size_t g = 0; g < ids.size(); ++g) {
      SCOPED_TRACE(ids[g]);
      Log& log = s[ids[g]];
      const CrashGroup& c = model[g];
      EXPECT_LE(log.FirstIndex(), c.max_first);
      BASALT_ASSERT_OK(log.Term(log.FirstIndex() - 1));
      for (const auto& [index, term] : c.acked) {
        if (index < log.FirstIndex()) continue;
        ASSERT_LE(index, log.LastIndex());
        absl::StatusOr<std::vector<LogEntry>> e = log.Entries(index, index + 1, 0);
        BASALT_ASSERT_OK(e);
        ASSERT_EQ((*e)[0].term, term) << index;
        ASSERT_EQ((*e)[0].data, TestEntryData(index, term, (*e)[0].data.size())) << index;
      }
      // Whatever survived is a readable log that accepts appends.
      if (log.LastIndex() >= log.FirstIndex()) {
        absl::StatusOr<std::vector<LogEntry>> all =
            log.Entries(log.FirstIndex(), log.LastIndex() + 1, UINT64_MAX);
        BASALT_ASSERT_OK(all);
        ASSERT_EQ(all->size(), log.LastIndex() - log.FirstIndex() + 1);
        for (const LogEntry& e : *all) {
          ASSERT_EQ(e.term, *log.Term(e.index)) << e.index;
          ASSERT_EQ(e.data, TestEntryData(e.index, e.term, e.data.size())) << e.index;
        }
      }
      const OpId last = log.LastOpId();
      BASALT_ASSERT_OK(log.Append(MakeTestEntries(last.index + 1, 1, last.term + 1)));
    }
  }
}

// ---- Real file system ----

// On POSIX files the active segment is zero-filled ahead of its records (preallocate_bytes).
TEST(ServerLogPosixTest, PreallocatedSegmentsReopen) {
  Env* env = Env::Default();
  std::string root = JoinPath(testing::TempDir(), "basalt_server_log_test.XXXXXX");
  ASSERT_NE(mkdtemp(root.data()), nullptr) << "mkdtemp " << root;
  const std::string dir = JoinPath(root, "wal");
  LogOptions o = Options(32 << 10);
  o.preallocate_bytes = 8 << 10;
  std::map<std::string, GroupModel> m;
  auto open = [&](bool start) {
    absl::StatusOr<std::unique_ptr<ServerLog>> s = ServerLog::Open(env, dir, o);
    BASALT_EXPECT_OK(s);
    if (s.ok() && start) {
      BASALT_EXPECT_OK((*s)->Start());
    }
    return s.ok() ? *std::move(s) : nullptr;
  };
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(StrCat("run ", run));
    std::unique_ptr<ServerLog> server = open(true);
    ASSERT_NE(server, nullptr);
    for (const std::string& id : BuiltIds()) {
      std::unique_ptr<Log> log = OpenGroup(server.get(), id);
      ASSERT_NE(log, nullptr);
      ASSERT_NO_FATAL_FAILURE(ExpectGroup(*log, m[id]));
    }
    for (int i = 0; i < 60; ++i) {
      const std::string& id = BuiltIds()[i % 3];
      std::unique_ptr<Log> log = OpenGroup(server.get(), id);
      ASSERT_NE(log, nullptr);
      ASSERT_NO_FATAL_FAILURE(AppendTo(*log, &m[id], 4, 1 + run, 300));
    }
    EXPECT_GE(server->SegmentSeqs().size(), 2u);
  }
  BASALT_EXPECT_OK(env->DeleteDirRecursively(root));
}

}  // namespace server_log_test_file
}  // namespace
}  // namespace basalt
