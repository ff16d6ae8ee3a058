// Unit tests of RaftCore, named after the rules of the Raft paper (Ongaro & Ousterhout 2014) and
// thesis (Ongaro 2014), driven through a small in-memory network.

#include "consensus/raft_core.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/random.h"
#include "common/status_test_util.h"
#include "consensus/memory_log.h"
#include "consensus/raft_config.h"

namespace basalt {
namespace {
namespace raft_core_test_file {

using Role = RaftCore::Role;

// A group of RaftCores joined by a FIFO network that delivers on demand. Messages can be dropped
// by link (Cut, Isolate) or inspected and rewritten by a filter. Each node persists Readies into a
// MemoryLog (synced at once) and records what it applied.
class Network {
 public:
  struct Node {
    MemoryLog log;
    HardState hard_state;
    std::unique_ptr<Random> rng;
    std::unique_ptr<RaftCore> core;
    std::vector<LogEntry> applied;
    bool up = true;
  };

  explicit Network(RaftConfig config, std::function<void(RaftOptions*)> tweak = nullptr,
                   std::vector<PeerId> extra = {})
      : config_(std::move(config)), tweak_(std::move(tweak)) {
    std::vector<PeerId> ids = config_.voters;
    ids.insert(ids.end(), config_.learners.begin(), config_.learners.end());
    ids.insert(ids.end(), extra.begin(), extra.end());
    for (const PeerId& id : ids) {
      nodes_[id] = std::make_unique<Node>();
      nodes_[id]->rng = std::make_unique<Random>(std::hash<std::string>()(id));
      Start(id);
    }
  }

  RaftCore& core(const PeerId& id) { return *nodes_.at(id)->core; }
  Node& node(const PeerId& id) { return *nodes_.at(id); }

  void Start(const PeerId& id, RaftConfig boot_config = {}) {
    Node& n = *nodes_.at(id);
    RaftOptions options;
    options.id = id;
    if (tweak_) tweak_(&options);
    RaftBootState boot;
    boot.hard_state = n.hard_state;
    boot.config = boot_config.voters.empty() ? config_ : boot_config;
    auto core = RaftCore::Create(options, &n.log, boot, n.rng.get());
    CHECK(core.ok()) << core.status();
    n.core = std::move(*core);
    n.applied.clear();
    n.up = true;
  }

  // Crashes `id` (losing nothing: every Ready was synced) and restarts it from durable state.
  void Restart(const PeerId& id) {
    node(id).log.Crash();
    Start(id);
    Process(id);
  }

  // Carries out every Ready of `id`: persist, queue messages, apply, advance.
  void Process(const PeerId& id) {
    Node& n = node(id);
    while (n.up && n.core->HasReady()) {
      Ready ready = n.core->GetReady();
      if (ready.hard_state) n.hard_state = *ready.hard_state;
      n.log.Append(ready.entries);
      n.log.Sync();
      for (RaftMessage& m : ready.messages) queue_.push_back(std::move(m));
      for (const LogEntry& e : ready.committed_entries) n.applied.push_back(e);
      for (const PeerId& p : ready.snapshots_needed) snapshots_needed_.push_back(p);
      n.core->Advance(ready);
      if (!ready.committed_entries.empty()) {
        n.core->AppliedTo(ready.committed_entries.back().index);
      }
    }
  }

  // Delivers queued messages (and those they cause) until the network is quiet.
  void Deliver(int max_messages = 100000) {
    while (!queue_.empty() && max_messages-- > 0) {
      RaftMessage m = std::move(queue_.front());
      queue_.pop_front();
      if (!Passes(&m)) continue;
      node(m.to).core->Step(m);
      Process(m.to);
    }
  }

  void Tick(const PeerId& id, int n = 1) {
    for (int i = 0; i < n; ++i) {
      core(id).Tick();
      Process(id);
    }
  }
  void TickAll(int n = 1) {
    for (int i = 0; i < n; ++i) {
      for (auto& [id, node] : nodes_) {
        if (node->up) Tick(id);
      }
      Deliver();
    }
  }

  // Ticks only `id` until it starts an election, then delivers; returns its role after.
  Role Campaign(const PeerId& id) {
    for (int i = 0; i < 1000 && !SentVoteRequest(id); ++i) Tick(id);
    Deliver();
    return core(id).role();
  }
  bool SentVoteRequest(const PeerId& id) {
    if (core(id).role() == Role::kLeader) return true;  // Single voter: won at once.
    for (const RaftMessage& m : queue_) {
      if (m.from == id && (m.type == MessageType::kPreVote || m.type == MessageType::kVote)) {
        return true;
      }
    }
    return false;
  }

  absl::StatusOr<uint64_t> Propose(const PeerId& id, const std::string& data) {
    auto index = core(id).Propose(data);
    Process(id);
    Deliver();
    return index;
  }

