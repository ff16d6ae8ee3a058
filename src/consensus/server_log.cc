#include "consensus/server_log.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "absl/synchronization/notification.h"
#include "common/coding.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/thread_name.h"
#include "consensus/log_segment.h"

namespace basalt {

// An operation of the server log itself, run on the writer between rounds.
struct ServerLog::Op {
  std::function<absl::Status()> fn;
  absl::Status result;
  absl::Notification done;
};

ServerLog::ServerLog(Env* env, std::string dir, LogOptions options)
    : env_(env),
      dir_(std::move(dir)),
      options_(std::move(options)),
      writer_(env_, dir_, options_) {}

ServerLog::~ServerLog() { Shutdown(); }

absl::StatusOr<std::unique_ptr<ServerLog>> ServerLog::Open(Env* env, const std::string& dir,
                                                           const LogOptions& options) {
  std::unique_ptr<ServerLog> log(new ServerLog(env, NormalizePath(dir), options));
  BASALT_RETURN_IF_ERROR_PREPEND(log->Recover(), StrCat("opening the server WAL in ", dir));
  return log;
}

absl::Status ServerLog::Start() {
  absl::MutexLock l(&mu_);
  if (started_ || stopping_) return absl::FailedPreconditionError("server WAL already started");
  started_ = true;
  thread_ = std::thread([this] {
    SetCurrentThreadName("wal-server");
    WriterLoop();
  });
  return absl::OkStatus();
}

void ServerLog::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return;
    stopping_ = true;
    LOG_IF(DFATAL, !open_.empty())
        << "server WAL shut down with " << open_.size() << " groups open";
  }
  if (thread_.joinable()) thread_.join();
  // A caller may still be writing a round (its own group's, which should have been closed).
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !writing_; };
  mu_.LockWhen(absl::Condition(&idle));
  mu_.Unlock();
  absl::Status s = writer_.Close();
  LOG_IF(WARNING, !s.ok()) << "closing the server WAL segment in " << dir_ << ": " << s;
}

absl::Status ServerLog::CheckWritableLocked() const {
  if (stopping_) return absl::FailedPreconditionError(StrCat("server WAL in ", dir_, " shut down"));
  if (!error_.ok()) {
    return absl::FailedPreconditionError(
        StrCat("server WAL in ", dir_, " failed earlier: ", error_.message()));
  }
  return absl::OkStatus();
}

std::unique_ptr<Log> ServerLog::NewGroupLog(const std::string& group_id, ServerLog* owner) const {
  LogOptions o = options_;
  o.log_id = group_id;
  return std::unique_ptr<Log>(new Log(env_, dir_, std::move(o), owner, /*shared=*/true));
}

// ---- Groups ----

absl::StatusOr<std::unique_ptr<Log>> ServerLog::OpenGroup(const std::string& group_id) {
  if (group_id.empty() || group_id.size() > kMaxLogIdBytes) {
    return absl::InvalidArgumentError(StrCat("bad group id '", group_id, "'"));
  }
  std::unique_ptr<Log> log;
  BASALT_RETURN_IF_ERROR(RunOp([&]() -> absl::Status {
    std::unique_ptr<Log> closed;
    {
      absl::MutexLock l(&mu_);
      if (stopping_) return absl::FailedPreconditionError("server WAL shut down");
      if (open_.contains(group_id)) {
        return absl::FailedPreconditionError(StrCat("the log of ", group_id, " is open already"));
      }
      if (auto it = closed_.find(group_id); it != closed_.end()) {
        closed = std::move(it->second);
        closed_.erase(it);
      }
      log = NewGroupLog(group_id, this);
      open_[group_id] = log.get();
    }
    if (closed != nullptr) log->TakeStateFrom(closed.get());
    return absl::OkStatus();
  }));
  return log;
}

void ServerLog::CloseGroup(Log* log) {
  const std::string& id = log->options_.log_id;
  absl::Status s = RunOp([&]() -> absl::Status {
    std::unique_ptr<Log> closed = NewGroupLog(id, nullptr);
    closed->TakeStateFrom(log);
    absl::MutexLock l(&mu_);
    ready_.erase(log);
    open_.erase(id);
    closed_[id] = std::move(closed);
    return absl::OkStatus();
  });
  CHECK(s.ok()) << s;
}

