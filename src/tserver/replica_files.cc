#include "tserver/replica_files.h"

#include <utility>

#include <glog/logging.h>

#include "cfile/block_manager.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/consensus_metadata.h"
#include "tablet/tablet.h"

namespace basalt {
namespace {

TabletOptions MakeTabletOptions(const TabletReplicaContext& ctx, const std::string& dir,
                                BlockManager* blocks) {
  TabletOptions o;
  o.env = ctx.env;
  o.block_manager = blocks;
  o.block_cache = ctx.block_cache;
  o.superblock_path = JoinPath(dir, kSuperBlockFileName);
  o.clock = ctx.clock;
  o.memory_budget = ctx.memory_budget;
  return o;
}

}  // namespace

absl::StatusOr<BlockManager*> ReplicaFiles::BlocksOf(const TabletReplicaContext& ctx,
                                                     const std::vector<int>& data_dirs) {
  BlockManager* root = ctx.block_manager;
  for (int d : data_dirs) {
    if (d < 0 || d >= root->num_dirs()) {
      return absl::FailedPreconditionError(ToAbsl(
          StrCat("its blocks are in data directory position ", d, ", but --fs_data_dirs lists ",
                 root->num_dirs(), " directories (positions must not change)")));
    }
    if (root->DirFailed(d)) {
      const BlockManager::DirInfo info = root->Dirs()[d];
      return PrependToStatus(info.error, StrCat("data directory ", info.path, " failed"));
    }
  }
  return root->ForGroup(data_dirs.empty() ? std::vector<int>{0} : data_dirs);
}

std::string ReplicaFiles::TabletDir(const TabletReplicaContext& ctx, const std::string& id) {
  return JoinPath(JoinPath(ctx.data_dir, "tablets"), id);
}

std::string ReplicaFiles::WalDir(const TabletReplicaContext& ctx, const std::string& id) {
  return JoinPath(JoinPath(ctx.wal_dir, "wals"), id);
}

ReplicaWal ReplicaFiles::Wal(const TabletReplicaContext& ctx, const std::string& id) {
  ReplicaWal wal;
  wal.env = ctx.env;
  wal.server_log = ctx.server_log;
  wal.tablet_id = id;
  if (ctx.server_log == nullptr) wal.dir = WalDir(ctx, id);
  return wal;
}

std::string ReplicaFiles::SuperBlockPath(const TabletReplicaContext& ctx, const std::string& id) {
  return JoinPath(TabletDir(ctx, id), kSuperBlockFileName);
}

std::string ReplicaFiles::CmetaPath(const TabletReplicaContext& ctx, const std::string& id) {
  return JoinPath(TabletDir(ctx, id), kCmetaFileName);
}

std::string ReplicaFiles::ReplicaFilePath(const TabletReplicaContext& ctx, const std::string& id) {
  return JoinPath(TabletDir(ctx, id), kReplicaFileName);
}

absl::StatusOr<std::unique_ptr<Tablet>> ReplicaFiles::Create(
    const TabletReplicaContext& ctx, const TabletReplicaMeta& meta, const Schema& schema,
    const RaftConfig& config, const std::map<PeerId, std::string>& addresses) {
  const std::string dir = TabletDir(ctx, meta.tablet_id);
  if (ctx.env->FileExists(dir)) {
    return absl::AlreadyExistsError(ToAbsl(StrCat("tablet directory ", dir, " exists")));
  }
  BASALT_ASSIGN_OR_RETURN(BlockManager * blocks, BlocksOf(ctx, meta.data_dirs));
  auto create = [&]() -> absl::StatusOr<std::unique_ptr<Tablet>> {
    BASALT_RETURN_IF_ERROR(ctx.env->CreateDirs(dir));
    BASALT_ASSIGN_OR_RETURN(
        std::unique_ptr<Tablet> tablet,
        Tablet::Create(MakeTabletOptions(ctx, dir, blocks), meta.tablet_id, schema));
    ConsensusMetadataContents c;
    c.committed_config = NormalizeConfig(config);
    c.peer_addresses = addresses;
    BASALT_RETURN_IF_ERROR(
        ConsensusMetadata::Create(ctx.env, JoinPath(dir, kCmetaFileName), c).status());
    BASALT_RETURN_IF_ERROR(PersistMeta(ctx, meta));  // Last: the replica is complete.
    return tablet;
  };
  absl::StatusOr<std::unique_ptr<Tablet>> tablet = create();
  if (!tablet.ok()) {
    absl::Status s = ctx.env->DeleteDirRecursively(dir);
    LOG_IF(WARNING, !s.ok()) << "cleaning up " << dir << ": " << s;
  }
  return tablet;
}

absl::StatusOr<ReplicaFiles::Opened> ReplicaFiles::Open(const TabletReplicaContext& ctx,
                                                        const std::string& tablet_id) {
  const std::string dir = TabletDir(ctx, tablet_id);
  const std::string path = JoinPath(dir, kReplicaFileName);
  if (!ctx.env->FileExists(path)) {
    return absl::NotFoundError(ToAbsl(StrCat("no replica file ", path)));
  }
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(ctx.env, path, &data));
  // The group first: a tablet with blocks in a failed directory is not opened at all.
  BASALT_ASSIGN_OR_RETURN(ReplicaFileHeader header, PeekReplicaFile(data, path));
  BASALT_ASSIGN_OR_RETURN(BlockManager * blocks, BlocksOf(ctx, header.data_dirs));
  Opened opened;
  BASALT_ASSIGN_OR_RETURN(opened.tablet, Tablet::Open(MakeTabletOptions(ctx, dir, blocks)));
  BASALT_ASSIGN_OR_RETURN(opened.meta, DecodeReplicaFile(data, path, opened.tablet->schema()));
  if (opened.meta.tablet_id != tablet_id) {
    return absl::DataLossError(
        ToAbsl(StrCat(path, ": holds tablet ", opened.meta.tablet_id, ", expected ", tablet_id)));
  }
  return opened;
}

absl::Status ReplicaFiles::PersistMeta(const TabletReplicaContext& ctx,
                                       const TabletReplicaMeta& meta) {
  return WriteFileAtomically(ctx.env, ReplicaFilePath(ctx, meta.tablet_id),
                             EncodeReplicaFile(meta));
}

}  // namespace basalt
