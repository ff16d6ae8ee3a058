#include "tserver/tablet_copy_trigger.h"

#include <chrono>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "absl/time/clock.h"
#include "common/strings.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/consensus.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "tserver/address_book.h"

DEFINE_int32(tablet_copy_timeout_sec, 1800,
             "How long a leader waits for a follower's server to finish a tablet copy it asked "
             "for (StartTabletCopy) before it counts the copy as failed and retries later.");

namespace basalt {

struct TabletCopyTrigger::Call {
  std::string peer;
  grpc::ClientContext context;
  std::thread thread;
  bool finished = false;  // Guarded by the trigger's mu_.
};

TabletCopyTrigger::TabletCopyTrigger(std::string server_uuid, std::string tablet_id,
                                     AddressBook* address_book)
    : server_uuid_(std::move(server_uuid)),
      tablet_id_(std::move(tablet_id)),
      address_book_(address_book) {}

TabletCopyTrigger::~TabletCopyTrigger() { Shutdown(); }

void TabletCopyTrigger::Start(const std::string& peer, uint64_t term, uint64_t log_first_index,
                              uint64_t log_first_prev_term, uint64_t config_index,
                              StateMachine::SnapshotDoneCallback done) {
  std::optional<HostPort> address;
  if (address_book_ != nullptr) address = address_book_->Get(peer);
  if (!address.has_value()) {
    return done(absl::NotFoundError(ToAbsl(StrCat("no known address for server ", peer))), 0);
  }
  pb::StartTabletCopyRequestPB request;
  request.set_dest_uuid(peer);
  request.set_tablet_id(tablet_id_);
  request.set_copy_peer_uuid(server_uuid_);
  HostPort self;
  if (address_book_ != nullptr) {
    if (std::optional<HostPort> mine = address_book_->Get(server_uuid_)) self = *mine;
  }
  request.mutable_copy_peer_address()->set_host(self.host);
  request.mutable_copy_peer_address()->set_port(self.port);
  request.set_caller_term(term);
  request.set_leader_log_first_index(log_first_index);
  request.set_leader_log_first_prev_term(log_first_prev_term);
  request.set_caller_config_index(config_index);
  auto call = std::make_shared<Call>();
  call->peer = peer;
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(std::max(FLAGS_tablet_copy_timeout_sec, 1)));
  const std::string target = address->ToString();
  absl::MutexLock l(&mu_);
  if (shut_down_) return done(absl::UnavailableError("the replica is shutting down"), 0);
  ReapLocked();
  // The first call to a peer is logged at once; the retries of a copy that keeps failing (the
  // RaftNode's backoff may bring one every few seconds) at most once a minute, with their count.
  if (const int64_t n = call_logs_[peer].Record(absl::Now()); n > 0) {
    LOG(INFO) << "tablet " << tablet_id_ << ": asking " << peer << " (" << target
              << ") to copy this replica" << LogThrottle::Times(n);
  }
  calls_.push_back(call);
  call->thread =
      std::thread([this, call, target, request = std::move(request), done = std::move(done)] {
        auto stub = pb::ConsensusService::NewStub(NewChannel(target));
        pb::StartTabletCopyResponsePB response;
        const absl::Status s =
            FromGrpcStatus(stub->StartTabletCopy(&call->context, request, &response));
        done(s.ok() ? s
                    : absl::Status(s.code(),
                                   StrCat("server ", call->peer, " (", target, "): ", s.message())),
             response.copied_last_index());
        absl::MutexLock l(&mu_);
        call->finished = true;
        // A later copy to the peer (it fell behind again) is logged at once.
        if (s.ok()) call_logs_.erase(call->peer);
      });
}

void TabletCopyTrigger::ReapLocked() {
  for (auto it = calls_.begin(); it != calls_.end();) {
    if (!(*it)->finished) {
      ++it;
      continue;
    }
    (*it)->thread.join();
    it = calls_.erase(it);
  }
}

void TabletCopyTrigger::Shutdown() {
  std::vector<std::shared_ptr<Call>> calls;
  {
    absl::MutexLock l(&mu_);
    shut_down_ = true;
    calls.swap(calls_);
  }
  for (const auto& call : calls) call->context.TryCancel();
  for (const auto& call : calls) call->thread.join();
}

}  // namespace basalt
