#include "tserver/block_gc.h"

#include <utility>
#include <vector>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/container/flat_hash_set.h"
#include "cfile/block_manager.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tserver/block_references.h"

DEFINE_int32(block_gc_interval_sec, 3600,
             "Interval between runs of the block GC, which deletes blocks that no tablet metadata "
             "names (left by a crash in a flush, compaction or tablet copy), in seconds; 0: only "
             "the run at startup.");
DEFINE_validator(block_gc_interval_sec, [](const char*, int32_t value) { return value >= 0; });

namespace basalt {
namespace {

// Every block `tablets` name, or FAILED_PRECONDITION naming a tablet whose metadata is unknown.
absl::StatusOr<absl::flat_hash_set<BlockId>> NamedBlocks(
    const std::vector<TabletBlockRefs>& tablets) {
  absl::flat_hash_set<BlockId> named;
  for (const TabletBlockRefs& t : tablets) {
    if (!t.status.ok()) {
      return absl::FailedPreconditionError(ToAbsl(
          StrCat("the metadata of tablet ", t.tablet_id, " cannot be read (", t.status.ToString(),
                 "): no block is deleted while a block it names may be unknown")));
    }
    for (const RowSetBlock& b : t.rowset_blocks) named.insert(b.id);
    named.insert(t.orphaned_blocks.begin(), t.orphaned_blocks.end());
    named.insert(t.copy_blocks.begin(), t.copy_blocks.end());
  }
  return named;
}

}  // namespace

BlockGcOptions BlockGcOptions::FromFlags() {
  BlockGcOptions o;
  o.interval = absl::Seconds(FLAGS_block_gc_interval_sec);
  return o;
}

BlockGc::BlockGc(BlockGcOptions options)
    : options_(std::move(options)),
      deleted_blocks_counter_(CounterOrNull(options_.metrics,
                                            "basalt_block_gc_deleted_blocks_total",
                                            "Blocks no tablet metadata named, deleted by the "
                                            "block GC.")),
      deleted_bytes_counter_(CounterOrNull(options_.metrics, "basalt_block_gc_deleted_bytes_total",
                                           "Bytes of the blocks the block GC deleted.")),
      skipped_runs_counter_(CounterOrNull(
          options_.metrics, "basalt_block_gc_skipped_runs_total",
          "Block GC runs that deleted nothing because some tablet metadata could not be read.")) {
  CHECK(options_.env != nullptr && options_.block_manager != nullptr);
}

BlockGc::~BlockGc() { Shutdown(); }

absl::StatusOr<BlockGcResult> BlockGc::RunOnce() {
  BlockManager* bm = options_.block_manager;
  // Listed before the metadata is read; either order would do (see the header), but this one
  // never even considers a block created after the metadata was read.
  BASALT_ASSIGN_OR_RETURN(std::vector<BlockId> listed, bm->ListBlocks());
  std::vector<BlockId> candidates;
  for (BlockId id : listed) {
    // Blocks of this process's epoch may be in flight: never candidates.
    if (bm->CreatedBeforeOpen(id)) candidates.push_back(id);
  }
  BlockGcResult result;
  result.candidates = static_cast<int64_t>(candidates.size());
  if (candidates.empty()) return result;
  absl::StatusOr<std::vector<TabletBlockRefs>> tablets =
      ReadAllTabletBlockRefs(options_.env, options_.tablets_dir);
  absl::StatusOr<absl::flat_hash_set<BlockId>> named =
      tablets.ok() ? NamedBlocks(*tablets) : tablets.status();
  if (!named.ok()) {
    if (skipped_runs_counter_ != nullptr) skipped_runs_counter_->Increment();
    return named.status();
  }
  absl::Status first_error;
  for (BlockId id : candidates) {
    if (named->contains(id)) continue;
    // The size for the log and the metric; a block already gone is someone else's deletion.
    absl::StatusOr<uint64_t> size = options_.env->GetFileSize(bm->BlockPath(id));
    absl::Status s = size.ok() ? bm->DeleteBlock(id) : size.status();
    if (absl::IsNotFound(s)) continue;
    if (!s.ok()) {
      LOG(WARNING) << "block GC: " << s;
      if (first_error.ok()) first_error = s;
      continue;
    }
    ++result.deleted_blocks;
    result.deleted_bytes += static_cast<int64_t>(*size);
  }
  if (deleted_blocks_counter_ != nullptr) {
    deleted_blocks_counter_->Increment(static_cast<uint64_t>(result.deleted_blocks));
  }
  if (deleted_bytes_counter_ != nullptr) {
    deleted_bytes_counter_->Increment(static_cast<uint64_t>(result.deleted_bytes));
  }
  LOG_IF(INFO, result.deleted_blocks > 0)
      << "block GC: deleted " << result.deleted_blocks << " blocks no tablet metadata names ("
      << result.deleted_bytes << " bytes) of " << result.candidates << " blocks of earlier epochs";
  BASALT_RETURN_IF_ERROR(first_error);
  return result;
}

void BlockGc::Start() {
  CHECK(!thread_.joinable()) << "started twice";
  if (options_.interval <= absl::ZeroDuration()) return;
  thread_ = std::thread([this] { ThreadMain(); });
}

void BlockGc::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void BlockGc::ThreadMain() {
  while (true) {
    {
      const absl::Time deadline = absl::Now() + options_.interval;
      absl::MutexLock l(&mu_);
      while (!stopping_ && !cv_.WaitWithDeadline(&mu_, deadline)) {
      }
      if (stopping_) return;
    }
    absl::StatusOr<BlockGcResult> r = RunOnce();
    if (!r.ok()) {
      if (int64_t n = skip_log_.Record(absl::Now()); n > 0) {
        LOG(WARNING) << "block GC" << LogThrottle::Times(n) << ": " << r.status();
      }
    } else {
      skip_log_.Reset();
    }
  }
}

}  // namespace basalt
