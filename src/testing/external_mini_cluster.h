#pragma once

// ExternalMiniCluster: a cluster of real basalt-master and basalt-tserver processes on loopback
// ports in a temporary directory, for the tests in tests/ (DESIGN.md section 8, issue 6 item 4).
//
//   ExternalMiniCluster cluster;             // 1 master, 3 tablet servers by default
//   ASSERT_OK(cluster.Start());              // returns once every tablet server is live
//   auto stub = pb::MasterService::NewStub(cluster.master_channel());
//   cluster.tablet_server(1)->Kill();        // kill -9
//   ASSERT_OK(cluster.tablet_server(1)->Restart());
//
// Layout: <root>/master-<i>/ and <root>/ts-<i>/, each an ExternalDaemon directory (data/,
// info.json, <name>.log). Every daemon's port is reserved by the first Start()
// (reserved_port.h) and kept for the cluster's life, so addresses (and --master_addresses) stay
// valid across restarts.
//
// With options.network_namespaces each daemon runs on a "host" of its own instead: a network
// namespace on a private bridge (netns.h), bound to the host's address (masters on port 7051,
// tablet servers on 7050), so that a test can cut the network between daemons with CutOneWay(),
// Partition() and Isolate(), and restore it with Heal(). The test process reaches every host
// through the bridge; no cut ever involves it.
//
// Flags: masters get --tserver_unresponsive_timeout_ms (options); tablet servers get
// --master_addresses and --heartbeat_interval_ms; then each kind's extra flags from the options.
//
// Lifecycle: construct → Start() → (daemon operations) → Shutdown() or the destructor, which
// shuts down whatever still runs (SIGTERM, SIGKILL after the shutdown timeout; never leaking a
// process, even when a test fails midway; see also PR_SET_PDEATHSIG in external_daemon.h) and
// removes the root directory if the cluster created it, unless set_keep_root_dir(true) was called
// or BASALT_KEEP_TEST_DATA=1 is set in the environment.
//
// Not thread-safe; the caller serializes. After the first Start() the channel accessors,
// master_addresses() and the daemons' constant accessors (ExternalDaemon) may be used from any
// thread: they read state that never changes afterwards, except that AddTabletServer() appends a
// daemon and its channel (call it while no other thread uses the cluster).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "testing/external_daemon.h"
#include "testing/netns.h"
#include "testing/reserved_port.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace basalt {

namespace pb {
class ListTabletServersResponsePB;
class ListTabletsResponsePB;
class TabletStatusPB;
}  // namespace pb

struct ExternalMiniClusterOptions {
  // With more than one, every master gets --master_addresses naming all of them (they form one
  // catalog group) and the masters are started at once.
  int num_masters = 1;
  int num_tablet_servers = 3;
  // Empty: a fresh directory "basalt-cluster-XXXXXX" under $TEST_TMPDIR (or /tmp), removed by the
  // destructor. A given directory is created if missing and never removed.
  std::string root_dir;
  // Where basalt-master and basalt-tserver are. Empty: $BASALT_BIN_DIR if set, else the build's
  // bin directory (compile definition BASALT_BIN_DIR).
  std::string bin_dir;
  std::string master_exe = "basalt-master";
  std::string tserver_exe = "basalt-tserver";
  std::vector<std::string> extra_master_flags;
  std::vector<std::string> extra_tserver_flags;
  int heartbeat_interval_ms = 200;
  // Passed to masters, so a killed tablet server stops counting as live quickly.
  int tserver_unresponsive_timeout_ms = 3000;
  absl::Duration daemon_start_timeout = absl::Seconds(60);
  absl::Duration daemon_shutdown_timeout = absl::Seconds(15);
  // Start() and Restart() wait until the master lists every tablet server as live. Turn off for
  // stand-in daemons that do not register.
  bool wait_for_tablet_servers = true;
  absl::Duration registration_timeout = absl::Seconds(30);
  // Timeout of each RPC the harness makes.
  absl::Duration rpc_timeout = absl::Seconds(10);
  // Each daemon on a host of its own (a network namespace, see the class comment), for tests
  // that cut the network. Needs root and the `ip` program: where namespaces cannot be made,
  // Start() returns FAILED_PRECONDITION (ExternalMiniCluster::NetworkNamespacesAvailable() tells
  // beforehand, so that a test can skip).
  bool network_namespaces = false;
};

// Who leads a tablet, as its replicas report it.
struct TabletLeader {
  int ts_index = -1;
  std::string uuid;
  uint64_t term = 0;
};

