#include "tablet/tablet_metadata.h"

#include <cstring>
#include <optional>
#include <utility>

#include <glog/logging.h>

#include "absl/container/flat_hash_set.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/tablet_metadata.pb.h"

namespace basalt {

namespace {

// "bsltsblk": tells a superblock from any other file.
constexpr char kMagic[8] = {'b', 's', 'l', 't', 's', 'b', 'l', 'k'};
constexpr uint32_t kFormatVersion = 1;
// Envelope: magic 8, version 4, payload length 4, masked CRC 4.
constexpr size_t kEnvelopeSize = 20;
constexpr size_t kCrcCoveredHeader = 16;
// Far above any real superblock (10,000 rowsets of 50 columns take about 10 MiB), so a corrupt
// length is caught before it is trusted.
constexpr uint32_t kMaxPayloadBytes = 256 << 20;

// CRC32C of the envelope's first 16 bytes followed by the payload.
uint32_t EnvelopeCrc(const char* envelope, std::string_view payload) {
  return crc32c::Extend(crc32c::Value(envelope, kCrcCoveredHeader), payload.data(), payload.size());
}

// ---- Validation: each check returns a description of the first violation, or nullopt. ----

using Violation = std::optional<std::string>;

// Adds `id` to `seen`; a violation if it is invalid or already there.
Violation AddBlock(BlockId id, std::string_view what, absl::flat_hash_set<BlockId>* seen) {
  if (!id.valid()) return StrCat(what, " has an invalid block id 0");
  if (!seen->insert(id).second) return StrCat(what, " lists block ", id.ToString(), " again");
  return std::nullopt;
}

Violation CheckRowSetBlocks(const RowSetMetadata& rs, const Schema& schema,
                            const std::string& where, absl::flat_hash_set<BlockId>* seen) {
  // A key of one integer column has no key index: that column's file serves (DiskRowSet checks
  // it). Key columns never change, so the tablet schema tells for every rowset.
  Violation v = rs.key_index_block.valid() || SingleIntegerKeyWidth(schema) == 0
                    ? AddBlock(rs.key_index_block, StrCat(where, " key index"), seen)
                    : std::nullopt;
  if (!v) v = AddBlock(rs.bloom_block, StrCat(where, " bloom filter"), seen);
  for (size_t i = 0; !v && i < rs.column_blocks.size(); ++i) {
    v = AddBlock(rs.column_blocks[i].second, StrCat(where, " column ", rs.column_blocks[i].first),
                 seen);
  }
  for (size_t i = 0; !v && i < rs.redo_blocks.size(); ++i) {
    v = AddBlock(rs.redo_blocks[i], StrCat(where, " REDO delta ", i), seen);
  }
  for (size_t i = 0; !v && i < rs.undo_blocks.size(); ++i) {
    v = AddBlock(rs.undo_blocks[i], StrCat(where, " UNDO delta ", i), seen);
  }
  return v;
}

Violation CheckRowSetColumns(const RowSetMetadata& rs, const Schema& schema,
                             const std::string& where) {
  absl::flat_hash_set<ColumnId> ids;
  for (const auto& [id, block] : rs.column_blocks) {
    if (!ids.insert(id).second) return StrCat(where, " lists column id ", id, " twice");
    if (schema.find_column_by_id(id) < 0 && id >= schema.next_column_id()) {
      return StrCat(where, " has column id ", id, ", never used by the schema (next column id ",
                    schema.next_column_id(), ")");
    }
  }
  for (int i = 0; i < schema.num_key_columns(); ++i) {
    if (!ids.contains(schema.column_id(i))) {
      return StrCat(where, " lacks key column ", schema.column(i).name());
    }
  }
  return std::nullopt;
}

Violation CheckRowSet(const TabletSuperBlock& sb, size_t index,
                      absl::flat_hash_set<int64_t>* rowset_ids,
                      absl::flat_hash_set<BlockId>* blocks) {
  const RowSetMetadata& rs = sb.rowsets[index];
  const std::string where = StrCat("rowset ", rs.id, " (#", index, ")");
  if (rs.id < 0 || rs.id >= sb.next_rowset_id) {
    return StrCat(where, " has an id outside [0, next_rowset_id ", sb.next_rowset_id, ")");
  }
  if (!rowset_ids->insert(rs.id).second) return StrCat(where, " repeats a rowset id");
  if (rs.num_rows == 0) return StrCat(where, " has no rows");
  if (rs.min_key > rs.max_key) return StrCat(where, " has min_key > max_key");
  if (!rs.base_snapshot_before.is_valid()) {
    return StrCat(where, " has an invalid base_snapshot_before");
  }
  Violation v = CheckRowSetColumns(rs, sb.schema, where);
  if (!v) v = CheckRowSetBlocks(rs, sb.schema, where, blocks);
  return v;
}

Violation CheckSuperBlock(const TabletSuperBlock& sb) {
  if (sb.tablet_id.empty()) return "empty tablet id";
  if (sb.schema.num_columns() == 0) return "empty schema";
  if (sb.next_rowset_id < 0) return StrCat("negative next_rowset_id ", sb.next_rowset_id);
  if (sb.durable_op_index < 0) return StrCat("negative durable_op_index ", sb.durable_op_index);
  if (!sb.max_durable_timestamp.is_valid()) return "invalid max_durable_timestamp";
  if (!sb.history_gc_mark.is_valid()) return "invalid history_gc_mark";
  absl::flat_hash_set<int64_t> rowset_ids;
  absl::flat_hash_set<BlockId> blocks;
  for (size_t i = 0; i < sb.rowsets.size(); ++i) {
    if (Violation v = CheckRowSet(sb, i, &rowset_ids, &blocks)) return v;
  }
  for (size_t i = 0; i < sb.orphaned_blocks.size(); ++i) {
    if (Violation v = AddBlock(sb.orphaned_blocks[i], StrCat("orphaned block #", i), &blocks)) {
      return v;
    }
  }
  return std::nullopt;
}

// ---- Protobuf conversion. ----

void RowSetToPB(const RowSetMetadata& rs, pb::RowSetDataPB* pb) {
  pb->set_id(rs.id);
  for (const auto& [column_id, block] : rs.column_blocks) {
    pb::RowSetDataPB::ColumnBlockPB* cb = pb->add_column_blocks();
    cb->set_column_id(column_id);
    cb->set_block_id(block.value());
  }
  pb->set_key_index_block(rs.key_index_block.value());
  pb->set_bloom_block(rs.bloom_block.value());
  for (BlockId b : rs.redo_blocks) pb->add_redo_blocks(b.value());
  for (BlockId b : rs.undo_blocks) pb->add_undo_blocks(b.value());
  pb->set_min_key(rs.min_key);
  pb->set_max_key(rs.max_key);
  pb->set_num_rows(rs.num_rows);
  pb->set_base_snapshot_before(rs.base_snapshot_before.value());
}

RowSetMetadata RowSetFromPB(const pb::RowSetDataPB& pb) {
  RowSetMetadata rs;
  rs.id = pb.id();
  rs.column_blocks.reserve(pb.column_blocks_size());
  for (const auto& cb : pb.column_blocks()) {
    rs.column_blocks.emplace_back(cb.column_id(), BlockId(cb.block_id()));
  }
  rs.key_index_block = BlockId(pb.key_index_block());
  rs.bloom_block = BlockId(pb.bloom_block());
  for (uint64_t b : pb.redo_blocks()) rs.redo_blocks.push_back(BlockId(b));
  for (uint64_t b : pb.undo_blocks()) rs.undo_blocks.push_back(BlockId(b));
  rs.min_key = pb.min_key();
  rs.max_key = pb.max_key();
  rs.num_rows = pb.num_rows();
  rs.base_snapshot_before = HybridTime(pb.base_snapshot_before());
  return rs;
}

void SuperBlockToPB(const TabletSuperBlock& sb, pb::TabletSuperBlockPB* pb) {
  pb->set_tablet_id(sb.tablet_id);
  sb.schema.ToPB(pb->mutable_schema());
  for (const RowSetMetadata& rs : sb.rowsets) RowSetToPB(rs, pb->add_rowsets());
  pb->set_next_rowset_id(sb.next_rowset_id);
  pb->set_durable_op_index(sb.durable_op_index);
  pb->set_max_durable_timestamp(sb.max_durable_timestamp.value());
  for (BlockId b : sb.orphaned_blocks) pb->add_orphaned_blocks(b.value());
  pb->set_version(sb.version);
  pb->set_history_gc_mark(sb.history_gc_mark.value());
}

absl::StatusOr<TabletSuperBlock> SuperBlockFromPB(const pb::TabletSuperBlockPB& pb) {
  TabletSuperBlock sb;
  sb.tablet_id = pb.tablet_id();
  BASALT_ASSIGN_OR_RETURN(sb.schema, Schema::FromPB(pb.schema()));
  sb.rowsets.reserve(pb.rowsets_size());
  for (const auto& rs : pb.rowsets()) sb.rowsets.push_back(RowSetFromPB(rs));
  sb.next_rowset_id = pb.next_rowset_id();
  sb.durable_op_index = pb.durable_op_index();
  sb.max_durable_timestamp = HybridTime(pb.max_durable_timestamp());
  for (uint64_t b : pb.orphaned_blocks()) sb.orphaned_blocks.push_back(BlockId(b));
  sb.version = pb.version();
  sb.history_gc_mark = HybridTime(pb.history_gc_mark());
  return sb;
}

}  // namespace

bool TabletSuperBlock::operator==(const TabletSuperBlock& other) const {
  return tablet_id == other.tablet_id && schema.Equals(other.schema) &&
         schema.version() == other.schema.version() &&
         schema.next_column_id() == other.schema.next_column_id() && rowsets == other.rowsets &&
         next_rowset_id == other.next_rowset_id && durable_op_index == other.durable_op_index &&
         max_durable_timestamp == other.max_durable_timestamp &&
         orphaned_blocks == other.orphaned_blocks && version == other.version &&
         history_gc_mark == other.history_gc_mark;
}

absl::Status ValidateSuperBlock(const TabletSuperBlock& sb) {
  if (Violation v = CheckSuperBlock(sb)) {
    return absl::InvalidArgumentError(
        StrCat("invalid superblock of tablet ", sb.tablet_id, ": ", *v));
  }
  return absl::OkStatus();
}

std::string EncodeSuperBlock(const TabletSuperBlock& sb) {
  pb::TabletSuperBlockPB pb;
  SuperBlockToPB(sb, &pb);
  std::string payload;
  CHECK(pb.SerializeToString(&payload));
  CHECK_LE(payload.size(), kMaxPayloadBytes) << "superblock of tablet " << sb.tablet_id;
  std::string out(kEnvelopeSize, '\0');
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  EncodeFixed32(out.data() + 8, kFormatVersion);
  EncodeFixed32(out.data() + 12, static_cast<uint32_t>(payload.size()));
  EncodeFixed32(out.data() + 16, crc32c::Mask(EnvelopeCrc(out.data(), payload)));
  out.append(payload);
  return out;
}

absl::StatusOr<TabletSuperBlock> DecodeSuperBlock(std::string_view data,
                                                  std::string_view filename) {
  auto corrupt = [&](std::string_view what) {
    return absl::DataLossError(StrCat("superblock ", filename, " is corrupt: ", what));
  };
  if (data.size() < kEnvelopeSize) {
    return corrupt(
        StrCat("only ", data.size(), " bytes, less than the ", kEnvelopeSize, "-byte header"));
  }
  if (std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0)
    return corrupt("bad magic at offset 0");
  const uint32_t length = DecodeFixed32(data.data() + 12);
  if (length > kMaxPayloadBytes || data.size() != kEnvelopeSize + length) {
    return corrupt(StrCat("payload length ", length, " at offset 12 does not match the file size ",
                          data.size()));
  }
  const std::string_view payload = data.substr(kEnvelopeSize);
  if (crc32c::Unmask(DecodeFixed32(data.data() + 16)) != EnvelopeCrc(data.data(), payload)) {
    return corrupt("checksum mismatch (offset 16)");
  }
  const uint32_t version = DecodeFixed32(data.data() + 8);
  if (version != kFormatVersion) {
    return corrupt(StrCat("unsupported format version ", version, " at offset 8"));
  }
  pb::TabletSuperBlockPB pb;
  if (!pb.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return corrupt(StrCat("unparsable payload at offset ", kEnvelopeSize));
  }
  absl::StatusOr<TabletSuperBlock> sb = SuperBlockFromPB(pb);
  if (!sb.ok()) return corrupt(StrCat("bad schema: ", sb.status().message()));
  if (Violation v = CheckSuperBlock(*sb)) return corrupt(*v);
  return sb;
}

absl::Status WriteSuperBlock(Env* env, const std::string& path, const TabletSuperBlock& sb) {
  BASALT_RETURN_IF_ERROR(ValidateSuperBlock(sb));
  BASALT_RETURN_IF_ERROR_PREPEND(WriteFileAtomically(env, path, EncodeSuperBlock(sb)),
                                 StrCat("writing superblock ", path));
  return absl::OkStatus();
}

absl::StatusOr<TabletSuperBlock> ReadSuperBlock(Env* env, const std::string& path) {
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &data));
  return DecodeSuperBlock(data, path);
}

}  // namespace basalt
