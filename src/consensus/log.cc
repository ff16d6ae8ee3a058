#include "consensus/log.h"

#include <algorithm>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/synchronization/notification.h"
#include "common/coding.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/thread_name.h"
#include "consensus/log_segment.h"
#include "consensus/server_log.h"

DEFINE_int32(log_segment_size_mb, 8,
             "Size in MiB at which a write-ahead log segment is closed and a new one started.");
DEFINE_bool(log_force_fsync_all, true,
            "Whether the write-ahead log syncs every group of appended entries to disk before "
            "acknowledging them. Without it an acknowledged entry survives a process crash but "
            "not a machine crash.");
DEFINE_int32(log_preallocate_kb, 1024,
             "With --log_force_fsync_all, the active write-ahead log segment is kept zero-filled "
             "this many KiB ahead of its entries, so that each sync overwrites blocks the file "
             "already has instead of growing it (a cheaper fdatasync: no inode write). 0 "
             "disables it (for example on copy-on-write filesystems, where overwriting does not "
             "save the metadata update).");

namespace basalt {

namespace {

// The appender stops adding queued batches to a group once it holds this many bytes: bounds the
// latency of one group and the size of a frame.
constexpr size_t kGroupTargetBytes = 4 << 20;

std::string OpIdString(uint64_t index, uint64_t term) {
  return StrCat("index ", index, " (term ", term, ")");
}

}  // namespace

LogOptions LogOptions::FromFlags() {
  LogOptions o;
  o.segment_size_bytes = static_cast<uint64_t>(std::max(FLAGS_log_segment_size_mb, 1)) << 20;
  o.force_fsync = FLAGS_log_force_fsync_all;
  o.preallocate_bytes = static_cast<uint64_t>(std::max(FLAGS_log_preallocate_kb, 0)) << 10;
  return o;
}

Log::Log(Env* env, std::string dir, LogOptions options, ServerLog* server, bool shared)
    : env_(env),
      dir_(std::move(dir)),
      options_(std::move(options)),
      shared_(shared),
      server_(server),
      writer_(env_, dir_, options_) {}

Log::~Log() { Shutdown(); }

absl::StatusOr<std::unique_ptr<Log>> Log::Open(Env* env, const std::string& dir,
                                               const LogOptions& options) {
  if (options.log_id.size() > kMaxLogIdBytes) {
    return absl::InvalidArgumentError(StrCat("log id longer than ", kMaxLogIdBytes, " bytes"));
  }
  std::unique_ptr<Log> log(new Log(env, NormalizePath(dir), options));
  BASALT_RETURN_IF_ERROR_PREPEND(log->Recover(), StrCat("opening WAL in ", dir));
  return log;
}

absl::Status Log::Start() {
  absl::MutexLock l(&mu_);
  if (started_ || stopping_) return absl::FailedPreconditionError("WAL already started");
  started_ = true;
  if (shared_) return absl::OkStatus();
  appender_ = std::thread([this] {
    SetCurrentThreadName("wal-appender");
    AppenderLoop();
  });
  return absl::OkStatus();
}

void Log::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (server_ != nullptr) {
    // The server log's writer runs what is queued (AsyncAppend woke it).
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !writing_; };
    mu_.LockWhen(absl::Condition(&idle));
    mu_.Unlock();
    server_->CloseGroup(this);
    return;
  }
  if (appender_.joinable()) appender_.join();
  absl::Status s = writer_.Close();
  LOG_IF(WARNING, !s.ok()) << "closing WAL segment in " << dir_ << ": " << s;
}

// ---- Mutations ----

absl::Status Log::CheckWritableLocked() const {
  if (!started_) return absl::FailedPreconditionError(StrCat("WAL in ", dir_, " not started"));
  if (stopping_) return absl::FailedPreconditionError(StrCat("WAL in ", dir_, " shut down"));
  if (!error_.ok()) {
    return absl::FailedPreconditionError(
        StrCat("WAL in ", dir_, " failed earlier: ", error_.message()));
  }
  return absl::OkStatus();
}

absl::Status Log::AsyncAppend(const std::vector<LogEntry>& entries, StatusCallback callback) {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Task> task, EncodeAppend(entries));
  task->callback = std::move(callback);
  absl::MutexLock l(&mu_);
  BASALT_RETURN_IF_ERROR(QueueAppendLocked(std::move(task)));
  if (server_ != nullptr) server_->MarkReady(this, /*caller_runs=*/false);
  return absl::OkStatus();
}

absl::Status Log::Append(const std::vector<LogEntry>& entries) {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Task> task, EncodeAppend(entries));
  absl::MutexLock l(&mu_);
  return QueueAppendAndWaitLocked(std::move(task));
}

