// `basalt fs space <data_dirs>`: what a tablet server's disk holds, by kind of block, per base
// row (docs/cli.md, "fs space"; W5 of docs/performance.md).
//
// Reads every tablet superblock under <D0>/tablets/ and the sizes of the block files under each
// directory's blocks/, and classifies each block by what the superblocks say it is: a column's
// data (by column name), a key index, a bloom filter, a REDO or UNDO delta file; blocks no
// superblock names (orphans awaiting deletion, or blocks of a flush in flight) are "other". The
// WAL (--fs_wal_dir, default <D0>/server-wal and <D0>/wals) is counted apart. Only reads, so it
// runs next to a live server; a file that disappears meanwhile (a compaction deleted it) is
// skipped.

#include <gflags/gflags.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "cfile/block_manager.h"
#include "common/env.h"
#include "common/schema.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/tablet_metadata.h"
#include "tools/command.h"
#include "tools/output.h"
#include "tools/tool_common.h"
#include "tserver/replica_file.h"

DEFINE_string(fs_wal_dir, "",
              "fs space: the server's WAL directory (its --fs_wal_dir); empty: <first data dir>.");

namespace basalt::tools {
namespace {

// Block file name (BlockId::ToString, 16 hex digits) -> size, over the blocks/ of `dirs`.
absl::StatusOr<std::map<std::string, uint64_t>> BlockSizes(Env* env,
                                                           const std::vector<std::string>& dirs) {
  std::map<std::string, uint64_t> sizes;
  for (const std::string& dir : dirs) {
    const std::string blocks = JoinPath(dir, "blocks");
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> subdirs, env->GetChildren(blocks));
    for (const std::string& sub : subdirs) {
      const std::string subdir = JoinPath(blocks, sub);
      absl::StatusOr<bool> is_dir = env->IsDirectory(subdir);
      if (!is_dir.ok() || !*is_dir) continue;  // LOCK, EPOCH.
      absl::StatusOr<std::vector<std::string>> files = env->GetChildren(subdir);
      if (!files.ok()) continue;
      for (const std::string& f : *files) {
        // Finalized blocks are named BlockId::ToString() (16 hex digits); others are temporary
        // files of blocks being written.
        if (f.size() != 16) continue;
        absl::StatusOr<uint64_t> size = env->GetFileSize(JoinPath(subdir, f));
        if (size.ok()) sizes[f] = *size;
      }
    }
  }
  return sizes;
}

// Total size of the files under `dir`, recursively (0 if it does not exist).
uint64_t TreeSize(Env* env, const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> children = env->GetChildren(dir);
  if (!children.ok()) return 0;
  uint64_t total = 0;
  for (const std::string& c : *children) {
    if (c == "." || c == "..") continue;
    const std::string path = JoinPath(dir, c);
    absl::StatusOr<bool> is_dir = env->IsDirectory(path);
    if (is_dir.ok() && *is_dir) {
      total += TreeSize(env, path);
    } else if (absl::StatusOr<uint64_t> size = env->GetFileSize(path); size.ok()) {
      total += *size;
    }
  }
  return total;
}

absl::Status Space(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(const TableWriter::Format format, OutputFormat());
  Env* env = Env::Default();
  const std::vector<std::string> dirs = absl::StrSplit(ctx.args[0], ',', absl::SkipEmpty());
  if (dirs.empty()) return absl::InvalidArgumentError("data_dirs: no directory given");
  BASALT_ASSIGN_OR_RETURN(auto sizes, BlockSizes(env, dirs));
  const std::string tablets_dir = JoinPath(dirs[0], "tablets");
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> tablets, env->GetChildren(tablets_dir));

  // Bytes by kind ("column <name>", "key index", ...), in first-seen order for the output.
  std::vector<std::string> kinds;
  std::map<std::string, uint64_t> bytes;
  auto count = [&](const std::string& kind, const BlockId& block) {
    auto it = sizes.find(block.ToString());
    if (it == sizes.end()) return;  // Deleted since the listing (or on a failed directory).
    if (!bytes.contains(kind)) kinds.push_back(kind);
    bytes[kind] += it->second;
    sizes.erase(it);  // Counted once, and what is left at the end is "other".
  };
  uint64_t rows = 0;
  int num_tablets = 0;
  for (const std::string& t : tablets) {
    const std::string path = JoinPath(JoinPath(tablets_dir, t), kSuperBlockFileName);
    if (!env->FileExists(path)) continue;  // A replica being created, or a tombstone.
    BASALT_ASSIGN_OR_RETURN(TabletSuperBlock sb, ReadSuperBlock(env, path));
    ++num_tablets;
    for (const RowSetMetadata& rs : sb.rowsets) {
      rows += rs.num_rows;
      for (const auto& [col_id, block] : rs.column_blocks) {
        const int idx = sb.schema.find_column_by_id(col_id);
        count(StrCat("column ", idx >= 0 ? sb.schema.column(idx).name() : "<dropped>"), block);
      }
      count("key index", rs.key_index_block);
      count("bloom", rs.bloom_block);
      for (const BlockId& b : rs.redo_blocks) count("redo deltas", b);
      for (const BlockId& b : rs.undo_blocks) count("undo deltas", b);
    }
  }
  uint64_t data_total = 0;
  for (const auto& [kind, b] : bytes) data_total += b;
  uint64_t other = 0;
  for (const auto& [name, size] : sizes) other += size;
  // The server log (server-wal/) and the per-replica logs of --log_per_server=false (wals/).
  const uint64_t wal = FLAGS_fs_wal_dir.empty() ? TreeSize(env, JoinPath(dirs[0], "wals")) +
                                                      TreeSize(env, JoinPath(dirs[0], "server-wal"))
                                                : TreeSize(env, FLAGS_fs_wal_dir);

  auto per_row = [&](uint64_t b) {
    if (rows == 0) return Cell::Null();
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(b) / static_cast<double>(rows));
    return Cell::Number(buf);
  };
  // Every line carries the row count the per-row figures divide by, for scripts.
  const Cell rows_cell = Cell::Number(std::to_string(rows));
  *(format == TableWriter::kTable ? ctx.out : ctx.err)
      << num_tablets << " tablets, " << rows << " base rows in their rowsets\n";
  TableWriter w(format, {"kind", "bytes", "bytes_per_row", "rows"}, ctx.out);
  auto add = [&](const std::string& kind, uint64_t b) {
    w.AddRow({Cell::String(kind), Cell::Number(std::to_string(b)), per_row(b), rows_cell});
  };
  for (const std::string& kind : kinds) add(kind, bytes[kind]);
  add("rowsets total", data_total);
  add("other blocks", other);
  add("wal", wal);
  w.Finish();
  return absl::OkStatus();
}

}  // namespace

Action FsSpaceAction() {
  return Action{
      "space",
      "Print the bytes of a tablet server's blocks by kind, per base row",
      "<data_dirs> is the server's --fs_data_dirs (or --fs_data_dir): comma-separated, the "
      "first holding the tablets' metadata. Every tablet's rowsets are counted: each column's "
      "data, the key indexes, the bloom filters, REDO and UNDO delta files; then blocks no "
      "superblock names (orphans, a flush in flight) and the WAL. Per-row figures divide by the "
      "base rows of the rowsets (rows still in memory are not on disk yet: flush first). Only "
      "reads; safe on a running server.",
      {{"data_dirs", "The server's data directories, comma-separated"}},
      {"fs_wal_dir", "format"},
      Space};
}

}  // namespace basalt::tools
