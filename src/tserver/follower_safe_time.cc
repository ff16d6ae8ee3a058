#include "tserver/follower_safe_time.h"

#include <algorithm>

namespace basalt {

bool FollowerSafeTime::OnLeaderPair(uint64_t term, uint64_t time, uint64_t index) {
  absl::MutexLock l(&mu_);
  if (term < pending_term_) return false;
  if (term > pending_term_) {
    pending_term_ = term;
    pending_.clear();
  }
  // Applied entries up to `index` of terms <= `term` are that leader's entries: the follower
  // follows it in `term`, and everything committed before is in its log (leader completeness).
  if (applied_index_ >= index && applied_term_ <= term) return Adopt(time);
  if (!pending_.empty() && pending_.back().index >= index) {
    // Same index, a later time (the leader was idle): the later pair supersedes the last one.
    pending_.back().time = std::max(pending_.back().time, time);
    return false;
  }
  if (pending_.size() >= kMaxPending) pending_.pop_back();
  pending_.push_back(Pair{time, index});
  return false;
}

bool FollowerSafeTime::OnApplied(uint64_t index, uint64_t term) {
  absl::MutexLock l(&mu_);
  applied_index_ = index;
  applied_term_ = term;
  if (pending_.empty()) return false;
  if (term > pending_term_) {
    pending_.clear();
    return false;
  }
  bool raised = false;
  while (!pending_.empty() && pending_.front().index <= index) {
    raised |= Adopt(pending_.front().time);
    pending_.pop_front();
  }
  return raised;
}

size_t FollowerSafeTime::num_pending() const {
  absl::MutexLock l(&mu_);
  return pending_.size();
}

bool FollowerSafeTime::Adopt(uint64_t time) {
  if (time <= safe_time_.load(std::memory_order_relaxed)) return false;
  safe_time_.store(time, std::memory_order_release);
  return true;
}

}  // namespace basalt
