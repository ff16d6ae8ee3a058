#pragma once

// BackgroundWriter: a writer thread for cluster tests through the client library, which records
// which rows were acknowledged so that a test can check that none was lost.

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "testing/wait.h"
#include "tests/client_test_util.h"

namespace basalt::client_test {

// Inserts Expected(k) for k = 0, 1, 2, ... in MANUAL_FLUSH batches on its own thread and records
// which rows were acknowledged (flushed without a per-row error). Start() → Stop(); the destructor
// stops it too.
//
// By default it pauses kSteadyPause between batches: a steady application writer (under 10 k rows
// a second), which keeps writes going through every fault a test makes without filling the
// machine's two cores with fsyncs (a writer at full speed cost a cluster test 3-4× the CPU, and
// the default suite runs several at once). A test that needs volume (log segments to roll, blocks
// worth copying) passes kFlatOut.
class BackgroundWriter {
 public:
  static constexpr absl::Duration kSteadyPause = absl::Milliseconds(20);
  static constexpr absl::Duration kFlatOut = absl::ZeroDuration();

  BackgroundWriter(std::shared_ptr<client::Client> client, std::shared_ptr<client::Table> table,
                   absl::Duration pause = kSteadyPause)
      : client_(std::move(client)), table_(std::move(table)), pause_(pause) {}
  ~BackgroundWriter() { Stop().IgnoreError(); }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  // Stops and joins; returns the first error other than a per-row failure.
  absl::Status Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    absl::MutexLock l(&mu_);
    return status_;
  }
  size_t acked_count() const {
    absl::MutexLock l(&mu_);
    return acked_.size();
  }
  std::vector<int32_t> acked() const {
    absl::MutexLock l(&mu_);
    return acked_;
  }
  // Waits until at least `n` rows are acknowledged.
  absl::Status WaitForAcked(size_t n) const {
    return WaitFor(absl::Seconds(60), StrCat(n, " acknowledged rows"), [&] {
      size_t now = acked_count();
      return now >= n ? absl::OkStatus() : absl::UnavailableError(StrCat(now, " so far"));
    });
  }
  // Checks the table after Stop(): every acknowledged row is there with its contents, no row is
  // returned twice, no row that was never sent is there, and no insert (each of a fresh key)
  // was answered ALREADY_EXISTS.
  void Verify() const;

 private:
  static constexpr int kBatch = 200;

  void Run();

  const std::shared_ptr<client::Client> client_;
  const std::shared_ptr<client::Table> table_;
  const absl::Duration pause_;  // Between batches.
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::vector<int32_t> acked_ ABSL_GUARDED_BY(mu_);
  int32_t attempted_end_ ABSL_GUARDED_BY(mu_) = 0;  // Keys [0, attempted_end_) were sent.
  int already_exists_ ABSL_GUARDED_BY(mu_) = 0;     // Inserts answered ALREADY_EXISTS.
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::client_test
