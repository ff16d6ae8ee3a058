#include "client/elastic_thread_pool.h"

#include <utility>

namespace basalt::client::internal {

ElasticThreadPool::ElasticThreadPool(absl::Duration idle_timeout) : idle_timeout_(idle_timeout) {}

ElasticThreadPool::~ElasticThreadPool() {
  std::vector<std::thread> finished;
  {
    absl::MutexLock l(&mu_);
    shutting_down_ = true;
    auto all_gone = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return threads_.empty(); };
    mu_.Await(absl::Condition(&all_gone));
    finished = TakeFinishedLocked();
  }
  for (std::thread& t : finished) t.join();
}

void ElasticThreadPool::Run(std::function<void()> task) {
  std::vector<std::thread> finished;
  {
    absl::MutexLock l(&mu_);
    queue_.push_back(std::move(task));
    // Each idle thread takes one queued task; only tasks beyond them need a new thread.
    if (queue_.size() > static_cast<size_t>(idle_)) {
      const uint64_t id = next_id_++;
      threads_.emplace(id, std::thread(&ElasticThreadPool::Loop, this, id));
    }
    finished = TakeFinishedLocked();
  }
  for (std::thread& t : finished) t.join();
}

int ElasticThreadPool::num_threads() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(threads_.size());
}

int ElasticThreadPool::num_idle() const {
  absl::MutexLock l(&mu_);
  return idle_;
}

std::vector<std::thread> ElasticThreadPool::TakeFinishedLocked() {
  std::vector<std::thread> out;
  out.swap(finished_);
  return out;
}

void ElasticThreadPool::Loop(uint64_t id) {
  absl::MutexLock l(&mu_);
  auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || shutting_down_;
  };
  for (;;) {
    ++idle_;
    // The condition is evaluated under mu_ on return: a task queued while this thread counted
    // as idle is always taken, even when the wait timed out.
    mu_.AwaitWithTimeout(absl::Condition(&has_work), idle_timeout_);
    --idle_;
    if (queue_.empty()) break;  // Idle too long, or shutting down.
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    task();
    task = nullptr;  // Whatever it holds is released outside mu_.
    mu_.Lock();
  }
  // Joined by the next Run() or the destructor; join waits until this thread has fully left.
  auto it = threads_.find(id);
  finished_.push_back(std::move(it->second));
  threads_.erase(it);
}

}  // namespace basalt::client::internal
