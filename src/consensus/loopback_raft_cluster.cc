#include "consensus/loopback_raft_cluster.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include <glog/logging.h>

#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

// ---- RecordingStateMachine ------------------------------------------------------------------

absl::Status RecordingStateMachine::Apply(const LogEntry& entry) {
  absl::MutexLock l(&mu_);
  if (entry.index != crcs_.size() + 1 && error_.empty()) {
    error_ = StrCat("applied index ", entry.index, " after ", crcs_.size());
  }
  crcs_.push_back(crc32c::Value(entry.data));
  return absl::OkStatus();
}

uint64_t RecordingStateMachine::applied_index() const {
  absl::MutexLock l(&mu_);
  return crcs_.size();
}

std::optional<uint32_t> RecordingStateMachine::crc_at(uint64_t index) const {
  absl::MutexLock l(&mu_);
  if (index == 0 || index > crcs_.size()) return std::nullopt;
  return crcs_[index - 1];
}

bool RecordingStateMachine::WaitForApplied(uint64_t index, absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto reached = [this, index]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return crcs_.size() >= index; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

std::string RecordingStateMachine::error() const {
  absl::MutexLock l(&mu_);
  return error_;
}

// ---- LoopbackRaftCluster --------------------------------------------------------------------

LoopbackRaftCluster::LoopbackRaftCluster(const LoopbackRaftClusterOptions& options)
    : options_(options), env_(options.env != nullptr ? options.env : Env::Default()) {
  servers_.resize(options.num_servers);
  for (int i = 0; i < options.num_servers; ++i) {
    servers_[i].id = StrCat("server-", i);
    ids_.push_back(servers_[i].id);
  }
}

absl::StatusOr<std::unique_ptr<LoopbackRaftCluster>> LoopbackRaftCluster::Start(
    const LoopbackRaftClusterOptions& options) {
  std::unique_ptr<LoopbackRaftCluster> c(new LoopbackRaftCluster(options));
  for (int i = 0; i < c->num_servers(); ++i) {
    BASALT_RETURN_IF_ERROR(c->StartTransport(i, "127.0.0.1:0"));
  }
  for (int i = 0; i < c->num_servers(); ++i) BASALT_RETURN_IF_ERROR(c->StartNodes(i));
  return c;
}

LoopbackRaftCluster::~LoopbackRaftCluster() {
  for (int i = 0; i < num_servers(); ++i) {
    if (alive(i)) KillServer(i);
  }
}

absl::Status LoopbackRaftCluster::StartTransport(int server, const std::string& bind_address) {
  Server& s = servers_[server];
  GrpcTransportOptions o;
  o.server_id = s.id;
  o.bind_address = bind_address;
  o.heartbeat_coalesce_ms = options_.heartbeat_coalesce_ms;
  s.transport = std::make_unique<GrpcTransport>(o);
  BASALT_RETURN_IF_ERROR(s.transport->Start());
  s.address = StrCat("127.0.0.1:", s.transport->port());
  // Tell everybody (already started) where this server is, and this server where they are.
  for (Server& other : servers_) {
    if (&other == &s || other.transport == nullptr) continue;
    BASALT_RETURN_IF_ERROR(other.transport->AddPeer(s.id, s.address));
    BASALT_RETURN_IF_ERROR(s.transport->AddPeer(other.id, other.address));
  }
  return absl::OkStatus();
}

absl::Status LoopbackRaftCluster::StartNodes(int server) {
  Server& s = servers_[server];
  s.sms.clear();
  s.nodes.clear();
  for (int g = 0; g < options_.num_groups; ++g) {
    RaftNodeOptions o;
    o.group_id = StrCat("group-", g);
    o.peer_id = s.id;
    const std::string dir = JoinPath(JoinPath(options_.root_dir, s.id), o.group_id);
    BASALT_RETURN_IF_ERROR(env_->CreateDirs(dir));
    o.wal_dir = JoinPath(dir, "wal");
    o.metadata_path = JoinPath(dir, "cmeta");
    o.initial_config.voters = ids_;
    o.tick_interval_ms = options_.tick_interval_ms;
    if (options_.election_ticks > 0) o.raft.election_ticks = options_.election_ticks;
    o.log.force_fsync = options_.force_fsync;
    o.seed = options_.seed * 1000003 + server * 101 + g + 1;
    s.sms.push_back(std::make_unique<RecordingStateMachine>());
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RaftNode> node,
                            RaftNode::Open(env_, o, s.transport.get(), s.sms.back().get()));
    BASALT_RETURN_IF_ERROR(node->Start());
    s.nodes.push_back(std::move(node));
  }
  s.alive = true;
  return absl::OkStatus();
}

