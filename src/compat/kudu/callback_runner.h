#pragma once

// CallbackRunner: one thread that runs user callbacks (KuduStatusCallback of FlushAsync) in the
// order they were posted, so that they never run on the caller's thread nor on a Basalt client
// thread (a slow user callback must not stall the client's sends).
//
// Lifecycle: the thread starts on the first Post; Shutdown (or the destructor) runs what is
// queued, then joins. Post after Shutdown runs the task on the caller's thread. A task that
// destroys the runner (dropping the last reference to the client from inside a callback) leaves
// the thread to finish on its own. Thread-safe.

#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace kudu {
namespace client {

class CallbackRunner {
 public:
  CallbackRunner() = default;
  ~CallbackRunner();
  CallbackRunner(const CallbackRunner&) = delete;
  CallbackRunner& operator=(const CallbackRunner&) = delete;

  void Post(std::function<void()> task);
  void Shutdown();

 private:
  // Shared with the thread, so that a detached thread outlives the runner safely.
  struct Queue {
    absl::Mutex mu;
    std::deque<std::function<void()>> tasks ABSL_GUARDED_BY(mu);
    bool started ABSL_GUARDED_BY(mu) = false;
    bool stopping ABSL_GUARDED_BY(mu) = false;
  };
  static void Run(std::shared_ptr<Queue> q);

  const std::shared_ptr<Queue> q_ = std::make_shared<Queue>();
  // Started under q_->mu by the first Post; joined (or detached) by Shutdown.
  std::thread thread_;
};

}  // namespace client
}  // namespace kudu
