#include "tserver/tombstone_voter.h"

#include <utility>

#include <glog/logging.h>

#include "common/status_macros.h"
#include "consensus/consensus_metadata.h"
#include "consensus/transport.h"

namespace basalt {

std::optional<RaftMessage> TombstoneVoter::Decide(const RaftMessage& request,
                                                  const OpId& last_logged, HardState* hs) {
  const bool pre_vote = request.type == MessageType::kPreVote;
  if (!pre_vote && request.type != MessageType::kVote) return std::nullopt;
  RaftMessage resp;
  resp.type = pre_vote ? MessageType::kPreVoteResponse : MessageType::kVoteResponse;
  resp.to = request.from;
  if (request.term < hs->term) {
    // As RaftCore: a stale pre-vote learns our term; a stale vote is ignored.
    if (!pre_vote) return std::nullopt;
    resp.term = hs->term;
    resp.reject = true;
    return resp;
  }
  if (!pre_vote && request.term > hs->term) {
    hs->term = request.term;
    hs->vote.clear();
  }
  // A tombstone follows no leader, so only its own vote restrains it.
  const bool can_vote =
      hs->vote == request.from || hs->vote.empty() || (pre_vote && request.term > hs->term);
  const bool up_to_date = OpId{request.log_term, request.index} >= last_logged;
  if (can_vote && up_to_date) {
    resp.term = request.term;
    if (!pre_vote) hs->vote = request.from;
  } else {
    resp.term = hs->term;
    resp.reject = true;
  }
  return resp;
}

TombstoneVoter::TombstoneVoter(Env* env, Transport* transport, std::string group_id, PeerId self,
                               std::string cmeta_path, OpId last_logged)
    : env_(env),
      transport_(transport),
      group_id_(std::move(group_id)),
      self_(std::move(self)),
      cmeta_path_(std::move(cmeta_path)),
      last_logged_(last_logged) {}

absl::StatusOr<std::unique_ptr<TombstoneVoter>> TombstoneVoter::Start(
    Env* env, Transport* transport, std::string group_id, PeerId self, std::string cmeta_path,
    OpId last_logged) {
  std::unique_ptr<TombstoneVoter> v(new TombstoneVoter(
      env, transport, std::move(group_id), std::move(self), std::move(cmeta_path), last_logged));
  TombstoneVoter* raw = v.get();
  BASALT_RETURN_IF_ERROR(transport->RegisterVoter(
      raw->group_id_, raw->self_, [raw](RaftMessage m) { raw->Handle(std::move(m)); }));
  return v;
}

TombstoneVoter::~TombstoneVoter() { transport_->UnregisterVoter(group_id_, self_); }

void TombstoneVoter::Handle(RaftMessage request) {
  if (request.to != self_ || request.from.empty() || request.from == self_) return;
  std::optional<RaftMessage> resp;
  {
    absl::MutexLock l(&mu_);
    if (cmeta_ == nullptr) {
      absl::StatusOr<std::unique_ptr<ConsensusMetadata>> m =
          ConsensusMetadata::Load(env_, cmeta_path_);
      if (!m.ok()) {
        LOG_EVERY_N(WARNING, 100) << "tombstone of " << group_id_ << " cannot vote: " << m.status();
        return;
      }
      cmeta_ = *std::move(m);
    }
    HardState hs = cmeta_->hard_state();
    resp = Decide(request, last_logged_, &hs);
    if (!resp.has_value()) return;
    if (hs.term != cmeta_->current_term() || hs.vote != cmeta_->voted_for()) {
      // Durable before the answer leaves (Raft: never two votes in one term).
      cmeta_->set_hard_state(hs);
      absl::Status s = cmeta_->Flush();
      if (!s.ok()) {
        LOG(WARNING) << "tombstone of " << group_id_ << ": persisting term " << hs.term
                     << " and vote '" << hs.vote << "' failed, not answering: " << s;
        cmeta_.reset();  // Reloaded from what is on disk at the next request.
        return;
      }
      if (!resp->reject && !hs.vote.empty() && request.type == MessageType::kVote) {
        LOG(INFO) << "tombstone of " << group_id_ << " voted for " << hs.vote << " in term "
                  << hs.term;
      }
    }
  }
  resp->from = self_;
  transport_->Send(group_id_, std::move(*resp));
}

}  // namespace basalt
