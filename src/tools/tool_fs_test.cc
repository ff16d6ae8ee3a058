// Tests of `basalt fs dump`: real files written by the tablet metadata writer, the cfile writer
// and the WAL, dumped through RunTool, then corrupted.

#include <unistd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "cfile/block_manager.h"
#include "cfile/cfile_writer.h"
#include "common/crc32c.h"
#include "common/datum.h"
#include "common/env.h"
#include "common/key_encoder.h"
#include "common/partition.h"
#include "common/schema.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "consensus/log.h"
#include "consensus/log_segment.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "proto/tablet_replica.pb.h"
#include "tablet/tablet_metadata.h"
#include "tools/command.h"
#include "tools/tool_common.h"
#include "tserver/replica_file.h"

DECLARE_bool(print_values);
DECLARE_int64(limit);
DECLARE_string(format);

namespace basalt::tools {
namespace {
namespace tool_fs_test_file {

class ToolFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    std::string parent = tmp != nullptr && *tmp != '\0' ? tmp : ::testing::TempDir();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = JoinPath(parent, StrCat("tool_fs_test.", info->name(), ".", getpid()));
    ASSERT_TRUE(env_->CreateDir(dir_).ok() || env_->FileExists(dir_));
  }
  void TearDown() override { (void)env_->DeleteDirRecursively(dir_); }

  // Runs `basalt fs dump <kind> <path>`; returns the exit code.
  int Dump(const std::string& kind, const std::string& path) {
    out_.str("");
    err_.str("");
    return RunTool(AllCommands(), {"fs", "dump", kind, path}, false, &out_, &err_);
  }

  void Rewrite(const std::string& path, const std::string& contents) {
    BASALT_ASSERT_OK(WriteFileAtomically(env_, path, contents));
  }

  std::string Read(const std::string& path) {
    std::string data;
    BASALT_EXPECT_OK(ReadFileToString(env_, path, &data));
    return data;
  }

  Env* env_ = Env::Default();
  std::string dir_;
  std::ostringstream out_;
  std::ostringstream err_;
};

Schema TestSchema() {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("name", DataType::kString, true)}, 1);
  CHECK(s.ok()) << s.status();
  return *s;
}

