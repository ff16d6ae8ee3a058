#include "consensus/raft_messages.h"

#include "common/strings.h"

namespace basalt {

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kPreVote:
      return "PreVote";
    case MessageType::kPreVoteResponse:
      return "PreVoteResp";
    case MessageType::kVote:
      return "Vote";
    case MessageType::kVoteResponse:
      return "VoteResp";
    case MessageType::kAppend:
      return "Append";
    case MessageType::kAppendResponse:
      return "AppendResp";
    case MessageType::kHeartbeat:
      return "Heartbeat";
    case MessageType::kHeartbeatResponse:
      return "HeartbeatResp";
    case MessageType::kTimeoutNow:
      return "TimeoutNow";
    case MessageType::kPeerMissing:
      return "PeerMissing";
  }
  return "?";
}

std::string MessageToString(const RaftMessage& m) {
  std::string out = StrCat(MessageTypeName(m.type), " ", m.from, "->", m.to, " term=", m.term,
                           " log=", m.log_term, "/", m.index, " commit=", m.commit);
  if (!m.entries.empty()) {
    StrAppend(&out, " entries=[", m.entries.front().index, "..", m.entries.back().index, "]");
  }
  if (m.reject) StrAppend(&out, " REJECT hint=", m.reject_hint_term, "/", m.reject_hint_index);
  if (m.transfer) StrAppend(&out, " transfer");
  if (m.safe_time != 0 || m.safe_time_index != 0) {
    StrAppend(&out, " safe_time=", m.safe_time, "@", m.safe_time_index);
  }
  return out;
}

std::vector<RaftMessage> TakeMessagesSendableBeforePersist(Ready* ready, const HardState& durable) {
  std::vector<RaftMessage> early;
  if (ready->hard_state.has_value() &&
      (ready->hard_state->term != durable.term || ready->hard_state->vote != durable.vote)) {
    return early;
  }
  for (const LogEntry& e : ready->entries) {
    if (e.type == EntryType::kConfigChange) return early;
  }
  std::vector<RaftMessage> rest;
  for (RaftMessage& m : ready->messages) {
    const bool leader_message = m.type == MessageType::kAppend || m.type == MessageType::kHeartbeat;
    (leader_message ? early : rest).push_back(std::move(m));
  }
  ready->messages = std::move(rest);
  return early;
}

}  // namespace basalt
