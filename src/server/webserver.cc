#include "server/webserver.h"

#include <sys/socket.h>

#include <utility>

#include <glog/logging.h>
#include <grpcpp/support/server_interceptor.h>
#include <httplib.h>

#include "absl/container/flat_hash_map.h"

#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "rpc/net_util.h"
#include "server/http_listener.h"

namespace basalt {

namespace {

constexpr char kHtmlType[] = "text/html; charset=utf-8";
constexpr char kTextType[] = "text/plain; charset=utf-8";
constexpr char kPrometheusType[] = "text/plain; version=0.0.4; charset=utf-8";

std::string HtmlDocument(std::string_view server_name, std::string_view title,
                         std::string_view body) {
  return StrCat("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>",
                HtmlEscape(server_name), " - ", HtmlEscape(title),
                "</title><style>table{border-collapse:collapse}td,th{border:1px solid #999;"
                "padding:2px 6px;text-align:left}</style></head><body>\n<p><a href=\"/\">home</a>"
                "</p><h1>",
                HtmlEscape(title), "</h1>\n", body, "\n</body></html>\n");
}

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string HtmlTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table>\n<tr>";
  for (const std::string& h : header) StrAppend(&out, "<th>", HtmlEscape(h), "</th>");
  out += "</tr>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const std::string& cell : row) StrAppend(&out, "<td>", HtmlEscape(cell), "</td>");
    out += "</tr>\n";
  }
  out += "</table>";
  return out;
}

Webserver::Webserver(WebserverOptions options)
    : options_(std::move(options)),
      server_(std::make_unique<httplib::Server>()),
      health_(absl::UnavailableError("starting")) {
  // SO_REUSEADDR without SO_REUSEPORT: httplib's default adds SO_REUSEPORT, which would let two
  // daemons share a configured port silently.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Responses go out as headers and body in separate writes, which Nagle's algorithm would
  // delay by a delayed-ACK timeout each.
  server_->set_tcp_nodelay(true);
  RegisterBuiltins();
}

Webserver::~Webserver() { Shutdown(); }

void Webserver::SetHealth(absl::Status status) {
  absl::MutexLock l(&mu_);
  health_ = std::move(status);
}

void Webserver::SetHealthCheck(std::function<absl::Status()> check) {
  auto shared =
      check ? std::make_shared<const std::function<absl::Status()>>(std::move(check)) : nullptr;
  absl::MutexLock l(&mu_);
  health_check_ = std::move(shared);
}

absl::Status Webserver::Health() const {
  std::shared_ptr<const std::function<absl::Status()>> check;
  {
    absl::MutexLock l(&mu_);
    if (!health_.ok() || health_check_ == nullptr) return health_;
    check = health_check_;
  }
  return (*check)();
}

void Webserver::RegisterBuiltins() {
  server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    const absl::Status health = Health();
    if (health.ok()) {
      res.set_content("OK\n", kTextType);
    } else {
      res.status = 503;
      res.set_content(StrCat(std::string(health.message()), "\n"), kTextType);
    }
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    MetricRegistry* r = options_.registry != nullptr ? options_.registry : MetricRegistry::Global();
    res.set_content(r->RenderPrometheus(), kPrometheusType);
  });
  server_->Get("/", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(IndexPage(), kHtmlType);
  });
}

std::string Webserver::IndexPage() const {
  std::string body = "<ul>\n";
  for (const Page& p : pages_) {
    StrAppend(&body, "<li><a href=\"", HtmlEscape(p.path), "\">", HtmlEscape(p.title),
              "</a></li>\n");
  }
  body += "<li><a href=\"/metrics\">Metrics (Prometheus)</a></li>\n";
  body += "<li><a href=\"/healthz\">Health</a></li>\n</ul>";
  return HtmlDocument(options_.server_name, options_.server_name, body);
}

void Webserver::RegisterPage(const std::string& path, const std::string& title,
                             PageHandler handler) {
  CHECK(!started_) << "RegisterPage after Start";
  pages_.push_back({path, title});
  server_->Get(path, [this, title, handler = std::move(handler)](const httplib::Request&,
                                                                 httplib::Response& res) {
    res.set_content(HtmlDocument(options_.server_name, title, handler()), kHtmlType);
  });
}

