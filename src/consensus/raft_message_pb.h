#pragma once

// Conversion between RaftMessage (raft_messages.h) and its wire form in proto/consensus.proto,
// with full validation of what arrives: an incoming batch is untrusted bytes, and nothing in it
// may crash a server or break a RaftCore's or a Log's preconditions (contiguous entries,
// non-decreasing terms, sizes). Wire format summary in docs/raft.md ("gRPC transport").

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "consensus/raft_messages.h"
#include "consensus/raft_types.h"

namespace basalt {
namespace pb {
class RaftMessagePB;
class UpdateConsensusRequestPB;
}  // namespace pb

// A RaftMessage with the Raft group it belongs to.
struct GroupMessage {
  std::string group_id;
  RaftMessage message;
};

// Limits on incoming batches (larger ones are INVALID_ARGUMENT).
inline constexpr size_t kMaxRaftIdBytes = 1024;  // Group ids and server uuids.

// Returns an estimate of `m`'s encoded size in bytes (for batching; within a few bytes per field).
size_t EstimateEncodedSize(const GroupMessage& m);

// Fills `out` with `m`, moving the entries' data out of it. `m.message.from`/`to` are not
// written (the batch header carries them).
// REQUIRES: m.message.entries are consecutive, starting at m.message.index + 1.
void RaftMessageToPB(GroupMessage m, pb::RaftMessagePB* out);

// Decodes one message of a batch from `from` to `to` and validates it, moving the entries' data
// out of `*pb`. INVALID_ARGUMENT (naming the field) for an empty or oversized group id, an
// unknown message or entry type, entries on a message other than APPEND, a safe time on a
// message other than APPEND or HEARTBEAT, entries that would overflow the index space, entry
// terms that decrease, precede log_term or exceed the message's term, or oversized entry data.
absl::StatusOr<GroupMessage> RaftMessageFromPB(pb::RaftMessagePB* pb, const PeerId& from,
                                               const PeerId& to);

// Fills `out` with a batch of messages from server `from` to server `to`, moving the entries'
// data out of `messages`.
// REQUIRES: every message's from/to equal `from`/`to`.
void BatchToPB(const PeerId& from, const PeerId& to, std::vector<GroupMessage> messages,
               pb::UpdateConsensusRequestPB* out);

// Decodes and validates a whole batch, consuming `*pb` (entry data is moved out): INVALID_ARGUMENT
// (naming the message) if the server ids are empty, equal or oversized, or any message is invalid
// (RaftMessageFromPB), so that a batch is delivered entirely or not at all. The caller checks
// to_server against its own uuid.
absl::StatusOr<std::vector<GroupMessage>> BatchFromPB(pb::UpdateConsensusRequestPB* pb);

// Serialized forms of the above (tests, tools): SerializeBatch never fails; ParseBatch returns
// INVALID_ARGUMENT for bytes that are not a UpdateConsensusRequestPB, then as BatchFromPB.
std::string SerializeBatch(const PeerId& from, const PeerId& to,
                           const std::vector<GroupMessage>& messages);
absl::StatusOr<std::vector<GroupMessage>> ParseBatch(std::string_view bytes);

}  // namespace basalt
