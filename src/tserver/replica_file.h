#pragma once

// The replica file, tablets/<tablet_id>/replica (docs/tserver.md "Replica file"): what a tablet
// server knows about a replica besides its superblock and consensus metadata. An envelope (magic,
// masked CRC32C) around a TabletReplicaPB.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/partition.h"
#include "common/schema.h"

namespace basalt {

// The durable description of a replica.
struct TabletReplicaMeta {
  std::string tablet_id;
  std::string table_id;
  std::string table_name;
  Partition partition;
  PartitionSchema partition_schema;
};

// The file's bytes for `meta`.
std::string EncodeReplicaFile(const TabletReplicaMeta& meta);
// Parses EncodeReplicaFile's output; `schema` (the tablet's) resolves the partition schema's
// columns. DATA_LOSS naming `path` for a short file, a wrong magic, a checksum mismatch, an
// unparsable payload or an invalid partition.
absl::StatusOr<TabletReplicaMeta> DecodeReplicaFile(std::string_view data, std::string_view path,
                                                    const Schema& schema);

}  // namespace basalt
