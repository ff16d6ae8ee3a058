// basalt-tsdbd: an InfluxDB 1.x compatible HTTP daemon over a Basalt cluster (docs/tsdb.md).

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <memory>
#include <thread>

#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "server/server_instance.h"
#include "tsdb/tsdb_server.h"

DEFINE_string(master_addresses, "127.0.0.1:7051", "Comma-separated addresses of the masters.");
DEFINE_string(http_bind_address, "0.0.0.0", "Host the InfluxDB HTTP API listens on.");
DEFINE_int32(http_port, 8086, "Port of the InfluxDB HTTP API (0: a free port).");
DEFINE_int32(tsdb_hash_partitions, 4,
             "Hash buckets over the tags of each new measurement's table.");
DEFINE_int32(tsdb_num_replicas, 3, "Replicas of each new measurement's table.");
DEFINE_int32(tsdb_days_ahead, 2,
             "Days after today whose time partitions every measurement gets ahead of time "
             "(checked hourly); earlier and later days are added when writes reach them.");
DEFINE_int64(tsdb_max_body_mb, 64, "Largest /write body accepted, MiB.");

int main(int argc, char** argv) {
  basalt::InitDaemon(&argc, &argv,
                     "basalt-tsdbd: InfluxDB 1.x HTTP API (/write, /query, /ping, /metrics) over "
                     "a Basalt cluster");
  std::shared_ptr<basalt::client::Client> client;
  absl::Status s =
      basalt::client::ClientBuilder()
          .master_server_addrs(absl::StrSplit(FLAGS_master_addresses, ',', absl::SkipEmpty()))
          .Build(&client);
  if (!s.ok()) {
    LOG(ERROR) << "cannot connect to the masters " << FLAGS_master_addresses << ": " << s;
    return 1;
  }
  basalt::tsdb::TsdbServerOptions o;
  o.bind_host = FLAGS_http_bind_address;
  o.port = FLAGS_http_port;
  o.catalog.hash_partitions = FLAGS_tsdb_hash_partitions;
  o.catalog.num_replicas = FLAGS_tsdb_num_replicas;
  o.catalog.days_ahead = FLAGS_tsdb_days_ahead;
  o.max_body_bytes = static_cast<size_t>(FLAGS_tsdb_max_body_mb) << 20;
  basalt::tsdb::TsdbServer server(client, o);
  s = server.Start();
  if (!s.ok()) {
    LOG(ERROR) << "cannot start: " << s;
    return 1;
  }
  // Partitions ahead of time, hourly, until shutdown.
  absl::Notification stop;
  std::thread ahead([&] {
    do {
      absl::Status a = server.catalog()->AddPartitionsAhead(absl::ToUnixMicros(absl::Now()));
      if (!a.ok()) LOG(WARNING) << "adding partitions ahead of time: " << a;
    } while (!stop.WaitForNotificationWithTimeout(absl::Hours(1)));
  });
  const int sig = basalt::WaitForTerminationSignal();
  LOG(INFO) << "signal " << sig << " received; shutting down";
  stop.Notify();
  ahead.join();
  server.Shutdown();
  return 0;
}