absl::StatusOr<std::unique_ptr<Log::Task>> Log::EncodeAppend(const std::vector<LogEntry>& entries) {
  if (entries.empty()) return absl::InvalidArgumentError("AsyncAppend of no entries");
  auto task = std::make_unique<Task>();
  task->first_index = entries.front().index;
  task->terms.reserve(entries.size());
  // Sized once: growing the string entry by entry copied the batch again at each doubling.
  size_t bytes = 0;
  for (const LogEntry& e : entries) bytes += e.data.size() + 3 * kMaxVarint64Length + 1;
  task->encoded.reserve(bytes);
  for (size_t i = 0; i < entries.size(); ++i) {
    const LogEntry& e = entries[i];
    if (e.index != task->first_index + i || e.index == 0) {
      return absl::InvalidArgumentError(
          StrCat("entry ", i, " has index ", e.index, ", expected ", task->first_index + i));
    }
    if (i > 0 && e.term < entries[i - 1].term) {
      return absl::InvalidArgumentError(StrCat("entry ", e.index,
                                               " has a lower term than the one "
                                               "before it"));
    }
    if (static_cast<uint8_t>(e.type) > static_cast<uint8_t>(EntryType::kConfigChange) ||
        e.data.size() > kMaxEntryDataBytes) {
      return absl::InvalidArgumentError(StrCat("entry ", e.index, " has a bad type or is too big"));
    }
    AppendEncodedEntry(e, &task->encoded);
    task->terms.push_back(e.term);
  }
  // Room for a server log's record and round framing too.
  if (task->encoded.size() + 2 * kMaxVarint64Length + kMaxRecordOverhead + 2 * kFrameHeaderSize >
      kMaxFramePayloadBytes) {
    return absl::InvalidArgumentError("AsyncAppend batch too large");
  }
  return task;
}

absl::Status Log::QueueAppendLocked(std::unique_ptr<Task> task) {
  const uint64_t first = task->first_index;
  BASALT_RETURN_IF_ERROR(CheckWritableLocked());
  if (first > next_queued_index_ || first < first_index_) {
    return absl::InvalidArgumentError(StrCat("appending at index ", first,
                                             " to a log with entries [", first_index_, ", ",
                                             next_queued_index_, ")"));
  }
  uint64_t prev_term = last_queued_term_;
  if (first < next_queued_index_) {
    BASALT_ASSIGN_OR_RETURN(prev_term, QueuedTermLocked(first - 1));
  }
  if (task->terms.front() < prev_term) {
    return absl::InvalidArgumentError(StrCat("entry ", first, " has term ", task->terms.front(),
                                             " below the previous entry's term ", prev_term));
  }
  if (first < next_queued_index_) {
    auto truncate = std::make_unique<Task>();
    truncate->kind = Task::Kind::kTruncate;
    truncate->index = first;
    queue_.push_back(std::move(truncate));
  }
  task->prev_term = prev_term;
  next_queued_index_ = first + task->terms.size();
  last_queued_term_ = task->terms.back();
  queue_.push_back(std::move(task));
  return absl::OkStatus();
}

absl::Status Log::QueueAppendAndWaitLocked(std::unique_ptr<Task> task) {
  absl::Notification done;
  absl::Status result;
  task->callback = [&](const absl::Status& s) {
    result = s;
    done.Notify();
  };
  BASALT_RETURN_IF_ERROR(QueueAppendLocked(std::move(task)));
  RunOrWaitLocked(&done);
  return result;
}

absl::Status Log::EnqueueAndWait(std::unique_ptr<Task> task) {
  absl::Notification done;
  absl::Status result;
  task->callback = [&](const absl::Status& s) {
    result = s;
    done.Notify();
  };
  queue_.push_back(std::move(task));
  RunOrWaitLocked(&done);
  return result;
}

// The caller blocks until its task ran anyway. When no thread is writing, it executes the queue
// itself: a hand-off to the appender and back cost two thread wakeups per Raft batch
// (docs/performance.md, change 18). Otherwise the writing thread (the appender, or another
// blocked caller) runs the task: it drains the whole queue.
void Log::RunOrWaitLocked(absl::Notification* done) {
  if (server_ != nullptr) {
    // The same, one level up: the server log's writer takes every group's queued tasks, and
    // this thread is that writer if nobody else is (so the writer thread is not woken for
    // them). Marked ready under mu_, as AsyncAppend does, so that a log closing (which waits for
    // an empty queue under mu_) is never marked afterwards.
    server_->MarkReady(this, /*caller_runs=*/true);
    mu_.Unlock();
    server_->RunOrWait(done);
    mu_.Lock();
    return;
  }
  if (!writing_) {
    writing_ = true;
    mu_.Unlock();
    DrainQueue();
  } else {
    mu_.Unlock();
  }
  done->WaitForNotification();
  mu_.Lock();
}

absl::Status Log::TruncateSuffix(uint64_t index) {
  absl::MutexLock l(&mu_);
  BASALT_RETURN_IF_ERROR(CheckWritableLocked());
  if (index < first_index_) {
    return absl::InvalidArgumentError(
        StrCat("TruncateSuffix(", index, ") below the first index ", first_index_));
  }
  if (index >= next_queued_index_) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(const uint64_t prev_term, QueuedTermLocked(index - 1));
  next_queued_index_ = index;
  last_queued_term_ = prev_term;
  auto task = std::make_unique<Task>();
  task->kind = Task::Kind::kTruncate;
  task->index = index;
  return EnqueueAndWait(std::move(task));
}

