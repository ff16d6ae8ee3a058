#include "consensus/raft_message_pb.h"

#include <cstdint>
#include <limits>
#include <utility>

#include <glog/logging.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/log_segment.h"
#include "proto/consensus.pb.h"

namespace basalt {

namespace {

// The C++ enums and the wire enums share their numbers (proto/consensus.proto).
static_assert(static_cast<int>(MessageType::kPreVote) == pb::PRE_VOTE);
static_assert(static_cast<int>(MessageType::kAppend) == pb::APPEND);
static_assert(static_cast<int>(MessageType::kTimeoutNow) == pb::TIMEOUT_NOW);
static_assert(static_cast<int>(EntryType::kNoOp) == pb::NO_OP);
static_assert(static_cast<int>(EntryType::kConfigChange) == pb::CONFIG_CHANGE);

absl::Status CheckId(const std::string& id, const char* what) {
  if (id.empty()) return absl::InvalidArgumentError(StrCat("empty ", what));
  if (id.size() > kMaxRaftIdBytes) {
    return absl::InvalidArgumentError(
        StrCat(what, " of ", id.size(), " bytes exceeds the limit of ", kMaxRaftIdBytes));
  }
  return absl::OkStatus();
}

// Decodes the entries of an APPEND into `m` (whose term, log_term and index are set), checking
// what RaftCore and Log rely on: consecutive indexes (implied), terms non-decreasing from
// log_term up to the message's term, known types, data within the log's limit.
absl::Status DecodeEntries(pb::RaftMessagePB* pb, RaftMessage* m) {
  const int n = pb->entries_size();
  if (n == 0) return absl::OkStatus();
  if (m->type != MessageType::kAppend) {
    return absl::InvalidArgumentError(
        StrCat("a ", MessageTypeName(m->type), " message carries ", n, " entries"));
  }
  if (m->log_term > m->term) {
    return absl::InvalidArgumentError(
        StrCat("append of term ", m->term, " follows an entry of later term ", m->log_term));
  }
  if (m->index > std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(n)) {
    return absl::InvalidArgumentError(
        StrCat(n, " entries after index ", m->index, " overflow the index space"));
  }
  m->entries.reserve(n);
  uint64_t prev_term = m->log_term;
  for (int i = 0; i < n; ++i) {
    pb::LogEntryPB& e = *pb->mutable_entries(i);
    const uint64_t index = m->index + 1 + i;
    if (e.term() == 0 || e.term() < prev_term || e.term() > m->term) {
      return absl::InvalidArgumentError(StrCat("entry ", index, " has term ", e.term(),
                                               ", outside [", std::max<uint64_t>(prev_term, 1),
                                               ", ", m->term, "]"));
    }
    if (!pb::LogEntryTypePB_IsValid(e.type())) {
      return absl::InvalidArgumentError(
          StrCat("entry ", index, " has unknown type ", static_cast<int>(e.type())));
    }
    if (e.data().size() > kMaxEntryDataBytes) {
      return absl::InvalidArgumentError(StrCat("entry ", index, " has ", e.data().size(),
                                               " bytes of data, over the limit of ",
                                               kMaxEntryDataBytes));
    }
    prev_term = e.term();
    LogEntry& out = m->entries.emplace_back();
    out.term = e.term();
    out.index = index;
    out.type = static_cast<EntryType>(e.type());
    out.timestamp = e.timestamp();
    out.data = std::move(*e.mutable_data());
  }
  return absl::OkStatus();
}

}  // namespace

size_t EstimateEncodedSize(const GroupMessage& m) {
  // Tag, length and fixed fields (varints up to 10 bytes, each with a 1-byte tag).
  size_t size = m.group_id.size() + 48;
  if (m.message.safe_time != 0 || m.message.safe_time_index != 0) size += 22;
  for (const LogEntry& e : m.message.entries) size += e.data.size() + 24;
  return size;
}

void RaftMessageToPB(GroupMessage gm, pb::RaftMessagePB* out) {
  RaftMessage& m = gm.message;
  out->set_group_id(gm.group_id);
  out->set_type(static_cast<pb::RaftMessageTypePB>(m.type));
  out->set_term(m.term);
  out->set_log_term(m.log_term);
  out->set_index(m.index);
  out->set_commit(m.commit);
  out->set_reject(m.reject);
  out->set_reject_hint_index(m.reject_hint_index);
  out->set_reject_hint_term(m.reject_hint_term);
  out->set_transfer(m.transfer);
  out->set_safe_time(m.safe_time);
  out->set_safe_time_index(m.safe_time_index);
  out->mutable_entries()->Reserve(static_cast<int>(m.entries.size()));
  for (size_t i = 0; i < m.entries.size(); ++i) {
    LogEntry& e = m.entries[i];
    DCHECK_EQ(e.index, m.index + 1 + i) << "non-consecutive entries in " << MessageToString(m);
    pb::LogEntryPB* pe = out->add_entries();
    pe->set_term(e.term);
    pe->set_type(static_cast<pb::LogEntryTypePB>(e.type));
    pe->set_timestamp(e.timestamp);
    pe->set_data(std::move(e.data));
  }
}

absl::StatusOr<GroupMessage> RaftMessageFromPB(pb::RaftMessagePB* mutable_pb, const PeerId& from,
                                               const PeerId& to) {
  const pb::RaftMessagePB& pb = *mutable_pb;
  GroupMessage gm;
  gm.group_id = pb.group_id();
  BASALT_RETURN_IF_ERROR(CheckId(gm.group_id, "group id"));
  if (!pb::RaftMessageTypePB_IsValid(pb.type())) {
    return absl::InvalidArgumentError(StrCat("unknown message type ", static_cast<int>(pb.type())));
  }
  RaftMessage& m = gm.message;
  m.type = static_cast<MessageType>(pb.type());
  m.from = from;
  m.to = to;
  m.term = pb.term();
  m.log_term = pb.log_term();
  m.index = pb.index();
  m.commit = pb.commit();
  m.reject = pb.reject();
  m.reject_hint_index = pb.reject_hint_index();
  m.reject_hint_term = pb.reject_hint_term();
  m.transfer = pb.transfer();
  m.safe_time = pb.safe_time();
  m.safe_time_index = pb.safe_time_index();
  if ((m.safe_time != 0 || m.safe_time_index != 0) && m.type != MessageType::kAppend &&
      m.type != MessageType::kHeartbeat) {
    return absl::InvalidArgumentError(
        StrCat("a ", MessageTypeName(m.type), " message carries a safe time"));
  }
  BASALT_RETURN_IF_ERROR(DecodeEntries(mutable_pb, &m));
  return gm;
}

void BatchToPB(const PeerId& from, const PeerId& to, std::vector<GroupMessage> messages,
               pb::UpdateConsensusRequestPB* out) {
  out->set_from_server(from);
  out->set_to_server(to);
  out->mutable_messages()->Reserve(static_cast<int>(messages.size()));
  for (GroupMessage& m : messages) {
    DCHECK_EQ(m.message.from, from);
    DCHECK_EQ(m.message.to, to);
    RaftMessageToPB(std::move(m), out->add_messages());
  }
}

absl::StatusOr<std::vector<GroupMessage>> BatchFromPB(pb::UpdateConsensusRequestPB* pb) {
  const std::string& from = pb->from_server();
  const std::string& to = pb->to_server();
  BASALT_RETURN_IF_ERROR(CheckId(from, "sending server id"));
  BASALT_RETURN_IF_ERROR(CheckId(to, "receiving server id"));
  if (from == to) {
    return absl::InvalidArgumentError(StrCat("a batch from server ", from, " to itself"));
  }
  std::vector<GroupMessage> out;
  out.reserve(pb->messages_size());
  for (int i = 0; i < pb->messages_size(); ++i) {
    absl::StatusOr<GroupMessage> m = RaftMessageFromPB(pb->mutable_messages(i), from, to);
    if (!m.ok()) {
      return absl::InvalidArgumentError(
          StrCat("message ", i, " of the batch from server ", from, ": ", m.status().message()));
    }
    out.push_back(std::move(*m));
  }
  return out;
}

std::string SerializeBatch(const PeerId& from, const PeerId& to,
                           const std::vector<GroupMessage>& messages) {
  pb::UpdateConsensusRequestPB pb;
  BatchToPB(from, to, messages, &pb);  // A copy: the caller keeps its messages.
  return pb.SerializeAsString();
}

absl::StatusOr<std::vector<GroupMessage>> ParseBatch(std::string_view bytes) {
  pb::UpdateConsensusRequestPB pb;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !pb.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        StrCat("malformed consensus batch (", bytes.size(), " bytes): not a protobuf message"));
  }
  return BatchFromPB(&pb);
}

}  // namespace basalt
