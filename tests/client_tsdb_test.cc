// basalt-tsdbd (docs/tsdb.md) driven by a real HTTP client against a real cluster: the server
// runs in the test process (TsdbServer), requests go through cpp-httplib's client. Covers the
// line protocol corner cases through /write, whole-request rejection of bad lines, type
// conflicts, SHOW and CREATE, and InfluxQL answers compared with a model of the points.

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/random.h"
#include "common/strings.h"
#include "tests/client_test_util.h"
#include "tsdb/query_executor.h"
#include "tsdb/tsdb_server.h"

namespace basalt::client_test {
namespace {
namespace client_tsdb_test_file {

using tsdb::FormatInfluxTime;

constexpr int64_t kT0 = 1451606400000000;  // 2016-01-01T00:00:00Z, in microseconds.

class ClientTsdbTest : public ClientClusterTestBase {
 protected:
  void SetUp() override {
    ClientClusterTestBase::SetUp();
    tsdb::TsdbServerOptions o;
    o.bind_host = "127.0.0.1";
    o.port = 0;
    o.catalog.hash_partitions = 2;
    server_ = std::make_unique<tsdb::TsdbServer>(client_, o);
    ASSERT_OK(server_->Start());
    http_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    http_->set_read_timeout(60, 0);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    ClientClusterTestBase::TearDown();
  }

  // POST /write; the status and body.
  std::pair<int, std::string> Write(const std::string& db, const std::string& body,
                                    const std::string& precision = "") {
    std::string path = StrCat("/write?db=", db);
    if (!precision.empty()) StrAppend(&path, "&precision=", precision);
    auto res = http_->Post(path, body, "text/plain");
    if (!res) return {-1, "no response"};
    return {res->status, res->body};
  }
  // GET /query; the body (expects 200).
  std::string Query(const std::string& q, const std::string& db = "db") {
    httplib::Params params{{"q", q}, {"db", db}};
    auto res = http_->Get("/query", params, httplib::Headers{});
    EXPECT_TRUE(res) << q;
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << q << " -> " << res->body;
    return res->body;
  }
  void CreateDb() {
    auto res =
        http_->Post("/query", "q=CREATE%20DATABASE%20db", "application/x-www-form-urlencoded");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    ASSERT_EQ(res->body, "{\"results\":[{\"statement_id\":0}]}");
  }

