#include "consensus/raft_node.h"

#include <stdlib.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "consensus/in_memory_transport.h"

DECLARE_bool(raft_rounds_on_callers);

namespace basalt {
namespace {
namespace raft_node_test_file {

constexpr absl::Duration kDeadline = absl::Seconds(30);

// Bounded wait on a condition: polls `pred` until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout = kDeadline) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!pred()) {
    if (absl::Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// A replicated key-value map: entries "key=value". Records every normal entry it applies, in order,
// and checks that indexes arrive consecutively. `durable` makes DurableIndex() follow the applied
// index (as if every apply were flushed), which lets the log be garbage-collected.
class KvStateMachine : public StateMachine {
 public:
  explicit KvStateMachine(bool durable = false) : durable_(durable) {}

  absl::Status Apply(const LogEntry& e) override {
    // An entry "sleep=<ms>" takes that long to apply (a flush before a schema change).
    if (e.type == EntryType::kNormal && e.data.rfind("sleep=", 0) == 0) {
      absl::SleepFor(absl::Milliseconds(std::stoi(e.data.substr(6))));
    }
    absl::MutexLock l(&mu_);
    if (e.index != last_index_ + 1) {
      error_ = StrCat("applied index ", e.index, " after ", last_index_);
    }
    // An entry "fail=<why>" is one this replica cannot apply (as after an I/O error).
    if (e.type == EntryType::kNormal && fail_on_ && e.data.rfind("fail=", 0) == 0) {
      return absl::DataLossError(e.data.substr(5));
    }

    last_index_ = e.index;
    if (e.type != EntryType::kNormal) return absl::OkStatus();
    applied_.push_back(e.data);
    const size_t eq = e.data.find('=');
    kv_[e.data.substr(0, eq)] = e.data.substr(eq + 1);
    return absl::OkStatus();
  }
  // Whether "fail=" entries fail here (a replica with a bad disk) or apply like others.
  void set_fail_on(bool fail) {
    absl::MutexLock l(&mu_);
    fail_on_ = fail;
  }
  uint64_t DurableIndex() const override {
    absl::MutexLock l(&mu_);
    return durable_ ? last_index_ : 0;
  }

  std::vector<std::string> applied() const {
    absl::MutexLock l(&mu_);
    return applied_;
  }
  size_t num_applied() const {
    absl::MutexLock l(&mu_);
    return applied_.size();
  }
  std::optional<std::string> Get(const std::string& key) const {
    absl::MutexLock l(&mu_);
    auto it = kv_.find(key);
    if (it == kv_.end()) return std::nullopt;
    return it->second;
  }
  std::string error() const {
    absl::MutexLock l(&mu_);
    return error_;
  }

 private:
  const bool durable_;
  mutable absl::Mutex mu_;
  uint64_t last_index_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> applied_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> kv_ ABSL_GUARDED_BY(mu_);
  std::string error_ ABSL_GUARDED_BY(mu_);
  bool fail_on_ ABSL_GUARDED_BY(mu_) = false;
};

std::string Kv(int i) { return StrCat("k", i, "=v", i); }
std::string Key(int i) { return StrCat("k", i); }

// Safe time hooks for every node: a shared counter stands for the clock. Proposals made through
// Propose() take the counter's lock (as a tablet's propose lock), so a sample T covers exactly the
// proposals numbered <= T. Records what each follower received and each proposal's index.
struct SafeTimeRecorder {
  struct Received {
    uint64_t term, time, index;
  };
  absl::Mutex mu;
  uint64_t clock ABSL_GUARDED_BY(mu) = 0;
  std::map<PeerId, int> samples ABSL_GUARDED_BY(mu);
  std::map<PeerId, std::vector<Received>> received ABSL_GUARDED_BY(mu);
  std::map<uint64_t, uint64_t> index_of ABSL_GUARDED_BY(mu);  // Proposal number -> log index.
  int outstanding ABSL_GUARDED_BY(mu) = 0;

  void Install(const PeerId& id, RaftNodeOptions* o) {
    o->safe_time_source = [this, id]() -> std::optional<uint64_t> {
      absl::MutexLock l(&mu);
      ++samples[id];
      return ++clock;
    };
    o->safe_time_sink = [this, id](uint64_t term, uint64_t time, uint64_t index) {
      absl::MutexLock l(&mu);
      received[id].push_back({term, time, index});
    };
  }
  // Proposes entry number ++clock on `leader`, recording its index once applied.
  void Propose(RaftNode* leader) {
    absl::MutexLock l(&mu);
    const uint64_t n = ++clock;
    ++outstanding;
    leader->Propose(Kv(static_cast<int>(n)), [this, n](absl::StatusOr<uint64_t> index) {
      absl::MutexLock l(&mu);
      --outstanding;
      if (index.ok()) index_of[n] = *index;
    });
  }
  std::vector<Received> Of(const PeerId& id) {
    absl::MutexLock l(&mu);
    return received[id];
  }
};

// Three RaftNodes of one group over an InMemoryTransport, each with its own state machine.
class RaftNodeTest : public ::testing::Test {
 protected:
  RaftNodeTest() : seed_(SeedFromEnvOrTime()), rng_(seed_), transport_(seed_) {}
  ~RaftNodeTest() override {
    for (auto& [id, node] : nodes_) node->Shutdown();
  }

  void UseEnv(Env* env, std::string root) {
    env_ = env;
    root_ = std::move(root);
  }

  RaftNodeOptions Options(const PeerId& id) {
    RaftNodeOptions o;
    o.group_id = "tablet-1";
    o.peer_id = id;
    o.wal_dir = JoinPath(JoinPath(root_, id), "wal");
    o.metadata_path = JoinPath(JoinPath(root_, id), "cmeta");
    o.initial_config.voters = ids_;
    o.tick_interval_ms = 10;
    o.raft.election_ticks = 10;  // 100-200 ms: tolerant of a busy test machine.
    o.log.segment_size_bytes = segment_size_bytes_;
    o.log.force_fsync = env_ != &mem_env_;
    o.log_gc_interval_ticks = 2;
    o.seed = rng_.Next64() | 1;
    if (customize_) customize_(id, &o);
    return o;
  }

  // Starts (or restarts from its files) node `id` with a fresh state machine.
  void StartNode(const PeerId& id) {
    BASALT_ASSERT_OK(env_->CreateDirs(JoinPath(root_, id)));
    sms_[id] = std::make_unique<KvStateMachine>(durable_state_machines_);
    Env* env = env_of_.contains(id) ? env_of_.at(id) : env_;
    absl::StatusOr<std::unique_ptr<RaftNode>> node =
        RaftNode::Open(env, Options(id), &transport_, sms_[id].get());
    BASALT_ASSERT_OK(node);
    BASALT_ASSERT_OK((*node)->Start());
    nodes_[id] = std::move(*node);
  }
  void StartAll() {
    for (const PeerId& id : ids_) StartNode(id);
  }
  // Starts every node on its own FaultInjectionEnv (fault_envs_) with its WAL synced, and
  // writes entries 0-9.
  void StartOnFaultEnvsAndWrite10() {
    for (const PeerId& id : ids_) {
      fault_envs_[id] = std::make_unique<FaultInjectionEnv>(&mem_env_);
      env_of_[id] = fault_envs_[id].get();
    }
    customize_ = [](const PeerId&, RaftNodeOptions* o) { o->log.force_fsync = true; };
    StartAll();
    ASSERT_TRUE(WriteAll(0, 10));
  }
  // Simulates a kill: the node stops and is dropped; its files stay.
  void StopNode(const PeerId& id) {
    nodes_.at(id)->Shutdown();
    nodes_.erase(id);
  }

  // Waits until exactly one live node leads, the others know it, and returns it.
  RaftNode* WaitForLeader(uint64_t min_term = 0) {
    RaftNode* leader = nullptr;
    const bool found = WaitFor([&] {
      leader = nullptr;
      for (auto& [id, node] : nodes_) {
        if (node->role() == RaftCore::Role::kLeader && node->term() >= min_term) {
          if (leader != nullptr) return false;
          leader = node.get();
        }
      }
      if (leader == nullptr) return false;
      for (auto& [id, node] : nodes_) {
        if (node->leader_id() != leader->peer_id()) return false;
      }
      return true;
    });
    return found ? leader : nullptr;
  }

  // Writes Kv(i) for i in [lo, hi) through whoever leads, many in flight, re-proposing those that
  // failed or are still pending after a round's timeout (a proposal to a deposed leader stays
  // pending until that replica hears from the new leader). Returns true once every one was
  // acknowledged as applied. A re-proposed write may be applied twice, which the checks tolerate.
  bool WriteAll(int lo, int hi) {
    std::set<int> todo;
    for (int i = lo; i < hi; ++i) todo.insert(i);
    const absl::Time deadline = absl::Now() + kDeadline;
    while (!todo.empty() && absl::Now() < deadline) {
      RaftNode* leader = WaitForLeader();
      if (leader == nullptr) return false;
      // Shared with the callbacks, which may outlive a round that timed out.
      struct Round {
        absl::Mutex mu;
        size_t outstanding = 0;
        std::set<int> succeeded;
      };
      auto round = std::make_shared<Round>();
      round->outstanding = todo.size();
      for (int i : todo) {
        leader->Propose(Kv(i), [round, i](absl::StatusOr<uint64_t> index) {
          absl::MutexLock l(&round->mu);
          if (index.ok()) round->succeeded.insert(i);
          --round->outstanding;
        });
      }
      absl::MutexLock l(&round->mu);
      round->mu.AwaitWithDeadline(absl::Condition(
                                      +[](size_t* n) { return *n == 0; }, &round->outstanding),
                                  std::min(deadline, absl::Now() + absl::Seconds(3)));
      for (int i : round->succeeded) todo.erase(i);
    }
    return todo.empty();
  }

  // Waits until every live node applied at least `count` normal entries, then checks that they
  // all applied the same sequence and hold keys [0, keys).
  void ExpectConverged(size_t count, int keys) {
    for (auto& [id, owned] : sms_) {
      if (nodes_.count(id) == 0) continue;
      KvStateMachine* sm = owned.get();  // Lambdas cannot capture bindings (clang 14).
      ASSERT_TRUE(WaitFor([&] { return sm->num_applied() >= count; }))
          << id << " applied " << sm->num_applied() << " of " << count;
    }
    // Let everyone reach the same applied length (a retried write may add an entry late).
    size_t longest = 0;
    for (auto& [id, sm] : sms_) {
      if (nodes_.count(id) != 0) longest = std::max(longest, sm->num_applied());
    }
    std::vector<std::string> reference;
    for (auto& [id, owned] : sms_) {
      if (nodes_.count(id) == 0) continue;
      KvStateMachine* sm = owned.get();
      ASSERT_TRUE(WaitFor([&] { return sm->num_applied() >= longest; }));
      EXPECT_EQ(sm->error(), "") << id;
      std::vector<std::string> applied = sm->applied();
      applied.resize(longest);
      if (reference.empty()) {
        reference = applied;
      } else {
        EXPECT_TRUE(applied == reference) << id << " applied a different sequence";
      }
      for (int i = 0; i < keys; ++i) {
        ASSERT_EQ(sm->Get(Key(i)), StrCat("v", i)) << id << " lost key " << i;
      }
    }
  }

  const uint64_t seed_;
  Random rng_;
  MemoryEnv mem_env_;
  Env* env_ = &mem_env_;
  std::string root_ = "/raft";
  InMemoryTransport transport_;
  std::vector<PeerId> ids_ = {"a", "b", "c"};
  uint64_t segment_size_bytes_ = 1 << 20;
  bool durable_state_machines_ = false;
  std::map<PeerId, std::unique_ptr<KvStateMachine>> sms_;
  // A node's own Env instead of env_ (over the same files), for faults of one node; the node
  // must not outlive it (nodes_ is declared after, so it is destroyed first).
  std::map<PeerId, Env*> env_of_;
  std::map<PeerId, std::unique_ptr<FaultInjectionEnv>> fault_envs_;
  // Adjusts the options of node `id` before it opens (e.g. safe time hooks).
  std::function<void(const PeerId& id, RaftNodeOptions* options)> customize_;
  // Safe time hooks' recorder for the tests that install them (customize_). A member, not a
  // test-body local: the nodes' threads call the hooks until the destructor shuts them down.
  SafeTimeRecorder safe_time_recorder_;
  std::map<PeerId, std::unique_ptr<RaftNode>> nodes_;
};

TEST_F(RaftNodeTest, ElectsLeaderAndReplicatesInOrder) {
  StartAll();
  ASSERT_NE(WaitForLeader(), nullptr);
  ASSERT_TRUE(WriteAll(0, 10000));
  ExpectConverged(10000, 10000);
  for (auto& [id, node] : nodes_) BASALT_EXPECT_OK(node->health()) << id;
}

// A fresh group's smallest voter (fast_first_election) campaigns fast_first_election_delay_ms
// after Start, not a full tick later: with 2 s ticks and 6-12 s election timeouts, "a" leads
// well before the first regular tick could have started any election.
TEST_F(RaftNodeTest, AFreshGroupElectsItsSmallestVoterBeforeTheFirstFullTick) {
  customize_ = [](const PeerId&, RaftNodeOptions* o) {
    o->tick_interval_ms = 2000;
    o->raft.election_ticks = 3;
    o->raft.fast_first_election = true;
    o->fast_first_election_delay_ms = 50;
  };
  const absl::Time start = absl::Now();
  StartAll();
  RaftNode* leader = WaitForLeader();
  const absl::Duration took = absl::Now() - start;
  ASSERT_NE(leader, nullptr);
  EXPECT_EQ(leader->peer_id(), "a");
  EXPECT_EQ(leader->term(), 1u);
  EXPECT_LT(took, absl::Milliseconds(1900)) << "no leader before the first full tick";
}

// The contract of StateMachine::Apply: an error means this replica could not apply the entry as
// its peers did. The node stops for good (no votes, no leading, on_failed once), its proposals
// fail, and the other two elect a leader and go on.
TEST_F(RaftNodeTest, ApplyFailureStopsTheReplicaAndTheOthersGoOn) {
  absl::Mutex failed_mu;
  std::map<PeerId, std::vector<std::string>> failures;
  customize_ = [&](const PeerId& id, RaftNodeOptions* o) {
    o->on_failed = [&, id](const absl::Status& s) {
      absl::MutexLock l(&failed_mu);
      failures[id].push_back(std::string(s.message()));
    };
  };
  StartAll();
  ASSERT_TRUE(WriteAll(0, 10));
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  const PeerId bad = leader->peer_id();
  const uint64_t bad_term = leader->term();
  sms_.at(bad)->set_fail_on(true);
  absl::StatusOr<uint64_t> r = leader->ProposeAndWait("fail=disk gone", kDeadline);
  ASSERT_FALSE(r.ok()) << "the failed replica acknowledged the entry";
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_TRUE(absl::IsDataLoss(leader->health())) << leader->health();
  EXPECT_EQ(leader->role(), RaftCore::Role::kFollower);
  EXPECT_EQ(leader->leader_id(), "");
  {
    absl::MutexLock l(&failed_mu);
    ASSERT_EQ(failures[bad].size(), 1u);
    EXPECT_NE(failures[bad][0].find("disk gone"), std::string::npos) << failures[bad][0];
  }
  // The others elect one of themselves (a majority without the failed one) in a newer term.
  RaftNode* next = nullptr;
  ASSERT_TRUE(WaitFor([&] {
    for (auto& [id, node] : nodes_) {
      if (id != bad && node->role() == RaftCore::Role::kLeader && node->term() > bad_term) {
        next = node.get();
        return true;
      }
    }
    return false;
  }));
  EXPECT_EQ(leader->role(), RaftCore::Role::kFollower) << "a failed replica took office again";
  absl::StatusOr<uint64_t> again = leader->ProposeAndWait("k=v", kDeadline);
  EXPECT_TRUE(absl::IsDataLoss(again.status())) << again.status();
  StopNode(bad);
  ASSERT_TRUE(WriteAll(10, 20));
  ExpectConverged(21, 20);  // 20 keys and the "fail=" entry, applied by the healthy two.
}

// A leader sends its appends before its own WAL write (raft_messages.h,
// TakeMessagesSendableBeforePersist), so its followers write in parallel with it: when the
// leader's write then fails, the followers already hold the entry, and the next leader commits
// it. (Sending only after the write, the entry would have been lost with the leader's write.)
TEST_F(RaftNodeTest, ALeadersAppendReachesTheFollowersBeforeItsOwnWrite) {
  ASSERT_NO_FATAL_FAILURE(StartOnFaultEnvsAndWrite10());
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  const PeerId bad = leader->peer_id();
  // Every sync of the leader's files fails from now on: its next WAL write fails and stops it.
  fault_envs_.at(bad)->FailAfter(0, FaultInjectionEnv::OpKind::kSync);
  absl::StatusOr<uint64_t> r = leader->ProposeAndWait(Kv(100), kDeadline);
  EXPECT_FALSE(r.ok()) << "a leader whose WAL write failed acknowledged the entry at " << *r;
  EXPECT_FALSE(leader->health().ok()) << "the leader whose WAL sync failed still reports healthy";
  StopNode(bad);
  // The other two elect one of themselves, whose log holds the entry, and commit it.
  ExpectConverged(11, 10);
  for (const PeerId& id : ids_) {
    if (id == bad) continue;
    EXPECT_EQ(sms_.at(id)->Get(Key(100)), "v100") << id << " lacks the entry the leader sent";
  }
  // Healthy again, the failed node catches up.
  fault_envs_.at(bad)->ClearFailures();
  StartNode(bad);
  ExpectConverged(11, 10);
  EXPECT_EQ(sms_.at(bad)->Get(Key(100)), "v100");
}

// Entries are applied off the Raft worker: an apply that takes many election timeouts delays no
// heartbeat, so nobody starts an election meanwhile.
TEST_F(RaftNodeTest, SlowApplyDelaysNoHeartbeat) {
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  const uint64_t term = leader->term();
  auto state = std::make_shared<absl::Notification>();
  leader->Propose("sleep=1500", [state](absl::StatusOr<uint64_t>) { state->Notify(); });
  // 1.5 s is 7-15 election timeouts (100-200 ms each).
  ASSERT_TRUE(state->WaitForNotificationWithTimeout(kDeadline));
  for (auto& [id, node] : nodes_) EXPECT_EQ(node->term(), term) << id << " saw an election";
  EXPECT_EQ(leader->role(), RaftCore::Role::kLeader);
  ASSERT_TRUE(WriteAll(0, 5));
}

// With heartbeats 2 s apart and no later append, followers still learn a new commit index within
// --raft_commit_propagation_delay_ms (20 ms): the leader's commit-only append. Without that timer
// they wait for the next heartbeat, a full 2 s later (each append restarts the heartbeat clock;
// measured 2.02 s in every round with the timer disabled).
TEST_F(RaftNodeTest, FollowersLearnTheCommitIndexLongBeforeTheNextHeartbeat) {
  customize_ = [](const PeerId& id, RaftNodeOptions* o) {
    o->raft.heartbeat_ticks = 200;                    // 2 s.
    o->raft.election_ticks = id == "a" ? 300 : 1000;  // "a" leads first; nobody else runs.
  };
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  ASSERT_EQ(leader->peer_id(), "a");
  for (int round = 0; round < 5; ++round) {
    absl::StatusOr<uint64_t> index = leader->ProposeAndWait(Kv(round), kDeadline);
    BASALT_ASSERT_OK(index);
    const absl::Time committed = absl::Now();
    for (auto& [id, node] : nodes_) {
      RaftNode* n = node.get();  // Lambdas cannot capture bindings (clang 14).
      ASSERT_TRUE(WaitFor([&] { return n->commit_index() >= *index; }))
          << id << " never learned commit index " << *index;
    }
    const absl::Duration took = absl::Now() - committed;
    EXPECT_LT(took, absl::Milliseconds(600))
        << "round " << round << ": the followers learned the commit index after " << took;
  }
}

TEST_F(RaftNodeTest, NonLeaderProposeFailsWithLeaderHint) {
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  for (auto& [id, node] : nodes_) {
    if (node.get() == leader) continue;
    absl::StatusOr<uint64_t> r = node->ProposeAndWait("x=1", kDeadline);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    auto hint = r.status().GetPayload(RaftCore::kLeaderHintUrl);
    ASSERT_TRUE(hint.has_value()) << r.status();
    EXPECT_EQ(std::string(*hint), leader->peer_id());
  }
  BASALT_EXPECT_OK(leader->ProposeAndWait("x=1", kDeadline));
}

TEST_F(RaftNodeTest, ProposeWithExpectedTermLandsOnlyInThatTerm) {
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  const uint64_t term = leader->term();
  auto propose = [&](uint64_t expected) {
    absl::Notification done;
    absl::StatusOr<uint64_t> result;
    leader->Propose(
        Kv(1),
        [&](absl::StatusOr<uint64_t> r) {
          result = std::move(r);
          done.Notify();
        },
        expected);
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kDeadline));
    return result;
  };
  absl::StatusOr<uint64_t> stale = propose(term + 1);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kUnavailable) << stale.status();
  absl::StatusOr<uint64_t> ok = propose(term);
  BASALT_EXPECT_OK(ok);
}

// A proposal's outcome, as its callback reported it.
struct ProposalOutcome {
  absl::Notification done;
  absl::StatusOr<uint64_t> result;
};

// Proposes Kv(first_key), Kv(first_key + 1), ... on `leader` with ProposeAndClaim until one
// proposal's round is claimed (at most 100 tries; the worker may be in a round, a tick's, at a
// proposal: then it writes that one, and once it is done, the worker idle again, we try again).
// Each proposal's outcome is appended to *outcomes; the claimed one is last.
RaftNode::ClaimedRound ProposeUntilClaimed(
    RaftNode* leader, int first_key, std::vector<std::unique_ptr<ProposalOutcome>>* outcomes) {
  RaftNode::ClaimedRound round;
  for (int i = 0; i < 100 && !round.claimed(); ++i) {
    if (i > 0 && !outcomes->back()->done.WaitForNotificationWithTimeout(kDeadline)) break;
    outcomes->push_back(std::make_unique<ProposalOutcome>());
    ProposalOutcome* o = outcomes->back().get();
    round = leader->ProposeAndClaim(Kv(first_key + i), [o](absl::StatusOr<uint64_t> r) {
      o->result = std::move(r);
      o->done.Notify();
    });
  }
  return round;
}

// A proposer that claims the round (ProposeAndClaim) writes the queued entries itself: until it
// runs the round nobody writes them, not even the worker, whose ticks and messages keep coming.
TEST_F(RaftNodeTest, AClaimedRoundWaitsForItsProposerAndThenCommits) {
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  std::vector<std::unique_ptr<ProposalOutcome>> outcomes;
  RaftNode::ClaimedRound round = ProposeUntilClaimed(leader, 0, &outcomes);
  ASSERT_TRUE(round.claimed()) << "the worker was in a round at each of 100 proposals";
  const uint64_t last = leader->log().LastIndex();
  // Three ticks: not long enough for a follower's election timeout (10-20 ticks).
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(leader->log().LastIndex(), last) << "someone else ran the claimed round";
  EXPECT_FALSE(outcomes.back()->done.HasBeenNotified());
  round.Run();
  EXPECT_FALSE(round.claimed());
  EXPECT_GT(leader->log().LastIndex(), last);
  for (auto& o : outcomes) {
    ASSERT_TRUE(o->done.WaitForNotificationWithTimeout(kDeadline));
    BASALT_EXPECT_OK(o->result);
  }
  ASSERT_TRUE(WriteAll(0, 100));  // The worker goes on as before.
  for (auto& [id, node] : nodes_) BASALT_EXPECT_OK(node->health()) << id;
}

// A WAL sync that fails in a round run by its proposer fails the node as one on the worker does:
// the proposal fails, the node reports the error and stops (it leads no more), the others go on.
TEST_F(RaftNodeTest, AFailedSyncInAProposersRoundStopsTheNode) {
  ASSERT_NO_FATAL_FAILURE(StartOnFaultEnvsAndWrite10());
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  const PeerId bad = leader->peer_id();
  std::vector<std::unique_ptr<ProposalOutcome>> outcomes;
  RaftNode::ClaimedRound round = ProposeUntilClaimed(leader, 100, &outcomes);
  ASSERT_TRUE(round.claimed()) << "the worker was in a round at each of 100 proposals";
  // Every sync of the leader's files fails from now on; this thread's round writes next.
  fault_envs_.at(bad)->FailAfter(0, FaultInjectionEnv::OpKind::kSync);
  round.Run();
  ProposalOutcome* last = outcomes.back().get();
  ASSERT_TRUE(last->done.WaitForNotificationWithTimeout(kDeadline));
  EXPECT_FALSE(last->result.ok()) << "a leader whose WAL sync failed acknowledged the entry";
  EXPECT_FALSE(leader->health().ok());
  ASSERT_TRUE(WaitFor([&] { return leader->role() != RaftCore::Role::kLeader; }));
  StopNode(bad);
  // The other two go on without it.
  RaftNode* next = WaitForLeader();
  ASSERT_NE(next, nullptr);
  EXPECT_NE(next->peer_id(), bad);
  BASALT_EXPECT_OK(next->ProposeAndWait(Kv(200), kDeadline));
}

// With --raft_rounds_on_callers=false nothing is claimed: the worker writes every entry.
TEST_F(RaftNodeTest, WithoutRoundsOnCallersTheWorkerWritesEveryEntry) {
  gflags::FlagSaver saver;
  FLAGS_raft_rounds_on_callers = false;
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  for (int i = 0; i < 20; ++i) {
    absl::Notification done;
    RaftNode::ClaimedRound round = leader->ProposeAndClaim(Kv(i), [&](absl::StatusOr<uint64_t> r) {
      BASALT_EXPECT_OK(r);
      done.Notify();
    });
    EXPECT_FALSE(round.claimed());
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(kDeadline));
  }
}

