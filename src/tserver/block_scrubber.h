#pragma once

// BlockScrubber: a background thread that reads every block of every ready replica on this
// tablet server, at a low byte rate, and verifies its checksums (tserver/block_verifier.h), so
// that a block that rots on disk is found before a scan, a compaction or a tablet copy needs it.
// A corrupt block fails its replica (the server's callback), and the master replaces the replica
// from a healthy peer (docs/tserver.md "Block scrubber").
//
// A pass: the superblocks of all replicas are read from disk (tserver/block_references.h); for
// each READY replica, in tablet id order, every block of its rowsets is opened and verified.
// Reads are paced to --scrub_bytes_per_sec by a RateLimiter through the blocks' read hook
// (every read, of every kind of block, is charged before it is made). After a pass the thread
// waits --scrub_interval_sec and starts the next. Progress is not persisted: a restart begins a
// new pass.
//
// What a failed verification means:
//   - DATA_LOSS (a checksum mismatch, a malformed or truncated block): corruption, reported.
//   - NOT_FOUND (the block is gone): usually a compaction retired the block after the pass read
//     the superblock. The superblock is read again: if the replica is still READY and its
//     rowsets still name the block, the block was lost (reported as DATA_LOSS); otherwise it is
//     skipped.
//   - any other error (an I/O error, EIO from a failing disk): counted and logged (throttled),
//     not reported; the next pass tries again. A replica that cannot read its blocks fails on its
//     own reads.
//   - a superblock that fails its checksum (DATA_LOSS) of a READY replica: reported with an
//     invalid block id: the replica could not be opened again.
// Each (tablet, block) is reported once per scrubber.
//
// Scrubbing takes no lock of a tablet or replica: it reads files that are immutable (blocks) or
// replaced atomically (superblocks), through its own file handles and around the block cache.
// So it never blocks writes, scans, flushes or compactions; a block deleted under an open handle
// stays readable until closed.
//
// Lifecycle: construct -> Start() -> Shutdown() (or the destructor). RunPass() runs one pass on
// the calling thread instead (tests), without Start().
// Thread-safe, except that passes must not overlap (RunPass() is for a scrubber not Start()ed).
// The callback runs on the scrubbing thread with no lock held.

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cfile/block_manager.h"
#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/metrics.h"
#include "common/rate_limiter.h"
#include "gflags/gflags_declare.h"

DECLARE_int64(scrub_bytes_per_sec);
DECLARE_int32(scrub_interval_sec);

namespace basalt {

class Env;
struct RowSetBlock;

struct BlockScrubberOptions {
  Env* env = nullptr;                     // Borrowed.
  BlockManager* block_manager = nullptr;  // Borrowed.
  // <data_dir>/tablets.
  std::string tablets_dir;
  // > 0 (--scrub_bytes_per_sec; 0 there means: do not create a scrubber).
  int64_t bytes_per_sec = 8 << 20;
  // The pause between the end of a pass and the start of the next (--scrub_interval_sec).
  absl::Duration pass_interval = absl::Hours(1);
  // Told of each corruption found: the tablet, the block (invalid for the superblock) and the
  // error. Runs on the scrubbing thread; may take a while (it fails a replica).
  std::function<void(const std::string& tablet_id, BlockId block, const absl::Status& error)>
      on_corruption;
  // Where the scrubber's counters go (basalt_scrub_*); nullptr: none. Borrowed.
  MetricRegistry* metrics = nullptr;
  // The pacing clock (monotonic time). Borrowed.
  Clock* clock = Clock::Default();
  // Tests: called with each pacing wait instead of waiting (typically advancing a ManualClock).
  std::function<void(absl::Duration)> pace_for_testing;

  // bytes_per_sec and pass_interval from the flags.
  static BlockScrubberOptions FromFlags();
};

// Totals since construction.
struct BlockScrubberStats {
  int64_t passes = 0;       // Passes completed.
  int64_t blocks = 0;       // Blocks verified (whatever the outcome).
  int64_t bytes = 0;        // Bytes read.
  int64_t corruptions = 0;  // Reports made (on_corruption calls).
  int64_t skipped = 0;      // Blocks gone under the scrubber (retired by a compaction).
  int64_t read_errors = 0;  // Other errors (not reported).
};

class BlockScrubber {
 public:
  // REQUIRES: options.env, block_manager set; bytes_per_sec > 0.
  explicit BlockScrubber(BlockScrubberOptions options);
  ~BlockScrubber();
  BlockScrubber(const BlockScrubber&) = delete;
  BlockScrubber& operator=(const BlockScrubber&) = delete;

  // Starts the thread: a pass at once, then one every pass_interval after the previous ends.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops the thread (a pass under way stops at its next read). Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Runs one full pass on the calling thread. Returns early (CANCELLED) once Shutdown() was
  // called; NOT_FOUND or an I/O error if <data_dir>/tablets cannot be listed.
  absl::Status RunPass() ABSL_LOCKS_EXCLUDED(mu_);

  BlockScrubberStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void ThreadMain() ABSL_LOCKS_EXCLUDED(mu_);
  // Verifies one block of `tablet_id` and deals with the outcome (see the file comment).
  // Returns CANCELLED once shutting down, else OK.
  absl::Status ScrubBlock(const std::string& tablet_id, const RowSetBlock& target)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The read hook: charges `bytes` and waits as the rate requires. CANCELLED once shutting down.
  absl::Status Pace(size_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // Reports a corruption (once per tablet and block).
  void Report(const std::string& tablet_id, BlockId block, const absl::Status& error)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Waits up to `d` or until shutdown; returns false once shutting down.
  bool WaitFor(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds `n` to stats_.*field and to `counter` (when not null).
  void Count(int64_t BlockScrubberStats::*field, int64_t n, Counter* counter)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  const BlockScrubberOptions options_;
  Counter* const bytes_counter_;        // May be null (no registry).
  Counter* const blocks_counter_;       // May be null.
  Counter* const corruptions_counter_;  // May be null.
  Counter* const passes_counter_;       // May be null.

  // Used by the scrubbing thread (or RunPass's caller) only.
  RateLimiter limiter_;
  LogThrottle error_log_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // Signalled by Shutdown.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  BlockScrubberStats stats_ ABSL_GUARDED_BY(mu_);
  // (tablet id, block id) already reported.
  std::set<std::pair<std::string, uint64_t>> reported_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // Started and joined by Start()/Shutdown() on the owner's thread.
};

}  // namespace basalt
