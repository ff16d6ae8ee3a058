#pragma once

// The in-memory form of catalog entries (private to src/master; includes generated protobuf
// headers, so only master .cc files include it).
//
// TableInfo and TabletInfo are immutable snapshots: a change builds a new one and swaps the
// shared_ptr under the catalog manager's lock, so readers keep a consistent copy without holding
// the lock.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/partition.h"
#include "common/schema.h"
#include "proto/common.pb.h"
#include "proto/master.pb.h"
#include "proto/master_catalog.pb.h"

namespace basalt {

struct TableInfo {
  pb::SysTableEntryPB pb;
  Schema schema;
  PartitionSchema partition_schema;

  const std::string& id() const { return pb.table_id(); }
  const std::string& name() const { return pb.name(); }
  bool deleted() const { return pb.state() == pb::SysTableEntryPB::DELETED; }
  uint32_t schema_version() const { return schema.version(); }
};

struct TabletInfo {
  pb::SysTabletEntryPB pb;
  Partition partition;

  const std::string& id() const { return pb.tablet_id(); }
  const std::string& table_id() const { return pb.table_id(); }
  bool deleted() const { return pb.state() == pb::SysTabletEntryPB::DELETED; }
};

// Parses and validates a stored table entry (schema, partition schema, state, replicas).
// INVALID_ARGUMENT naming the table otherwise.
absl::StatusOr<std::shared_ptr<const TableInfo>> TableInfoFromPB(pb::SysTableEntryPB entry);
// The same for a tablet entry (partition, config, state).
absl::StatusOr<std::shared_ptr<const TabletInfo>> TabletInfoFromPB(pb::SysTabletEntryPB entry);

// The last report of one replica (soft state, from heartbeats; never persisted).
struct ReplicaReport {
  pb::TabletStatePB state = pb::UNKNOWN_TABLET_STATE;
  pb::RaftRolePB role = pb::UNKNOWN_ROLE;
  uint64_t term = 0;
  std::string leader_uuid;
  uint32_t schema_version = 0;
  // The replica's committed Raft configuration and the op index of its entry.
  pb::RaftConfigPB config;
  uint64_t config_index = 0;
  uint64_t latest_config_index = 0;  // Of the replica's newest configuration, committed or not.
  // Leaders only: the health of each other member.
  using PeerHealth = pb::TSHeartbeatRequestPB::ReportedTabletPB::PeerHealthPB;
  std::map<std::string, PeerHealth::Status> peer_health;
};

}  // namespace basalt