// A superblock of TestSchema() with one rowset of 777 rows, keys -5 to 4242: columns in blocks
// 0x10 and 0x11, key index 0x12, bloom 0x13, no deltas.
TabletSuperBlock TestSuperBlock(const std::string& tablet_id) {
  TabletSuperBlock sb;
  sb.tablet_id = tablet_id;
  sb.schema = TestSchema();
  RowSetMetadata rs;
  rs.id = 0;
  rs.column_blocks = {{0, BlockId(0x10)}, {1, BlockId(0x11)}};
  rs.key_index_block = BlockId(0x12);
  rs.bloom_block = BlockId(0x13);
  rs.min_key = EncodeKey(sb.schema, std::vector<Datum>{Datum::Int32(-5)});
  rs.max_key = EncodeKey(sb.schema, std::vector<Datum>{Datum::Int32(4242)});
  rs.num_rows = 777;
  rs.base_snapshot_before = HybridTime::FromMicros(1'700'000'000'000'000, 0);
  sb.rowsets.push_back(rs);
  sb.next_rowset_id = 1;
  return sb;
}

TEST_F(ToolFsTest, DumpSuperBlock) {
  TabletSuperBlock sb = TestSuperBlock("tablet-abc");
  sb.rowsets[0].redo_blocks = {BlockId(0x14)};
  sb.durable_op_index = 31337;
  sb.orphaned_blocks = {BlockId(0x99)};
  sb.version = 3;
  const std::string path = JoinPath(dir_, "superblock");
  BASALT_ASSERT_OK(WriteSuperBlock(env_, path, sb));

  ASSERT_EQ(Dump("superblock", path), 0) << err_.str();
  const std::string out = out_.str();
  EXPECT_NE(out.find("tablet id: tablet-abc"), std::string::npos) << out;
  EXPECT_NE(out.find(sb.schema.ToString()), std::string::npos) << out;
  EXPECT_NE(out.find("durable op index: 31337"), std::string::npos) << out;
  EXPECT_NE(out.find("rowset 0: 777 rows"), std::string::npos) << out;
  EXPECT_NE(out.find("min key: (-5)"), std::string::npos) << out;
  EXPECT_NE(out.find("max key: (4242)"), std::string::npos) << out;
  EXPECT_NE(out.find("column 1 (name): " + BlockId(0x11).ToString()), std::string::npos) << out;
  EXPECT_NE(out.find("redo deltas: " + BlockId(0x14).ToString()), std::string::npos) << out;
  EXPECT_NE(out.find("orphaned blocks: " + BlockId(0x99).ToString()), std::string::npos) << out;

  // Corruption: truncated and bit-flipped files are errors naming the file.
  const std::string good = Read(path);
  Rewrite(path, good.substr(0, good.size() / 2));
  EXPECT_EQ(Dump("superblock", path), 1);
  EXPECT_NE(err_.str().find(path), std::string::npos) << err_.str();
  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x40;
  Rewrite(path, flipped);
  EXPECT_EQ(Dump("superblock", path), 1);
  EXPECT_NE(err_.str().find(path), std::string::npos) << err_.str();
  EXPECT_EQ(Dump("superblock", JoinPath(dir_, "missing")), 1);
}

// `fs space`: block files of known sizes in two directories, named by a superblock by kind, one
// that no superblock names, and a WAL segment.
TEST_F(ToolFsTest, SpaceCountsBlocksByKind) {
  const std::string d0 = JoinPath(dir_, "d0");
  const std::string d1 = JoinPath(dir_, "d1");
  for (const std::string& d :
       {JoinPath(JoinPath(d0, "tablets"), "t1"), JoinPath(JoinPath(d0, "blocks"), "00"),
        JoinPath(JoinPath(d1, "blocks"), "01"), JoinPath(JoinPath(d0, "wals"), "t1"),
        JoinPath(d0, "server-wal")}) {
    BASALT_ASSERT_OK(env_->CreateDirs(d));
  }
  auto block = [&](const std::string& d, const std::string& sub, uint64_t id, size_t size) {
    Rewrite(JoinPath(JoinPath(JoinPath(d, "blocks"), sub), BlockId(id).ToString()),
            std::string(size, 'b'));
  };
  block(d0, "00", 0x10, 400);   // key column
  block(d1, "01", 0x11, 300);   // name column, in the second directory
  block(d0, "00", 0x12, 100);   // key index
  block(d1, "01", 0x13, 50);    // bloom
  block(d0, "00", 0x14, 20);    // undo
  block(d0, "00", 0x99, 1000);  // named by no superblock
  // WAL segments of both layouts (--log_per_server and not): 40 + 24 bytes.
  Rewrite(JoinPath(JoinPath(JoinPath(d0, "wals"), "t1"), "wal-000000001"), std::string(40, 'w'));
  Rewrite(JoinPath(JoinPath(d0, "server-wal"), "wal-000000001"), std::string(24, 'w'));
  TabletSuperBlock sb = TestSuperBlock("t1");
  sb.rowsets[0].undo_blocks = {BlockId(0x14)};
  sb.rowsets[0].num_rows = 100;
  const std::string sb_path = JoinPath(JoinPath(JoinPath(d0, "tablets"), "t1"), "superblock");
  BASALT_ASSERT_OK(WriteSuperBlock(env_, sb_path, sb));

  const std::string saved_format = FLAGS_format;
  FLAGS_format = "csv";
  auto space = [&](const std::string& dirs) {
    out_.str("");
    err_.str("");
    return RunTool(AllCommands(), {"fs", "space", dirs}, false, &out_, &err_);
  };
  ASSERT_EQ(space(d0 + "," + d1), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "kind,bytes,bytes_per_row,rows\n"
            "column key,400,4.000,100\n"
            "column name,300,3.000,100\n"
            "key index,100,1.000,100\n"
            "bloom,50,0.500,100\n"
            "undo deltas,20,0.200,100\n"
            "rowsets total,870,8.700,100\n"
            "other blocks,1000,10.000,100\n"
            "wal,64,0.640,100\n");
  // Without the second directory its blocks are not found: counted nowhere.
  ASSERT_EQ(space(d0), 0) << err_.str();
  EXPECT_NE(out_.str().find("rowsets total,520,5.200,100"), std::string::npos) << out_.str();

  // A corrupt superblock is an error naming it; so is a directory that is not a data directory.
  const std::string good = Read(sb_path);
  Rewrite(sb_path, good.substr(0, good.size() - 5));
  EXPECT_EQ(space(d0), 1);
  EXPECT_NE(err_.str().find(sb_path), std::string::npos) << err_.str();
  EXPECT_EQ(space(JoinPath(dir_, "missing")), 1);
  EXPECT_NE(err_.str().find("missing"), std::string::npos) << err_.str();
  FLAGS_format = saved_format;
}

std::string WriteEntryData(uint32_t schema_version, size_t row_bytes) {
  pb::ReplicateMsgPB msg;
  msg.mutable_write()->set_schema_version(schema_version);
  msg.mutable_write()->mutable_row_operations()->set_rows(std::string(row_bytes, 'r'));
  return msg.SerializeAsString();
}

TEST_F(ToolFsTest, DumpWal) {
  const std::string wal_dir = JoinPath(dir_, "wal");
  {
    LogOptions options;
    options.log_id = "tablet-wal";
    auto log = Log::Open(env_, wal_dir, options);
    BASALT_ASSERT_OK(log);
    BASALT_ASSERT_OK((*log)->Start());
    std::vector<LogEntry> entries(3);
    entries[0] = LogEntry{1, 1, EntryType::kNoOp, 0, ""};
    entries[1] = LogEntry{1, 2, EntryType::kNormal, 123456, WriteEntryData(7, 40)};
    pb::ReplicateMsgPB alter;
    alter.mutable_alter_schema()->mutable_schema()->set_version(8);
    entries[2] = LogEntry{2, 3, EntryType::kNormal, 123457, alter.SerializeAsString()};
    BASALT_ASSERT_OK((*log)->Append(entries));
    (*log)->Shutdown();
  }
  ASSERT_EQ(Dump("wal", wal_dir), 0) << err_.str();
  std::string out = out_.str();
  EXPECT_NE(out.find("NO_OP"), std::string::npos) << out;
  EXPECT_NE(out.find("write: 40 bytes of rows, 0 indirect, schema version 7"), std::string::npos)
      << out;
  EXPECT_NE(out.find("alter schema: 0 columns, version 8"), std::string::npos) << out;
  EXPECT_NE(out.find("123457"), std::string::npos) << out;
  EXPECT_NE(err_.str().find("log id tablet-wal"), std::string::npos) << err_.str();

  // Find the segment file.
  auto children = env_->GetChildren(wal_dir);
  BASALT_ASSERT_OK(children);
  std::string segment;
  for (const std::string& c : *children) {
    if (c.rfind("wal-", 0) == 0) segment = JoinPath(wal_dir, c);
  }
  ASSERT_FALSE(segment.empty());
  const std::string good = Read(segment);
  absl::StatusOr<SegmentScan> scan = ScanSegment(good, segment, true);
  BASALT_ASSERT_OK(scan);
  ASSERT_EQ(scan->valid_size, good.size());  // A closed segment has its zeros cut off.

  // Zeros the WAL preallocated, as a crash leaves them, are reported.
  Rewrite(segment, good + std::string(4096, '\0'));
  ASSERT_EQ(Dump("wal", wal_dir), 0) << err_.str();
  EXPECT_NE(err_.str().find("4096 preallocated bytes after offset"), std::string::npos)
      << err_.str();

  // A torn tail (the last frame cut short, zeros after it or not) is reported, not an error.
  Rewrite(segment, good.substr(0, scan->valid_size - 5) + std::string(100, '\0'));
  ASSERT_EQ(Dump("wal", wal_dir), 0) << err_.str();
  EXPECT_NE(err_.str().find("TORN TAIL"), std::string::npos) << err_.str();
  Rewrite(segment, good.substr(0, scan->valid_size - 5));
  ASSERT_EQ(Dump("wal", wal_dir), 0) << err_.str();
  EXPECT_NE(err_.str().find("TORN TAIL"), std::string::npos) << err_.str();

  // A damaged header is an error naming the segment.
  std::string flipped = good;
  flipped[2] ^= 0x01;
  Rewrite(segment, flipped);
  EXPECT_EQ(Dump("wal", wal_dir), 1);
  EXPECT_NE(err_.str().find(segment), std::string::npos) << err_.str();

  // Truncated inside the header.
  Rewrite(segment, good.substr(0, 10));
  EXPECT_EQ(Dump("wal", wal_dir), 1);
  EXPECT_NE(err_.str().find(segment), std::string::npos) << err_.str();

  EXPECT_EQ(Dump("wal", JoinPath(dir_, "nowal")), 1);
}

// Every file under `dir` (recursively) with its contents' CRC32C and size: equal snapshots mean
// an unchanged tree (no file created, deleted or written).
std::map<std::string, std::string> SnapshotTree(Env* env, const std::string& dir) {
  std::map<std::string, std::string> out;
  auto children = env->GetChildren(dir);
  BASALT_EXPECT_OK(children);
  if (!children.ok()) return out;
  for (const std::string& c : *children) {
    const std::string path = JoinPath(dir, c);
    auto is_dir = env->IsDirectory(path);
    BASALT_EXPECT_OK(is_dir);
    if (is_dir.ok() && *is_dir) {
      out[path + "/"] = "dir";
      out.merge(SnapshotTree(env, path));
      continue;
    }
    std::string data;
    BASALT_EXPECT_OK(ReadFileToString(env, path, &data)) << path;
    out[path] = StrCat(crc32c::Value(data), "/", data.size());
  }
  return out;
}

class ToolFsCFileTest : public ToolFsTest {
 protected:
  // Writes a column file of `n` rows through a BlockManager of data_dir_ (kept open, so the
  // directory's lock stays held) and returns the block file's path.
  template <typename WriteFn>
  std::string WriteCFile(CFileWriterOptions options, WriteFn write) {
    data_dir_ = JoinPath(dir_, "data");
    if (bm_ == nullptr) {
      auto bm = BlockManager::Open(env_, data_dir_);
      BASALT_EXPECT_OK(bm);
      bm_ = std::move(*bm);
    }
    auto block = bm_->CreateBlock();
    BASALT_EXPECT_OK(block);
    const BlockId id = (*block)->id();
    CFileWriter writer(options, std::move(*block));
    BASALT_EXPECT_OK(writer.Start());
    write(&writer);
    BASALT_EXPECT_OK(writer.Finish());
    return bm_->BlockPath(id);
  }

  // Runs `basalt fs dump cfile <path> [flags]` with the given flag values.
  int DumpCFile(const std::string& path, bool print_values = false, int64_t limit = -1,
                const std::string& format = "table") {
    gflags::FlagSaver saver;
    FLAGS_print_values = print_values;
    FLAGS_limit = limit;
    FLAGS_format = format;
    return Dump("cfile", path);
  }

  std::string data_dir_;
  std::unique_ptr<BlockManager> bm_;
};

// Int32 values i * 3 in pages of 100 rows: header, file zone map, page index, values.
TEST_F(ToolFsCFileTest, DumpsHeaderPagesAndValues) {
  CFileWriterOptions options;
  options.type = DataType::kInt32;
  options.storage.encoding = EncodingType::kPlain;
  options.storage.block_size_bytes = 400;  // 100 four-byte values per page.
  const std::string path = WriteCFile(options, [](CFileWriter* w) {
    std::vector<int32_t> values(1000);
    for (int i = 0; i < 1000; ++i) values[i] = i * 3;
    BASALT_ASSERT_OK(w->AppendValues(values.data(), nullptr, values.size()));
  });
  ASSERT_EQ(DumpCFile(path), 0) << err_.str();
  std::string out = out_.str();
  EXPECT_NE(out.find("type: INT32 NOT NULL"), std::string::npos) << out;
  EXPECT_NE(out.find("encoding: PLAIN"), std::string::npos) << out;
  EXPECT_NE(out.find("compression: "), std::string::npos) << out;
  EXPECT_NE(out.find("values: 1000 (0 null)"), std::string::npos) << out;
  EXPECT_NE(out.find("min: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("max: 2997\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("first_value"), std::string::npos) << out;  // Not a key file.

  // The page index as CSV: one row per page, rows contiguous, offsets back to back.
  ASSERT_EQ(DumpCFile(path, false, -1, "csv"), 0) << err_.str();
  out = out_.str();
  const size_t table_start = out.find("page,first_row,last_row,rows,nulls,offset,bytes,min,max\n");
  ASSERT_NE(table_start, std::string::npos) << out;
  std::vector<std::string> lines = absl::StrSplit(out.substr(table_start), '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 3u) << out;
  uint64_t next_row = 0, next_offset = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 9u) << lines[i];
    EXPECT_EQ(f[0], StrCat(i - 1));
    EXPECT_EQ(f[1], StrCat(next_row)) << lines[i];
    EXPECT_EQ(f[5], StrCat(next_offset)) << lines[i];
    const uint64_t first = std::stoull(f[1]), last = std::stoull(f[2]), rows = std::stoull(f[3]);
    EXPECT_EQ(last - first + 1, rows) << lines[i];
    EXPECT_EQ(f[7], StrCat(first * 3)) << lines[i];  // Page zone map.
    EXPECT_EQ(f[8], StrCat(last * 3)) << lines[i];
    next_row = last + 1;
    next_offset += std::stoull(f[6]);
  }
  EXPECT_EQ(next_row, 1000u);
  EXPECT_GE(lines.size() - 1, 10u) << "expected pages of about 100 rows";

  // --print_values with --limit.
  ASSERT_EQ(DumpCFile(path, true, 5, "csv"), 0) << err_.str();
  out = out_.str();
  EXPECT_NE(out.find("row,value\n0,0\n1,3\n2,6\n3,9\n4,12\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("\n5,15\n"), std::string::npos) << out;
  ASSERT_EQ(DumpCFile(path, true, -1, "csv"), 0) << err_.str();
  EXPECT_NE(out_.str().find("\n999,2997\n"), std::string::npos);
}

// A nullable string column: NULLs, quoted-free string values, per-page null counts.
TEST_F(ToolFsCFileTest, NullableStrings) {
  CFileWriterOptions options;
  options.type = DataType::kString;
  options.nullable = true;
  const std::string path = WriteCFile(options, [](CFileWriter* w) {
    std::vector<std::string> storage = {"apple", "", "cherry", "", "kiwi"};
    std::vector<std::string_view> cells(storage.begin(), storage.end());
    uint8_t nulls[1] = {0b01010};  // Rows 1 and 3 are NULL.
    BASALT_ASSERT_OK(w->AppendValues(cells.data(), nulls, cells.size()));
  });
  ASSERT_EQ(DumpCFile(path, true, -1, "json"), 0) << err_.str();
  const std::string out = out_.str();
  EXPECT_NE(out.find("type: STRING NULL"), std::string::npos) << out;
  EXPECT_NE(out.find("values: 5 (2 null)"), std::string::npos) << out;
  EXPECT_NE(out.find("min: apple"), std::string::npos) << out;
  EXPECT_NE(out.find("max: kiwi"), std::string::npos) << out;
  EXPECT_NE(out.find("\"nulls\": 2"), std::string::npos) << out;
  EXPECT_NE(out.find("{\"row\": 0, \"value\": \"apple\"}"), std::string::npos) << out;
  EXPECT_NE(out.find("{\"row\": 1, \"value\": null}"), std::string::npos) << out;
  EXPECT_NE(out.find("{\"row\": 4, \"value\": \"kiwi\"}"), std::string::npos) << out;
}

// Floating-point values print exactly (shortest round trip), decimals with their scale.
TEST_F(ToolFsCFileTest, NumbersPrintExactly) {
  CFileWriterOptions doubles;
  doubles.type = DataType::kDouble;
  const std::string double_path = WriteCFile(doubles, [](CFileWriter* w) {
    std::vector<double> values = {0.1, -2.5, 1e300, 123456.789};
    BASALT_ASSERT_OK(w->AppendValues(values.data(), nullptr, values.size()));
  });
  ASSERT_EQ(DumpCFile(double_path, true, -1, "csv"), 0) << err_.str();
  std::string out = out_.str();
  EXPECT_NE(out.find("row,value\n0,0.1\n1,-2.5\n2,1e+300\n3,123456.789\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("min: -2.5\n"), std::string::npos) << out;

  CFileWriterOptions decimals;
  decimals.type = DataType::kDecimal64;
  decimals.type_attributes.precision = 12;
  decimals.type_attributes.scale = 2;
  const std::string decimal_path = WriteCFile(decimals, [](CFileWriter* w) {
    std::vector<int64_t> values = {12345, -7, 0};
    BASALT_ASSERT_OK(w->AppendValues(values.data(), nullptr, values.size()));
  });
  ASSERT_EQ(DumpCFile(decimal_path, true, -1, "csv"), 0) << err_.str();
  out = out_.str();
  EXPECT_NE(out.find("type: DECIMAL64(12,2) NOT NULL"), std::string::npos) << out;
  EXPECT_NE(out.find("row,value\n0,123.45\n1,-0.07\n2,0.00\n"), std::string::npos) << out;
}

// A key file (sorted, value index): the first value of every page is listed.
TEST_F(ToolFsCFileTest, KeyFileListsFirstValues) {
  CFileWriterOptions options;
  options.type = DataType::kInt64;
  options.is_key = true;
  options.storage.encoding = EncodingType::kPlain;
  options.storage.block_size_bytes = 800;  // 100 eight-byte values per page.
  const std::string path = WriteCFile(options, [](CFileWriter* w) {
    std::vector<int64_t> values(500);
    for (int i = 0; i < 500; ++i) values[i] = 1000 + i;
    BASALT_ASSERT_OK(w->AppendValues(values.data(), nullptr, values.size()));
  });
  ASSERT_EQ(DumpCFile(path, false, -1, "csv"), 0) << err_.str();
  const std::string out = out_.str();
  EXPECT_NE(out.find("sorted: yes"), std::string::npos) << out;
  EXPECT_NE(out.find(",first_value\n0,0,"), std::string::npos) << out;
  std::vector<std::string> lines =
      absl::StrSplit(out.substr(out.find("page,")), '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 3u);
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 10u) << lines[i];
    EXPECT_EQ(f[9], StrCat(1000 + std::stoull(f[1]))) << lines[i];  // First value = key of row.
  }
}

// The dump reads without the block store: it works while a BlockManager holds the directory's
// lock, and leaves every file of the directory as it was (no lock file, EPOCH or subdirectory
// written).
TEST_F(ToolFsCFileTest, ReadOnlyWhileTheStoreIsOpen) {
  CFileWriterOptions options;
  options.type = DataType::kInt32;
  const std::string path = WriteCFile(options, [](CFileWriter* w) {
    std::vector<int32_t> values = {1, 2, 3};
    BASALT_ASSERT_OK(w->AppendValues(values.data(), nullptr, values.size()));
  });
  // The lock is held: opening the store again fails.
  EXPECT_EQ(BlockManager::Open(env_, data_dir_).status().code(), absl::StatusCode::kUnavailable);
  const auto before = SnapshotTree(env_, dir_);
  ASSERT_GT(before.size(), 256u);  // The subdirectories, EPOCH, LOCK, the block.
  ASSERT_EQ(DumpCFile(path, true), 0) << err_.str();
  EXPECT_NE(out_.str().find("values: 3 (0 null)"), std::string::npos) << out_.str();
  EXPECT_EQ(SnapshotTree(env_, dir_), before);

  // And with the store closed: still nothing written (an Open would write a new EPOCH).
  bm_.reset();
  const auto closed = SnapshotTree(env_, dir_);
  ASSERT_EQ(DumpCFile(path, true), 0) << err_.str();
  EXPECT_EQ(SnapshotTree(env_, dir_), closed);
}

// Damaged files: a clean error naming the block (exit 1), never a crash. Covers every
// truncation length of the tail and bit flips across the whole file.
TEST_F(ToolFsCFileTest, CorruptFilesAreCleanErrors) {
  CFileWriterOptions options;
  options.type = DataType::kInt32;
  options.storage.block_size_bytes = 256;
  const std::string path = WriteCFile(options, [](CFileWriter* w) {
    std::vector<int32_t> values(300);
    for (int i = 0; i < 300; ++i) values[i] = i * 7 - 50;
    BASALT_ASSERT_OK(w->AppendValues(values.data(), nullptr, values.size()));
  });
  bm_.reset();
  const std::string hex = BaseName(path);
  const std::string good = Read(path);
  ASSERT_GT(good.size(), 100u);
  auto expect_clean_error = [&](const std::string& what) {
    const int rc = DumpCFile(path, /*print_values=*/true);
    if (rc == 0) return;  // Some flips hit bytes nothing checks before the values (none here).
    EXPECT_EQ(rc, 1) << what;
    EXPECT_NE(err_.str().find("Error: "), std::string::npos) << what << ": " << err_.str();
    EXPECT_NE(err_.str().find(hex), std::string::npos) << what << ": " << err_.str();
  };
  for (size_t len : {size_t{0}, size_t{1}, size_t{19}, good.size() / 2, good.size() - 1}) {
    Rewrite(path, good.substr(0, len));
    EXPECT_EQ(DumpCFile(path, true), 1) << "truncated to " << len;
    EXPECT_NE(err_.str().find(hex), std::string::npos) << err_.str();
  }
  const uint64_t seed = 20261130;
  LOG(INFO) << "seed " << seed;
  std::mt19937_64 rng(seed);
  int errors = 0;
  for (int i = 0; i < 200; ++i) {
    std::string bad = good;
    const size_t pos = rng() % bad.size();
    bad[pos] = static_cast<char>(bad[pos] ^ (1 << (rng() % 8)));
    Rewrite(path, bad);
    expect_clean_error(StrCat("flip at ", pos));
    errors += err_.str().empty() ? 0 : 1;
  }
  // Pages, indexes and footer are all checksummed: every flip is caught.
  EXPECT_EQ(errors, 200);
  Rewrite(path, std::string(good.size(), '\0'));
  EXPECT_EQ(DumpCFile(path, true), 1);
}

TEST_F(ToolFsTest, DumpCFileBadPaths) {
  EXPECT_EQ(Dump("cfile", JoinPath(dir_, "not-a-block")), 1);
  EXPECT_NE(err_.str().find("not a block file"), std::string::npos) << err_.str();
  // A well-formed block path that does not exist.
  EXPECT_EQ(Dump("cfile", JoinPath(dir_, "data/blocks/01/0000010000000001")), 1);
  EXPECT_NE(err_.str().find("0000010000000001"), std::string::npos) << err_.str();
  EXPECT_FALSE(env_->FileExists(JoinPath(dir_, "data")));  // Nothing was created.
}

// ---- fs dump replica ----

class ToolFsReplicaTest : public ToolFsTest {
 protected:
  void SetUp() override {
    ToolFsTest::SetUp();
    tablet_dir_ = JoinPath(JoinPath(dir_, "tablets"), "tablet-1234");
    BASALT_ASSERT_OK(env_->CreateDirs(tablet_dir_));
    TabletSuperBlock sb;
    sb.tablet_id = "tablet-1234";
    sb.schema = TestSchema();
    BASALT_ASSERT_OK(WriteSuperBlock(env_, JoinPath(tablet_dir_, "superblock"), sb));
    TabletReplicaMeta meta;
    meta.tablet_id = "tablet-1234";
    meta.table_id = "table-77";
    meta.table_name = "metrics";
    auto ps = PartitionSchema::Create(sb.schema, {{{"key"}, 4, 17}}, {"key"});
    BASALT_ASSERT_OK(ps);
    meta.partition_schema = *ps;
    meta.partition = Partition({2}, std::string("\0\0\0\2", 4), std::string("\0\0\0\3", 4));
    replica_path_ = JoinPath(tablet_dir_, "replica");
    Rewrite(replica_path_, EncodeReplicaFile(meta));
  }

  std::string tablet_dir_;
  std::string replica_path_;
};

TEST_F(ToolFsReplicaTest, DumpsReplicaFile) {
  const auto before = SnapshotTree(env_, dir_);
  for (const std::string& path : {tablet_dir_, replica_path_}) {
    ASSERT_EQ(Dump("replica", path), 0) << err_.str();
    const std::string out = out_.str();
    EXPECT_NE(out.find("tablet id: tablet-1234\n"), std::string::npos) << out;
    EXPECT_NE(out.find("table id: table-77\n"), std::string::npos) << out;
    EXPECT_NE(out.find("table name: metrics\n"), std::string::npos) << out;
    EXPECT_NE(out.find("partition: HASH BUCKETS (2)"), std::string::npos) << out;
    EXPECT_NE(out.find("partition schema: HASH (key) PARTITIONS 4 SEED 17, RANGE (key)"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("data directories (positions in --fs_data_dirs): 0\n"), std::string::npos)
        << out;
    EXPECT_EQ(out.find("WARNING"), std::string::npos) << out;
  }
  EXPECT_EQ(SnapshotTree(env_, dir_), before);
}

TEST_F(ToolFsReplicaTest, CorruptOrMissingFilesAreCleanErrors) {
  const std::string good = Read(replica_path_);
  for (size_t len : {size_t{0}, size_t{5}, size_t{12}, good.size() - 1}) {
    Rewrite(replica_path_, good.substr(0, len));
    EXPECT_EQ(Dump("replica", tablet_dir_), 1) << len;
    EXPECT_NE(err_.str().find(replica_path_), std::string::npos) << err_.str();
  }
  for (size_t pos = 0; pos < good.size(); ++pos) {
    std::string bad = good;
    bad[pos] ^= 0x20;
    Rewrite(replica_path_, bad);
    EXPECT_EQ(Dump("replica", tablet_dir_), 1) << pos;
    EXPECT_NE(err_.str().find(replica_path_), std::string::npos) << pos << ": " << err_.str();
  }
  Rewrite(replica_path_, good);
  BASALT_ASSERT_OK(env_->DeleteFile(JoinPath(tablet_dir_, "superblock")));
  EXPECT_EQ(Dump("replica", tablet_dir_), 1);
  EXPECT_NE(err_.str().find("superblock"), std::string::npos) << err_.str();
  EXPECT_EQ(Dump("replica", JoinPath(dir_, "no-such-tablet")), 1);
}

TEST_F(ToolFsTest, BadKind) {
  EXPECT_EQ(Dump("rowset", dir_), 1);
  EXPECT_NE(err_.str().find("not one of superblock, wal, cfile, replica"), std::string::npos)
      << err_.str();
}

}  // namespace tool_fs_test_file
}  // namespace
}  // namespace basalt::tools
