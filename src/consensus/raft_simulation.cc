#include "consensus/raft_simulation.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <glog/logging.h>

#include "common/random.h"
#include "common/strings.h"
#include "consensus/memory_log.h"
#include "consensus/raft_config.h"

namespace basalt {
namespace {

// ---- The replicated key-value state machine -------------------------------------------------

// A put returns the previous value; a get returns the current one. Requests carry a unique id
// and are deduplicated, so a retried request takes effect once and returns its first result.
struct KvOp {
  uint64_t req_id = 0;
  bool put = false;
  std::string key;
  std::string value;
};

std::string EncodeOp(const KvOp& op) {
  return StrCat(op.req_id, "|", op.put ? "P" : "G", "|", op.key, "|", op.value);
}

std::optional<KvOp> DecodeOp(const std::string& data) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= data.size(); ++i) {
    if (i == data.size() || data[i] == '|') {
      parts.push_back(data.substr(start, i - start));
      start = i + 1;
    }
  }
  if (parts.size() != 4) return std::nullopt;
  return KvOp{std::stoull(parts[0]), parts[1] == "P", parts[2], parts[3]};
}

class KvStore {
 public:
  std::string Apply(const KvOp& op) {
    auto it = results_.find(op.req_id);
    if (it != results_.end()) return it->second;
    ++applications_[op.req_id];
    std::string result = data_[op.key];
    if (op.put) data_[op.key] = op.value;
    results_[op.req_id] = result;
    return result;
  }
  bool operator==(const KvStore&) const = default;
  const std::map<uint64_t, std::string>& results() const { return results_; }
  const std::map<uint64_t, int>& applications() const { return applications_; }

 private:
  std::map<std::string, std::string> data_;
  std::map<uint64_t, std::string> results_;
  std::map<uint64_t, int> applications_;
};

// ---- Simulated parts ------------------------------------------------------------------------

struct InFlight {
  uint64_t deliver_at;
  RaftMessage msg;
};

// One replica process. Each belongs to a slot; a slot's node that was removed from the group may
// be added back under its id (it keeps its log and hard state), or be deleted and its slot given
// to a fresh node with a new id ("n3", then "n3.1", ...) and an empty log.
struct SimNode {
  enum class State {
    kSpare,    // Never started; no configuration names it yet.
    kLive,     // Running, or crashed and restarted by the fault injector.
    kDeleted,  // Replaced by a fresh node. Stays down but keeps its durable state, and restarts
               // at the end only if a configuration still names it.
  };
  PeerId id;
  size_t slot = 0;
  State state = State::kLive;
  int phase = 0;  // Substep of each tick at which this node's clock ticks.
  std::unique_ptr<Random> rng;
  MemoryLog log;
  HardState durable_hard_state;
  // The committed configuration the shell persists when it applies its entry (Ready step 4).
  RaftConfig durable_config;
  uint64_t durable_config_index = 0;
  // The configuration entries in `log` (index -> configuration), kept in step with it.
  std::map<uint64_t, RaftConfig> log_configs;
  std::unique_ptr<RaftCore> core;  // Null while crashed.
  KvStore kv;
  uint64_t applied = 0;
  size_t applied_configs = 0;  // Configuration entries applied since the last start.
  uint64_t checked_commit = 0;
};

struct ClientOp {
  KvOp op;
  uint64_t invoke_time = 0;
  uint64_t ack_time = 0;
  bool acked = false;
  std::string response;
};

struct Client {
  bool busy = false;
  size_t op = 0;  // Index into the history.
  PeerId target;
  bool proposed = false;
  uint64_t proposed_at = 0;
  uint64_t next_try_at = 0;
};

class Simulation {
 public:
  explicit Simulation(const SimulationOptions& options);
  SimulationResult Run();

 private:
  bool ok() const { return result_.ok; }
  bool Chance(int per_mille) { return rng_.Uniform(1000) < static_cast<uint64_t>(per_mille); }
  void Fail(std::string what);
  void Trace(const std::function<std::string()>& line);

  // Nodes.
  SimNode* AddNode(size_t slot, SimNode::State state);
  void Start(SimNode* n);
  void Crash(SimNode* n);
  void Stop(SimNode* n);  // Crash() without counting it.
  void Process(SimNode* n);
  void TrackLogConfigs(SimNode* n, const std::vector<LogEntry>& entries);
  void Apply(SimNode* n, const LogEntry& e);
  SimNode* Node(const PeerId& id) const;
  std::vector<SimNode*> LiveNodes() const;
  const RaftConfig& LogConfig(const SimNode& n) const;

  // Membership.
  enum class Action { kAdd, kReadd, kReplace, kPromote, kDemote, kRemove, kTransfer };
  static constexpr int kNumActions = 7;
  SimNode* CurrentLeader() const;
  void ChangeMembership();
  std::pair<Action, SimNode*> PickMembershipAction(const SimNode& leader);
  void ProposeMembershipChange(SimNode* leader, Action action, SimNode* target);
  void ReviveNamedDeletedNodes();

  // Network.
  void Send(RaftMessage m);
  void DeliverDue();
  void Partition();
  void InjectFaults();

  // Clients.
  void StepClients();
  void Submit(Client* c);

