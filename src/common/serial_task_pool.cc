#include "common/serial_task_pool.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "common/thread_name.h"

namespace basalt {

SerialTaskPool::SerialTaskPool(int num_threads, std::string name) {
  CHECK_GE(num_threads, 1);
  threads_.reserve(static_cast<size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this, name] {
      SetCurrentThreadName(name);
      Run();
    });
  }
}

SerialTaskPool::~SerialTaskPool() {
  {
    absl::MutexLock l(&mu_);
    CHECK(ready_.empty()) << "a SerialTaskPool was destroyed with live tokens";
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

std::unique_ptr<SerialTaskPool::Token> SerialTaskPool::NewToken() {
  return std::unique_ptr<Token>(new Token(this));
}

void SerialTaskPool::Run() {
  while (true) {
    Token* token = nullptr;
    std::function<void()> task;
    {
      absl::MutexLock l(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !ready_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      if (ready_.empty()) return;  // Stopping.
      token = ready_.front();
      ready_.pop_front();
      token->queued_ = false;
      task = std::move(token->tasks_.front());
      token->tasks_.pop_front();
      token->running_ = true;
    }
    task();
    task = nullptr;  // Whatever the task captured dies outside the lock.
    absl::MutexLock l(&mu_);
    token->running_ = false;
    if (!token->tasks_.empty() && !token->shut_down_) {
      token->queued_ = true;
      ready_.push_back(token);
    }
    task_done_.SignalAll();
  }
}

SerialTaskPool::Token::~Token() { Shutdown(); }

bool SerialTaskPool::Token::Submit(std::function<void()> task) {
  absl::MutexLock l(&pool_->mu_);
  if (shut_down_) return false;
  tasks_.push_back(std::move(task));
  if (!running_ && !queued_) {
    queued_ = true;
    pool_->ready_.push_back(this);
  }
  return true;
}

void SerialTaskPool::Token::Drain() {
  {
    absl::MutexLock l(&pool_->mu_);
    while (!shut_down_ && (running_ || !tasks_.empty())) pool_->task_done_.Wait(&pool_->mu_);
  }
  Shutdown();
}

void SerialTaskPool::Token::Shutdown() {
  std::deque<std::function<void()>> dropped;
  {
    absl::MutexLock l(&pool_->mu_);
    shut_down_ = true;
    if (queued_) {
      auto& ready = pool_->ready_;
      ready.erase(std::find(ready.begin(), ready.end(), this));
      queued_ = false;
    }
    dropped.swap(tasks_);
    while (running_) pool_->task_done_.Wait(&pool_->mu_);
  }
  // Destroyed outside the lock: a task's captures may take locks of their own.
}

}  // namespace basalt
