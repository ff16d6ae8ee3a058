#pragma once

// ReplicaFiles: where a tablet replica's files live and how they come to be (docs/tserver.md
// "On-disk layout"): tablets/<id>/ under the data directory holds the superblock, the consensus
// metadata (cmeta) and the replica file; the WAL is a group of the server's shared log
// (server-wal/ under the WAL directory) or, with --log_per_server=false, wals/<id>/ there.
//
// Create writes the replica file last, so its presence means a complete replica; Open reads it
// and the superblock. Stateless; thread-safe.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/schema.h"
#include "consensus/raft_config.h"
#include "tserver/replica_file.h"
#include "tserver/replica_wal.h"
#include "tserver/tablet_replica_context.h"

namespace basalt {

class BlockManager;
class Tablet;

class ReplicaFiles {
 public:
  static std::string TabletDir(const TabletReplicaContext& ctx, const std::string& tablet_id);
  static std::string WalDir(const TabletReplicaContext& ctx, const std::string& tablet_id);
  // The replica's log: in ctx.server_log when set, else in WalDir.
  static ReplicaWal Wal(const TabletReplicaContext& ctx, const std::string& tablet_id);
  static std::string SuperBlockPath(const TabletReplicaContext& ctx, const std::string& tablet_id);
  static std::string CmetaPath(const TabletReplicaContext& ctx, const std::string& tablet_id);
  static std::string ReplicaFilePath(const TabletReplicaContext& ctx, const std::string& tablet_id);

  // Creates the files of a new replica: tablets/<id>/{superblock,cmeta}, then tablets/<id>/replica.
  // `config` is the initial Raft configuration; `addresses` the members' "host:port" (kept in the
  // consensus metadata). On error nothing is left behind. ALREADY_EXISTS if the tablet directory
  // exists; I/O errors.
  static absl::StatusOr<std::unique_ptr<Tablet>> Create(
      const TabletReplicaContext& ctx, const TabletReplicaMeta& meta, const Schema& schema,
      const RaftConfig& config, const std::map<PeerId, std::string>& addresses);

  struct Opened {
    TabletReplicaMeta meta;
    std::unique_ptr<Tablet> tablet;
  };
  // Opens an existing replica's replica file and superblock. NOT_FOUND without a replica file;
  // DATA_LOSS for corrupt files or a replica file of another tablet; I/O errors.
  static absl::StatusOr<Opened> Open(const TabletReplicaContext& ctx, const std::string& tablet_id);

  // The block manager a replica whose blocks are in the data directories at positions
  // `data_dirs` uses (BlockManager::ForGroup of ctx.block_manager; {} means {0}).
  // FAILED_PRECONDITION if a position is not configured; the directory's error (naming it) if
  // one of them failed.
  static absl::StatusOr<BlockManager*> BlocksOf(const TabletReplicaContext& ctx,
                                                const std::vector<int>& data_dirs);

  // Rewrites the replica file (atomically).
  static absl::Status PersistMeta(const TabletReplicaContext& ctx, const TabletReplicaMeta& meta);
};

}  // namespace basalt