TEST_F(RaftNodeTest, FailoverAndRestartedNodeCatchesUp) {
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(WriteAll(0, 1000));
  const PeerId old_leader = leader->peer_id();
  const uint64_t old_term = leader->term();
  StopNode(old_leader);

  RaftNode* new_leader = WaitForLeader(old_term + 1);
  ASSERT_NE(new_leader, nullptr);
  EXPECT_NE(new_leader->peer_id(), old_leader);
  ASSERT_TRUE(WriteAll(1000, 2000));

  StartNode(old_leader);  // From its on-disk log and metadata, with an empty state machine.
  ExpectConverged(2000, 2000);
  EXPECT_GT(nodes_.at(old_leader)->term(), old_term);
}

TEST_F(RaftNodeTest, TransferLeadershipAndStepDown) {
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(WriteAll(0, 10));
  PeerId target;
  for (const PeerId& id : ids_) {
    if (id != leader->peer_id()) target = id;
  }
  const uint64_t first_term = leader->term();
  BASALT_ASSERT_OK(leader->TransferLeadership(target));
  RaftNode* next = WaitForLeader(first_term + 1);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->peer_id(), target);

  const uint64_t term = next->term();
  BASALT_ASSERT_OK(next->LeaderStepDown());
  ASSERT_NE(WaitForLeader(term + 1), nullptr);
  ASSERT_TRUE(WriteAll(10, 20));
  ExpectConverged(20, 20);
  // A follower refuses both.
  for (auto& [id, node] : nodes_) {
    if (node->role() == RaftCore::Role::kLeader) continue;
    EXPECT_EQ(node->LeaderStepDown().code(), absl::StatusCode::kUnavailable);
  }
}