absl::StatusOr<int> Log::GC(uint64_t retain_from_index) {
  absl::MutexLock l(&mu_);
  BASALT_RETURN_IF_ERROR(CheckWritableLocked());
  int deleted = 0;
  auto task = std::make_unique<Task>();
  task->kind = Task::Kind::kGC;
  task->index = retain_from_index;
  task->gc_deleted = &deleted;
  BASALT_RETURN_IF_ERROR(EnqueueAndWait(std::move(task)));
  return deleted;
}

absl::Status Log::ResetToSnapshot(OpId snapshot) {
  absl::MutexLock l(&mu_);
  BASALT_RETURN_IF_ERROR(CheckWritableLocked());
  next_queued_index_ = snapshot.index + 1;
  last_queued_term_ = snapshot.term;
  auto task = std::make_unique<Task>();
  task->kind = Task::Kind::kReset;
  task->snapshot = snapshot;
  return EnqueueAndWait(std::move(task));
}

absl::StatusOr<uint64_t> Log::QueuedTermLocked(uint64_t index) const {
  for (auto it = queue_.rbegin(); it != queue_.rend(); ++it) {
    const Task& t = **it;
    if (t.kind == Task::Kind::kAppend && index >= t.first_index &&
        index < t.first_index + t.terms.size()) {
      return t.terms[index - t.first_index];
    }
    if (t.kind == Task::Kind::kReset) {
      if (index == t.snapshot.index) return t.snapshot.term;
      return absl::NotFoundError(StrCat("index ", index, " is before a queued reset"));
    }
  }
  return TermLocked(index);
}

// ---- Appender thread ----

void Log::AppenderLoop() {
  while (true) {
    {
      // Work nobody is writing: AsyncAppend's batches (their callers do not wait), or the queue
      // left at shutdown.
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !writing_ && (!queue_.empty() || stopping_);
      };
      mu_.LockWhen(absl::Condition(&has_work));
      if (queue_.empty()) {
        mu_.Unlock();
        return;
      }
      writing_ = true;
      mu_.Unlock();
    }
    DrainQueue();
  }
}

void Log::DrainQueue() {
  while (true) {
    std::vector<std::unique_ptr<Task>> group;
    {
      absl::MutexLock l(&mu_);
      DCHECK(writing_);
      if (queue_.empty()) {
        // Only now: every callback of the tasks taken ran, in queue order.
        writing_ = false;
        return;
      }
      size_t bytes = 0;
      do {
        bytes += queue_.front()->encoded.size();
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      } while (group.front()->kind == Task::Kind::kAppend && !queue_.empty() &&
               queue_.front()->kind == Task::Kind::kAppend && bytes < kGroupTargetBytes);
    }
    if (group.front()->kind == Task::Kind::kAppend) {
      RunAppendGroup(std::move(group));
      continue;
    }
    Task& task = *group.front();
    absl::Status s;
    {
      absl::MutexLock l(&mu_);
      s = error_;
    }
    if (s.ok()) {
      switch (task.kind) {
        case Task::Kind::kTruncate:
          s = DoTruncate(task.index);
          break;
        case Task::Kind::kReset:
          s = DoReset(task.snapshot);
          break;
        case Task::Kind::kGC: {
          absl::StatusOr<int> deleted = DoGC(task.index);
          if (deleted.ok()) *task.gc_deleted = *deleted;
          s = deleted.status();
          break;
        }
        case Task::Kind::kAppend:
          break;
      }
      // A failed truncation or reset leaves the files in an unknown state: fail the log. A failed
      // GC only leaves segments behind.
      if (!s.ok() && task.kind != Task::Kind::kGC) {
        absl::MutexLock l(&mu_);
        error_ = s;
      }
    }
    if (task.callback) task.callback(s);
  }
}

void Log::RunAppendGroup(std::vector<std::unique_ptr<Task>> group) {
  absl::Status s;
  {
    absl::MutexLock l(&mu_);
    s = error_;
  }
  if (s.ok()) {
    s = WriteGroup(group);
    if (!s.ok()) {
      s = PrependToStatus(s, StrCat("WAL append in ", dir_, " failed"));
      absl::MutexLock l(&mu_);
      error_ = s;
    }
  }
  for (const std::unique_ptr<Task>& task : group) {
    if (task->callback) task->callback(s);
  }
}

