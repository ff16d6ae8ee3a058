#include "tests/block_files_util.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "server/webserver.h"

namespace basalt::cluster_test {

absl::StatusOr<BlockFiles> ListBlockFiles(const std::string& data_dir) {
  Env* env = Env::Default();
  const std::string root = JoinPath(data_dir, "blocks");
  BlockFiles out;
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> subdirs, env->GetChildren(root));
  for (const std::string& sub : subdirs) {
    const std::string dir = JoinPath(root, sub);
    BASALT_ASSIGN_OR_RETURN(bool is_dir, env->IsDirectory(dir));
    if (!is_dir) continue;  // LOCK, EPOCH.
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->GetChildren(dir));
    for (const std::string& name : names) {
      if (absl::EndsWith(name, ".tmp")) {
        out.temp_files.push_back(JoinPath(dir, name));
        continue;
      }
      uint64_t id = 0;
      if (!absl::SimpleHexAtoi(name, &id)) {
        return absl::DataLossError(ToAbsl(StrCat("unexpected file ", JoinPath(dir, name))));
      }
      out.blocks.insert(id);
    }
  }
  return out;
}

absl::StatusOr<TabletSuperBlock> ReadTabletSuperBlock(const std::string& data_dir,
                                                      const std::string& tablet_id) {
  return ReadSuperBlock(Env::Default(),
                        JoinPath(JoinPath(JoinPath(data_dir, "tablets"), tablet_id), "superblock"));
}

absl::StatusOr<std::set<uint64_t>> BlocksNamedBySuperBlocks(const std::string& data_dir) {
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> tablets,
                          Env::Default()->GetChildren(JoinPath(data_dir, "tablets")));
  std::set<uint64_t> named;
  for (const std::string& id : tablets) {
    absl::StatusOr<TabletSuperBlock> sb = ReadTabletSuperBlock(data_dir, id);
    if (absl::IsNotFound(sb.status())) continue;  // A tombstone.
    BASALT_RETURN_IF_ERROR(sb.status());
    for (const RowSetMetadata& rs : sb->rowsets) {
      for (BlockId b : rs.AllBlocks()) named.insert(b.value());
    }
    for (BlockId b : sb->orphaned_blocks) named.insert(b.value());
  }
  return named;
}

std::string BlockFilePath(const std::string& data_dir, uint64_t id) {
  return JoinPath(JoinPath(JoinPath(data_dir, "blocks"), absl::StrFormat("%02x", id & 0xff)),
                  absl::StrFormat("%016x", id));
}

absl::StatusOr<int64_t> ScrapeCounter(const ExternalDaemon& d, const std::string& series) {
  BASALT_ASSIGN_OR_RETURN(HttpResponse r, HttpGet("127.0.0.1", d.info().http_port, "/metrics"));
  for (absl::string_view line : absl::StrSplit(r.body, '\n')) {
    if (!absl::ConsumePrefix(&line, series + " ")) continue;
    double v = 0;
    if (!absl::SimpleAtod(line, &v)) return absl::DataLossError(std::string(line));
    return static_cast<int64_t>(v);
  }
  return 0;
}

}  // namespace basalt::cluster_test