TEST_F(RaftNodeTest, EntryOfIsolatedLeaderIsAborted) {
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(WriteAll(0, 10));
  const PeerId isolated = leader->peer_id();
  transport_.Isolate(isolated);
  absl::Notification done;
  absl::Status result;
  leader->Propose("lost=1", [&](absl::StatusOr<uint64_t> index) {
    result = index.status();
    done.Notify();
  });
  // The majority elects a new leader and commits at the isolated leader's index.
  RaftNode* next = nullptr;
  ASSERT_TRUE(WaitFor([&] {
    for (auto& [id, node] : nodes_) {
      if (id != isolated && node->role() == RaftCore::Role::kLeader) next = node.get();
    }
    return next != nullptr;
  }));
  for (int i = 10; i < 15; ++i) BASALT_ASSERT_OK(next->ProposeAndWait(Kv(i), kDeadline));
  transport_.HealAll();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kDeadline));
  EXPECT_EQ(result.code(), absl::StatusCode::kAborted) << result;
  ExpectConverged(15, 15);
  EXPECT_FALSE(sms_.at(isolated)->Get("lost").has_value());
}

// A deposed leader whose uncommitted suffix the new leader's shorter log replaced: the proposals
// beyond the new log's end can never be reached by an applied index unless someone writes more,
// so they must fail at once (in doubt: another replica may still hold and commit them), not wait.
// Nothing is written after the partition heals, so without that rule they stay pending forever.
// Check-quorum is off so that the isolated leader keeps leading (and accepting every proposal)
// until it hears of the new term: the interleaving is fixed by the partition, not by timing.
TEST_F(RaftNodeTest, ProposalsBeyondTheNewLeadersLogFailWithoutFurtherWrites) {
  customize_ = [](const PeerId&, RaftNodeOptions* o) { o->raft.check_quorum = false; };
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(WriteAll(0, 10));
  const PeerId isolated = leader->peer_id();
  const uint64_t old_term = leader->term();
  transport_.Isolate(isolated);
  const uint64_t base = leader->last_index();

  constexpr int kLost = 20;
  struct Outcomes {
    absl::Mutex mu;
    std::map<int, absl::Status> status;  // Proposal number -> its outcome.
  };
  auto outcomes = std::make_shared<Outcomes>();
  for (int i = 0; i < kLost; ++i) {
    leader->Propose(StrCat("lost", i, "=x"), [outcomes, i](absl::StatusOr<uint64_t> index) {
      absl::MutexLock l(&outcomes->mu);
      outcomes->status[i] = index.status();
    });
  }
  // Still the leader (no check-quorum), it appended all of them, in order: proposal i is at
  // index base + 1 + i, in this log only.
  ASSERT_TRUE(WaitFor([&] { return leader->last_index() == base + kLost; }))
      << "last index " << leader->last_index() << ", expected " << base + kLost;
  ASSERT_EQ(leader->role(), RaftCore::Role::kLeader);
  ASSERT_EQ(leader->term(), old_term);

  // The other two elect a leader; its log ends at or before base (it appends a no-op after).
  RaftNode* next = nullptr;
  ASSERT_TRUE(WaitFor([&] {
    for (auto& [id, node] : nodes_) {
      if (id != isolated && node->role() == RaftCore::Role::kLeader && node->term() > old_term) {
        next = node.get();
        return true;
      }
    }
    return false;
  }));
  transport_.Reconnect(isolated);
  // Hearing the new term, the old leader follows and its suffix from the no-op on is replaced.
  // Every proposal resolves without another write.
  const bool resolved = WaitFor([&] {
    absl::MutexLock l(&outcomes->mu);
    return outcomes->status.size() == static_cast<size_t>(kLost);
  });
  const uint64_t new_last = next->last_index();
  ASSERT_TRUE(resolved) << "proposals still pending with the new leader's log ending at "
                        << new_last << " (theirs at " << base + 1 << ".." << base + kLost << ")";
  ASSERT_LT(new_last, base + kLost) << "the new log reached the last proposal: nothing tested";
  {
    absl::MutexLock l(&outcomes->mu);
    for (const auto& [i, s] : outcomes->status) {
      const uint64_t index = base + 1 + i;
      if (index > new_last) {
        // Never reached by the log, so no apply resolved it: failed as in doubt.
        EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << "index " << index << ": " << s;
        EXPECT_NE(s.message().find("may still commit"), absl::string_view::npos) << s;
      } else {
        // Aborted when its index was applied with a new leader's entry (or in doubt if a later
        // election's no-op extended the log only after the truncation).
        EXPECT_TRUE(absl::IsAborted(s) || absl::IsUnavailable(s)) << "index " << index << ": " << s;
      }
    }
  }
  ASSERT_TRUE(WriteAll(10, 20));
  ExpectConverged(20, 20);
  for (auto& [id, sm] : sms_) {
    for (int i = 0; i < kLost; ++i) {
      EXPECT_FALSE(sm->Get(StrCat("lost", i)).has_value()) << id << " applied lost" << i;
    }
  }
}

