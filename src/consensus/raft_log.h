#pragma once

// RaftLog: RaftCore's view of the replicated log: the durable entries behind a LogReader plus an
// in-memory suffix of entries not yet persisted ("unstable"), the commit index and the apply
// progress. Part of the pure core: it never writes anything itself; new entries leave through
// Ready::entries and come back as durable when the caller calls StableTo().

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "consensus/log_reader.h"
#include "consensus/raft_types.h"

namespace basalt {

// Invariants: unstable_ holds entries [unstable_offset_, unstable_offset_ + size) and takes
// precedence over the durable log from unstable_offset_ on; entries [unstable_offset_,
// persisting_) were handed out for persistence but not yet confirmed; applied_ <= applying_ <=
// committed_ <= LastIndex().
// Not thread-safe; owned by RaftCore.
class RaftLog {
 public:
  // `durable` must outlive this object. `committed` and `applied` come from the restarted
  // replica's hard state and state machine; both are clamped to the durable log's last index.
  RaftLog(const LogReader* durable, uint64_t committed, uint64_t applied);

  uint64_t FirstIndex() const;
  uint64_t LastIndex() const;
  uint64_t LastTerm() const;
  OpId LastOpId() const { return OpId{LastTerm(), LastIndex()}; }
  uint64_t committed() const { return committed_; }
  uint64_t applied() const { return applied_; }
  // The last index known durable and current (the leader counts itself up to here).
  uint64_t StableIndex() const { return unstable_offset_ - 1; }

  // Term of the entry at `index` in [FirstIndex() - 1, LastIndex()]; NOT_FOUND outside (compacted
  // or beyond the end), or the durable log's read error.
  absl::StatusOr<uint64_t> Term(uint64_t index) const;
  // True if the entry at `index` exists with `term` (index 0 matches term 0).
  bool MatchTerm(uint64_t index, uint64_t term) const;
  // Raft §5.4.1: true if a log ending at (last_term, last_index) is at least as up to date.
  bool IsUpToDate(uint64_t last_index, uint64_t last_term) const;

  // Entries [lo, hi) up to about max_bytes (at least one). Errors as LogReader::Entries.
  absl::StatusOr<std::vector<LogEntry>> Entries(uint64_t lo, uint64_t hi, uint64_t max_bytes) const;

  // Appends entries at the end. REQUIRES: entries.front().index == LastIndex() + 1 (or empty).
  void Append(std::vector<LogEntry> entries);

  // Follower append (Raft figure 2, AppendEntries 2-5): if the entry at prev_index has prev_term,
  // drops the first conflicting entry and all that follow, appends what is new and returns the
  // index of the last entry of the request (prev_index + entries.size()). Returns nullopt if the
  // log does not match at prev_index (or cannot be read there). Never truncates committed entries
  // (a conflict there is a broken Raft invariant and CHECK-fails). The new entries are moved
  // into the log (RaftCore::StepTakingEntries passes the message's own; Step copies them all).
  std::optional<uint64_t> MaybeAppend(uint64_t prev_index, uint64_t prev_term,
                                      std::vector<LogEntry> entries);

  // Returns the largest index <= index whose term is <= term (fast back-off on a mismatch), with
  // its term. Stops at FirstIndex() - 1 if older terms were compacted.
  OpId FindConflictByTerm(uint64_t index, uint64_t term) const;

  // Raises the commit index to min(index, LastIndex()) if higher. Returns true if it moved.
  bool CommitTo(uint64_t index);

  // Unstable entries not yet handed out; marks them as being persisted.
  std::vector<LogEntry> TakeEntriesToPersist();
  bool HasEntriesToPersist() const;
  // The caller durably appended the entries up to (term, index): drop them from memory unless
  // they were replaced meanwhile.
  void StableTo(uint64_t index, uint64_t term);

  // Committed entries not yet handed out for applying (up to max_bytes, at least one); marks them
  // as being applied. Empty if none or if the durable log cannot be read; after a read error
  // HasEntriesToApply() is false until the commit index moves or RetryReads() is called.
  // One batch is out at a time: none is handed out until AppliedTo() covered the last one (the
  // applier runs apart from the Raft thread; this bounds what waits for it, and entries that
  // commit meanwhile form the next, larger batch).
  std::vector<LogEntry> TakeEntriesToApply(uint64_t max_bytes);
  bool HasEntriesToApply() const {
    return committed_ > applying_ && applied_ == applying_ && !apply_read_failed_;
  }
  // Committed entries wait for AppliedTo() to cover the batch handed out before them.
  bool WaitingForApplied() const { return committed_ > applying_ && applied_ < applying_; }
  void RetryReads() { apply_read_failed_ = false; }
  // The caller applied the entries up to `index`.
  void AppliedTo(uint64_t index);

 private:
  // Appends entries[i..] (moved).
  void AppendFrom(std::vector<LogEntry> entries, size_t i);
  const LogEntry* Unstable(uint64_t index) const;

  const LogReader* const durable_;
  std::vector<LogEntry> unstable_;
  uint64_t unstable_offset_;
  uint64_t persisting_;  // First unstable index not yet handed out.
  uint64_t committed_;
  uint64_t applying_;  // Last index handed out for applying.
  uint64_t applied_;
  bool apply_read_failed_ = false;
};

}  // namespace basalt
