// tsbs_bench: a TSBS-like benchmark of basalt-tsdbd (docs/tsdb.md; issue 17 item 4), our own
// code after the Time Series Benchmark Suite's "devops cpu-only" use case.
//
// Load: N hosts, each with the 10 TSBS tags (hostname, region, datacenter, rack, os, arch, team,
// service, service_version, service_environment) reporting the 10 cpu fields (usage_user ...
// usage_guest_nice) every 10 s over --hours, values from a deterministic seed, POSTed to /write
// as line protocol in batches of --batch_lines by --load_workers threads. The bodies are
// formatted before the timed part (as TSBS generates its data file before loading it). Prints
// metrics/s (fields written per second).
//
// Queries: for each TSBS query type below, --queries random instances (same seed, same queries)
// run by 2 and by 4 client threads: QPS and p50/p99 latency.
//   single-groupby-1-1-1   max of 1 field, 1 host, 1 hour, by minute
//   single-groupby-5-1-12  max of 5 fields, 1 host, 12 hours, by minute
//   double-groupby-1       mean of 1 field, every host, 12 hours, by hour and host
//   lastpoint              the last point of every host
//   high-cpu-1             the points of 1 host over 12 hours with usage_user > 90
//
// Output: one JSON object on stdout; progress on stderr.

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "absl/strings/str_split.h"

DEFINE_string(host, "127.0.0.1", "basalt-tsdbd's host.");
DEFINE_int32(port, 8086, "basalt-tsdbd's HTTP port.");
DEFINE_string(db, "benchmark", "Database (created if missing).");
DEFINE_int32(hosts, 100, "Hosts (series) of the cpu measurement.");
DEFINE_double(hours, 24, "Hours of data from 2016-01-01T00:00:00Z, a reading every 10 s.");
DEFINE_uint64(seed, 123, "Seed of the values and of the queries.");
DEFINE_int32(load_workers, 4, "Threads POSTing /write batches.");
DEFINE_int32(batch_lines, 10000, "Lines (points) per /write request.");
DEFINE_int32(queries, 100, "Queries of each type for each thread count.");
DEFINE_bool(skip_load, false, "Only run the queries (the data is there already).");
DEFINE_string(query_types, "",
              "Comma-separated query types to run (empty: all of them), e.g. "
              "single-groupby-1-1-1,lastpoint.");

namespace {

constexpr int64_t kStartSec = 1451606400;  // 2016-01-01T00:00:00Z
constexpr int kStepSec = 10;
constexpr const char* kFields[] = {
    "usage_user", "usage_system",  "usage_idle",  "usage_nice",  "usage_iowait",
    "usage_irq",  "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"};
constexpr int kNumFields = 10;

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A value in [0, 100) with two decimals, the same for the same (seed, host, step, field).
double Value(uint64_t seed, int host, int64_t step, int field) {
  const uint64_t h = Mix(seed ^ Mix(static_cast<uint64_t>(host) * 1000003 + field) ^
                         Mix(static_cast<uint64_t>(step)));
  return static_cast<double>(h % 10000) / 100;
}

// The tags of host h, as TSBS's devops generator names them.
std::string Tags(int h) {
  static const char* kRegions[] = {"us-east-1",      "us-west-1",      "us-west-2",
                                   "eu-west-1",      "eu-central-1",   "ap-southeast-1",
                                   "ap-southeast-2", "ap-northeast-1", "sa-east-1"};
  static const char* kOs[] = {"Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"};
  static const char* kArch[] = {"x86", "x64"};
  static const char* kEnv[] = {"production", "staging", "test"};
  const uint64_t r = Mix(static_cast<uint64_t>(h));
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "hostname=host_%d,region=%s,datacenter=%s%c,rack=%" PRIu64
                ",os=%s,arch=%s,"
                "team=%s,service=%" PRIu64 ",service_version=%" PRIu64 ",service_environment=%s",
                h, kRegions[r % 9], kRegions[r % 9], static_cast<char>('a' + (r >> 8) % 3),
                (r >> 12) % 100, kOs[(r >> 20) % 3], kArch[(r >> 24) % 2],
                (r >> 28) % 2 ? "SF" : "NYC", (r >> 32) % 20, (r >> 40) % 2, kEnv[(r >> 48) % 3]);
  return buf;
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Rfc3339(int64_t sec) {
  const time_t t = static_cast<time_t>(sec);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tsbs_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string Encode(const std::string& s) { return httplib::detail::encode_query_param(s); }

// Runs `q`; its status (and body on error).
int Query(httplib::Client* c, const std::string& q, std::string* body) {
  auto res = c->Get("/query?db=" + Encode(FLAGS_db) + "&q=" + Encode(q));
  if (!res) return -1;
  if (body != nullptr) *body = res->body;
  return res->status;
}

// Runs `fn` on `n` threads at once and waits for them all.
void RunOnThreads(int n, const std::function<void()>& fn) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; i++) threads.emplace_back(fn);
  for (auto& t : threads) t.join();
}

