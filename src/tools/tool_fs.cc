// `basalt fs`: offline inspection of a server's files for debugging (docs/cli.md, "fs").
//
//   fs dump superblock <path>   a tablet superblock (tablet/tablet_metadata.h)
//   fs dump wal <wal_dir>       the WAL segments of one tablet (consensus/log_segment.h)
//   fs dump cfile <data_dir>/blocks/<xx>/<id>   a column file: header, zone map, page index,
//                               values with --print_values (cfile_reader.h)
//   fs dump replica <data_dir>/tablets/<id>     a tablet server's replica file
//   (tserver/replica_file.h)
//
// Every kind only reads: nothing is locked, created or written, so it runs next to a live server.
// Corrupt files give a DATA_LOSS message naming the file; never a crash.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cfile/block_manager.h"
#include "cfile/cfile_format.h"
#include "cfile/cfile_reader.h"
#include "common/coding.h"
#include "common/column_block.h"
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
#include "tserver/replica_file.h"

DEFINE_bool(print_values, false,
            "Whether 'fs dump cfile' prints every value (row ordinal and value; at most --limit).");
DECLARE_int64(limit);  // tool_table.cc

namespace basalt::tools {
namespace {

// The files of a tablet directory <data_dir>/tablets/<tablet_id> (docs/tserver.md).
constexpr std::string_view kReplicaFileName = "replica";
constexpr std::string_view kSuperBlockFileName = "superblock";

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
  *out << "    key index: "
       << (rs.key_index_block.valid() ? rs.key_index_block.ToString() : "none (the key column)")
       << "\n";
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
    if (scan->preallocated_bytes > 0) {
      StrAppend(&note, absl::StrFormat(", %d preallocated bytes after offset %d",
                                       scan->preallocated_bytes, scan->valid_size));
    }
    notes.push_back(std::move(note));
  }
  table.Finish();
  for (const std::string& n : notes) *err << n << "\n";
  return absl::OkStatus();
}

// ---- fs dump cfile ----

// A value of a column file, for output: DECIMAL with its scale, STRING/VARCHAR raw, FLOAT/DOUBLE
// in their shortest round-trip form, other types as TypeInfo::AppendDebugString renders them
// (BINARY as 0x hex, dates and timestamps in UTC).
Cell FormatValue(const CFileReader& reader, const void* cell) {
  const DataType type = reader.type();
  const TypeInfo& ti = GetTypeInfo(type);
  if (ti.is_decimal()) {
    const absl::int128 v = type == DataType::kDecimal32   ? UnalignedLoad<int32_t>(cell)
                           : type == DataType::kDecimal64 ? UnalignedLoad<int64_t>(cell)
                                                          : UnalignedLoad<absl::int128>(cell);
    return Cell::Number(basalt::FormatDecimal(v, reader.type_attributes().scale));
  }
  if (type == DataType::kString || type == DataType::kVarchar) {
    return Cell::String(std::string(UnalignedLoad<std::string_view>(cell)));
  }
  if (ti.is_floating_point()) {  // The shortest text that reads back as the same value.
    return Cell::Number(type == DataType::kFloat
                            ? FormatFloatingPoint(UnalignedLoad<float>(cell))
                            : FormatFloatingPoint(UnalignedLoad<double>(cell)));
  }
  std::string out;
  ti.AppendDebugString(cell, &out);
  return ti.is_integer() ? Cell::Number(std::move(out)) : Cell::String(std::move(out));
}

// Zone-map or value-index cell bytes, formatted; NULL cell when absent.
Cell FormatCellBytes(const CFileReader& reader, bool present, const std::string& bytes) {
  if (!present) return Cell::Null();
  const cfile_internal::CellValue value(reader.type(), bytes);
  return FormatValue(reader, value.cell());
}

std::string TypeString(const CFileReader& reader) {
  const TypeAttributes& a = reader.type_attributes();
  std::string out(DataTypeName(reader.type()));
  if (GetTypeInfo(reader.type()).is_decimal()) StrAppend(&out, "(", a.precision, ",", a.scale, ")");
  if (reader.type() == DataType::kVarchar) StrAppend(&out, "(", a.length, ")");
  return out;
}

std::string CellText(const Cell& c) { return c.kind == Cell::kNull ? "none" : c.text; }