absl::Status ServerLog::DropGroup(const std::string& group_id) {
  return RunOp([&]() -> absl::Status {
    {
      absl::MutexLock l(&mu_);
      BASALT_RETURN_IF_ERROR(CheckWritableLocked());
      if (open_.contains(group_id)) {
        return absl::FailedPreconditionError(StrCat("the log of ", group_id, " is open"));
      }
      if (!closed_.contains(group_id)) return absl::OkStatus();
    }
    ServerRecord drop;
    drop.kind = RecordKind::kDrop;
    drop.group = group_id;
    std::string frames(kFrameHeaderSize, '\0');
    frames.append(EncodeRecordFrame(drop));
    std::shared_ptr<SegmentFile> seg;
    BASALT_RETURN_IF_ERROR(WriteFrames(&frames, &seg).status());
    {
      absl::MutexLock l(&mu_);
      closed_.erase(group_id);
    }
    CollectSegments();
    return absl::OkStatus();
  });
}

absl::Status ServerLog::ImportGroup(const std::string& group_id, const Log& old) {
  return RunOp([&]() -> absl::Status {
    {
      absl::MutexLock l(&mu_);
      BASALT_RETURN_IF_ERROR(CheckWritableLocked());
      if (open_.contains(group_id)) {
        return absl::FailedPreconditionError(StrCat("the log of ", group_id, " is open"));
      }
    }
    // A reset first: the import replaces whatever an interrupted earlier import left.
    const uint64_t first = old.FirstIndex();
    const uint64_t last = old.LastIndex();
    BASALT_ASSIGN_OR_RETURN(const uint64_t prev_term, old.Term(first - 1));
    ServerRecord reset;
    reset.kind = RecordKind::kReset;
    reset.group = group_id;
    reset.index = first - 1;
    reset.term = prev_term;
    std::unique_ptr<Log> group = NewGroupLog(group_id, nullptr);
    std::string frames(kFrameHeaderSize, '\0');
    frames.append(EncodeRecordFrame(reset));
    std::shared_ptr<SegmentFile> seg;
    BASALT_ASSIGN_OR_RETURN(uint64_t base, WriteFrames(&frames, &seg));
    {
      absl::MutexLock gl(&group->mu_);
      group->ResetLocked(OpId{prev_term, first - 1}, seg);
    }
    // One round per chunk of entries, each published once written.
    uint64_t term_before = prev_term;
    std::vector<uint64_t> terms;
    for (uint64_t next = first; next <= last;) {
      BASALT_ASSIGN_OR_RETURN(std::vector<LogEntry> entries, old.Entries(next, last + 1, 4 << 20));
      std::string encoded;
      terms.clear();
      for (const LogEntry& e : entries) {
        AppendEncodedEntry(e, &encoded);
        terms.push_back(e.term);
      }
      frames.assign(kFrameHeaderSize, '\0');
      AppendAppendRecordFrame(group_id, term_before, next, static_cast<uint32_t>(entries.size()),
                              encoded, &frames);
      BASALT_ASSIGN_OR_RETURN(base, WriteFrames(&frames, &seg));
      absl::MutexLock gl(&group->mu_);
      BASALT_RETURN_IF_ERROR(group->ApplyAppendLocked(
          seg, base + kFrameHeaderSize, static_cast<uint32_t>(frames.size() - kFrameHeaderSize),
          next, term_before, terms));
      term_before = terms.back();
      next += entries.size();
    }
    // The caller deletes the old log next: the copy must be durable even without force_fsync.
    if (!options_.force_fsync) BASALT_RETURN_IF_ERROR(writer_.Sync());
    absl::MutexLock l(&mu_);
    closed_[group_id] = std::move(group);
    return absl::OkStatus();
  });
}

bool ServerLog::HasGroup(const std::string& group_id) const {
  absl::MutexLock l(&mu_);
  return open_.contains(group_id) || closed_.contains(group_id);
}

