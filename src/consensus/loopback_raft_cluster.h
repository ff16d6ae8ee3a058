#pragma once

// LoopbackRaftCluster: N servers in one process, each a GrpcTransport serving on a loopback
// ephemeral port with one RaftNode per Raft group (real threads, real gRPC, real WAL), for the
// gRPC transport's tests and bench/raft_bench. Servers can be killed (nodes and gRPC server shut
// down, files kept) and restarted on the same port from their files.
//
// Also: RecordingStateMachine (records a CRC of every applied entry) and ProposalLoad (a
// closed-loop load keeping many proposals in flight against one node).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "consensus/grpc_transport.h"
#include "consensus/raft_node.h"
#include "consensus/state_machine.h"

namespace basalt {

// Records crc32c(data) of every applied entry by index and checks that indexes arrive in order.
// Thread-safe.
class RecordingStateMachine : public StateMachine {
 public:
  absl::Status Apply(const LogEntry& entry) override ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t DurableIndex() const override { return 0; }  // Replays the whole log on restart.

  uint64_t applied_index() const ABSL_LOCKS_EXCLUDED(mu_);
  // CRC of the entry applied at `index`, if applied.
  std::optional<uint32_t> crc_at(uint64_t index) const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until applied_index() >= index; false on timeout.
  bool WaitForApplied(uint64_t index, absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);
  // Empty, or the first ordering violation seen.
  std::string error() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::vector<uint32_t> crcs_ ABSL_GUARDED_BY(mu_);  // crcs_[i] is the entry at index i + 1.
  std::string error_ ABSL_GUARDED_BY(mu_);
};

struct LoopbackRaftClusterOptions {
  int num_servers = 3;
  int num_groups = 1;
  Env* env = nullptr;              // nullptr: Env::Default().
  std::string root_dir;            // Each server's WALs and metadata go under it.
  int tick_interval_ms = 0;        // RaftNodeOptions::tick_interval_ms (0: the flag).
  int election_ticks = 0;          // 0: RaftOptions' default.
  int heartbeat_coalesce_ms = -1;  // GrpcTransportOptions (< 0: the flag).
  bool force_fsync = true;
  uint64_t seed = 1;
};

// Server ids are "server-<i>", group ids "group-<g>"; every group has every server as a voter.
// Not thread-safe; the caller serializes (the nodes and transports themselves are thread-safe).
class LoopbackRaftCluster {
 public:
  // Starts every server. Errors of the transports and nodes.
  static absl::StatusOr<std::unique_ptr<LoopbackRaftCluster>> Start(
      const LoopbackRaftClusterOptions& options);
  ~LoopbackRaftCluster();

  int num_servers() const { return static_cast<int>(servers_.size()); }
  bool alive(int server) const { return servers_[server].alive; }
  // REQUIRES: alive(server).
  RaftNode* node(int server, int group) const { return servers_[server].nodes[group].get(); }
  // REQUIRES: alive(server).
  GrpcTransport* transport(int server) const { return servers_[server].transport.get(); }
  // The state machine of the node's current incarnation.
  RecordingStateMachine* state_machine(int server, int group) const {
    return servers_[server].sms[group].get();
  }

  // Waits until exactly one live server leads `group` in a term >= min_term and every live
  // replica knows it; returns its index, or -1 after `timeout`.
  int WaitForLeader(int group, absl::Duration timeout, uint64_t min_term = 0) const;
  // Shuts down the server's nodes, then destroys its transport (gRPC server and senders); its
  // files and state machines stay.
  void KillServer(int server);
  // Restarts a killed server on its old port from its files. Errors of the transport and nodes.
  absl::Status RestartServer(int server);

 private:
  struct Server {
    PeerId id;
    std::string address;  // "127.0.0.1:<port>", fixed at the first start.
    std::unique_ptr<GrpcTransport> transport;
    std::vector<std::unique_ptr<RecordingStateMachine>> sms;
    std::vector<std::unique_ptr<RaftNode>> nodes;
    bool alive = false;
  };

  explicit LoopbackRaftCluster(const LoopbackRaftClusterOptions& options);
  absl::Status StartTransport(int server, const std::string& bind_address);
  absl::Status StartNodes(int server);

  const LoopbackRaftClusterOptions options_;
  Env* const env_;
  std::vector<Server> servers_;
  std::vector<PeerId> ids_;
};

// A closed loop of proposals against one node: Start() proposes `concurrency` entries, and each
// successful completion proposes the next, until `max_entries` were issued or Stop(). A failed
// proposal (not the leader any more, node shut down) ends its slot. Entries are unique: an 8-byte
// sequence number followed by filler up to `entry_bytes`.
// Thread-safe; completions run on the node's worker thread.
class ProposalLoad {
 public:
  // `record`: keep acked() (costs a map insertion per entry).
  ProposalLoad(RaftNode* node, int concurrency, size_t entry_bytes, int64_t max_entries,
               bool record = true);
  // Stop(), then waits for the proposals in flight (CHECK-fails after two minutes: a pending
  // proposal on a live node cut off from the group's leader does not complete; shut the node
  // down first).
  ~ProposalLoad();

  void Start();
  // Issues no new proposals.
  void Stop();
  // Waits until no proposal is in flight; false after `timeout`.
  bool Wait(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  int64_t num_acked() const { return acked_count_.load(std::memory_order_relaxed); }
  int64_t num_failed() const { return failed_count_.load(std::memory_order_relaxed); }
  // Index -> crc32c(data) of every acknowledged (applied on the proposing node) entry.
  std::map<uint64_t, uint32_t> acked() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Proposes the next entry in a slot counted in in_flight_; false if none is left to issue.
  bool ProposeNext();
  void OnDone(uint32_t crc, absl::StatusOr<uint64_t> index) ABSL_LOCKS_EXCLUDED(mu_);

  RaftNode* const node_;  // Borrowed; outlives the load.
  const int concurrency_;
  const size_t entry_bytes_;
  const int64_t max_entries_;
  const bool record_;

  std::atomic<int64_t> issued_{0};  // Sequence numbers handed out.
  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> acked_count_{0};
  std::atomic<int64_t> failed_count_{0};

  mutable absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, uint32_t> acked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
