#include "consensus/grpc_transport.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <thread>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/thread_name.h"
#include "consensus/raft_message_pb.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/consensus.pb.h"
#include "rpc/frame_channel.h"
#include "rpc/frame_server.h"
#include "rpc/net_util.h"

DEFINE_int32(consensus_rpc_timeout_ms, 2000,
             "Deadline of each UpdateConsensus RPC carrying Raft messages to a peer server.");
DEFINE_int32(consensus_heartbeat_coalesce_ms, 100,
             "How long a Raft heartbeat (or heartbeat response) waits for other messages to the "
             "same server, so that the heartbeats of all groups share one RPC.");
DEFINE_uint64(consensus_rpc_max_batch_bytes, 4 << 20,
              "Target size of one UpdateConsensus RPC; a single larger message still goes alone.");
DEFINE_bool(consensus_frame_rpc, true,
            "Whether Raft messages go to a peer server over its frame RPC port (docs/frame_rpc.md) "
            "once its answers name one, instead of gRPC.");
DEFINE_bool(consensus_replies, true,
            "Whether a server answers a Raft batch with the messages it queued for the sender "
            "meanwhile (running the receiving replica's round on the call's thread when its worker "
            "is idle), so that an append's acknowledgement needs no RPC of its own.");
DEFINE_uint64(consensus_peer_queue_max_bytes, 64 << 20,
              "Bytes of Raft messages queued for one peer server beyond which new ones are "
              "dropped.");

namespace basalt {

namespace {

bool IsUrgent(const RaftMessage& m) {
  return m.type != MessageType::kHeartbeat && m.type != MessageType::kHeartbeatResponse;
}

absl::Status FromGrpc(const grpc::Status& s) {
  // absl::StatusCode and grpc::StatusCode share their numbers.
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// How many distinct unknown groups one response lists (a bound on the response's size).
constexpr uint32_t kMaxUnknownGroupsListed = 1000;

}  // namespace

// ---- Receiving ------------------------------------------------------------------------------

class GrpcTransport::Service final : public pb::ConsensusService::Service {
 public:
  explicit Service(GrpcTransport* transport) : transport_(transport) {}

  grpc::Status UpdateConsensus(grpc::ServerContext* context,
                               const pb::UpdateConsensusRequestPB* request,
                               pb::UpdateConsensusResponsePB* response) override {
    // The request belongs to this call and is discarded after it: HandleUpdate moves the entries'
    // data out of it instead of copying every entry.
    return ToGrpc(
        transport_->HandleUpdate(const_cast<pb::UpdateConsensusRequestPB*>(request), response));
  }