std::vector<std::string> ServerLog::GroupIds() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> ids;
  for (const auto& [id, log] : open_) ids.push_back(id);
  for (const auto& [id, log] : closed_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<Log*> ServerLog::AllGroupsLocked() const {
  std::vector<Log*> all;
  for (const auto& [id, log] : open_) all.push_back(log);
  for (const auto& [id, log] : closed_) all.push_back(log.get());
  return all;
}

int64_t ServerLog::num_syncs() const {
  absl::MutexLock l(&mu_);
  return num_syncs_;
}

ServerLog::Stats ServerLog::stats() const {
  absl::MutexLock l(&mu_);
  Stats s;
  s.rounds = num_rounds_;
  s.writer_thread_turns = num_writer_thread_turns_;
  s.records = num_records_;
  s.rewrites = num_rewrites_;
  s.segments = static_cast<int64_t>(segments_.size());
  s.groups = static_cast<int64_t>(open_.size() + closed_.size());
  return s;
}

std::vector<uint64_t> ServerLog::SegmentSeqs() const {
  absl::MutexLock l(&mu_);
  std::vector<uint64_t> seqs;
  for (const auto& [seq, seg] : segments_) seqs.push_back(seq);
  return seqs;
}

// ---- The writer ----

void ServerLog::MarkReady(Log* log, bool caller_runs) {
  absl::MutexLock l(&mu_);
  ready_.insert(log);
  if (caller_runs) ++waiting_callers_;
}

void ServerLog::RunOrWait(absl::Notification* done) {
  absl::MutexLock l(&mu_);
  // Conditions are evaluated when mu_ is released, which the writer does after each round.
  auto done_or_free = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return done->HasBeenNotified() || !writing_;
  };
  while (true) {
    mu_.Await(absl::Condition(&done_or_free));
    if (done->HasBeenNotified()) {
      // Released with mu_: the writer thread may now run work nobody waits for.
      --waiting_callers_;
      return;
    }
    writing_ = true;
    mu_.Unlock();
    WriteOnce();
    mu_.Lock();
  }
}

absl::Status ServerLog::RunOp(std::function<absl::Status()> fn) {
  Op op;
  op.fn = std::move(fn);
  {
    absl::MutexLock l(&mu_);
    ops_.push_back(&op);
    ++waiting_callers_;
  }
  RunOrWait(&op.done);
  return op.result;
}

void ServerLog::WriterLoop() {
  while (true) {
    // Work whose threads wait for it is theirs to write (MarkReady).
    auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !writing_ &&
             (stopping_ || (waiting_callers_ == 0 && (!ready_.empty() || !ops_.empty())));
    };
    mu_.LockWhen(absl::Condition(&has_work));
    if (ready_.empty() && ops_.empty()) {
      mu_.Unlock();
      return;
    }
    writing_ = true;
    ++num_writer_thread_turns_;
    mu_.Unlock();
    WriteOnce();
  }
}

void ServerLog::WriteOnce() {
  std::deque<Op*> ops;
  {
    absl::MutexLock l(&mu_);
    DCHECK(writing_);
    ops.swap(ops_);
  }
  for (Op* op : ops) {
    op->result = op->fn();
    op->done.Notify();
  }
  std::vector<Log*> logs;
  {
    absl::MutexLock l(&mu_);
    logs.assign(ready_.begin(), ready_.end());
    ready_.clear();
  }
  if (!logs.empty()) WriteRound(logs);
  absl::MutexLock l(&mu_);
  writing_ = false;
}

