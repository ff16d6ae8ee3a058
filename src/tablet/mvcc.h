#pragma once

// Multi-version concurrency control for one tablet replica (DESIGN.md section 4, "MVCC").
//
// Every write op carries a HybridTime assigned by the leader and replicated in the Raft entry.
// The replica applies ops one at a time in Raft order; MvccManager records which timestamps are
// in flight (started, not yet finished) and which are committed, so that a reader can take an
// MvccSnapshot: the exact set of committed timestamps at one instant. Rows and mutations carry
// their op's timestamp; a reader applies exactly those whose timestamp the snapshot contains.
//
// Lifecycle of an op: StartOp(ts) -> (apply to the rowsets) -> FinishOp(ts), or StartOp(ts) ->
// AbortOp(ts) when nothing was applied. An op that applied anything must be finished, never
// aborted: rowsets do not roll mutations back.
//
// Safe time: AdjustSafeTime(t) promises that no op with timestamp <= t will ever start again
// (on a follower: the leader's safe time from the Raft stream; on the leader: the timestamp of
// the last op it assigned). Once every started op <= t has finished, every timestamp <= t is
// settled, and READ_AT_SNAPSHOT(t) may proceed (WaitForSnapshotWithAllApplied).
//
// The "clean" watermark all_committed_before = min(earliest in-flight op, safe_time + 1): every
// timestamp below it is settled forever. Committed ops above it are kept in a small set until the
// watermark passes them; callers keep that set small by advancing the safe time.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/hybrid_clock.h"

namespace basalt {

// A set of committed timestamps: everything below all_committed_before(), plus the listed
// timestamps in [all_committed_before(), none_committed_at_or_after()). IsCommitted is a compare
// in the common case and a binary search over a few entries otherwise.
// Copyable value type; a const snapshot may be shared between threads.
class MvccSnapshot {
 public:
  // Commits nothing (a snapshot before any write).
  MvccSnapshot();

  // Every timestamp < t is committed, none >= t. "Everything up to and including t" is
  // IncludingAllBefore(t.Next()).
  static MvccSnapshot IncludingAllBefore(HybridTime t);
  // Every timestamp is committed (used to read the latest state of a frozen rowset).
  static MvccSnapshot IncludingAll() { return IncludingAllBefore(HybridTime::kMax); }
  static MvccSnapshot IncludingNone() { return MvccSnapshot(); }

  bool IsCommitted(HybridTime ts) const {
    if (ts < all_committed_before_) return true;
    if (ts >= none_committed_at_or_after_) return false;
    return IsCommittedSlow(ts);
  }
  // False when no timestamp >= ts is committed (lets readers stop early on sorted data).
  bool MayHaveCommittedOpsAtOrAfter(HybridTime ts) const {
    return ts < none_committed_at_or_after_;
  }
  // False when every timestamp <= ts is committed.
  bool MayHaveUncommittedOpsAtOrBefore(HybridTime ts) const { return ts >= all_committed_before_; }

  HybridTime all_committed_before() const { return all_committed_before_; }
  HybridTime none_committed_at_or_after() const { return none_committed_at_or_after_; }
  // Committed timestamps >= all_committed_before(), ascending.
  const std::vector<HybridTime>& committed_after() const { return committed_after_; }

  // "MvccSnapshot[committed={T|T < <w> or (T in {a, b})}]".
  std::string ToString() const;

 private:
  friend class MvccManager;
  bool IsCommittedSlow(HybridTime ts) const;

  HybridTime all_committed_before_;
  HybridTime none_committed_at_or_after_;
  std::vector<HybridTime> committed_after_;
};

// Tracks in-flight and committed ops of one replica and hands out snapshots.
// Thread-safe.
class MvccManager {
 public:
  MvccManager();
  MvccManager(const MvccManager&) = delete;
  MvccManager& operator=(const MvccManager&) = delete;

  // Registers an op about to be applied at `ts`. FAILED_PRECONDITION when ts <= safe_time()
  // (the caller promised no such op would come), ts is already in flight or already committed;
  // INVALID_ARGUMENT for an invalid timestamp.
  absl::Status StartOp(HybridTime ts) ABSL_LOCKS_EXCLUDED(mu_);
  // Commits the in-flight op at `ts`: later snapshots include it. Wakes waiters.
  // REQUIRES: ts is in flight (CHECKed: finishing an unknown op is a bug in the caller).
  void FinishOp(HybridTime ts) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets the in-flight op at `ts`, which applied nothing. REQUIRES: ts is in flight.
  void AbortOp(HybridTime ts) ABSL_LOCKS_EXCLUDED(mu_);

  // Raises the safe time to `ts` (never lowers it). REQUIRES (DCHECKed by StartOp's check): no
  // op <= ts starts later. Wakes waiters.
  void AdjustSafeTime(HybridTime ts) ABSL_LOCKS_EXCLUDED(mu_);

  // READ_LATEST: every op committed now.
  MvccSnapshot SnapshotForRead() const ABSL_LOCKS_EXCLUDED(mu_);

  // READ_AT_SNAPSHOT(ts): waits until safe_time() >= ts and no op <= ts is in flight, then
  // returns IncludingAllBefore(ts.Next()), a repeatable snapshot. DEADLINE_EXCEEDED (with the
  // safe time and the earliest in-flight op in the message) if that does not happen by
  // `deadline`; INVALID_ARGUMENT for an invalid ts.
  absl::StatusOr<MvccSnapshot> WaitForSnapshotWithAllApplied(HybridTime ts,
                                                             absl::Time deadline) const
      ABSL_LOCKS_EXCLUDED(mu_);

  HybridTime safe_time() const ABSL_LOCKS_EXCLUDED(mu_);
  // Every timestamp below this is settled (committed or never to be used).
  HybridTime all_committed_before() const ABSL_LOCKS_EXCLUDED(mu_);
  int num_in_flight() const ABSL_LOCKS_EXCLUDED(mu_);
  // The earliest in-flight op, or kInvalid when none.
  HybridTime earliest_in_flight() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Recomputes cur_snap_'s watermark after in_flight_ or safe_time_ changed and prunes the
  // committed set below it.
  void AdvanceWatermarkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AllAppliedAtOrBeforeLocked(HybridTime ts) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveInFlightLocked(HybridTime ts, const char* what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // Signalled whenever the watermark, the safe time or the in-flight set changes.
  mutable absl::CondVar cv_;
  // Raw timestamp values of in-flight ops (an ordered set, for the earliest one).
  std::map<uint64_t, bool> in_flight_ ABSL_GUARDED_BY(mu_);
  HybridTime safe_time_ ABSL_GUARDED_BY(mu_) = HybridTime::kMin;
  // The current READ_LATEST snapshot, maintained incrementally.
  MvccSnapshot cur_snap_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