  // Checks.
  void CheckNewEntries(SimNode* n, const std::vector<LogEntry>& entries);
  void CheckNode(SimNode* n);
  void CheckNewLeader(SimNode* n);
  void CheckElectableLogsHoldCommitted();
  bool Converged();
  void FinalChecks();

  void RunSubstep();

  const SimulationOptions options_;
  Random rng_;
  SimulationOptions rates_;  // options_ with fault rates scaled for this seed (swarm testing).
  bool faulty_ = true;
  uint64_t now_ = 0;                             // Substeps.
  std::vector<std::unique_ptr<SimNode>> nodes_;  // Every node ever created, in creation order.
  std::map<PeerId, SimNode*> by_id_;
  std::vector<SimNode*> slots_;    // The current node of each slot.
  std::vector<int> incarnations_;  // Per slot: how many nodes replaced the first.
  RaftConfig config_;              // The initial configuration.
  uint64_t learner_catch_up_entries_ = 100;
  std::vector<InFlight> network_;
  std::set<std::pair<PeerId, PeerId>> blocked_;
  std::vector<Client> clients_;
  std::vector<ClientOp> history_;
  uint64_t next_req_id_ = 1;
  uint64_t append_bytes_ = 0;
  size_t max_inflight_ = 0;

  // Checker state.
  std::map<uint64_t, PeerId> leaders_;  // term -> leader
  std::map<std::pair<uint64_t, uint64_t>, std::pair<size_t, uint64_t>>
      entries_;  // (index, term)
                 // -> (hash, prev term)
  // [index - 1] -> the committed entry and the term of the replica that first reported it
  // committed, an upper bound of the term in which it was committed.
  struct Committed {
    uint64_t term;
    size_t hash;
    uint64_t commit_term;
  };
  std::vector<Committed> committed_;
  // The committed configuration entries (index, configuration), in log order.
  std::vector<std::pair<uint64_t, RaftConfig>> committed_configs_;
  std::map<uint64_t, std::pair<uint64_t, size_t>> applied_;  // index -> (term, hash)
  // The configuration entries applied, in order: every replica applies a prefix of it.
  std::vector<std::pair<uint64_t, RaftConfig>> applied_configs_;
  std::deque<std::string> trace_;
  SimulationResult result_;
};

size_t EntryHash(const LogEntry& e) {
  return std::hash<std::string>()(e.data) * 31 + static_cast<size_t>(e.type);
}

Simulation::Simulation(const SimulationOptions& options) : options_(options), rng_(options.seed) {
  // Swarm testing: each seed scales each kind of fault by 0, 1, 2 or 4, so that some runs
  // concentrate on one kind of trouble.
  rates_ = options_;
  if (options_.swarm) {
    for (int* rate :
         {&rates_.loss_per_mille, &rates_.duplicate_per_mille, &rates_.long_delay_per_mille,
          &rates_.partition_per_mille_per_tick, &rates_.crash_per_mille_per_tick,
          &rates_.crash_leader_per_mille_per_tick, &rates_.crash_mid_ready_per_mille}) {
      *rate *= std::vector<int>{0, 1, 2, 4}[rng_.Uniform(4)];
    }
  }
  append_bytes_ = std::vector<uint64_t>{100, 300, 4096}[rng_.Uniform(3)];
  max_inflight_ = std::vector<size_t>{1, 2, 8}[rng_.Uniform(3)];
  // Draws for membership only when it is on, so that runs without it replay as they always did.
  if (options_.membership_per_mille_per_tick > 0) {
    rates_.membership_per_mille_per_tick *= std::vector<int>{1, 2, 4}[rng_.Uniform(3)];
    learner_catch_up_entries_ = std::vector<uint64_t>{1, 10, 100}[rng_.Uniform(3)];
  }
  for (int i = 0; i < options_.num_nodes; ++i) config_.voters.push_back(StrCat("n", i));
  config_ = NormalizeConfig(config_);
  for (int i = 0; i < options_.num_nodes + options_.spare_nodes; ++i) {
    AddNode(i, i < options_.num_nodes ? SimNode::State::kLive : SimNode::State::kSpare);
  }
  clients_.resize(options_.clients);
  for (auto& n : nodes_) {
    if (n->state == SimNode::State::kLive) Start(n.get());
  }
}

void Simulation::Fail(std::string what) {
  if (!result_.ok) return;
  result_.ok = false;
  result_.violation = StrCat("seed ", options_.seed, " at time ", now_, ": ", what);
  Trace([&] { return StrCat("VIOLATION: ", what); });
}

void Simulation::Trace(const std::function<std::string()>& line) {
  if (!options_.trace) return;
  trace_.push_back(StrCat("[", now_ / options_.substeps_per_tick, ".",
                          now_ % options_.substeps_per_tick, "] ", line()));
  if (trace_.size() > 600) trace_.pop_front();
}