 private:
  GrpcTransport* const transport_;
};

absl::Status GrpcTransport::HandleUpdate(pb::UpdateConsensusRequestPB* request,
                                         pb::UpdateConsensusResponsePB* response) {
  counters_.rpcs_received.fetch_add(1, std::memory_order_relaxed);
  if (request->to_server() != options_.server_id) {
    return absl::FailedPreconditionError(StrCat("consensus batch for server ", request->to_server(),
                                                " reached server ", options_.server_id));
  }
  absl::StatusOr<std::vector<GroupMessage>> batch = BatchFromPB(request);
  if (!batch.ok()) {
    // A peer that keeps sending bad batches costs a line a minute, with the count.
    if (const int64_t n = rejected_log_.Record(absl::Now()); n > 0) {
      LOG(WARNING) << "rejecting a consensus batch" << LogThrottle::Times(n) << ": "
                   << batch.status();
    }
    return batch.status();
  }
  // What the batch handler's round queues for the sender (its acknowledgements) waits for the
  // reply instead of waking the sender thread.
  const bool replies = options_.use_replies > 0;
  std::shared_ptr<Peer> replier;
  if (replies && request->accepts_reply()) replier = FindPeer(request->from_server());
  std::vector<GroupMessage> reply;
  Delivery d = Deliver(std::move(*batch), replies, replier.get(), &reply);
  if (!reply.empty()) {
    counters_.reply_messages_sent.fetch_add(static_cast<int64_t>(reply.size()),
                                            std::memory_order_relaxed);
    BatchToPB(options_.server_id, request->from_server(), std::move(reply),
              response->mutable_reply());
  }
  for (std::string& g : d.unknown_groups) response->add_unknown_group_ids(std::move(g));
  response->set_num_unknown_group_messages(d.unknown);
  response->set_frame_rpc_port(static_cast<uint32_t>(frame_rpc_port_.load()));
  return absl::OkStatus();
}

std::shared_ptr<GrpcTransport::Peer> GrpcTransport::FindPeer(const PeerId& id) {
  absl::ReaderMutexLock l(&peers_mu_);
  auto it = peers_.find(id);
  return it == peers_.end() ? nullptr : it->second;
}

std::function<absl::Status(std::string_view, absl::Time, std::string*)>
GrpcTransport::UpdateConsensusFrameHandler() {
  return [this](std::string_view bytes, absl::Time, std::string* out) -> absl::Status {
    pb::UpdateConsensusRequestPB request;
    if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return absl::InvalidArgumentError("request: not a valid message");
    }
    pb::UpdateConsensusResponsePB response;
    BASALT_RETURN_IF_ERROR(HandleUpdate(&request, &response));
    if (!response.SerializeToString(out)) {
      return absl::InternalError("response: cannot be serialized");
    }
    return absl::OkStatus();
  };
}

void GrpcTransport::RegisterFrameMethods(FrameServer* server) {
  server->Register(pb::FRAME_UPDATE_CONSENSUS, UpdateConsensusFrameHandler());
}

void GrpcTransport::DeliverPeerMissing(const PeerId& peer,
                                       const std::vector<std::string>& group_ids) {
  absl::ReaderMutexLock l(&reg_mu_);
  for (const std::string& group : group_ids) {
    auto it = handlers_.find(group);
    if (it == handlers_.end()) continue;
    RaftMessage m;
    m.type = MessageType::kPeerMissing;
    m.from = peer;
    m.to = options_.server_id;
    it->second.each(std::move(m));
  }
}

// ---- Sending --------------------------------------------------------------------------------

// The queue and sender thread for one peer server.
// Thread-safe: the transport calls Enqueue and Shutdown; the sender thread runs Run.
class GrpcTransport::Peer {
 public:
  Peer(GrpcTransport* transport, PeerId id, const std::string& address)
      : transport_(transport),
        id_(std::move(id)),
        address_(address),
        stub_(pb::ConsensusService::NewStub(NewChannel(address))) {
    thread_ = std::thread([this] {
      SetCurrentThreadName("raft-send");
      Run();
    });
  }
  ~Peer() { Shutdown(); }

  const std::string& address() const { return address_; }

  // Queues `messages`, dropping those that do not fit. Returns how many were dropped.
  int64_t Enqueue(std::vector<GroupMessage> messages) ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels the RPC in flight, joins the thread, drops the queue. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);
  // Around a batch handler's call for `group`, on a call from this peer that accepts a reply:
  // in between, the group's messages queued for the peer (what the round on that thread
  // produces) do not wake the sender; EndReply takes the queue, up to one batch, for the reply
  // (the sender sends the rest). Messages of other groups are sent as usual, so a round stuck
  // on a slow disk delays only its own group's.
  void BeginReply(const std::string& group) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<GroupMessage> EndReply(const std::string& group) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for the next batch to send; false once shutting down.
  bool NextBatch(std::vector<GroupMessage>* batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Moves up to max_batch_bytes (at least one message) from the queue to `batch`.
  void TakeBatchLocked(std::vector<GroupMessage>* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends one batch with a deadline; returns the RPC's status.
  absl::Status SendRpc(std::vector<GroupMessage> batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Sends `request` over frame_ into *response. std::nullopt: not sent (no frame channel, or its
  // port could not be connected: the channel is dropped until an answer names a port again).
  std::optional<absl::Status> SendOverFrame(const pb::UpdateConsensusRequestPB& request,
                                            absl::Time deadline,
                                            pb::UpdateConsensusResponsePB* response)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Notes the frame port an answer named (0: none).
  void LearnFramePort(uint32_t port);
  absl::Time DueLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::max(urgent_ ? absl::InfinitePast() : flush_deadline_, not_before_);
  }
  // Whether every queued message waits for a reply (see BeginReply).
  bool AllHeldLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.size() == held_messages_;
  }
  bool IsHeldLocked(const std::string& group) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::find(held_groups_.begin(), held_groups_.end(), group) != held_groups_.end();
  }
  void RecountHeldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WakeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (stopping_) return true;
    if (AllHeldLocked()) return false;
    return wait_deadline_ == absl::InfiniteFuture() || absl::Now() >= DueLocked();
  }