TEST_F(RaftNodeTest, LogIsCollectedBelowDurableIndex) {
  segment_size_bytes_ = 4096;
  durable_state_machines_ = true;
  StartAll();
  ASSERT_NE(WaitForLeader(), nullptr);
  // Small rounds, so that group commits stay small and segments roll.
  for (int i = 0; i < 2000; i += 50) ASSERT_TRUE(WriteAll(i, i + 50));
  for (auto& [id, owned] : nodes_) {
    RaftNode* node = owned.get();
    EXPECT_TRUE(WaitFor([&] { return node->log().FirstIndex() > 1000; }, absl::Seconds(10)))
        << id << " first index " << node->log().FirstIndex();
  }
  ExpectConverged(2000, 2000);
}

TEST_F(RaftNodeTest, PosixEnvFullRestartKeepsCommittedEntries) {
  std::string tmpl = ::testing::TempDir() + "raft_node_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  UseEnv(Env::Default(), tmpl);
  StartAll();
  ASSERT_NE(WaitForLeader(), nullptr);
  ASSERT_TRUE(WriteAll(0, 300));
  for (const PeerId& id : ids_) StopNode(id);
  StartAll();  // Every state machine starts empty and replays the log.
  ASSERT_NE(WaitForLeader(), nullptr);
  ASSERT_TRUE(WriteAll(300, 310));
  ExpectConverged(310, 310);
  for (auto& [id, node] : nodes_) node->Shutdown();
  nodes_.clear();
  BASALT_ASSERT_OK(Env::Default()->DeleteDirRecursively(tmpl));
}

