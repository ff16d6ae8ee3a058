#pragma once

// TabletReplicaContext: what every tablet replica of a server shares (tablet_replica.h).

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace basalt {

class AddressBook;
class BlockCache;
class BlockManager;
class DiskSpaceMonitor;
class Env;
class HybridClock;
class MaintenanceManager;
class MemoryBudget;
class SerialTaskPool;
class ServerLog;
class Transport;

// What every replica of a server shares. All pointers are borrowed and outlive the replicas.
struct TabletReplicaContext {
  Env* env = nullptr;
  std::string server_uuid;
  std::string data_dir;  // tablets/<id>/ live under it.
  std::string wal_dir;   // wals/<id>/ live under it (without server_log).
  // The server's shared write-ahead log, which holds every replica's log; null: each replica has
  // a directory of its own under wal_dir (--log_per_server=false). Borrowed.
  ServerLog* server_log = nullptr;
  BlockManager* block_manager = nullptr;
  BlockCache* block_cache = nullptr;  // May be null.
  HybridClock* clock = nullptr;
  MemoryBudget* memory_budget = nullptr;              // May be null (no admission control).
  MaintenanceManager* maintenance_manager = nullptr;  // May be null (no background maintenance).
  Transport* transport = nullptr;
  AddressBook* address_book = nullptr;
  // Where committed entries are applied (RaftNodeOptions::apply_pool); null: a thread per replica.
  SerialTaskPool* apply_pool = nullptr;
  // Whether the data and WAL directories have room: writes are refused and flushes wait while
  // they do not. Null: never full.
  DiskSpaceMonitor* disk_space = nullptr;
  // RaftNodeOptions::tick_interval_ms and RaftOptions::election_ticks (0: defaults).
  int raft_tick_interval_ms = 0;
  int raft_election_ticks = 0;
  // How long a write or snapshot scan on a new leader waits for it to apply its first entry.
  absl::Duration leader_ready_wait = absl::Seconds(2);
  // How long (at most; the RPC deadline may be shorter) a snapshot read on a follower waits for
  // its safe time to reach the snapshot before sending the client to the leader.
  absl::Duration follower_snapshot_wait = absl::Seconds(3);
  // A leader reports a follower FAILED once it has heard nothing from it for this long
  // (--follower_unavailable_considered_failed_sec); the master then replaces it.
  absl::Duration follower_failed_after = absl::Seconds(300);
  // Called (on a RaftNode thread or whichever found a fault; must be quick) when a replica's
  // reported status may have changed: it became RUNNING or FAILED, applied the first entry of a new
  // term (a new leader) or a schema change. The server wakes the heartbeater with it. May be empty.
  std::function<void()> on_status_change;
  // Called (same rules) when the replica failed with an error that may be its disk's
  // (BlockManager::IsDiskFailure): the server then probes the WAL and metadata directories, whose
  // failure fails every replica (docs/tserver.md "Data directories"). May be empty.
  std::function<void(const absl::Status&)> on_disk_error;
};

}  // namespace basalt
