#pragma once

// A pool that runs every task at once: on an idle thread, or on a new one when none is idle.
// Threads idle longer than `idle_timeout` exit. The client's scan workers (ParallelScan) run
// here.
//
// Why: a parallel scan used to start and join a thread per worker. For small scans (a time-series
// query reads four tablets in a few milliseconds) creating, starting and freeing those threads
// cost more CPU than the scan itself (clone, stack mmap/munmap with TLB shootdowns, TLS setup):
// basalt-tsdbd spent 57% of its CPU there.
//
// What must stay true:
// - Run() never queues a task behind another: tasks may block for a long time (a scan worker
//   waits for its caller), so a task waiting for a free thread could wait forever.
// - The destructor waits for the running tasks and joins every thread it started.
//
// Thread-safe.

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace basalt::client::internal {

class ElasticThreadPool {
 public:
  explicit ElasticThreadPool(absl::Duration idle_timeout = absl::Seconds(30));
  ~ElasticThreadPool();
  ElasticThreadPool(const ElasticThreadPool&) = delete;
  ElasticThreadPool& operator=(const ElasticThreadPool&) = delete;

  // Starts `task` on an idle thread or a new one.
  void Run(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);

  // Threads alive (running a task or idle) and those idle, for tests.
  int num_threads() const ABSL_LOCKS_EXCLUDED(mu_);
  int num_idle() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the threads that exited, for the caller to join outside mu_.
  std::vector<std::thread> TakeFinishedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration idle_timeout_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;  // Threads waiting for a task.
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  // Threads that left Loop (or are leaving it), not yet joined.
  std::vector<std::thread> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::client::internal