SimNode* Simulation::Node(const PeerId& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

// The nodes that run or may restart: the fault injector's targets.
std::vector<SimNode*> Simulation::LiveNodes() const {
  std::vector<SimNode*> live;
  for (const auto& n : nodes_) {
    if (n->state == SimNode::State::kLive) live.push_back(n.get());
  }
  return live;
}

// ---- Nodes ----------------------------------------------------------------------------------

// Creates the next node of `slot` (its first, or one replacing a deleted one), not started.
SimNode* Simulation::AddNode(size_t slot, SimNode::State state) {
  if (slot == slots_.size()) {
    slots_.push_back(nullptr);
    incarnations_.push_back(0);
  } else {
    ++incarnations_[slot];
  }
  auto n = std::make_unique<SimNode>();
  n->id =
      incarnations_[slot] == 0 ? StrCat("n", slot) : StrCat("n", slot, ".", incarnations_[slot]);
  n->slot = slot;
  n->state = state;
  n->phase = static_cast<int>(rng_.Uniform(options_.substeps_per_tick));
  n->rng = std::make_unique<Random>(rng_.Next64());
  // A new node starts from the initial configuration (index 0) and an empty log; the leader
  // sends it the whole log, configuration entries included (logs are never compacted here).
  n->durable_config = config_;
  slots_[slot] = n.get();
  by_id_[n->id] = n.get();
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

void Simulation::Start(SimNode* n) {
  RaftOptions options;
  options.id = n->id;
  // Small, varied batch limits split appends, so followers acknowledge partial prefixes.
  options.max_append_bytes = append_bytes_;
  options.max_inflight_appends = max_inflight_;
  options.testing_bug = options_.bug;
  options.auto_promote_learners = options_.auto_promote_learners;
  options.learner_catch_up_entries = learner_catch_up_entries_;
  // Restart as the node shell does: the committed configuration persisted at apply time, and the
  // configuration entries after it re-read from the log. The state machine is rebuilt from index 1.
  RaftBootState boot;
  boot.hard_state = n->durable_hard_state;
  boot.config = n->durable_config;
  boot.config_index = n->durable_config_index;
  auto core = RaftCore::Create(options, &n->log, boot, n->rng.get());
  CHECK(core.ok()) << core.status();
  n->core = std::move(*core);
  n->kv = KvStore();
  n->applied = 0;
  n->applied_configs = 0;
  n->checked_commit = 0;
  Trace([&] { return StrCat("start ", n->core->DebugString()); });
  Process(n);
}

void Simulation::Crash(SimNode* n) {
  Trace([&] { return StrCat("crash ", n->id); });
  Stop(n);
  ++result_.crashes;
}

void Simulation::Stop(SimNode* n) {
  n->core.reset();
  n->log.Crash();
  // The log reverted to its last sync: find its configuration entries again.
  n->log_configs.clear();
  TrackLogConfigs(n, n->log.entries());
}

// Records the configuration entries among `entries`, just written to `n`'s log (which dropped
// its own entries from the first index on).
void Simulation::TrackLogConfigs(SimNode* n, const std::vector<LogEntry>& entries) {
  if (entries.empty()) return;
  auto overwritten = n->log_configs.lower_bound(entries.front().index);
  result_.configs_overwritten += static_cast<int>(std::distance(overwritten, n->log_configs.end()));
  n->log_configs.erase(overwritten, n->log_configs.end());
  for (const LogEntry& e : entries) {
    if (e.type != EntryType::kConfigChange) continue;
    absl::StatusOr<RaftConfig> config = DecodeConfig(e.data);
    CHECK(config.ok()) << config.status();  // Only RaftCore writes configuration entries.
    n->log_configs.emplace(e.index, std::move(*config));
  }
}

// The configuration `n`'s log implies: that of its last configuration entry, or the initial one.
const RaftConfig& Simulation::LogConfig(const SimNode& n) const {
  return n.log_configs.empty() ? config_ : n.log_configs.rbegin()->second;
}

void Simulation::Process(SimNode* n) {
  // RaftNode sends a held-back commit index after a delay unless an append carries it first: here
  // at a random later step (heartbeats carry it too).
  if (n->core && rng_.OneIn(2)) n->core->PropagateCommit();
  while (ok() && n->core && n->core->HasReady()) {
    Ready ready = n->core->GetReady();
    // As RaftNode does: a leader's appends leave before its own write is durable.
    for (RaftMessage& m : TakeMessagesSendableBeforePersist(&ready, n->durable_hard_state)) {
      Send(std::move(m));
    }
    CheckNewEntries(n, ready.entries);
    n->log.Append(ready.entries);
    TrackLogConfigs(n, ready.entries);
    const bool wrote = ready.hard_state.has_value() || !ready.entries.empty();
    if (faulty_ && wrote && Chance(rates_.crash_mid_ready_per_mille)) {
      // Before the sync: the write is lost, and nothing that depends on it was sent (a leader's
      // appends may have been).
      Crash(n);
      return;
    }
    n->log.Sync();
    if (ready.hard_state) n->durable_hard_state = *ready.hard_state;
    for (RaftMessage& m : ready.messages) Send(std::move(m));
    for (const LogEntry& e : ready.committed_entries) Apply(n, e);
    n->core->Advance(ready);
    if (!ready.committed_entries.empty()) n->core->AppliedTo(ready.committed_entries.back().index);
    CheckNode(n);
    CheckElectableLogsHoldCommitted();
  }
}

void Simulation::Apply(SimNode* n, const LogEntry& e) {
  if (e.index != n->applied + 1) {
    return Fail(StrCat(n->id, " applied index ", e.index, " after ", n->applied));
  }
  n->applied = e.index;
  auto [it, inserted] = applied_.emplace(e.index, std::make_pair(e.term, EntryHash(e)));
  if (!inserted && it->second != std::make_pair(e.term, EntryHash(e))) {
    return Fail(StrCat("state machine safety: ", n->id, " applied term ", e.term, " at index ",
                       e.index, " where another replica applied term ", it->second.first));
  }
  if (e.type == EntryType::kConfigChange) {
    // Every replica applies the same configurations in the same order: a prefix of one sequence.
    absl::StatusOr<RaftConfig> config = DecodeConfig(e.data);
    CHECK(config.ok()) << config.status();
    const size_t k = n->applied_configs++;
    if (k == applied_configs_.size()) {
      applied_configs_.emplace_back(e.index, *config);
    } else if (applied_configs_[k] != std::make_pair(e.index, *config)) {
      return Fail(StrCat("configuration safety: ", n->id, " applied ", ConfigToString(*config),
                         " at index ", e.index, " as configuration #", k, " where another replica",
                         " applied ", ConfigToString(applied_configs_[k].second), " at index ",
                         applied_configs_[k].first));
    }
    n->durable_config = std::move(*config);
    n->durable_config_index = e.index;
    return;
  }
  if (e.type != EntryType::kNormal) return;
  std::optional<KvOp> op = DecodeOp(e.data);
  if (!op) return Fail(StrCat("undecodable entry at ", e.index));
  const std::string result = n->kv.Apply(*op);
  for (Client& c : clients_) {
    if (!c.busy || !c.proposed || c.target != n->id || history_[c.op].op.req_id != op->req_id) {
      continue;
    }
    ClientOp& h = history_[c.op];
    h.acked = true;
    h.ack_time = now_;
    h.response = result;
    c.busy = false;
    ++result_.ops_acknowledged;
    Trace(
        [&] { return StrCat("ack req ", op->req_id, " at index ", e.index, " = '", result, "'"); });
  }
}

// ---- Network --------------------------------------------------------------------------------

void Simulation::Send(RaftMessage m) {
  const int s = options_.substeps_per_tick;
  if ((m.type == MessageType::kPreVote || m.type == MessageType::kVote) &&
      !IsMember(committed_configs_.empty() ? config_ : committed_configs_.back().second, m.from)) {
    ++result_.removed_node_campaigns;
  }
  if (faulty_ && Chance(rates_.loss_per_mille)) {
    Trace([&] { return StrCat("lose ", MessageToString(m)); });
    return;
  }
  const int copies = faulty_ && Chance(rates_.duplicate_per_mille) ? 2 : 1;
  for (int i = 0; i < copies; ++i) {
    uint64_t delay = 1 + rng_.Uniform(2);
    if (faulty_ && Chance(rates_.long_delay_per_mille)) {
      delay = 1 + rng_.Uniform(5 * s);
    }
    network_.push_back(InFlight{now_ + delay, m});
  }
}

void Simulation::DeliverDue() {
  for (;;) {
    std::vector<size_t> due;
    for (size_t i = 0; i < network_.size(); ++i) {
      if (network_[i].deliver_at <= now_) due.push_back(i);
    }
    if (due.empty() || !ok()) return;
    const size_t pick = due[rng_.Uniform(due.size())];  // Random order among due messages.
    RaftMessage m = std::move(network_[pick].msg);
    network_.erase(network_.begin() + pick);
    SimNode* to = Node(m.to);
    if (to == nullptr || !to->core || blocked_.count({m.from, m.to}) != 0) {
      Trace([&] { return StrCat("drop ", MessageToString(m)); });
      continue;
    }
    Trace([&] { return StrCat("deliver ", MessageToString(m)); });
    to->core->Step(m);
    Process(to);
  }
}

void Simulation::Partition() {
  ++result_.partitions;
  const std::vector<SimNode*> nodes = LiveNodes();
  const size_t n = nodes.size();
  switch (rng_.Uniform(3)) {
    case 0: {  // Isolate one node.
      const PeerId& id = nodes[rng_.Uniform(n)]->id;
      for (SimNode* other : nodes) {
        blocked_.insert({id, other->id});
        blocked_.insert({other->id, id});
      }
      Trace([&] { return StrCat("isolate ", id); });
      break;
    }
    case 1: {  // Split into two random sides.
      std::vector<bool> side(n);
      for (size_t i = 0; i < n; ++i) side[i] = rng_.OneIn(2);
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) {
          if (side[i] != side[j]) blocked_.insert({nodes[i]->id, nodes[j]->id});
        }
      }
      Trace([] { return std::string("split partition"); });
      break;
    }
    default: {  // Cut one direction of one link.
      const PeerId& a = nodes[rng_.Uniform(n)]->id;
      const PeerId& b = nodes[rng_.Uniform(n)]->id;
      blocked_.insert({a, b});
      Trace([&] { return StrCat("cut ", a, "->", b); });
      break;
    }
  }
}