  // Constant after construction.
  GrpcTransport* const transport_;
  const PeerId id_;
  const std::string address_;
  const std::unique_ptr<pb::ConsensusService::Stub> stub_;

  absl::Mutex mu_;
  std::deque<GroupMessage> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool urgent_ ABSL_GUARDED_BY(mu_) = false;  // The queue holds a message to send at once.
  // When the oldest queued heartbeat must go; not before not_before_ (after a failed RPC).
  absl::Time flush_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time not_before_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int consecutive_failures_ ABSL_GUARDED_BY(mu_) = 0;
  // The groups of the calls from the peer between BeginReply and EndReply (one entry per call),
  // and how many queued messages belong to them. Invariant: held_messages_ counts the messages
  // of queue_ whose group is in held_groups_ (Enqueue adds, RecountHeldLocked after any other
  // change; the queue is a batch or so, held_groups_ one entry or none).
  std::vector<std::string> held_groups_ ABSL_GUARDED_BY(mu_);
  size_t held_messages_ ABSL_GUARDED_BY(mu_) = 0;
  // What the sender waits for: InfiniteFuture while the queue was empty.
  absl::Time wait_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;  // Owned by the sender.
  FrameCancel* frame_in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;    // Owned by the sender.
  // The peer's frame RPC channel, once an answer named its port; only the sender thread uses it
  // (and frame_retry_after_: after a failure, answers naming the port are ignored until then).
  std::unique_ptr<FrameChannel> frame_;
  absl::Time frame_retry_after_ = absl::InfinitePast();

  std::thread thread_;  // Joined by Shutdown.
};

// ---- Delivering --------------------------------------------------------------------------

GrpcTransport::Delivery GrpcTransport::Deliver(std::vector<GroupMessage> batch, bool batched,
                                               Peer* replier, std::vector<GroupMessage>* reply) {
  Delivery d;
  const Receiver* batch_receiver = nullptr;
  std::string batch_group;
  std::vector<RaftMessage> batch_messages;
  absl::ReaderMutexLock l(&reg_mu_);
  for (GroupMessage& m : batch) {
    const Receiver* receiver = nullptr;
    if (auto it = handlers_.find(m.group_id); it != handlers_.end()) {
      receiver = &it->second;
    } else if (m.message.type == MessageType::kVote || m.message.type == MessageType::kPreVote) {
      // A tombstone's vote; its other messages are for a group not hosted here.
      if (auto v = voters_.find(m.group_id); v != voters_.end()) receiver = &v->second;
    }
    if (receiver == nullptr) {
      // Listed once per group; a batch holds a few messages of each.
      if (d.unknown++ < kMaxUnknownGroupsListed &&
          std::find(d.unknown_groups.begin(), d.unknown_groups.end(), m.group_id) ==
              d.unknown_groups.end()) {
        d.unknown_groups.push_back(m.group_id);
      }
      continue;
    }
    ++d.delivered;
    // One group's messages wait for the end, so that the other groups' workers start first and
    // run alongside the round this thread may run for it.
    if (batched && receiver->batch && (batch_receiver == nullptr || batch_receiver == receiver)) {
      if (batch_receiver == nullptr) batch_group = m.group_id;
      batch_receiver = receiver;
      batch_messages.push_back(std::move(m.message));
      continue;
    }
    receiver->each(std::move(m.message));
  }
  // Still under reg_mu_: Unregister waits for this call too.
  if (batch_receiver != nullptr) {
    if (replier != nullptr) replier->BeginReply(batch_group);
    batch_receiver->batch(std::move(batch_messages));
    if (replier != nullptr) *reply = replier->EndReply(batch_group);
  }
  counters_.messages_received.fetch_add(d.delivered, std::memory_order_relaxed);
  return d;
}

