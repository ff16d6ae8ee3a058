#pragma once

// The tablets of an unordered scan read several at a time. Workers (tasks on the client's
// ElasticThreadPool) each drive one TabletScanner at a time: they claim the next tablet from the
// scan's pruner, open it and fetch its batches ahead of the caller into one queue, then claim
// another. A worker that gets a tablet starts the next worker, up to num_workers, so a scan of k
// tablets starts at most k + 1 of them. Private to src/client.
//
// Why: a scan that reads one tablet at a time keeps one tablet server busy while the others
// (and the client's own cores) wait; W3 of docs/performance.md found the CPUs idle 37% of a
// full-table scan that way.
//
// What must stay true:
// - Memory is bounded: at most one queued answer per worker plus one in flight per worker.
// - Every answer queued before a failure reaches the caller before the failure, and the failure
//   ends the scan (the other workers stop; answers they still held are dropped, nothing after
//   the failure is returned).
// - Stop() does not wait out RPCs: those in flight are cancelled. (A claim that is asking the
//   master for locations, or a worker's last keep-alive or close, still runs to its end.)
// - A worker waiting for room keeps its server-side scanner alive, so a scan that the caller
//   reads at any pace never loses a tablet's scanner to its TTL.
//
// Thread-safe for one caller thread (Next, HasMore, KeepAlive, Stop) beside the workers.

#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace basalt {
class PartitionPruner;
namespace pb {
class ScanResponsePB;
}  // namespace pb
}  // namespace basalt

namespace basalt::client::internal {

struct ScanConfig;
class TabletScanner;

class ParallelScan {
 public:
  // `first` is the scan's first tablet, opened by the caller (its first answer already taken),
  // or null; `pruner` holds the ranges left after it (only the workers touch it from now on);
  // both `config` and `pruner` must outlive this object. Each RPC waits up to `timeout`.
  ParallelScan(ScanConfig* config, PartitionPruner* pruner, std::unique_ptr<TabletScanner> first,
               int num_workers, absl::Duration timeout);
  ~ParallelScan();  // Stop().
  ParallelScan(const ParallelScan&) = delete;
  ParallelScan& operator=(const ParallelScan&) = delete;

  // The next answer, in the order the workers fetched them; null when every tablet is done;
  // DEADLINE_EXCEEDED (the scan goes on) when nothing came by `deadline`; a worker's error
  // (which ends the scan).
  absl::StatusOr<std::unique_ptr<pb::ScanResponsePB>> Next(absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether Next() may still return an answer or an error.
  bool HasMore() const ABSL_LOCKS_EXCLUDED(mu_);
  // Keeps alive the server-side scanners of the workers waiting for room in the queue (the
  // others are fetching, which keeps theirs alive). The first error, after trying every one.
  absl::Status KeepAlive(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels the RPCs in flight, releases the server-side scanners and waits for the workers.
  // Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Worker {
    TabletScanner* scanner = nullptr;  // The tablet it is on, null between tablets.
    bool waiting = false;              // Blocked in Push with `scanner`'s answer.
  };

  void Run(int index, std::unique_ptr<TabletScanner> scanner) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts worker started_ with `first` (or none) as its tablet.
  void StartWorkerLocked(std::unique_ptr<TabletScanner> first) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts another worker unless num_workers run or the scan is stopping.
  void MaybeStartNextWorker() ABSL_LOCKS_EXCLUDED(mu_);
  // Queues `scanner`'s answer, waiting for room (and keeping its server-side scanner alive
  // meanwhile); false when the scan is stopping.
  bool Push(int index, TabletScanner& scanner) ABSL_LOCKS_EXCLUDED(mu_);
  bool Stopping() const ABSL_LOCKS_EXCLUDED(mu_);
  // Makes `scanner` worker `index`'s (null: none); false when the scan is stopping.
  bool SetScanner(int index, TabletScanner* scanner) ABSL_LOCKS_EXCLUDED(mu_);
  void Fail(absl::Status s) ABSL_LOCKS_EXCLUDED(mu_);
  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ScanConfig* const config_;
  const absl::Duration timeout_;
  const size_t capacity_;

  // Serializes claiming tablets (a claim may ask the master for locations; it must not hold
  // mu_, on which the caller waits).
  absl::Mutex claim_mu_;
  PartitionPruner* const pruner_ ABSL_PT_GUARDED_BY(claim_mu_);

  mutable absl::Mutex mu_;
  std::deque<absl::StatusOr<std::unique_ptr<pb::ScanResponsePB>>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<Worker> workers_ ABSL_GUARDED_BY(mu_);
  int started_ ABSL_GUARDED_BY(mu_) = 0;  // Workers started (indexes [0, started_)).
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // Workers not yet finished.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;  // Next() returned the failure or the end.

  // One per started worker, ready once its task has returned (after its last touch of this
  // object, so unlike waiting for running_ == 0 under mu_, it makes destruction safe).
  std::vector<std::future<void>> workers_done_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::client::internal
