#pragma once

// Webserver: the embedded HTTP server each daemon runs on --webserver_port (docs/web.md), built
// on cpp-httplib (whose header only webserver.cc includes). It serves
//   /metrics  the metric registry in the Prometheus text format,
//   /healthz  200 "OK" while the health status (SetHealth) and the health check
//             (SetHealthCheck) are OK, else 503 with the failing status's message,
//   /         an HTML index linking every registered page,
// plus HTML pages the daemon registers (RegisterPage) before Start().
//
// Lifecycle: construct -> Register*() -> Start() -> Shutdown() (or the destructor). Shutdown
// stops accepting connections and waits for requests in flight; handlers must not depend on
// anything the owner destroys before calling Shutdown().
//
// Thread-safe after Start(); SetHealth may be called at any time.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace grpc::experimental {
class ServerInterceptorFactoryInterface;
}  // namespace grpc::experimental
namespace httplib {
class Server;
}  // namespace httplib

namespace basalt {

class Counter;
class Gauge;
class Histogram;
class MetricRegistry;

struct WebserverOptions {
  std::string bind_host = "127.0.0.1";
  int port = 0;  // 0: a free port.
  // What /metrics renders; nullptr: MetricRegistry::Global().
  MetricRegistry* registry = nullptr;
  // Shown in every page's title, e.g. "basalt-tserver 1f2e...".
  std::string server_name = "basalt";
};

// A daemon's webserver options: `port`, on `bind_host` or, when that is empty, on the host of
// the daemon's RPC bind address ("host:port"). INVALID_ARGUMENT for a malformed RPC address.
absl::StatusOr<WebserverOptions> DaemonWebserverOptions(int port, const std::string& bind_host,
                                                        const std::string& rpc_bind_address,
                                                        std::string server_name);

class Webserver {
 public:
  // Renders a page's HTML body (the webserver adds the surrounding document and title).
  using PageHandler = std::function<std::string()>;

  explicit Webserver(WebserverOptions options);
  ~Webserver();
  Webserver(const Webserver&) = delete;
  Webserver& operator=(const Webserver&) = delete;

  // Registers an HTML page at `path` (e.g. "/tables"), listed on "/" as `title`. Before Start().
  void RegisterPage(const std::string& path, const std::string& title, PageHandler handler);

  // Binds and starts serving. UNAVAILABLE if the address cannot be bound.
  absl::Status Start();
  // Stops serving and joins the threads. Idempotent.
  void Shutdown();

  // The bound port (valid after Start()).
  int port() const { return port_; }

  // What /healthz reports. Starts as UNAVAILABLE("starting"); Shutdown() sets
  // UNAVAILABLE("shutting down").
  void SetHealth(absl::Status status);

  // A readiness check /healthz consults while the SetHealth status is OK; when it returns an
  // error, /healthz answers 503 with its message (e.g. "starting: 2 tablets bootstrapping").
  // Runs on a web server thread for every /healthz request, without the webserver's lock: it must
  // be thread-safe, quick, and valid until Shutdown() returns. An empty function removes it.
  // May be called at any time.
  void SetHealthCheck(std::function<absl::Status()> check);

 private:
  void RegisterBuiltins();
  // The SetHealth status if it is not OK, else the health check's result (OK without one).
  absl::Status Health() const;
  std::string IndexPage() const;

  struct Page {
    std::string path;
    std::string title;
  };

  const WebserverOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::vector<Page> pages_;
  std::thread thread_;
  int port_ = 0;
  bool started_ = false;
  bool shut_down_ = false;
  mutable absl::Mutex mu_;
  absl::Status health_ ABSL_GUARDED_BY(mu_);
  // Shared so a request can call it after releasing mu_.
  std::shared_ptr<const std::function<absl::Status()>> health_check_ ABSL_GUARDED_BY(mu_);
};

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view s);

// Renders rows as an HTML table; every cell is escaped.
std::string HtmlTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows);

// One method's RPC metrics: basalt_rpc_requests_total, basalt_rpc_errors_total and
// basalt_rpc_duration_seconds labelled {method=`method`}, and the server's basalt_rpc_in_flight,
// in `registry` (nullptr: MetricRegistry::Global()). The pointers live as long as the registry.
// For transports that record their calls as gRPC's are (the frame RPC port).
struct RpcMethodMetrics {
  Counter* requests;
  Counter* errors;
  Histogram* duration;
  Gauge* in_flight;
};
RpcMethodMetrics GetRpcMethodMetrics(const std::string& method, MetricRegistry* registry = nullptr);

// A gRPC server interceptor factory recording, per method (the full gRPC method path),
// basalt_rpc_requests_total, basalt_rpc_errors_total (non-OK status) and
// basalt_rpc_duration_seconds, plus basalt_rpc_in_flight (calls received and not yet finished)
// in `registry` (nullptr: MetricRegistry::Global()). Install with
// ServerBuilder::experimental().SetInterceptorCreators.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewRpcMetricsInterceptorFactory(MetricRegistry* registry = nullptr);

// A blocking HTTP GET for tests and tools. `host_port` is "host:port".
struct HttpResponse {
  int status = 0;
  std::string body;
  std::string content_type;
};
absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     absl::Duration timeout = absl::Seconds(10));

}  // namespace basalt