void GrpcTransport::ReceiveReply(const PeerId& from, pb::UpdateConsensusRequestPB* reply) {
  absl::StatusOr<std::vector<GroupMessage>> batch =
      reply->from_server() != from || reply->to_server() != options_.server_id
          ? absl::InvalidArgumentError(StrCat("a reply from ", reply->from_server(), " to ",
                                              reply->to_server(), " answered a call to ", from))
          : BatchFromPB(reply);
  if (!batch.ok()) {
    if (const int64_t n = rejected_log_.Record(absl::Now()); n > 0) {
      LOG(WARNING) << "rejecting a consensus reply" << LogThrottle::Times(n) << ": "
                   << batch.status();
    }
    return;
  }
  const Delivery d = Deliver(std::move(*batch), options_.use_replies > 0, nullptr, nullptr);
  counters_.reply_messages_received.fetch_add(d.delivered, std::memory_order_relaxed);
}

int64_t GrpcTransport::Peer::Enqueue(std::vector<GroupMessage> messages) {
  const GrpcTransportOptions& o = transport_->options_;
  int64_t dropped = 0;
  absl::MutexLock l(&mu_);
  if (stopping_) return static_cast<int64_t>(messages.size());
  for (GroupMessage& m : messages) {
    const size_t size = EstimateEncodedSize(m);
    if (queued_bytes_ + size > o.max_queue_bytes && !queue_.empty()) {
      ++dropped;
      continue;
    }
    if (IsUrgent(m.message)) {
      urgent_ = true;
    } else if (queue_.empty()) {
      flush_deadline_ = absl::Now() + absl::Milliseconds(o.heartbeat_coalesce_ms);
    }
    queued_bytes_ += size;
    if (!held_groups_.empty() && IsHeldLocked(m.group_id)) ++held_messages_;
    queue_.push_back(std::move(m));
  }
  return dropped;
}

void GrpcTransport::Peer::BeginReply(const std::string& group) {
  absl::MutexLock l(&mu_);
  held_groups_.push_back(group);
  RecountHeldLocked();
}

void GrpcTransport::Peer::RecountHeldLocked() {
  held_messages_ = 0;
  if (held_groups_.empty()) return;
  for (const GroupMessage& m : queue_) held_messages_ += IsHeldLocked(m.group_id) ? 1 : 0;
}

std::vector<GroupMessage> GrpcTransport::Peer::EndReply(const std::string& group) {
  std::vector<GroupMessage> batch;
  absl::MutexLock l(&mu_);
  held_groups_.erase(std::find(held_groups_.begin(), held_groups_.end(), group));
  if (!stopping_ && !queue_.empty()) TakeBatchLocked(&batch);
  RecountHeldLocked();
  return batch;
}

bool GrpcTransport::Peer::NextBatch(std::vector<GroupMessage>* batch) {
  absl::MutexLock l(&mu_);
  while (true) {
    if (stopping_) return false;
    // Messages held for a reply leave with it (EndReply), or with the next batch that other
    // messages need anyway.
    if (!AllHeldLocked() && absl::Now() >= DueLocked()) break;
    wait_deadline_ = AllHeldLocked() ? absl::InfiniteFuture() : DueLocked();
    mu_.AwaitWithDeadline(absl::Condition(this, &Peer::WakeLocked), wait_deadline_);
  }
  TakeBatchLocked(batch);
  return true;
}