absl::Status Log::WriteGroup(const std::vector<std::unique_ptr<Task>>& group) {
  const uint64_t first_index = group.front()->first_index;
  std::vector<uint64_t> terms;
  for (const std::unique_ptr<Task>& t : group) {
    DCHECK_EQ(t->first_index, first_index + terms.size());
    terms.insert(terms.end(), t->terms.begin(), t->terms.end());
  }
  size_t payload = 0;
  for (const std::unique_ptr<Task>& t : group) payload += t->encoded.size();
  FrameBuilder builder(first_index, static_cast<uint32_t>(terms.size()), payload);
  for (const std::unique_ptr<Task>& t : group) builder.AppendEncodedEntries(t->encoded);
  const std::string frame = std::move(builder).Finish();

  uint64_t prev_term;
  bool active_has_batches;
  {
    absl::MutexLock l(&mu_);
    DCHECK_EQ(first_index, LastIndexLocked() + 1);
    BASALT_ASSIGN_OR_RETURN(prev_term, TermLocked(first_index - 1));
    active_has_batches = !batches_.empty() && batches_.rbegin()->second.seq == writer_.seq();
  }
  if (active_has_batches && writer_.size() + frame.size() > options_.segment_size_bytes) {
    BASALT_RETURN_IF_ERROR(writer_.Close());
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                            CreateSegment(writer_.seq() + 1, first_index, prev_term, 0));
    absl::MutexLock l(&mu_);
    segments_[seg->seq] = std::move(seg);
  }
  BASALT_ASSIGN_OR_RETURN(const uint64_t offset, writer_.Append(frame));
  absl::MutexLock l(&mu_);
  if (options_.force_fsync) ++num_syncs_;
  AddBatchLocked(writer_.seq(), offset, static_cast<uint32_t>(frame.size()), first_index, terms);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Log::Segment>> Log::CreateSegment(uint64_t seq, uint64_t first_index,
                                                                 uint64_t prev_term,
                                                                 uint32_t flags) {
  SegmentHeader header;
  header.flags = flags;
  header.seq = seq;
  header.first_index = first_index;
  header.prev_term = prev_term;
  header.log_id = options_.log_id;
  return writer_.Create(header);
}

absl::Status Log::RewriteSegment(uint64_t seq, const std::string& contents) {
  const std::string path = SegmentPath(seq);
  BASALT_RETURN_IF_ERROR(WriteFileAtomically(env_, path, contents));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> r, env_->NewRandomAccessFile(path));
  absl::MutexLock l(&mu_);
  auto it = segments_.find(seq);
  CHECK(it != segments_.end());
  auto seg = std::make_shared<Segment>(*it->second);
  seg->reader = std::move(r);
  it->second = std::move(seg);
  return absl::OkStatus();
}

absl::Status Log::DoTruncate(uint64_t index) {
  std::shared_ptr<Segment> seg;
  std::vector<uint64_t> later;  // Newest first.
  BatchPos pos;
  uint64_t batch_first;
  {
    absl::MutexLock l(&mu_);
    if (index > LastIndexLocked()) return absl::OkStatus();
    if (index < first_index_) {
      return absl::InvalidArgumentError(StrCat("truncating at ", index, " below the first index"));
    }
    for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
      if (it->second->first_index <= index) {
        seg = it->second;
        break;
      }
      later.push_back(it->first);
    }
    auto b = std::prev(batches_.upper_bound(index));
    batch_first = b->first;
    pos = b->second;
  }
  CHECK(seg != nullptr && pos.seq == seg->seq);
  BASALT_RETURN_IF_ERROR(writer_.Close());
  // Newest first, each deletion durable before the next, so a crash leaves a prefix of the log.
  for (uint64_t seq : later) {
    BASALT_RETURN_IF_ERROR(env_->DeleteFile(SegmentPath(seq)));
    BASALT_RETURN_IF_ERROR(env_->SyncDir(dir_));
  }
  // The kept prefix of the segment, plus the kept head of the batch that holds `index`.
  std::string contents(pos.offset, '\0');
  std::string_view prefix;
  BASALT_RETURN_IF_ERROR(seg->reader->ReadAt(0, pos.offset, contents.data(), &prefix));
  if (prefix.size() != pos.offset) {
    return absl::DataLossError(StrCat("short read of ", SegmentPath(seg->seq)));
  }
  if (prefix.data() != contents.data()) contents.assign(prefix);
  uint32_t kept_frame_size = 0;
  if (batch_first < index) {
    std::string buf;
    std::vector<EntryView> views;
    BASALT_RETURN_IF_ERROR(ReadBatch(*seg, pos, batch_first, &buf, &views));
    FrameBuilder builder(batch_first, static_cast<uint32_t>(index - batch_first));
    std::string encoded;
    for (uint64_t i = batch_first; i < index; ++i) {
      AppendEncodedEntry(views[i - batch_first], &encoded);
    }
    builder.AppendEncodedEntries(encoded);
    const std::string frame = std::move(builder).Finish();
    kept_frame_size = static_cast<uint32_t>(frame.size());
    contents.append(frame);
  }
  BASALT_RETURN_IF_ERROR(RewriteSegment(seg->seq, contents));
  {
    absl::MutexLock l(&mu_);
    for (uint64_t seq : later) segments_.erase(seq);
    DropFromLocked(index);
    if (kept_frame_size > 0) {
      batches_[batch_first] = BatchPos{seg->seq, pos.offset, kept_frame_size, index - 1};
    }
  }
  return writer_.OpenExisting(seg->seq);
}

