#pragma once

// ProposalTracker: the writes and schema changes this server proposed for one tablet whose
// entries are not applied (or failed) yet (docs/cluster.md "Write path").
//
// Two indexes over the same ops: by request sequence, so that Apply of an entry this server
// proposed finds the op (and reuses the rows the RPC thread decoded instead of decoding them
// again), and by timestamp, so that a snapshot read at t waits until no op at or below t is in
// flight (AwaitNoneAtOrBelow).
//
// An op's life: Add (before its entry is proposed) -> Take (by Apply, which then owns the op's
// rows) or Abandon (the waiting RPC timed out first; Apply will decode the rows itself) -> Done
// (the proposal's callback: out of flight). Sequence numbers start at a random point, so those of
// an earlier incarnation of the server never match new ones.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/arena.h"
#include "common/hybrid_clock.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "tablet/row_outcome.h"

namespace basalt {
namespace pb {
class RequestIdPB;
}  // namespace pb

// Reusable memory of one write's decoding (rows and per-row results): recycled between requests
// so that large batches do not fault in fresh pages each time. A batch of 2 MiB of encoded rows
// decodes into several MiB of arena; Arena::Reset keeps only its last block, so the arena's blocks
// are 2 MiB mapped ones, which Reset hands to the process-wide cache of mapped blocks (see
// --memrowset_block_cache_mb) for the next batch: a bulk load's tablet servers spent a quarter of
// their CPU zeroing and faulting in fresh pages for the decoded rows before.
struct WriteScratch {
  Arena arena{64 << 10, Arena::kHugePageSize, /*huge_pages=*/true};
  std::vector<DecodedRowOperation> ops;
  std::vector<RowOutcome> results;
};

// An op this server proposed, shared by the waiting RPC, the tracker and the propose callback.
struct PendingOp {
  uint64_t seq = 0;
  HybridTime ts;
  // The client request of a write, if it has an id (exactly-once writes; ResultTracker), and
  // whether the entry was handed to Raft (after which only the proposal's outcome ends it).
  std::shared_ptr<const pb::RequestIdPB> request_id;
  bool proposed = false;
  // A write: the rows decoded by the RPC thread (they point into the request, which outlives the
  // op while it is tracked, and into the scratch's arena), applied by this server's Apply.
  std::shared_ptr<const Schema> schema;
  std::unique_ptr<WriteScratch> scratch;
  // Written by Apply before `done` is set.
  bool applied = false;
  absl::Status apply_status;
  uint32_t schema_version_after = 0;

  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status propose_status ABSL_GUARDED_BY(mu);
};

class ProposalTracker {
 public:
  ProposalTracker();

  // A new request sequence number.
  uint64_t NextSeq() { return next_seq_.fetch_add(1); }
  // Tracks `op` (its seq and ts set). REQUIRES: op->ts is above every tracked op's (timestamps
  // are assigned in proposal order).
  void Add(std::shared_ptr<PendingOp> op) ABSL_LOCKS_EXCLUDED(mu_);
  // Apply's lookup: the op with this sequence and timestamp, which the caller now owns; null if
  // none (another server's entry, or abandoned). The op stays in flight until Done.
  std::shared_ptr<PendingOp> Take(uint64_t seq, HybridTime ts) ABSL_LOCKS_EXCLUDED(mu_);
  // The waiting RPC gives up on op `seq`: true if Apply had not taken it (it never will).
  bool Abandon(uint64_t seq) ABSL_LOCKS_EXCLUDED(mu_);
  // The op's proposal completed (applied, overwritten or failed): out of flight.
  void Done(const PendingOp& op) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until no op with a timestamp <= t is in flight; false at the deadline.
  bool AwaitNoneAtOrBelow(HybridTime t, absl::Time deadline) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::atomic<uint64_t> next_seq_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<PendingOp>> by_seq_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> in_flight_ ABSL_GUARDED_BY(mu_);  // Raw timestamps.
};

}  // namespace basalt
