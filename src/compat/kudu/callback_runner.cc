#include "compat/kudu/callback_runner.h"

#include <utility>

namespace kudu {
namespace client {

CallbackRunner::~CallbackRunner() { Shutdown(); }

void CallbackRunner::Post(std::function<void()> task) {
  {
    absl::MutexLock l(&q_->mu);
    if (!q_->stopping) {
      q_->tasks.push_back(std::move(task));
      if (!q_->started) {
        q_->started = true;
        thread_ = std::thread(&CallbackRunner::Run, q_);
      }
      return;
    }
  }
  task();  // Shut down: nobody else would run it.
}

void CallbackRunner::Shutdown() {
  {
    absl::MutexLock l(&q_->mu);
    if (q_->stopping) return;
    q_->stopping = true;
  }
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    // A callback dropped the last reference to the client: this thread cannot join itself. It
    // drains the queue and ends; it holds its own reference to the queue.
    thread_.detach();
    return;
  }
  thread_.join();
}

void CallbackRunner::Run(std::shared_ptr<Queue> q) {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock l(&q->mu);
      q->mu.Await(absl::Condition(
          +[](Queue* q)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu) { return !q->tasks.empty() || q->stopping; },
          q.get()));
      if (q->tasks.empty()) return;  // Stopping and drained.
      task = std::move(q->tasks.front());
      q->tasks.pop_front();
    }
    task();
  }
}

}  // namespace client
}  // namespace kudu
