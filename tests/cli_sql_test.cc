// `basalt sql` (docs/sql.md): the real binary against a cluster, checking exact output of
// aggregate, grouped, sorted and plain queries, EXPLAIN, statements read from standard input, and
// errors pointing at the bad token.

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/match.h"
#include "common/strings.h"
#include "tests/cli_test_util.h"

namespace basalt {
namespace {
namespace cli_sql_test_file {

class CliSqlTest : public CliClusterTest {
 protected:
  // metrics: two hosts, a reading every 20 s for two minutes, v NULL every fourth row.
  void CreateMetrics() {
    MustRun({"table", "create", master_,
             "CREATE TABLE metrics (host STRING, ts UNIXTIME_MICROS, v INT32 NULL, "
             "d DECIMAL(10, 2) NULL, PRIMARY KEY (host, ts)) PARTITION BY HASH (host) PARTITIONS "
             "3 REPLICAS 3"});
    std::string csv;
    int i = 0;
    for (const char* host : {"a", "b"}) {
      for (int t = 0; t < 120; t += 20, i++) {
        const std::string v = i % 4 == 3 ? "" : std::to_string(i);
        StrAppend(&csv, host, ",", t * 1000000LL, ",", v, ",", i, ".50\n");
      }
    }
    MustRun(
        {"table", "load", master_, "metrics", WriteFile("m.csv", csv), "--columns=host,ts,v,d"});
  }
};

TEST_F(CliSqlTest, AggregatesGroupsOrderAndFormats) {
  ASSERT_NO_FATAL_FAILURE(CreateMetrics());
  // Rows 0..11: host a has 0..5 (v NULL at 3), host b 6..11 (v NULL at 7 and 11).
  EXPECT_EQ(MustRun({"sql", master_,
                     "SELECT count(*), count(v), sum(v), min(v), max(d), avg(v) FROM metrics",
                     "--format=csv"}),
            "count(*),count(v),sum(v),min(v),max(d),avg(v)\n12,9,45,0,11.50,5\n");
  EXPECT_EQ(MustRun({"sql", master_,
                     "SELECT host, sum(v) AS total, first(v), last(v) FROM metrics GROUP BY host "
                     "ORDER BY total DESC",
                     "--format=csv"}),
            "host,total,first(v),last(v)\nb,33,6,10\na,12,0,5\n");
  // Minute buckets across both hosts, by position; a WHERE on the key pushed down.
  EXPECT_EQ(MustRun({"sql", master_,
                     "SELECT time_bucket(ts, 1m) AS minute, count(*) n FROM metrics WHERE host = "
                     "'a' GROUP BY 1",
                     "--format=csv"}),
            "minute,n\n1970-01-01 00:00:00.000000,3\n1970-01-01 00:01:00.000000,3\n");
  // GROUP BY without an aggregate lists the groups; LIMIT counts them.
  EXPECT_EQ(
      MustRun({"sql", master_, "SELECT host FROM metrics GROUP BY host LIMIT 1", "--format=csv"}),
      "host\na\n");
  // Plain rows, sorted by a column that is not printed, with a predicate and a limit.
  EXPECT_EQ(MustRun({"sql", master_,
                     "select v from metrics where v is not null and d < 5 order by ts desc, host "
                     "limit 3;",
                     "--format=csv"}),
            "v\n4\n2\n1\n");
  EXPECT_EQ(
      MustRun({"sql", master_, "SELECT host, max(ts) FROM metrics GROUP BY host", "--format=json"}),
      "[\n  {\"host\": \"a\", \"max(ts)\": \"1970-01-01 00:01:40.000000\"},\n"
      "  {\"host\": \"b\", \"max(ts)\": \"1970-01-01 00:01:40.000000\"}\n]\n");
  CliResult table = Basalt({"sql", master_, "SELECT sum(v) FROM metrics WHERE host = 'zz'"});
  EXPECT_EQ(table.rc, 0) << table.err;
  EXPECT_TRUE(absl::StartsWith(table.out, "sum(v)\n------\n")) << table.out;
  EXPECT_NE(table.out.find("NULL"), std::string::npos) << table.out;
  EXPECT_EQ(table.err, "(1 rows)\n");
}

TEST_F(CliSqlTest, ExplainShowsWhatIsPushed) {
  ASSERT_NO_FATAL_FAILURE(CreateMetrics());
  EXPECT_EQ(MustRun({"sql", master_,
                     "EXPLAIN SELECT host, avg(v) FROM metrics WHERE ts >= 0 GROUP BY host "
                     "ORDER BY 2 LIMIT 1"}),
            "Scan of table metrics\n"
            "  pushed to every tablet the predicates do not rule out:\n"
            "    predicates: ts >= 0\n"
            "    aggregates: avg(v)\n"
            "    group by: host\n"
            "    answer: partial aggregates, one row per group\n"
            "  in the client:\n"
            "    merge the partial aggregates of every tablet, groups in order\n"
            "    sort by 2\n"
            "    limit 1\n"
            "    print host, avg(v)\n");
  // EXPLAIN checks what only the table can tell.
  CliResult bad = Basalt({"sql", master_, "EXPLAIN SELECT sum(host) FROM metrics"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("sum needs a numeric column, 'host' is STRING"), std::string::npos)
      << bad.err;
}

TEST_F(CliSqlTest, StatementsFromStandardInputAndErrors) {
  ASSERT_NO_FATAL_FAILURE(CreateMetrics());
  const std::string script =
      WriteFile("q.sql",
                "SELECT count(*)\n  FROM metrics;\nSELECT nope FROM metrics;\n"
                "SELECT 'x;y' FROM metrics;\nSELECT max(v) FROM metrics WHERE host = 'a;b'\n");
  CliResult r = Basalt({"sql", master_, "--format=csv"}, script);
  EXPECT_EQ(r.rc, 1);
  // The first and the last statement ran; the two bad ones were reported and skipped.
  EXPECT_EQ(r.out, "count(*)\n12\nmax(v)\n\n");  // CSV writes NULL as an empty field.
  EXPECT_NE(r.err.find("Error: table 'metrics' has no column 'nope' at position 8:\n"
                       "  SELECT nope FROM metrics\n"
                       "         ^\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("expected a column name, got 'x;y'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 statement(s) failed"), std::string::npos) << r.err;

  CliResult missing = Basalt({"sql", master_, "SELECT count(*) FROM nope"});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("nope"), std::string::npos) << missing.err;
  CliResult syntax = Basalt({"sql", master_, "SELECT count(*) FROM metrics WHERE v >> 2"});
  EXPECT_EQ(syntax.rc, 1);
  EXPECT_NE(syntax.err.find("got '>' at position 39"), std::string::npos) << syntax.err;
}

}  // namespace cli_sql_test_file
}  // namespace
}  // namespace basalt
