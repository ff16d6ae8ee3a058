// TabletReplica's read path: snapshots for scans and checksums on leaders and followers, and
// the safe time a leader hands its followers (docs/cluster.md "Scans", "Safe time"). The rest of
// the class is in tablet_replica.cc.

#include <algorithm>
#include <optional>

#include <glog/logging.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "tserver/tablet_replica.h"
#include "tserver/tserver_errors.h"

namespace basalt {

// ---- Reads ----------------------------------------------------------------------------------

absl::StatusOr<MvccSnapshot> TabletReplica::SnapshotForRead(std::optional<HybridTime>* snapshot_ts,
                                                            absl::Time deadline) {
  BASALT_RETURN_IF_ERROR(CheckRunning());
  if (!snapshot_ts->has_value()) return tablet_->mvcc()->SnapshotForRead();
  HybridTime t = **snapshot_ts;
  RaftNode* node = raft();
  if (node->role() != RaftCore::Role::kLeader) return FollowerSnapshot(t, deadline);
  BASALT_RETURN_IF_ERROR(CheckLeaderReady(deadline));
  if (!t.is_valid()) {
    t = ctx_.clock->Now();
    *snapshot_ts = t;
  } else {
    BASALT_RETURN_IF_ERROR(FieldError("snap_timestamp", ctx_.clock->Update(t)));
  }
  // A barrier: every op with a timestamp <= t has been registered in proposals_ (timestamps are
  // taken under propose_mu_), and every later one gets a larger timestamp.
  { absl::MutexLock pl(&propose_mu_); }
  if (!proposals_.AwaitNoneAtOrBelow(t, deadline)) {
    return absl::DeadlineExceededError(
        ToAbsl(StrCat("waiting for the ops below the snapshot time ", t.ToString(), " to apply")));
  }
  return MvccSnapshot::IncludingAllBefore(t.Next());
}

absl::StatusOr<MvccSnapshot> TabletReplica::FollowerSnapshot(HybridTime t, absl::Time deadline) {
  if (!t.is_valid()) return NotLeader("only the leader picks a snapshot time");
  // Every entry with a timestamp <= t is applied here if t is at or below the safe time, or at
  // or below an applied timestamp (timestamps increase in log order).
  auto reached = [this, t] { return safe_time() >= t || last_applied_timestamp() >= t; };
  if (!reached()) {
    // A time beyond what this replica's clock would accept from a leader cannot arrive soon.
    const HybridTime now = ctx_.clock->Now();
    const uint64_t max_error = static_cast<uint64_t>(ctx_.clock->max_error_us());
    const absl::Time until = std::min(deadline, absl::Now() + ctx_.follower_snapshot_wait);
    if (t.physical_micros() <= now.physical_micros() + max_error) state_.Await(reached, until);
    BASALT_RETURN_IF_ERROR(CheckRunning());
    if (!reached()) {
      return NotLeader(StrCat("this follower's safe time ", safe_time().ToString(),
                              " has not reached the snapshot time ", t.ToString()));
    }
  }
  return MvccSnapshot::IncludingAllBefore(t.Next());
}

// ---- Safe time ------------------------------------------------------------------------------

// Correctness (see SafeTimeSource in raft_node.h): every entry proposed before this call was
// queued on the RaftNode under propose_mu_, which this holds, so the node's index I, read after
// it takes its queue, covers every entry with a timestamp <= T; raising last_proposed_ts_ to T
// makes every later entry's timestamp > T.
std::optional<uint64_t> TabletReplica::LeaderSafeTime() {
  absl::MutexLock pl(&propose_mu_);
  const uint64_t t = std::max(ctx_.clock->Now().value(), last_proposed_ts_);
  last_proposed_ts_ = t;
  return t;
}

void TabletReplica::OnLeaderSafeTime(uint64_t term, uint64_t time, uint64_t index) {
  // If this replica leads later, its timestamps must exceed every safe time it adopted.
  absl::Status s = ctx_.clock->Update(HybridTime(time));
  if (!s.ok()) {
    LOG_EVERY_N(WARNING, 100) << "tablet " << tablet_id_
                              << ": ignoring the leader's safe time: " << s;
    return;
  }
  if (safe_time_.OnLeaderPair(term, time, index)) state_.Notify();
}

}  // namespace basalt
