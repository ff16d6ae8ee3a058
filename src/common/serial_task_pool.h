#pragma once

// SerialTaskPool: a fixed set of threads running tasks submitted through tokens. The tasks of one
// token run one at a time, in submission order; different tokens' tasks run in parallel. The
// tablet server applies committed Raft entries this way (one token per replica: log order kept
// per tablet, a slow apply of one tablet holds one thread, never the Raft threads).
//
// Lifecycle: construct the pool (its threads start), NewToken() any number of times, Submit()
// through tokens, Shutdown() every token (or destroy it), then destroy the pool (joins). A task
// must not call Shutdown() of its own token (it would wait for itself).
//
// Thread-safe.

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace basalt {

class SerialTaskPool {
 public:
  class Token {
   public:
    ~Token();  // Shutdown().
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;

    // Queues `task` to run after every task submitted before it. Returns false (and drops the
    // task) after Shutdown.
    bool Submit(std::function<void()> task);
    // Drops the queued tasks and waits for the running one to return. Idempotent.
    // REQUIRES: not called from a task of this token.
    void Shutdown();
    // Waits until every task submitted so far has run, then Shutdown(). The caller must stop
    // submitting first. REQUIRES: not called from a task of this token.
    void Drain();

   private:
    friend class SerialTaskPool;
    explicit Token(SerialTaskPool* pool) : pool_(pool) {}

    SerialTaskPool* const pool_;
    // Guarded by pool_->mu_ (the analysis cannot name it through the pointer).
    std::deque<std::function<void()>> tasks_;
    bool running_ = false;  // A task of this token runs on some thread.
    bool queued_ = false;   // The token is in pool_->ready_.
    bool shut_down_ = false;
  };

  // REQUIRES: num_threads >= 1. `name` names the threads (SetCurrentThreadName).
  explicit SerialTaskPool(int num_threads, std::string name = "task-pool");
  // Joins the threads. REQUIRES: every token was shut down or destroyed.
  ~SerialTaskPool();
  SerialTaskPool(const SerialTaskPool&) = delete;
  SerialTaskPool& operator=(const SerialTaskPool&) = delete;

  // A new token; it must not outlive the pool.
  std::unique_ptr<Token> NewToken();

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  // Signalled when a task ends (Token::Shutdown waits for its token's).
  absl::CondVar task_done_;
  // Tokens with queued tasks and none running, in the order they became ready (fairness).
  std::deque<Token*> ready_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // Constant after construction.
};

}  // namespace basalt