TEST_F(RaftNodeTest, RemovePeerPersistsCommittedConfig) {
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(WriteAll(0, 10));
  PeerId removed, kept;
  for (const PeerId& id : ids_) {
    if (id == leader->peer_id()) continue;
    (removed.empty() ? removed : kept) = id;
  }
  absl::StatusOr<uint64_t> index =
      leader->ChangeConfigAndWait({ConfigChange::Type::kRemovePeer, removed}, kDeadline);
  BASALT_ASSERT_OK(index);
  StopNode(removed);
  ASSERT_TRUE(WriteAll(10, 20));  // Two voters of two.
  ExpectConverged(20, 20);
  const RaftConfig two{{std::min(leader->peer_id(), kept), std::max(leader->peer_id(), kept)}, {}};
  EXPECT_EQ(leader->config(), two);

  // The follower persisted the configuration when it applied the entry.
  StopNode(kept);
  absl::StatusOr<std::unique_ptr<ConsensusMetadata>> cmeta =
      ConsensusMetadata::Load(env_, Options(kept).metadata_path);
  BASALT_ASSERT_OK(cmeta);
  EXPECT_EQ((*cmeta)->contents().committed_config, two);
  EXPECT_EQ((*cmeta)->contents().committed_config_index, *index);
  StartNode(kept);
  EXPECT_EQ(nodes_.at(kept)->config(), two);
  ASSERT_TRUE(WriteAll(20, 30));
  ExpectConverged(30, 30);
}

