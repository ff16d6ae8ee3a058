#pragma once

// The replica file, tablets/<tablet_id>/replica (docs/tserver.md "Replica file"): what a tablet
// server knows about a replica besides its superblock and consensus metadata. An envelope (magic,
// masked CRC32C) around a TabletReplicaPB.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/partition.h"
#include "common/schema.h"
#include "consensus/raft_types.h"

namespace basalt {

// The files of a replica's directory tablets/<tablet_id>/ (docs/tserver.md).
inline constexpr char kReplicaFileName[] = "replica";
inline constexpr char kSuperBlockFileName[] = "superblock";
inline constexpr char kCmetaFileName[] = "cmeta";
// Block ids an unfinished tablet copy wrote (docs/tablet_copy.md).
inline constexpr char kCopyBlocksFileName[] = "copy_blocks";
// The remembered answers of client requests (tserver/result_tracker.h).
inline constexpr char kAnswersFileName[] = "answers";

// The durable description of a replica.
struct TabletReplicaMeta {
  std::string tablet_id;
  std::string table_id;
  std::string table_name;
  Partition partition;
  PartitionSchema partition_schema;
  // The positions of the data directories its blocks are created in (BlockManager::ForGroup);
  // sorted, never empty once decoded (a file without them means {0}).
  std::vector<int> data_dirs = {0};
};

// What the directory holds (TabletReplicaPB.DataState; the numbers are equal).
enum class ReplicaDataState {
  kReady = 0,       // A complete replica.
  kTombstoned = 1,  // Data deleted, cmeta kept (term and vote).
  kCopying = 2,     // A tablet copy is downloading into the directory.
};

// The fields readable without the tablet's schema.
struct ReplicaFileHeader {
  std::string tablet_id;
  std::string table_id;
  std::string table_name;
  ReplicaDataState state = ReplicaDataState::kReady;
  // TabletReplicaPB.tombstone_last_logged when set.
  std::optional<OpId> tombstone_last_logged;
  // As TabletReplicaMeta::data_dirs.
  std::vector<int> data_dirs = {0};
};

// The file's bytes for `meta`.
std::string EncodeReplicaFile(const TabletReplicaMeta& meta,
                              ReplicaDataState state = ReplicaDataState::kReady);
// Reads the envelope and the header fields. DATA_LOSS as DecodeReplicaFile (but the partition is
// not checked).
absl::StatusOr<ReplicaFileHeader> PeekReplicaFile(std::string_view data, std::string_view path);
// The same file with another data state and `last_logged` as tombstone_last_logged (cleared when
// nullopt). Errors as PeekReplicaFile.
absl::StatusOr<std::string> ChangeReplicaFileState(std::string_view data, std::string_view path,
                                                   ReplicaDataState state,
                                                   std::optional<OpId> last_logged = std::nullopt);
// The same file with `data_dirs` as its data directory group (empty: none recorded, which reads
// as {0}). Errors as PeekReplicaFile.
absl::StatusOr<std::string> ChangeReplicaFileDataDirs(std::string_view data, std::string_view path,
                                                      const std::vector<int>& data_dirs);
// Parses EncodeReplicaFile's output of a ready replica; `schema` (the tablet's) resolves the
// partition schema's columns. DATA_LOSS naming `path` for a short file, a wrong magic, a checksum
// mismatch, an unparsable payload, an unknown data state or an invalid partition;
// FAILED_PRECONDITION for a tombstone or an incomplete copy.
absl::StatusOr<TabletReplicaMeta> DecodeReplicaFile(std::string_view data, std::string_view path,
                                                    const Schema& schema);

}  // namespace basalt