void ServerLog::WriteRound(const std::vector<Log*>& logs) {
  struct Taken {
    Log* log;
    std::vector<std::unique_ptr<Log::Task>> tasks;
    std::vector<uint64_t> offsets;
    std::vector<uint32_t> sizes;
    std::vector<std::shared_ptr<SegmentFile>> segs;
    absl::Status failed;  // The group failed earlier: its tasks fail unwritten.
  };
  std::vector<Taken> taken;
  bool collect = false;
  for (Log* log : logs) {
    absl::Status failed;
    std::vector<std::unique_ptr<Log::Task>> tasks = log->TakeQueued(&failed);
    if (!tasks.empty()) taken.push_back(Taken{log, std::move(tasks), {}, {}, {}, failed});
  }
  absl::Status s;
  {
    absl::MutexLock l(&mu_);
    s = error_;
  }
  // Records go out in rounds of about kRoundTargetBytes: a round is one frame (log_segment.h).
  // Sized once: growing the buffer record by record would copy a large round again and again.
  size_t bytes = kFrameHeaderSize;
  auto record_bytes = [](const Log::Task& task) {
    // The frame, the record's header, the batch's first index and count, the entries.
    return kFrameHeaderSize + kMaxRecordOverhead + kMaxVarint64Length + kMaxVarint32Length +
           task.encoded.size();
  };
  for (const Taken& t : taken) {
    for (const std::unique_ptr<Log::Task>& task : t.tasks) bytes += record_bytes(*task);
  }
  std::string frames;
  frames.reserve(std::min(bytes, kRoundTargetBytes + (kRoundTargetBytes >> 2)));
  frames.assign(kFrameHeaderSize, '\0');
  std::vector<std::pair<size_t, size_t>> pending;  // (taken, task) of the records in `frames`.
  bool wrote = false;
  auto flush = [&]() -> absl::Status {
    if (pending.empty()) return absl::OkStatus();
    std::shared_ptr<SegmentFile> seg;
    absl::StatusOr<uint64_t> base = WriteFrames(&frames, &seg);
    if (base.ok()) {
      absl::MutexLock l(&mu_);
      num_records_ += static_cast<int64_t>(pending.size());
    }
    if (!base.ok() && wrote) {
      // Records of earlier rounds are durable but will not be published: only a restart's replay
      // can bring memory and disk together again.
      absl::MutexLock l(&mu_);
      if (error_.ok()) error_ = base.status();
    }
    BASALT_RETURN_IF_ERROR(base.status());
    wrote = true;
    for (const auto& [ti, k] : pending) {
      taken[ti].offsets[k] += *base;
      taken[ti].segs[k] = seg;
    }
    pending.clear();
    frames.assign(kFrameHeaderSize, '\0');
    return absl::OkStatus();
  };
  for (size_t ti = 0; ti < taken.size(); ++ti) {
    Taken& t = taken[ti];
    t.segs.resize(t.tasks.size());
    for (size_t k = 0; k < t.tasks.size(); ++k) {
      if (!t.failed.ok()) {
        t.offsets.push_back(0);
        t.sizes.push_back(0);
        continue;
      }
      // A round stays within a frame's limit, whatever the size of one batch (up to about
      // kMaxFramePayloadBytes itself: EncodeAppend leaves room for the framing).
      if (s.ok() && (frames.size() > kRoundTargetBytes ||
                     frames.size() + record_bytes(*t.tasks[k]) > kMaxFramePayloadBytes)) {
        s = flush();
      }
      t.offsets.push_back(frames.size());
      t.sizes.push_back(t.log->AppendRecordFrame(*t.tasks[k], &frames));
      if (t.sizes.back() == 0) {
        collect = true;  // A GC.
      } else {
        pending.emplace_back(ti, k);
      }
    }
  }
  if (s.ok()) s = flush();
  for (Taken& t : taken) {
    t.log->PublishWritten(std::move(t.tasks), t.segs, t.offsets, t.sizes,
                          t.failed.ok() ? s : t.failed);
  }
  if (s.ok() && collect) CollectSegments();
}

absl::StatusOr<uint64_t> ServerLog::WriteFrames(std::string* frames,
                                                std::shared_ptr<SegmentFile>* segment) {
  DCHECK_GT(frames->size(), kFrameHeaderSize);
  SealFrameAt(0, frames);
  absl::Status s;
  {
    absl::MutexLock l(&mu_);
    s = error_;
  }
  if (s.ok() && writer_.write_failed()) {
    s = writer_.Rewind();
    if (!s.ok()) return s;  // Maybe the disk is still full; the next round tries again.
  }
  const bool roll = writer_.is_open() && active_has_records_ &&
                    writer_.size() + frames->size() > options_.segment_size_bytes;
  if (s.ok() && (roll || !writer_.is_open())) {
    if (writer_.is_open()) {
      s = writer_.Close();  // Syncs: a failure leaves the segment's state unknown.
      if (!s.ok()) {
        absl::MutexLock l(&mu_);
        if (error_.ok()) error_ = s;
        return s;
      }
    }
    SegmentHeader header;
    header.flags = kSegmentFlagServerLog;
    header.seq = writer_.seq() + 1;
    absl::StatusOr<std::shared_ptr<SegmentFile>> seg = writer_.Create(header);
    s = seg.status();
    if (s.ok()) {
      absl::MutexLock l(&mu_);
      segments_[header.seq] = std::move(*seg);
      active_has_records_ = false;
    }
  }
  if (!s.ok()) return s;
  absl::StatusOr<uint64_t> offset = writer_.Append(*frames);
  absl::MutexLock l(&mu_);
  if (!offset.ok()) {
    absl::Status e =
        PrependToStatus(offset.status(), StrCat("server WAL append in ", dir_, " failed"));
    if (!writer_.write_failed() && error_.ok()) error_ = e;
    return e;
  }
  active_has_records_ = true;
  if (options_.force_fsync) ++num_syncs_;
  ++num_rounds_;
  *segment = segments_.at(writer_.seq());
  return *offset;
}

