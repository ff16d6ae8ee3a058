#pragma once

// Log: the write-ahead log of one Raft group, which is also its Raft log. Entries live in segment
// files (log_segment.h, byte tables in docs/wal.md) of about --log_segment_size_mb, either under
// a directory of the group's own, where one appender thread writes them with group commit, or in
// a ServerLog (server_log.h) shared by every group of a server, whose writer commits the queued
// batches of all of them with one sync.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/env.h"
#include "consensus/log_reader.h"
#include "consensus/log_segment.h"
#include "consensus/raft_types.h"
#include "consensus/segment_writer.h"

namespace basalt {

class ServerLog;

// The durable Raft log of one group.
//
// Lifecycle: Open() recovers the directory (creating an empty log if there is none); the reader
// methods work from then on. Start() launches the appender thread, required by every mutating
// call; Shutdown() (or the destructor) completes every queued operation, runs its callback, and
// stops the thread.
//
// Writes are queued and executed in order by one writing thread at a time: a caller blocked in
// Append, TruncateSuffix, GC or ResetToSnapshot that finds nobody writing runs the queue itself
// (no hand-off: the Raft worker's append costs no thread wakeup), otherwise the appender thread
// or the caller already writing runs it:
//  - AsyncAppend() queues a batch; the appender takes every queued batch (up to a few MiB),
//    writes them as one frame, syncs once (group commit), publishes them to readers, and then
//    runs their callbacks in queue order. An entry may count toward a Raft majority only after
//    its callback reported OK: then it is durable (with force_fsync).
//  - TruncateSuffix() and GC() queue an operation and wait for it.
// A failed write or sync puts the log in a failed state: that operation and every later mutating
// call fail with the error (what reached the disk is unknown until the log is reopened, whose
// recovery sorts it out). Readers keep working on the entries published before the failure.
//
// Invariants: the log holds the entries [FirstIndex(), LastIndex()], consecutive, with
// non-decreasing terms; segments have consecutive sequence numbers, each starting at the index
// after the previous one's last entry; only the newest segment (the active one) is written.
// LastIndex() and the reader methods see only published entries (written and, with force_fsync,
// synced).
//
// Thread-safe. Appends must arrive in index order, so a caller appending from several threads
// serializes choosing the index with the AsyncAppend call. Callbacks run on the writing thread:
// they must be quick and must not call the blocking methods (Append, TruncateSuffix, GC,
// ResetToSnapshot, Shutdown), which would wait for that very thread.
//
// A group of a server log (ServerLog::OpenGroup) has the same interface and contract, with
// these differences: it has no directory or appender thread of its own (Start() only permits
// writes); the server log's writer, which may be another group's caller, takes its queued
// operations together with other groups' and runs its callbacks; its entries live in the server
// log's segments, of which segments_ holds those it still needs (GC lets go of them, the server
// log deletes them); prev_term_ keeps the term before FirstIndex(); and a truncation keeps the
// replaced entries in their record, so a batch ends at its BatchPos::last_index.
class Log : public LogReader {
 public:
  using StatusCallback = std::function<void(const absl::Status&)>;

  // Opens (or creates) the log in directory `dir`, creating the directory if needed, and
  // recovers it: every complete batch is kept, a torn tail of the last segment (a partial final
  // batch with nothing valid after it) is cut off and the file truncated, and a segment left
  // empty by a crash while it was being created is removed. Returns DATA_LOSS, naming the file and
  // offset, for damage anywhere else (a bad batch with valid data after it, damage in a segment
  // that is not the last, a missing segment, entries out of order), FAILED_PRECONDITION for
  // segments of another log id, and I/O errors. `env` is borrowed and must outlive the log.
  static absl::StatusOr<std::unique_ptr<Log>> Open(Env* env, const std::string& dir,
                                                   const LogOptions& options);

