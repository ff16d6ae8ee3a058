#include "consensus/raft_message_pb.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/random.h"
#include "common/status_test_util.h"
#include "consensus/memory_log.h"
#include "consensus/raft_core.h"
#include "proto/consensus.pb.h"

namespace basalt {
namespace {
namespace raft_message_pb_test_file {

// A message of `type` with every field its type can carry set to random values; appends carry
// consecutive entries with non-decreasing terms in [log_term, term].
GroupMessage RandomMessage(Random* rng, MessageType type) {
  GroupMessage gm;
  gm.group_id = "tablet-" + rng->RandomString(1 + rng->Uniform(20));
  RaftMessage& m = gm.message;
  m.type = type;
  m.from = "server-a";
  m.to = "server-b";
  m.term = 1 + rng->Skewed(40);
  m.log_term = rng->Uniform(m.term + 1);
  m.index = rng->Skewed(40);
  m.commit = rng->Skewed(40);
  m.reject = rng->OneIn(2);
  m.reject_hint_index = rng->Skewed(40);
  m.reject_hint_term = rng->Skewed(20);
  m.transfer = rng->OneIn(2);
  if ((type == MessageType::kAppend || type == MessageType::kHeartbeat) && rng->OneIn(2)) {
    m.safe_time = rng->Next64();
    m.safe_time_index = rng->Skewed(40);
  }
  if (type == MessageType::kAppend) {
    uint64_t term = std::max<uint64_t>(m.log_term, 1);
    const int n = static_cast<int>(rng->Uniform(5));
    for (int i = 0; i < n; ++i) {
      term += rng->Uniform(std::min<uint64_t>(m.term - term, 2) + 1);
      LogEntry e;
      e.term = term;
      e.index = m.index + 1 + i;
      e.type = static_cast<EntryType>(rng->Uniform(3));
      e.timestamp = rng->Next64();
      e.data = rng->Bytes(rng->Skewed(8));
      m.entries.push_back(std::move(e));
    }
  }
  return gm;
}

std::vector<GroupMessage> RandomBatch(Random* rng) {
  std::vector<GroupMessage> batch;
  const int n = 1 + static_cast<int>(rng->Uniform(6));
  for (int i = 0; i < n; ++i) {
    batch.push_back(RandomMessage(rng, static_cast<MessageType>(rng->Uniform(9))));
  }
  return batch;
}

void ExpectSame(const GroupMessage& a, const GroupMessage& b) {
  EXPECT_EQ(a.group_id, b.group_id);
  const RaftMessage& x = a.message;
  const RaftMessage& y = b.message;
  EXPECT_EQ(MessageToString(x), MessageToString(y));
  EXPECT_EQ(x.type, y.type);
  EXPECT_EQ(x.from, y.from);
  EXPECT_EQ(x.to, y.to);
  EXPECT_EQ(x.term, y.term);
  EXPECT_EQ(x.log_term, y.log_term);
  EXPECT_EQ(x.index, y.index);
  EXPECT_EQ(x.commit, y.commit);
  EXPECT_EQ(x.reject, y.reject);
  EXPECT_EQ(x.reject_hint_index, y.reject_hint_index);
  EXPECT_EQ(x.reject_hint_term, y.reject_hint_term);
  EXPECT_EQ(x.transfer, y.transfer);
  EXPECT_EQ(x.safe_time, y.safe_time);
  EXPECT_EQ(x.safe_time_index, y.safe_time_index);
  ASSERT_EQ(x.entries.size(), y.entries.size());
  for (size_t i = 0; i < x.entries.size(); ++i) {
    EXPECT_EQ(x.entries[i].term, y.entries[i].term);
    EXPECT_EQ(x.entries[i].index, y.entries[i].index);
    EXPECT_EQ(x.entries[i].type, y.entries[i].type);
    EXPECT_EQ(x.entries[i].timestamp, y.entries[i].timestamp);
    EXPECT_EQ(x.entries[i].data, y.entries[i].data);
  }
}

TEST(RaftMessagePbTest, RoundTripsEveryTypeAndField) {
  Random rng(SeedFromEnvOrTime());
  for (int iter = 0; iter < 500; ++iter) {
    std::vector<GroupMessage> batch = RandomBatch(&rng);
    absl::StatusOr<std::vector<GroupMessage>> back =
        ParseBatch(SerializeBatch("server-a", "server-b", batch));
    BASALT_ASSERT_OK(back);
    ASSERT_EQ(back->size(), batch.size());
    for (size_t i = 0; i < batch.size(); ++i) ExpectSame(batch[i], (*back)[i]);
  }
}

TEST(RaftMessagePbTest, EstimateIsAnUpperBoundOfTheEncodedSize) {
  Random rng(SeedFromEnvOrTime());
  for (int iter = 0; iter < 200; ++iter) {
    GroupMessage m = RandomMessage(&rng, static_cast<MessageType>(rng.Uniform(9)));
    pb::RaftMessagePB pb;
    RaftMessageToPB(m, &pb);
    EXPECT_LE(pb.ByteSizeLong(), EstimateEncodedSize(m)) << MessageToString(m.message);
  }
}

// A valid append batch as a protobuf, for the validation tests to break.
pb::UpdateConsensusRequestPB ValidAppend() {
  GroupMessage gm;
  gm.group_id = "t1";
  gm.message.type = MessageType::kAppend;
  gm.message.from = "a";
  gm.message.to = "b";
  gm.message.term = 5;
  gm.message.log_term = 3;
  gm.message.index = 10;
  for (uint64_t i = 0; i < 3; ++i) {
    LogEntry e;
    e.term = 4 + i / 2;
    e.index = 11 + i;
    e.data = "x";
    gm.message.entries.push_back(e);
  }
  pb::UpdateConsensusRequestPB pb;
  BatchToPB("a", "b", {gm}, &pb);
  return pb;
}

void ExpectInvalid(const pb::UpdateConsensusRequestPB& pb, const std::string& why) {
  pb::UpdateConsensusRequestPB copy = pb;
  absl::StatusOr<std::vector<GroupMessage>> r = BatchFromPB(&copy);
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << why << ": " << r.status();
}

TEST(RaftMessagePbTest, ValidAppendDecodesWithImpliedIndexes) {
  pb::UpdateConsensusRequestPB pb = ValidAppend();
  absl::StatusOr<std::vector<GroupMessage>> r = BatchFromPB(&pb);
  BASALT_ASSERT_OK(r);
  ASSERT_EQ(r->size(), 1u);
  const RaftMessage& m = (*r)[0].message;
  EXPECT_EQ(m.from, "a");
  EXPECT_EQ(m.to, "b");
  ASSERT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.entries[0].index, 11u);
  EXPECT_EQ(m.entries[2].index, 13u);
  EXPECT_EQ(m.entries[2].term, 5u);
}

TEST(RaftMessagePbTest, RejectsInvalidFields) {
  using Mutate = void (*)(pb::UpdateConsensusRequestPB*);
  const std::vector<std::pair<std::string, Mutate>> cases = {
      {"empty from", [](auto* p) { p->clear_from_server(); }},
      {"empty to", [](auto* p) { p->clear_to_server(); }},
      {"from == to", [](auto* p) { p->set_to_server("a"); }},
      {"oversized from",
       [](auto* p) { p->set_from_server(std::string(kMaxRaftIdBytes + 1, 'x')); }},
      {"empty group", [](auto* p) { p->mutable_messages(0)->clear_group_id(); }},
      {"oversized group",
       [](auto* p) {
         p->mutable_messages(0)->set_group_id(std::string(kMaxRaftIdBytes + 1, 'g'));
       }},
      {"unknown type",
       [](auto* p) { p->mutable_messages(0)->set_type(static_cast<pb::RaftMessageTypePB>(9)); }},
      {"negative type",
       [](auto* p) { p->mutable_messages(0)->set_type(static_cast<pb::RaftMessageTypePB>(-1)); }},
      {"entries on a vote", [](auto* p) { p->mutable_messages(0)->set_type(pb::VOTE); }},
      {"entries on a heartbeat", [](auto* p) { p->mutable_messages(0)->set_type(pb::HEARTBEAT); }},
      {"log_term > term", [](auto* p) { p->mutable_messages(0)->set_log_term(6); }},
      {"entry term > term", [](auto* p) { p->mutable_messages(0)->set_term(4); }},
      {"entry term < log_term", [](auto* p) { p->mutable_messages(0)->set_log_term(5); }},
      {"entry term zero", [](auto* p) { p->mutable_messages(0)->mutable_entries(0)->set_term(0); }},
      {"decreasing terms",
       [](auto* p) { p->mutable_messages(0)->mutable_entries(2)->set_term(3); }},
      {"unknown entry type",
       [](auto* p) {
         p->mutable_messages(0)->mutable_entries(1)->set_type(static_cast<pb::LogEntryTypePB>(3));
       }},
      {"index overflow", [](auto* p) { p->mutable_messages(0)->set_index(~uint64_t{0} - 2); }},
      {"safe time on a vote",
       [](auto* p) {
         p->mutable_messages(0)->clear_entries();
         p->mutable_messages(0)->set_type(pb::VOTE);
         p->mutable_messages(0)->set_safe_time(7);
       }},
      {"safe time index on a response",
       [](auto* p) {
         p->mutable_messages(0)->clear_entries();
         p->mutable_messages(0)->set_type(pb::HEARTBEAT_RESPONSE);
         p->mutable_messages(0)->set_safe_time_index(7);
       }},
  };
  for (const auto& [why, mutate] : cases) {
    pb::UpdateConsensusRequestPB pb = ValidAppend();
    mutate(&pb);
    ExpectInvalid(pb, why);
  }
  // The largest index that still fits is fine.
  pb::UpdateConsensusRequestPB pb = ValidAppend();
  pb.mutable_messages(0)->set_index(~uint64_t{0} - 3);
  BASALT_EXPECT_OK(BatchFromPB(&pb));
}

TEST(RaftMessagePbTest, SafeTimeRoundTripsOnAppendsAndHeartbeats) {
  for (MessageType type : {MessageType::kAppend, MessageType::kHeartbeat}) {
    GroupMessage gm;
    gm.group_id = "t1";
    gm.message.type = type;
    gm.message.from = "a";
    gm.message.to = "b";
    gm.message.term = 3;
    gm.message.safe_time = 0xfedcba9876543210ULL;
    gm.message.safe_time_index = 42;
    absl::StatusOr<std::vector<GroupMessage>> back = ParseBatch(SerializeBatch("a", "b", {gm}));
    BASALT_ASSERT_OK(back);
    ASSERT_EQ(back->size(), 1u);
    EXPECT_EQ((*back)[0].message.safe_time, 0xfedcba9876543210ULL);
    EXPECT_EQ((*back)[0].message.safe_time_index, 42u);
    EXPECT_NE(MessageToString((*back)[0].message).find("safe_time=18364758544493064720@42"),
              std::string::npos)
        << MessageToString((*back)[0].message);
  }
  // Absent on the wire means 0/0 (an older sender).
  pb::UpdateConsensusRequestPB pb = ValidAppend();
  absl::StatusOr<std::vector<GroupMessage>> r = BatchFromPB(&pb);
  BASALT_ASSERT_OK(r);
  EXPECT_EQ((*r)[0].message.safe_time, 0u);
  EXPECT_EQ((*r)[0].message.safe_time_index, 0u);
}

TEST(RaftMessagePbTest, RejectsOversizedEntryData) {
  pb::UpdateConsensusRequestPB pb = ValidAppend();
  pb.mutable_messages(0)->mutable_entries(0)->mutable_data()->resize((64u << 20) + 1);
  ExpectInvalid(pb, "oversized data");
}

TEST(RaftMessagePbTest, RejectsBytesThatAreNotABatch) {
  for (const std::string& bytes :
       {std::string("\xff\xff\xff"), std::string("\x1a\x05\x0a", 3), std::string(1, '\x08')}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseBatch(bytes).status()));
  }
}

