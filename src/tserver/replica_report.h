#pragma once

// How a replica's status (TabletReplica::GetStatus) is reported on the wire: ListTablets'
// TabletStatusPB and the heartbeat's ReportedTabletPB share the role, state and configuration
// mapping here.

#include <string>

#include "absl/status/status.h"
#include "tserver/tablet_replica.h"

namespace basalt {

class AddressBook;

namespace pb {
class RaftConfigPB;
class TabletStatusPB;
class TSHeartbeatRequestPB_ReportedTabletPB;
}  // namespace pb

// `config` with every member's address from `book` (when known).
void RaftConfigToPB(const RaftConfig& config, const AddressBook& book, pb::RaftConfigPB* out);
// `server_uuid` is the reporting server (a learner reports LEARNER).
void ReplicaStatusToPB(const ReplicaStatus& st, const std::string& server_uuid,
                       const AddressBook& book, bool need_schema, const Schema* schema,
                       pb::TabletStatusPB* out);
void ReplicaStatusToReport(const ReplicaStatus& st, const std::string& server_uuid,
                           const AddressBook& book, pb::TSHeartbeatRequestPB_ReportedTabletPB* out);
// A replica that failed to open (no status beyond the error).
void FailedReplicaToPB(const std::string& tablet_id, const absl::Status& error,
                       pb::TabletStatusPB* out);
void FailedReplicaToReport(const std::string& tablet_id, const absl::Status& error,
                           pb::TSHeartbeatRequestPB_ReportedTabletPB* out);
// A tombstone: state TABLET_DELETED.
void TombstoneToPB(const ReplicaFileHeader& header, pb::TabletStatusPB* out);
void TombstoneToReport(const ReplicaFileHeader& header,
                       pb::TSHeartbeatRequestPB_ReportedTabletPB* out);

}  // namespace basalt
