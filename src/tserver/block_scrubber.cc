#include "tserver/block_scrubber.h"

#include <algorithm>
#include <vector>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tserver/block_references.h"
#include "tserver/block_verifier.h"

DEFINE_int64(scrub_bytes_per_sec, 8 << 20,
             "Rate at which the block scrubber reads every block of the tablet server to verify "
             "its checksums, in bytes per second; 0 disables the scrubber. A corrupt block fails "
             "its replica, which the master then replaces.");
DEFINE_validator(scrub_bytes_per_sec, [](const char*, int64_t value) { return value >= 0; });
DEFINE_int32(scrub_interval_sec, 3600,
             "Pause between the end of one full pass of the block scrubber and the start of the "
             "next, in seconds.");
DEFINE_validator(scrub_interval_sec, [](const char*, int32_t value) { return value >= 0; });

namespace basalt {

namespace {

// The burst the pacing allows: a tenth of a second at the rate, at least one 4 KiB read.
int64_t BurstBytes(int64_t bytes_per_sec) { return std::max<int64_t>(bytes_per_sec / 10, 4096); }

}  // namespace

BlockScrubberOptions BlockScrubberOptions::FromFlags() {
  BlockScrubberOptions o;
  o.bytes_per_sec = FLAGS_scrub_bytes_per_sec;
  o.pass_interval = absl::Seconds(FLAGS_scrub_interval_sec);
  return o;
}

BlockScrubber::BlockScrubber(BlockScrubberOptions options)
    : options_(std::move(options)),
      bytes_counter_(CounterOrNull(options_.metrics, "basalt_scrub_bytes_total",
                                   "Bytes of blocks read and verified by the block scrubber.")),
      blocks_counter_(CounterOrNull(options_.metrics, "basalt_scrub_blocks_total",
                                    "Blocks verified by the block scrubber.")),
      corruptions_counter_(CounterOrNull(
          options_.metrics, "basalt_scrub_corruptions_total",
          "Corrupt or lost blocks (and superblocks) the block scrubber found; each fails its "
          "replica.")),
      passes_counter_(
          CounterOrNull(options_.metrics, "basalt_scrub_passes_total",
                        "Full passes over every block completed by the block scrubber.")),
      limiter_(options_.bytes_per_sec, BurstBytes(options_.bytes_per_sec)) {
  CHECK(options_.env != nullptr && options_.block_manager != nullptr);
}

BlockScrubber::~BlockScrubber() { Shutdown(); }

void BlockScrubber::Start() {
  CHECK(!thread_.joinable()) << "started twice";
  thread_ = std::thread([this] { ThreadMain(); });
}

void BlockScrubber::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

BlockScrubberStats BlockScrubber::stats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

void BlockScrubber::ThreadMain() {
  do {
    const absl::Time start = absl::Now();
    const BlockScrubberStats before = stats();
    absl::Status s = RunPass();
    if (absl::IsCancelled(s)) return;
    const BlockScrubberStats after = stats();
    LOG_IF(WARNING, !s.ok()) << "block scrubber: pass failed: " << s;
    LOG_IF(INFO, s.ok()) << "block scrubber: pass verified " << after.blocks - before.blocks
                         << " blocks (" << after.bytes - before.bytes << " bytes) in "
                         << absl::Trunc(absl::Now() - start, absl::Seconds(1)) << "; "
                         << after.corruptions - before.corruptions << " corrupt";
  } while (WaitFor(options_.pass_interval));
}

absl::Status BlockScrubber::RunPass() {
  BASALT_ASSIGN_OR_RETURN(std::vector<TabletBlockRefs> tablets,
                          ReadAllTabletBlockRefs(options_.env, options_.tablets_dir));
  std::sort(tablets.begin(), tablets.end(),
            [](const auto& a, const auto& b) { return a.tablet_id < b.tablet_id; });
  for (const TabletBlockRefs& t : tablets) {
    if (t.state != ReplicaDataState::kReady) continue;  // Tombstones, copies: nothing to serve.
    if (absl::IsDataLoss(t.status)) {
      // A corrupt superblock: the replica could not be opened again.
      Report(t.tablet_id, BlockId(), t.status);
      continue;
    }
    if (!t.status.ok()) {
      if (int64_t n = error_log_.Record(absl::Now()); n > 0) {
        LOG(WARNING) << "block scrubber: skipping tablet " << t.tablet_id << LogThrottle::Times(n)
                     << ": " << t.status;
      }
      continue;
    }
    for (const RowSetBlock& b : t.rowset_blocks) {
      BASALT_RETURN_IF_ERROR(ScrubBlock(t.tablet_id, b));
    }
  }
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::CancelledError("the block scrubber is shutting down");
    ++stats_.passes;
  }
  if (passes_counter_ != nullptr) passes_counter_->Increment();
  return absl::OkStatus();
}