void Simulation::InjectFaults() {
  if (Chance(rates_.partition_per_mille_per_tick)) Partition();
  if (!blocked_.empty() && Chance(rates_.heal_per_mille_per_tick)) {
    blocked_.clear();
    Trace([] { return std::string("heal"); });
  }
  for (SimNode* n : LiveNodes()) {
    const bool leader = n->core && n->core->role() == RaftCore::Role::kLeader;
    if (n->core && (Chance(rates_.crash_per_mille_per_tick) ||
                    (leader && Chance(rates_.crash_leader_per_mille_per_tick)))) {
      Crash(n);
    } else if (!n->core && Chance(rates_.restart_per_mille_per_tick)) {
      Start(n);
    }
  }
  // No draw when off, so that runs without membership changes replay as they always did.
  if (rates_.membership_per_mille_per_tick > 0 && Chance(rates_.membership_per_mille_per_tick)) {
    ChangeMembership();
  }
}

// ---- Membership -----------------------------------------------------------------------------

// The running leader of the highest term, or null.
SimNode* Simulation::CurrentLeader() const {
  SimNode* leader = nullptr;
  for (const auto& n : nodes_) {
    if (n->core && n->core->role() == RaftCore::Role::kLeader &&
        (leader == nullptr || n->core->term() > leader->core->term())) {
      leader = n.get();
    }
  }
  return leader;
}

