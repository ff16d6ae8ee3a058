#pragma once

// Master: one basalt-master process's server (docs/master.md, docs/cluster.md). Owns the data
// directory's instance (uuid and lock), the tablet server manager, the catalog manager, the
// system catalog (RocksDB + its Raft group), and one gRPC server carrying MasterService and the
// catalog group's ConsensusService (GrpcTransport registered on it).
//
// Only a single master is supported for now: the catalog's Raft group has this master as its
// only voter. MasterOptions::master_addresses may name at most one master (INVALID_ARGUMENT
// otherwise).
//
// Lifecycle: Start() (returns once the master leads its catalog and serves) -> Shutdown() (or the
// destructor). Restarting from the same directory finds the same uuid and catalog.
//
// Thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/env.h"
#include "common/metrics.h"
#include "rpc/net_util.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace basalt {

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
  // Comma-separated; empty or exactly one entry (multi-master is not supported yet).
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
  // INVALID_ARGUMENT for bad options (several masters, no data dir, bad addresses); the
  // directory's, catalog's (DATA_LOSS) and Raft errors; UNAVAILABLE if the port cannot be bound;
  // DEADLINE_EXCEEDED if this master does not become leader in time.
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

  CatalogManager* catalog_manager() const { return catalog_manager_.get(); }
  TsManager* ts_manager() const { return ts_manager_.get(); }
  SysCatalog* sys_catalog() const { return sys_catalog_.get(); }

 private:
  explicit Master(MasterOptions options);
  absl::Status Init();
  absl::Status StartRpcServer();
  void RegisterMetrics();
  absl::Status StartWebserver();
  std::string TablesPage() const;
  std::string TabletServersPage() const;

  MasterOptions options_;
  Env* env_;
  std::unique_ptr<ServerInstance> instance_;
  std::unique_ptr<TsAdminClient> owned_admin_client_;
  std::unique_ptr<TsManager> ts_manager_;
  std::unique_ptr<CatalogManager> catalog_manager_;
  std::unique_ptr<GrpcTransport> transport_;
  std::unique_ptr<SysCatalog> sys_catalog_;
  std::unique_ptr<grpc::Service> master_service_;
  std::unique_ptr<grpc::Server> server_;
  int rpc_port_ = 0;
  HostPort rpc_address_;
  bool shut_down_ = false;
  std::vector<CallbackGaugeHandle> metric_handles_;
  std::unique_ptr<Webserver> webserver_;
};

}  // namespace basalt
