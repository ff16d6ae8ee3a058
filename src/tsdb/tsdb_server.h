#pragma once

// TsdbServer: the HTTP side of basalt-tsdbd (docs/tsdb.md), InfluxDB 1.x's API on cpp-httplib
// (whose header only tsdb_server.cc includes):
//   GET|HEAD /ping              204, X-Influxdb-Version
//   POST /write?db=&precision=  line protocol; 204, or 400 naming the line and column (nothing
//                               of the request written), 404 for an unknown database, 500 with
//                               the count of points that failed to write
//   GET|POST /query?db=&q=&epoch=  InfluxQL (influxql.h); 200 with per-statement results, 400
//                               for a query that does not parse
//   GET /metrics                the process's metrics in the Prometheus text format
//
// Lifecycle: construct -> Start() -> Shutdown() (or the destructor). Thread-safe after Start():
// requests run on the HTTP server's thread pool.

#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "client/client.h"
#include "tsdb/catalog.h"
#include "tsdb/query_executor.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace basalt::tsdb {

struct TsdbServerOptions {
  std::string bind_host = "0.0.0.0";
  int port = 8086;  // 0: a free port.
  CatalogOptions catalog;
  // Largest /write body accepted, bytes.
  size_t max_body_bytes = 64 << 20;
};

class TsdbServer {
 public:
  TsdbServer(std::shared_ptr<client::Client> client, TsdbServerOptions options);
  ~TsdbServer();
  TsdbServer(const TsdbServer&) = delete;
  TsdbServer& operator=(const TsdbServer&) = delete;

  // Binds and starts serving. UNAVAILABLE if the address cannot be bound.
  absl::Status Start();
  // Stops serving and joins the threads. Idempotent.
  void Shutdown();
  int port() const { return port_; }
  Catalog* catalog() { return &catalog_; }

 private:
  void RegisterHandlers();

  const std::shared_ptr<client::Client> client_;
  const TsdbServerOptions options_;
  Catalog catalog_;
  QueryExecutor executor_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  bool started_ = false;
};

}  // namespace basalt::tsdb