  ~Log() override;

  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Starts the appender thread (a server log's group has none: the server log writes).
  // FAILED_PRECONDITION if already started or shut down.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Executes every queued operation (running its callback), then stops the appender thread and
  // closes the active segment. Idempotent. Later mutating calls fail with FAILED_PRECONDITION.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Queues `entries` for appending; `callback` runs on the writing thread once they are durable
  // (OK) or failed (the error). The entries must be consecutive with non-decreasing terms, the
  // first one at most one past the last queued entry: if it is at or below it, the entries from
  // there on are replaced (a follower's log conflicting with its leader's), like TruncateSuffix.
  // Returns without queuing (and without calling `callback`): INVALID_ARGUMENT for entries that
  // break these rules or are too large (kMaxEntryDataBytes), FAILED_PRECONDITION if not started,
  // shut down, or failed earlier (with that error's message).
  absl::Status AsyncAppend(const std::vector<LogEntry>& entries, StatusCallback callback)
      ABSL_LOCKS_EXCLUDED(mu_);
  // AsyncAppend and wait for the callback. Returns its status.
  absl::Status Append(const std::vector<LogEntry>& entries) ABSL_LOCKS_EXCLUDED(mu_);

  // Durably removes the entries with index >= `index` (after the queued appends before it), across
  // segments if needed; a no-op if there are none. INVALID_ARGUMENT if `index` < FirstIndex();
  // FAILED_PRECONDITION as AsyncAppend; I/O errors (which fail the log).
  absl::Status TruncateSuffix(uint64_t index) ABSL_LOCKS_EXCLUDED(mu_);

  // Deletes the oldest segments whose entries are all below `retain_from_index`, never the
  // active segment, and returns how many it deleted. Afterwards FirstIndex() <= retain_from_index
  // unless the active segment starts after it. FAILED_PRECONDITION as AsyncAppend; I/O errors
  // (which do not fail the log: the segments not yet deleted stay).
  absl::StatusOr<int> GC(uint64_t retain_from_index) ABSL_LOCKS_EXCLUDED(mu_);

  // Replaces the whole log by an empty one whose previous entry is `snapshot` (after a tablet
  // copy installed a snapshot): FirstIndex() becomes snapshot.index + 1. Crash-safe: a new
  // segment flagged as starting a new log is made durable before the old ones are deleted.
  absl::Status ResetToSnapshot(OpId snapshot) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- LogReader ----
  uint64_t FirstIndex() const override ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t LastIndex() const override ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_FOUND outside [FirstIndex() - 1, LastIndex()].
  absl::StatusOr<uint64_t> Term(uint64_t index) const override ABSL_LOCKS_EXCLUDED(mu_);
  // Reads the entries [lo, hi) from the segment files, stopping once their total LogEntrySize
  // would exceed max_bytes (but returning at least one). REQUIRES: lo < hi. NOT_FOUND if the range
  // is not within [FirstIndex(), LastIndex()]; DATA_LOSS if a batch fails its checksum; I/O
  // errors. A range truncated or collected concurrently may still be returned as it was.
  absl::StatusOr<std::vector<LogEntry>> Entries(uint64_t lo, uint64_t hi,
                                                uint64_t max_bytes) const override
      ABSL_LOCKS_EXCLUDED(mu_);

  OpId LastOpId() const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Introspection (tests, metrics) ----
  // Number of group commits that synced the active segment.
  int64_t num_syncs() const ABSL_LOCKS_EXCLUDED(mu_);
  // Sequence numbers of the segments, oldest first.
  std::vector<uint64_t> SegmentSeqs() const ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& dir() const { return dir_; }

 private:
  friend class ServerLog;
  using Segment = SegmentFile;
  // A queued mutation, executed by the writing thread (DrainQueue, or a server log's writer).
  struct Task {
    enum class Kind { kAppend, kTruncate, kGC, kReset };
    Kind kind = Kind::kAppend;
    // kAppend: the entries, encoded, their terms, and the term of the entry before them.
    uint64_t first_index = 0;
    uint64_t prev_term = 0;
    std::vector<uint64_t> terms;
    std::string encoded;
    // kTruncate, kGC: the index argument. kReset: the snapshot.
    uint64_t index = 0;
    OpId snapshot;
    // Runs with the outcome; may be empty.
    StatusCallback callback;
    // kGC: receives the number of segments deleted.
    int* gc_deleted = nullptr;
  };

  // Where a batch lives.
  struct BatchPos {
    uint64_t seq = 0;
    uint64_t offset = 0;
    uint32_t frame_size = 0;
    uint64_t last_index = 0;
  };

  // A log of its own in `dir` (server null, shared false), or group options.log_id of a server
  // log (shared): kept open by `server`, or, with server null, kept by the server log while the
  // group is closed (never started).
  Log(Env* env, std::string dir, LogOptions options, ServerLog* server = nullptr,
      bool shared = false);

  // ---- Recovery ----
  absl::Status Recover() ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes a newest segment whose header never became durable, and the segments before the
  // newest one that starts a new log (ResetToSnapshot).
  absl::Status DropObsoleteSegments(std::vector<uint64_t>* seqs);
  absl::Status ReadSegmentHeader(uint64_t seq, SegmentHeader* header, uint64_t* file_size);
  // Scans segment `seq`, cutting off a torn tail if `is_last`, and publishes its batches.
  absl::Status RecoverSegment(uint64_t seq, bool is_last) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Queueing ----
  // Checks and encodes a batch (AsyncAppend's rules); no lock needed.
  static absl::StatusOr<std::unique_ptr<Task>> EncodeAppend(const std::vector<LogEntry>& entries);
  // Queues an encoded batch (after a truncation if it replaces queued or written entries).
  absl::Status QueueAppendLocked(std::unique_ptr<Task> task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // QueueAppendLocked, then RunOrWaitLocked; returns the batch's status.
  absl::Status QueueAppendAndWaitLocked(std::unique_ptr<Task> task)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `task`, releases mu_ until it has run, and returns its status.
  absl::Status EnqueueAndWait(std::unique_ptr<Task> task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases mu_ until `done` is notified, draining the queue on this thread if no other thread
  // is writing.
  void RunOrWaitLocked(absl::Notification* done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- Writing (the appender thread, or a blocked caller) ----
  void AppenderLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the queued tasks in order until the queue is empty, then clears writing_.
  // REQUIRES: this thread set writing_.
  void DrainQueue() ABSL_LOCKS_EXCLUDED(mu_);
  void RunAppendGroup(std::vector<std::unique_ptr<Task>> group) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status WriteGroup(const std::vector<std::unique_ptr<Task>>& group) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DoTruncate(uint64_t index) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int> DoGC(uint64_t retain_from_index) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DoReset(OpId snapshot) ABSL_LOCKS_EXCLUDED(mu_);
  // Creates segment `seq` durably (file and directory synced), opens its writer as the active
  // one, and returns it for the caller to publish.
  absl::StatusOr<std::shared_ptr<Segment>> CreateSegment(uint64_t seq, uint64_t first_index,
                                                         uint64_t prev_term, uint32_t flags)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Durably replaces segment `seq`'s file by `contents`.
  absl::Status RewriteSegment(uint64_t seq, const std::string& contents) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- A server log's group (shared_; ServerLog calls these on its writing thread) ----
  // Moves the published state of `other` (a group's log closed or recovered) here.
  void TakeStateFrom(Log* other) ABSL_LOCKS_EXCLUDED(mu_);
  // Appends the server log record of `task` to *frames and returns its size (0 for a GC, which
  // has none).
  uint32_t AppendRecordFrame(const Task& task, std::string* frames) const;
  // Takes the queued tasks for the server log to write; marks them being written. *failed is
  // this log's error, if it failed earlier: then the tasks must fail with it, unwritten.
  std::vector<std::unique_ptr<Task>> TakeQueued(absl::Status* failed) ABSL_LOCKS_EXCLUDED(mu_);
  // Publishes the tasks taken, written (if `status` is OK) in `segments` at `offsets` with
  // `frame_sizes` (0 for a task without a record), then runs their callbacks in order.
  void PublishWritten(std::vector<std::unique_ptr<Task>> tasks,
                      const std::vector<std::shared_ptr<Segment>>& segments,
                      const std::vector<uint64_t>& offsets,
                      const std::vector<uint32_t>& frame_sizes, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Applies an append record of entries [first_index, first_index + terms.size()) written at
  // `offset` of `segment`: they replace the entries from first_index on. A first index below
  // FirstIndex() starts the log over after (first_index - 1, prev_term). DATA_LOSS, saying
  // why, if the record does not follow the entries it replaces (a gap, another previous term,
  // decreasing terms).
  absl::Status ApplyAppendLocked(const std::shared_ptr<Segment>& segment, uint64_t offset,
                                 uint32_t frame_size, uint64_t first_index, uint64_t prev_term,
                                 const std::vector<uint64_t>& terms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Empties the log, whose previous entry becomes `snapshot`; `segment` (may be null) holds the
  // record that says so.
  void ResetLocked(OpId snapshot, const std::shared_ptr<Segment>& segment)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the batches wholly below `retain_from_index` except the last one, and the segments
  // before the first batch kept; returns how many segments it let go.
  int GcSharedLocked(uint64_t retain_from_index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The oldest segment this group needs, or 0 if none (an empty log that never wrote).
  uint64_t PinnedSeqLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return segments_.empty() ? 0 : segments_.begin()->first;
  }

  // ---- Helpers (mu_ held) ----
  std::string SegmentPath(uint64_t seq) const { return writer_.Path(seq); }
  absl::StatusOr<uint64_t> TermLocked(uint64_t index) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Term of entry `index` once every queued operation has run.
  absl::StatusOr<uint64_t> QueuedTermLocked(uint64_t index) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckWritableLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes a batch written at `offset` of the active segment.
  void AddBatchLocked(uint64_t seq, uint64_t offset, uint32_t frame_size, uint64_t first_index,
                      const std::vector<uint64_t>& terms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets entries >= index (in memory only).
  void DropFromLocked(uint64_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t LastIndexLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return first_index_ + terms_.size() - 1;
  }
  // Reads and decodes the batch at `pos` of `segment` into `entries` (views into `*buf`).
  absl::Status ReadBatch(const Segment& segment, const BatchPos& pos, uint64_t expected_first_index,
                         std::string* buf, std::vector<EntryView>* entries) const;

  // Constant after construction.
  Env* const env_;
  const std::string dir_;
  const LogOptions options_;
  // A group of a server log: its frames are records (log_segment.h), segments_ holds the server
  // log's segments this group still needs, and prev_term_ the term before first_index_.
  const bool shared_;
  ServerLog* const server_;  // While open; null otherwise (and for a log of its own).

  // Owned by the thread that set writing_ (and by Open before the appender starts): the active
  // segment's writer, which no other thread touches. Unused by a server log's group.
  SegmentWriter writer_;

  mutable absl::Mutex mu_;
  // Published state: segments by sequence number, batches by first index, and the term of every
  // entry [first_index_, first_index_ + terms_.size()).
  std::map<uint64_t, std::shared_ptr<Segment>> segments_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<uint64_t, BatchPos> batches_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> terms_ ABSL_GUARDED_BY(mu_);
  uint64_t first_index_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t prev_term_ ABSL_GUARDED_BY(mu_) = 0;  // shared_ only.
  // Queue state: the index after the last queued entry and that entry's term, as they will be once
  // every queued operation has run.
  uint64_t next_queued_index_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t last_queued_term_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::unique_ptr<Task>> queue_ ABSL_GUARDED_BY(mu_);
  // A thread is running queued tasks (DrainQueue): the appender, or a caller blocked in Append,
  // TruncateSuffix, GC or ResetToSnapshot that found nobody writing. One at a time, so tasks run
  // in queue order and writer_ has one user. In a server log's group: the server log's writer
  // took tasks (TakeQueued) and has not published them yet.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);  // Set when a write failed; sticky.
  int64_t num_syncs_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread appender_;  // Started by Start(), joined by Shutdown().
};

}  // namespace basalt