TEST_F(RaftNodeTest, IdleFollowersReceiveTheLeadersSafeTimeInHeartbeats) {
  SafeTimeRecorder& rec = safe_time_recorder_;
  customize_ = [&](const PeerId& id, RaftNodeOptions* o) { rec.Install(id, o); };
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(WriteAll(0, 20));
  const uint64_t last = leader->log().LastIndex();
  const uint64_t term = leader->term();
  uint64_t clock_after_writes;
  {
    absl::MutexLock l(&rec.mu);
    clock_after_writes = rec.clock;
  }
  // Idle now: every follower keeps receiving fresh times with the leader's last index.
  for (const PeerId& id : ids_) {
    if (id == leader->peer_id()) continue;
    ASSERT_TRUE(WaitFor([&] {
      int fresh = 0;
      for (const auto& r : rec.Of(id))
        fresh += r.term == term && r.time > clock_after_writes && r.index == last;
      return fresh >= 3;
    })) << id;
    uint64_t prev_time = 0;
    for (const auto& r : rec.Of(id)) {
      if (r.term != term) continue;  // Before this leader (a spurious election at start).
      EXPECT_GT(r.time, prev_time) << id << ": pairs arrive in order, each once";
      EXPECT_LE(r.index, last) << id;
      prev_time = r.time;
    }
  }
  // The leader never receives, and samples at most once per tick.
  EXPECT_TRUE(rec.Of(leader->peer_id()).empty());
  int before;
  {
    absl::MutexLock l(&rec.mu);
    before = rec.samples[leader->peer_id()];
  }
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::Milliseconds(300));  // Measures a rate: nothing to wait for.
  const int ticks = static_cast<int>((absl::Now() - start) / absl::Milliseconds(10));
  absl::MutexLock l(&rec.mu);
  EXPECT_LE(rec.samples[leader->peer_id()] - before, ticks + 2);
  EXPECT_GT(rec.samples[leader->peer_id()] - before, 0);
}