absl::Status BlockScrubber::ScrubBlock(const std::string& tablet_id, const RowSetBlock& target) {
  const BlockId id = target.id;
  absl::StatusOr<std::unique_ptr<ReadableBlock>> block =
      options_.block_manager->OpenBlock(id, [this](size_t n) { return Pace(n); });
  absl::Status s = block.ok() ? VerifyRowSetBlock(*std::move(block), target.kind) : block.status();
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::CancelledError("the block scrubber is shutting down");
    ++stats_.blocks;
  }
  if (blocks_counter_ != nullptr) blocks_counter_->Increment();
  if (s.ok()) return absl::OkStatus();
  if (absl::IsNotFound(s)) {
    // Gone since the superblock was read: retired by a compaction, unless the replica's current
    // superblock still names it (then it was lost).
    const TabletBlockRefs now = ReadTabletBlockRefs(options_.env, options_.tablets_dir, tablet_id);
    const bool still_named = now.status.ok() && now.state == ReplicaDataState::kReady &&
                             std::any_of(now.rowset_blocks.begin(), now.rowset_blocks.end(),
                                         [&](const RowSetBlock& b) { return b.id == id; });
    if (!still_named) {
      Count(&BlockScrubberStats::skipped, 1, nullptr);
      return absl::OkStatus();
    }
    s = absl::DataLossError(ToAbsl(StrCat(RowSetBlockKindName(target.kind), " ", id.ToString(),
                                          " of the superblock is missing: ", s.ToString())));
  }
  if (absl::IsDataLoss(s)) {
    Report(tablet_id, id, s);
  } else {
    Count(&BlockScrubberStats::read_errors, 1, nullptr);
    if (int64_t n = error_log_.Record(absl::Now()); n > 0) {
      LOG(WARNING) << "block scrubber: cannot verify " << RowSetBlockKindName(target.kind) << " "
                   << id.ToString() << " of tablet " << tablet_id << LogThrottle::Times(n) << ": "
                   << s;
    }
  }
  return absl::OkStatus();
}

absl::Status BlockScrubber::Pace(size_t bytes) {
  Count(&BlockScrubberStats::bytes, static_cast<int64_t>(bytes), bytes_counter_);
  const absl::Duration wait =
      limiter_.Charge(static_cast<int64_t>(bytes), options_.clock->MonotonicMicros());
  if (wait > absl::ZeroDuration()) {
    if (options_.pace_for_testing) {
      options_.pace_for_testing(wait);
    } else if (!WaitFor(wait)) {
      return absl::CancelledError("the block scrubber is shutting down");
    }
  }
  absl::MutexLock l(&mu_);
  if (stopping_) return absl::CancelledError("the block scrubber is shutting down");
  return absl::OkStatus();
}

void BlockScrubber::Report(const std::string& tablet_id, BlockId block, const absl::Status& error) {
  {
    absl::MutexLock l(&mu_);
    if (!reported_.insert({tablet_id, block.value()}).second) return;
    ++stats_.corruptions;
  }
  if (corruptions_counter_ != nullptr) corruptions_counter_->Increment();
  LOG(ERROR) << "block scrubber: tablet " << tablet_id << ": " << error;
  if (options_.on_corruption) options_.on_corruption(tablet_id, block, error);
}

bool BlockScrubber::WaitFor(absl::Duration d) {
  const absl::Time deadline = absl::Now() + d;
  absl::MutexLock l(&mu_);
  while (!stopping_ && !cv_.WaitWithDeadline(&mu_, deadline)) {
  }
  return !stopping_;
}

void BlockScrubber::Count(int64_t BlockScrubberStats::*field, int64_t n, Counter* counter) {
  {
    absl::MutexLock l(&mu_);
    stats_.*field += n;
  }
  if (counter != nullptr) counter->Increment(static_cast<uint64_t>(n));
}

}  // namespace basalt
