#pragma once

// Messages exchanged by Raft cores (raft_core.h), as plain C++ structs. The transport maps them to
// its wire format (proto/consensus.proto for gRPC); the core never sees bytes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "consensus/raft_types.h"

namespace basalt {

enum class MessageType : uint8_t {
  // Pre-vote (Raft thesis §9.6): "would you vote for me at term `term`?" Carries the candidate's
  // last log term/index in log_term/index. Granting changes no state on the voter.
  kPreVote = 0,
  kPreVoteResponse = 1,
  // RequestVote: term, last log term (log_term) and last log index (index).
  kVote = 2,
  kVoteResponse = 3,
  // AppendEntries: entries follow the entry at (log_term, index); commit is the leader's commit.
  kAppend = 4,
  // Success: index is the follower's last index known to match the leader. Reject: index is the
  // rejected prev index; reject_hint_index/term name the follower's best guess for a match.
  kAppendResponse = 5,
  // Leader liveness and commit propagation; commit is min(leader commit, follower match).
  kHeartbeat = 6,
  kHeartbeatResponse = 7,
  // Leadership transfer: the recipient starts an election at once, skipping pre-vote.
  kTimeoutNow = 8,
  // Local only, never on the wire (RaftMessageTypePB has no such value): the transport tells a
  // node that the server of `from` holds no replica of the group (it dropped the node's messages
  // as addressed to an unknown group). A leader then needs a tablet copy to bring that peer in.
  kPeerMissing = 9,
};

const char* MessageTypeName(MessageType type);

// One Raft message. Fields not listed for a type are zero/empty.
struct RaftMessage {
  MessageType type = MessageType::kHeartbeat;
  PeerId from;
  PeerId to;
  // The sender's term; for kPreVote the term the sender would campaign at (its term + 1), and for
  // a granted kPreVoteResponse that same term echoed back.
  uint64_t term = 0;
  uint64_t log_term = 0;
  uint64_t index = 0;
  std::vector<LogEntry> entries;
  uint64_t commit = 0;
  bool reject = false;
  uint64_t reject_hint_index = 0;
  uint64_t reject_hint_term = 0;
  // On kVote/kPreVote: the election was started by a leadership transfer (kTimeoutNow), so voters
  // must not ignore it for having heard from a leader recently.
  bool transfer = false;
  // On kAppend/kHeartbeat from a leader only: an opaque pair the node shell (raft_node.h) attaches
  // for its owner and the core never reads. Basalt's tablets carry a safe time here: every entry
  // with a timestamp <= safe_time has an index <= safe_time_index (docs/cluster.md "Scans").
  // 0/0: none.
  uint64_t safe_time = 0;
  uint64_t safe_time_index = 0;
};

// Returns a one-line description for traces and test failures.
std::string MessageToString(const RaftMessage& m);

// A batch of work the caller of RaftCore must carry out, in this order:
//   1. persist hard_state (if set) and append entries to the log (an entry whose index is at or
//      below the log's last index replaces that entry and everything after it), durably;
//   2. send messages (they may depend on step 1, never before it is durable), except those
//      TakeMessagesSendableBeforePersist returns, which may go before step 1;
//   3. start tablet copies for snapshots_needed;
//   4. apply committed_entries in order (they may include entries from step 1);
//   5. call RaftCore::Advance(ready).
struct Ready {
  std::optional<HardState> hard_state;  // Set only when it changed since the last Ready.
  std::vector<LogEntry> entries;
  std::vector<RaftMessage> messages;
  std::vector<LogEntry> committed_entries;
  // Followers the leader can no longer feed from its log (their next entry was compacted away):
  // they need a tablet copy, after which the caller reports RaftCore::ReportSnapshotDone/Failed.
  std::vector<PeerId> snapshots_needed;

  bool empty() const {
    return !hard_state && entries.empty() && messages.empty() && committed_entries.empty() &&
           snapshots_needed.empty();
  }
};

// Moves out of `ready` the messages that may be sent before step 1 (persisting) is durable: a
// leader's appends and heartbeats, when the term and vote it persisted (`durable`) stay as they
// are and none of the new entries changes the configuration. Raft thesis §10.2.1: the leader then
// writes its own log in parallel with its followers, which is safe because it counts its own
// entries toward a commit only once Advance reports them durable, and an append promises nothing
// about the sender's disk. Everything else (votes, acknowledgements, any message of a Ready that
// changes the term or the vote) stays in `ready`.
//
// Configuration entries wait for the leader's write because a configuration takes effect when
// appended: a follower that adopted one the crashed leader lost could be stuck for good (seen in
// the simulation: a voter demoted to learner by an entry only it held, whose longer log made it
// refuse the restarted leader, while as a learner it would not campaign itself). A follower
// holding log entries its leader lost is otherwise ordinary Raft: the longest log wins.
std::vector<RaftMessage> TakeMessagesSendableBeforePersist(Ready* ready, const HardState& durable);

}  // namespace basalt