// A pair on a message of an older term (a deposed leader's) never reaches the sink.
TEST_F(RaftNodeTest, SafeTimeOfAStaleTermIsNotDelivered) {
  SafeTimeRecorder& rec = safe_time_recorder_;
  customize_ = [&](const PeerId& id, RaftNodeOptions* o) { rec.Install(id, o); };
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  ASSERT_TRUE(WriteAll(0, 5));
  constexpr uint64_t kStale = uint64_t{1} << 60;
  PeerId follower, other;
  for (const PeerId& id : ids_) {
    if (id == leader->peer_id()) continue;
    (follower.empty() ? follower : other) = id;
  }
  ASSERT_GT(leader->term(), 0u);
  RaftMessage hb;
  hb.type = MessageType::kHeartbeat;
  hb.from = other;
  hb.to = follower;
  hb.term = leader->term() - 1;
  hb.safe_time = kStale;
  hb.safe_time_index = 1;
  transport_.Send("tablet-1", hb);
  // Fresh pairs from the real leader keep arriving meanwhile; the stale one never does.
  const size_t before = rec.Of(follower).size();
  ASSERT_TRUE(WaitFor([&] { return rec.Of(follower).size() >= before + 3; }));
  for (const auto& r : rec.Of(follower)) EXPECT_NE(r.time, kStale);
}

