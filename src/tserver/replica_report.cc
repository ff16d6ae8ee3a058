#include "tserver/replica_report.h"

#include "consensus/raft_config.h"
#include "consensus/raft_role_pb.h"
#include "proto/master.pb.h"
#include "proto/tserver.pb.h"
#include "rpc/rpc_status.h"
#include "tserver/address_book.h"

namespace basalt {
namespace {

pb::RaftRolePB RoleToPB(const ReplicaStatus& st, const std::string& server_uuid) {
  return IsLearner(st.config, server_uuid) ? pb::LEARNER : RaftRoleToPB(st.role);
}

pb::TabletStatePB StateToPB(ReplicaState state) {
  switch (state) {
    case ReplicaState::kBootstrapping:
      return pb::TABLET_BOOTSTRAPPING;
    case ReplicaState::kRunning:
      return pb::TABLET_RUNNING;
    case ReplicaState::kStopping:
      return pb::TABLET_STOPPING;
    case ReplicaState::kFailed:
      return pb::TABLET_FAILED;
  }
  return pb::UNKNOWN_TABLET_STATE;
}

void AddPeer(const PeerId& id, pb::RaftPeerPB::MemberType type, const AddressBook& book,
             pb::RaftConfigPB* out) {
  pb::RaftPeerPB* p = out->add_peers();
  p->set_uuid(id);
  p->set_member_type(type);
  if (std::optional<HostPort> hp = book.Get(id)) hp->ToPB(p->mutable_address());
}

}  // namespace

void RaftConfigToPB(const RaftConfig& config, const AddressBook& book, pb::RaftConfigPB* out) {
  for (const PeerId& id : config.voters) AddPeer(id, pb::RaftPeerPB::VOTER, book, out);
  for (const PeerId& id : config.learners) AddPeer(id, pb::RaftPeerPB::NON_VOTER, book, out);
}

void ReplicaStatusToPB(const ReplicaStatus& st, const std::string& server_uuid,
                       const AddressBook& book, bool need_schema, const Schema* schema,
                       pb::TabletStatusPB* out) {
  out->set_tablet_id(st.tablet_id);
  out->set_table_id(st.table_id);
  out->set_table_name(st.table_name);
  st.partition.ToPB(out->mutable_partition());
  out->set_state(StateToPB(st.state));
  out->set_role(RoleToPB(st, server_uuid));
  out->set_term(st.term);
  out->set_leader_uuid(st.leader_uuid);
  RaftConfigToPB(st.config, book, out->mutable_config());
  if (need_schema && schema != nullptr) schema->ToPB(out->mutable_schema());
  out->set_on_disk_size_bytes(st.on_disk_bytes);
  out->set_memory_bytes(st.memory_bytes);
  out->set_last_applied_index(st.last_applied_index);
  if (!st.error.ok()) StatusToPB(st.error, out->mutable_error());
}

void ReplicaStatusToReport(const ReplicaStatus& st, const std::string& server_uuid,
                           const AddressBook& book,
                           pb::TSHeartbeatRequestPB_ReportedTabletPB* out) {
  out->set_tablet_id(st.tablet_id);
  out->set_state(StateToPB(st.state));
  out->set_role(RoleToPB(st, server_uuid));
  out->set_term(st.term);
  out->set_leader_uuid(st.leader_uuid);
  RaftConfigToPB(st.committed_config, book, out->mutable_config());
  out->set_committed_config_index(st.committed_config_index);
  out->set_latest_config_index(st.config_index);
  for (const auto& [peer, failed] : st.peer_failed) {
    auto* h = out->add_peer_health();
    h->set_uuid(peer);
    h->set_status(failed ? pb::TSHeartbeatRequestPB::ReportedTabletPB::PeerHealthPB::FAILED
                         : pb::TSHeartbeatRequestPB::ReportedTabletPB::PeerHealthPB::HEALTHY);
  }
  out->set_schema_version(st.schema_version);
  if (!st.error.ok()) StatusToPB(st.error, out->mutable_error());
}

void FailedReplicaToPB(const std::string& tablet_id, const absl::Status& error,
                       pb::TabletStatusPB* out) {
  out->set_tablet_id(tablet_id);
  out->set_state(pb::TABLET_FAILED);
  StatusToPB(error, out->mutable_error());
}

void TombstoneToPB(const ReplicaFileHeader& header, pb::TabletStatusPB* out) {
  out->set_tablet_id(header.tablet_id);
  out->set_table_id(header.table_id);
  out->set_table_name(header.table_name);
  out->set_state(pb::TABLET_DELETED);
}

void TombstoneToReport(const ReplicaFileHeader& header,
                       pb::TSHeartbeatRequestPB_ReportedTabletPB* out) {
  out->set_tablet_id(header.tablet_id);
  out->set_state(pb::TABLET_DELETED);
}

void FailedReplicaToReport(const std::string& tablet_id, const absl::Status& error,
                           pb::TSHeartbeatRequestPB_ReportedTabletPB* out) {
  out->set_tablet_id(tablet_id);
  out->set_state(pb::TABLET_FAILED);
  StatusToPB(error, out->mutable_error());
}

}  // namespace basalt