void StepIntoFreshFollower(const RaftMessage& m, uint64_t seed) {
  MemoryLog log;
  Random rng(seed);
  RaftBootState boot;
  boot.config.voters = {"server-a", "server-b", "server-c"};
  RaftOptions options;
  options.id = "server-b";
  absl::StatusOr<std::unique_ptr<RaftCore>> core = RaftCore::Create(options, &log, boot, &rng);
  BASALT_ASSERT_OK(core);
  (*core)->Step(m);
  while ((*core)->HasReady()) {
    Ready ready = (*core)->GetReady();
    if (!ready.entries.empty()) log.Append(ready.entries);
    (*core)->Advance(ready);
  }
}

// Random mutations (bit flips, zeroed runs, truncation, inserted and duplicated bytes) of valid
// batches: decoding must either fail with INVALID_ARGUMENT or produce messages that keep the
// preconditions of RaftCore, which then steps them without crashing.
TEST(RaftMessagePbTest, CorruptedBatchesFailCleanlyOrStepSafely) {
  Random rng(SeedFromEnvOrTime());
  int accepted = 0;
  int rejected = 0;
  for (int iter = 0; iter < 10000; ++iter) {
    std::string bytes = SerializeBatch("server-a", "server-b", RandomBatch(&rng));
    const int mutations = 1 + static_cast<int>(rng.Uniform(4));
    for (int k = 0; k < mutations && !bytes.empty(); ++k) {
      const size_t pos = rng.Uniform(bytes.size());
      switch (rng.Uniform(5)) {
        case 0:
          bytes[pos] ^= static_cast<char>(1 << rng.Uniform(8));
          break;
        case 1:
          bytes.replace(pos, std::min<size_t>(1 + rng.Uniform(8), bytes.size() - pos),
                        std::min<size_t>(1 + rng.Uniform(8), bytes.size() - pos), '\0');
          break;
        case 2:
          bytes.resize(pos);
          break;
        case 3:
          bytes.insert(pos, rng.Bytes(1 + rng.Uniform(4)));
          break;
        default:
          bytes.insert(pos, bytes.substr(pos, 1 + rng.Uniform(16)));
          break;
      }
    }
    absl::StatusOr<std::vector<GroupMessage>> r = ParseBatch(bytes);
    if (!r.ok()) {
      ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
      ++rejected;
      continue;
    }
    ++accepted;
    // A fresh follower per message: messages of different groups (or two leaders' appends of
    // one term, which Raft excludes) must not meet in one core.
    for (const GroupMessage& m : *r) StepIntoFreshFollower(m.message, rng.Next64());
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace raft_message_pb_test_file
}  // namespace
}  // namespace basalt
