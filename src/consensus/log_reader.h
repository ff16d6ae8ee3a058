#pragma once

// LogReader: the read-only view of the durable Raft log that RaftCore consults for entries it no
// longer holds in memory. The WAL (log.h) implements it; MemoryLog (memory_log.h) is the
// in-memory implementation for tests and the simulation.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "consensus/raft_types.h"

namespace basalt {

// Contract: the log holds the entries with indexes [FirstIndex(), LastIndex()], contiguous and
// durable. Entries below FirstIndex() were compacted away (garbage collected after a snapshot /
// tablet flush) but the term of the entry just before, FirstIndex() - 1, is still known. An empty
// log has FirstIndex() == LastIndex() + 1.
//
// The caller of RaftCore appends to the log (the entries of each Ready, which may replace a
// suffix) between GetReady() and Advance(); RaftCore only reads through this interface.
//
// Thread safety: implementations state their own; RaftCore calls it from the thread that drives
// the core.
class LogReader {
 public:
  virtual ~LogReader() = default;

  virtual uint64_t FirstIndex() const = 0;
  virtual uint64_t LastIndex() const = 0;

  // Returns the term of the entry at `index`, for index in [FirstIndex() - 1, LastIndex()]
  // (index 0 has term 0). Returns NOT_FOUND for an index outside that range (compacted or not yet
  // written) and another error (e.g. DATA_LOSS, an I/O error) if it cannot be read.
  virtual absl::StatusOr<uint64_t> Term(uint64_t index) const = 0;

  // Returns the entries [lo, hi), stopping early once their total size (LogEntrySize) would
  // exceed max_bytes, but always at least one entry. REQUIRES: lo < hi. Returns NOT_FOUND if lo
  // is below FirstIndex() or hi - 1 beyond LastIndex(), or another error if they cannot be read.
  virtual absl::StatusOr<std::vector<LogEntry>> Entries(uint64_t lo, uint64_t hi,
                                                        uint64_t max_bytes) const = 0;
};

// The size an entry counts for in batching limits: its data plus a fixed header allowance.
inline uint64_t LogEntrySize(const LogEntry& e) { return e.data.size() + 32; }

}  // namespace basalt