// Proposes a random single-server change (or a leadership transfer) on the leader, as an
// operator or the master would. Refusals (a change pending, a learner not caught up, no entry of
// the leader's term committed yet) are normal and only traced.
void Simulation::ChangeMembership() {
  SimNode* leader = CurrentLeader();
  if (leader == nullptr) return;
  // Not a structured binding: clang 14 (make tsa) cannot capture one in the lambda below.
  const std::pair<Action, SimNode*> picked = PickMembershipAction(*leader);
  const Action action = picked.first;
  SimNode* const target = picked.second;
  if (target == nullptr) return;
  if (action == Action::kTransfer) {
    const absl::Status s = leader->core->TransferLeadership(target->id);
    Trace([&] { return StrCat("transfer ", leader->id, " -> ", target->id, ": ", s.ToString()); });
  } else {
    ProposeMembershipChange(leader, action, target);
  }
  Process(leader);
}

// Picks an action and its target among those the leader's configuration allows, with weights
// that steer the number of voters back toward num_nodes. Returns a null target if none applies.
std::pair<Simulation::Action, SimNode*> Simulation::PickMembershipAction(const SimNode& leader) {
  const RaftConfig& config = leader.core->config();
  std::vector<SimNode*> targets[kNumActions];
  auto add = [&](Action action, SimNode* n) { targets[static_cast<int>(action)].push_back(n); };
  for (SimNode* n : slots_) {
    if (IsMember(config, n->id)) continue;
    if (n->state == SimNode::State::kSpare) {
      add(Action::kAdd, n);
    } else {
      add(Action::kReadd, n);
      add(Action::kReplace, n);
    }
  }
  for (const PeerId& id : config.learners) {
    add(Action::kPromote, Node(id));
    add(Action::kRemove, Node(id));
  }
  for (const PeerId& id : config.voters) {
    if (id == leader.id) continue;
    for (Action action : {Action::kDemote, Action::kRemove, Action::kTransfer}) {
      add(action, Node(id));
    }
  }
  const bool few = config.voters.size() < static_cast<size_t>(options_.num_nodes);
  const bool many = config.voters.size() > static_cast<size_t>(options_.num_nodes);
  // In the order of Action.
  const int weights[kNumActions] = {2, 1, 1, few ? 6 : 2, many ? 4 : 1, many ? 4 : 1, 1};
  int total = 0;
  for (int a = 0; a < kNumActions; ++a) total += targets[a].empty() ? 0 : weights[a];
  if (total == 0) return {Action::kAdd, nullptr};
  int pick = static_cast<int>(rng_.Uniform(total));
  int a = 0;
  for (; targets[a].empty() || pick >= weights[a]; ++a) pick -= targets[a].empty() ? 0 : weights[a];
  return {static_cast<Action>(a), targets[a][rng_.Uniform(targets[a].size())]};
}

