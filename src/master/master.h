#pragma once

// Master: one basalt-master process's server (docs/master.md, docs/cluster.md). Owns the data
// directory's instance (uuid and lock), the tablet server manager, the catalog manager, the
// system catalog (RocksDB + its Raft group), and one gRPC server carrying MasterService and the
// catalog group's ConsensusService (GrpcTransport registered on it).
//
// One master (master_addresses empty or a single entry): the catalog's Raft group has this master
// as its only voter. Several masters (master_addresses lists all of them, this one included,
// found by its advertised address): the group's voters are every master (master_peers.h); one
// leads and serves catalog requests, the others answer NOT_THE_LEADER_MASTER with the leader's
// address, apply the same catalog entries, and process tablet server heartbeats too so that a
// new leader knows the cluster at once.
//
// Lifecycle: Start() -> Shutdown() (or the destructor). With one master Start() returns once the
// master leads its catalog and serves; with several, once it serves (the masters elect a leader
// among themselves; the first start of a group waits until every master answered). Restarting
// from the same directory finds the same uuid, catalog and peers.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/env.h"
#include "common/metrics.h"
#include "consensus/raft_core.h"
#include "master/master_peers.h"
#include "rpc/net_util.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace basalt {

namespace pb {
class CatalogSnapshotPB;
class MasterPeersPB;
}  // namespace pb

class CatalogManager;
class GrpcTransport;
class ServerInstance;
class SysCatalog;
class TsAdminClient;
class TsManager;
class Webserver;

struct MasterOptions {
  Env* env = nullptr;       // nullptr: Env::Default().
  Clock* clock = nullptr;   // nullptr: Clock::Default(). Liveness and task timing.
  std::string fs_data_dir;  // Required.
  std::string fs_wal_dir;   // Empty: fs_data_dir.
  std::string rpc_bind_address = "127.0.0.1:0";
  // Empty: the bound address (the host name when bound to a wildcard address).
  std::string rpc_advertised_address;
  // Comma-separated addresses of every master, this one included; empty means this one alone.
  std::string master_addresses;
  // Borrowed (must outlive the master); nullptr: gRPC to the tablet servers.
  TsAdminClient* ts_admin_client = nullptr;
  int64_t tserver_unresponsive_timeout_ms = 0;  // <= 0: the flag.
  int catalog_tick_interval_ms = 0;             // <= 0: the flag.
  uint64_t placement_seed = 0;                  // 0: time-derived.
  bool start_reconciler = true;  // Tests that drive ReconcileOnce() themselves turn it off.
  absl::Duration leader_wait_timeout = absl::Seconds(60);
  // The web server's port (docs/web.md): 0 picks a free port, < 0 disables it.
  int webserver_port = -1;
  // Empty: the host of rpc_bind_address.
  std::string webserver_bind_host;
};

class Master {
 public:
  // Opens the directory, loads the catalog, serves, and waits to lead the catalog. Errors:
  // INVALID_ARGUMENT for bad options (no data dir, bad addresses, this master not among
  // master_addresses, master_addresses different from the stored peers); the directory's,
  // catalog's (DATA_LOSS) and Raft errors; UNAVAILABLE if the port cannot be bound;
  // DEADLINE_EXCEEDED if a single master does not become leader, or the other masters do not
  // answer when a group first forms, within leader_wait_timeout.
  static absl::StatusOr<std::unique_ptr<Master>> Start(MasterOptions options);
  ~Master();

  Master(const Master&) = delete;
  Master& operator=(const Master&) = delete;

  // Stops serving and every thread; idempotent.
  void Shutdown();

  const std::string& uuid() const;
  int rpc_port() const { return rpc_port_; }
  // The bound web server port; 0 when disabled.
  int webserver_port() const;
  // The advertised address (what ListMasters returns).
  const HostPort& rpc_address() const { return rpc_address_; }
  bool is_leader() const;
  // Every master of the catalog group with its address (just this one for a single master); empty
  // until Start() formed the group.
  std::vector<MasterPeer> peers() const ABSL_LOCKS_EXCLUDED(mu_);
  // The masters named by master_addresses (empty for a single master). Constant after Start()
  // parsed them, before serving.
  const std::vector<HostPort>& configured_masters() const { return configured_masters_; }
  // This master's Raft role in the catalog group; kFollower until the catalog is open.
  RaftCore::Role role() const;
  // Whether the catalog is open (the role means something).
  bool catalog_open() const { return catalog_open_.load(); }

