#include "consensus/raft_messages.h"

#include <gtest/gtest.h>

#include <vector>

namespace basalt {
namespace {
namespace raft_messages_test_file {

RaftMessage Message(MessageType type, const char* to) {
  RaftMessage m;
  m.type = type;
  m.to = to;
  m.term = 3;
  return m;
}

std::vector<MessageType> Types(const std::vector<RaftMessage>& messages) {
  std::vector<MessageType> out;
  for (const RaftMessage& m : messages) out.push_back(m.type);
  return out;
}

// A leader's appends and heartbeats may leave before its write; acknowledgements and votes wait.
TEST(RaftMessagesTest, OnlyALeadersMessagesGoBeforePersist) {
  const HardState durable{3, "a", 7};
  Ready ready;
  ready.messages = {Message(MessageType::kAppend, "b"), Message(MessageType::kVoteResponse, "c"),
                    Message(MessageType::kHeartbeat, "c"), Message(MessageType::kAppend, "c"),
                    Message(MessageType::kAppendResponse, "b")};
  // A new commit index alone does not hold anything back (it is volatile).
  ready.hard_state = HardState{3, "a", 9};
  const std::vector<RaftMessage> early = TakeMessagesSendableBeforePersist(&ready, durable);
  EXPECT_EQ(Types(early), (std::vector<MessageType>{MessageType::kAppend, MessageType::kHeartbeat,
                                                    MessageType::kAppend}));
  EXPECT_EQ(early[0].to, "b");
  EXPECT_EQ(early[2].to, "c");
  EXPECT_EQ(Types(ready.messages),
            (std::vector<MessageType>{MessageType::kVoteResponse, MessageType::kAppendResponse}));
}

// A Ready that changes the term or the vote sends nothing before that change is durable.
TEST(RaftMessagesTest, ATermOrVoteChangeHoldsEverythingBack) {
  const HardState durable{3, "a", 7};
  for (const HardState& changed : {HardState{4, "", 7}, HardState{3, "b", 7}}) {
    Ready ready;
    ready.messages = {Message(MessageType::kAppend, "b"), Message(MessageType::kHeartbeat, "c")};
    ready.hard_state = changed;
    EXPECT_TRUE(TakeMessagesSendableBeforePersist(&ready, durable).empty());
    EXPECT_EQ(ready.messages.size(), 2u);
  }
}

// So does a Ready appending a configuration entry (it takes effect on the follower at once).
TEST(RaftMessagesTest, AConfigurationEntryHoldsEverythingBack) {
  const HardState durable{3, "a", 7};
  Ready ready;
  ready.messages = {Message(MessageType::kAppend, "b")};
  LogEntry data;
  data.type = EntryType::kNormal;
  LogEntry config;
  config.type = EntryType::kConfigChange;
  ready.entries = {data, config};
  EXPECT_TRUE(TakeMessagesSendableBeforePersist(&ready, durable).empty());
  EXPECT_EQ(ready.messages.size(), 1u);
  ready.entries = {data};
  EXPECT_EQ(TakeMessagesSendableBeforePersist(&ready, durable).size(), 1u);
}

}  // namespace raft_messages_test_file
}  // namespace
}  // namespace basalt