  void Cut(const PeerId& a, const PeerId& b) {
    cut_.insert({a, b});
    cut_.insert({b, a});
  }
  void Isolate(const PeerId& id) {
    for (auto& [other, n] : nodes_) {
      if (other != id) Cut(id, other);
    }
  }
  void Recover() {
    cut_.clear();
    filter_ = nullptr;
  }
  // Called for every message before delivery; returns false to drop it (may rewrite it).
  void SetFilter(std::function<bool(RaftMessage*)> filter) { filter_ = std::move(filter); }
  void ClearQueue() { queue_.clear(); }
  std::deque<RaftMessage>& queue() { return queue_; }
  std::vector<PeerId>& snapshots_needed() { return snapshots_needed_; }

 private:
  bool Passes(RaftMessage* m) {
    if (!node(m->to).up || cut_.count({m->from, m->to}) != 0) return false;
    return !filter_ || filter_(m);
  }

  RaftConfig config_;
  std::function<void(RaftOptions*)> tweak_;
  std::map<PeerId, std::unique_ptr<Node>> nodes_;
  std::deque<RaftMessage> queue_;
  std::set<std::pair<PeerId, PeerId>> cut_;
  std::function<bool(RaftMessage*)> filter_;
  std::vector<PeerId> snapshots_needed_;
};

RaftConfig Voters(std::vector<PeerId> voters, std::vector<PeerId> learners = {}) {
  return RaftConfig{std::move(voters), std::move(learners)};
}

std::vector<std::string> AppliedData(const Network::Node& n) {
  std::vector<std::string> out;
  for (const LogEntry& e : n.applied) {
    if (e.type == EntryType::kNormal) out.push_back(e.data);
  }
  return out;
}

// Writes a log and hard state into a node before it starts (pre-existing history).
void Preload(Network* net, const PeerId& id, std::vector<OpId> ops, uint64_t term) {
  std::vector<LogEntry> entries;
  for (const OpId& op : ops) entries.push_back(LogEntry{op.term, op.index, EntryType::kNormal});
  Network::Node& n = net->node(id);
  n.log.Append(entries);
  n.log.Sync();
  n.hard_state = HardState{term, "", 0};
  net->Start(id);
}

// ---------------------------------------------------------------------------------------------
// Elections (§5.2).

// A leader holds back commit-only appends: the next append carries the commit index, or
// PropagateCommit() sends it (RaftNode calls it after --raft_commit_propagation_delay_ms).
TEST(RaftCoreTest, TheCommitIndexRidesOnTheNextAppendOrPropagateCommit) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.core("a").PropagateCommit();  // The election's no-op entry, so that the followers start even.
  net.Process("a");
  net.Deliver();
  BASALT_ASSERT_OK(net.Propose("a", "x"));
  // Committed and applied by the leader; the followers hold the entry without knowing that.
  EXPECT_EQ(AppliedData(net.node("a")), (std::vector<std::string>{"x"}));
  EXPECT_TRUE(AppliedData(net.node("b")).empty());
  EXPECT_TRUE(net.core("a").HasUnsentCommit());
  EXPECT_TRUE(net.queue().empty()) << "a commit-only append went out";
  // The next append carries it.
  BASALT_ASSERT_OK(net.Propose("a", "y"));
  for (const char* f : {"b", "c"}) {
    EXPECT_EQ(AppliedData(net.node(f)), (std::vector<std::string>{"x"})) << f;
  }
  EXPECT_TRUE(net.core("a").HasUnsentCommit());  // y's own commit.
  // PropagateCommit sends it on its own.
  net.core("a").PropagateCommit();
  net.Process("a");
  net.Deliver();
  for (const char* f : {"b", "c"}) {
    EXPECT_EQ(AppliedData(net.node(f)), (std::vector<std::string>{"x", "y"})) << f;
  }
  EXPECT_FALSE(net.core("a").HasUnsentCommit());
  // A follower's core never holds one back.
  EXPECT_FALSE(net.core("b").HasUnsentCommit());
  // A leader stepping down sends the commit index it held back.
  BASALT_ASSERT_OK(net.Propose("a", "z"));
  ASSERT_TRUE(net.core("a").HasUnsentCommit());
  BASALT_ASSERT_OK(net.core("a").StepDown());
  net.Process("a");
  net.Deliver();
  for (const char* f : {"b", "c"}) {
    EXPECT_EQ(AppliedData(net.node(f)), (std::vector<std::string>{"x", "y", "z"})) << f;
  }
}

TEST(RaftCoreTest, LeaderElectedInThreeNodeGroup) {
  Network net(Voters({"a", "b", "c"}));
  EXPECT_EQ(net.Campaign("a"), Role::kLeader);
  EXPECT_EQ(net.core("a").term(), 1u);
  EXPECT_EQ(net.core("b").leader(), "a");
  EXPECT_EQ(net.core("c").leader(), "a");
  EXPECT_EQ(net.core("b").vote(), "a");
  EXPECT_EQ(net.core("b").term(), 1u);
}

TEST(RaftCoreTest, SingleVoterElectsItselfAndCommits) {
  Network net(Voters({"a"}));
  EXPECT_EQ(net.Campaign("a"), Role::kLeader);
  BASALT_ASSERT_OK(net.Propose("a", "x"));
  EXPECT_EQ(AppliedData(net.node("a")), std::vector<std::string>{"x"});
}

TEST(RaftCoreTest, ElectionTimeoutIsRandomizedBetweenTAnd2T) {
  std::set<int> seen;
  for (int seed = 0; seed < 50; ++seed) {
    MemoryLog log;
    Random rng(seed);
    RaftOptions options;
    options.id = "a";
    options.election_ticks = 10;
    RaftBootState boot;
    boot.config = Voters({"a", "b", "c"});
    auto core = RaftCore::Create(options, &log, boot, &rng);
    BASALT_ASSERT_OK(core);
    int ticks = 0;
    while ((*core)->role() == Role::kFollower) {
      (*core)->Tick();
      ++ticks;
    }
    EXPECT_GE(ticks, 10);
    EXPECT_LT(ticks, 20);
    seen.insert(ticks);
  }
  EXPECT_GT(seen.size(), 3u) << "timeouts are not randomized";
}

// In a fresh group of a, b and c with fast_first_election (timeouts of 10 ticks): only
// `campaigner` is armed; the others stay quiet for two ticks, `campaigner` asks for votes at its
// first and wins.
void ExpectOnlyFastCampaignerWins(Network* net, const std::string& campaigner) {
  for (const std::string id : {"a", "b", "c"}) {
    EXPECT_EQ(net->core(id).fast_first_election_armed(), id == campaigner) << id;
    if (id == campaigner) continue;
    net->Tick(id, 2);
    EXPECT_FALSE(net->SentVoteRequest(id)) << id;
  }
  net->Tick(campaigner);
  EXPECT_TRUE(net->SentVoteRequest(campaigner));
  net->Deliver();
  EXPECT_EQ(net->core(campaigner).role(), Role::kLeader);
}

// fast_first_election: in a fresh group only the smallest voter campaigns at its first tick (and
// wins); the others, and every member of a group with history, wait a full timeout.
TEST(RaftCoreTest, FastFirstElectionOnlyForTheSmallestVoterOfAFreshGroup) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) {
    o->election_ticks = 10;
    o->fast_first_election = true;
  });
  ExpectOnlyFastCampaignerWins(&net, "a");

  // After a restart (term 1, entries in the log) the usual timeout applies again.
  net.Restart("a");
  EXPECT_FALSE(net.core("a").fast_first_election_armed());
  net.Tick("a", 2);
  EXPECT_FALSE(net.SentVoteRequest("a"));
}