absl::StatusOr<int> Log::DoGC(uint64_t retain_from_index) {
  int deleted = 0;
  while (true) {
    uint64_t seq;
    {
      absl::MutexLock l(&mu_);
      if (segments_.size() < 2) break;
      auto oldest = segments_.begin();
      const uint64_t next_first = std::next(oldest)->second->first_index;
      if (next_first > retain_from_index) break;
      seq = oldest->first;
      segments_.erase(oldest);
      batches_.erase(batches_.begin(), batches_.lower_bound(next_first));
      terms_.erase(terms_.begin(), terms_.begin() + (next_first - first_index_));
      first_index_ = next_first;
    }
    // Unpublished first, then deleted: a reader that already holds the segment keeps reading the
    // unlinked file. A crash in between leaves the segment behind, to be collected again.
    BASALT_RETURN_IF_ERROR(env_->DeleteFile(SegmentPath(seq)));
    BASALT_RETURN_IF_ERROR(env_->SyncDir(dir_));
    ++deleted;
  }
  return deleted;
}

absl::Status Log::DoReset(OpId snapshot) {
  BASALT_RETURN_IF_ERROR(writer_.Close());
  std::vector<uint64_t> old;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [seq, seg] : segments_) old.push_back(seq);
  }
  // Durable before the old segments go: recovery drops every segment before one flagged
  // kSegmentFlagStartsNewLog, so a crash leaves either the old log or the new one.
  BASALT_ASSIGN_OR_RETURN(
      std::shared_ptr<Segment> seg,
      CreateSegment(old.back() + 1, snapshot.index + 1, snapshot.term, kSegmentFlagStartsNewLog));
  {
    absl::MutexLock l(&mu_);
    segments_.clear();
    batches_.clear();
    terms_.clear();
    first_index_ = snapshot.index + 1;
    segments_[seg->seq] = std::move(seg);
  }
  for (uint64_t seq : old) BASALT_RETURN_IF_ERROR(env_->DeleteFile(SegmentPath(seq)));
  return env_->SyncDir(dir_);
}

// ---- A server log's group ----

void Log::TakeStateFrom(Log* other) {
  absl::MutexLock lo(&other->mu_);
  absl::MutexLock l(&mu_);
  segments_ = std::move(other->segments_);
  batches_ = std::move(other->batches_);
  terms_ = std::move(other->terms_);
  first_index_ = other->first_index_;
  prev_term_ = other->prev_term_;
  num_syncs_ = other->num_syncs_;
  next_queued_index_ = LastIndexLocked() + 1;
  last_queued_term_ = *TermLocked(LastIndexLocked());
}

uint32_t Log::AppendRecordFrame(const Task& task, std::string* frames) const {
  const size_t before = frames->size();
  ServerRecord r;
  r.group = options_.log_id;
  switch (task.kind) {
    case Task::Kind::kAppend:
      AppendAppendRecordFrame(r.group, task.prev_term, task.first_index,
                              static_cast<uint32_t>(task.terms.size()), task.encoded, frames);
      break;
    case Task::Kind::kTruncate:
      r.kind = RecordKind::kTruncate;
      r.index = task.index;
      frames->append(EncodeRecordFrame(r));
      break;
    case Task::Kind::kReset:
      r.kind = RecordKind::kReset;
      r.index = task.snapshot.index;
      r.term = task.snapshot.term;
      frames->append(EncodeRecordFrame(r));
      break;
    case Task::Kind::kGC:
      break;
  }
  return static_cast<uint32_t>(frames->size() - before);
}

std::vector<std::unique_ptr<Log::Task>> Log::TakeQueued(absl::Status* failed) {
  absl::MutexLock l(&mu_);
  std::vector<std::unique_ptr<Task>> tasks;
  if (writing_) return tasks;  // Only the one writer takes tasks; it is still publishing.
  tasks.reserve(queue_.size());
  for (std::unique_ptr<Task>& t : queue_) tasks.push_back(std::move(t));
  queue_.clear();
  writing_ = !tasks.empty();
  // Queued behind an operation that failed: writing them would leave a gap in this log.
  *failed = error_;
  return tasks;
}

