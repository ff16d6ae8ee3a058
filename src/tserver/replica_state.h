#pragma once

// ReplicaStateTracker: the lifecycle state of one tablet replica (docs/tserver.md "Replica
// states") and the waits that end when it changes.
//
//   BOOTSTRAPPING --(the log present at open is applied)--> RUNNING
//   BOOTSTRAPPING, RUNNING --(Shutdown)--> STOPPING
//   any --(a storage fault, a failed apply, a WAL or cmeta write error)--> FAILED
//
// FAILED is final and keeps the first error; STOPPING leads only to FAILED. Only RUNNING serves
// reads and writes: CheckRunning() gives the others' errors (TABLET_NOT_RUNNING, retried on the
// same server; TABLET_FAILED, retried on another replica).
//
// Waiters (a new leader waiting for its first entry, a follower waiting for its safe time) wait
// through Await(): it ends when their condition holds, the state leaves RUNNING, or the deadline
// passes. Whoever changes what a condition reads calls Notify().
//
// Thread-safe.

#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace basalt {

enum class ReplicaState { kBootstrapping, kRunning, kStopping, kFailed };

// "BOOTSTRAPPING", "RUNNING", "STOPPING", "FAILED".
const char* ReplicaStateName(ReplicaState state);

class ReplicaStateTracker {
 public:
  explicit ReplicaStateTracker(std::string tablet_id) : tablet_id_(std::move(tablet_id)) {}

  // Moves to `to` if the diagram allows it (`error` is kept when failing, the first one only).
  // Returns whether the state changed. Wakes every waiter either way.
  bool Set(ReplicaState to, absl::Status error = absl::OkStatus()) ABSL_LOCKS_EXCLUDED(mu_);
  ReplicaState state() const ABSL_LOCKS_EXCLUDED(mu_);
  // Why the replica failed (OK unless FAILED).
  absl::Status error() const ABSL_LOCKS_EXCLUDED(mu_);
  // OK iff RUNNING; UNAVAILABLE + TABLET_NOT_RUNNING (bootstrapping, stopping) or
  // FAILED_PRECONDITION + TABLET_FAILED with the error.
  absl::Status CheckRunning() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until the state is not BOOTSTRAPPING or `timeout` passes; true iff RUNNING then.
  bool WaitUntilRunning(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until `done()` holds, the state is not RUNNING, or `deadline`; returns done(). `done`
  // is evaluated under this tracker's lock: it must only read atomics (no locks of its own).
  bool Await(const std::function<bool()>& done, absl::Time deadline) const ABSL_LOCKS_EXCLUDED(mu_);
  // Re-evaluates the waiters' conditions (call after changing what they read).
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string tablet_id_;
  mutable absl::Mutex mu_;  // A leaf lock.
  mutable absl::CondVar cv_;
  ReplicaState state_ ABSL_GUARDED_BY(mu_) = ReplicaState::kBootstrapping;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