void ServerLog::CollectSegments() {
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<uint64_t> doomed;
    std::vector<Log*> pinning;  // The groups that pin the oldest segment kept.
    std::vector<Log*> all;
    {
      absl::MutexLock l(&mu_);
      all = AllGroupsLocked();
    }
    // Outside mu_ (lock order); the groups stay, as only the writer (this thread) changes them.
    uint64_t keep_from = writer_.seq();
    std::vector<std::pair<uint64_t, Log*>> pins;
    for (Log* log : all) {
      absl::MutexLock gl(&log->mu_);
      const uint64_t pin = log->PinnedSeqLocked();
      if (pin == 0) continue;
      pins.emplace_back(pin, log);
      keep_from = std::min(keep_from, pin);
    }
    // Without force_fsync the records that took over from the doomed segments (a rewrite, a
    // group's newest batch) may be only in the OS's cache: make them durable first.
    if (!options_.force_fsync && writer_.is_open() && keep_from > SegmentSeqs().front()) {
      absl::Status s = writer_.Sync();
      if (!s.ok()) {
        LOG(WARNING) << "syncing the server WAL before collecting segments: " << s;
        return;
      }
    }
    std::map<uint64_t, std::shared_ptr<SegmentFile>> unpublished;
    {
      absl::MutexLock l(&mu_);
      while (!segments_.empty() && segments_.begin()->first < keep_from) {
        doomed.push_back(segments_.begin()->first);
        unpublished.insert(segments_.extract(segments_.begin()));
      }
      if (pass == 0 && segments_.size() > kRewriteAboveSegments) {
        for (const auto& [pin, log] : pins) {
          if (pin == keep_from) pinning.push_back(log);
        }
      }
    }
    // Unpublished first, then deleted, oldest first, each deletion durable before the next, so
    // that the segments left are always consecutive (recovery refuses a gap). A reader that
    // holds a segment keeps reading the unlinked file. A deletion that fails puts it and the
    // newer doomed ones back, to be collected again later.
    for (size_t i = 0; i < doomed.size(); ++i) {
      absl::Status s = env_->DeleteFile(writer_.Path(doomed[i]));
      if (s.ok()) s = env_->SyncDir(dir_);
      if (!s.ok()) {
        LOG(WARNING) << "deleting server WAL segment " << writer_.Path(doomed[i]) << ": " << s;
        absl::MutexLock l(&mu_);
        for (size_t j = i; j < doomed.size(); ++j) {
          segments_[doomed[j]] = unpublished.at(doomed[j]);
        }
        return;
      }
    }
    if (pinning.empty()) return;
    bool rewrote = false;
    for (Log* log : pinning) {
      uint64_t bytes = 0;
      {
        absl::MutexLock gl(&log->mu_);
        for (const auto& [first, pos] : log->batches_) bytes += pos.frame_size;
      }
      // Small enough to be one round (SealFrameAt's limit) and cheap next to a segment.
      if (bytes > std::min<uint64_t>(options_.segment_size_bytes / 4, kRoundTargetBytes)) continue;
      absl::Status s = Rewrite(log);
      if (!s.ok()) {
        LOG(WARNING) << "rewriting the server WAL entries of " << log->options_.log_id << ": " << s;
        return;
      }
      rewrote = true;
    }
    if (!rewrote) return;
  }
}