int LoopbackRaftCluster::WaitForLeader(int group, absl::Duration timeout, uint64_t min_term) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int leader = -1;
    bool agreed = true;
    for (int i = 0; i < num_servers() && agreed; ++i) {
      if (!alive(i)) continue;
      const RaftNode* n = node(i, group);
      if (n->role() == RaftCore::Role::kLeader && n->term() >= min_term) {
        agreed = leader < 0;
        leader = i;
      }
    }
    for (int i = 0; i < num_servers() && agreed && leader >= 0; ++i) {
      if (alive(i) && node(i, group)->leader_id() != servers_[leader].id) agreed = false;
    }
    if (agreed && leader >= 0) return leader;
    // Polling the nodes' published state, bounded by the deadline.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return -1;
}

void LoopbackRaftCluster::KillServer(int server) {
  Server& s = servers_[server];
  for (auto& node : s.nodes) node->Shutdown();
  s.transport.reset();  // Shuts it down. The stopped nodes never touch it again.
  s.alive = false;
}

absl::Status LoopbackRaftCluster::RestartServer(int server) {
  Server& s = servers_[server];
  if (s.alive) return absl::FailedPreconditionError(StrCat(s.id, " is running"));
  s.nodes.clear();
  BASALT_RETURN_IF_ERROR(StartTransport(server, s.address));
  return StartNodes(server);
}

// ---- ProposalLoad ---------------------------------------------------------------------------

ProposalLoad::ProposalLoad(RaftNode* node, int concurrency, size_t entry_bytes, int64_t max_entries,
                           bool record)
    : node_(node),
      concurrency_(concurrency),
      entry_bytes_(std::max<size_t>(entry_bytes, sizeof(int64_t))),
      max_entries_(max_entries),
      record_(record) {}

ProposalLoad::~ProposalLoad() {
  Stop();
  // A completion after destruction would touch freed memory: better to stop loudly.
  CHECK(Wait(absl::Minutes(2))) << "proposals still in flight; shut the node down first";
}

void ProposalLoad::Start() {
  {
    absl::MutexLock l(&mu_);
    in_flight_ += concurrency_;
  }
  for (int i = 0; i < concurrency_; ++i) {
    if (!ProposeNext()) {
      absl::MutexLock l(&mu_);
      --in_flight_;
    }
  }
}

void ProposalLoad::Stop() { stopped_.store(true); }

bool ProposalLoad::ProposeNext() {
  if (stopped_.load(std::memory_order_relaxed)) return false;
  const int64_t seq = issued_.fetch_add(1, std::memory_order_relaxed);
  if (max_entries_ >= 0 && seq >= max_entries_) return false;
  std::string data(entry_bytes_, 'x');
  std::memcpy(data.data(), &seq, sizeof(seq));
  const uint32_t crc = crc32c::Value(data);
  node_->Propose(std::move(data),
                 [this, crc](absl::StatusOr<uint64_t> index) { OnDone(crc, std::move(index)); });
  return true;
}

void ProposalLoad::OnDone(uint32_t crc, absl::StatusOr<uint64_t> index) {
  if (index.ok()) {
    acked_count_.fetch_add(1, std::memory_order_relaxed);
    if (record_) {
      absl::MutexLock l(&mu_);
      acked_[*index] = crc;
    }
    if (ProposeNext()) return;  // The slot goes on.
  } else {
    failed_count_.fetch_add(1, std::memory_order_relaxed);
  }
  absl::MutexLock l(&mu_);
  --in_flight_;
}

bool ProposalLoad::Wait(absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

std::map<uint64_t, uint32_t> ProposalLoad::acked() const {
  absl::MutexLock l(&mu_);
  return acked_;
}

}  // namespace basalt
