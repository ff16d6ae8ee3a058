#pragma once

// The costs of this machine that Basalt's latencies are made of, measured in a few seconds
// without a cluster (`basalt perf host`, and `make perf` before and after its workloads).
//
// Why: the benchmarks of docs/performance.md run on a shared virtual machine whose speed changes
// by the hour (W1 took 24 s one hour and 41 s another with the same build). A result that says
// how fast the host's wakeups, loopback round trips and disk cache flushes were when it was taken
// can be compared with another; and these are the primitives a write or a lookup is built from
// (docs/performance.md "Profiles": a W1 Flush() is about 140 context switches and 8 syncs).
//
// Each probe runs for about `per_probe` and reports rates or averages over what it did. Nothing
// here is an assertion about speed (tests check only that the figures are positive).

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace basalt::tools {

struct HostProbeResult {
  // A trivial system call (getppid), µs.
  double syscall_us = 0;
  // A round trip between two threads through a mutex and condition variables (two wakeups), µs.
  double thread_round_trip_us = 0;
  // 16-byte request/reply round trips per second over a loopback TCP connection, the client
  // sleeping in recv(2) for each reply, and the client polling a non-blocking socket instead
  // (docs/frame_rpc.md "Polling for the reply").
  double loopback_round_trips_per_sec_blocking = 0;
  double loopback_round_trips_per_sec_polling = 0;
  // A 4 KiB pwrite into an already written and synced file in the probed directory, then
  // fdatasync: the median and the rate of one thread doing nothing else, µs and 1/s.
  double fdatasync_p50_us = 0;
  double fdatasyncs_per_sec = 0;
};

// Runs every probe, each for about `per_probe`. `dir` must be writable: the disk probe writes a
// 1 MiB file there (removed afterwards). Errors: the directory cannot be written or synced
// (with the path and errno text), a socket or thread cannot be created.
absl::StatusOr<HostProbeResult> ProbeHost(const std::string& dir, absl::Duration per_probe);

}  // namespace basalt::tools
