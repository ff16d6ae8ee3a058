// The InfluxQL subset of basalt-tsdbd (influxql.h): the TSBS devops query shapes, SHOW/CREATE,
// durations and times, and errors naming the position.

#include "tsdb/influxql.h"

#include <gtest/gtest.h>

#include <string>

#include "tsdb/query_executor.h"

namespace basalt::tsdb {
namespace {
namespace influxql_test_file {

constexpr int64_t kNow = 1700000000000000;  // now() in these tests.
constexpr int64_t kT0 = 1451606400000000;   // 2016-01-01T00:00:00Z

InfluxSelect MustSelect(const std::string& q) {
  absl::StatusOr<std::vector<InfluxStatement>> s = ParseInfluxQL(q, kNow);
  EXPECT_TRUE(s.ok()) << q << ": " << s.status();
  if (!s.ok() || s->empty()) return {};
  EXPECT_EQ((*s)[0].kind, InfluxStatement::kSelect);
  return (*s)[0].select;
}

std::string ErrorOf(const std::string& q) {
  absl::StatusOr<std::vector<InfluxStatement>> s = ParseInfluxQL(q, kNow);
  if (s.ok()) return "(no error)";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.status().message());
}

TEST(InfluxQLTest, TsbsDevopsQueries) {
  // single-groupby-5-1-12
  InfluxSelect s = MustSelect(
      "SELECT max(usage_user),max(usage_system),max(usage_idle),max(usage_nice),max(usage_iowait) "
      "from cpu where (hostname = 'host_9') and time >= '2016-01-01T00:00:00Z' and time < "
      "'2016-01-01T12:00:00Z' group by time(1m)");
  ASSERT_EQ(s.items.size(), 5u);
  EXPECT_EQ(s.items[1].function, "max");
  EXPECT_EQ(s.items[1].field, "usage_system");
  EXPECT_EQ(s.measurement, "cpu");
  ASSERT_EQ(s.where.size(), 3u);
  EXPECT_EQ(s.where[0].kind, InfluxCondition::kTagIn);
  EXPECT_EQ(s.where[0].values, (std::vector<std::string>{"host_9"}));
  EXPECT_EQ(s.where[1].kind, InfluxCondition::kTime);
  EXPECT_EQ(s.where[1].op, InfluxCondition::kGreaterEqual);
  EXPECT_EQ(s.where[1].time_us, kT0);
  EXPECT_EQ(s.where[2].time_us, kT0 + 12 * 3600000000LL);
  EXPECT_EQ(s.group_time_us, 60000000);
  // double-groupby-1: several hosts by OR, grouped by time and a tag.
  s = MustSelect(
      "SELECT mean(usage_user) from cpu where time >= '2016-01-01T00:00:00Z' and time < "
      "'2016-01-02T00:00:00Z' and (hostname = 'host_1' or hostname = 'host_2') group by "
      "time(1h),hostname");
  EXPECT_EQ(s.group_time_us, 3600000000LL);
  EXPECT_EQ(s.group_tags, (std::vector<std::string>{"hostname"}));
  EXPECT_EQ(s.where[2].values, (std::vector<std::string>{"host_1", "host_2"}));
  // lastpoint
  s = MustSelect("SELECT * from cpu group by \"hostname\" order by time desc limit 1");
  EXPECT_EQ(s.items[0].field, "*");
  EXPECT_TRUE(s.descending);
  EXPECT_EQ(s.limit, 1);
  // high-cpu-1: a field compared with a number.
  s = MustSelect(
      "SELECT * from cpu where usage_user > 90.0 and time >= '2016-01-01T00:00:00Z' and time < "
      "'2016-01-01T12:00:00Z' and (hostname = 'host_3')");
  EXPECT_EQ(s.where[0].kind, InfluxCondition::kField);
  EXPECT_EQ(s.where[0].number, 90.0);
  // Measurement qualified by database and retention policy; fill; slimit; GROUP BY *.
  s = MustSelect("SELECT last(*) FROM \"db\".\"autogen\".\"cpu\" GROUP BY * fill(none) SLIMIT 3");
  EXPECT_EQ(s.measurement, "cpu");
  EXPECT_EQ(MustSelect("SELECT last(v) FROM db..cpu").measurement, "cpu");
  EXPECT_EQ(MustSelect("SELECT v FROM m WHERE v > 9007199254740993").where[0].integer,
            9007199254740993);
  EXPECT_TRUE(s.group_all_tags);
  EXPECT_TRUE(s.fill_none);
  EXPECT_EQ(s.slimit, 3);
}

TEST(InfluxQLTest, TimesDurationsAndNow) {
  InfluxSelect s = MustSelect(
      "SELECT count(v) FROM m WHERE time > now() - 1h AND time <= 1451606400000000000 GROUP BY "
      "time(1h30m, -5m)");
  ASSERT_GE(s.where.size(), 1u);
  EXPECT_EQ(s.where[0].time_us, kNow - 3600000000LL);
  EXPECT_EQ(s.where[1].time_us, kT0);  // Integers are nanoseconds.
  EXPECT_EQ(s.group_time_us, 5400000000LL);
  EXPECT_EQ(s.group_time_offset_us, -300000000);
  EXPECT_EQ(*ParseInfluxDuration("500ms"), 500000);
  EXPECT_EQ(*ParseInfluxDuration("2d"), 172800000000LL);
  EXPECT_EQ(*ParseInfluxDuration("1500ns"), 1);
  EXPECT_EQ(*ParseInfluxDuration("10u"), 10);
  EXPECT_FALSE(ParseInfluxDuration("5y").ok()) << "accepted 5y";
  EXPECT_FALSE(ParseInfluxDuration("m").ok()) << "accepted m";
  EXPECT_EQ(*ParseInfluxTime("2016-01-01T00:00:00.5Z"), kT0 + 500000);
  EXPECT_EQ(*ParseInfluxTime("2016-01-01T01:00:00+01:00"), kT0);
  EXPECT_EQ(*ParseInfluxTime("2016-01-01"), kT0);
  EXPECT_FALSE(ParseInfluxTime("yesterday").ok()) << "accepted yesterday";
  EXPECT_EQ(FormatInfluxTime(kT0), "2016-01-01T00:00:00Z");
  EXPECT_EQ(FormatInfluxTime(kT0 + 1500), "2016-01-01T00:00:00.0015Z");
}

TEST(InfluxQLTest, ShowCreateDropAndSeveralStatements) {
  absl::StatusOr<std::vector<InfluxStatement>> s = ParseInfluxQL(
      "CREATE DATABASE bench; SHOW DATABASES; show measurements; SHOW TAG KEYS FROM cpu; SHOW "
      "FIELD KEYS; DROP DATABASE bench;",
      kNow);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 6u);
  EXPECT_EQ((*s)[0].kind, InfluxStatement::kCreateDatabase);
  EXPECT_EQ((*s)[0].name, "bench");
  EXPECT_EQ((*s)[1].kind, InfluxStatement::kShowDatabases);
  EXPECT_EQ((*s)[2].kind, InfluxStatement::kShowMeasurements);
  EXPECT_EQ((*s)[3].kind, InfluxStatement::kShowTagKeys);
  EXPECT_EQ((*s)[3].name, "cpu");
  EXPECT_EQ((*s)[4].kind, InfluxStatement::kShowFieldKeys);
  EXPECT_EQ((*s)[5].kind, InfluxStatement::kDropDatabase);
}

TEST(InfluxQLTest, ErrorsNameThePosition) {
  EXPECT_EQ(ErrorOf("SELEC x FROM m"),
            "expected SELECT, SHOW, CREATE DATABASE or DROP DATABASE, got 'SELEC' at position 1");
  EXPECT_EQ(ErrorOf("SELECT max(v FROM m"), "expected ')', got 'FROM' at position 14");
  EXPECT_NE(ErrorOf("SELECT v FROM m WHERE time >= 'soon'").find("invalid time 'soon'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM m WHERE host > 'a'").find("compared with = or != only"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM m WHERE (host = 'a' OR region = 'b')").find("one tag only"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM m GROUP BY time(5y)").find("invalid duration"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM m fill(previous)").find("null or none"), std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM m WHERE v = 'unterminated").find("unterminated"),
            std::string::npos);
  EXPECT_NE(ErrorOf("SELECT v FROM m LIMIT -1").find("a limit"), std::string::npos);
  EXPECT_EQ(ErrorOf(""), "empty query");
  EXPECT_NE(ErrorOf("SHOW RETENTION POLICIES").find("expected DATABASES"), std::string::npos);
}

}  // namespace influxql_test_file
}  // namespace
}  // namespace basalt::tsdb
