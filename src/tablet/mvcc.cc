#include "tablet/mvcc.h"

#include <algorithm>

#include <glog/logging.h>

#include "absl/strings/str_format.h"
#include "common/strings.h"

namespace basalt {

// ---- MvccSnapshot -------------------------------------------------------------------------------

MvccSnapshot::MvccSnapshot()
    : all_committed_before_(HybridTime::kMin), none_committed_at_or_after_(HybridTime::kMin) {}

MvccSnapshot MvccSnapshot::IncludingAllBefore(HybridTime t) {
  MvccSnapshot snap;
  snap.all_committed_before_ = t;
  snap.none_committed_at_or_after_ = t;
  return snap;
}

bool MvccSnapshot::IsCommittedSlow(HybridTime ts) const {
  return std::binary_search(committed_after_.begin(), committed_after_.end(), ts);
}

std::string MvccSnapshot::ToString() const {
  std::string out = StrCat("MvccSnapshot[committed={T|T < ", all_committed_before_.ToString());
  if (!committed_after_.empty()) {
    out += " or (T in {";
    for (size_t i = 0; i < committed_after_.size(); ++i) {
      if (i > 0) out += ", ";
      out += committed_after_[i].ToString();
    }
    out += "})";
  }
  out += "}]";
  return out;
}

// ---- MvccManager --------------------------------------------------------------------------------

MvccManager::MvccManager() {
  absl::MutexLock l(&mu_);
  AdvanceWatermarkLocked();
}

absl::Status MvccManager::StartOp(HybridTime ts) {
  if (!ts.is_valid() || ts == HybridTime::kMin) {
    return absl::InvalidArgumentError(StrCat("invalid op timestamp ", ts.ToString()));
  }
  absl::MutexLock l(&mu_);
  if (ts <= safe_time_) {
    return absl::FailedPreconditionError(StrCat(
        "op timestamp ", ts.ToString(), " is not after the safe time ", safe_time_.ToString()));
  }
  if (in_flight_.count(ts.value()) != 0 || cur_snap_.IsCommitted(ts)) {
    return absl::FailedPreconditionError(
        StrCat("op timestamp ", ts.ToString(), " is already in flight or committed"));
  }
  in_flight_.emplace(ts.value(), true);
  AdvanceWatermarkLocked();
  return absl::OkStatus();
}

void MvccManager::RemoveInFlightLocked(HybridTime ts, const char* what) {
  auto it = in_flight_.find(ts.value());
  CHECK(it != in_flight_.end()) << what << " of op " << ts.ToString() << " that is not in flight";
  in_flight_.erase(it);
}

void MvccManager::FinishOp(HybridTime ts) {
  absl::MutexLock l(&mu_);
  RemoveInFlightLocked(ts, "FinishOp");
  // ts >= the watermark because it was in flight; keep committed_after_ sorted (ops usually
  // finish in timestamp order, so this is an append).
  auto& committed = cur_snap_.committed_after_;
  committed.insert(std::upper_bound(committed.begin(), committed.end(), ts), ts);
  cur_snap_.none_committed_at_or_after_ =
      std::max(cur_snap_.none_committed_at_or_after_, ts.Next());
  AdvanceWatermarkLocked();
}

void MvccManager::AbortOp(HybridTime ts) {
  absl::MutexLock l(&mu_);
  RemoveInFlightLocked(ts, "AbortOp");
  AdvanceWatermarkLocked();
}

void MvccManager::AdjustSafeTime(HybridTime ts) {
  absl::MutexLock l(&mu_);
  if (ts <= safe_time_) return;
  safe_time_ = ts;
  AdvanceWatermarkLocked();
}

void MvccManager::AdvanceWatermarkLocked() {
  HybridTime w = safe_time_.Next();
  if (!in_flight_.empty()) w = std::min(w, HybridTime(in_flight_.begin()->first));
  DCHECK_GE(w, cur_snap_.all_committed_before_);
  cur_snap_.all_committed_before_ = w;
  auto& committed = cur_snap_.committed_after_;
  committed.erase(committed.begin(), std::lower_bound(committed.begin(), committed.end(), w));
  cur_snap_.none_committed_at_or_after_ = std::max(cur_snap_.none_committed_at_or_after_, w);
  cv_.SignalAll();
}

MvccSnapshot MvccManager::SnapshotForRead() const {
  absl::MutexLock l(&mu_);
  return cur_snap_;
}

bool MvccManager::AllAppliedAtOrBeforeLocked(HybridTime ts) const {
  return safe_time_ >= ts && (in_flight_.empty() || in_flight_.begin()->first > ts.value());
}

absl::StatusOr<MvccSnapshot> MvccManager::WaitForSnapshotWithAllApplied(HybridTime ts,
                                                                        absl::Time deadline) const {
  if (!ts.is_valid() || ts >= HybridTime::kMax) {
    return absl::InvalidArgumentError(StrCat("invalid snapshot timestamp ", ts.ToString()));
  }
  absl::MutexLock l(&mu_);
  while (!AllAppliedAtOrBeforeLocked(ts)) {
    // WaitWithDeadline returns true on timeout; re-check the condition once more either way.
    if (cv_.WaitWithDeadline(&mu_, deadline) && !AllAppliedAtOrBeforeLocked(ts)) {
      std::string in_flight = in_flight_.empty() ? std::string("none")
                                                 : HybridTime(in_flight_.begin()->first).ToString();
      return absl::DeadlineExceededError(StrCat("timed out waiting for all ops at or before ",
                                                ts.ToString(), " to be applied: safe time ",
                                                safe_time_.ToString(), ", earliest in-flight op ",
                                                in_flight));
    }
  }
  return MvccSnapshot::IncludingAllBefore(ts.Next());
}

HybridTime MvccManager::safe_time() const {
  absl::MutexLock l(&mu_);
  return safe_time_;
}

HybridTime MvccManager::all_committed_before() const {
  absl::MutexLock l(&mu_);
  return cur_snap_.all_committed_before_;
}

int MvccManager::num_in_flight() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(in_flight_.size());
}

HybridTime MvccManager::earliest_in_flight() const {
  absl::MutexLock l(&mu_);
  return in_flight_.empty() ? HybridTime::kInvalid : HybridTime(in_flight_.begin()->first);
}

}  // namespace basalt