void PrintCFileHeader(const CFileReader& reader, std::ostream* out) {
  *out << "block: " << reader.name().substr(reader.name().find(' ') + 1) << "\n";
  *out << "file size: " << reader.file_size() << "\n";
  *out << "type: " << TypeString(reader) << (reader.nullable() ? " NULL" : " NOT NULL") << "\n";
  *out << "encoding: " << EncodingTypeName(reader.encoding()) << "\n";
  *out << "compression: " << CompressionTypeName(reader.compression()) << "\n";
  *out << "sorted: " << (reader.is_sorted() ? "yes (key file, value index)" : "no") << "\n";
  *out << "values: " << reader.num_rows() << " (" << reader.null_count() << " null)\n";
  const auto& min = reader.min_value();
  const auto& max = reader.max_value();
  *out << "min: " << CellText(FormatCellBytes(reader, min.has_value(), min ? min->bytes() : ""))
       << "\n";
  *out << "max: " << CellText(FormatCellBytes(reader, max.has_value(), max ? max->bytes() : ""))
       << "\n";
  *out << "pages: " << reader.num_pages() << "\n";
}

// One row per page: its row range, null count, byte range and zone map (and, for key files, the
// first value from the value index).
void PrintPages(const CFileReader& reader, TableWriter::Format format, std::ostream* out) {
  std::vector<std::string> headers = {"page",   "first_row", "last_row", "rows", "nulls",
                                      "offset", "bytes",     "min",      "max"};
  if (reader.is_sorted()) headers.push_back("first_value");
  TableWriter table(format, headers, out);
  const auto& pages = reader.page_index();
  for (size_t i = 0; i < pages.size(); ++i) {
    const cfile_internal::PageIndexEntry& e = pages[i];
    std::vector<Cell> row = {Cell::Number(StrCat(i)),
                             Cell::Number(StrCat(e.first_ordinal)),
                             Cell::Number(StrCat(e.first_ordinal + e.num_rows - 1)),
                             Cell::Number(StrCat(e.num_rows)),
                             Cell::Number(StrCat(e.null_count)),
                             Cell::Number(StrCat(e.offset)),
                             Cell::Number(StrCat(e.size)),
                             FormatCellBytes(reader, e.has_min, e.min),
                             FormatCellBytes(reader, e.has_max, e.max)};
    if (reader.is_sorted() && i < reader.value_index().size()) {
      row.push_back(FormatCellBytes(reader, true, reader.value_index()[i].bytes()));
    }
    table.AddRow(std::move(row));
  }
  table.Finish();
}

// One row per value (row ordinal, value), the first --limit rows (all if negative).
absl::Status PrintValues(const CFileReader& reader, TableWriter::Format format, std::ostream* out) {
  constexpr size_t kBatchRows = 1024;
  const uint64_t limit =
      FLAGS_limit < 0 ? reader.num_rows() : std::min<uint64_t>(FLAGS_limit, reader.num_rows());
  TableWriter table(format, {"row", "value"}, out);
  ColumnBlockBuffer buffer(reader.type(), kBatchRows, reader.nullable());
  std::unique_ptr<CFileIterator> it = reader.NewIterator();
  absl::Status s;
  while (s.ok() && it->ordinal() < limit) {
    const uint64_t first = it->ordinal();
    size_t got = 0;
    buffer.arena()->Reset();
    s = it->Scan(std::min<uint64_t>(kBatchRows, limit - first), buffer.block(), &got);
    if (s.ok() && got == 0) s = absl::DataLossError(StrCat(reader.name(), ": rows missing"));
    const ColumnBlock& block = buffer.block_ref();
    for (size_t i = 0; s.ok() && i < got; ++i) {
      table.AddRow({Cell::Number(StrCat(first + i)),
                    block.is_null(i) ? Cell::Null() : FormatValue(reader, block.cell(i))});
    }
  }
  table.Finish();
  return s;
}

// The block id and data directory of a block file path <data_dir>/blocks/<xx>/<id>: the block
// store's layout (cfile/block_manager.h).
absl::Status ParseBlockPath(const std::string& path, std::string* data_dir, BlockId* id) {
  const std::vector<std::string> parts = absl::StrSplit(ToAbsl(path), '/');
  std::optional<BlockId> parsed;
  if (parts.size() >= 3 && parts[parts.size() - 3] == "blocks") {
    parsed = BlockId::FromString(parts.back());
  }
  if (!parsed.has_value()) {
    return absl::InvalidArgumentError(
        StrCat("path: '", path, "' is not a block file <data_dir>/blocks/<xx>/<16 hex digits>"));
  }
  *id = *parsed;
  // Drop "<xx>/<id>" and then "blocks/".
  *data_dir = path.substr(0, path.size() - parts.back().size());
  for (int i = 0; i < 2; ++i) {
    *data_dir = data_dir->substr(0, data_dir->find_last_not_of('/') + 1);
    *data_dir = data_dir->substr(0, data_dir->find_last_of('/') + 1);
  }
  if (data_dir->empty()) data_dir->assign(1, '.');  // Not = ".": GCC 12 warns -Wrestrict.
  return absl::OkStatus();
}

