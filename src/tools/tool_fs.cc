// `basalt fs`: offline inspection of a server's files for debugging (docs/cli.md, "fs").
//
//   fs dump superblock <path>   a tablet superblock (tablet/tablet_metadata.h)
//   fs dump wal <wal_dir>       the WAL segments of one tablet (consensus/log_segment.h)
//   fs dump cfile <data_dir>/blocks/<xx>/<id>   a column file's header fields (cfile_reader.h)
//
// superblock and wal only read (the cfile action opens the block store, which takes its lock: run
// it on a stopped server's data directory). Corrupt files give a DATA_LOSS message naming the file.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cfile/block_manager.h"
#include "cfile/cfile_reader.h"
#include "common/datum.h"
#include "common/env.h"
#include "common/key_encoder.h"
#include "common/schema.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/types.h"
#include "consensus/log_segment.h"
#include "gflags/gflags.h"
#include "proto/tablet_replica.pb.h"
#include "tablet/tablet_metadata.h"
#include "tools/command.h"
#include "tools/output.h"
#include "tools/tool_common.h"

namespace basalt::tools {
namespace {

// ---- Helpers ----

std::string HexEscape(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += absl::StrFormat("%02x", c);
  return out;
}

// An encoded primary key as "(v1, v2)" when it decodes against `schema`, hex otherwise.
std::string FormatEncodedKey(const Schema& schema, std::string_view encoded) {
  if (encoded.empty()) return "<empty>";
  auto key = DecodeKey(schema, encoded);
  if (!key.ok()) return StrCat("0x", HexEscape(encoded));
  std::string out = "(";
  for (size_t i = 0; i < key->size(); ++i) {
    if (i > 0) out += ", ";
    out += (*key)[i].ToString();
  }
  return out + ")";
}

std::string JoinBlocks(const std::vector<BlockId>& blocks) {
  if (blocks.empty()) return "none";
  std::string out;
  for (const BlockId& b : blocks) {
    if (!out.empty()) out += " ";
    out += b.ToString();
  }
  return out;
}

// ---- fs dump superblock ----

void PrintRowSet(const Schema& schema, const RowSetMetadata& rs, std::ostream* out) {
  *out << "  rowset " << rs.id << ": " << rs.num_rows << " rows\n";
  *out << "    min key: " << FormatEncodedKey(schema, rs.min_key) << "\n";
  *out << "    max key: " << FormatEncodedKey(schema, rs.max_key) << "\n";
  *out << "    base snapshot before: " << rs.base_snapshot_before.ToString() << "\n";
  for (const auto& [col_id, block] : rs.column_blocks) {
    const int idx = schema.find_column_by_id(col_id);
    const std::string name = idx >= 0 ? schema.column(idx).name() : "<dropped>";
    *out << "    column " << col_id << " (" << name << "): " << block.ToString() << "\n";
  }
  *out << "    key index: " << rs.key_index_block.ToString() << "\n";
  *out << "    bloom: " << rs.bloom_block.ToString() << "\n";
  *out << "    redo deltas: " << JoinBlocks(rs.redo_blocks) << "\n";
  *out << "    undo deltas: " << JoinBlocks(rs.undo_blocks) << "\n";
}

absl::Status DumpSuperBlock(const std::string& path, std::ostream* out) {
  BASALT_ASSIGN_OR_RETURN(TabletSuperBlock sb, ReadSuperBlock(Env::Default(), path));
  *out << "tablet id: " << sb.tablet_id << "\n";
  *out << "superblock version: " << sb.version << "\n";
  *out << "schema (version " << sb.schema.version() << "): " << sb.schema.ToString() << "\n";
  *out << "durable op index: " << sb.durable_op_index << "\n";
  *out << "max durable timestamp: " << sb.max_durable_timestamp.ToString() << "\n";
  *out << "next rowset id: " << sb.next_rowset_id << "\n";
  uint64_t total_rows = 0;
  for (const RowSetMetadata& rs : sb.rowsets) total_rows += rs.num_rows;
  *out << "rowsets: " << sb.rowsets.size() << " (" << total_rows << " base rows)\n";
  for (const RowSetMetadata& rs : sb.rowsets) PrintRowSet(sb.schema, rs, out);
  *out << "orphaned blocks: " << JoinBlocks(sb.orphaned_blocks) << "\n";
  return absl::OkStatus();
}

// ---- fs dump wal ----

std::string_view EntryTypeName(EntryType type) {
  switch (type) {
    case EntryType::kNoOp:
      return "NO_OP";
    case EntryType::kNormal:
      return "NORMAL";
    case EntryType::kConfigChange:
      return "CONFIG_CHANGE";
  }
  return "UNKNOWN";
}

// One line about a NORMAL entry's data when it is a tablet ReplicateMsgPB.
std::string SummarizeNormalEntry(std::string_view data) {
  pb::ReplicateMsgPB msg;
  if (!msg.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return "unparsable ReplicateMsgPB";
  }
  switch (msg.op_case()) {
    case pb::ReplicateMsgPB::kWrite:
      return absl::StrFormat("write: %d bytes of rows, %d indirect, schema version %d",
                             msg.write().row_operations().rows().size(),
                             msg.write().row_operations().indirect_data().size(),
                             msg.write().schema_version());
    case pb::ReplicateMsgPB::kAlterSchema:
      return absl::StrFormat("alter schema: %d columns, version %d%s",
                             msg.alter_schema().schema().columns_size(),
                             msg.alter_schema().schema().version(),
                             msg.alter_schema().new_table_name().empty()
                                 ? ""
                                 : StrCat(", rename to ", msg.alter_schema().new_table_name()));
    default:
      return "no op";
  }
}

// Adds one row per entry of the valid batches of `scan` over `contents`.
absl::Status AddSegmentEntries(std::string_view contents, const std::string& filename,
                               const SegmentScan& scan, TableWriter* table) {
  std::vector<EntryView> entries;
  for (const ScannedBatch& batch : scan.batches) {
    FrameResult frame = ReadFrame(contents.substr(batch.offset));
    if (frame.state != FrameState::kOk) {
      return absl::DataLossError(StrCat(filename, ": frame at offset ", batch.offset, " changed"));
    }
    BASALT_RETURN_IF_ERROR_PREPEND(DecodeBatch(frame.payload, &entries),
                                   StrCat(filename, ": batch at offset ", batch.offset, ": "));
    for (const EntryView& e : entries) {
      table->AddRow(
          {Cell::String(filename), Cell::Number(StrCat(e.index)), Cell::Number(StrCat(e.term)),
           Cell::String(std::string(EntryTypeName(e.type))), Cell::Number(StrCat(e.timestamp)),
           Cell::Number(StrCat(e.data.size())),
           Cell::String(e.type == EntryType::kNormal ? SummarizeNormalEntry(e.data) : "")});
    }
  }
  return absl::OkStatus();
}

absl::Status DumpWal(const std::string& dir, std::ostream* out, std::ostream* err) {
  Env* env = Env::Default();
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> children, env->GetChildren(dir));
  std::vector<std::pair<uint64_t, std::string>> segments;
  for (const std::string& name : children) {
    uint64_t seq = 0;
    if (ParseSegmentFileName(name, &seq)) segments.emplace_back(seq, name);
  }
  std::sort(segments.begin(), segments.end());
  if (segments.empty()) return absl::NotFoundError(StrCat(dir, ": no WAL segments"));
  BASALT_ASSIGN_OR_RETURN(TableWriter::Format format, OutputFormat());
  TableWriter table(format, {"segment", "index", "term", "type", "timestamp", "bytes", "summary"},
                    out);
  std::vector<std::string> notes;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string path = JoinPath(dir, segments[i].second);
    std::string contents;
    BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &contents));
    const bool last = i + 1 == segments.size();
    absl::StatusOr<SegmentScan> scan = ScanSegment(contents, path, /*allow_torn_tail=*/last);
    if (!scan.ok()) {
      table.Finish();
      return scan.status();
    }
    BASALT_RETURN_IF_ERROR(AddSegmentEntries(contents, segments[i].second, *scan, &table));
    std::string note = absl::StrFormat(
        "%s: seq %d, log id %s, first index %d, prev term %d, %d batches, next index %d",
        segments[i].second, scan->header.seq, scan->header.log_id, scan->header.first_index,
        scan->header.prev_term, scan->batches.size(), scan->next_index);
    if (scan->torn_tail) {
      StrAppend(&note, absl::StrFormat(", TORN TAIL: %d bytes after offset %d",
                                       contents.size() - scan->valid_size, scan->valid_size));
    }
    notes.push_back(std::move(note));
  }
  table.Finish();
  for (const std::string& n : notes) *err << n << "\n";
  return absl::OkStatus();
}

