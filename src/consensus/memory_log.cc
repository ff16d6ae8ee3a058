#include "consensus/memory_log.h"

#include <algorithm>

#include <glog/logging.h>

#include "absl/status/status.h"
#include "common/strings.h"

namespace basalt {

absl::StatusOr<uint64_t> MemoryLog::Term(uint64_t index) const {
  if (index == state_.snapshot.index) return state_.snapshot.term;
  if (index < FirstIndex() || index > LastIndex()) {
    return absl::NotFoundError(
        StrCat("index ", index, " outside log [", FirstIndex(), ", ", LastIndex(), "]"));
  }
  return state_.entries[index - FirstIndex()].term;
}

absl::StatusOr<std::vector<LogEntry>> MemoryLog::Entries(uint64_t lo, uint64_t hi,
                                                         uint64_t max_bytes) const {
  CHECK_LT(lo, hi);
  if (lo < FirstIndex() || hi - 1 > LastIndex()) {
    return absl::NotFoundError(
        StrCat("entries [", lo, ", ", hi, ") outside log [", FirstIndex(), ", ", LastIndex(), "]"));
  }
  std::vector<LogEntry> out;
  uint64_t bytes = 0;
  for (uint64_t i = lo; i < hi; ++i) {
    const LogEntry& e = state_.entries[i - FirstIndex()];
    bytes += LogEntrySize(e);
    if (!out.empty() && bytes > max_bytes) break;
    out.push_back(e);
  }
  return out;
}

void MemoryLog::Append(const std::vector<LogEntry>& entries) {
  if (entries.empty()) return;
  const uint64_t first = entries.front().index;
  dirty_from_ = std::min(dirty_from_, first);
  CHECK_GE(first, FirstIndex());
  CHECK_LE(first, LastIndex() + 1);
  state_.entries.resize(first - FirstIndex());
  for (const LogEntry& e : entries) {
    CHECK_EQ(e.index, LastIndex() + 1);
    state_.entries.push_back(e);
  }
}

void MemoryLog::Compact(uint64_t index) {
  CHECK_GE(index, FirstIndex());
  CHECK_LE(index, LastIndex());
  const uint64_t drop = index - FirstIndex() + 1;
  state_.snapshot = state_.entries[drop - 1].id();
  state_.entries.erase(state_.entries.begin(), state_.entries.begin() + drop);
  snapshot_dirty_ = true;
}

void MemoryLog::ResetToSnapshot(OpId snapshot) {
  state_.snapshot = snapshot;
  state_.entries.clear();
  snapshot_dirty_ = true;
}

void MemoryLog::Sync() {
  if (snapshot_dirty_) {
    durable_ = state_;
  } else if (dirty_from_ != UINT64_MAX) {
    // Both states share the snapshot, so positions map to the same indexes.
    const size_t keep = dirty_from_ - FirstIndex();
    durable_.entries.resize(std::min(keep, durable_.entries.size()));
    durable_.entries.insert(durable_.entries.end(), state_.entries.begin() + keep,
                            state_.entries.end());
  }
  dirty_from_ = UINT64_MAX;
  snapshot_dirty_ = false;
}

void MemoryLog::Crash() {
  state_ = durable_;
  dirty_from_ = UINT64_MAX;
  snapshot_dirty_ = false;
}

}  // namespace basalt
