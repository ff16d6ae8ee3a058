#pragma once

// Progress: the leader's view of one follower's (or learner's) log replication, with the
// probe / replicate / snapshot flow control of etcd-io/raft: probe sends one append at a time
// until the follower's match point is found; replicate pipelines appends optimistically within a
// window of in-flight messages; snapshot waits for a tablet copy to finish.

#include <cstddef>
#include <cstdint>
#include <deque>

namespace basalt {

// Invariants: match < next; in kReplicate, inflight holds the last index of each unacknowledged
// append, increasing, at most max_inflight of them.
// Not thread-safe; owned by RaftCore.
class Progress {
 public:
  enum class State { kProbe, kReplicate, kSnapshot };

  Progress(uint64_t next, size_t max_inflight) : next_(next), max_inflight_(max_inflight) {}

  uint64_t match() const { return match_; }
  uint64_t next() const { return next_; }
  State state() const { return state_; }
  bool recent_active() const { return recent_active_; }
  void set_recent_active(bool active) { recent_active_ = active; }

  void BecomeProbe();
  void BecomeReplicate();
  void BecomeSnapshot();

  // True if no append should be sent now: a probe is outstanding, the in-flight window is full,
  // or a snapshot is pending.
  bool IsPaused() const;

  // Records an append sent with entries up to last_index (last_index == next() - 1 for an empty
  // probe).
  void SentAppend(uint64_t last_index);

  // The follower acknowledged a match up to `index`. Returns true if match advanced.
  bool MaybeUpdate(uint64_t index);

  // The follower rejected an append whose prev index was `rejected`; match_hint is the leader's
  // best guess of the last matching index. Returns false if the rejection is stale (ignored).
  bool MaybeDecrTo(uint64_t rejected, uint64_t match_hint);

  // A heartbeat response arrived: resume probing, and in kReplicate fall back to probing if no
  // acknowledgement arrived since the previous heartbeat response while appends were in flight
  // (they were probably lost, and the follower will not reject anything to tell us).
  void OnHeartbeatResponse();

  // A tablet copy ended; `index` is the last index it covered (0 if it failed).
  void OnSnapshotDone(uint64_t index);

 private:
  void ResetInflight() { inflight_.clear(); }

  uint64_t match_ = 0;
  uint64_t next_;
  State state_ = State::kProbe;
  bool probe_sent_ = false;
  bool recent_active_ = false;
  bool acked_since_heartbeat_ = false;
  const size_t max_inflight_;
  std::deque<uint64_t> inflight_;
};

const char* ProgressStateName(Progress::State state);

}  // namespace basalt