// The voter named by fast_first_election_peer campaigns early instead of the smallest one; a
// name that is not a voter falls back to the smallest voter.
TEST(RaftCoreTest, FastFirstElectionByTheNamedVoter) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) {
    o->election_ticks = 10;
    o->fast_first_election = true;
    o->fast_first_election_peer = "b";
  });
  ExpectOnlyFastCampaignerWins(&net, "b");

  Network other(Voters({"a", "b", "c"}), [](RaftOptions* o) {
    o->fast_first_election = true;
    o->fast_first_election_peer = "z";  // Not a member.
  });
  EXPECT_TRUE(other.core("a").fast_first_election_armed());
  EXPECT_FALSE(other.core("b").fast_first_election_armed());
}

TEST(RaftCoreTest, FailedElectionsBackOffExponentially) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) { o->election_ticks = 4; });
  net.Isolate("a");
  // Ticks between consecutive pre-vote campaigns of an isolated replica grow, capped at 2^3.
  std::vector<int> campaign_ticks;
  for (int tick = 1; tick <= 2000 && campaign_ticks.size() < 7; ++tick) {
    net.Tick("a");
    bool campaigned = false;
    for (const RaftMessage& m : net.queue()) campaigned |= m.type == MessageType::kPreVote;
    if (campaigned) campaign_ticks.push_back(tick);
    net.ClearQueue();
  }
  ASSERT_EQ(campaign_ticks.size(), 7u);
  EXPECT_EQ(net.core("a").term(), 0u);
  // Campaign k (from 0) times out after k failures: a gap in [4 << min(k, 3), 8 << min(k, 3)).
  for (size_t k = 1; k < campaign_ticks.size(); ++k) {
    const int gap = campaign_ticks[k] - campaign_ticks[k - 1];
    const int base = 4 << std::min<int>(k - 1, 3);
    EXPECT_GE(gap, base) << "gap " << k;
    EXPECT_LT(gap, 2 * base) << "gap " << k;
  }
}

TEST(RaftCoreTest, FollowerGrantsAtMostOneVotePerTerm) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) { o->pre_vote = false; });
  RaftMessage vote{MessageType::kVote, "a", "c", 1};
  net.core("c").Step(vote);
  net.Process("c");
  RaftMessage other{MessageType::kVote, "b", "c", 1};
  net.core("c").Step(other);
  net.Process("c");
  ASSERT_EQ(net.queue().size(), 2u);
  EXPECT_FALSE(net.queue()[0].reject);
  EXPECT_TRUE(net.queue()[1].reject);
  EXPECT_EQ(net.core("c").vote(), "a");
}

