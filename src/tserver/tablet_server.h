#pragma once

// TabletServer: one basalt-tserver (DESIGN.md section 1; docs/cluster.md): the data directory
// (instance, block manager), block cache, hybrid clock, memory budget, maintenance manager, the
// gRPC transport for Raft, the tablet replicas, the scanners, one grpc::Server serving
// TabletServerService, TabletServerAdminService and ConsensusService on one port, a FrameServer
// answering Write, Scan, ScannerKeepAlive and UpdateConsensus on a second one (docs/
// frame_rpc.md), and the heartbeater. The daemon (tserver_main.cc) and in-process tests both drive
// it.
//
// Lifecycle: construct -> Start() -> Shutdown() (or the destructor). Start opens every replica
// found on disk before it serves. A server can be restarted in-process by destroying it and
// starting a new one on the same directories.
//
// Thread-safe after Start().

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "common/metrics.h"
#include "rpc/net_util.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace basalt {

class AddressBook;
class BlockCache;
class BlockGc;
class BlockId;
class BlockManager;
class DiskSpaceMonitor;
class FrameServer;
class BlockScrubber;
class GrpcTransport;
class Heartbeater;
class HybridClock;
class MaintenanceManager;
class MemoryBudget;
class SerialTaskPool;
class ServerLog;
class TabletCopyService;
struct TabletServiceContext;
class ScannerManager;
class ServerInstance;
class TsTabletManager;
class Webserver;

struct TabletServerOptions {
  Env* env = nullptr;  // nullptr: Env::Default().
  // The first data directory: the server's instance file and every tablet's metadata live here,
  // and blocks too. Empty: the first of fs_data_dirs.
  std::string fs_data_dir;
  // Every data directory, by position (BlockManager): blocks are spread over them in per-tablet
  // groups. Empty: {fs_data_dir}. Otherwise its first must be fs_data_dir (if that is set).
  std::vector<std::string> fs_data_dirs;
  std::string fs_wal_dir;  // Empty: fs_data_dir.
  std::string rpc_bind_address = "127.0.0.1:0";
  // Bind with SO_REUSEPORT (gRPC's default on Linux), which test harnesses rely on to keep a
  // daemon's port reserved across restarts. In-process tests turn it off so that no other process
  // can bind the same port and receive a share of the connections.
  bool rpc_reuse_port = true;
  // Empty: the bound address (the host name when bound to 0.0.0.0).
  std::string rpc_advertised_address;
  // The frame RPC port (docs/frame_rpc.md: Write, Scan, ScannerKeepAlive, UpdateConsensus), on
  // the host of rpc_bind_address and advertised with the host of the advertised address: 0 picks
  // a free port, < 0 turns it off (gRPC only).
  int frame_rpc_port = 0;
  // Empty: no heartbeats.
  std::vector<HostPort> master_addresses;
  int heartbeat_interval_ms = 1000;
  // The longest backoff between failed heartbeats to a master (HeartbeaterOptions).
  int heartbeat_max_failure_backoff_ms = 10000;
  int scanner_ttl_ms = 60000;
  uint32_t scanner_default_batch_size_bytes = 1 << 20;
  size_t scanner_max_open = 100000;
  // Raft timing (0: the consensus defaults, --raft_heartbeat_interval_ms and 3 election ticks).
  int raft_tick_interval_ms = 0;
  int raft_election_ticks = 0;
  // Block cache bytes; < 0: --block_cache_capacity_mb.
  int64_t block_cache_capacity_bytes = -1;
  // The memory budget's hard limit; 0: --memory_limit_bytes (default 80% of RAM).
  int64_t memory_limit_bytes = 0;
  // Runs flushes and compactions in the background.
  bool enable_maintenance = true;
  // The web server's port (docs/web.md): 0 picks a free port, < 0 disables it.
  int webserver_port = -1;
  // Empty: the host of rpc_bind_address.
  std::string webserver_bind_host;
};

class TabletServer {
 public:
  explicit TabletServer(TabletServerOptions options);
  ~TabletServer();
  TabletServer(const TabletServer&) = delete;
  TabletServer& operator=(const TabletServer&) = delete;

  // Opens the directories and replicas, then serves. Errors: the directory's (locked by another
  // process, wrong kind, corrupt instance), I/O errors, UNAVAILABLE if the port cannot be bound.
  absl::Status Start();
  // Stops heartbeats, the replicas, the gRPC server and the background threads. Idempotent.
  void Shutdown();

  const std::string& uuid() const;
  int rpc_port() const { return rpc_port_; }
  // The bound web server port; 0 when disabled.
  int webserver_port() const;
  // The address other processes use ("host:port").
  const HostPort& advertised_address() const { return advertised_; }
  // The advertised frame RPC address; port 0 when it is off.
  const HostPort& frame_rpc_address() const { return frame_advertised_; }
  TsTabletManager* tablet_manager() const { return tablet_manager_.get(); }
  // Every replica's log; null with --log_per_server=false.
  ServerLog* server_log() const { return server_log_.get(); }
  ScannerManager* scanner_manager() const { return scanner_manager_.get(); }
  Heartbeater* heartbeater() const { return heartbeater_.get(); }
  MemoryBudget* memory_budget() const { return memory_budget_.get(); }
  HybridClock* clock() const { return clock_.get(); }
  AddressBook* address_book() const { return address_book_.get(); }
  BlockManager* block_manager() const { return block_manager_.get(); }