void Log::PublishWritten(std::vector<std::unique_ptr<Task>> tasks,
                         const std::vector<std::shared_ptr<Segment>>& segments,
                         const std::vector<uint64_t>& offsets,
                         const std::vector<uint32_t>& frame_sizes, const absl::Status& status) {
  std::vector<int> gc_deleted(tasks.size(), 0);
  {
    absl::MutexLock l(&mu_);
    if (!status.ok()) {
      // A GC writes nothing and cannot fail with the round: like a failed GC of a log of its
      // own, it must not fail the log (a full disk pauses a replica; a failed log fails it).
      for (size_t i = 0; i < tasks.size(); ++i) {
        if (tasks[i]->kind == Task::Kind::kGC) {
          gc_deleted[i] = GcSharedLocked(tasks[i]->index);
        } else {
          error_ = status;
        }
      }
    } else {
      bool wrote = false;
      for (size_t i = 0; i < tasks.size(); ++i) {
        Task& t = *tasks[i];
        wrote |= frame_sizes[i] > 0;
        switch (t.kind) {
          case Task::Kind::kAppend: {
            absl::Status s = ApplyAppendLocked(segments[i], offsets[i], frame_sizes[i],
                                               t.first_index, t.prev_term, t.terms);
            CHECK(s.ok()) << "the queue's checks let through " << s;
            break;
          }
          case Task::Kind::kTruncate:
            if (t.index <= LastIndexLocked()) DropFromLocked(t.index);
            break;
          case Task::Kind::kReset:
            ResetLocked(t.snapshot, segments[i]);
            break;
          case Task::Kind::kGC:
            gc_deleted[i] = GcSharedLocked(t.index);
            break;
        }
      }
      if (wrote && options_.force_fsync) ++num_syncs_;
    }
    writing_ = false;
  }
  // In queue order, after publishing: an entry is readable once its callback says durable.
  for (size_t i = 0; i < tasks.size(); ++i) {
    Task& t = *tasks[i];
    const bool gc = t.kind == Task::Kind::kGC;
    if (gc && t.gc_deleted != nullptr) *t.gc_deleted = gc_deleted[i];
    if (t.callback) t.callback(gc ? absl::OkStatus() : status);
  }
}

absl::Status Log::ApplyAppendLocked(const std::shared_ptr<Segment>& segment, uint64_t offset,
                                    uint32_t frame_size, uint64_t first_index, uint64_t prev_term,
                                    const std::vector<uint64_t>& terms) {
  DCHECK(shared_);
  if (first_index < first_index_) {
    // Entries this log already let go of (a record written before a GC that a server log
    // moved): the record starts it over.
    ResetLocked(OpId{prev_term, first_index - 1}, nullptr);
  } else if (first_index > LastIndexLocked() + 1) {
    return absl::DataLossError(
        StrCat("entries from index ", first_index, " after a log ending at ", LastIndexLocked()));
  } else if (const uint64_t before = *TermLocked(first_index - 1); before != prev_term) {
    return absl::DataLossError(StrCat("entries from index ", first_index, " follow term ",
                                      prev_term, ", but the log has term ", before));
  }
  uint64_t last = prev_term;
  for (uint64_t t : terms) {
    if (t < last) return absl::DataLossError(StrCat("decreasing terms from index ", first_index));
    last = t;
  }
  if (first_index <= LastIndexLocked()) DropFromLocked(first_index);
  AddBatchLocked(segment->seq, offset, frame_size, first_index, terms);
  segments_.emplace(segment->seq, segment);
  return absl::OkStatus();
}

void Log::ResetLocked(OpId snapshot, const std::shared_ptr<Segment>& segment) {
  DCHECK(shared_);
  batches_.clear();
  terms_.clear();
  first_index_ = snapshot.index + 1;
  prev_term_ = snapshot.term;
  segments_.clear();
  if (segment != nullptr) segments_[segment->seq] = segment;
}

int Log::GcSharedLocked(uint64_t retain_from_index) {
  // The last batch stays: with no record left, a restart could not tell this log's place.
  while (batches_.size() > 1 && batches_.begin()->second.last_index < retain_from_index) {
    const uint64_t next_first = batches_.begin()->second.last_index + 1;
    prev_term_ = terms_[next_first - 1 - first_index_];
    terms_.erase(terms_.begin(), terms_.begin() + (next_first - first_index_));
    first_index_ = next_first;
    batches_.erase(batches_.begin());
  }
  int released = 0;
  if (batches_.empty()) return released;
  const uint64_t needed = batches_.begin()->second.seq;
  while (!segments_.empty() && segments_.begin()->first < needed) {
    segments_.erase(segments_.begin());
    ++released;
  }
  return released;
}

// ---- Recovery ----

absl::Status Log::Recover() {
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> seqs, ListSegmentFiles(env_, dir_));
  BASALT_RETURN_IF_ERROR(DropObsoleteSegments(&seqs));
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (i > 0 && seqs[i] != seqs[i - 1] + 1) {
      return absl::DataLossError(StrCat("WAL segment ", SegmentFileName(seqs[i - 1] + 1),
                                        " is missing before ", SegmentFileName(seqs[i])));
    }
    BASALT_RETURN_IF_ERROR(RecoverSegment(seqs[i], i + 1 == seqs.size()));
  }
  if (seqs.empty()) {
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, CreateSegment(1, 1, 0, 0));
    absl::MutexLock l(&mu_);
    first_index_ = 1;
    segments_[seg->seq] = std::move(seg);
  } else {
    BASALT_RETURN_IF_ERROR(writer_.OpenExisting(seqs.back()));
  }
  absl::MutexLock l(&mu_);
  next_queued_index_ = LastIndexLocked() + 1;
  last_queued_term_ = *TermLocked(LastIndexLocked());
  return absl::OkStatus();
}