TEST(RaftCoreTest, VoteDeniedToCandidateWithLessUpToDateLog) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) { o->pre_vote = false; });
  Preload(&net, "b", {{1, 1}, {2, 2}}, 2);
  Preload(&net, "c", {{1, 1}, {1, 2}, {1, 3}}, 2);
  // a's log is empty, c's last term is lower than b's: both lose to b's log.
  RaftMessage from_a{MessageType::kVote, "a", "b", 3};
  net.core("b").Step(from_a);
  RaftMessage from_c{MessageType::kVote, "c", "b", 3, /*log_term=*/1, /*index=*/3};
  net.core("b").Step(from_c);
  net.Process("b");
  ASSERT_EQ(net.queue().size(), 2u);
  EXPECT_TRUE(net.queue()[0].reject);
  EXPECT_TRUE(net.queue()[1].reject);
  EXPECT_TRUE(net.core("b").vote().empty());
  // And b wins the election.
  net.ClearQueue();
  EXPECT_EQ(net.Campaign("b"), Role::kLeader);
}

TEST(RaftCoreTest, CandidateStepsDownOnHigherTerm) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) { o->pre_vote = false; });
  net.Isolate("a");
  ASSERT_EQ(net.Campaign("a"), Role::kCandidate);
  const uint64_t term = net.core("a").term();
  net.core("a").Step(RaftMessage{MessageType::kHeartbeat, "b", "a", term + 5});
  EXPECT_EQ(net.core("a").role(), Role::kFollower);
  EXPECT_EQ(net.core("a").term(), term + 5);
  EXPECT_EQ(net.core("a").leader(), "b");
}

TEST(RaftCoreTest, CandidateBecomesFollowerOnAppendFromLeaderOfSameTerm) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) { o->pre_vote = false; });
  net.Isolate("a");
  ASSERT_EQ(net.Campaign("a"), Role::kCandidate);
  const uint64_t term = net.core("a").term();
  net.core("a").Step(RaftMessage{MessageType::kAppend, "b", "a", term});
  EXPECT_EQ(net.core("a").role(), Role::kFollower);
  EXPECT_EQ(net.core("a").term(), term);
}

TEST(RaftCoreTest, LeaderStepsDownOnHigherTermResponse) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  RaftMessage resp{MessageType::kAppendResponse, "b", "a", 7};
  net.core("a").Step(resp);
  EXPECT_EQ(net.core("a").role(), Role::kFollower);
  EXPECT_EQ(net.core("a").term(), 7u);
}

TEST(RaftCoreTest, FollowerRejectsAppendWithStaleTerm) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Isolate("a");
  for (int i = 0; i < 20; ++i) {  // b and c elect a new leader at a higher term.
    net.Tick("b");
    net.Tick("c");
    net.Deliver();
  }
  net.Recover();
  const uint64_t term = net.core("c").term();
  ASSERT_GT(term, 1u);
  const uint64_t last = net.core("c").log().LastIndex();
  RaftMessage stale{MessageType::kAppend, "a", "c", 1, 1, last};
  stale.entries = {LogEntry{1, last + 1, EntryType::kNormal, 0, "stale"}};
  net.ClearQueue();
  net.core("c").Step(stale);
  net.Process("c");
  EXPECT_EQ(net.core("c").log().LastIndex(), last);
  ASSERT_EQ(net.queue().size(), 1u);
  EXPECT_EQ(net.queue()[0].type, MessageType::kAppendResponse);
  EXPECT_TRUE(net.queue()[0].reject);
  EXPECT_EQ(net.queue()[0].term, term);
}

// ---------------------------------------------------------------------------------------------
// Pre-vote and check-quorum (thesis §9.6, §6.2).

TEST(RaftCoreTest, PreVoteDoesNotIncrementTerm) {
  Network net(Voters({"a", "b", "c"}));
  net.Isolate("a");
  net.Tick("a", 100);
  EXPECT_EQ(net.core("a").term(), 0u);
  EXPECT_NE(net.core("a").role(), Role::kLeader);
  EXPECT_TRUE(net.node("a").hard_state.vote.empty());
}

TEST(RaftCoreTest, PartitionedNodeCannotDisruptLeaderWithPreVote) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Isolate("c");
  for (int i = 0; i < 50; ++i) {
    net.Tick("c");
    net.TickAll();  // a keeps heartbeating b.
  }
  net.Recover();
  net.TickAll(10);
  EXPECT_EQ(net.core("a").role(), Role::kLeader);
  EXPECT_EQ(net.core("a").term(), 1u);
  EXPECT_EQ(net.core("c").leader(), "a");
  EXPECT_EQ(net.core("c").term(), 1u);
}