 private:
  absl::Status StartRpcServer();
  // The frame RPC port's server, if options_.frame_rpc_port >= 0. REQUIRES: advertised_ is set.
  absl::Status StartFrameServer(const TabletServiceContext& sctx);
  // Per-tablet and per-server callback metrics, the status pages and the web server.
  void RegisterMetrics();
  absl::Status StartWebserver();
  std::string TabletsPage() const;
  // The data and WAL directories: role, state (failed, full), tablets.
  std::string StoragePage() const;
  // Wakes the heartbeater (if any) for an early report.
  void OnReplicaStatusChange();
  // Starts the block GC (one run now, then periodic) and the block scrubber (docs/tserver.md
  // "Block GC", "Block scrubber"). REQUIRES: the replicas were opened (OpenAll).
  void StartBlockMaintenance();
  // The scrubber found `block` (invalid: the superblock) of `tablet_id` corrupt: fails the replica.
  void OnCorruptBlock(const std::string& tablet_id, BlockId block, const absl::Status& error);
  // Every second until Shutdown: reopens the replicas a full disk paused once it has room; and at
  // once, fails the replicas of a data directory that failed (docs/tserver.md "Disk faults").
  // On its own thread, because a directory fails on whichever thread hit the error, which may
  // hold the locks of a replica it would fail.
  void SpaceWatcherLoop() ABSL_LOCKS_EXCLUDED(space_watcher_mu_);
  // Writes, syncs and deletes a small file in the first data directory and the WAL directory;
  // one that fails with a disk error is marked failed (BlockManager::MarkDirFailed, or
  // TsTabletManager::MarkWalDirFailed), which fails every replica. On the watcher thread.
  void ProbeDisks();
  // The WAL directory's state: OK, or why it failed (its own, or its data directory's).
  absl::Status WalDirState() const;

  TabletServerOptions options_;
  Env* env_ = nullptr;
  bool started_ = false;
  bool shut_down_ = false;
  std::unique_ptr<ServerInstance> instance_;
  std::unique_ptr<BlockManager> block_manager_;
  std::unique_ptr<BlockCache> block_cache_;
  std::unique_ptr<HybridClock> clock_;
  std::unique_ptr<MemoryBudget> memory_budget_;
  std::unique_ptr<MaintenanceManager> maintenance_manager_;
  std::unique_ptr<GrpcTransport> transport_;
  std::unique_ptr<AddressBook> address_book_;
  // Before tablet_manager_: the replicas' Raft nodes hold tokens of it until they are destroyed.
  std::unique_ptr<SerialTaskPool> apply_pool_;
  // Every replica's log (--log_per_server); before tablet_manager_, whose replicas' logs must be
  // closed before it goes.
  std::unique_ptr<ServerLog> server_log_;
  std::unique_ptr<DiskSpaceMonitor> disk_space_;
  absl::Mutex space_watcher_mu_;
  bool space_watcher_stop_ ABSL_GUARDED_BY(space_watcher_mu_) = false;
  // A replica failed with a disk error (TabletReplicaContext::on_disk_error): probe the
  // directories every replica depends on.
  bool probe_disks_ ABSL_GUARDED_BY(space_watcher_mu_) = false;
  struct FailedDataDir {
    int position;
    std::string path;
    absl::Status error;
  };
  // Data directories that failed, for the watcher to fail their replicas.
  std::vector<FailedDataDir> failed_dirs_ ABSL_GUARDED_BY(space_watcher_mu_);
  std::thread space_watcher_;
  std::unique_ptr<TsTabletManager> tablet_manager_;
  // Both read tablet directories and the block manager; the scrubber's callback uses
  // tablet_manager_. Shut down before the replicas.
  std::unique_ptr<BlockGc> block_gc_;
  std::unique_ptr<BlockScrubber> block_scrubber_;
  std::unique_ptr<ScannerManager> scanner_manager_;
  std::unique_ptr<grpc::Service> tablet_service_;
  std::unique_ptr<grpc::Service> admin_service_;
  std::unique_ptr<grpc::Service> consensus_service_;
  std::unique_ptr<TabletCopyService> tablet_copy_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<FrameServer> frame_server_;  // Null when options_.frame_rpc_port < 0.
  std::unique_ptr<Heartbeater> heartbeater_;
  // heartbeater_.get() once started, for OnReplicaStatusChange on other threads.
  std::atomic<Heartbeater*> heartbeater_ptr_{nullptr};
  int rpc_port_ = 0;
  HostPort advertised_;
  HostPort frame_advertised_;  // Port 0: no frame RPC port.
  std::vector<CallbackGaugeHandle> metric_handles_;
  std::unique_ptr<Webserver> webserver_;
};

}  // namespace basalt
