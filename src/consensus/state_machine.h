#pragma once

// StateMachine: what a Raft group replicates into (a tablet, the master catalog). The RaftNode
// (raft_node.h) applies committed log entries to it in index order and asks it how much of the
// log it no longer needs (log GC).

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "consensus/raft_types.h"

namespace basalt {

// Apply calls come from the node's applier (a SerialTaskPool token: one at a time, in index order,
// never on the Raft worker, so a slow apply delays no heartbeat or vote). The other calls come from
// the worker (DurableIndex also from RaftNode::Open) and may run concurrently with an Apply.
// Implementations may be read concurrently by their own users (scans), which is their business.
class StateMachine {
 public:
  // Result of a tablet copy: OK with the last log index the copied state covers, or the error.
  using SnapshotDoneCallback = std::function<void(const absl::Status& status, uint64_t index)>;

  virtual ~StateMachine() = default;

  // Applies the committed entry `entry`. Called exactly once per index per process lifetime, in
  // increasing index order without gaps, starting after the boot applied index (DurableIndex() at
  // Start). Every entry type is passed: kNormal carries a command; kNoOp and kConfigChange only
  // advance the applied index (the node itself persists configurations).
  //
  // The contract: an outcome every replica reaches the same way from the same entry (a command
  // invalid for the state machine, bad rows, a schema mismatch) is part of applying it and returns
  // OK. An error returns only when this replica could not apply the entry as its peers do (an I/O
  // error, corrupt storage): the replica would diverge, so the node stops (no more applies, votes
  // or messages; RaftNodeOptions::on_failed) and the entry is not counted as applied.
  virtual absl::Status Apply(const LogEntry& entry) = 0;

  // Returns the index up to which every applied entry is durable in the state machine's own
  // storage (0: nothing). On restart the node re-applies the entries after it from the log, and
  // log GC never removes entries above it. Must not decrease.
  virtual uint64_t DurableIndex() const = 0;

  // Log GC also keeps every entry above the returned index (tablet copy sessions read them). May
  // be called from the worker at any time; the default anchors nothing.
  virtual uint64_t LogAnchorIndex() const { return UINT64_MAX; }

  // ---- Snapshot hooks (tablet copy; DESIGN.md §5) ----
  // Called on the leader when follower `peer` needs entries this replica already collected: the
  // implementation starts a tablet copy to it (asynchronously, not on the calling thread) and
  // calls `done` when it ends, from any thread. The default has no tablet copy and fails at once
  // with UNIMPLEMENTED; the node retries with a growing delay (--tablet_copy_retry_base_ms).
  virtual void StartSnapshotCopy(const PeerId& peer, SnapshotDoneCallback done) {
    done(absl::UnimplementedError("this state machine does not support tablet copy"), 0);
  }
};

}  // namespace basalt
