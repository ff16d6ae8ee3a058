#include "tserver/block_references.h"

#include <utility>

#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/tablet_metadata.h"
#include "tserver/replica_tombstone.h"

namespace basalt {
namespace {

void AddRowSetBlocks(const RowSetMetadata& rs, std::vector<RowSetBlock>* out) {
  for (const auto& [column, id] : rs.column_blocks) out->push_back({id, RowSetBlockKind::kColumn});
  if (rs.key_index_block.valid()) out->push_back({rs.key_index_block, RowSetBlockKind::kKeyIndex});
  out->push_back({rs.bloom_block, RowSetBlockKind::kBloom});
  for (BlockId id : rs.redo_blocks) out->push_back({id, RowSetBlockKind::kRedo});
  for (BlockId id : rs.undo_blocks) out->push_back({id, RowSetBlockKind::kUndo});
}

// Reads the superblock into `refs`. Returns whether it exists.
absl::StatusOr<bool> ReadSuperBlockRefs(Env* env, const std::string& dir, TabletBlockRefs* refs) {
  absl::StatusOr<TabletSuperBlock> sb = ReadSuperBlock(env, JoinPath(dir, kSuperBlockFileName));
  if (absl::IsNotFound(sb.status())) return false;
  BASALT_RETURN_IF_ERROR(sb.status());
  for (const RowSetMetadata& rs : sb->rowsets) AddRowSetBlocks(rs, &refs->rowset_blocks);
  refs->orphaned_blocks = std::move(sb->orphaned_blocks);
  return true;
}

// Reads the replica file's state into `refs`. NOT_FOUND without the file.
absl::Status ReadReplicaState(Env* env, const std::string& dir, TabletBlockRefs* refs) {
  const std::string path = JoinPath(dir, kReplicaFileName);
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &data));
  BASALT_ASSIGN_OR_RETURN(ReplicaFileHeader header, PeekReplicaFile(data, path));
  refs->state = header.state;
  return absl::OkStatus();
}

absl::Status ReadRefs(Env* env, const std::string& dir, TabletBlockRefs* refs) {
  // The superblock before the replica file: a deletion marks the replica file TOMBSTONED before
  // it removes the superblock, so a superblock found missing is explained by the state read after.
  const absl::StatusOr<bool> has_superblock = ReadSuperBlockRefs(env, dir, refs);
  const absl::Status state = ReadReplicaState(env, dir, refs);
  BASALT_RETURN_IF_ERROR(has_superblock.status());
  absl::StatusOr<std::vector<BlockId>> copy = ReadCopyBlocks(env, dir);
  if (copy.ok()) {
    refs->copy_blocks = *std::move(copy);
  } else if (!absl::IsNotFound(copy.status())) {
    return copy.status();
  }
  if (*has_superblock || absl::IsNotFound(state)) return absl::OkStatus();
  BASALT_RETURN_IF_ERROR(state);
  if (refs->state == ReplicaDataState::kReady) {
    // Its blocks cannot be known (the replica cannot open either).
    return absl::FailedPreconditionError(
        ToAbsl(StrCat(dir, ": a ready replica without a superblock")));
  }
  return absl::OkStatus();
}

}  // namespace

const char* RowSetBlockKindName(RowSetBlockKind kind) {
  switch (kind) {
    case RowSetBlockKind::kColumn:
      return "column file";
    case RowSetBlockKind::kKeyIndex:
      return "key index";
    case RowSetBlockKind::kBloom:
      return "bloom filter";
    case RowSetBlockKind::kRedo:
      return "REDO file";
    case RowSetBlockKind::kUndo:
      return "UNDO file";
  }
  return "block";
}

TabletBlockRefs ReadTabletBlockRefs(Env* env, const std::string& tablets_dir,
                                    const std::string& tablet_id) {
  TabletBlockRefs refs;
  refs.tablet_id = tablet_id;
  refs.status = ReadRefs(env, JoinPath(tablets_dir, tablet_id), &refs);
  return refs;
}

absl::StatusOr<std::vector<TabletBlockRefs>> ReadAllTabletBlockRefs(
    Env* env, const std::string& tablets_dir) {
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> children, env->GetChildren(tablets_dir));
  std::vector<TabletBlockRefs> out;
  for (const std::string& id : children) {
    absl::StatusOr<bool> is_dir = env->IsDirectory(JoinPath(tablets_dir, id));
    if (!is_dir.ok() && !absl::IsNotFound(is_dir.status())) {
      // Whatever it names is unknown.
      out.push_back(TabletBlockRefs{.tablet_id = id, .status = is_dir.status()});
      continue;
    }
    // A directory deleted since the listing names nothing; a file is not a tablet.
    if (!is_dir.ok() || !*is_dir) continue;
    out.push_back(ReadTabletBlockRefs(env, tablets_dir, id));
  }
  return out;
}

}  // namespace basalt
