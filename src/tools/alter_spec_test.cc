#include "tools/alter_spec.h"
#include "common/status_test_util.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace basalt::tools {
namespace {
namespace alter_spec_test_file {

using client::ColumnSchema;

TEST(AlterSpecTest, ParsesEveryStepKind) {
  auto spec = ParseAlterSpec(
      "alter table metrics ADD COLUMN note VARCHAR(10) NOT NULL DEFAULT 'x' ENCODING DICT "
      "COMPRESSION LZ4, DROP COLUMN old, RENAME COLUMN value TO v, ALTER COLUMN a RENAME TO b, "
      "ADD RANGE PARTITION VALUES >= 2000 AND < 3000, DROP RANGE PARTITION VALUE = (1, 'a'), "
      "RENAME TO \"m 2\"");
  BASALT_ASSERT_OK(spec);
  EXPECT_EQ(spec->table_name, "metrics");
  ASSERT_EQ(spec->steps.size(), 7u);
  const AlterStep& add = spec->steps[0];
  EXPECT_EQ(add.kind, AlterStep::kAddColumn);
  EXPECT_EQ(add.name, "note");
  EXPECT_EQ(add.column.type, ColumnSchema::VARCHAR);
  EXPECT_EQ(add.column.length, 10);
  EXPECT_EQ(add.column.nullable, false);
  ASSERT_TRUE(add.column.default_value);
  EXPECT_EQ(add.column.default_value->text, "x");
  EXPECT_EQ(add.column.encoding, client::ColumnStorageAttributes::DICT_ENCODING);
  EXPECT_EQ(add.column.compression, client::ColumnStorageAttributes::LZ4);
  EXPECT_EQ(spec->steps[1].kind, AlterStep::kDropColumn);
  EXPECT_EQ(spec->steps[1].name, "old");
  EXPECT_EQ(spec->steps[2].kind, AlterStep::kRenameColumn);
  EXPECT_EQ(spec->steps[2].name, "value");
  EXPECT_EQ(spec->steps[2].new_name, "v");
  EXPECT_EQ(spec->steps[3].kind, AlterStep::kRenameColumn);
  EXPECT_EQ(spec->steps[3].new_name, "b");
  const AlterStep& range = spec->steps[4];
  EXPECT_EQ(range.kind, AlterStep::kAddRangePartition);
  ASSERT_TRUE(range.range.lower && range.range.upper);
  EXPECT_EQ((*range.range.lower)[0].text, "2000");
  EXPECT_EQ((*range.range.upper)[0].text, "3000");
  EXPECT_TRUE(range.range.lower_inclusive);
  EXPECT_FALSE(range.range.upper_inclusive);
  EXPECT_EQ(range.range_text, "VALUES >= 2000 AND < 3000");
  const AlterStep& drop = spec->steps[5];
  EXPECT_EQ(drop.kind, AlterStep::kDropRangePartition);
  ASSERT_TRUE(drop.range.lower);
  EXPECT_EQ(drop.range.lower->size(), 2u);
  EXPECT_TRUE(drop.range.upper_inclusive);
  EXPECT_EQ(spec->steps[6].kind, AlterStep::kRenameTable);
  EXPECT_EQ(spec->steps[6].new_name, "m 2");
}

TEST(AlterSpecTest, Summaries) {
  auto spec = ParseAlterSpec(
      "ALTER TABLE t ADD COLUMN c INT32, DROP COLUMN d, RENAME COLUMN a TO b, RENAME TO t2, "
      "ADD RANGE PARTITION VALUES\n< 5 , DROP RANGE PARTITION VALUES >= 5");
  BASALT_ASSERT_OK(spec);
  std::vector<std::string> got;
  for (const auto& s : spec->steps) got.push_back(AlterStepSummary(s));
  EXPECT_EQ(got,
            (std::vector<std::string>{"added column c", "dropped column d", "renamed column a to b",
                                      "renamed table to t2", "added range partition VALUES < 5",
                                      "dropped range partition VALUES >= 5"}));
  EXPECT_FALSE(spec->steps[4].range.lower);
  EXPECT_FALSE(spec->steps[5].range.upper);
}

TEST(AlterSpecTest, NullableColumnWithoutDefaultAndDefaultNull) {
  auto spec = ParseAlterSpec("ALTER TABLE t ADD COLUMN c DOUBLE NULL DEFAULT NULL");
  BASALT_ASSERT_OK(spec);
  EXPECT_EQ(spec->steps[0].column.type, ColumnSchema::DOUBLE);
  EXPECT_EQ(spec->steps[0].column.nullable, true);
}

// Each error names the token, its 1-based position, and shows a caret under it.
TEST(AlterSpecTest, ErrorsPointAtTheBadToken) {
  struct Case {
    std::string spec;
    std::string message;
    size_t pos;  // 1-based, as in the message.
  };
  const std::vector<Case> cases = {
      {"ALTER t ADD COLUMN c INT32", "expected TABLE, got 't'", 7},
      {"ALTER TABLE", "expected a table name, got end of input", 12},
      {"ALTER TABLE t", "expected ADD, DROP, RENAME or ALTER, got end of input", 14},
      {"ALTER TABLE t MODIFY c", "expected ADD, DROP, RENAME or ALTER, got 'MODIFY'", 15},
      {"ALTER TABLE t ADD c INT32", "expected COLUMN or RANGE PARTITION, got 'c'", 19},
      {"ALTER TABLE t ADD COLUMN c INTEGER", "unknown type 'INTEGER'", 28},
      {"ALTER TABLE t ADD COLUMN c INT32 PRIMARY KEY", "key columns cannot be added", 26},
      {"ALTER TABLE t ADD COLUMN c INT32 NOT NULL", "needs a DEFAULT", 26},
      {"ALTER TABLE t ADD COLUMN c INT8 DEFAULT 300", "value 300 is out of range for INT8", 41},
      {"ALTER TABLE t ADD COLUMN c INT32 NOT NULL DEFAULT NULL",
       "NOT NULL column with DEFAULT NULL", 51},
      {"ALTER TABLE t DROP c", "expected COLUMN or RANGE PARTITION, got 'c'", 20},
      {"ALTER TABLE t DROP COLUMN", "expected a column name, got end of input", 26},
      {"ALTER TABLE t RENAME c TO d", "expected TO or COLUMN, got 'c'", 22},
      {"ALTER TABLE t RENAME COLUMN c d", "expected TO, got 'd'", 31},
      {"ALTER TABLE t RENAME TO a, RENAME TO b", "the table is renamed twice", 28},
      {"ALTER TABLE t ALTER COLUMN c SET DEFAULT 5", "ALTER COLUMN supports only RENAME TO", 30},
      {"ALTER TABLE t ALTER COLUMN c DROP DEFAULT", "changing defaults is not supported", 30},
      {"ALTER TABLE t ALTER COLUMN c TYPE INT64", "expected RENAME TO, got 'TYPE'", 30},
      {"ALTER TABLE t ADD RANGE PARTITION VALUES 5", "expected '>=', '>', '<' or '<='", 42},
      {"ALTER TABLE t ADD RANGE VALUES >= 5", "expected PARTITION, got 'VALUES'", 25},
      {"ALTER TABLE t DROP RANGE PARTITION VALUES >= 1 AND > 5", "expected '<' or '<='", 52},
      {"ALTER TABLE t DROP COLUMN c DROP COLUMN d", "expected ',' or the end of the spec", 29},
      {"ALTER TABLE t DROP COLUMN c; DROP COLUMN d", "unexpected character ';'", 28},
  };
  for (const Case& c : cases) {
    auto spec = ParseAlterSpec(c.spec);
    ASSERT_FALSE(spec.ok()) << c.spec;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string msg(spec.status().message());
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.spec << "\n" << msg;
    EXPECT_NE(msg.find("at position " + std::to_string(c.pos) + ":"), std::string::npos)
        << c.spec << "\n"
        << msg;
    const std::string caret = "\n  " + std::string(c.pos - 1, ' ') + "^";
    EXPECT_NE(msg.find(caret), std::string::npos) << c.spec << "\n" << msg;
  }
}

}  // namespace alter_spec_test_file
}  // namespace
}  // namespace basalt::tools
