#include "tsdb/tsdb_server.h"

#include <glog/logging.h>
#include <httplib.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "common/json_quote.h"
#include "common/metrics.h"
#include "common/strings.h"
#include "server/http_listener.h"
#include "tsdb/influxql.h"
#include "tsdb/line_protocol.h"
#include "tsdb/point_writer.h"

namespace basalt::tsdb {

namespace {

constexpr char kJsonType[] = "application/json";
constexpr char kVersion[] = "1.8.10-basalt";

struct Metrics {
  Counter* write_requests;
  Counter* query_requests;
  Counter* points_written;
  Counter* points_failed;
  Counter* bad_requests;
  Histogram* write_seconds;
  Histogram* query_seconds;
};

const Metrics& TsdbMetrics() {
  static const Metrics m = [] {
    MetricRegistry* r = MetricRegistry::Global();
    return Metrics{
        r->GetCounter("tsdb_write_requests_total", "/write requests"),
        r->GetCounter("tsdb_query_requests_total", "/query requests"),
        r->GetCounter("tsdb_points_written_total", "Points written through /write"),
        r->GetCounter("tsdb_points_failed_total", "Points of /write that failed to write"),
        r->GetCounter("tsdb_bad_requests_total", "Requests answered 400 or 404"),
        r->GetHistogram("tsdb_write_duration_seconds", "Time to answer a /write request"),
        r->GetHistogram("tsdb_query_duration_seconds", "Time to answer a /query request"),
    };
  }();
  return m;
}

void Reply(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  if (!body.empty()) res.set_content(body, kJsonType);
}

void ReplyError(httplib::Response& res, int status, absl::string_view message) {
  if (status == 400 || status == 404) TsdbMetrics().bad_requests->Increment();
  Reply(res, status, StrCat("{\"error\":", JsonQuote(std::string(message)), "}"));
}

int64_t NowMicros() { return absl::ToUnixMicros(absl::Now()); }

}  // namespace

TsdbServer::TsdbServer(std::shared_ptr<client::Client> client, TsdbServerOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      catalog_(client_, options_.catalog),
      executor_(&catalog_),
      server_(std::make_unique<httplib::Server>()) {
  server_->set_payload_max_length(options_.max_body_bytes);
  // Dashboards and collectors send request after request on one connection; httplib closes a
  // connection after 5 by default, and each new one costs a TCP handshake and a handler thread
  // hand-off. The idle timeout (5 s) still bounds how long an idle client holds a thread.
  server_->set_keep_alive_max_count(10000);
  // httplib writes a response's headers and body separately: without TCP_NODELAY, Nagle holds
  // the body until the client's delayed ACK (40 ms) on a kept-alive connection.
  server_->set_tcp_nodelay(true);
  RegisterHandlers();
}

TsdbServer::~TsdbServer() { Shutdown(); }

void TsdbServer::RegisterHandlers() {
  auto ping = [](const httplib::Request&, httplib::Response& res) {
    res.set_header("X-Influxdb-Version", kVersion);
    res.set_header("X-Influxdb-Build", "OSS");
    res.status = 204;
  };
  server_->Get("/ping", ping);
  server_->Options("/ping", ping);  // HEAD is answered through the GET handler.

  server_->Post("/write", [this](const httplib::Request& req, httplib::Response& res) {
    const Metrics& m = TsdbMetrics();
    m.write_requests->Increment();
    ScopedLatency latency(m.write_seconds);
    res.set_header("X-Influxdb-Version", kVersion);
    const std::string db = req.get_param_value("db");
    if (db.empty()) return ReplyError(res, 400, "database is required");
    absl::StatusOr<Precision> precision = ParsePrecision(req.get_param_value("precision"));
    if (!precision.ok()) return ReplyError(res, 400, precision.status().message());
    absl::StatusOr<bool> exists = catalog_.DatabaseExists(db);
    if (!exists.ok()) return ReplyError(res, 500, exists.status().message());
    if (!*exists) return ReplyError(res, 404, StrCat("database not found: \"", db, "\""));
    std::vector<Point> points;
    absl::Status parsed = ParseLineProtocol(req.body, *precision, &points);
    if (!parsed.ok()) {
      return ReplyError(res, 400, StrCat("unable to parse points: ", parsed.message()));
    }
    WriteResult result;
    absl::Status s = WritePoints(&catalog_, client_.get(), db, points, NowMicros(), &result);
    m.points_written->Increment(result.points_written);
    m.points_failed->Increment(result.points_failed);
    if (s.ok()) return Reply(res, 204, "");
    const std::string message =
        StrCat("partial write: ", result.points_failed, " of ", points.size(), " points failed (",
               result.points_written, " written): ", s.message());
    // A point that cannot go in (type conflict, unknown tag) is the client's; the rest ours.
    ReplyError(res, absl::IsInvalidArgument(s) ? 400 : 500, message);
  });

  auto query = [this](const httplib::Request& req, httplib::Response& res) {
    const Metrics& m = TsdbMetrics();
    m.query_requests->Increment();
    ScopedLatency latency(m.query_seconds);
    res.set_header("X-Influxdb-Version", kVersion);
    const std::string q = req.get_param_value("q");
    if (q.empty()) return ReplyError(res, 400, "missing required parameter \"q\"");
    const int64_t now = NowMicros();
    absl::StatusOr<std::vector<InfluxStatement>> stmts = ParseInfluxQL(q, now);
    if (!stmts.ok()) {
      return ReplyError(res, 400, StrCat("error parsing query: ", stmts.status().message()));
    }
    QueryOptions opts;
    opts.db = req.get_param_value("db");
    opts.epoch = req.get_param_value("epoch");
    static const char* kEpochs[] = {"", "ns", "n", "u", "us", "ms", "s", "m", "h"};
    if (std::find(std::begin(kEpochs), std::end(kEpochs), opts.epoch) == std::end(kEpochs)) {
      return ReplyError(res, 400, StrCat("invalid epoch '", opts.epoch, "' (ns, u, ms, s, m, h)"));
    }
    opts.now_us = now;
    Reply(res, 200, executor_.Execute(*stmts, opts));
  };
  server_->Get("/query", query);
  server_->Post("/query", query);

  server_->Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricRegistry::Global()->RenderPrometheus(),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
}

absl::Status TsdbServer::Start() {
  CHECK(!started_) << "TsdbServer started twice";
  started_ = true;
  absl::StatusOr<int> port =
      StartHttpListener(server_.get(), options_.bind_host, options_.port, &thread_);
  if (!port.ok()) return port.status();
  port_ = *port;
  LOG(INFO) << "basalt-tsdbd serving InfluxDB 1.x HTTP on " << options_.bind_host << ":" << port_;
  return absl::OkStatus();
}

void TsdbServer::Shutdown() { StopHttpListener(server_.get(), &thread_); }

}  // namespace basalt::tsdb