TEST(RaftCoreTest, WithoutPreVotePartitionedNodeDisruptsLeader) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) {
    o->pre_vote = false;
    o->check_quorum = false;
  });
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Isolate("c");
  net.Tick("c", 50);
  ASSERT_GT(net.core("c").term(), 1u);
  net.ClearQueue();
  net.Recover();
  net.TickAll(3);
  // c's higher term reached a through a response and deposed it: the contrast to the test above.
  EXPECT_GT(net.core("a").term(), 1u);
}

TEST(RaftCoreTest, CheckQuorumLeaderStepsDown) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Isolate("a");
  for (int i = 0; i < 2 * 3 && net.core("a").role() == Role::kLeader; ++i) net.Tick("a");
  EXPECT_EQ(net.core("a").role(), Role::kFollower);
  EXPECT_EQ(net.core("a").term(), 1u);
  EXPECT_FALSE(net.core("a").Propose("x").ok());
}

TEST(RaftCoreTest, FollowerWithLiveLeaderIgnoresVoteRequests) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.ClearQueue();
  net.core("b").Step(RaftMessage{MessageType::kVote, "c", "b", 5, 1, 100});
  net.Process("b");
  EXPECT_EQ(net.core("b").term(), 1u);
  EXPECT_TRUE(net.queue().empty());
}

// ---------------------------------------------------------------------------------------------
// Log replication (§5.3) and safety (§5.4).

TEST(RaftCoreTest, LeaderAppendsNoOpOnElection) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  ASSERT_EQ(net.node("b").log.LastIndex(), 1u);
  EXPECT_EQ(net.node("b").log.entries()[0].type, EntryType::kNoOp);
  EXPECT_EQ(net.core("a").log().committed(), 1u);
}

TEST(RaftCoreTest, CommittedEntriesAreAppliedEverywhereInOrder) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  for (int i = 0; i < 5; ++i) BASALT_ASSERT_OK(net.Propose("a", std::to_string(i)));
  net.TickAll(2);  // Heartbeats carry the final commit index to followers.
  const std::vector<std::string> want = {"0", "1", "2", "3", "4"};
  for (const char* id : {"a", "b", "c"}) EXPECT_EQ(AppliedData(net.node(id)), want) << id;
}

TEST(RaftCoreTest, EntryCommitsOnceReplicatedOnMajority) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Cut("a", "c");
  BASALT_ASSERT_OK(net.Propose("a", "x"));
  EXPECT_EQ(net.core("a").log().committed(), 2u);
  net.Cut("a", "b");
  BASALT_ASSERT_OK(net.Propose("a", "y"));
  EXPECT_EQ(net.core("a").log().committed(), 2u);  // Only the leader has it.
}

TEST(RaftCoreTest, LeaderOnlyCommitsCurrentTermEntriesByCounting) {
  // Figure 8: an entry of an earlier term on a majority is not committed by counting.
  Network net(Voters({"a", "b", "c"}));
  Preload(&net, "a", {{1, 1}, {2, 2}}, 2);
  Preload(&net, "b", {{1, 1}, {2, 2}}, 2);
  Preload(&net, "c", {{1, 1}}, 2);
  // b acknowledges index 2 but never receives a's no-op at index 3.
  net.SetFilter([](RaftMessage* m) {
    if (m->type == MessageType::kAppend && m->to == "b" && !m->entries.empty()) {
      m->entries.clear();
      if (m->index > 2) m->index = 2, m->log_term = 2;
    }
    return m->to != "c" || m->type != MessageType::kAppend;
  });
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  EXPECT_EQ(net.core("a").progress("b")->match(), 2u);
  EXPECT_EQ(net.core("a").log().committed(), 0u) << "committed an old-term entry by counting";
  net.Recover();
  net.TickAll(2);
  EXPECT_EQ(net.core("a").log().committed(), 3u);  // The no-op commits, and 1-2 with it.
}

TEST(RaftCoreTest, FollowerTruncatesConflictingSuffix) {
  Network net(Voters({"a", "b", "c"}));
  Preload(&net, "a", {{1, 1}, {3, 2}}, 3);
  Preload(&net, "b", {{1, 1}, {3, 2}}, 3);
  Preload(&net, "c", {{1, 1}, {2, 2}, {2, 3}, {2, 4}}, 2);
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.TickAll(2);
  const auto& entries = net.node("c").log.entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[1].id(), (OpId{3, 2}));
  EXPECT_EQ(entries[2].id(), (OpId{4, 3}));
  EXPECT_EQ(net.node("a").log.entries().size(), 3u);
}

TEST(RaftCoreTest, FastBackoffSkipsAConflictingTermPerRoundTrip) {
  Network net(Voters({"a", "b", "c"}));
  std::vector<OpId> leader_log{{1, 1}}, stale_log{{1, 1}};
  for (uint64_t i = 2; i <= 40; ++i) {
    leader_log.push_back({4, i});
    stale_log.push_back({i <= 20 ? 2u : 3u, i});
  }
  Preload(&net, "a", leader_log, 4);
  Preload(&net, "b", leader_log, 4);
  Preload(&net, "c", stale_log, 3);
  int rejections = 0;
  net.SetFilter([&](RaftMessage* m) {
    if (m->type == MessageType::kAppendResponse && m->from == "c" && m->reject) ++rejections;
    return true;
  });
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.TickAll(3);
  EXPECT_EQ(net.node("c").log.LastIndex(), 41u);
  EXPECT_EQ(net.node("c").log.entries()[40].term, 5u);
  EXPECT_LE(rejections, 3) << "back-off went entry by entry";
}