// Makes `c` keep its connection between requests, as TSBS's own clients (Go's net/http) do,
// and wait long for slow answers.
void KeepAlive(httplib::Client* c) {
  c->set_keep_alive(true);
  c->set_read_timeout(300, 0);
  c->set_write_timeout(300, 0);
}

struct LoadResult {
  int64_t points = 0;
  double seconds = 0;
};

// The /write bodies of the whole load, batch by batch: formatted before the load is timed, as
// TSBS's generator writes its data file before its loader runs (formatting the lines took about
// a tenth of this 2-core machine while the load ran when it was done on the fly). They are held
// in memory: about 380 bytes a point, 330 MB for the default 100 hosts over 24 hours.
std::vector<std::string> MakeBodies(int64_t total) {
  std::vector<std::string> tags;
  for (int h = 0; h < FLAGS_hosts; h++) tags.push_back(Tags(h));
  const int64_t batches = (total + FLAGS_batch_lines - 1) / FLAGS_batch_lines;
  std::vector<std::string> bodies(static_cast<size_t>(batches));
  std::atomic<int64_t> next{0};
  RunOnThreads(FLAGS_load_workers, [&] {
    char line[1024];
    for (int64_t b = next.fetch_add(1); b < batches; b = next.fetch_add(1)) {
      const int64_t begin = b * FLAGS_batch_lines;
      const int64_t end = std::min(total, begin + FLAGS_batch_lines);
      std::string& body = bodies[static_cast<size_t>(b)];
      for (int64_t i = begin; i < end; i++) {
        const int64_t step = i / FLAGS_hosts;  // Step-major: batches advance in time.
        const int host = static_cast<int>(i % FLAGS_hosts);
        int n = std::snprintf(line, sizeof(line), "cpu,%s ", tags[host].c_str());
        for (int f = 0; f < kNumFields; f++) {
          n += std::snprintf(line + n, sizeof(line) - n, "%s%s=%.2f", f ? "," : "", kFields[f],
                             Value(FLAGS_seed, host, step, f));
        }
        n += std::snprintf(line + n, sizeof(line) - n, " %" PRId64 "\n",
                           kStartSec + step * kStepSec);
        body.append(line, n);
      }
    }
  });
  return bodies;
}

LoadResult Load() {
  const int64_t steps = static_cast<int64_t>(FLAGS_hours * 3600 / kStepSec);
  const int64_t total = steps * FLAGS_hosts;
  const std::vector<std::string> bodies = MakeBodies(total);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex err_mu;
  std::string first_error;
  const std::string path = "/write?db=" + Encode(FLAGS_db) + "&precision=s";
  const int64_t start = NowMicros();
  RunOnThreads(FLAGS_load_workers, [&] {
    httplib::Client c(FLAGS_host, FLAGS_port);
    KeepAlive(&c);
    while (!failed) {
      const size_t b = next.fetch_add(1);
      if (b >= bodies.size()) break;
      const int64_t lines =
          std::min<int64_t>(FLAGS_batch_lines, total - static_cast<int64_t>(b) * FLAGS_batch_lines);
      auto res = c.Post(path, bodies[b], "text/plain");
      if (!res || res->status != 204) {
        std::lock_guard<std::mutex> l(err_mu);
        if (first_error.empty()) {
          first_error = res ? std::to_string(res->status) + " " + res->body : "no response";
        }
        failed = true;
        break;
      }
      const int64_t d = done.fetch_add(lines) + lines;
      if ((d / FLAGS_batch_lines) % 50 == 0) {
        std::fprintf(stderr, "load: %" PRId64 " of %" PRId64 " points\n", d, total);
      }
    }
  });
  if (failed) Die("a /write failed: " + first_error);
  return {total, (NowMicros() - start) / 1e6};
}

// A query of `type` for instance i (deterministic).
std::string MakeQuery(const std::string& type, uint64_t i) {
  const uint64_t r = Mix(FLAGS_seed * 31 + i);
  const int64_t span = static_cast<int64_t>(FLAGS_hours * 3600);
  const std::string host = "host_" + std::to_string(r % FLAGS_hosts);
  auto window = [&](int64_t secs) {
    const int64_t room = std::max<int64_t>(span - secs, 0);
    const int64_t from = kStartSec + (room > 0 ? static_cast<int64_t>((r >> 16) % room) : 0);
    return "time >= '" + Rfc3339(from) + "' AND time < '" + Rfc3339(from + secs) + "'";
  };
  if (type == "single-groupby-1-1-1") {
    return "SELECT max(usage_user) FROM cpu WHERE (hostname = '" + host + "') AND " + window(3600) +
           " GROUP BY time(1m)";
  }
  if (type == "single-groupby-5-1-12") {
    return "SELECT max(usage_user),max(usage_system),max(usage_idle),max(usage_nice),"
           "max(usage_iowait) FROM cpu WHERE (hostname = '" +
           host + "') AND " + window(12 * 3600) + " GROUP BY time(1m)";
  }
  if (type == "double-groupby-1") {
    return "SELECT mean(usage_user) FROM cpu WHERE " + window(12 * 3600) +
           " GROUP BY time(1h),hostname";
  }
  if (type == "lastpoint") {
    return "SELECT * FROM cpu GROUP BY \"hostname\" ORDER BY time DESC LIMIT 1";
  }
  return "SELECT * FROM cpu WHERE usage_user > 90.0 AND " + window(12 * 3600) +
         " AND (hostname = '" + host + "')";
}

