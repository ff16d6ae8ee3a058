#pragma once

// Value types shared by the Raft core (raft_core.h), the write-ahead log (log.h) and the node
// shell: log entries, op ids and peer ids. Pure data: no I/O, no protobuf.

#include <cstdint>
#include <string>
#include <vector>

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

// The durable part of a replica's Raft state besides its log (Raft paper figure 2: currentTerm,
// votedFor) plus the commit index, which is persisted so that a restarted replica can re-apply
// committed entries without waiting for a leader. Persisted atomically (consensus metadata) before
// any message that depends on it is sent.
struct HardState {
  uint64_t term = 0;
  PeerId vote;  // Empty: no vote cast in `term`.
  uint64_t commit = 0;
  bool operator==(const HardState&) const = default;
};

// A Raft group's membership: voters count toward elections and commitment; learners (non-voting
// members) receive the log but never count. Both lists are sorted and disjoint (raft_config.h
// checks and normalizes).
struct RaftConfig {
  std::vector<PeerId> voters;
  std::vector<PeerId> learners;
  // Learners the leader promotes to voters once they have caught up (added with
  // ConfigChange::promote); a subset of `learners`. Part of the configuration, so every later
  // leader knows it.
  std::vector<PeerId> promote;
  bool operator==(const RaftConfig&) const = default;
};

}  // namespace basalt