  CatalogManager* catalog_manager() const { return catalog_manager_.get(); }
  TsManager* ts_manager() const { return ts_manager_.get(); }
  SysCatalog* sys_catalog() const { return sys_catalog_.get(); }
  // Whether this master waits to join a running group (no catalog image installed yet).
  bool joining() const;

  // `basalt master add|remove` (MasterService AddMaster / RemoveMaster), on the leader: see
  // proto/master.proto and docs/master.md "Adding and removing masters". The uuid of the master
  // added or removed.
  absl::StatusOr<std::string> AddMaster(const HostPort& address)
      ABSL_LOCKS_EXCLUDED(membership_mu_);
  absl::StatusOr<std::string> RemoveMaster(const std::string& uuid,
                                           const std::optional<HostPort>& address)
      ABSL_LOCKS_EXCLUDED(membership_mu_);
  // InstallCatalogSnapshot from the leader master `leader_uuid`, addressed to `dest_uuid`.
  absl::Status InstallCatalogSnapshot(const std::string& leader_uuid, const std::string& dest_uuid,
                                      const pb::CatalogSnapshotPB& image);

 private:
  explicit Master(MasterOptions options);
  absl::Status Init();
  // Decides the catalog group's voters (master_peers.h) and tells the transport their addresses.
  // Sets joining_ when this master joins a running group (no voters then).
  absl::StatusOr<std::vector<std::string>> SetUpPeers();
  // ---- Membership of the catalog group (master_membership.cc) ----
  // on_masters: a committed list of masters (catalog batch, image or the stored one).
  void OnMastersChanged(const pb::MasterPeersPB& masters) ABSL_LOCKS_EXCLUDED(mu_);
  // peers() without `uuid`.
  std::vector<MasterPeer> PeersWithout(const std::string& uuid) const ABSL_LOCKS_EXCLUDED(mu_);
  // send_snapshot: InstallCatalogSnapshot to `peer_uuid`.
  absl::Status SendCatalogSnapshot(const std::string& peer_uuid, const pb::CatalogSnapshotPB& image)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status StartRpcServer();
  // Sets rpc_address_ from the options, `bind` and rpc_port_.
  absl::Status SetRpcAddress(const HostPort& bind);
  void RegisterMetrics();
  absl::Status StartWebserver();
  std::string TablesPage() const;
  std::string TabletServersPage() const;
  std::string UnhealthyTabletsPage() const;

  MasterOptions options_;
  Env* env_;
  std::unique_ptr<ServerInstance> instance_;
  std::unique_ptr<TsAdminClient> owned_admin_client_;
  std::unique_ptr<TsManager> ts_manager_;
  std::unique_ptr<CatalogManager> catalog_manager_;
  std::unique_ptr<GrpcTransport> transport_;
  std::unique_ptr<SysCatalog> sys_catalog_;
  // Set (release) once sys_catalog_ is open: RPC handlers run before that.
  std::atomic<bool> catalog_open_{false};
  mutable absl::Mutex mu_;
  std::vector<MasterPeer> peers_ ABSL_GUARDED_BY(mu_);
  // One add or remove at a time on this master.
  absl::Mutex membership_mu_;
  std::vector<HostPort> configured_masters_;  // Set before the RPC server starts.
  std::unique_ptr<grpc::Service> master_service_;
  std::unique_ptr<grpc::Server> server_;
  int rpc_port_ = 0;
  HostPort rpc_address_;
  bool shut_down_ = false;
  std::vector<CallbackGaugeHandle> metric_handles_;
  std::unique_ptr<Webserver> webserver_;
  std::atomic<int> webserver_port_{0};  // Read by RPC handlers, which run before it is started.
};

}  // namespace basalt
