#pragma once

// ServerLog: one write-ahead log shared by every Raft group (tablet replica) of a server, so that
// the batches that groups queue at about the same time reach the disk in one write and one sync
// instead of one sync per group (group commit across tablets; docs/wal.md "Server log").
//
// Each group keeps the per-group Log interface (log.h), which RaftNode, tablet copy and bootstrap
// use unchanged; a group's Log holds an index of where its entries are in the shared segments.
// Segments (byte tables in docs/wal.md) are "wal-<seq>" files in one directory whose header has
// kSegmentFlagServerLog and whose frames each hold one record of one group (log_segment.h):
// entries (which replace that group's entries from their first index on), a truncation, a reset
// to a snapshot, or a drop of the group.
//
// Recovery reads every segment in order and replays the records into each group's index; a torn
// tail of the last segment is cut off as in a group's own log. A segment is deleted once every
// group has collected (Log::GC) the entries it holds; a group that pins the oldest segment while
// others move on (an idle tablet) gets its few live entries rewritten into the active segment.
// Deleting only the oldest segments keeps this true: the records of a group that remain are the
// latest part of its history, starting with one that tells its place (an append, with the term
// before its entries, or a reset).

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/env.h"
#include "consensus/log.h"
#include "consensus/segment_writer.h"

namespace basalt {

// Lifecycle: Open() recovers the directory (creating an empty log if there is none); Start()
// launches the writer thread; groups are opened (OpenGroup) and their Logs started, used, and
// shut down; Shutdown() (or the destructor) stops the thread. Every group's Log must be shut
// down or destroyed before Shutdown.
//
// Writing: a group's Log queues its operations as before. One thread at a time is the writer:
// a caller blocked in a group's Append (or another blocking call) that finds nobody writing, or
// else the writer thread. It takes the queued operations of every group, writes their records in
// one write, syncs once, publishes them to each group, and runs their callbacks. Operations of
// the server log itself (opening, closing, dropping and importing groups, collecting segments)
// run on the writer too, between such rounds. A failed write fails that round's operations; a
// failed sync fails the server log: that round and every later operation of every group fail
// with the error.
//
// Invariants: the segments have consecutive sequence numbers and only the newest (active) one is
// written; only a prefix of them is ever deleted, and only below every group's oldest needed
// segment (Log::PinnedSeqLocked); a group's operations are published, and called back, in its
// queue order, each only after the round that holds it was synced.
//
// Thread-safe. Lock order: a group's Log::mu_, then mu_.
class ServerLog {
 public:
  // Opens (or creates) the server log in `dir` and replays it. DATA_LOSS (naming the file and
  // offset) for damage other than a torn tail of the last segment, a missing segment, or records
  // that do not follow each other; FAILED_PRECONDITION for a segment of a group's own log; I/O
  // errors. `env` is borrowed and must outlive the server log.
  static absl::StatusOr<std::unique_ptr<ServerLog>> Open(Env* env, const std::string& dir,
                                                         const LogOptions& options);
  ~ServerLog();

  ServerLog(const ServerLog&) = delete;
  ServerLog& operator=(const ServerLog&) = delete;

