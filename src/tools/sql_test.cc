// The SELECT parser (sql_parser.h) and planner (sql_planner.h) of `basalt sql`.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/client.h"
#include "tools/sql_parser.h"
#include "tools/sql_planner.h"

namespace basalt::tools {
namespace {
namespace sql_test_file {

using client::Scanner;

client::Schema MetricsSchema() {
  client::SchemaBuilder b;
  b.AddColumn("host")->Type(client::ColumnSchema::STRING)->NotNull();
  b.AddColumn("ts")->Type(client::ColumnSchema::UNIXTIME_MICROS)->NotNull();
  b.AddColumn("v")->Type(client::ColumnSchema::INT32)->Nullable();
  b.AddColumn("s")->Type(client::ColumnSchema::STRING)->Nullable();
  b.SetPrimaryKey({"host", "ts"});
  client::Schema schema;
  absl::Status s = b.Build(&schema);
  EXPECT_TRUE(s.ok()) << s;
  return schema;
}

SqlPlan MustPlan(const std::string& sql) {
  absl::StatusOr<SelectStmt> stmt = ParseSelect(sql);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  if (!stmt.ok()) return {};
  absl::StatusOr<SqlPlan> plan = PlanSelect(sql, *stmt, MetricsSchema());
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : SqlPlan{};
}

// The error of parsing or planning `sql`.
std::string ErrorOf(const std::string& sql) {
  absl::StatusOr<SelectStmt> stmt = ParseSelect(sql);
  if (!stmt.ok()) {
    EXPECT_EQ(stmt.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(stmt.status().message());
  }
  absl::StatusOr<SqlPlan> plan = PlanSelect(sql, *stmt, MetricsSchema());
  if (plan.ok()) return "(no error)";
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(plan.status().message());
}

TEST(SqlParserTest, ParsesEveryClause) {
  absl::StatusOr<SelectStmt> s = ParseSelect(
      "explain select host h, time_bucket(ts, 5m, '30s') AS minute, Sum(v), count(*) "
      "FROM db.metrics WHERE host IN ('a', 'b') AND ts BETWEEN 1 AND 9 AND s IS NOT NULL "
      "GROUP BY 1, minute ORDER BY sum(v) DESC, h LIMIT 10;  ");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->explain);
  ASSERT_EQ(s->items.size(), 4u);
  EXPECT_EQ(s->items[0].kind, SqlItem::kColumn);
  EXPECT_EQ(s->items[0].alias, "h");
  EXPECT_EQ(s->items[1].kind, SqlItem::kTimeBucket);
  EXPECT_EQ(s->items[1].width_micros, 300000000);
  EXPECT_EQ(s->items[1].offset_micros, 30000000);
  EXPECT_EQ(s->items[1].alias, "minute");
  EXPECT_EQ(s->items[2].function, Scanner::SUM);
  EXPECT_EQ(s->items[2].text, "sum(v)");
  EXPECT_EQ(s->items[3].function, Scanner::COUNT_ALL);
  EXPECT_EQ(s->table, "db.metrics");
  EXPECT_EQ(s->where.size(), 4u);  // BETWEEN is two.
  ASSERT_EQ(s->group_by.size(), 2u);
  EXPECT_EQ(s->group_by[0].kind, SqlItem::kPosition);
  EXPECT_EQ(s->group_by[1].column, "minute");
  ASSERT_EQ(s->order_by.size(), 2u);
  EXPECT_TRUE(s->order_by[0].descending);
  EXPECT_FALSE(s->order_by[1].descending);
  EXPECT_EQ(s->limit, 10);
}

TEST(SqlParserTest, ErrorsPointAtTheBadToken) {
  EXPECT_EQ(ErrorOf("SELECT v FROM"),
            "expected a table name, got end of input at position 14:\n"
            "  SELECT v FROM\n"
            "               ^");
  EXPECT_EQ(ErrorOf("SELECT median(v) FROM t"),
            "unknown function (COUNT, SUM, MIN, MAX, AVG, FIRST, LAST, time_bucket), got "
            "'median' at position 8:\n"
            "  SELECT median(v) FROM t\n"
            "         ^");
  EXPECT_NE(ErrorOf("SELECT sum(*) FROM t").find("sum(*) is not defined"), std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM t LIMIT x").find("the row limit"), std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM t WHERE v = NULL").find("IS NULL"), std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM t GROUP v").find("expected BY"), std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM t ORDER BY v LIMIT 1 junk").find("end of the statement"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT count(*) FROM t GROUP BY time_bucket(ts, 0)").find("positive"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT count(*) FROM t GROUP BY time_bucket(ts, 5 parsecs)")
                .find("unknown unit 'parsecs'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("UPDATE t SET v = 1").find("expected SELECT"), std::string::npos);
}

TEST(SqlParserTest, Intervals) {
  EXPECT_EQ(*ParseInterval("250"), 250);
  EXPECT_EQ(*ParseInterval("90s"), 90000000);
  EXPECT_EQ(*ParseInterval("1h30m"), 5400000000);
  EXPECT_EQ(*ParseInterval("5 minutes"), 300000000);
  EXPECT_EQ(*ParseInterval("2 days 1 ms"), 172800001000);
  EXPECT_EQ(*ParseInterval("1w"), 604800000000);
  EXPECT_EQ(*ParseInterval("-30s"), -30000000);
  EXPECT_FALSE(ParseInterval("").ok());
  EXPECT_FALSE(ParseInterval("m").ok());
  EXPECT_FALSE(ParseInterval("5 7").ok());
  EXPECT_FALSE(ParseInterval("99999999999999999999s").ok());
  EXPECT_FALSE(ParseInterval("999999999999w").ok());
}

TEST(SqlPlannerTest, AggregatesGroupFirstAndPrintInSelectOrder) {
  const SqlPlan p = MustPlan(
      "SELECT count(*) AS n, time_bucket(ts, 60s) AS m, host FROM metrics "
      "WHERE v > 3 GROUP BY host, m ORDER BY n DESC LIMIT 5");
  ASSERT_TRUE(p.aggregate);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].column, "host");
  EXPECT_EQ(p.groups[1].width_micros, 60000000);
  ASSERT_EQ(p.aggregates.size(), 1u);
  // Result columns: host, m, n; printed n, m, host.
  EXPECT_EQ(p.outputs, (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(p.headers, (std::vector<std::string>{"n", "m", "host"}));
  ASSERT_EQ(p.sort.size(), 1u);
  EXPECT_EQ(p.sort[0].column, 2);
  EXPECT_TRUE(p.sort[0].descending);
  // An aggregate of a printed column sorts by the aggregate, not by the column.
  const SqlPlan q =
      MustPlan("SELECT host, count(host) FROM metrics GROUP BY host ORDER BY count(host) DESC");
  ASSERT_EQ(q.sort.size(), 1u);
  EXPECT_EQ(q.sort[0].column, 1);
  // Sorted after the scan: the limit is applied after the sort.
  EXPECT_FALSE(p.limit_pushed);
  const std::string explain = ExplainPlan(p);
  EXPECT_NE(explain.find("predicates: v > 3"), std::string::npos) << explain;
  EXPECT_NE(explain.find("aggregates: count(*)"), std::string::npos) << explain;
  EXPECT_NE(explain.find("group by: host, time_bucket(ts, 60000000)"), std::string::npos)
      << explain;
  EXPECT_NE(explain.find("sort by n DESC"), std::string::npos) << explain;
}

TEST(SqlPlannerTest, RowScansProjectAndPushTheLimit) {
  SqlPlan p = MustPlan("SELECT * FROM metrics LIMIT 7");
  EXPECT_FALSE(p.aggregate);
  EXPECT_EQ(p.projection, (std::vector<std::string>{"host", "ts", "v", "s"}));
  EXPECT_TRUE(p.limit_pushed);
  // ORDER BY a column not selected: projected, not printed.
  p = MustPlan("SELECT v FROM metrics ORDER BY ts DESC LIMIT 2");
  EXPECT_EQ(p.projection, (std::vector<std::string>{"v", "ts"}));
  EXPECT_EQ(p.outputs, (std::vector<int>{0}));
  EXPECT_EQ(p.sort[0].column, 1);
  EXPECT_FALSE(p.limit_pushed);
  // GROUP BY without aggregates lists the groups.
  p = MustPlan("SELECT host FROM metrics GROUP BY host");
  EXPECT_TRUE(p.aggregate);
  EXPECT_EQ(p.outputs, (std::vector<int>{0}));
  EXPECT_EQ(p.aggregates.size(), 1u);
}

TEST(SqlPlannerTest, RefusesWhatItCannotRun) {
  EXPECT_EQ(ErrorOf("SELECT v FROM metrics GROUP BY host"),
            "v must appear in GROUP BY or be used in an aggregate at position 8:\n"
            "  SELECT v FROM metrics GROUP BY host\n"
            "         ^");
  EXPECT_NE(ErrorOf("SELECT nope FROM metrics").find("table 'metrics' has no column 'nope'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT max(nope) FROM metrics").find("no column 'nope'"), std::string::npos);
  EXPECT_NE(ErrorOf("SELECT *, count(*) FROM metrics").find("* cannot be selected"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT time_bucket(ts, 1m) FROM metrics").find("needs GROUP BY"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT count(*) FROM metrics GROUP BY 1").find("cannot GROUP BY count(*)"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT host, count(*) FROM metrics GROUP BY 3").find("position 3"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT count(*) FROM metrics ORDER BY 2").find("ORDER BY position 2"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT host, count(*) FROM metrics GROUP BY host ORDER BY v")
                .find("not a group or aggregate"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT host FROM metrics GROUP BY time_bucket(ts, 1m)").find("host must"),
            std::string::npos);
}

}  // namespace sql_test_file
}  // namespace
}  // namespace basalt::tools