void GrpcTransport::Peer::TakeBatchLocked(std::vector<GroupMessage>* batch) {
  uint64_t bytes = 0;
  const uint64_t limit = transport_->options_.max_batch_bytes;
  while (!queue_.empty() && (batch->empty() || bytes < limit)) {
    const size_t size = EstimateEncodedSize(queue_.front());
    if (!batch->empty() && bytes + size > limit) break;
    bytes += size;
    batch->push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  queued_bytes_ -= bytes;
  // What is left over (the batch was full) goes out right after this one.
  urgent_ = !queue_.empty();
  if (queue_.empty()) flush_deadline_ = absl::InfiniteFuture();
  RecountHeldLocked();
}

std::optional<absl::Status> GrpcTransport::Peer::SendOverFrame(
    const pb::UpdateConsensusRequestPB& request, absl::Time deadline,
    pb::UpdateConsensusResponsePB* response) {
  if (frame_ == nullptr) return std::nullopt;
  std::string bytes;
  if (!request.SerializeToString(&bytes)) return absl::InternalError("cannot serialize the batch");
  FrameCancel cancel;
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::CancelledError("transport shutting down");
    frame_in_flight_ = &cancel;
  }
  std::string answer;
  absl::Status s = frame_->Call(pb::FRAME_UPDATE_CONSENSUS, bytes, deadline, &answer, &cancel);
  {
    absl::MutexLock l(&mu_);
    frame_in_flight_ = nullptr;
  }
  const bool not_sent = s.GetPayload(kFrameConnectFailedUrl).has_value();
  if (s.ok() && !response->ParseFromString(answer)) {
    s = absl::DataLossError("the peer's UpdateConsensus answer does not parse");
  }
  if (!s.ok() && !absl::IsDeadlineExceeded(s) && !absl::IsCancelled(s)) {
    // The port cannot be connected (a firewall, the peer restarted elsewhere), the connection
    // broke, or what answers is not the peer (another server took the port: FAILED_PRECONDITION
    // for a misaddressed batch; another program: DATA_LOSS). gRPC carries the batches for
    // frame_retry_after; then the port a gRPC answer names is tried again. One line per switch.
    const absl::Duration retry = transport_->options_.frame_retry_after;
    LOG(WARNING) << "consensus peer " << id_ << ": frame RPC port " << frame_->address()
                 << " failed, using gRPC for " << absl::FormatDuration(retry) << ": " << s;
    frame_.reset();
    frame_retry_after_ = absl::Now() + retry;
  }
  if (not_sent) return std::nullopt;  // gRPC carries this batch.
  transport_->counters_.frame_rpcs_sent.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void GrpcTransport::Peer::LearnFramePort(uint32_t port) {
  if (port == 0 || port > 65535) {
    frame_.reset();
    return;
  }
  if (frame_ != nullptr || !transport_->options_.use_frame_rpc) return;
  if (absl::Now() < frame_retry_after_) return;
  absl::StatusOr<HostPort> hp = ParseHostPort(address_, 0);
  if (!hp.ok()) return;
  hp->port = static_cast<uint16_t>(port);
  frame_ = std::make_unique<FrameChannel>(hp->ToString());
}

absl::Status GrpcTransport::Peer::SendRpc(std::vector<GroupMessage> batch) {
  pb::UpdateConsensusRequestPB request;
  BatchToPB(transport_->options_.server_id, id_, std::move(batch), &request);
  request.set_accepts_reply(true);
  pb::UpdateConsensusResponsePB response;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(transport_->options_.rpc_timeout_ms);
  absl::Status s;
  if (std::optional<absl::Status> sent = SendOverFrame(request, deadline, &response)) {
    s = *sent;
  } else {
    grpc::ClientContext context;
    // Its own time: a frame port that could not be connected may have used the first deadline.
    context.set_deadline(absl::ToChronoTime(
        std::max(deadline, absl::Now() + absl::Milliseconds(transport_->options_.rpc_timeout_ms))));
    {
      absl::MutexLock l(&mu_);
      if (stopping_) return absl::CancelledError("transport shutting down");
      in_flight_ = &context;
    }
    s = FromGrpc(stub_->UpdateConsensus(&context, request, &response));
    absl::MutexLock l(&mu_);
    in_flight_ = nullptr;
  }
  if (s.ok()) LearnFramePort(response.frame_rpc_port());
  if (s.ok() && response.has_reply()) transport_->ReceiveReply(id_, response.mutable_reply());
  if (s.ok() && response.unknown_group_ids_size() > 0) {
    transport_->DeliverPeerMissing(
        id_, {response.unknown_group_ids().begin(), response.unknown_group_ids().end()});
  }
  absl::MutexLock l(&mu_);
  if (s.ok()) {
    consecutive_failures_ = 0;
  } else {
    // Do not spin on a peer that is down: its next batch waits one coalescing window, doubling
    // with each further failure (with +-25% jitter) up to 1 s, so a dead peer costs a few RPCs a
    // second whatever the number of groups, and one that comes back is reached within a second.
    const int shift = std::min(consecutive_failures_++, 4);
    const absl::Duration window =
        absl::Milliseconds(std::max(transport_->options_.heartbeat_coalesce_ms, 1));
    const double jitter =
        0.75 + 0.5 * static_cast<double>(absl::GetCurrentTimeNanos() % 1000) / 1000;
    not_before_ = absl::Now() + std::min(window * (1 << shift), absl::Seconds(1)) * jitter;
  }
  return s;
}

void GrpcTransport::Peer::Run() {
  Counters& c = transport_->counters_;
  std::vector<GroupMessage> batch;
  while (NextBatch(&batch)) {
    const int64_t n = static_cast<int64_t>(batch.size());
    const absl::Status s = SendRpc(std::move(batch));
    c.rpcs_sent.fetch_add(1, std::memory_order_relaxed);
    if (s.ok()) {
      c.messages_sent.fetch_add(n, std::memory_order_relaxed);
    } else {
      c.rpcs_failed.fetch_add(1, std::memory_order_relaxed);
      c.messages_dropped.fetch_add(n, std::memory_order_relaxed);
      VLOG(1) << "UpdateConsensus to " << id_ << " at " << address_ << ": " << s;
    }
    batch.clear();
  }
}

void GrpcTransport::Peer::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    if (in_flight_ != nullptr) in_flight_->TryCancel();
    if (frame_in_flight_ != nullptr) frame_in_flight_->Cancel();
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock l(&mu_);
  transport_->counters_.messages_dropped.fetch_add(static_cast<int64_t>(queue_.size()),
                                                   std::memory_order_relaxed);
  queue_.clear();
  queued_bytes_ = 0;
  RecountHeldLocked();
}