absl::Status ServerLog::Rewrite(Log* log) {
  const std::string& group = log->options_.log_id;
  uint64_t first_index;
  uint64_t prev_term;
  std::vector<std::pair<uint64_t, Log::BatchPos>> batches;
  std::vector<uint64_t> prev_terms;
  std::vector<std::shared_ptr<SegmentFile>> segs;
  {
    absl::MutexLock gl(&log->mu_);
    first_index = log->first_index_;
    prev_term = log->prev_term_;
    for (const auto& [first, pos] : log->batches_) {
      batches.emplace_back(first, pos);
      prev_terms.push_back(first == first_index ? prev_term : *log->TermLocked(first - 1));
      segs.push_back(log->segments_.at(pos.seq));
    }
  }
  std::string frames(kFrameHeaderSize, '\0');
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> sizes;
  if (batches.empty()) {
    ServerRecord r;
    r.kind = RecordKind::kReset;
    r.group = group;
    r.index = first_index - 1;
    r.term = prev_term;
    frames.append(EncodeRecordFrame(r));
  }
  std::string buf;
  std::vector<EntryView> views;
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& [first, pos] = batches[i];
    BASALT_RETURN_IF_ERROR(log->ReadBatch(*segs[i], pos, first, &buf, &views));
    std::string encoded;
    const uint64_t count = pos.last_index - first + 1;
    for (uint64_t k = 0; k < count; ++k) AppendEncodedEntry(views[k], &encoded);
    offsets.push_back(frames.size());
    AppendAppendRecordFrame(group, prev_terms[i], first, static_cast<uint32_t>(count), encoded,
                            &frames);
    sizes.push_back(static_cast<uint32_t>(frames.size() - offsets.back()));
  }
  std::shared_ptr<SegmentFile> seg;
  BASALT_ASSIGN_OR_RETURN(const uint64_t base, WriteFrames(&frames, &seg));
  {
    absl::MutexLock l(&mu_);
    ++num_rewrites_;
    num_records_ += static_cast<int64_t>(std::max<size_t>(batches.size(), 1));
  }
  absl::MutexLock gl(&log->mu_);
  log->segments_.clear();
  log->segments_[seg->seq] = seg;
  for (size_t i = 0; i < batches.size(); ++i) {
    Log::BatchPos& pos = log->batches_.at(batches[i].first);
    pos.seq = seg->seq;
    pos.offset = base + offsets[i];
    pos.frame_size = sizes[i];
  }
  return absl::OkStatus();
}

// ---- Recovery ----

absl::Status ServerLog::Recover() {
  Unplaced unplaced;
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> seqs, ListSegmentFiles(env_, dir_));
  if (!seqs.empty()) {
    // Records are written only after a segment's header is synced: a newest segment without a
    // whole header holds none (a crash hit its creation).
    const std::string path = writer_.Path(seqs.back());
    std::string contents;
    BASALT_RETURN_IF_ERROR(ReadFileToString(env_, path, &contents));
    SegmentHeader header;
    size_t header_size;
    absl::Status s = DecodeSegmentHeader(contents, path, &header, &header_size);
    if (!s.ok() && absl::IsDataLoss(s) && contents.size() <= kMaxSegmentHeaderSize) {
      LOG(WARNING) << "deleting server WAL segment " << path
                   << " whose creation did not complete: " << s;
      BASALT_RETURN_IF_ERROR(env_->DeleteFile(path));
      BASALT_RETURN_IF_ERROR(env_->SyncDir(dir_));
      seqs.pop_back();
    }
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (i > 0 && seqs[i] != seqs[i - 1] + 1) {
      return absl::DataLossError(StrCat("server WAL segment ", SegmentFileName(seqs[i - 1] + 1),
                                        " is missing before ", SegmentFileName(seqs[i])));
    }
    BASALT_RETURN_IF_ERROR(RecoverSegment(seqs[i], i + 1 == seqs.size(), &unplaced));
  }
  if (!unplaced.empty()) return unplaced.begin()->second;
  if (seqs.empty()) {
    SegmentHeader header;
    header.flags = kSegmentFlagServerLog;
    header.seq = 1;
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<SegmentFile> seg, writer_.Create(header));
    absl::MutexLock l(&mu_);
    segments_[1] = std::move(seg);
    return absl::OkStatus();
  }
  return writer_.OpenExisting(seqs.back());
}