  std::unique_ptr<tsdb::TsdbServer> server_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(ClientTsdbTest, PingWriteCornerCasesAndShow) {
  auto ping = http_->Get("/ping");
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->status, 204);
  EXPECT_TRUE(ping->has_header("X-Influxdb-Version"));
  EXPECT_EQ(Write("nope", "m v=1 1").first, 404);
  EXPECT_EQ(Write("", "m v=1 1").first, 400);
  ASSERT_NO_FATAL_FAILURE(CreateDb());
  // Escaped tag values (space, comma, equals), a quoted string with an escaped quote, the i
  // suffix, booleans, a point without a timestamp, and a duplicate point (same series and time)
  // whose later line wins.
  const std::string body =
      "weather,city=New\\ York,zone=a\\,b\\=c temp=21.5,humidity=40i,rain=true,note=\"says "
      "\\\"hi\\\", ok\" 1451606400\n"
      "weather,city=Paris,zone=z temp=18,humidity=55i,rain=F 1451606400\n"
      "weather,city=Paris,zone=z temp=19.25 1451606400\n"
      "# a comment\n"
      "\n"
      "weather,city=Oslo,zone=n temp=-3.5\n";
  auto [status, resp] = Write("db", body, "s");
  ASSERT_EQ(status, 204) << resp;
  EXPECT_EQ(Query("SELECT count(temp) FROM weather"),
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"weather\",\"columns\":["
            "\"time\",\"count\"],\"values\":[[\"1970-01-01T00:00:00Z\",3]]}]}]}");
  // Paris's second line replaced temp and kept the rest (an upsert of the same row).
  EXPECT_EQ(Query("SELECT last(temp), last(humidity), last(rain) FROM weather WHERE city = "
                  "'Paris'"),
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"weather\",\"columns\":["
            "\"time\",\"last\",\"last_1\",\"last_2\"],\"values\":[[\"2016-01-01T00:00:00Z\",19.25,"
            "55,false]]}]}]}");
  EXPECT_EQ(Query("SELECT last(note), max(humidity) FROM weather WHERE zone = 'a,b=c' AND city "
                  "= 'New York'"),
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"weather\",\"columns\":["
            "\"time\",\"last\",\"max\"],\"values\":[[\"1970-01-01T00:00:00Z\",\"says \\\"hi\\\", "
            "ok\",40]]}]}]}");
  // The point without a timestamp got the server's time (today).
  const std::string oslo = Query("SELECT last(temp) FROM weather WHERE city = 'Oslo'");
  EXPECT_EQ(oslo.find("1970"), std::string::npos) << oslo;
  EXPECT_NE(oslo.find("-3.5"), std::string::npos) << oslo;
  EXPECT_EQ(
      Query("SHOW MEASUREMENTS; SHOW TAG KEYS; SHOW FIELD KEYS FROM weather; SHOW DATABASES"),
      "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"measurements\",\"columns\":"
      "[\"name\"],\"values\":[[\"weather\"]]}]},{\"statement_id\":1,\"series\":[{\"name\":"
      "\"weather\",\"columns\":[\"tagKey\"],\"values\":[[\"city\"],[\"zone\"]]}]},{\"statement_"
      "id\":2,\"series\":[{\"name\":\"weather\",\"columns\":[\"fieldKey\",\"fieldType\"],"
      "\"values\":[[\"humidity\",\"integer\"],[\"note\",\"string\"],[\"rain\",\"boolean\"],"
      "[\"temp\",\"float\"]]}]},{\"statement_id\":3,\"series\":[{\"name\":\"databases\","
      "\"columns\":[\"name\"],\"values\":[[\"db\"]]}]}]}");
  auto metrics = http_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("tsdb_points_written_total 4"), std::string::npos) << metrics->body;
}

TEST_F(ClientTsdbTest, BadLinesRejectTheWholeRequestAndConflictsAreNamed) {
  ASSERT_NO_FATAL_FAILURE(CreateDb());
  auto [status, body] = Write("db", "m,h=a v=1 1\nm,h=b v=2 2\nm,h=c v=oops 3\n");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("line 3, column"), std::string::npos) << body;
  // Nothing of that request was written: the measurement does not even exist.
  EXPECT_EQ(Query("SELECT count(v) FROM m"), "{\"results\":[{\"statement_id\":0}]}");
  ASSERT_EQ(Write("db", "m,h=a v=1 1\n").first, 204);
  std::tie(status, body) = Write("db", "m,h=a v=2i 2\n");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("field type conflict: input field \\\"v\\\" on measurement \\\"m\\\" is "
                      "type integer, already exists as type float"),
            std::string::npos)
      << body;
  std::tie(status, body) = Write("db", "m,h=a,newtag=x v=2 2\n");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("tag key 'newtag'"), std::string::npos) << body;
  // A measurement that cannot take its points fails alone: the others are written.
  std::tie(status, body) = Write("db", "p v=1 1\nm,h=a v=\"s\" 1\nq v=1 1\n");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("partial write: 1 of 3 points failed (2 written)"), std::string::npos)
      << body;
  EXPECT_NE(Query("SELECT count(v) FROM q")
                .find("\"count\"],\"values\":[[\"1970-01-01T00:00:00Z"
                      "\",1]]"),
            std::string::npos);
  // Times InfluxDB cannot hold are refused.
  std::tie(status, body) = Write("db", "m,h=a v=1 9223372036854775807\n", "u");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("timestamp out of range"), std::string::npos) << body;
  // A query that does not parse is a 400 of the request.
  httplib::Params params{{"q", "SELEC v FROM m"}, {"db", "db"}};
  auto res = http_->Get("/query", params, httplib::Headers{});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("error parsing query"), std::string::npos) << res->body;
  // A statement that fails is reported in its result.
  EXPECT_NE(Query("SELECT median(v) FROM m").find("\"error\":\"unsupported function median()"),
            std::string::npos);
  // Selectors beside other functions across series would need merging: refused, not answered
  // by key order.
  ASSERT_EQ(Write("db", "m,h=b v=5 1\n").first, 204);
  EXPECT_NE(Query("SELECT last(v), max(v) FROM m").find("need GROUP BY every tag"),
            std::string::npos);
  EXPECT_NE(Query("SELECT last(v), max(v) FROM m GROUP BY *").find("\"last\",\"max\""),
            std::string::npos);
  // fill(null) over an enormous range is refused, not built (and count() fills with 0; both
  // points are at 1 ns, so in the first second).
  EXPECT_NE(Query("SELECT count(v) FROM m WHERE time >= 0 AND time < 9000000000000000000 GROUP "
                  "BY time(1s)")
                .find("more than 1000000 rows"),
            std::string::npos);
  EXPECT_EQ(Query("SELECT count(v) FROM m WHERE time >= 0 AND time < 3000000000 GROUP BY time(1s)"),
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"m\",\"columns\":"
            "[\"time\",\"count\"],\"values\":[[\"1970-01-01T00:00:00Z\",2],[\"1970-01-01T00:"
            "00:01Z\",0],[\"1970-01-01T00:00:02Z\",0]]}]}]}");
  // Tags named like the executor's own columns do not clash with them.
  ASSERT_EQ(Write("db", "x,t0=a,a0=b v=1 1\n").first, 204);
  EXPECT_NE(Query("SELECT last(v) FROM x GROUP BY t0, a0")
                .find("\"tags\":{\"t0\":\"a\","
                      "\"a0\":\"b\"}"),
            std::string::npos);
}

