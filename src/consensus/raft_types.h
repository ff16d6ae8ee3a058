#pragma once

// Value types shared by the Raft core (raft_core.h), the write-ahead log (log.h) and the node
// shell: log entries, op ids and peer ids. Pure data: no I/O, no protobuf.

#include <cstdint>
#include <string>

namespace basalt {

// Identifies a peer (a tablet server's or master's permanent uuid).
using PeerId = std::string;

// Position of an entry in the replicated log. Index 0 / term 0 means "before the first entry".
struct OpId {
  uint64_t term = 0;
  uint64_t index = 0;
  bool operator==(const OpId&) const = default;
  auto operator<=>(const OpId&) const = default;
};

enum class EntryType : uint8_t {
  kNoOp = 0,          // Appended by a new leader to commit entries of earlier terms.
  kNormal = 1,        // A state machine command (opaque data).
  kConfigChange = 2,  // A membership change; data is the serialized new configuration.
};

// One replicated log entry. The WAL stores exactly these fields (docs/wal.md).
struct LogEntry {
  uint64_t term = 0;
  uint64_t index = 0;
  EntryType type = EntryType::kNormal;
  // For kNormal entries, a hybrid timestamp assigned by the leader (0 if unused).
  uint64_t timestamp = 0;
  std::string data;

  OpId id() const { return OpId{term, index}; }
};

}  // namespace basalt
