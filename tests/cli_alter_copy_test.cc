// Tests of `basalt table alter` and `basalt table copy` (docs/cli.md), run as the real binary
// against a cluster of real daemons (ExternalMiniCluster). Each case starts one cluster and runs
// a whole scenario on it, to keep the number of cluster start-ups small.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/strings.h"
#include "tests/cli_test_util.h"

namespace basalt {
namespace {
namespace cli_alter_copy_test_file {

std::vector<std::string> SortedLines(const std::string& s) {
  std::vector<std::string> lines = absl::StrSplit(s, '\n', absl::SkipEmpty());
  std::sort(lines.begin(), lines.end());
  return lines;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class CliAlterCopyTest : public CliClusterTest {
 protected:
  // Every row of `table` (matching `predicates`) as sorted CSV lines, header included.
  std::vector<std::string> Rows(const std::string& table, const std::string& predicates = "") {
    return SortedLines(MustRun(
        {"table", "scan", master_, table, "--format=csv", StrCat("--predicates=", predicates)}));
  }
  // `table describe` without its first line (which names the table) and its tablets' ids.
  std::string Definition(const std::string& table) {
    const std::string d = MustRun({"table", "describe", master_, table});
    const size_t begin = d.find('\n');
    const size_t end = d.find("\nTABLETS");
    return d.substr(begin, end - begin);
  }
  std::string Describe(const std::string& table) {
    return MustRun({"table", "describe", master_, table});
  }
  void Load(const std::string& table, const std::string& columns, const std::string& csv) {
    const std::string path = WriteFile(StrCat(table, "-", ++files_, ".csv"), csv);
    MustRun({"table", "load", master_, table, path, StrCat("--columns=", columns)});
  }

  int files_ = 0;
};

TEST_F(CliAlterCopyTest, AlterColumnsRangePartitionsAndName) {
  MustRun({"table", "create", master_,
           "CREATE TABLE t (key INT32, a STRING, old INT32, PRIMARY KEY (key)) PARTITION BY "
           "HASH (key) PARTITIONS 2, RANGE (key) (PARTITION VALUES >= 0 AND < 100) REPLICAS 3"});
  Load("t", "key,a,old", "1,v1,10\n2,v2,20\n3,,30\n4,v4,\n5,v5,50\n");
  const std::string before = Describe("t");

  // A syntax error: exit code 1, the caret under the token, nothing changed.
  CliResult bad = Basalt({"table", "alter", master_, "ALTER TABLE t ADD COLUMN c INT32 NOT NULL"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(bad.err,
            "Error: column 'c': a NOT NULL column added to a table needs a DEFAULT at position "
            "26:\n"
            "  ALTER TABLE t ADD COLUMN c INT32 NOT NULL\n"
            "                           ^\n");
  // A bound that does not fit the range column, caught before anything is sent.
  bad = Basalt({"table", "alter", master_,
                "ALTER TABLE t DROP COLUMN old, ADD RANGE PARTITION VALUES >= 'x' AND < 300"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Contains(bad.err, "value 'x' does not fit type INT32 (column key) at position 62"))
      << bad.err;
  EXPECT_TRUE(Contains(bad.err, "\n  " + std::string(61, ' ') + "^\n")) << bad.err;
  // The master rejects one step: the others are not applied either.
  bad = Basalt({"table", "alter", master_,
                "ALTER TABLE t ADD COLUMN c INT32, DROP COLUMN nope, RENAME COLUMN a TO b"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Contains(bad.err, "nope")) << bad.err;
  EXPECT_EQ(Describe("t"), before);

  EXPECT_EQ(MustRun({"table", "alter", master_,
                     "ALTER TABLE t ADD COLUMN c INT32 NOT NULL DEFAULT 7, DROP COLUMN old, "
                     "RENAME COLUMN a TO b, ADD COLUMN z DOUBLE"}),
            "Altered table t: added column c, dropped column old, renamed column a to b, added "
            "column z\n");
  const std::string desc = Describe("t");
  EXPECT_TRUE(Contains(desc,
                       "    key INT32,\n    b STRING NULL,\n    c INT32 NOT NULL DEFAULT 7,\n"
                       "    z DOUBLE NULL,\n    PRIMARY KEY (key)\n"))
      << desc;
  EXPECT_EQ(Rows("t"), (std::vector<std::string>{"1,v1,7,", "2,v2,7,", "3,,7,", "4,v4,7,",
                                                 "5,v5,7,", "key,b,c,z"}));
  Load("t", "key,b,z", "6,v6,1.5\n");
  EXPECT_EQ(Rows("t", "key = 6"), (std::vector<std::string>{"6,v6,7,1.5", "key,b,c,z"}));

  // Range partitions: rows of a new range can be written once it is added, and go with it.
  EXPECT_TRUE(Contains(Describe("t"), "TABLETS (2):"));
  EXPECT_EQ(MustRun({"table", "alter", master_,
                     "ALTER TABLE t ADD RANGE PARTITION VALUES >= 100 AND < 200"}),
            "Altered table t: added range partition VALUES >= 100 AND < 200\n");
  EXPECT_TRUE(Contains(Describe("t"), "TABLETS (4):"));
  Load("t", "key,b", "150,x\n199,y\n");
  EXPECT_EQ(MustRun({"table", "count", master_, "t"}), "8\n");
  MustRun(
      {"table", "alter", master_, "alter table t drop range partition values >= 100 and < 200"});
  EXPECT_TRUE(Contains(Describe("t"), "TABLETS (2):"));
  EXPECT_EQ(MustRun({"table", "count", master_, "t"}), "6\n");
  bad = Basalt({"table", "alter", master_, "ALTER TABLE t DROP RANGE PARTITION VALUES >= 100"});
  EXPECT_EQ(bad.rc, 1);

  EXPECT_EQ(MustRun({"table", "alter", master_, "ALTER TABLE t RENAME TO t2"}),
            "Altered table t: renamed table to t2\n");
  EXPECT_EQ(MustRun({"table", "list", master_, "--format=csv"}).find("\nt,"), std::string::npos);
  EXPECT_EQ(MustRun({"table", "count", master_, "t2"}), "6\n");
  EXPECT_EQ(Basalt({"table", "count", master_, "t"}).rc, 1);
}

TEST_F(CliAlterCopyTest, CopyAllTypesWithPredicatesAndIntoExistingTables) {
  MustRun({"table", "create", master_,
           "CREATE TABLE src (key INT64, b BOOL, i8 INT8, i16 INT16, i32 INT32, f FLOAT, "
           "d DOUBLE, s STRING, bin BINARY, ts UNIXTIME_MICROS, dt DATE, dec DECIMAL(10, 2), "
           "v VARCHAR(8), n INT32 NOT NULL DEFAULT 3 ENCODING PLAIN COMPRESSION LZ4, "
           "PRIMARY KEY (key)) PARTITION BY HASH (key) PARTITIONS 2 SEED 7, RANGE (key) "
           "(PARTITION VALUES < 1000, PARTITION VALUES >= 1000 AND < 5000) REPLICAS 3"});
  MustRun({"perf", "loadgen", master_, "--table_name=src", "--num_rows_per_thread=1000",
           "--num_threads=2"});
  Load("src", "key,s", "4000,\n4001,x\n4002,\"\"\n");  // NULLs in every nullable column.
  const std::vector<std::string> all = Rows("src");
  ASSERT_EQ(all.size(), 2004u);

  // A new table like the source: same definition, same rows.
  CliResult copied = Basalt({"table", "copy", master_, "src", master_, "--dst_table=dst",
                             "--num_threads=3", "--progress"});
  ASSERT_EQ(copied.rc, 0) << copied.err;
  EXPECT_TRUE(Contains(copied.out, "Copied 2003 rows from src to dst in ")) << copied.out;
  EXPECT_TRUE(Contains(copied.err, "2003 rows")) << copied.err;
  EXPECT_EQ(Definition("dst"), Definition("src"));
  EXPECT_TRUE(Contains(Describe("dst"), "TABLETS (4):"));
  EXPECT_EQ(Rows("dst"), all);

  // Predicates (as in table scan): only the matching rows. A bad one creates nothing.
  const std::string preds = "key >= 100 AND key < 200 AND i32 IS NOT NULL";
  MustRun({"table", "copy", master_, "src", master_, "--dst_table=part", "--predicates=" + preds});
  EXPECT_EQ(MustRun({"table", "count", master_, "part"}), "100\n");
  EXPECT_EQ(Rows("part"), Rows("src", preds));
  CliResult bad = Basalt(
      {"table", "copy", master_, "src", master_, "--dst_table=nothing", "--predicates=nope = 1"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Contains(bad.err, "no column 'nope'")) << bad.err;
  EXPECT_FALSE(Contains(MustRun({"table", "list", master_}), "nothing"));

  // Into existing tables: refused unless --create_table=false; then existing keys fail inserts
  // (reported with their rows), are skipped by insert_ignore and overwritten by upsert.
  bad = Basalt({"table", "copy", master_, "src", master_, "--dst_table=part"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Contains(bad.err, "already exists; pass --create_table=false")) << bad.err;
  bad = Basalt({"table", "copy", master_, "src", master_, "--dst_table=part",
                "--create_table=false", "--predicates=key < 300"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Contains(bad.err, "row(s) failed to copy; first errors:")) << bad.err;
  EXPECT_TRUE(Contains(bad.err, "ALREADY_EXISTS")) << bad.err;
  EXPECT_TRUE(Contains(bad.err, "INSERT (int64 key=1")) << bad.err;
  MustRun({"table", "copy", master_, "src", master_, "--dst_table=dst", "--create_table=false",
           "--write_type=insert_ignore"});
  EXPECT_EQ(Rows("dst"), all);
  MustRun({"table", "alter", master_, "ALTER TABLE part ADD COLUMN extra STRING DEFAULT 'e'"});
  const std::string out = MustRun({"table", "copy", master_, "src", master_, "--dst_table=part",
                                   "--create_table=false", "--write_type=upsert"});
  EXPECT_TRUE(Contains(out, "Copied 2003 rows from src to part")) << out;
  EXPECT_EQ(MustRun({"table", "count", master_, "part"}), "2003\n");
  EXPECT_EQ(MustRun({"table", "count", master_, "part", "--predicates=extra = 'e'"}), "2003\n");

  // Columns are matched by name: a destination without a source column is refused.
  MustRun({"table", "create", master_,
           "CREATE TABLE narrow (key INT64, s STRING, PRIMARY KEY (key)) REPLICAS 1"});
  bad = Basalt(
      {"table", "copy", master_, "src", master_, "--dst_table=narrow", "--create_table=false"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Contains(bad.err, "the destination table has no column 'b'")) << bad.err;
  EXPECT_EQ(MustRun({"table", "count", master_, "narrow"}), "0\n");
  // The default partitioning (one unbounded range on the key) is recreated as such.
  MustRun({"table", "copy", master_, "narrow", master_, "--dst_table=narrow2"});
  EXPECT_EQ(Definition("narrow2"), Definition("narrow"));
  bad = Basalt({"table", "copy", master_, "src", master_});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Contains(bad.err, "same table")) << bad.err;

  // Bounds the master keeps as key successors (> 255 is stored as a 3-byte key) are recreated as
  // equivalent rows.
  MustRun({"table", "create", master_,
           "CREATE TABLE odd (key INT32, PRIMARY KEY (key)) PARTITION BY RANGE (key) (PARTITION "
           "VALUES > 255 AND <= 1000) REPLICAS 1"});
  Load("odd", "key", "256\n999\n1000\n");
  MustRun({"table", "copy", master_, "odd", master_, "--dst_table=odd2"});
  EXPECT_TRUE(Contains(Describe("odd2"), "RANGE [(key=256), (key=1001))")) << Describe("odd2");
  EXPECT_EQ(Rows("odd2"), Rows("odd"));
}

}  // namespace cli_alter_copy_test_file
}  // namespace
}  // namespace basalt
