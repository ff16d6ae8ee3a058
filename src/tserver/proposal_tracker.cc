#include "tserver/proposal_tracker.h"

#include <utility>

#include "absl/time/clock.h"
#include "common/random.h"

namespace basalt {

ProposalTracker::ProposalTracker()
    : next_seq_((Random(static_cast<uint64_t>(absl::GetCurrentTimeNanos()) ^
                        reinterpret_cast<uintptr_t>(this))
                     .Next64() &
                 0xffffffffffULL)
                << 20) {}

void ProposalTracker::Add(std::shared_ptr<PendingOp> op) {
  absl::MutexLock l(&mu_);
  in_flight_.insert(op->ts.value());
  by_seq_[op->seq] = std::move(op);
}

std::shared_ptr<PendingOp> ProposalTracker::Take(uint64_t seq, HybridTime ts) {
  absl::MutexLock l(&mu_);
  auto it = by_seq_.find(seq);
  if (it == by_seq_.end() || it->second->ts != ts) return nullptr;
  std::shared_ptr<PendingOp> op = std::move(it->second);
  by_seq_.erase(it);
  return op;
}

bool ProposalTracker::Abandon(uint64_t seq) {
  absl::MutexLock l(&mu_);
  return by_seq_.erase(seq) > 0;
}

void ProposalTracker::Done(const PendingOp& op) {
  absl::MutexLock l(&mu_);
  by_seq_.erase(op.seq);
  in_flight_.erase(op.ts.value());
}

bool ProposalTracker::AwaitNoneAtOrBelow(HybridTime t, absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  auto settled = [this, t]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return in_flight_.empty() || *in_flight_.begin() > t.value();
  };
  return mu_.AwaitWithDeadline(absl::Condition(&settled), deadline);
}

}  // namespace basalt