class ExternalMiniCluster {
 public:
  explicit ExternalMiniCluster(ExternalMiniClusterOptions options = {});
  ~ExternalMiniCluster();
  ExternalMiniCluster(const ExternalMiniCluster&) = delete;
  ExternalMiniCluster& operator=(const ExternalMiniCluster&) = delete;

  // Reserves ports (first call), starts the masters, then the tablet servers, and (unless turned
  // off) waits until all tablet servers are live. On error everything started is killed.
  // INVALID_ARGUMENT for bad options; FAILED_PRECONDITION if network_namespaces is set but
  // namespaces cannot be made here; the daemon's error (with its log tail) otherwise.
  absl::Status Start();
  // Shuts every running daemon down, all at once (SIGTERM, then SIGKILL after the shutdown
  // timeout); returns the first error.
  absl::Status Shutdown();
  // SIGKILLs every running daemon.
  void KillAll();
  // Shutdown(), then starts every daemon again and waits for registration as Start() does.
  absl::Status Restart();
  // Adds one more tablet server to the running cluster: reserves a port, starts ts-<n> (n =
  // num_tablet_servers() before the call) with the flags the others got and, unless
  // wait_for_tablet_servers is off, waits until the master lists it as live. Returns its index.
  // REQUIRES: Start() was called. The daemon's start error (with its log tail) or
  // DEADLINE_EXCEEDED if it does not register in time; the daemon stays in the cluster either
  // way (a later Restart() starts it again).
  absl::StatusOr<int> AddTabletServer();
  // Starts one more master, with --master_addresses naming the masters so far and itself (so it
  // waits to join the running group: `basalt master add`), and appends its address to
  // master_addresses() (not safe while other threads read it). Returns its index.
  absl::StatusOr<int> AddMaster();

  int num_masters() const { return static_cast<int>(masters_.size()); }
  int num_tablet_servers() const { return static_cast<int>(tservers_.size()); }
  // REQUIRES: 0 <= idx < num_*().
  ExternalDaemon* master(int idx = 0) const { return masters_[idx].get(); }
  ExternalDaemon* tablet_server(int idx) const { return tservers_[idx].get(); }
  // The index of the tablet server with this uuid, or -1.
  int TabletServerIndexByUuid(const std::string& uuid) const;
  // "host:port,host:port" of the masters.
  const std::string& master_addresses() const { return master_addresses_; }
  const std::string& root_dir() const { return root_dir_; }
  const ExternalMiniClusterOptions& options() const { return options_; }
  void set_keep_root_dir(bool keep) { keep_root_dir_ = keep; }

  // Channels to the daemons (created by the first Start(), with short reconnect backoff so a
  // restarted daemon is reached again quickly). REQUIRES: Start() was called.
  std::shared_ptr<grpc::Channel> master_channel(int idx = 0);
  std::shared_ptr<grpc::Channel> tserver_channel(int idx);

  // OK if every daemon that the harness did not stop is still running; otherwise INTERNAL
  // listing each daemon that died by itself, with its exit status and log tail.
  absl::Status CheckNoDaemonDied();

  // MasterService.ListTabletServers on the leader master (the first running, unpaused master
  // that answers it).
  absl::Status ListTabletServers(pb::ListTabletServersResponsePB* resp);
  // The index of the running master that serves catalog requests now; UNAVAILABLE if none does.
  absl::StatusOr<int> LeaderMasterIndex();
  // Polls LeaderMasterIndex until one serves.
  absl::StatusOr<int> WaitForLeaderMaster(absl::Duration timeout);
  // Waits until the leader master lists exactly `n` live tablet servers. DEADLINE_EXCEEDED with
  // the last listing and master 0's log tail.
  absl::Status WaitForTabletServerCount(int n, absl::Duration timeout);

  // TabletServerService.ListTablets on tablet server `ts_idx`.
  absl::Status ListTablets(int ts_idx, pb::ListTabletsResponsePB* resp);
  // Asks every running, unpaused tablet server for `tablet_id` and returns the replica that
  // reports itself RUNNING and LEADER (the highest term if several do). NOT_FOUND if none does.
  absl::StatusOr<TabletLeader> FindTabletLeader(const std::string& tablet_id);
  // Polls FindTabletLeader until a leader with term >= min_term that is not on tablet server
  // `exclude_ts` (-1: none) appears.
  absl::StatusOr<TabletLeader> WaitForTabletLeader(const std::string& tablet_id,
                                                   absl::Duration timeout, uint64_t min_term = 0,
                                                   int exclude_ts = -1);
  // Waits until every running, unpaused tablet server that should host `tablet_id` (those in
  // `ts_indexes`) reports it RUNNING.
  absl::Status WaitForTabletRunning(const std::string& tablet_id,
                                    const std::vector<int>& ts_indexes, absl::Duration timeout);

