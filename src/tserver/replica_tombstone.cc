#include "tserver/replica_tombstone.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <glog/logging.h>

#include "absl/strings/str_split.h"
#include "cfile/block_manager.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/log.h"
#include "tablet/tablet_metadata.h"
#include "tserver/replica_file.h"

namespace basalt {
namespace {

absl::Status DeleteBlocks(BlockManager* block_manager, const std::vector<BlockId>& blocks) {
  for (BlockId id : blocks) {
    // A block in a failed data directory cannot be deleted; it is garbage for the block GC if the
    // directory ever comes back, and must not keep a failed tablet from being deleted.
    const int dir = BlockManager::DirOf(id);
    auto failed = [&] { return dir < block_manager->num_dirs() && block_manager->DirFailed(dir); };
    if (failed()) continue;
    absl::Status s = block_manager->DeleteBlock(id);
    if (!s.ok() && !absl::IsNotFound(s) && !failed()) return s;  // Failed just now: skipped too.
  }
  return absl::OkStatus();
}

// The last op of the log `wal`; nullopt without a log or when it cannot be read.
std::optional<OpId> LastLogged(const ReplicaWal& wal) {
  if (!wal.Exists()) return std::nullopt;
  absl::StatusOr<std::unique_ptr<Log>> log = wal.Open();
  if (!log.ok()) {
    LOG(WARNING) << "tombstoning: cannot read the " << wal.ToString() << " (" << log.status()
                 << "); the tombstone votes with what it recorded before, if anything";
    return std::nullopt;
  }
  return (*log)->LastOpId();
}

}  // namespace

absl::Status TombstoneReplica(Env* env, BlockManager* block_manager, const std::string& tablet_dir,
                              const ReplicaWal& wal) {
  const std::string replica = JoinPath(tablet_dir, kReplicaFileName);
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, replica, &data));
  BASALT_ASSIGN_OR_RETURN(ReplicaFileHeader header, PeekReplicaFile(data, replica));
  // The tombstone votes with the newest op a log of this replica held (Raft's election
  // restriction must keep holding for the entries it acknowledged). The log of an incomplete copy
  // is the source's, possibly with an uncommitted tail this replica never acknowledged: demanding
  // it could keep every candidate from winning, so only what the COPYING file carried counts.
  std::optional<OpId> last = header.tombstone_last_logged;
  if (header.state != ReplicaDataState::kCopying) {
    if (std::optional<OpId> log_last = LastLogged(wal); log_last.has_value()) {
      last = std::max(last.value_or(OpId{}), *log_last);
    }
  }
  BASALT_ASSIGN_OR_RETURN(
      std::string tombstone,
      ChangeReplicaFileState(data, replica, ReplicaDataState::kTombstoned, last));
  BASALT_RETURN_IF_ERROR(WriteFileAtomically(env, replica, tombstone));
  return FinishTombstone(env, block_manager, tablet_dir, wal);
}

absl::Status FinishTombstone(Env* env, BlockManager* block_manager, const std::string& tablet_dir,
                             const ReplicaWal& wal) {
  const std::string superblock = JoinPath(tablet_dir, kSuperBlockFileName);
  if (env->FileExists(superblock)) {
    absl::StatusOr<TabletSuperBlock> sb = ReadSuperBlock(env, superblock);
    if (sb.ok()) {
      std::vector<BlockId> blocks = sb->orphaned_blocks;
      for (const RowSetMetadata& rs : sb->rowsets) {
        for (BlockId id : rs.AllBlocks()) blocks.push_back(id);
      }
      BASALT_RETURN_IF_ERROR(DeleteBlocks(block_manager, blocks));
    } else {
      // Its blocks stay behind as orphans; deleting the tablet matters more.
      LOG(WARNING) << "tombstoning " << tablet_dir << " without its superblock: " << sb.status();
    }
    BASALT_RETURN_IF_ERROR(env->DeleteFile(superblock));
  }
  BASALT_RETURN_IF_ERROR(wal.Delete());
  // The remembered answers go with the data (a copy that replaces the tombstone starts afresh).
  for (const char* name : {kCopyBlocksFileName, kAnswersFileName}) {
    const std::string path = JoinPath(tablet_dir, name);
    if (env->FileExists(path)) BASALT_RETURN_IF_ERROR(env->DeleteFile(path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BlockId>> ReadCopyBlocks(Env* env, const std::string& tablet_dir) {
  const std::string list = JoinPath(tablet_dir, kCopyBlocksFileName);
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, list, &data));
  std::vector<BlockId> blocks;
  for (absl::string_view line : absl::StrSplit(data, '\n', absl::SkipEmpty())) {
    std::optional<BlockId> id = BlockId::FromString(std::string_view(line.data(), line.size()));
    if (id.has_value()) {
      blocks.push_back(*id);
    } else {
      LOG(WARNING) << list << ": skipping a bad line '" << line << "'";
    }
  }
  return blocks;
}

absl::Status CleanUpIncompleteCopy(Env* env, BlockManager* block_manager,
                                   const std::string& tablet_dir, const ReplicaWal& wal) {
  if (env->FileExists(JoinPath(tablet_dir, kCopyBlocksFileName))) {
    BASALT_ASSIGN_OR_RETURN(std::vector<BlockId> blocks, ReadCopyBlocks(env, tablet_dir));
    BASALT_RETURN_IF_ERROR(DeleteBlocks(block_manager, blocks));
  }
  // The copy's superblock names only blocks of copy_blocks: deleting them again is harmless.
  return TombstoneReplica(env, block_manager, tablet_dir, wal);
}

}  // namespace basalt
