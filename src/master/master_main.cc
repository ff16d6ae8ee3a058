// basalt-master: the Basalt master daemon (docs/cluster.md, docs/master.md).

#include <cstdlib>
#include <memory>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/env.h"
#include "master/master.h"
#include "server/server_instance.h"

DEFINE_string(fs_data_dir, "", "The master's data directory (required); locked while it runs.");
DEFINE_string(fs_wal_dir, "", "Where the catalog's WAL goes; empty means --fs_data_dir.");
DEFINE_string(rpc_bind_addresses, "0.0.0.0:7051",
              "Address the master serves gRPC on (host:port); port 0 picks a free port.");
DEFINE_string(rpc_advertised_addresses, "",
              "Address other processes use to reach this master; empty means the bound address "
              "(the host name when bound to 0.0.0.0).");
DEFINE_string(server_dump_info_path, "",
              "Once serving, the master writes {\"uuid\", \"rpc_port\", \"http_port\", \"pid\"} "
              "as JSON to this file (atomically).");
DEFINE_string(master_addresses, "",
              "Comma-separated addresses of every master, this one included (each finds itself "
              "by its advertised address); empty for a single master. All masters must be given "
              "the same set, and the set cannot change once the masters have formed their "
              "catalog group.");

DEFINE_int32(webserver_port, 8051,
             "Port of the master's web server (/metrics, /healthz, status pages); 0 picks a "
             "free port, -1 disables it.");
DEFINE_string(webserver_bind_address, "",
              "Host the web server binds; defaults to the host of --rpc_bind_addresses.");

int main(int argc, char** argv) {
  basalt::InitDaemon(&argc, &argv,
                     "basalt-master: the Basalt catalog and tablet placement daemon.\n"
                     "Usage: basalt-master --fs_data_dir=DIR [--rpc_bind_addresses=HOST:PORT]");
  basalt::MasterOptions options;
  options.fs_data_dir = FLAGS_fs_data_dir;
  options.fs_wal_dir = FLAGS_fs_wal_dir;
  options.rpc_bind_address = FLAGS_rpc_bind_addresses;
  options.rpc_advertised_address = FLAGS_rpc_advertised_addresses;
  options.master_addresses = FLAGS_master_addresses;
  options.webserver_port = FLAGS_webserver_port;
  options.webserver_bind_host = FLAGS_webserver_bind_address;
  if (options.rpc_bind_address.find(',') != std::string::npos) {
    LOG(ERROR) << "--rpc_bind_addresses: only one address is supported";
    return EXIT_FAILURE;
  }
  auto master = basalt::Master::Start(options);
  if (!master.ok()) {
    LOG(ERROR) << "basalt-master failed to start: " << master.status();
    return EXIT_FAILURE;
  }
  if (!FLAGS_server_dump_info_path.empty()) {
    absl::Status s = basalt::WriteServerInfo(basalt::Env::Default(), FLAGS_server_dump_info_path,
                                             (*master)->uuid(), (*master)->rpc_port(),
                                             (*master)->webserver_port());
    if (!s.ok()) {
      LOG(ERROR) << "writing --server_dump_info_path: " << s;
      return EXIT_FAILURE;
    }
  }
  const int sig = basalt::WaitForTerminationSignal();
  LOG(INFO) << "received signal " << sig << ", shutting down";
  (*master)->Shutdown();
  master->reset();
  return EXIT_SUCCESS;
}
