// basalt-tserver: the tablet server daemon (docs/cluster.md "Processes, flags, directories").

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "common/env.h"
#include "common/injecting_env.h"
#include "rpc/net_util.h"
#include "server/server_instance.h"
#include "tserver/tablet_server.h"

DEFINE_string(fs_data_dir, "",
              "Directory where the tablet server keeps its data: its identity, every tablet's "
              "metadata and (with --fs_data_dirs empty) all blocks. Required unless "
              "--fs_data_dirs is set.");
DEFINE_string(fs_data_dirs, "",
              "Comma-separated data directories, one per disk, for tablet blocks; each tablet "
              "keeps its blocks in --fs_target_data_dirs_per_tablet of them, so that a failed disk "
              "fails only its tablets. The first also holds what --fs_data_dir does (it defaults "
              "to the first; if both are set, --fs_data_dir must be the first). Positions must "
              "not change: new directories may only be appended.");
DEFINE_string(fs_wal_dir, "", "Directory for WAL segments; defaults to --fs_data_dir.");
DEFINE_string(rpc_bind_addresses, "0.0.0.0:7050",
              "Address the tablet server serves gRPC on; port 0 picks a free port.");
DEFINE_string(rpc_advertised_addresses, "",
              "Address other processes use to reach this server; defaults to the bound address "
              "(the host name when bound to 0.0.0.0).");
DEFINE_int32(frame_rpc_port, 0,
             "Port on the host of --rpc_bind_addresses where the tablet server also answers "
             "Write, Scan and Raft's UpdateConsensus over frame RPC, a lighter transport than "
             "gRPC that clients and peer servers prefer (docs/frame_rpc.md); advertised to "
             "clients through the masters and to peers in consensus answers. 0 picks a free "
             "port, -1 turns it off (everything then uses gRPC).");
DEFINE_string(server_dump_info_path, "",
              "If set, once serving the server writes a JSON object with its uuid, rpc_port, "
              "http_port and pid to this file.");
DEFINE_string(master_addresses, "127.0.0.1:7051", "Comma-separated addresses of the masters.");
DEFINE_int32(heartbeat_interval_ms, 1000,
             "Interval between the tablet server's heartbeats to the masters.");
DEFINE_int32(heartbeat_max_failure_backoff_ms, 10000,
             "Longest wait between heartbeats to a master that keeps failing: after each failure "
             "in a row the wait doubles, from --heartbeat_interval_ms up to this (each wait "
             "jittered by +-25%); the first success returns to the interval.");
DEFINE_int32(scanner_ttl_ms, 60000,
             "How long a scanner stays open without a call before it expires.");
DEFINE_int32(webserver_port, 8050,
             "Port of the tablet server's web server (/metrics, /healthz, status pages); 0 picks "
             "a free port, -1 disables it.");
DEFINE_string(webserver_bind_address, "",
              "Host the web server binds; defaults to the host of --rpc_bind_addresses.");
DEFINE_int32(scanner_default_batch_size_bytes, 1 << 20,
             "Target size of a scan batch when the request does not give one.");

namespace {

bool ValidatePositive(const char* flag, int32_t value) {
  if (value > 0) return true;
  fprintf(stderr, "--%s must be positive, got %d\n", flag, value);
  return false;
}

}  // namespace

DEFINE_validator(heartbeat_interval_ms, &ValidatePositive);
DEFINE_validator(heartbeat_max_failure_backoff_ms, &ValidatePositive);
DEFINE_validator(scanner_ttl_ms, &ValidatePositive);
DEFINE_validator(scanner_default_batch_size_bytes, &ValidatePositive);
DEFINE_validator(frame_rpc_port, [](const char*, int32_t v) {
  if (v >= -1 && v <= 65535) return true;
  fprintf(stderr, "--frame_rpc_port must be -1 (off), 0 (a free port) or a port, got %d\n", v);
  return false;
});

namespace {

// Fewer, larger malloc arenas and no trimming of freed memory: the write path allocates and
// frees large buffers (RPC payloads, decoded rows) on many threads. For glibc's malloc only, in
// builds without tcmalloc (BASALT_TCMALLOC=OFF); tcmalloc, linked by default, ignores mallopt.
void TuneMalloc() {
  mallopt(M_ARENA_MAX, 4);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

int Run() {
  if (FLAGS_fs_data_dir.empty() && FLAGS_fs_data_dirs.empty()) {
    LOG(ERROR) << "--fs_data_dir or --fs_data_dirs is required";
    return 1;
  }
  basalt::TabletServerOptions o;
  o.fs_data_dir = FLAGS_fs_data_dir;
  for (absl::string_view d : absl::StrSplit(FLAGS_fs_data_dirs, ',', absl::SkipWhitespace())) {
    o.fs_data_dirs.emplace_back(absl::StripAsciiWhitespace(d));
  }
  o.fs_wal_dir = FLAGS_fs_wal_dir;
  o.env = basalt::MaybeWrapForInjection(basalt::Env::Default());  // Test-only fault flags.
  o.rpc_bind_address = FLAGS_rpc_bind_addresses;
  o.rpc_advertised_address = FLAGS_rpc_advertised_addresses;
  o.frame_rpc_port = FLAGS_frame_rpc_port;
  if (!FLAGS_master_addresses.empty()) {
    absl::StatusOr<std::vector<basalt::HostPort>> masters =
        basalt::ParseHostPortList(FLAGS_master_addresses, 7051);
    if (!masters.ok()) {
      LOG(ERROR) << "--master_addresses: " << masters.status();
      return 1;
    }
    o.master_addresses = *masters;
  }
  o.heartbeat_interval_ms = FLAGS_heartbeat_interval_ms;
  o.heartbeat_max_failure_backoff_ms = FLAGS_heartbeat_max_failure_backoff_ms;
  o.scanner_ttl_ms = FLAGS_scanner_ttl_ms;
  o.scanner_default_batch_size_bytes =
      static_cast<uint32_t>(FLAGS_scanner_default_batch_size_bytes);
  o.webserver_port = FLAGS_webserver_port;
  o.webserver_bind_host = FLAGS_webserver_bind_address;
  basalt::TabletServer server(o);
  absl::Status s = server.Start();
  if (!s.ok()) {
    LOG(ERROR) << "cannot start the tablet server: " << s;
    return 1;
  }
  if (!FLAGS_server_dump_info_path.empty()) {
    s = basalt::WriteServerInfo(basalt::Env::Default(), FLAGS_server_dump_info_path, server.uuid(),
                                server.rpc_port(), server.webserver_port());
    if (!s.ok()) {
      LOG(ERROR) << "writing --server_dump_info_path: " << s;
      return 1;
    }
  }
  const int sig = basalt::WaitForTerminationSignal();
  LOG(INFO) << "signal " << sig << " received; shutting down";
  server.Shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  TuneMalloc();
  basalt::InitDaemon(&argc, &argv, "basalt-tserver: the Basalt tablet server");
  return Run();
}