absl::Status ServerLog::RecoverSegment(uint64_t seq, bool is_last, Unplaced* unplaced) {
  const std::string path = writer_.Path(seq);
  std::string contents;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env_, path, &contents));
  SegmentHeader header;
  size_t header_size;
  BASALT_RETURN_IF_ERROR(DecodeSegmentHeader(contents, path, &header, &header_size));
  if ((header.flags & kSegmentFlagServerLog) == 0) {
    return absl::FailedPreconditionError(
        StrCat("WAL segment ", path, " belongs to a group's own log, not a server log"));
  }
  if (header.seq != seq) {
    return absl::DataLossError(
        StrCat("WAL segment ", path, " has sequence number ", header.seq, " in its header"));
  }
  struct Found {
    uint64_t offset;
    uint32_t size;
    std::string_view payload;
  };
  std::vector<Found> found;
  BASALT_ASSIGN_OR_RETURN(
      FrameWalk walk,
      WalkFrames(
          contents, header_size, path, is_last,
          [&](std::string_view round, uint64_t offset, uint32_t) {
            // A round's records: every one whole and valid (the round's crc matched).
            uint64_t at = offset + kFrameHeaderSize;
            if (round.empty()) return SegmentCorruption(path, offset, "empty round");
            while (!round.empty()) {
              FrameResult r = ReadFrame(round);
              if (r.state != FrameState::kOk) {
                return SegmentCorruption(path, at, StrCat("record in a round: ", r.reason));
              }
              found.push_back(Found{at, static_cast<uint32_t>(r.frame_size), r.payload});
              at += r.frame_size;
              round.remove_prefix(r.frame_size);
            }
            return absl::OkStatus();
          },
          IsRound));
  if (walk.torn_tail) {
    LOG(WARNING) << "server WAL segment " << path << ": discarding a torn tail of "
                 << contents.size() - walk.valid_size << " bytes at offset " << walk.valid_size;
  }
  std::string kept;
  if (is_last && contents.size() > walk.valid_size) {
    // The writer appends at the file's end: the last segment must end with its last record.
    kept.assign(contents, 0, walk.valid_size);
    BASALT_RETURN_IF_ERROR(WriteFileAtomically(env_, path, kept));
  }
  auto seg = std::make_shared<SegmentFile>();
  seg->seq = seq;
  BASALT_ASSIGN_OR_RETURN(seg->reader, env_->NewRandomAccessFile(path));
  absl::MutexLock l(&mu_);
  segments_[seq] = seg;
  std::vector<EntryView> views;
  std::vector<uint64_t> terms;
  for (const Found& f : found) {
    ServerRecord r;
    absl::Status s = DecodeServerRecord(f.payload, &r);
    if (s.ok() && r.kind == RecordKind::kAppend) s = DecodeBatch(r.batch, &views);
    if (!s.ok()) return SegmentCorruption(path, f.offset, std::string(s.message()));
    const std::string group(r.group);
    auto it = closed_.find(group);
    const bool known = it != closed_.end();
    if (r.kind == RecordKind::kDrop) {
      if (known) closed_.erase(it);
      unplaced->erase(group);
      continue;
    }
    // A truncation of a group with no earlier record: what it cut went with older segments.
    if (!known && r.kind == RecordKind::kTruncate) continue;
    if (r.kind == RecordKind::kTruncate) {
      bool stale;
      {
        absl::MutexLock gl(&it->second->mu_);
        stale = r.index < it->second->first_index_;
        if (!stale && r.index <= it->second->LastIndexLocked()) {
          it->second->DropFromLocked(r.index);
        }
      }
      if (stale) {
        // The records before were a suffix the group later replaced, kept only because older
        // segments stayed for other groups (its entries below `index` went with segments
        // collected): its next record, an append or a reset, tells its place.
        closed_.erase(it);
        (*unplaced)[group] = SegmentCorruption(
            path, f.offset,
            StrCat("group ", group, ": truncation at index ", r.index,
                   " below its entries, and no later record tells where its log starts"));
      }
      continue;
    }
    unplaced->erase(group);
    if (!known) it = closed_.emplace(group, NewGroupLog(group, nullptr)).first;
    Log* log = it->second.get();
    absl::MutexLock gl(&log->mu_);
    switch (r.kind) {
      case RecordKind::kAppend: {
        const uint64_t first = views.front().index;
        if (!known) log->ResetLocked(OpId{r.prev_term, first - 1}, nullptr);
        terms.clear();
        for (const EntryView& v : views) terms.push_back(v.term);
        s = log->ApplyAppendLocked(seg, f.offset, f.size, first, r.prev_term, terms);
        break;
      }
      case RecordKind::kReset:
        log->ResetLocked(OpId{r.term, r.index}, seg);
        break;
      case RecordKind::kTruncate:
      case RecordKind::kDrop:
        break;
    }
    if (!s.ok()) {
      return SegmentCorruption(path, f.offset,
                               StrCat("group ", group, ": ", std::string(s.message())));
    }
  }
  return absl::OkStatus();
}

}  // namespace basalt