void Simulation::ProposeMembershipChange(SimNode* leader, Action action, SimNode* target) {
  static constexpr ConfigChange::Type kTypes[] = {
      ConfigChange::Type::kAddLearner,  ConfigChange::Type::kAddLearner,
      ConfigChange::Type::kAddLearner,  ConfigChange::Type::kPromoteLearner,
      ConfigChange::Type::kDemoteVoter, ConfigChange::Type::kRemovePeer};
  static constexpr const char* kNames[] = {"add",     "re-add", "replace",
                                           "promote", "demote", "remove"};
  const int a = static_cast<int>(action);
  ConfigChange change{kTypes[a], target->id};
  if (action == Action::kReplace) {
    // The new node's id: the next incarnation of the slot (AddNode names it the same way).
    change.peer = StrCat("n", target->slot, ".", incarnations_[target->slot] + 1);
  }
  const absl::StatusOr<uint64_t> index = leader->core->ProposeConfigChange(change);
  Trace([&] {
    return StrCat("propose ", kNames[a], " ", change.peer, " at ", leader->id, ": ",
                  index.ok() ? StrCat("#", *index) : index.status().ToString());
  });
  if (!index.ok()) return;
  switch (action) {
    case Action::kAdd:
      ++result_.learners_added;
      target->state = SimNode::State::kLive;
      Start(target);
      break;
    case Action::kReplace: {
      // The removed node is deleted and a fresh one with an empty log takes its slot.
      ++result_.learners_added;
      Stop(target);
      target->state = SimNode::State::kDeleted;
      SimNode* fresh = AddNode(target->slot, SimNode::State::kLive);
      CHECK_EQ(fresh->id, change.peer);
      Start(fresh);
      break;
    }
    case Action::kReadd:
      ++result_.nodes_readded;  // With its log and hard state; if down, it restarts later.
      if (options_.readd_with_empty_log) {
        // Deliberately unsafe: the node loses its log (keeping its term and vote).
        Stop(target);
        target->log = MemoryLog();
        target->log_configs.clear();
        target->durable_hard_state.commit = 0;
        target->durable_config = config_;
        target->durable_config_index = 0;
        Start(target);
      }
      break;
    case Action::kPromote:
      ++result_.promotions;
      break;
    case Action::kDemote:
      ++result_.demotions;
      break;
    case Action::kRemove:
      ++result_.removals;
      break;
    case Action::kTransfer:
      break;
  }
}

// Restarts every deleted node that some running replica's configuration still names. Only at
// the end: a deleted node has its durable state, so this is just a long crash, and it lets every
// member of the final configuration converge even in the rare runs where a stale leader deleted
// a node that a newer configuration names.
void Simulation::ReviveNamedDeletedNodes() {
  for (const auto& d : nodes_) {
    if (d->state != SimNode::State::kDeleted) continue;
    for (const auto& n : nodes_) {
      if (n->core && IsMember(n->core->config(), d->id)) {
        Trace([&] { return StrCat("revive ", d->id, ", named by ", n->id); });
        d->state = SimNode::State::kLive;
        Start(d.get());
        break;
      }
    }
  }
}

// ---- Clients --------------------------------------------------------------------------------

void Simulation::StepClients() {
  const uint64_t s = options_.substeps_per_tick;
  for (Client& c : clients_) {
    if (!c.busy && faulty_ && history_.size() < static_cast<size_t>(options_.max_ops) &&
        rng_.OneIn(2 * s)) {
      ClientOp op;
      op.op.req_id = next_req_id_++;
      op.op.put = rng_.Uniform(10) < 6;
      op.op.key = StrCat("k", rng_.Uniform(4));
      // Values of varied size, so that batch limits split appends at varied points.
      if (op.op.put) op.op.value = StrCat("v", op.op.req_id, std::string(rng_.Uniform(80), 'x'));
      op.invoke_time = now_;
      history_.push_back(op);
      c = Client{true, history_.size() - 1, c.target, false, 0, now_};
    }
    if (!c.busy) continue;
    if (c.proposed && now_ - c.proposed_at > 8 * s) {
      c.proposed = false;  // Timed out: retry the same request, perhaps elsewhere.
      c.target.clear();
    }
    if (!c.proposed && now_ >= c.next_try_at) Submit(&c);
  }
}

void Simulation::Submit(Client* c) {
  if (c->target.empty()) c->target = nodes_[rng_.Uniform(nodes_.size())]->id;
  SimNode* n = Node(c->target);
  const KvOp& op = history_[c->op].op;
  if (n->core) {
    absl::StatusOr<uint64_t> index = n->core->Propose(EncodeOp(op));
    if (index.ok()) {
      c->proposed = true;
      c->proposed_at = now_;
      Trace([&] { return StrCat("client req ", op.req_id, " proposed at ", n->id, " #", *index); });
      Process(n);
      return;
    }
  }
  // Not the leader (or down): follow the hint, else try a random replica, a little later.
  c->target = n->core ? n->core->leader() : PeerId();
  c->next_try_at = now_ + options_.substeps_per_tick / 2;
}

// ---- Checks ---------------------------------------------------------------------------------

// Log matching, checked incrementally: every entry that enters any log is recorded by (index,
// term) with its content and the term of the entry before it. If two logs have an entry with the
// same index and term, both must agree on content and on the previous entry's term, which by
// induction makes the logs identical up to there.
void Simulation::CheckNewEntries(SimNode* n, const std::vector<LogEntry>& entries) {
  if (entries.empty()) return;
  absl::StatusOr<uint64_t> prev = n->core->log().Term(entries.front().index - 1);
  uint64_t prev_term = prev.ok() ? *prev : 0;
  for (const LogEntry& e : entries) {
    const std::pair<size_t, uint64_t> value{EntryHash(e), prev_term};
    auto [it, inserted] = entries_.emplace(std::make_pair(e.index, e.term), value);
    if (!inserted && it->second != value) {
      return Fail(StrCat("log matching: ", n->id, " has a different entry or predecessor at ",
                         "index ", e.index, " term ", e.term));
    }
    prev_term = e.term;
  }
}