// The pair's promise under concurrent proposals: every proposal numbered <= T (made before the
// sample, under the source's lock) has an index <= I.
TEST_F(RaftNodeTest, SafeTimeIndexCoversEveryProposalBeforeTheSample) {
  SafeTimeRecorder& rec = safe_time_recorder_;
  customize_ = [&](const PeerId& id, RaftNodeOptions* o) { rec.Install(id, o); };
  StartAll();
  RaftNode* leader = WaitForLeader();
  ASSERT_NE(leader, nullptr);
  const uint64_t term = leader->term();
  std::thread proposer([&] {
    for (int i = 0; i < 3000; ++i) {
      rec.Propose(leader);
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  });
  proposer.join();
  ASSERT_TRUE(WaitFor([&] {
    absl::MutexLock l(&rec.mu);
    return rec.outstanding == 0;
  }));
  ASSERT_EQ(leader->term(), term) << "leadership moved; the test needs one stable leader";
  ExpectConverged(3000, 0);
  absl::MutexLock l(&rec.mu);
  ASSERT_EQ(rec.index_of.size(), 3000u);
  int checked = 0;
  for (const auto& [id, pairs] : rec.received) {
    for (const auto& r : pairs) {
      if (r.term != term) continue;
      // The last proposal numbered <= T.
      auto it = rec.index_of.upper_bound(r.time);
      if (it == rec.index_of.begin()) continue;
      --it;
      uint64_t max_index = 0;
      for (auto j = rec.index_of.begin(); j != std::next(it); ++j) {
        max_index = std::max(max_index, j->second);
      }
      EXPECT_LE(max_index, r.index)
          << id << ": proposal " << it->first << " at index " << it->second
          << " is not covered by (" << r.time << ", " << r.index << ")";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST_F(RaftNodeTest, StartTwiceAndRequestsAfterShutdown) {
  StartNode("a");
  RaftNode* a = nodes_.at("a").get();
  EXPECT_EQ(a->Start().code(), absl::StatusCode::kFailedPrecondition);
  a->Shutdown();
  EXPECT_EQ(a->ProposeAndWait("x=1", kDeadline).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(a->LeaderStepDown().code(), absl::StatusCode::kUnavailable);
}

}  // namespace raft_node_test_file
}  // namespace
}  // namespace basalt
