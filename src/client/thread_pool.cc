#include "client/thread_pool.h"

#include <utility>

namespace basalt::client {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads < 1 ? 1 : num_threads) {}

ThreadPool::~ThreadPool() { Shutdown(); }

void ThreadPool::Start() {
  for (int i = 0; i < num_threads_; i++) threads_.emplace_back([this] { Run(); });
}

bool ThreadPool::Submit(std::function<void()> task) {
  absl::MutexLock l(&mu_);
  if (shutting_down_) return false;
  queue_.push_back(std::move(task));
  return true;
}

void ThreadPool::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    shutting_down_ = true;
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void ThreadPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return shutting_down_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // Shutting down and drained.
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace basalt::client
