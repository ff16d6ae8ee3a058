#include "tserver/replica_file.h"

#include <utility>

#include "common/coding.h"
#include "common/crc32c.h"
#include "common/strings.h"
#include "proto/tablet_replica.pb.h"

namespace basalt {
namespace {

// The envelope: 8 bytes of magic, then the masked CRC32C of the payload (4 bytes LE).
constexpr std::string_view kReplicaMagic("BSLTREP1", 8);
constexpr size_t kHeaderSize = 8 + 4;

absl::Status Corrupt(std::string_view path, std::string_view what) {
  return absl::DataLossError(ToAbsl(StrCat(path, ": ", what)));
}

}  // namespace

std::string EncodeReplicaFile(const TabletReplicaMeta& meta) {
  pb::TabletReplicaPB pb;
  pb.set_tablet_id(meta.tablet_id);
  pb.set_table_id(meta.table_id);
  pb.set_table_name(meta.table_name);
  meta.partition.ToPB(pb.mutable_partition());
  meta.partition_schema.ToPB(pb.mutable_partition_schema());
  const std::string payload = pb.SerializeAsString();
  std::string out(kReplicaMagic);
  PutFixed32(&out, crc32c::Mask(crc32c::Value(payload)));
  out += payload;
  return out;
}

absl::StatusOr<TabletReplicaMeta> DecodeReplicaFile(std::string_view data, std::string_view path,
                                                    const Schema& schema) {
  if (data.size() < kHeaderSize || data.substr(0, kReplicaMagic.size()) != kReplicaMagic) {
    return Corrupt(path, "not a replica file (bad magic or size)");
  }
  const std::string_view payload = data.substr(kHeaderSize);
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(data.data() + kReplicaMagic.size()));
  if (stored != crc32c::Value(payload)) return Corrupt(path, "checksum mismatch");
  pb::TabletReplicaPB pb;
  if (!pb.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Corrupt(path, "unparsable TabletReplicaPB");
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
  return meta;
}

}  // namespace basalt