TEST(RaftCoreTest, ProposalsAreBatchedIntoOneAppendPerFollower) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  for (int i = 0; i < 10; ++i) BASALT_ASSERT_OK(net.core("a").Propose("e" + std::to_string(i)));
  net.Process("a");
  ASSERT_EQ(net.queue().size(), 2u);
  EXPECT_EQ(net.queue()[0].entries.size(), 10u);
  EXPECT_EQ(net.queue()[1].entries.size(), 10u);
}

TEST(RaftCoreTest, AppendsRespectMaxBytesAndPipelineWithinWindow) {
  Network net(Voters({"a", "b"}), [](RaftOptions* o) {
    o->max_append_bytes = 200;  // Two 50-byte entries (plus header allowance) per message.
    o->max_inflight_appends = 3;
  });
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  ASSERT_EQ(net.core("a").progress("b")->state(), Progress::State::kReplicate);
  for (int i = 0; i < 20; ++i) BASALT_ASSERT_OK(net.core("a").Propose(std::string(50, 'x')));
  net.Process("a");
  // Pipelined without waiting for acknowledgements, up to the in-flight window.
  ASSERT_EQ(net.queue().size(), 3u);
  for (const RaftMessage& m : net.queue()) EXPECT_EQ(m.entries.size(), 2u);
  net.Deliver();
  EXPECT_EQ(net.core("a").log().committed(), 21u);
  EXPECT_EQ(net.node("b").log.LastIndex(), 21u);
}

TEST(RaftCoreTest, LostAppendsAreResentAfterHeartbeat) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  BASALT_ASSERT_OK(net.core("a").Propose("x"));
  net.Process("a");
  net.ClearQueue();  // Lose both appends.
  net.TickAll(4);
  EXPECT_EQ(net.core("a").log().committed(), 2u);
  EXPECT_EQ(net.node("c").log.LastIndex(), 2u);
}

TEST(RaftCoreTest, ProposeOnFollowerReturnsUnavailableWithLeaderHint) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  auto s = net.core("b").Propose("x");
  ASSERT_TRUE(absl::IsUnavailable(s.status()));
  auto hint = s.status().GetPayload(RaftCore::kLeaderHintUrl);
  ASSERT_TRUE(hint.has_value());
  EXPECT_EQ(std::string(*hint), "a");
}

TEST(RaftCoreTest, RestartKeepsTermVoteLogAndReappliesCommitted) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  BASALT_ASSERT_OK(net.Propose("a", "x"));
  net.TickAll(2);
  net.Restart("b");
  EXPECT_EQ(net.core("b").term(), 1u);
  EXPECT_EQ(net.core("b").vote(), "a");
  EXPECT_EQ(net.core("b").log().LastIndex(), 2u);
  EXPECT_EQ(AppliedData(net.node("b")), std::vector<std::string>{"x"});
}

TEST(RaftCoreTest, FollowerBehindCompactedLogNeedsSnapshot) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Isolate("c");
  for (int i = 0; i < 5; ++i) BASALT_ASSERT_OK(net.Propose("a", "x"));
  net.node("a").log.Compact(4);
  net.node("a").log.Sync();
  net.Recover();
  net.TickAll(2);
  ASSERT_EQ(net.snapshots_needed(), std::vector<PeerId>{"c"});
  EXPECT_EQ(net.core("a").progress("c")->state(), Progress::State::kSnapshot);
  // A tablet copy brings c to index 4; replication resumes after it.
  net.node("c").log.ResetToSnapshot(OpId{1, 4});
  net.node("c").log.Sync();
  net.node("c").hard_state.commit = 4;
  net.Restart("c");  // Restarts with applied = 4: the copy holds the state up to there.
  net.core("a").ReportSnapshotDone("c", 4);
  net.Process("a");
  net.Deliver();
  net.TickAll(2);
  EXPECT_EQ(net.node("c").log.LastIndex(), 6u);
  EXPECT_EQ(net.core("a").progress("c")->match(), 6u);
}

// ---------------------------------------------------------------------------------------------
// Leadership transfer and step-down (thesis §3.10).

TEST(RaftCoreTest, LeadershipTransfer) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  BASALT_ASSERT_OK(net.core("a").TransferLeadership("c"));
  net.Process("a");
  net.Deliver();
  EXPECT_EQ(net.core("c").role(), Role::kLeader);
  EXPECT_EQ(net.core("c").term(), 2u);
  EXPECT_EQ(net.core("a").leader(), "c");
}