absl::Status Log::ReadSegmentHeader(uint64_t seq, SegmentHeader* header, uint64_t* file_size) {
  const std::string path = SegmentPath(seq);
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env_->NewRandomAccessFile(path));
  BASALT_ASSIGN_OR_RETURN(*file_size, file->Size());
  std::string buf(kMaxSegmentHeaderSize, '\0');
  std::string_view data;
  BASALT_RETURN_IF_ERROR(file->ReadAt(0, buf.size(), buf.data(), &data));
  size_t header_size;
  return DecodeSegmentHeader(data, path, header, &header_size);
}

absl::Status Log::DropObsoleteSegments(std::vector<uint64_t>* seqs) {
  if (seqs->empty()) return absl::OkStatus();
  SegmentHeader header;
  uint64_t size = UINT64_MAX;
  absl::Status s = ReadSegmentHeader(seqs->back(), &header, &size);
  if (!s.ok() && absl::IsDataLoss(s) && size <= kMaxSegmentHeaderSize) {
    // Entries are written only after the header is synced, so this segment holds none: a crash
    // hit its creation.
    LOG(WARNING) << "deleting WAL segment " << SegmentPath(seqs->back())
                 << " whose creation did not complete: " << s;
    BASALT_RETURN_IF_ERROR(env_->DeleteFile(SegmentPath(seqs->back())));
    BASALT_RETURN_IF_ERROR(env_->SyncDir(dir_));
    seqs->pop_back();
  } else if (!s.ok()) {
    return s;
  }
  for (size_t i = seqs->size(); i-- > 1;) {
    BASALT_RETURN_IF_ERROR(ReadSegmentHeader((*seqs)[i], &header, &size));
    if ((header.flags & kSegmentFlagStartsNewLog) == 0) continue;
    // A reset to a snapshot completed up to the new segment; finish deleting the old log.
    for (size_t j = 0; j < i; ++j) {
      BASALT_RETURN_IF_ERROR(env_->DeleteFile(SegmentPath((*seqs)[j])));
    }
    BASALT_RETURN_IF_ERROR(env_->SyncDir(dir_));
    seqs->erase(seqs->begin(), seqs->begin() + i);
    break;
  }
  return absl::OkStatus();
}

absl::Status Log::RecoverSegment(uint64_t seq, bool is_last) {
  const std::string path = SegmentPath(seq);
  std::string contents;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env_, path, &contents));
  BASALT_ASSIGN_OR_RETURN(SegmentScan scan, ScanSegment(contents, path, is_last));
  if (scan.header.seq != seq) {
    return absl::DataLossError(
        StrCat("WAL segment ", path, " has sequence number ", scan.header.seq, " in its header"));
  }
  if (!options_.log_id.empty() && scan.header.log_id != options_.log_id) {
    return absl::FailedPreconditionError(StrCat("WAL segment ", path, " belongs to log '",
                                                scan.header.log_id, "', not '", options_.log_id,
                                                "'"));
  }
  // The writer appends at the file's end: the last segment must end with its last batch.
  if (scan.torn_tail) {
    LOG(WARNING) << "WAL segment " << path << ": discarding a torn tail of "
                 << contents.size() - scan.valid_size << " bytes at offset " << scan.valid_size;
  }
  if (is_last && contents.size() > scan.valid_size) {
    contents.resize(scan.valid_size);
    BASALT_RETURN_IF_ERROR(WriteFileAtomically(env_, path, contents));
  }
  auto seg = std::make_shared<Segment>();
  seg->seq = seq;
  seg->first_index = scan.header.first_index;
  seg->prev_term = scan.header.prev_term;
  BASALT_ASSIGN_OR_RETURN(seg->reader, env_->NewRandomAccessFile(path));
  absl::MutexLock l(&mu_);
  if (segments_.empty()) {
    first_index_ = seg->first_index;
  } else if (seg->first_index != LastIndexLocked() + 1 ||
             seg->prev_term != *TermLocked(LastIndexLocked())) {
    return absl::DataLossError(
        StrCat("WAL segment ", path, " starts at index ", seg->first_index, " after term ",
               seg->prev_term, ", but the previous segment ends at ",
               OpIdString(LastIndexLocked(), *TermLocked(LastIndexLocked()))));
  }
  segments_[seq] = std::move(seg);
  for (const ScannedBatch& b : scan.batches) {
    AddBatchLocked(seq, b.offset, b.frame_size, b.first_index, b.terms);
  }
  return absl::OkStatus();
}

// ---- Published state ----

void Log::AddBatchLocked(uint64_t seq, uint64_t offset, uint32_t frame_size, uint64_t first_index,
                         const std::vector<uint64_t>& terms) {
  DCHECK_EQ(first_index, LastIndexLocked() + 1);
  batches_[first_index] = BatchPos{seq, offset, frame_size, first_index + terms.size() - 1};
  terms_.insert(terms_.end(), terms.begin(), terms.end());
}

