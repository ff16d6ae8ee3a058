#include "tserver/replica_file.h"

#include <algorithm>
#include <utility>

#include "common/envelope.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/tablet_replica.pb.h"

namespace basalt {
namespace {

// The envelope's magic (common/envelope.h).
constexpr std::string_view kReplicaMagic("BSLTREP1", 8);

absl::Status Corrupt(std::string_view path, std::string_view what) {
  return absl::DataLossError(ToAbsl(StrCat(path, ": ", what)));
}

std::string Frame(const pb::TabletReplicaPB& pb) {
  return SealEnvelope(kReplicaMagic, pb.SerializeAsString());
}

absl::StatusOr<pb::TabletReplicaPB> Unframe(std::string_view data, std::string_view path) {
  BASALT_ASSIGN_OR_RETURN(std::string_view payload,
                          OpenEnvelope(data, kReplicaMagic, path, "replica"));
  pb::TabletReplicaPB pb;
  if (!pb.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Corrupt(path, "unparsable TabletReplicaPB");
  }
  if (!pb::TabletReplicaPB::DataState_IsValid(pb.data_state())) {
    return Corrupt(path, StrCat("unknown data state ", static_cast<int>(pb.data_state())));
  }
  return pb;
}

void SetDataDirs(const std::vector<int>& dirs, pb::TabletReplicaPB* pb) {
  pb->clear_data_dirs();
  for (int d : dirs) pb->add_data_dirs(static_cast<uint32_t>(d));
}

std::vector<int> DataDirsOf(const pb::TabletReplicaPB& pb) {
  std::vector<int> dirs(pb.data_dirs().begin(), pb.data_dirs().end());
  if (dirs.empty()) dirs.push_back(0);
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  return dirs;
}

}  // namespace

std::string EncodeReplicaFile(const TabletReplicaMeta& meta, ReplicaDataState state) {
  pb::TabletReplicaPB pb;
  pb.set_tablet_id(meta.tablet_id);
  pb.set_table_id(meta.table_id);
  pb.set_table_name(meta.table_name);
  meta.partition.ToPB(pb.mutable_partition());
  meta.partition_schema.ToPB(pb.mutable_partition_schema());
  pb.set_data_state(static_cast<pb::TabletReplicaPB::DataState>(state));
  SetDataDirs(meta.data_dirs, &pb);
  return Frame(pb);
}

absl::StatusOr<ReplicaFileHeader> PeekReplicaFile(std::string_view data, std::string_view path) {
  BASALT_ASSIGN_OR_RETURN(pb::TabletReplicaPB pb, Unframe(data, path));
  ReplicaFileHeader h;
  h.tablet_id = pb.tablet_id();
  h.table_id = pb.table_id();
  h.table_name = pb.table_name();
  h.state = static_cast<ReplicaDataState>(pb.data_state());
  if (pb.has_tombstone_last_logged()) {
    h.tombstone_last_logged =
        OpId{pb.tombstone_last_logged().term(), pb.tombstone_last_logged().index()};
  }
  h.data_dirs = DataDirsOf(pb);
  return h;
}

absl::StatusOr<std::string> ChangeReplicaFileDataDirs(std::string_view data, std::string_view path,
                                                      const std::vector<int>& data_dirs) {
  BASALT_ASSIGN_OR_RETURN(pb::TabletReplicaPB pb, Unframe(data, path));
  SetDataDirs(data_dirs, &pb);
  return Frame(pb);
}

absl::StatusOr<std::string> ChangeReplicaFileState(std::string_view data, std::string_view path,
                                                   ReplicaDataState state,
                                                   std::optional<OpId> last_logged) {
  BASALT_ASSIGN_OR_RETURN(pb::TabletReplicaPB pb, Unframe(data, path));
  pb.set_data_state(static_cast<pb::TabletReplicaPB::DataState>(state));
  pb.clear_tombstone_last_logged();
  if (last_logged.has_value()) {
    pb.mutable_tombstone_last_logged()->set_term(last_logged->term);
    pb.mutable_tombstone_last_logged()->set_index(last_logged->index);
  }
  return Frame(pb);
}

absl::StatusOr<TabletReplicaMeta> DecodeReplicaFile(std::string_view data, std::string_view path,
                                                    const Schema& schema) {
  BASALT_ASSIGN_OR_RETURN(pb::TabletReplicaPB pb, Unframe(data, path));
  if (pb.data_state() != pb::TabletReplicaPB::READY) {
    return absl::FailedPreconditionError(
        ToAbsl(StrCat(path, ": the replica is not ready (data state ",
                      pb::TabletReplicaPB::DataState_Name(pb.data_state()), ")")));
  }
  absl::StatusOr<Partition> partition = Partition::FromPB(pb.partition());
  if (!partition.ok())
    return Corrupt(path, StrCat("bad partition: ", partition.status().ToString()));
  absl::StatusOr<PartitionSchema> ps = PartitionSchema::FromPB(pb.partition_schema(), schema);
  if (!ps.ok()) return Corrupt(path, StrCat("bad partition schema: ", ps.status().ToString()));
  TabletReplicaMeta meta;
  meta.tablet_id = pb.tablet_id();
  meta.table_id = pb.table_id();
  meta.table_name = pb.table_name();
  meta.partition = std::move(*partition);
  meta.partition_schema = std::move(*ps);
  meta.data_dirs = DataDirsOf(pb);
  return meta;
}

}  // namespace basalt