  // Starts the writer thread. FAILED_PRECONDITION if already started or shut down.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs what is queued, stops the writer thread and closes the active segment. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the log of group `group_id` (a tablet id): its entries as recovered or as its last
  // Log left them, or an empty log for a group not known. Its mutating calls need Start(). The
  // Log must be destroyed (or shut down) before this server log. FAILED_PRECONDITION if the
  // group's log is open already or the server log is shut down; INVALID_ARGUMENT for an empty id
  // or one longer than kMaxLogIdBytes.
  absl::StatusOr<std::unique_ptr<Log>> OpenGroup(const std::string& group_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Durably forgets group `group_id`, whose log must not be open: a restart does not bring its
  // entries back and its segments can go. A no-op for a group not known. FAILED_PRECONDITION if
  // its log is open or the server log failed or is shut down (it need not be started).
  absl::Status DropGroup(const std::string& group_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Durably copies the entries of `old` (a group's own log, no longer written) into this server
  // log as group `group_id`, replacing what it held, so the group's log can be retired
  // (migration). FAILED_PRECONDITION as DropGroup; read and I/O errors.
  absl::Status ImportGroup(const std::string& group_id, const Log& old) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether the server log holds a log for `group_id` (open, or closed with its entries).
  bool HasGroup(const std::string& group_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // The groups it holds, sorted.
  std::vector<std::string> GroupIds() const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Introspection (tests, metrics) ----
  // Number of writes that synced the active segment.
  int64_t num_syncs() const ABSL_LOCKS_EXCLUDED(mu_);
  struct Stats {
    int64_t rounds = 0;    // Rounds written (each one write and, with force_fsync, one sync).
    int64_t records = 0;   // Records in them.
    int64_t rewrites = 0;  // Groups whose entries were rewritten to free old segments.
    int64_t segments = 0;  // Segment files now.
    int64_t groups = 0;    // Groups held, open or closed.
    // Times the writer thread wrote (WriteOnce), rather than a thread waiting for its work.
    int64_t writer_thread_turns = 0;
  };
  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // Sequence numbers of the segments, oldest first.
  std::vector<uint64_t> SegmentSeqs() const ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& dir() const { return dir_; }

  // A group that pins the oldest segment while the log holds more than this many segments has its
  // entries rewritten into the active segment when they take at most a quarter of a segment.
  static constexpr size_t kRewriteAboveSegments = 4;
  // A round holds at most about this many bytes of records (one frame, one write, one sync).
  static constexpr size_t kRoundTargetBytes = 16 << 20;

 private:
  friend class Log;
  struct Op;

  ServerLog(Env* env, std::string dir, LogOptions options);

  // ---- Called by a group's Log ----
  // Marks `log` as having queued tasks. With `caller_runs`, the calling thread goes on to
  // RunOrWait, which writes them if nobody else does, so the writer thread is not woken for them:
  // it would be a wakeup per Raft batch for nothing, or take the round from the caller, whose
  // reply then waits for the hand-off back. Otherwise the writer thread is woken.
  void MarkReady(Log* log, bool caller_runs) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once `done` is notified. While it is not, whenever nobody is writing, this thread
  // writes one round (WriteOnce): a caller writes the round that holds its own tasks and leaves
  // the next ones to whoever waits for them (another caller or the writer thread), so no
  // caller's reply waits for others' syncs. REQUIRES: the caller counted itself in
  // waiting_callers_ when it queued its work (MarkReady with caller_runs, RunOp).
  void RunOrWait(absl::Notification* done) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes back the state of `log`, which is shutting down, to keep while the group is closed.
  void CloseGroup(Log* log) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Writing ----
  // Runs `fn` on the writer (this thread, if nobody is writing) and returns its status.
  absl::Status RunOp(std::function<absl::Status()> fn) ABSL_LOCKS_EXCLUDED(mu_);
  void WriterLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the queued ops, then one round of the queued tasks, then clears writing_.
  // REQUIRES: this thread set writing_.
  void WriteOnce() ABSL_LOCKS_EXCLUDED(mu_);
  // One round: the queued tasks of `logs`, written with one sync, published, called back.
  void WriteRound(const std::vector<Log*>& logs) ABSL_LOCKS_EXCLUDED(mu_);
  // Writes one round: *frames holds kFrameHeaderSize reserved bytes, then the records' frames;
  // it is sealed into one frame and appended to the active segment (first starting a new one if
  // it would grow past the segment size), and synced. Returns the file offset of *frames' first
  // byte; *segment is the segment written.
  absl::StatusOr<uint64_t> WriteFrames(std::string* frames, std::shared_ptr<SegmentFile>* segment)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes the oldest segments no group needs, first rewriting the groups that pin the oldest
  // one (kRewriteAboveSegments). Errors are logged: segments not deleted stay.
  void CollectSegments() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes the entries of `log` (or a reset record if it has none) into the active segment and
  // makes it need only that segment.
  absl::Status Rewrite(Log* log) ABSL_LOCKS_EXCLUDED(mu_);
  // Every group's log, open or closed (writer only).
  std::vector<Log*> AllGroupsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckWritableLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A log of group `group_id` in this server log: open (owner this) or holding a closed group's
  // state (owner null).
  std::unique_ptr<Log> NewGroupLog(const std::string& group_id, ServerLog* owner) const;

  // ---- Recovery ----
  absl::Status Recover() ABSL_LOCKS_EXCLUDED(mu_);
  // Groups whose replayed records turned out stale and that no later record placed yet, with the
  // DATA_LOSS to report if none does (RecoverSegment).
  using Unplaced = absl::flat_hash_map<std::string, absl::Status>;
  // Replays segment `seq`, cutting off a torn tail if `is_last`.
  absl::Status RecoverSegment(uint64_t seq, bool is_last, Unplaced* unplaced)
      ABSL_LOCKS_EXCLUDED(mu_);

  Env* const env_;
  const std::string dir_;
  const LogOptions options_;

  // Owned by the writer (and by Open before Start).
  SegmentWriter writer_;
  bool active_has_records_ = false;

  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<SegmentFile>> segments_ ABSL_GUARDED_BY(mu_);
  // Groups whose Log is open, and the state of closed (or recovered, not yet opened) groups.
  // Changed only by ops on the writer (and recovery).
  absl::flat_hash_map<std::string, Log*> open_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<Log>> closed_ ABSL_GUARDED_BY(mu_);
  // Open groups with queued tasks, and queued ops, for the writer.
  absl::flat_hash_set<Log*> ready_ ABSL_GUARDED_BY(mu_);
  std::deque<Op*> ops_ ABSL_GUARDED_BY(mu_);
  // A thread is the writer (WriteOnce): one at a time.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // Threads that queued work and will write it themselves if nobody else does (RunOrWait):
  // while there are any, the writer thread is not woken for ready_ or ops_.
  int waiting_callers_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Set when a sync failed (what reached the disk is unknown until a restart replays it);
  // sticky. A write that failed before its sync fails only its round: the next one first cuts
  // the active segment back (SegmentWriter::Rewind) and goes on in a new one, so a full disk
  // that gets room again does not need a restart.
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  int64_t num_syncs_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t num_rounds_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t num_writer_thread_turns_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t num_records_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t num_rewrites_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread thread_;  // The writer thread: Start() to Shutdown().
};

}  // namespace basalt
