#include "tools/table_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "common/status_test_util.h"
#include "tools/lexer.h"

namespace basalt::tools {
namespace {
namespace table_spec_test_file {

using client::ColumnSchema;

constexpr char kMetrics[] =
    "CREATE TABLE metrics (host STRING, ts UNIXTIME_MICROS, value DOUBLE, PRIMARY KEY (host, ts)) "
    "PARTITION BY HASH (host) PARTITIONS 4, RANGE (ts) (PARTITION VALUES >= 0 AND < 1000, "
    "PARTITION VALUES >= 1000 AND < 2000) REPLICAS 3";

TEST(TableSpecTest, ParsesMetricsExample) {
  auto spec = ParseTableSpec(kMetrics);
  BASALT_ASSERT_OK(spec);
  EXPECT_EQ(spec->table_name, "metrics");
  ASSERT_EQ(spec->columns.size(), 3u);
  EXPECT_EQ(spec->columns[1].type, ColumnSchema::UNIXTIME_MICROS);
  EXPECT_EQ(spec->key_columns, (std::vector<std::string>{"host", "ts"}));
  ASSERT_EQ(spec->hash_partitions.size(), 1u);
  EXPECT_EQ(spec->hash_partitions[0].num_buckets, 4);
  ASSERT_TRUE(spec->range_columns);
  EXPECT_EQ(*spec->range_columns, std::vector<std::string>{"ts"});
  ASSERT_EQ(spec->range_partitions.size(), 2u);
  EXPECT_EQ((*spec->range_partitions[1].lower)[0].text, "1000");
  EXPECT_TRUE(spec->range_partitions[1].lower_inclusive);
  EXPECT_FALSE(spec->range_partitions[1].upper_inclusive);
  EXPECT_EQ(spec->num_replicas, 3);
}

TEST(TableSpecTest, ParsesCheckedByExample) {
  auto spec = ParseTableSpec(
      "CREATE TABLE t (key INT32, int_val INT32, non_null_with_default INT32 NOT NULL DEFAULT "
      "12345, PRIMARY KEY (key)) PARTITION BY HASH (key) PARTITIONS 4 REPLICAS 3");
  BASALT_ASSERT_OK(spec);
  ASSERT_EQ(spec->columns.size(), 3u);
  EXPECT_FALSE(spec->columns[1].nullable.has_value());
  EXPECT_EQ(spec->columns[2].nullable, false);
  ASSERT_TRUE(spec->columns[2].default_value);
  EXPECT_EQ(spec->columns[2].default_value->text, "12345");
  EXPECT_FALSE(spec->range_columns);
}

TEST(TableSpecTest, AllTypesOptionsAndCaseInsensitiveKeywords) {
  auto spec = ParseTableSpec(
      "create table T (k int64 primary key, b bool default true, i8 INT8, i16 INT16 NULL, "
      "f FLOAT DEFAULT 1.5, s STRING ENCODING DICT COMPRESSION LZ4 DEFAULT 'it''s', bin BINARY, "
      "d DATE DEFAULT '2024-02-29', dec DECIMAL(10, 2) DEFAULT -12.5, v VARCHAR(20), "
      "ts TIMESTAMP DEFAULT '1970-01-01 00:00:01') "
      "partition by hash (k) partitions 3 seed 42 replicas 1");
  BASALT_ASSERT_OK(spec);
  EXPECT_EQ(spec->key_columns, std::vector<std::string>{"k"});
  ASSERT_EQ(spec->columns.size(), 11u);
  EXPECT_EQ(spec->columns[5].encoding, client::ColumnStorageAttributes::DICT_ENCODING);
  EXPECT_EQ(spec->columns[5].compression, client::ColumnStorageAttributes::LZ4);
  EXPECT_EQ(spec->columns[5].default_value->text, "it's");
  EXPECT_EQ(spec->columns[8].type, ColumnSchema::DECIMAL);
  EXPECT_EQ(spec->columns[8].precision, 10);
  EXPECT_EQ(spec->columns[8].scale, 2);
  EXPECT_EQ(spec->columns[9].length, 20);
  EXPECT_EQ(spec->hash_partitions[0].seed, 42);
  EXPECT_EQ(spec->num_replicas, 1);
}

TEST(TableSpecTest, RangeBoundsSplitRowsAndMultiColumnTuples) {
  auto spec = ParseTableSpec(
      "CREATE TABLE r (a INT32, b STRING, PRIMARY KEY (a, b)) PARTITION BY RANGE (a, b) "
      "(PARTITION VALUES < (0, ''), PARTITION VALUES >= (0, '') AND <= (10, 'z'), "
      "PARTITION VALUES > (10, 'z'), PARTITION VALUE = (20, 'x')) SPLIT ROWS ((5, 'm'))");
  BASALT_ASSERT_OK(spec);
  ASSERT_EQ(spec->range_partitions.size(), 4u);
  EXPECT_FALSE(spec->range_partitions[0].lower);
  EXPECT_TRUE(spec->range_partitions[1].upper_inclusive);
  EXPECT_FALSE(spec->range_partitions[2].lower_inclusive);
  EXPECT_FALSE(spec->range_partitions[2].upper);
  EXPECT_TRUE(spec->range_partitions[3].upper_inclusive);
  ASSERT_EQ(spec->split_rows.size(), 1u);
  EXPECT_EQ(spec->split_rows[0][1].text, "m");
}

// The error message and the 1-based position the caret points at.
void ExpectError(const std::string& spec, const std::string& message, size_t position) {
  auto r = ParseTableSpec(spec);
  ASSERT_FALSE(r.ok()) << spec;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find(message), std::string::npos) << msg;
  EXPECT_NE(msg.find("at position " + std::to_string(position) + ":"), std::string::npos) << msg;
  // The caret line points at the same column.
  const size_t caret = msg.rfind('\n');
  ASSERT_NE(caret, std::string::npos);
  EXPECT_EQ(msg.substr(caret + 1), std::string(2 + position - 1, ' ') + "^") << msg;
}

TEST(TableSpecTest, BadSpecsNameTheTokenAndPosition) {
  ExpectError("CREATE TABEL t (k INT32, PRIMARY KEY (k))", "expected TABLE, got 'TABEL'", 8);
  ExpectError("CREATE TABLE t (k INT33, PRIMARY KEY (k))", "unknown type 'INT33'", 19);
  ExpectError("CREATE TABLE t (k INT32 PRIMARY KEY", "expected ')', got end of input", 36);
  ExpectError("CREATE TABLE t (k INT32, v STRING)", "the table has no PRIMARY KEY", 16);
  ExpectError("CREATE TABLE t (k INT32, PRIMARY KEY (x))", "key column 'x' is not a column", 26);
  ExpectError("CREATE TABLE t (k INT32, k STRING, PRIMARY KEY (k))", "duplicate column 'k'", 26);
  ExpectError("CREATE TABLE t (k INT32 NULL, PRIMARY KEY (k))", "cannot be NULL", 17);
  ExpectError("CREATE TABLE t (k INT32, v INT8 DEFAULT 300, PRIMARY KEY (k))",
              "out of range for INT8", 41);
  ExpectError("CREATE TABLE t (k INT32, v INT32 DEFAULT 'x', PRIMARY KEY (k))",
              "does not fit type INT32", 42);
  ExpectError("CREATE TABLE t (k INT32, PRIMARY KEY (k)) PARTITION BY HASH (k) PARTITIONS 1",
              "PARTITIONS must be in [2, 1024]", 76);
  ExpectError("CREATE TABLE t (k INT32, PRIMARY KEY (k)) PARTITION BY LIST (k)",
              "expected HASH or RANGE, got 'LIST'", 56);
  ExpectError("CREATE TABLE t (k INT32, PRIMARY KEY (k)) REPLICAS 2", "REPLICAS must be", 52);
  ExpectError("CREATE TABLE t (k INT32, PRIMARY KEY (k)) extra",
              "expected PARTITION BY, REPLICAS or the end of the spec, got 'extra'", 43);
  ExpectError("CREATE TABLE t (k DECIMAL(40, 2), PRIMARY KEY (k))",
              "DECIMAL precision must be in [1, 38]", 27);
  ExpectError("CREATE TABLE t (k VARCHAR, PRIMARY KEY (k))", "expected '(', got ','", 26);
  ExpectError("CREATE TABLE t (k INT32, s STRING DEFAULT 'abc, PRIMARY KEY (k))",
              "unterminated quoted text", 43);
  ExpectError(
      "CREATE TABLE t (k INT32, PRIMARY KEY (k)) PARTITION BY RANGE (k) "
      "(PARTITION VALUES >= 'a')",
      "does not fit type INT32", 87);
  ExpectError(
      "CREATE TABLE t (k INT32, PRIMARY KEY (k)) PARTITION BY RANGE (k) "
      "(PARTITION VALUES >= (1, 2))",
      "expected 1 value(s), one per range column, got 2", 88);
  ExpectError(
      "CREATE TABLE t (k INT32, PRIMARY KEY (k)) PARTITION BY RANGE (k) "
      "(PARTITION VALUES = 1)",
      "expected '>=', '>', '<' or '<='", 84);
  ExpectError("CREATE TABLE t (k INT32 $, PRIMARY KEY (k))", "unexpected character '$'", 25);
  ExpectError("", "expected CREATE, got end of input", 1);
}

TEST(TableSpecTest, LiteralConversion) {
  auto lit = [](Literal::Kind k, std::string text) { return Literal{k, std::move(text), 0}; };
  auto v = LiteralToValue(lit(Literal::kFloat, "12.3"), ColumnSchema::DECIMAL, 2);
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->ToString(), "1230");
  EXPECT_FALSE(LiteralToValue(lit(Literal::kFloat, "1.234"), ColumnSchema::DECIMAL, 2).ok());
  v = LiteralToValue(lit(Literal::kString, "1970-01-02"), ColumnSchema::DATE, 0);
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->ToString(), "1");
  v = LiteralToValue(lit(Literal::kString, "1970-01-01 00:00:01.5"), ColumnSchema::UNIXTIME_MICROS,
                     0);
  BASALT_ASSERT_OK(v);
  EXPECT_EQ(v->ToString(), "1500000");
  EXPECT_FALSE(LiteralToValue(lit(Literal::kString, "yesterday"), ColumnSchema::DATE, 0).ok());
  BASALT_EXPECT_OK(LiteralToValue(lit(Literal::kInteger, "-128"), ColumnSchema::INT8, 0));
  EXPECT_FALSE(LiteralToValue(lit(Literal::kInteger, "-129"), ColumnSchema::INT8, 0).ok());
  BASALT_EXPECT_OK(LiteralToValue(lit(Literal::kInteger, "3"), ColumnSchema::DOUBLE, 0));
  EXPECT_FALSE(LiteralToValue(lit(Literal::kBool, "true"), ColumnSchema::INT32, 0).ok());
  EXPECT_EQ(TypeToSpecString(ColumnSchema::DECIMAL, 10, 2, 0), "DECIMAL(10, 2)");
  EXPECT_EQ(TypeToSpecString(ColumnSchema::VARCHAR, 0, 0, 7), "VARCHAR(7)");
}

}  // namespace table_spec_test_file
}  // namespace
}  // namespace basalt::tools
