#pragma once

// Flush and compaction: rewriting rowsets into new DiskRowSets (docs/tablet.md "Flush and
// compaction").
//
// One code path serves both: a flush compacts one frozen MemRowSet, a merge compaction several
// DiskRowSets, a major delta compaction one DiskRowSet. The inputs' rows are merged in key order
// (keys are unique across a tablet's rowsets) and each row is rewritten at a snapshot S:
//
//   - REDOs that S contains are applied to the base values; each yields an UNDO (its inverse);
//   - a trailing DELETE in S is kept as a REDO (a "ghost" row), unless it is older than the
//     ancient history mark (AHM), in which case the row is dropped: this is where deleted rows'
//     space comes back;
//   - UNDOs older than the AHM are dropped (history GC);
//   - REDOs that S does not contain are left out here and carried over afterwards.
//
// Protocol (the tablet drives it):
//   1. With writers blocked: freeze the inputs (a MemRowSet stops taking new keys) and take S as
//      "every op below the MVCC clean watermark" (no op is in flight then, so nothing S lacks has
//      touched the inputs yet). Unblock writers.
//   2. Run(): write the outputs (finalized blocks) while writers keep mutating the inputs.
//   3. With writers blocked: CarryOver() applies every input mutation S lacks to the outputs'
//      delta stores, then the tablet swaps outputs for inputs. Because the inputs are frozen and
//      their mutation logs are append-only, step 3 sees every mutation step 2 skipped.
//
// Not thread-safe; one thread drives a compaction.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cfile/block_manager.h"
#include "common/hybrid_clock.h"
#include "common/schema.h"
#include "tablet/mvcc.h"
#include "tablet/rowset_metadata.h"

namespace basalt {

class BlockCache;
class DiskRowSet;
class MemRowSet;

struct CompactionOptions {
  BlockManager* block_manager = nullptr;  // Borrowed.
  // The output schema (the tablet's current schema). Borrowed; outlives the compaction.
  const Schema* schema = nullptr;
  // The snapshot the outputs' base data reflect. REQUIRES: a clean snapshot
  // (MvccSnapshot::IncludingAllBefore(t)).
  MvccSnapshot snapshot;
  // History before this is not kept (UNDOs dropped, rows deleted before it dropped).
  HybridTime ancient_history_mark = HybridTime::kMin;
  // Outputs roll to a new rowset after this many bytes.
  uint64_t target_rowset_bytes = 32 << 20;
  // Hands out ids for new rowsets.
  std::function<int64_t()> next_rowset_id;
};

// Counters of one compaction, for logs and tests.
struct CompactionStats {
  int64_t rows_read = 0;
  int64_t rows_written = 0;
  int64_t rows_gced = 0;  // Deleted before the AHM, dropped.
  int64_t undos_written = 0;
  int64_t undos_gced = 0;
  int64_t redos_written = 0;  // Ghost DELETEs.
  int64_t mutations_carried = 0;
  uint64_t bytes_written = 0;
};

// A mutation the outputs cannot take: its row was dropped by history GC and is now being
// reinserted. The tablet inserts it into its current MemRowSet (`changes` is a REINSERT, or a
// later UPDATE/DELETE of the reinserted row).
struct OrphanedMutation {
  std::string key;
  HybridTime ts;
  std::string changes;
};

class RowSetCompaction {
 public:
  // Exactly one of mrs / drs per input; inputs are borrowed shared_ptrs kept alive here.
  struct Input {
    std::shared_ptr<MemRowSet> mrs;
    std::shared_ptr<DiskRowSet> drs;
  };

  RowSetCompaction(CompactionOptions options, std::vector<Input> inputs);
  ~RowSetCompaction();
  RowSetCompaction(const RowSetCompaction&) = delete;
  RowSetCompaction& operator=(const RowSetCompaction&) = delete;

  // Step 2: writes and finalizes the output rowsets. On error, blocks already finalized are
  // deleted (best effort) and the inputs are untouched.
  absl::Status Run();
  // The outputs in key order (empty if every row was dropped).
  const std::vector<RowSetMetadata>& outputs() const { return outputs_; }

  // Step 3. REQUIRES: Run() succeeded, writers blocked, `opened` are the outputs opened in order.
  // Applies every input mutation the snapshot lacks to the outputs (op_index: the smallest op
  // index the inputs hold in memory, for WAL retention); mutations of dropped rows go to
  // *orphans.
  absl::Status CarryOver(const std::vector<std::shared_ptr<DiskRowSet>>& opened, int64_t op_index,
                         std::vector<OrphanedMutation>* orphans);

  const CompactionStats& stats() const { return stats_; }

 private:
  class Writer;
  struct InputState;

  absl::Status WriteRows(Writer* writer);

  const CompactionOptions options_;
  std::vector<Input> inputs_;
  std::vector<std::unique_ptr<InputState>> states_;
  std::vector<RowSetMetadata> outputs_;
  CompactionStats stats_;
};

}  // namespace basalt