void Log::DropFromLocked(uint64_t index) {
  CHECK_GE(index, first_index_) << "truncating below the first entry of " << dir_;
  batches_.erase(batches_.lower_bound(index), batches_.end());
  if (!batches_.empty() && batches_.rbegin()->second.last_index >= index) {
    batches_.rbegin()->second.last_index = index - 1;
  }
  terms_.resize(index - first_index_);
}

absl::StatusOr<uint64_t> Log::TermLocked(uint64_t index) const {
  if (index + 1 == first_index_) {
    return shared_ ? prev_term_ : segments_.begin()->second->prev_term;
  }
  if (index < first_index_ || index > LastIndexLocked()) {
    return absl::NotFoundError(StrCat("index ", index, " outside the WAL's entries [", first_index_,
                                      ", ", LastIndexLocked(), "]"));
  }
  return terms_[index - first_index_];
}

// ---- Readers ----

uint64_t Log::FirstIndex() const {
  absl::MutexLock l(&mu_);
  return first_index_;
}

uint64_t Log::LastIndex() const {
  absl::MutexLock l(&mu_);
  return LastIndexLocked();
}

OpId Log::LastOpId() const {
  absl::MutexLock l(&mu_);
  const uint64_t last = LastIndexLocked();
  return OpId{*TermLocked(last), last};
}

absl::StatusOr<uint64_t> Log::Term(uint64_t index) const {
  absl::MutexLock l(&mu_);
  return TermLocked(index);
}

int64_t Log::num_syncs() const {
  absl::MutexLock l(&mu_);
  return num_syncs_;
}

std::vector<uint64_t> Log::SegmentSeqs() const {
  absl::MutexLock l(&mu_);
  std::vector<uint64_t> seqs;
  for (const auto& [seq, seg] : segments_) seqs.push_back(seq);
  return seqs;
}

absl::Status Log::ReadBatch(const Segment& segment, const BatchPos& pos,
                            uint64_t expected_first_index, std::string* buf,
                            std::vector<EntryView>* entries) const {
  buf->resize(pos.frame_size);
  std::string_view data;
  BASALT_RETURN_IF_ERROR(segment.reader->ReadAt(pos.offset, pos.frame_size, buf->data(), &data));
  const std::string& name = segment.reader->filename();
  FrameResult frame = ReadFrame(data);
  if (frame.state != FrameState::kOk || frame.frame_size != pos.frame_size) {
    return absl::DataLossError(StrCat("WAL segment ", name, " corrupt at offset ", pos.offset, ": ",
                                      data.size() < pos.frame_size ? "short read" : frame.reason));
  }
  std::string_view batch = frame.payload;
  absl::Status s;
  if (shared_) {
    // A server log's record: it must be an append of this group.
    ServerRecord record;
    s = DecodeServerRecord(frame.payload, &record);
    if (s.ok() && (record.kind != RecordKind::kAppend || record.group != options_.log_id)) {
      s = absl::DataLossError(StrCat("not an append record of group ", options_.log_id));
    }
    batch = record.batch;
  }
  if (s.ok()) s = DecodeBatch(batch, entries);
  if (s.ok() && entries->front().index != expected_first_index) {
    s = absl::DataLossError("unexpected first index");
  }
  return PrependToStatus(s, StrCat("WAL segment ", name, " offset ", pos.offset));
}

absl::StatusOr<std::vector<LogEntry>> Log::Entries(uint64_t lo, uint64_t hi,
                                                   uint64_t max_bytes) const {
  if (lo >= hi) return absl::InvalidArgumentError(StrCat("empty range [", lo, ", ", hi, ")"));
  std::vector<LogEntry> out;
  uint64_t bytes = 0;
  uint64_t next = lo;
  std::string buf;
  std::vector<EntryView> views;
  while (next < hi) {
    std::shared_ptr<Segment> seg;
    BatchPos pos;
    uint64_t batch_first;
    {
      absl::MutexLock l(&mu_);
      if (next < first_index_ || hi - 1 > LastIndexLocked()) {
        return absl::NotFoundError(StrCat("entries [", lo, ", ", hi, ") outside the WAL's [",
                                          first_index_, ", ", LastIndexLocked(), "]"));
      }
      auto b = std::prev(batches_.upper_bound(next));
      batch_first = b->first;
      pos = b->second;
      seg = segments_.at(pos.seq);
    }
    BASALT_RETURN_IF_ERROR(ReadBatch(*seg, pos, batch_first, &buf, &views));
    // A server log's group keeps replaced entries in their record: its batch ends at last_index.
    const uint64_t batch_last = std::min(views.back().index, pos.last_index);
    if (batch_last < next) {
      return absl::NotFoundError(StrCat("entry ", next, " was truncated concurrently"));
    }
    for (const EntryView& v : views) {
      if (v.index < next) continue;
      if (v.index >= hi || v.index > batch_last) break;
      LogEntry e = v.ToLogEntry();
      bytes += LogEntrySize(e);
      if (!out.empty() && bytes > max_bytes) return out;
      out.push_back(std::move(e));
      ++next;
    }
  }
  return out;
}

}  // namespace basalt
