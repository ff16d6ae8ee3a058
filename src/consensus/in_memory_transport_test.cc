#include "consensus/in_memory_transport.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace in_memory_transport_test_file {

RaftMessage Msg(const PeerId& from, const PeerId& to, uint64_t term = 1) {
  RaftMessage m;
  m.type = MessageType::kHeartbeat;
  m.from = from;
  m.to = to;
  m.term = term;
  return m;
}

class InMemoryTransportTest : public ::testing::Test {
 protected:
  void Listen(const std::string& group, const PeerId& peer) {
    BASALT_ASSERT_OK(t_.Register(group, peer, [this, group, peer](RaftMessage m) {
      received_.push_back(group + "/" + peer + "<-" + m.from);
    }));
  }
  InMemoryTransport t_{SeedFromEnvOrTime()};
  std::vector<std::string> received_;
};

TEST_F(InMemoryTransportTest, RoutesByGroupAndPeer) {
  Listen("g1", "b");
  Listen("g2", "b");
  EXPECT_EQ(t_.Register("g1", "b", [](RaftMessage) {}).code(), absl::StatusCode::kAlreadyExists);
  t_.Send("g1", Msg("a", "b"));
  t_.SendBatch("g2", {Msg("a", "b"), Msg("c", "b")});
  t_.Send("g3", Msg("a", "b"));  // Nobody listens: lost.
  EXPECT_EQ(received_, (std::vector<std::string>{"g1/b<-a", "g2/b<-a", "g2/b<-c"}));
  t_.Unregister("g1", "b");
  t_.Send("g1", Msg("a", "b"));
  EXPECT_EQ(received_.size(), 3u);
}

TEST_F(InMemoryTransportTest, CutIsolateAndHeal) {
  Listen("g", "a");
  Listen("g", "b");
  Listen("g", "c");
  t_.CutLink("a", "b");
  t_.Send("g", Msg("a", "b"));
  t_.Send("g", Msg("b", "a"));
  t_.Send("g", Msg("a", "c"));
  EXPECT_EQ(received_, (std::vector<std::string>{"g/c<-a"}));
  t_.RestoreLink("a", "b");
  t_.Isolate("c");
  t_.Send("g", Msg("a", "c"));
  t_.Send("g", Msg("c", "b"));
  t_.Send("g", Msg("a", "b"));
  EXPECT_EQ(received_.back(), "g/b<-a");
  EXPECT_EQ(received_.size(), 2u);
  t_.HealAll();
  t_.Send("g", Msg("c", "b"));
  EXPECT_EQ(received_.back(), "g/b<-c");
  EXPECT_EQ(t_.num_dropped(), 4);
  EXPECT_EQ(t_.num_delivered(), 3);
}

TEST_F(InMemoryTransportTest, RandomLossIsPerLink) {
  Listen("g", "a");
  Listen("g", "b");
  t_.SetDropProbability("a", "b", 0.5);
  for (int i = 0; i < 1000; ++i) t_.Send("g", Msg("a", "b"));
  for (int i = 0; i < 100; ++i) t_.Send("g", Msg("b", "a"));
  const int64_t dropped = t_.num_dropped();
  EXPECT_GT(dropped, 350);
  EXPECT_LT(dropped, 650);
  EXPECT_EQ(t_.num_delivered(), 1100 - dropped);
  t_.SetDropProbability("a", "b", 1.0);
  t_.Send("g", Msg("a", "b"));
  EXPECT_EQ(t_.num_dropped(), dropped + 1);
}

}  // namespace in_memory_transport_test_file
}  // namespace
}  // namespace basalt