struct QueryResult {
  double qps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

QueryResult RunQueries(const std::string& type, int threads) {
  std::atomic<int> next{0};
  std::vector<double> lat_ms(FLAGS_queries);
  std::atomic<bool> failed{false};
  std::string first_error;
  std::mutex mu;
  const int64_t start = NowMicros();
  RunOnThreads(threads, [&] {
    httplib::Client c(FLAGS_host, FLAGS_port);
    KeepAlive(&c);
    std::string body;
    for (int i; (i = next.fetch_add(1)) < FLAGS_queries && !failed;) {
      const std::string q = MakeQuery(type, static_cast<uint64_t>(i));
      const int64_t t0 = NowMicros();
      const int status = Query(&c, q, &body);
      lat_ms[i] = (NowMicros() - t0) / 1000.0;
      if (status != 200 || body.find("\"error\"") != std::string::npos) {
        std::lock_guard<std::mutex> l(mu);
        if (first_error.empty()) first_error = q + " -> " + std::to_string(status) + " " + body;
        failed = true;
      }
    }
  });
  if (failed) Die("a query failed: " + first_error);
  const double secs = (NowMicros() - start) / 1e6;
  std::sort(lat_ms.begin(), lat_ms.end());
  auto pct = [&](double p) {
    return lat_ms[std::min(lat_ms.size() - 1, static_cast<size_t>(p * lat_ms.size()))];
  };
  return {FLAGS_queries / secs, pct(0.50), pct(0.99)};
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("A TSBS-like benchmark of basalt-tsdbd (devops cpu-only).");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_hosts < 1 || FLAGS_hours <= 0 || FLAGS_load_workers < 1 || FLAGS_batch_lines < 1 ||
      FLAGS_queries < 1) {
    Die("--hosts, --hours, --load_workers, --batch_lines and --queries must be positive");
  }
  httplib::Client c(FLAGS_host, FLAGS_port);
  std::string body;
  if (Query(&c, "CREATE DATABASE " + FLAGS_db, &body) != 200) Die("CREATE DATABASE: " + body);
  std::string out = "{";
  if (!FLAGS_skip_load) {
    const LoadResult load = Load();
    const double metrics = static_cast<double>(load.points) * kNumFields;
    std::fprintf(stderr, "load: %" PRId64 " points (%.0f metrics) in %.2f s: %.0f metrics/s\n",
                 load.points, metrics, load.seconds, metrics / load.seconds);
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "\"load\": {\"hosts\": %d, \"points\": %" PRId64
                  ", \"metrics\": %.0f, \"seconds\": %.3f, \"metrics_per_sec\": %.0f, "
                  "\"workers\": %d, \"batch_lines\": %d}, ",
                  FLAGS_hosts, load.points, metrics, load.seconds, metrics / load.seconds,
                  FLAGS_load_workers, FLAGS_batch_lines);
    out += buf;
  }
  out += "\"queries\": {";
  const char* kTypes[] = {"single-groupby-1-1-1", "single-groupby-5-1-12", "double-groupby-1",
                          "lastpoint", "high-cpu-1"};
  bool first = true;
  const std::vector<std::string> wanted = absl::StrSplit(FLAGS_query_types, ',', absl::SkipEmpty());
  for (const char* type : kTypes) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), type) == wanted.end()) continue;
    std::string per = "";
    for (int threads : {2, 4}) {
      const QueryResult r = RunQueries(type, threads);
      std::fprintf(stderr, "%s, %d threads: %.1f queries/s, p50 %.2f ms, p99 %.2f ms\n", type,
                   threads, r.qps, r.p50_ms, r.p99_ms);
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    "%s\"%d_threads\": {\"qps\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f}",
                    per.empty() ? "" : ", ", threads, r.qps, r.p50_ms, r.p99_ms);
      per += buf;
    }
    out += std::string(first ? "" : ", ") + "\"" + type + "\": {" + per + "}";
    first = false;
  }
  out += "}, \"queries_per_type\": " + std::to_string(FLAGS_queries) + "}";
  std::printf("%s\n", out.c_str());
  return 0;
}
