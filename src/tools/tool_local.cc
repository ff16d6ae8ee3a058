// `basalt local start|stop|status|destroy`: a cluster of processes on loopback
// (tools/local_cluster.h does the work).

#include <gflags/gflags.h>

#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/local_cluster.h"
#include "tools/tool_common.h"

DEFINE_string(dir, "", "Directory of the local cluster's data and logs (required).");
DEFINE_int32(num_masters, 1, "Number of masters 'local start' runs.");
DEFINE_int32(num_tablet_servers, 3, "Number of tablet servers 'local start' runs.");
DEFINE_int32(master_rpc_port, 0,
             "RPC port of the first master 'local start' runs; 0: 7051 if free, else a free port.");
DEFINE_string(bin_dir, "",
              "Directory of basalt-master and basalt-tserver; empty: the directory of basalt.");
DEFINE_string(extra_master_flags, "", "Space-separated flags 'local start' passes to masters.");
DEFINE_string(extra_tserver_flags, "",
              "Space-separated flags 'local start' passes to tablet servers.");

namespace basalt::tools {

namespace {

absl::Status RequireDir() {
  if (FLAGS_dir.empty()) return absl::InvalidArgumentError("--dir is required");
  return absl::OkStatus();
}

void PrintStatus(const LocalClusterStatus& st, std::ostream* out) {
  auto format = OutputFormat();
  TableWriter w(format.ok() ? *format : TableWriter::kTable,
                {"name", "pid", "running", "rpc_address", "log"}, out);
  for (const auto& d : st.daemons) {
    w.AddRow({Cell::String(d.name), Cell::Number(std::to_string(d.pid)), Cell::Bool(d.running),
              Cell::String(d.rpc_address), Cell::String(d.log_path)});
  }
  w.Finish();
}

absl::Status Start(const ActionContext& ctx) {
  BASALT_RETURN_IF_ERROR(RequireDir());
  LocalClusterOptions opts;
  opts.dir = FLAGS_dir;
  opts.num_masters = FLAGS_num_masters;
  opts.num_tablet_servers = FLAGS_num_tablet_servers;
  opts.bin_dir = FLAGS_bin_dir;
  opts.master_rpc_port = FLAGS_master_rpc_port;
  opts.extra_master_flags = absl::StrSplit(FLAGS_extra_master_flags, ' ', absl::SkipEmpty());
  opts.extra_tserver_flags = absl::StrSplit(FLAGS_extra_tserver_flags, ' ', absl::SkipEmpty());
  BASALT_ASSIGN_OR_RETURN(LocalClusterStatus st, StartLocalCluster(opts, ctx.err));
  // The address alone on stdout, so scripts can capture it.
  *ctx.out << st.master_addresses << "\n";
  *ctx.err << "Cluster running. Try:\n  basalt table list " << st.master_addresses
           << "\nStop it with:\n  basalt local stop --dir " << FLAGS_dir << "\n";
  return absl::OkStatus();
}

absl::Status Stop(const ActionContext& ctx) {
  BASALT_RETURN_IF_ERROR(RequireDir());
  return StopLocalCluster(FLAGS_dir, ctx.err);
}

absl::Status Status(const ActionContext& ctx) {
  BASALT_RETURN_IF_ERROR(RequireDir());
  BASALT_ASSIGN_OR_RETURN(LocalClusterStatus st, GetLocalClusterStatus(FLAGS_dir));
  *ctx.out << "master addresses: " << st.master_addresses << "\n";
  PrintStatus(st, ctx.out);
  return absl::OkStatus();
}

absl::Status Destroy(const ActionContext& ctx) {
  BASALT_RETURN_IF_ERROR(RequireDir());
  return DestroyLocalCluster(FLAGS_dir, ctx.err);
}

}  // namespace

Command LocalCommand() {
  Command c{"local", "Run a cluster of processes on this machine (loopback only)", {}};
  c.actions.push_back(
      {"destroy", "Stop a local cluster and delete its directory", "", {}, {"dir"}, Destroy});
  c.actions.push_back(
      {"start",
       "Start a local cluster and print its master address",
       "Starts the masters and tablet servers with data and logs under --dir, waits until they "
       "are healthy and prints the master address (127.0.0.1:PORT) on its own line.",
       {},
       {"dir", "num_masters", "num_tablet_servers", "master_rpc_port", "bin_dir",
        "extra_master_flags", "extra_tserver_flags"},
       Start});
  c.actions.push_back(
      {"status", "Print the daemons of a local cluster", "", {}, {"dir", "format"}, Status});
  c.actions.push_back({"stop", "Stop a local cluster, keeping its data", "", {}, {"dir"}, Stop});
  return c;
}

}  // namespace basalt::tools
