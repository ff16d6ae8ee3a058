#include "consensus/progress.h"

#include <algorithm>

#include <glog/logging.h>

namespace basalt {

void Progress::BecomeProbe() {
  state_ = State::kProbe;
  next_ = match_ + 1;
  probe_sent_ = false;
  ResetInflight();
}

void Progress::BecomeReplicate() {
  state_ = State::kReplicate;
  next_ = match_ + 1;
  ResetInflight();
}

void Progress::BecomeSnapshot() {
  state_ = State::kSnapshot;
  ResetInflight();
}

bool Progress::IsPaused() const {
  switch (state_) {
    case State::kProbe:
      return probe_sent_;
    case State::kReplicate:
      return inflight_.size() >= max_inflight_;
    case State::kSnapshot:
      return true;
  }
  return true;
}

void Progress::SentAppend(uint64_t last_index) {
  if (state_ == State::kReplicate) {
    if (last_index >= next_) {
      next_ = last_index + 1;
      inflight_.push_back(last_index);
    }
  } else if (state_ == State::kProbe) {
    probe_sent_ = true;
  }
}

bool Progress::MaybeUpdate(uint64_t index) {
  bool updated = false;
  if (index > match_) {
    match_ = index;
    updated = true;
    probe_sent_ = false;
    acked_since_heartbeat_ = true;
  }
  next_ = std::max(next_, index + 1);
  while (!inflight_.empty() && inflight_.front() <= index) inflight_.pop_front();
  return updated;
}

bool Progress::MaybeDecrTo(uint64_t rejected, uint64_t match_hint) {
  if (state_ == State::kReplicate) {
    if (rejected <= match_) return false;  // Stale: that position was acknowledged since.
    BecomeProbe();
    next_ = std::max(std::min(rejected, match_hint + 1), match_ + 1);
    return true;
  }
  if (state_ != State::kProbe || next_ - 1 != rejected) return false;  // Not our last probe.
  next_ = std::max(std::min(rejected, match_hint + 1), match_ + 1);
  probe_sent_ = false;
  return true;
}

void Progress::OnHeartbeatResponse() {
  if (state_ == State::kProbe) {
    probe_sent_ = false;
  } else if (state_ == State::kReplicate && !inflight_.empty() && !acked_since_heartbeat_) {
    BecomeProbe();
  }
  acked_since_heartbeat_ = false;
}

void Progress::OnSnapshotDone(uint64_t index) {
  DCHECK(state_ == State::kSnapshot);
  if (index > match_) match_ = index;
  BecomeProbe();
}

const char* ProgressStateName(Progress::State state) {
  switch (state) {
    case Progress::State::kProbe:
      return "probe";
    case Progress::State::kReplicate:
      return "replicate";
    case Progress::State::kSnapshot:
      return "snapshot";
  }
  return "?";
}

}  // namespace basalt
