#include "tserver/replica_state.h"

#include "common/strings.h"
#include "tserver/tserver_errors.h"

namespace basalt {

const char* ReplicaStateName(ReplicaState state) {
  switch (state) {
    case ReplicaState::kBootstrapping:
      return "BOOTSTRAPPING";
    case ReplicaState::kRunning:
      return "RUNNING";
    case ReplicaState::kStopping:
      return "STOPPING";
    case ReplicaState::kFailed:
      return "FAILED";
  }
  return "UNKNOWN";
}

bool ReplicaStateTracker::Set(ReplicaState to, absl::Status error) {
  absl::MutexLock l(&mu_);
  cv_.SignalAll();
  const bool allowed = state_ != ReplicaState::kFailed &&
                       (to == ReplicaState::kFailed || to == ReplicaState::kStopping ||
                        (to == ReplicaState::kRunning && state_ == ReplicaState::kBootstrapping));
  if (!allowed || state_ == to) return false;
  state_ = to;
  if (to == ReplicaState::kFailed) {
    error_ = error.ok() ? absl::InternalError("failed without an error") : std::move(error);
  }
  return true;
}

ReplicaState ReplicaStateTracker::state() const {
  absl::MutexLock l(&mu_);
  return state_;
}

absl::Status ReplicaStateTracker::error() const {
  absl::MutexLock l(&mu_);
  return error_;
}

absl::Status ReplicaStateTracker::CheckRunning() const {
  absl::MutexLock l(&mu_);
  switch (state_) {
    case ReplicaState::kRunning:
      return absl::OkStatus();
    case ReplicaState::kBootstrapping:
      return TabletNotRunningError(StrCat("tablet ", tablet_id_, " is bootstrapping"));
    case ReplicaState::kStopping:
      return TabletNotRunningError(StrCat("tablet ", tablet_id_, " is shutting down"));
    case ReplicaState::kFailed:
      break;
  }
  return TabletFailedError(StrCat("tablet ", tablet_id_, " failed: ", error_.ToString()));
}

bool ReplicaStateTracker::WaitUntilRunning(absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return state_ != ReplicaState::kBootstrapping;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout) && state_ == ReplicaState::kRunning;
}

bool ReplicaStateTracker::Await(const std::function<bool()>& done, absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  while (!done() && state_ == ReplicaState::kRunning) {
    if (cv_.WaitWithDeadline(&mu_, deadline)) break;  // Timed out.
  }
  return done();
}

void ReplicaStateTracker::Notify() {
  absl::MutexLock l(&mu_);
  cv_.SignalAll();
}

}  // namespace basalt