// The TSBS devops shapes against a model of the points: hosts, a reading every 10 s, two fields
// (usage_user float, usage_system integer). Float values are quarters, so sums are exact in any
// order and the model's means equal the server's.
TEST_F(ClientTsdbTest, QueriesMatchTheModel) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  Random rnd(seed);
  ASSERT_NO_FATAL_FAILURE(CreateDb());
  struct Pt {
    int64_t t;
    double user;
    int64_t system;
  };
  std::map<std::string, std::vector<Pt>> model;  // host -> points in time order
  const int hosts = 4;
  const int points = 2 * 360;  // Two hours of 10 s readings.
  std::string body;
  for (int h = 0; h < hosts; h++) {
    const std::string host = StrCat("host_", h);
    for (int i = 0; i < points; i++) {
      // Gaps, so that fill(null) shows: random points, and host_1's 20 minutes from minute 30.
      if (rnd.OneIn(7) || (h == 1 && i >= 180 && i < 300)) continue;
      Pt p{kT0 + i * 10000000LL, static_cast<double>(rnd.Uniform(400)) / 4,
           static_cast<int64_t>(rnd.Uniform(100))};
      model[host].push_back(p);
      StrAppend(&body, "cpu,hostname=", host, " usage_user=", p.user, ",usage_system=", p.system,
                "i ", p.t / 1000000, "\n");
    }
  }
  auto [status, resp] = Write("db", body, "s");
  ASSERT_EQ(status, 204) << resp;

  auto number = [](double v) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, end);
  };
  const std::vector<std::string> functions = {"max",  "min",   "sum", "count",
                                              "mean", "first", "last"};
  for (int iter = 0; iter < 25; iter++) {
    const std::string f = functions[rnd.Uniform(functions.size())];
    const bool integer_field = rnd.OneIn(2);
    const std::string field = integer_field ? "usage_system" : "usage_user";
    const int64_t width = (1 + static_cast<int64_t>(rnd.Uniform(30))) * 60000000LL;
    const int64_t lo = kT0 + static_cast<int64_t>(rnd.Uniform(3600)) * 1000000;
    // Up to an hour past the last point: empty intervals at the end too.
    const int64_t hi = lo + (1 + static_cast<int64_t>(rnd.Uniform(7200))) * 1000000;
    const bool by_host = rnd.OneIn(2);
    std::set<std::string> only;
    if (rnd.OneIn(2)) {
      only.insert(StrCat("host_", rnd.Uniform(hosts)));
      only.insert(StrCat("host_", rnd.Uniform(hosts)));
    }
    std::string q = StrCat("SELECT ", f, "(", field, ") FROM cpu WHERE time >= '",
                           FormatInfluxTime(lo), "' AND time < '", FormatInfluxTime(hi), "'");
    if (!only.empty()) {
      std::string ors;
      for (const std::string& h : only)
        StrAppend(&ors, ors.empty() ? "" : " OR ", "hostname = '", h, "'");
      StrAppend(&q, " AND (", ors, ")");
    }
    StrAppend(&q, " GROUP BY time(", width / 60000000, "m)", by_host ? ", hostname" : "");
    // The model: per series (a host, or all of them), per bucket from floor(lo) to hi.
    std::map<std::string, std::map<int64_t, std::vector<Pt>>> buckets;
    std::set<std::string> series_names;
    for (const auto& [host, pts] : model) {
      if (!only.empty() && only.count(host) == 0) continue;
      for (const Pt& p : pts) {
        if (p.t < lo || p.t >= hi) continue;
        const std::string s = by_host ? host : "";
        series_names.insert(s);
        buckets[s][(p.t - (p.t % width + width) % width)].push_back(p);
      }
    }
    std::string want = "{\"results\":[{\"statement_id\":0";
    std::string series;
    for (const std::string& s : series_names) {
      StrAppend(&series, series.empty() ? "" : ",", "{\"name\":\"cpu\"");
      if (by_host) StrAppend(&series, ",\"tags\":{\"hostname\":\"", s, "\"}");
      StrAppend(&series, ",\"columns\":[\"time\",\"", f, "\"],\"values\":[");
      bool first_row = true;
      for (int64_t b = lo - ((lo % width) + width) % width; b < hi; b += width) {
        StrAppend(&series, first_row ? "" : ",", "[\"", FormatInfluxTime(b), "\",");
        first_row = false;
        auto it = buckets[s].find(b);
        if (it == buckets[s].end() || it->second.empty()) {
          series += f == "count" ? "0]" : "null]";  // count() fills with 0.
          continue;
        }
        std::vector<Pt> pts = it->second;
        std::sort(pts.begin(), pts.end(), [](const Pt& a, const Pt& b) { return a.t < b.t; });
        double mx = -1e300, mn = 1e300, sum = 0;
        for (const Pt& p : pts) {
          const double v = integer_field ? static_cast<double>(p.system) : p.user;
          mx = std::max(mx, v);
          mn = std::min(mn, v);
          sum += v;
        }
        auto val = [&](const Pt& p) {
          return integer_field ? std::to_string(p.system) : number(p.user);
        };
        auto num = [&](double v) {
          return integer_field ? std::to_string(static_cast<int64_t>(v)) : number(v);
        };
        std::string v;
        if (f == "max") v = num(mx);
        if (f == "min") v = num(mn);
        if (f == "sum") v = num(sum);
        if (f == "count") v = std::to_string(pts.size());
        if (f == "mean") v = number(sum / static_cast<double>(pts.size()));
        if (f == "first") v = val(pts.front());
        if (f == "last") v = val(pts.back());
        StrAppend(&series, v, "]");
      }
      series += "]}";
    }
    if (!series.empty()) StrAppend(&want, ",\"series\":[", series, "]");
    want += "}]}";
    // first()/last() over several hosts in one bucket pick by time; ties between hosts (same
    // timestamp) may resolve either way, so those are checked only per host.
    if (!by_host && (f == "first" || f == "last") && only.size() != 1) continue;
    EXPECT_EQ(Query(q), want) << q;
  }
  // Raw queries (high-cpu-1's shape): the points of one host above a threshold, in time order.
  for (int iter = 0; iter < 5; iter++) {
    const std::string host = StrCat("host_", rnd.Uniform(hosts));
    const double threshold = static_cast<double>(rnd.Uniform(100));
    const int64_t lo = kT0 + static_cast<int64_t>(rnd.Uniform(3600)) * 1000000;
    const int64_t hi = lo + static_cast<int64_t>(rnd.Uniform(3600)) * 1000000;
    const std::string q =
        StrCat("SELECT usage_user, usage_system FROM cpu WHERE usage_user > ", threshold,
               " AND time >= '", FormatInfluxTime(lo), "' AND time < '", FormatInfluxTime(hi),
               "' AND hostname = '", host, "'");
    std::string values;
    for (const Pt& p : model[host]) {
      if (p.t < lo || p.t >= hi || !(p.user > threshold)) continue;
      StrAppend(&values, values.empty() ? "" : ",", "[\"", FormatInfluxTime(p.t), "\",",
                number(p.user), ",", p.system, "]");
    }
    const std::string want = values.empty()
                                 ? "{\"results\":[{\"statement_id\":0}]}"
                                 : StrCat(
                                       "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":"
                                       "\"cpu\",\"columns\":[\"time\",\"usage_user\",\"usage_"
                                       "system\"],\"values\":[",
                                       values, "]}]}]}");
    EXPECT_EQ(Query(q), want) << q;
  }
}

}  // namespace client_tsdb_test_file
}  // namespace
}  // namespace basalt::client_test
