#pragma once

// The engine of `basalt local start|stop|status|destroy`: a cluster of real basalt-master and
// basalt-tserver processes on 127.0.0.1 whose data, logs and description live under one
// directory, and which OUTLIVE the process that started them (unlike the test harness in
// src/testing, whose daemons die with their test). A later CLI process finds them again through
// DIR/cluster.json.
//
// Layout of DIR (see docs/local_cluster.md):
//   DIR/cluster.json            the cluster's description: daemons, programs, ports, flags, pids
//                               (rewritten atomically after every change)
//   DIR/master-0/data/          --fs_data_dir of the master
//   DIR/master-0/info.json      --server_dump_info_path (removed before each start)
//   DIR/master-0/master-0.log   stdout and stderr of every run, appended
//   DIR/ts-0/ ... DIR/ts-<N-1>/ the same for each tablet server
//
// Daemons are started fully detached: double fork with setsid() in between, stdin from /dev/null,
// stdout and stderr appended to their log, no parent-death signal, every signal unblocked. They
// are stopped with SIGTERM (SIGKILL after a deadline). A recorded pid counts as our daemon only
// while /proc/<pid>/cmdline is still the recorded command line, since pids are reused.
//
// These functions are not safe to call concurrently on the same DIR (from any process); the
// caller (one CLI invocation at a time) serializes. Distinct directories are independent.

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt::tools {

struct LocalClusterOptions {
  // The cluster's directory; created if missing. Required.
  std::string dir;
  // 1..9. Several masters form one catalog group (docs/master.md); 3 tolerate one failure.
  int num_masters = 1;
  // At least 1.
  int num_tablet_servers = 3;
  // Where basalt-master and basalt-tserver are. Empty: the directory of the running executable
  // (/proc/self/exe), which is where `basalt` is installed next to them.
  std::string bin_dir;
  // 0: 7051 if free, else a free port chosen by the kernel (further masters 7151, 7251, ...);
  // the tablet servers then get 7050, 7052, 7053, ... where free. Nonzero: the first master's
  // port, and the other daemons get free ports chosen by the kernel (what tests use, so parallel
  // clusters never collide).
  int master_rpc_port = 0;
  // Appended after the standard flags of every master / tablet server, as "--name=value"
  // (gflags lets a later flag override an earlier one).
  std::vector<std::string> extra_master_flags, extra_tserver_flags;
};

struct LocalClusterStatus {
  // The address clients use: "127.0.0.1:PORT" (comma-separated if there were several masters).
  std::string master_addresses;
  struct Daemon {
    // "master-0", "ts-0", "ts-1", ...
    std::string name;
    // The pid of the latest start (0 if never started).
    int pid = 0;
    // True while that pid is alive and still runs this daemon's recorded command line.
    bool running = false;
    // "127.0.0.1:PORT".
    std::string rpc_address;
    std::string log_path;
  };
  // Masters first, then tablet servers, in index order.
  std::vector<Daemon> daemons;
};

// Starts the cluster in options.dir and waits (up to 60 s) until every daemon has written its
// info file and the master lists every tablet server as live; writes progress lines to
// `progress` (may be null) and returns the running cluster's status.
//
// A directory without cluster.json gets a new cluster (ports chosen as described above). A
// directory whose recorded cluster is stopped is restarted from its existing data with the same
// ports and flags (the layout options are then ignored, with a note on `progress`; a cluster that
// never came up is laid out anew from `options`).
//
// Errors: INVALID_ARGUMENT for bad options; FAILED_PRECONDITION if a daemon recorded in DIR
// still runs (stop it first); NOT_FOUND if a program is missing from the bin dir; DATA_LOSS for
// an unreadable cluster.json; on a daemon that exits or misses the deadline, an error naming it
// with the tail of its log, after stopping every daemon this call started.
absl::StatusOr<LocalClusterStatus> StartLocalCluster(const LocalClusterOptions& options,
                                                     std::ostream* progress);

// Stops every running daemon of the cluster in `dir`: SIGTERM to all, then SIGKILL to those
// still running after 15 s. Idempotent: OK if nothing runs. NOT_FOUND if `dir` has no
// cluster.json; DATA_LOSS if it is unreadable; INTERNAL if a process survives SIGKILL.
absl::Status StopLocalCluster(const std::string& dir, std::ostream* progress);

// Reads DIR/cluster.json and checks each daemon's process. NOT_FOUND if there is no
// cluster.json; DATA_LOSS naming the file and the problem if it is malformed.
absl::StatusOr<LocalClusterStatus> GetLocalClusterStatus(const std::string& dir);

// Stops the cluster in `dir` and removes `dir` with everything in it. Refuses (FAILED_PRECONDITION,
// nothing removed) a directory without cluster.json, so it never deletes a directory that is not
// a local cluster's; NOT_FOUND if `dir` does not exist; DATA_LOSS (nothing removed) if
// cluster.json is unreadable, since its daemons could not be stopped.
absl::Status DestroyLocalCluster(const std::string& dir, std::ostream* progress);

}  // namespace basalt::tools
