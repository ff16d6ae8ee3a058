// TabletReplica: membership changes, the consensus state, and both ends of tablet copy that live
// in the replica (the leader's trigger and the source's log anchors). docs/tablet_copy.md.

#include <algorithm>
#include <limits>

#include <glog/logging.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/consensus.pb.h"
#include "tserver/replica_report.h"
#include "tserver/tablet_copy_trigger.h"
#include "tserver/tablet_replica.h"
#include "tserver/tserver_errors.h"

namespace basalt {

absl::StatusOr<uint64_t> TabletReplica::ChangeConfig(const ConfigChange& change,
                                                     std::optional<uint64_t> cas_config_index,
                                                     absl::Time deadline) {
  BASALT_RETURN_IF_ERROR(CheckRunning());
  RaftNode* node = raft();
  if (node->role() != RaftCore::Role::kLeader) return NotLeader("not the leader");
  absl::StatusOr<uint64_t> index = node->ChangeConfigAndWait(
      change, std::max(deadline - absl::Now(), absl::ZeroDuration()), cas_config_index);
  if (!index.ok() && absl::IsUnavailable(index.status()) &&
      node->role() != RaftCore::Role::kLeader) {
    return NotLeader(std::string(index.status().message()));
  }
  if (index.ok()) {
    LOG(INFO) << "tablet " << tablet_id_ << ": configuration changed at index " << *index << " to "
              << ConfigToString(node->config());
  }
  return index;
}

absl::Status TabletReplica::GetConsensusState(pb::ConsensusStatePB* out,
                                              RaftCore::Role* role) const {
  RaftNode* node = raft();
  if (node == nullptr) {
    return TabletNotRunningError(StrCat("tablet ", tablet_id_, " has not started"));
  }
  const auto [committed, committed_index] = node->committed_config();
  const RaftConfig current = node->config();
  out->set_current_term(node->term());
  out->set_leader_uuid(node->leader_id());
  const AddressBook empty_book("", nullptr);
  const AddressBook& book = ctx_.address_book != nullptr ? *ctx_.address_book : empty_book;
  RaftConfigToPB(committed, book, out->mutable_committed_config());
  out->set_committed_config_index(committed_index);
  if (!(current == committed)) RaftConfigToPB(current, book, out->mutable_pending_config());
  out->set_last_index(node->last_index());
  out->set_commit_index(node->commit_index());
  *role = node->role();
  return absl::OkStatus();
}

uint64_t TabletReplica::NewestConfigIndex() const {
  RaftNode* node = raft();
  const uint64_t from_log =
      node == nullptr ? 0 : std::max(node->config_index(), node->committed_config().second);
  return std::max(from_log, member_since_config_index_.load());
}

// ---- Tablet copy --------------------------------------------------------------------------

void TabletReplica::AnchorLog(uint64_t index) {
  absl::MutexLock l(&mu_);
  log_anchors_.insert(index);
}

void TabletReplica::ReleaseLogAnchor(uint64_t index) {
  absl::MutexLock l(&mu_);
  auto it = log_anchors_.find(index);
  if (it != log_anchors_.end()) log_anchors_.erase(it);
}

uint64_t TabletReplica::LogAnchorIndex() const {
  absl::MutexLock l(&mu_);
  return log_anchors_.empty() ? std::numeric_limits<uint64_t>::max() : *log_anchors_.begin();
}

void TabletReplica::StartSnapshotCopy(const PeerId& peer, SnapshotDoneCallback done) {
  // Called on the RaftNode worker: the node's published state lags by at most this round.
  RaftNode* node = raft();
  if (node == nullptr) return done(absl::UnavailableError("the replica is not running"), 0);
  // TabletCopyTrigger logs the call (throttled: the node retries a failing copy with backoff).
  // Until the copy is reported done, keep every entry above the durable index now: the copy ends
  // at a commit index at or above it, and the new replica catches up from there (the session's
  // own anchor is released when its download ends, before the replica has started).
  const uint64_t anchor = DurableIndex();
  AnchorLog(anchor);
  const uint64_t first = node->log().FirstIndex();
  copy_trigger_->Start(
      peer, node->term(), first, node->log().Term(first - 1).value_or(0), node->config_index(),
      [this, anchor, done = std::move(done)](const absl::Status& s, uint64_t index) {
        ReleaseLogAnchor(anchor);
        done(s, index);
      });
}

}  // namespace basalt