// ---- fs dump cfile ----

// `path` is <data_dir>/blocks/<xx>/<block id>: the block store's layout (cfile/block_manager.h).
absl::Status DumpCFile(const std::string& path, std::ostream* out) {
  const std::vector<std::string> parts = absl::StrSplit(ToAbsl(path), '/');
  std::optional<BlockId> id;
  if (parts.size() >= 3 && parts[parts.size() - 3] == "blocks") {
    id = BlockId::FromString(parts.back());
  }
  if (!id.has_value()) {
    return absl::InvalidArgumentError(
        StrCat("path: '", path, "' is not a block file <data_dir>/blocks/<xx>/<16 hex digits>"));
  }
  // Drop "<xx>/<id>" and then "blocks/".
  std::string data_dir = path.substr(0, path.size() - parts.back().size());
  for (int i = 0; i < 2; ++i) {
    data_dir = data_dir.substr(0, data_dir.find_last_not_of('/') + 1);
    data_dir = data_dir.substr(0, data_dir.find_last_of('/') + 1);
  }
  if (data_dir.empty()) data_dir = ".";
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<BlockManager> bm,
                          BlockManager::Open(Env::Default(), data_dir));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ReadableBlock> block, bm->OpenBlock(*id));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<CFileReader> reader, CFileReader::Open(std::move(block)));
  *out << "block: " << id->ToString() << " (" << reader->name() << ")\n";
  *out << "file size: " << reader->file_size() << "\n";
  *out << "type: " << DataTypeName(reader->type()) << (reader->nullable() ? " NULL" : "") << "\n";
  *out << "encoding: " << EncodingTypeName(reader->encoding()) << "\n";
  *out << "compression: " << CompressionTypeName(reader->compression()) << "\n";
  *out << "sorted: " << (reader->is_sorted() ? "yes" : "no") << "\n";
  *out << "values: " << reader->num_rows() << " (" << reader->null_count() << " null)\n";
  *out << "pages: " << reader->num_pages() << "\n";
  return absl::OkStatus();
}