TEST(RaftCoreTest, LeadershipTransferCatchesUpLaggingTargetFirst) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Cut("a", "c");
  BASALT_ASSERT_OK(net.Propose("a", "x"));
  BASALT_ASSERT_OK(net.core("a").TransferLeadership("c"));
  EXPECT_TRUE(absl::IsUnavailable(net.core("a").Propose("refused").status()));
  net.Recover();
  net.TickAll(1);
  EXPECT_EQ(net.core("c").role(), Role::kLeader);
  EXPECT_EQ(AppliedData(net.node("c")).front(), "x");
}

TEST(RaftCoreTest, LeaderStepDown) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  BASALT_ASSERT_OK(net.core("a").StepDown());
  EXPECT_EQ(net.core("a").role(), Role::kFollower);
  EXPECT_TRUE(absl::IsUnavailable(net.core("b").StepDown()));
  net.TickAll(30);
  int leaders = 0;
  for (const char* id : {"a", "b", "c"}) leaders += net.core(id).role() == Role::kLeader;
  EXPECT_EQ(leaders, 1);
  EXPECT_GT(net.core("b").term(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Membership changes (thesis §4).

TEST(RaftCoreTest, LearnerDoesNotVoteOrCampaign) {
  Network net(Voters({"a", "b"}, {"l"}));
  net.Tick("l", 100);
  EXPECT_EQ(net.core("l").role(), Role::kFollower);
  net.Cut("a", "b");
  // a needs b: the learner's grant does not count.
  ASSERT_NE(net.Campaign("a"), Role::kLeader);
  net.Recover();
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  BASALT_ASSERT_OK(net.Propose("a", "x"));
  EXPECT_EQ(net.node("l").log.LastIndex(), 2u);  // Learners receive the log.
}

TEST(RaftCoreTest, AddLearnerThenPromoteOnceCaughtUp) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) { o->learner_catch_up_entries = 2; },
              {"d"});
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Isolate("d");
  for (int i = 0; i < 5; ++i) BASALT_ASSERT_OK(net.Propose("a", "x"));
  auto add = net.core("a").ProposeConfigChange({ConfigChange::Type::kAddLearner, "d"});
  BASALT_ASSERT_OK(add);
  EXPECT_TRUE(IsLearner(net.core("a").config(), "d"));  // Effective on append.
  net.Process("a");
  net.Deliver();
  auto early = net.core("a").ProposeConfigChange({ConfigChange::Type::kPromoteLearner, "d"});
  EXPECT_TRUE(absl::IsFailedPrecondition(early.status())) << early.status();
  net.Recover();
  net.TickAll(3);
  auto promote = net.core("a").ProposeConfigChange({ConfigChange::Type::kPromoteLearner, "d"});
  BASALT_ASSERT_OK(promote);
  net.Process("a");
  net.Deliver();
  net.TickAll(2);
  EXPECT_TRUE(IsVoter(net.core("d").config(), "d"));
  EXPECT_EQ(net.core("a").config().voters.size(), 4u);
}

TEST(RaftCoreTest, AutoPromoteLearner) {
  Network net(Voters({"a", "b", "c"}), [](RaftOptions* o) { o->auto_promote_learners = true; },
              {"d"});
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  BASALT_ASSERT_OK(net.core("a").ProposeConfigChange({ConfigChange::Type::kAddLearner, "d"}));
  net.Process("a");
  net.Deliver();
  net.TickAll(3);
  EXPECT_TRUE(IsVoter(net.core("a").config(), "d"));
}

TEST(RaftCoreTest, OnlyOneConfigChangePendingAtATime) {
  Network net(Voters({"a", "b", "c"}), nullptr, {"d", "e"});
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Cut("a", "b");
  net.Cut("a", "c");
  BASALT_ASSERT_OK(net.core("a").ProposeConfigChange({ConfigChange::Type::kAddLearner, "d"}));
  auto second = net.core("a").ProposeConfigChange({ConfigChange::Type::kAddLearner, "e"});
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  net.Recover();
  net.Process("a");
  net.TickAll(2);
  BASALT_EXPECT_OK(net.core("a").ProposeConfigChange({ConfigChange::Type::kAddLearner, "e"}));
}

TEST(RaftCoreTest, RemovedVoterNoLongerCountsTowardQuorum) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  EXPECT_TRUE(absl::IsFailedPrecondition(
      net.core("a").ProposeConfigChange({ConfigChange::Type::kRemovePeer, "a"}).status()));
  BASALT_ASSERT_OK(net.core("a").ProposeConfigChange({ConfigChange::Type::kRemovePeer, "c"}));
  net.Process("a");
  net.Deliver();
  net.TickAll(2);
  EXPECT_EQ(net.core("b").config(), Voters({"a", "b"}));
  net.node("c").up = false;
  BASALT_ASSERT_OK(net.Propose("a", "y"));
  EXPECT_EQ(net.core("a").log().committed(), net.core("a").log().LastIndex());
  // The removed replica, still running and campaigning, cannot disrupt the group.
  net.node("c").up = true;
  net.TickAll(30);
  EXPECT_EQ(net.core("a").role(), Role::kLeader);
}