  // The bin directory the options resolve to (see ExternalMiniClusterOptions::bin_dir).
  static std::string ResolveBinDir(const std::string& configured);

  // ---- Network partitions ----
  // Each REQUIRES options.network_namespaces and Start() (FAILED_PRECONDITION otherwise), and
  // returns INVALID_ARGUMENT for a daemon of another cluster or a cut of a daemon from itself,
  // and the `ip` program's error if a rule cannot be changed. Cuts last until Heal(), across
  // daemon restarts; they are between the daemons' hosts, never between a host and the test
  // process, so the test can still ask an isolated daemon anything (and send it writes).

  // OK if network namespaces can be made here (root, `ip`, `ip netns add`); FAILED_PRECONDITION
  // saying why not. Makes and removes a probe namespace.
  static absl::Status NetworkNamespacesAvailable();
  // Drops every packet `from`'s host sends to `to`'s host: `to` hears nothing from `from`. (New
  // TCP connections then fail both ways, since a handshake needs both directions; on connections
  // already open, what `to` sends still reaches `from`, but no reply comes back.)
  absl::Status CutOneWay(const ExternalDaemon* from, const ExternalDaemon* to);
  // Cuts both ways between every daemon of `side_a` and every daemon of `side_b`; daemons on the
  // same side keep talking. A daemon on neither side is not touched.
  absl::Status Partition(const std::vector<const ExternalDaemon*>& side_a,
                         const std::vector<const ExternalDaemon*>& side_b);
  // Partition({daemon}, every other daemon the cluster has now).
  absl::Status Isolate(const ExternalDaemon* daemon);
  // Removes every cut; returns the first error (and still tries the others).
  absl::Status Heal();
  // The daemons' network; null without options.network_namespaces (or before Start()).
  VirtualNetwork* network() const { return network_.get(); }

 private:
  // Where a daemon listens: a reserved loopback port, or its own host (network_namespaces).
  struct Endpoint {
    std::string host;
    uint16_t port = 0;
    std::string netns_path;  // Empty on loopback.
    int net_host = -1;       // The host's index in network_, or -1.
  };
  // Ports the daemons listen on in their own namespaces (nothing else listens there).
  static constexpr uint16_t kNamespaceMasterPort = 7051;
  static constexpr uint16_t kNamespaceTserverPort = 7050;

  absl::Status Prepare();
  absl::Status StartDaemons();
  std::vector<std::string> MasterFlags() const;
  std::vector<std::string> TserverFlags() const;
  // A loopback port reserved into *ports, or a new host named `name` listening on
  // `namespace_port`.
  absl::StatusOr<Endpoint> NewEndpoint(const std::string& name, uint16_t namespace_port,
                                       std::vector<ReservedPort>* ports);
  // Creates the daemon and remembers its host.
  std::unique_ptr<ExternalDaemon> NewDaemon(const std::string& name, const std::string& exe,
                                            const Endpoint& endpoint,
                                            std::vector<std::string> flags);
  // The host of `daemon`; FAILED_PRECONDITION without namespaces, INVALID_ARGUMENT for a daemon
  // of another cluster.
  absl::StatusOr<int> HostOf(const ExternalDaemon* daemon) const;
  // The replica of `tablet_id` on tablet server `ts_idx`, if it reports one.
  absl::StatusOr<pb::TabletStatusPB> GetReplicaStatus(int ts_idx, const std::string& tablet_id);
  std::string AllLogTails(int max_lines) const;

  const ExternalMiniClusterOptions options_;
  std::string root_dir_;
  bool created_root_dir_ = false;
  bool keep_root_dir_ = false;
  bool prepared_ = false;
  std::vector<ReservedPort> master_ports_;
  std::vector<ReservedPort> tserver_ports_;
  std::string master_addresses_;
  std::vector<std::unique_ptr<ExternalDaemon>> masters_;
  std::vector<std::unique_ptr<ExternalDaemon>> tservers_;
  std::vector<std::shared_ptr<grpc::Channel>> master_channels_;
  std::vector<std::shared_ptr<grpc::Channel>> tserver_channels_;
  // With network_namespaces: the hosts, and each daemon's host index. Destroyed after the
  // daemons (a namespace a process still runs in would outlive its deletion).
  std::unique_ptr<VirtualNetwork> network_;
  std::map<const ExternalDaemon*, int> net_hosts_;
};

}  // namespace basalt