// Reads the block without opening the block store (no lock, nothing written): safe next to a
// running server.
absl::Status DumpCFile(const std::string& path, std::ostream* out) {
  std::string data_dir;
  BlockId id;
  BASALT_RETURN_IF_ERROR(ParseBlockPath(path, &data_dir, &id));
  BASALT_ASSIGN_OR_RETURN(TableWriter::Format format, OutputFormat());
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ReadableBlock> block,
                          BlockManager::OpenBlockReadOnly(Env::Default(), data_dir, id));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<CFileReader> reader, CFileReader::Open(std::move(block)));
  PrintCFileHeader(*reader, out);
  PrintPages(*reader, format, out);
  if (FLAGS_print_values) return PrintValues(*reader, format, out);
  return absl::OkStatus();
}

// ---- fs dump replica ----

// `path` is a tablet directory <data_dir>/tablets/<id> or its replica file. The partition schema
// names columns by id, resolved against the schema in the tablet's superblock beside it.
absl::Status DumpReplica(const std::string& path, std::ostream* out) {
  Env* env = Env::Default();
  const bool is_file = BaseName(path) == kReplicaFileName;
  const std::string tablet_dir = is_file ? DirName(path) : path;
  const std::string replica_path = is_file ? path : JoinPath(path, kReplicaFileName);
  const std::string superblock_path = JoinPath(tablet_dir, kSuperBlockFileName);
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, replica_path, &data));
  absl::StatusOr<TabletSuperBlock> sb = ReadSuperBlock(env, superblock_path);
  if (!sb.ok()) {
    return PrependToStatus(sb.status(),
                           StrCat("reading the tablet's schema from ", superblock_path));
  }
  BASALT_ASSIGN_OR_RETURN(TabletReplicaMeta meta,
                          DecodeReplicaFile(data, replica_path, sb->schema));
  *out << "tablet id: " << meta.tablet_id << "\n";
  *out << "table id: " << meta.table_id << "\n";
  *out << "table name: " << meta.table_name << "\n";
  *out << "partition: " << meta.partition_schema.PartitionDebugString(meta.partition, sb->schema)
       << "\n";
  *out << "partition schema: " << meta.partition_schema.ToString(sb->schema) << "\n";
  *out << "schema (version " << sb->schema.version() << "): " << sb->schema.ToString() << "\n";
  *out << "data directories (positions in --fs_data_dirs): " << absl::StrJoin(meta.data_dirs, ",")
       << "\n";
  if (meta.tablet_id != BaseName(tablet_dir)) {
    *out << "WARNING: the tablet id differs from the directory name '" << BaseName(tablet_dir)
         << "' (the tablet server treats this replica as FAILED)\n";
  }
  return absl::OkStatus();
}

absl::Status Dump(const ActionContext& ctx) {
  const std::string& kind = ctx.args[0];
  const std::string& path = ctx.args[1];
  if (kind == "superblock") return DumpSuperBlock(path, ctx.out);
  if (kind == "wal") return DumpWal(path, ctx.out, ctx.err);
  if (kind == "cfile") return DumpCFile(path, ctx.out);
  if (kind == "replica") return DumpReplica(path, ctx.out);
  return absl::InvalidArgumentError(
      StrCat("kind: '", kind, "' is not one of superblock, wal, cfile, replica"));
}

}  // namespace

Command FsCommand() {
  Command cmd{"fs", "Inspect the files of a data directory (for debugging)", {}};
  cmd.actions.push_back(Action{
      "dump",
      "Print a superblock, the WAL of a tablet, a column file or a replica file",
      "Kinds:\n"
      "  superblock <path>   a tablet superblock: schema, durable op index, rowsets with\n"
      "                      their blocks, keys and row counts, orphaned blocks\n"
      "  wal <wal_dir>       one row per entry (segment, index, term, type, timestamp, size,\n"
      "                      summary of tablet writes and schema changes; --format); segment\n"
      "                      headers and a torn tail are reported on stderr\n"
      "  cfile <block_file>  <data_dir>/blocks/<xx>/<id>: type, encoding, compression, values,\n"
      "                      zone map, then one row per page (rows, NULLs, byte offset and\n"
      "                      size, zone map, first value of key files; --format);\n"
      "                      --print_values adds every value (up to --limit rows)\n"
      "  replica <tablet_dir>  <data_dir>/tablets/<tablet_id> (or its replica file): tablet\n"
      "                      and table ids, table name, partition and partition schema\n"
      "Every kind only reads (no lock is taken, nothing is written), so it is safe on a running\n"
      "server's directory; a corrupt file is an error naming it.",
      {{"kind", "superblock, wal, cfile or replica"}, {"path", "The file or directory to dump"}},
      {"format", "print_values", "limit"},
      Dump});
  cmd.actions.push_back(FsSpaceAction());
  return cmd;
}

}  // namespace basalt::tools