void Simulation::CheckNode(SimNode* n) {
  RaftCore& core = *n->core;
  const RaftLog& log = core.log();
  // A configuration takes effect when its entry is appended and reverts when that entry is
  // overwritten: the configuration in force is always the last one in the log.
  if (core.config() != LogConfig(*n)) {
    return Fail(StrCat("configuration tracking: ", n->id, " uses ", ConfigToString(core.config()),
                       " but the last configuration in its log is ",
                       ConfigToString(LogConfig(*n))));
  }
  if (core.role() == RaftCore::Role::kLeader) {
    if (!IsVoter(core.config(), n->id)) {
      return Fail(StrCat(n->id, " leads term ", core.term(), " but is not a voter of ",
                         ConfigToString(core.config())));
    }
    auto [it, inserted] = leaders_.emplace(core.term(), n->id);
    if (!inserted && it->second != n->id) {
      return Fail(StrCat("election safety: ", it->second, " and ", n->id, " both leaders of term ",
                         core.term()));
    }
    if (inserted) CheckNewLeader(n);
    if (!ok()) return;
  }
  // Commit indexes: every replica commits the same entries.
  if (log.committed() > n->checked_commit) {
    auto entries = log.Entries(n->checked_commit + 1, log.committed() + 1, UINT64_MAX);
    CHECK(entries.ok()) << entries.status();
    for (const LogEntry& e : *entries) {
      if (e.index > committed_.size()) {
        committed_.push_back(Committed{e.term, EntryHash(e), core.term()});
        if (e.type == EntryType::kConfigChange) {
          committed_configs_.emplace_back(e.index, *DecodeConfig(e.data));
          ++result_.configs_committed;
        }
      } else if (committed_[e.index - 1].term != e.term ||
                 committed_[e.index - 1].hash != EntryHash(e)) {
        return Fail(StrCat("commit safety: ", n->id, " committed term ", e.term, " at index ",
                           e.index, " where term ", committed_[e.index - 1].term,
                           " was committed"));
      }
    }
    n->checked_commit = log.committed();
  }
}

void Simulation::CheckNewLeader(SimNode* n) {
  RaftCore& core = *n->core;
  const RaftLog& log = core.log();
  ++result_.leaders_elected;
  Trace([&] { return StrCat("elected ", core.DebugString()); });
  // Leader completeness: an entry committed in a term is in the log of every leader of a higher
  // term. (A leader of a lower term may finish its election late and lack it.)
  for (size_t i = 1; i <= committed_.size(); ++i) {
    if (committed_[i - 1].commit_term < core.term() && !log.MatchTerm(i, committed_[i - 1].term)) {
      return Fail(StrCat("leader completeness: ", n->id, " leads term ", core.term(),
                         " without committed entry ", i));
    }
  }
  // A node whose removal was committed before this term never leads it, unless its log adds it
  // back after that configuration. (A removed node that missed its removal still campaigns with
  // its stale configuration, but cannot collect a majority; and a stale leader of an older term
  // may finish its election after its removal was committed in a newer one.)
  const std::pair<uint64_t, RaftConfig>* last = nullptr;
  for (auto it = committed_configs_.rbegin(); it != committed_configs_.rend(); ++it) {
    if (committed_[it->first - 1].commit_term < core.term()) {
      last = &*it;
      break;
    }
  }
  if (IsMember(last == nullptr ? config_ : last->second, n->id)) return;
  const uint64_t since = last == nullptr ? 0 : last->first;
  for (auto it = n->log_configs.upper_bound(since); it != n->log_configs.end(); ++it) {
    if (IsMember(it->second, n->id)) return;
  }
  Fail(StrCat("membership: ", n->id, " leads term ", core.term(), " but the configuration ",
              "committed before it (index ", since, ") excludes it and no later one in its log ",
              "adds it back"));
}

// Leader completeness, checked ahead of any election: a replica that is a voter of the
// configuration its log implies, and whose durable log is at least as up to date (§5.4.1) as
// those of a majority of that configuration's voters, could collect a majority of votes (at a new
// term, from voters that are running or restarted), so it must already hold every committed
// entry. (By log matching, holding the last committed entry suffices.) This catches a premature
// commit at once rather than only if the unlucky election happens. Deleted nodes count: they
// keep their durable state and could be restarted.
void Simulation::CheckElectableLogsHoldCommitted() {
  if (committed_.empty()) return;
  const uint64_t index = committed_.size();
  auto last_op = [](const SimNode& n) {
    return OpId{*n.log.Term(n.log.LastIndex()), n.log.LastIndex()};
  };
  for (const auto& x : nodes_) {
    if (x->state == SimNode::State::kSpare) continue;
    const RaftConfig& config = LogConfig(*x);
    if (!IsVoter(config, x->id)) continue;
    const OpId last_x = last_op(*x);
    size_t not_newer = 0;
    for (const PeerId& voter : config.voters) {
      const SimNode* y = Node(voter);
      not_newer += y != nullptr && y->state != SimNode::State::kSpare && last_op(*y) <= last_x;
    }
    if (not_newer < config.voters.size() / 2 + 1) continue;
    absl::StatusOr<uint64_t> term = x->log.Term(index);
    if (!term.ok() || *term != committed_[index - 1].term) {
      return Fail(StrCat("leader completeness: ", x->id, " could win an election (log ends at ",
                         last_x.term, "/", last_x.index, ", ", ConfigToString(config),
                         ") without committed entry ", index));
    }
  }
}