// ---- GrpcTransport --------------------------------------------------------------------------

namespace {

GrpcTransportOptions WithDefaults(GrpcTransportOptions o) {
  if (o.rpc_timeout_ms <= 0) o.rpc_timeout_ms = std::max(FLAGS_consensus_rpc_timeout_ms, 1);
  if (o.heartbeat_coalesce_ms < 0) {
    o.heartbeat_coalesce_ms = std::max(FLAGS_consensus_heartbeat_coalesce_ms, 0);
  }
  if (o.max_batch_bytes == 0)
    o.max_batch_bytes = std::max<uint64_t>(FLAGS_consensus_rpc_max_batch_bytes, 1);
  if (o.max_queue_bytes == 0)
    o.max_queue_bytes = std::max<uint64_t>(FLAGS_consensus_peer_queue_max_bytes, 1);
  if (o.use_frame_rpc < 0) o.use_frame_rpc = FLAGS_consensus_frame_rpc ? 1 : 0;
  if (o.use_replies < 0) o.use_replies = FLAGS_consensus_replies ? 1 : 0;
  return o;
}

}  // namespace

GrpcTransport::GrpcTransport(GrpcTransportOptions options)
    : options_(WithDefaults(std::move(options))), service_(std::make_unique<Service>(this)) {}

GrpcTransport::~GrpcTransport() { Shutdown(); }

grpc::Service* GrpcTransport::service() { return service_.get(); }

absl::Status GrpcTransport::Start() {
  absl::MutexLock l(&mu_);
  if (started_ || shut_down_) {
    return absl::FailedPreconditionError("consensus transport already started");
  }
  started_ = true;
  if (options_.bind_address.empty()) return absl::OkStatus();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.bind_address, grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  ConfigureServerBuilder(&builder);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(
        StrCat("consensus transport cannot serve on ", options_.bind_address));
  }
  return absl::OkStatus();
}