TEST(RaftCoreTest, DemotedVoterStopsCountingAndCampaigning) {
  Network net(Voters({"a", "b", "c"}));
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  BASALT_ASSERT_OK(net.core("a").ProposeConfigChange({ConfigChange::Type::kDemoteVoter, "c"}));
  net.Process("a");
  net.Deliver();
  net.TickAll(2);
  for (const char* id : {"a", "b", "c"}) {
    EXPECT_EQ(net.core(id).config(), Voters({"a", "b"}, {"c"})) << id;
  }
  // c still receives the log, but its acknowledgement no longer makes a majority with a's.
  net.Cut("a", "b");
  auto index = net.Propose("a", "x");
  BASALT_ASSERT_OK(index);
  EXPECT_EQ(net.node("c").log.LastIndex(), *index);
  EXPECT_LT(net.core("a").log().committed(), *index);
  net.Recover();
  net.TickAll(2);
  EXPECT_EQ(net.core("a").log().committed(), *index);
  // Without a leader, the learner c never campaigns; b, still a voter, does.
  net.node("a").up = false;
  net.ClearQueue();
  for (int i = 0; i < 100; ++i) {
    net.Tick("c");
    for (const RaftMessage& m : net.queue()) {
      ASSERT_NE(m.type, MessageType::kPreVote) << "demoted c campaigned";
      ASSERT_NE(m.type, MessageType::kVote) << "demoted c campaigned";
    }
  }
  EXPECT_EQ(net.core("c").role(), Role::kFollower);
  EXPECT_EQ(net.core("c").term(), 1u);
  net.ClearQueue();
  net.Tick("b", 20);
  EXPECT_TRUE(net.SentVoteRequest("b"));
}

TEST(RaftCoreTest, LeaderCannotDemoteItselfOrTheLastVoter) {
  Network net(Voters({"a", "b"}), nullptr, {"l"});
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  auto self = net.core("a").ProposeConfigChange({ConfigChange::Type::kDemoteVoter, "a"});
  EXPECT_TRUE(absl::IsFailedPrecondition(self.status())) << self.status();
  auto learner = net.core("a").ProposeConfigChange({ConfigChange::Type::kDemoteVoter, "l"});
  EXPECT_TRUE(absl::IsFailedPrecondition(learner.status())) << learner.status();
  EXPECT_EQ(net.core("a").config(), Voters({"a", "b"}));
  // The way to demote the leader: transfer leadership first, then the new leader demotes it.
  BASALT_ASSERT_OK(net.core("a").TransferLeadership("b"));
  net.Process("a");
  net.Deliver();
  ASSERT_EQ(net.core("b").role(), Role::kLeader);
  net.TickAll(2);  // b commits an entry of its term before it may change the configuration.
  auto demote = net.core("b").ProposeConfigChange({ConfigChange::Type::kDemoteVoter, "a"});
  BASALT_ASSERT_OK(demote);
  net.Process("b");
  net.Deliver();
  net.TickAll(2);
  EXPECT_EQ(net.core("a").config(), Voters({"b"}, {"a"}));
  // b is now the last voter (and the leader): demoting it is refused either way.
  auto last = net.core("b").ProposeConfigChange({ConfigChange::Type::kDemoteVoter, "b"});
  EXPECT_TRUE(absl::IsFailedPrecondition(last.status())) << last.status();
  BASALT_ASSERT_OK(net.Propose("b", "y"));  // A single voter commits alone.
  EXPECT_EQ(net.core("b").log().committed(), net.core("b").log().LastIndex());
}

TEST(RaftCoreTest, UncommittedConfigRevertsWhenTruncated) {
  Network net(Voters({"a", "b", "c"}), nullptr, {"d"});
  ASSERT_EQ(net.Campaign("a"), Role::kLeader);
  net.Cut("a", "c");
  BASALT_ASSERT_OK(net.Propose("a", "committed"));
  // The change reaches nobody; b and c elect a new leader that overwrites it on a.
  net.SetFilter([](RaftMessage* m) { return m->to != "c"; });
  net.Cut("a", "b");
  BASALT_ASSERT_OK(net.core("a").ProposeConfigChange({ConfigChange::Type::kAddLearner, "d"}));
  net.Process("a");
  net.ClearQueue();
  EXPECT_TRUE(IsLearner(net.core("a").config(), "d"));
  net.Recover();
  net.Isolate("a");
  // c needs b's vote and b's log is as up to date as c's after catching up: run an election.
  net.Tick("b", 20);
  net.Tick("c", 20);
  net.Deliver();
  net.TickAll(5);
  net.Recover();
  net.TickAll(10);
  const PeerId leader = net.core("b").leader();
  ASSERT_FALSE(leader.empty());
  ASSERT_NE(leader, "a");
  BASALT_ASSERT_OK(net.Propose(leader, "new"));
  net.TickAll(2);
  EXPECT_FALSE(IsLearner(net.core("a").config(), "d")) << net.core("a").DebugString();
}

}  // namespace raft_core_test_file
}  // namespace
}  // namespace basalt
