#pragma once

// What a tablet server's data directory holds, read straight from its files by the cluster tests
// of the block GC and the block scrubber (tests/block_gc_crash_test.cc,
// tests/block_scrub_cluster_test.cc): the block files under <data_dir>/blocks/ and the blocks
// the superblocks under <data_dir>/tablets/ name. Independent of the tablet server's own block
// GC code, which these tests check. Private to tests/.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tablet/tablet_metadata.h"
#include "testing/external_daemon.h"

namespace basalt::cluster_test {

// The files of <data_dir>/blocks/<xx>/: finalized blocks by id, and the names of temporary
// (*.tmp) files.
struct BlockFiles {
  std::set<uint64_t> blocks;
  std::vector<std::string> temp_files;
};
absl::StatusOr<BlockFiles> ListBlockFiles(const std::string& data_dir);

// The superblock of `tablet_id` in <data_dir>/tablets/.
absl::StatusOr<TabletSuperBlock> ReadTabletSuperBlock(const std::string& data_dir,
                                                      const std::string& tablet_id);

// Every block named by a superblock under <data_dir>/tablets/ (rowsets and orphaned blocks).
absl::StatusOr<std::set<uint64_t>> BlocksNamedBySuperBlocks(const std::string& data_dir);

// The path of block `id` under <data_dir>/blocks/.
std::string BlockFilePath(const std::string& data_dir, uint64_t id);

// The value of counter `series` (name and labels as /metrics prints them) on daemon `d`; 0 when
// the series does not exist yet.
absl::StatusOr<int64_t> ScrapeCounter(const ExternalDaemon& d, const std::string& series);

}  // namespace basalt::cluster_test