void GrpcTransport::Shutdown() {
  std::unique_ptr<grpc::Server> server;
  {
    absl::MutexLock l(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
    server = std::move(server_);
  }
  if (server != nullptr) {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    server->Wait();
  }
  std::map<PeerId, std::shared_ptr<Peer>> peers;
  {
    absl::MutexLock l(&peers_mu_);
    peers_closed_ = true;
    peers.swap(peers_);
  }
  for (auto& [id, peer] : peers) peer->Shutdown();
}

int GrpcTransport::port() const {
  absl::MutexLock l(&mu_);
  return port_;
}

absl::Status GrpcTransport::AddPeer(const PeerId& peer, const std::string& address) {
  if (peer.empty() || address.empty()) {
    return absl::InvalidArgumentError("a peer needs an id and an address");
  }
  if (peer == options_.server_id) {
    return absl::InvalidArgumentError(StrCat("server ", peer, " cannot be its own peer"));
  }
  std::shared_ptr<Peer> old;
  {
    absl::MutexLock l(&peers_mu_);
    if (peers_closed_) return absl::FailedPreconditionError("consensus transport shut down");
    std::shared_ptr<Peer>& slot = peers_[peer];
    if (slot != nullptr && slot->address() == address) return absl::OkStatus();
    old = std::move(slot);
    slot = std::make_shared<Peer>(this, peer, address);
  }
  if (old != nullptr) old->Shutdown();
  return absl::OkStatus();
}

absl::Status GrpcTransport::RegisterIn(HandlerMap GrpcTransport::*map, const char* what,
                                       const std::string& group_id, const PeerId& peer,
                                       Receiver receiver) {
  if (peer != options_.server_id) {
    return absl::InvalidArgumentError(StrCat(what, " ", peer, " of group ", group_id,
                                             " cannot register on server ", options_.server_id));
  }
  absl::MutexLock l(&reg_mu_);
  if (!(this->*map).emplace(group_id, std::move(receiver)).second) {
    return absl::AlreadyExistsError(
        StrCat("a ", what, " for group ", group_id, " is already registered"));
  }
  return absl::OkStatus();
}

void GrpcTransport::UnregisterIn(HandlerMap GrpcTransport::*map, const std::string& group_id,
                                 const PeerId& peer) {
  if (peer != options_.server_id) return;
  absl::MutexLock l(&reg_mu_);
  (this->*map).erase(group_id);
}

absl::Status GrpcTransport::Register(const std::string& group_id, const PeerId& peer,
                                     RaftMessageHandler handler) {
  return Register(group_id, peer, std::move(handler), nullptr);
}

absl::Status GrpcTransport::Register(const std::string& group_id, const PeerId& peer,
                                     RaftMessageHandler handler, RaftBatchHandler batch_handler) {
  return RegisterIn(&GrpcTransport::handlers_, "replica", group_id, peer,
                    Receiver{std::move(handler), std::move(batch_handler)});
}

void GrpcTransport::Unregister(const std::string& group_id, const PeerId& peer) {
  UnregisterIn(&GrpcTransport::handlers_, group_id, peer);
}

absl::Status GrpcTransport::RegisterVoter(const std::string& group_id, const PeerId& peer,
                                          RaftMessageHandler handler) {
  return RegisterIn(&GrpcTransport::voters_, "voter", group_id, peer,
                    Receiver{std::move(handler), nullptr});
}

void GrpcTransport::UnregisterVoter(const std::string& group_id, const PeerId& peer) {
  UnregisterIn(&GrpcTransport::voters_, group_id, peer);
}

void GrpcTransport::Enqueue(const PeerId& to, std::vector<GroupMessage> messages) {
  std::shared_ptr<Peer> peer = FindPeer(to);
  const int64_t dropped =
      peer == nullptr ? static_cast<int64_t>(messages.size()) : peer->Enqueue(std::move(messages));
  if (dropped > 0) counters_.messages_dropped.fetch_add(dropped, std::memory_order_relaxed);
}

void GrpcTransport::Send(const std::string& group_id, RaftMessage message) {
  std::vector<GroupMessage> one;
  PeerId to = message.to;
  one.push_back(GroupMessage{group_id, std::move(message)});
  Enqueue(to, std::move(one));
}

void GrpcTransport::SendBatch(const std::string& group_id, std::vector<RaftMessage> messages) {
  // One queue operation per destination.
  std::map<PeerId, std::vector<GroupMessage>> by_peer;
  for (RaftMessage& m : messages) {
    std::vector<GroupMessage>& v = by_peer[m.to];
    v.push_back(GroupMessage{group_id, std::move(m)});
  }
  for (auto& [to, v] : by_peer) Enqueue(to, std::move(v));
}

GrpcTransport::Stats GrpcTransport::stats() const {
  Stats s;
  s.rpcs_sent = counters_.rpcs_sent.load(std::memory_order_relaxed);
  s.frame_rpcs_sent = counters_.frame_rpcs_sent.load(std::memory_order_relaxed);
  s.rpcs_failed = counters_.rpcs_failed.load(std::memory_order_relaxed);
  s.messages_sent = counters_.messages_sent.load(std::memory_order_relaxed);
  s.messages_dropped = counters_.messages_dropped.load(std::memory_order_relaxed);
  s.rpcs_received = counters_.rpcs_received.load(std::memory_order_relaxed);
  s.messages_received = counters_.messages_received.load(std::memory_order_relaxed);
  s.reply_messages_sent = counters_.reply_messages_sent.load(std::memory_order_relaxed);
  s.reply_messages_received = counters_.reply_messages_received.load(std::memory_order_relaxed);
  return s;
}

}  // namespace basalt