// The group has converged when one leader has committed its whole log (so its configuration is
// committed) and every member of that configuration, learners included, runs and has applied
// all of it. Nodes outside the final configuration need not converge.
bool Simulation::Converged() {
  for (const Client& c : clients_) {
    if (c.busy) return false;
  }
  SimNode* leader = nullptr;
  for (auto& n : nodes_) {
    if (n->core && n->core->role() == RaftCore::Role::kLeader) {
      if (leader != nullptr) return false;
      leader = n.get();
    }
  }
  if (leader == nullptr) return false;
  const uint64_t last = leader->core->log().LastIndex();
  if (leader->core->log().committed() != last) return false;
  const RaftConfig& config = leader->core->config();
  for (const auto* ids : {&config.voters, &config.learners}) {
    for (const PeerId& id : *ids) {
      const SimNode* n = Node(id);
      if (!n->core) return false;
      const RaftLog& log = n->core->log();
      if (log.committed() != last || log.LastIndex() != last || n->applied != last) return false;
    }
  }
  return true;
}

void Simulation::FinalChecks() {
  const SimNode* leader = CurrentLeader();
  const RaftConfig& config = leader->core->config();
  for (auto& n : nodes_) {
    if (!n->core) continue;
    if (IsMember(config, n->id) && !(n->kv == leader->kv)) {
      return Fail(StrCat(n->id, " and ", leader->id, " states differ"));
    }
    for (const auto& [req, count] : n->kv.applications()) {
      if (count != 1) return Fail(StrCat("request ", req, " applied ", count, " times"));
    }
  }
  // Replay the committed log: the linearization order is the log order.
  const RaftLog& log = leader->core->log();
  auto entries = log.Entries(1, log.committed() + 1, UINT64_MAX);
  CHECK(entries.ok());
  KvStore reference;
  std::map<uint64_t, uint64_t> position;  // req id -> index of its first entry
  for (const LogEntry& e : *entries) {
    if (e.type != EntryType::kNormal) continue;
    std::optional<KvOp> op = DecodeOp(e.data);
    reference.Apply(*op);
    position.emplace(op->req_id, e.index);
  }
  for (const ClientOp& a : history_) {
    if (!a.acked) continue;
    auto pa = position.find(a.op.req_id);
    if (pa == position.end()) return Fail(StrCat("acknowledged request ", a.op.req_id, " lost"));
    if (reference.results().at(a.op.req_id) != a.response) {
      return Fail(StrCat("linearizability: request ", a.op.req_id, " answered '", a.response,
                         "' but its place in the log gives '", reference.results().at(a.op.req_id),
                         "'"));
    }
    for (const ClientOp& b : history_) {
      auto pb = position.find(b.op.req_id);
      if (b.invoke_time > a.ack_time && pb != position.end() && pb->second < pa->second) {
        return Fail(StrCat("linearizability: request ", b.op.req_id, " invoked after ", a.op.req_id,
                           " was acknowledged precedes it in the log"));
      }
    }
  }
  result_.final_commit_index = log.committed();
}

// ---- Driver ---------------------------------------------------------------------------------

void Simulation::RunSubstep() {
  const int sub = static_cast<int>(now_ % options_.substeps_per_tick);
  if (sub == 0 && faulty_) InjectFaults();
  if (sub == 0 && !faulty_) ReviveNamedDeletedNodes();
  for (auto& n : nodes_) {
    if (ok() && n->core && n->phase == sub) {
      n->core->Tick();
      Process(n.get());
    }
  }
  if (ok()) DeliverDue();
  if (ok()) StepClients();
  ++now_;
}

SimulationResult Simulation::Run() {
  const uint64_t faulty_end = static_cast<uint64_t>(options_.ticks) * options_.substeps_per_tick;
  while (ok() && now_ < faulty_end) RunSubstep();
  // Heal everything, restart every replica, and let the group converge.
  faulty_ = false;
  blocked_.clear();
  Trace([] { return std::string("heal all, restart all"); });
  for (SimNode* n : LiveNodes()) {
    if (ok() && !n->core) Start(n);
  }
  const uint64_t deadline =
      now_ + static_cast<uint64_t>(options_.max_convergence_ticks) * options_.substeps_per_tick;
  while (ok() && now_ < deadline && !Converged()) RunSubstep();
  if (ok() && !Converged()) {
    std::string state;
    for (auto& n : nodes_) {
      StrAppend(&state, "\n  ", n->core ? n->core->DebugString() : StrCat(n->id, " down"));
    }
    Fail(StrCat("no convergence within ", options_.max_convergence_ticks, " ticks:", state));
  }
  if (ok()) FinalChecks();
  for (const std::string& line : trace_) StrAppend(&result_.trace, line, "\n");
  return result_;
}

}  // namespace

SimulationResult RunRaftSimulation(const SimulationOptions& options) {
  return Simulation(options).Run();
}

}  // namespace basalt
