// Tests of `basalt fs dump`: real files written by the tablet metadata writer, the cfile writer
// and the WAL, dumped through RunTool, then corrupted.

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cfile/block_manager.h"
#include "cfile/cfile_writer.h"
#include "common/datum.h"
#include "common/env.h"
#include "common/key_encoder.h"
#include "common/schema.h"
#include "common/strings.h"
#include "consensus/log.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "proto/tablet_replica.pb.h"
#include "tablet/tablet_metadata.h"
#include "tools/command.h"
#include "tools/tool_common.h"

namespace basalt::tools {
namespace {

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
    ASSERT_TRUE(WriteFileAtomically(env_, path, contents).ok());
  }

  std::string Read(const std::string& path) {
    std::string data;
    EXPECT_TRUE(ReadFileToString(env_, path, &data).ok());
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

TEST_F(ToolFsTest, DumpSuperBlock) {
  TabletSuperBlock sb;
  sb.tablet_id = "tablet-abc";
  sb.schema = TestSchema();
  RowSetMetadata rs;
  rs.id = 0;
  rs.column_blocks = {{0, BlockId(0x10)}, {1, BlockId(0x11)}};
  rs.key_index_block = BlockId(0x12);
  rs.bloom_block = BlockId(0x13);
  rs.redo_blocks = {BlockId(0x14)};
  rs.min_key = EncodeKey(sb.schema, std::vector<Datum>{Datum::Int32(-5)});
  rs.max_key = EncodeKey(sb.schema, std::vector<Datum>{Datum::Int32(4242)});
  rs.num_rows = 777;
  rs.base_snapshot_before = HybridTime::FromMicros(1'700'000'000'000'000, 0);
  sb.rowsets.push_back(rs);
  sb.next_rowset_id = 1;
  sb.durable_op_index = 31337;
  sb.orphaned_blocks = {BlockId(0x99)};
  sb.version = 3;
  const std::string path = JoinPath(dir_, "superblock");
  ASSERT_TRUE(WriteSuperBlock(env_, path, sb).ok());

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
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->Start().ok());
    std::vector<LogEntry> entries(3);
    entries[0] = LogEntry{1, 1, EntryType::kNoOp, 0, ""};
    entries[1] = LogEntry{1, 2, EntryType::kNormal, 123456, WriteEntryData(7, 40)};
    pb::ReplicateMsgPB alter;
    alter.mutable_alter_schema()->mutable_schema()->set_version(8);
    entries[2] = LogEntry{2, 3, EntryType::kNormal, 123457, alter.SerializeAsString()};
    ASSERT_TRUE((*log)->Append(entries).ok());
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
  ASSERT_TRUE(children.ok());
  std::string segment;
  for (const std::string& c : *children) {
    if (c.rfind("wal-", 0) == 0) segment = JoinPath(wal_dir, c);
  }
  ASSERT_FALSE(segment.empty());
  const std::string good = Read(segment);

  // A torn tail (the last frame cut short) is reported, not an error.
  Rewrite(segment, good.substr(0, good.size() - 5));
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

TEST_F(ToolFsTest, DumpCFile) {
  const std::string data_dir = JoinPath(dir_, "data");
  BlockId id;
  {
    auto bm = BlockManager::Open(env_, data_dir);
    ASSERT_TRUE(bm.ok()) << bm.status();
    auto block = (*bm)->CreateBlock();
    ASSERT_TRUE(block.ok()) << block.status();
    id = (*block)->id();
    CFileWriterOptions options;
    options.type = DataType::kInt32;
    CFileWriter writer(options, std::move(*block));
    ASSERT_TRUE(writer.Start().ok());
    std::vector<int32_t> values(1000);
    for (int i = 0; i < 1000; ++i) values[i] = i * 3;
    ASSERT_TRUE(writer.AppendValues(values.data(), nullptr, values.size()).ok());
    ASSERT_TRUE(writer.Finish().ok());
  }
  const std::string hex = id.ToString();
  const std::string path = JoinPath(JoinPath(JoinPath(data_dir, "blocks"), hex.substr(14)), hex);
  ASSERT_TRUE(env_->FileExists(path)) << path;
  ASSERT_EQ(Dump("cfile", path), 0) << err_.str();
  const std::string out = out_.str();
  EXPECT_NE(out.find("type: INT32"), std::string::npos) << out;
  EXPECT_NE(out.find("values: 1000 (0 null)"), std::string::npos) << out;
  EXPECT_NE(out.find("pages: "), std::string::npos) << out;
  EXPECT_NE(out.find("encoding: "), std::string::npos) << out;

  EXPECT_EQ(Dump("cfile", JoinPath(dir_, "not-a-block")), 1);
  EXPECT_NE(err_.str().find("not a block file"), std::string::npos) << err_.str();

  const std::string good = Read(path);
  std::string flipped = good;
  flipped[flipped.size() - 10] ^= 0x55;
  Rewrite(path, flipped);
  EXPECT_EQ(Dump("cfile", path), 1);
  EXPECT_NE(err_.str().find(hex), std::string::npos) << err_.str();
  Rewrite(path, good.substr(0, good.size() / 2));
  EXPECT_EQ(Dump("cfile", path), 1);
  EXPECT_NE(err_.str().find(hex), std::string::npos) << err_.str();
}

TEST_F(ToolFsTest, BadKind) {
  EXPECT_EQ(Dump("rowset", dir_), 1);
  EXPECT_NE(err_.str().find("not one of superblock, wal, cfile"), std::string::npos) << err_.str();
}

}  // namespace
}  // namespace basalt::tools
