#pragma once

// MemoryLog: an in-memory Raft log (LogReader) with an explicit durability boundary, for tests
// and the deterministic simulation. Appends and compactions are volatile until Sync(); Crash()
// reverts to the state of the last Sync(), modelling a machine that loses unsynced writes.

#include <cstdint>
#include <vector>

#include "consensus/log_reader.h"

namespace basalt {

// Invariant: entries_ are contiguous, starting at first_index_; snapshot_ is the op id of the
// entry just before them (compacted or the start of the log).
// Not thread-safe; the caller serializes.
class MemoryLog : public LogReader {
 public:
  MemoryLog() = default;

  uint64_t FirstIndex() const override { return state_.snapshot.index + 1; }
  uint64_t LastIndex() const override { return state_.snapshot.index + state_.entries.size(); }
  absl::StatusOr<uint64_t> Term(uint64_t index) const override;
  absl::StatusOr<std::vector<LogEntry>> Entries(uint64_t lo, uint64_t hi,
                                                uint64_t max_bytes) const override;

  // Appends `entries` (contiguous). If the first index is at or below LastIndex(), the entries
  // from there on are replaced. REQUIRES: entries.front().index in [FirstIndex(), LastIndex()+1].
  void Append(const std::vector<LogEntry>& entries);
  // Drops the entries up to and including `index`, keeping its term as the snapshot op id.
  // REQUIRES: FirstIndex() <= index <= LastIndex().
  void Compact(uint64_t index);
  // Replaces the whole log by an empty one that starts after `snapshot` (a tablet copy).
  void ResetToSnapshot(OpId snapshot);

  // Makes every change so far durable. Copies only what changed since the last Sync().
  void Sync();
  // Loses every change since the last Sync().
  void Crash();

  // All entries currently held (tests).
  const std::vector<LogEntry>& entries() const { return state_.entries; }

 private:
  struct State {
    OpId snapshot;
    std::vector<LogEntry> entries;
  };
  State state_;
  State durable_;
  // Lowest index appended since the last Sync() (UINT64_MAX: none); a compaction or reset since
  // then forces a full copy.
  uint64_t dirty_from_ = UINT64_MAX;
  bool snapshot_dirty_ = false;
};

}  // namespace basalt
