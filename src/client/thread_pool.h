#pragma once

// A fixed pool of threads running queued tasks: the client's write senders.
//
// Lifecycle: construct, Start(), Submit() any number of tasks, Shutdown() (runs every queued
// task, then joins). Submit after Shutdown runs nothing and returns false.
// Thread-safe.

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace basalt::client {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();  // Shutdown().
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  bool Submit(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const int num_threads_;
  std::vector<std::thread> threads_;  // Touched only by Start and Shutdown.
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace basalt::client