absl::Status Dump(const ActionContext& ctx) {
  const std::string& kind = ctx.args[0];
  const std::string& path = ctx.args[1];
  if (kind == "superblock") return DumpSuperBlock(path, ctx.out);
  if (kind == "wal") return DumpWal(path, ctx.out, ctx.err);
  if (kind == "cfile") return DumpCFile(path, ctx.out);
  return absl::InvalidArgumentError(
      StrCat("kind: '", kind, "' is not one of superblock, wal, cfile"));
}

}  // namespace

Command FsCommand() {
  Command cmd{"fs", "Inspect the files of a data directory (for debugging)", {}};
  cmd.actions.push_back(Action{
      "dump",
      "Print a superblock, the WAL segments of a directory or a column file",
      "Kinds:\n"
      "  superblock <path>   a tablet superblock: schema, durable op index, rowsets with\n"
      "                      their blocks, keys and row counts, orphaned blocks\n"
      "  wal <wal_dir>       one row per entry (segment, index, term, type, timestamp, size,\n"
      "                      summary of tablet writes and schema changes; --format); segment\n"
      "                      headers and a torn tail are reported on stderr\n"
      "  cfile <block_file>  <data_dir>/blocks/<xx>/<id>: type, encoding, compression, values,\n"
      "                      pages. Opens the block store (takes its lock: stop the server)\n"
      "superblock and wal only read; a corrupt file is an error naming it.",
      {{"kind", "superblock, wal or cfile"}, {"path", "The file or directory to dump"}},
      {"format"},
      Dump});
  return cmd;
}

}  // namespace basalt::tools