absl::Status Webserver::Start() {
  CHECK(!started_) << "Webserver started twice";
  started_ = true;
  absl::StatusOr<int> port =
      StartHttpListener(server_.get(), options_.bind_host, options_.port, &thread_);
  if (!port.ok()) return port.status();
  port_ = *port;
  LOG(INFO) << "web server listening on " << options_.bind_host << ":" << port_;
  return absl::OkStatus();
}

void Webserver::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  SetHealth(absl::UnavailableError("shutting down"));
  StopHttpListener(server_.get(), &thread_);
}

RpcMethodMetrics GetRpcMethodMetrics(const std::string& method, MetricRegistry* registry) {
  if (registry == nullptr) registry = MetricRegistry::Global();
  const MetricLabels labels = {{"method", method}};
  return RpcMethodMetrics{
      registry->GetCounter("basalt_rpc_requests_total", "RPCs received, by method.", labels),
      registry->GetCounter("basalt_rpc_errors_total",
                           "RPCs answered with a non-OK status, by method.", labels),
      registry->GetHistogram("basalt_rpc_duration_seconds",
                             "Time from receiving an RPC to finishing it, by method.", labels),
      registry->GetGauge("basalt_rpc_in_flight", "RPCs received and not yet finished.")};
}

namespace {

using MethodMetrics = RpcMethodMetrics;

class RpcMetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(const MethodMetrics& m, Gauge* in_flight)
      : m_(m), in_flight_(in_flight), start_(absl::Now()) {
    m_.requests->Increment();
    in_flight_->Add(1);
  }
  ~RpcMetricsInterceptor() override {
    m_.duration->ObserveDuration(absl::Now() - start_);
    in_flight_->Add(-1);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS) &&
        !methods->GetSendStatus().ok()) {
      m_.errors->Increment();
    }
    methods->Proceed();
  }

 private:
  const MethodMetrics m_;
  Gauge* const in_flight_;
  const absl::Time start_;
};

class RpcMetricsInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsInterceptorFactory(MetricRegistry* registry)
      : registry_(registry != nullptr ? registry : MetricRegistry::Global()),
        in_flight_(GetRpcMethodMetrics("unknown", registry_).in_flight) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    const char* method = info->method() != nullptr ? info->method() : "unknown";
    return new RpcMetricsInterceptor(Lookup(method), in_flight_);
  }

 private:
  MethodMetrics Lookup(const char* method) {
    {
      absl::ReaderMutexLock l(&mu_);
      auto it = methods_.find(method);
      if (it != methods_.end()) return it->second;
    }
    const MethodMetrics m = GetRpcMethodMetrics(method, registry_);
    absl::MutexLock l(&mu_);
    methods_.emplace(method, m);
    return m;
  }

  MetricRegistry* const registry_;
  Gauge* const in_flight_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, MethodMetrics> methods_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewRpcMetricsInterceptorFactory(MetricRegistry* registry) {
  return std::make_unique<RpcMetricsInterceptorFactory>(registry);
}

absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     absl::Duration timeout) {
  httplib::Client client(host, port);
  const auto us = std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
  client.set_connection_timeout(us);
  client.set_read_timeout(us);
  client.set_write_timeout(us);
  client.set_tcp_nodelay(true);
  httplib::Result r = client.Get(path);
  if (!r) {
    return absl::UnavailableError(
        StrCat("GET http://", host, ":", port, path, ": ", httplib::to_string(r.error())));
  }
  HttpResponse out;
  out.status = r->status;
  out.body = r->body;
  out.content_type = r->get_header_value("Content-Type");
  return out;
}

absl::StatusOr<WebserverOptions> DaemonWebserverOptions(int port, const std::string& bind_host,
                                                        const std::string& rpc_bind_address,
                                                        std::string server_name) {
  WebserverOptions w;
  w.port = port;
  w.bind_host = bind_host;
  if (w.bind_host.empty()) {
    BASALT_ASSIGN_OR_RETURN(HostPort rpc, ParseHostPort(rpc_bind_address, 0));
    w.bind_host = rpc.host;
  }
  w.server_name = std::move(server_name);
  return w;
}

}  // namespace basalt
