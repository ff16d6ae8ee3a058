#pragma once

// GrpcTransport: the Transport (transport.h) between servers, over gRPC's ConsensusService
// (proto/consensus.proto; docs/raft.md "gRPC transport").
//
// One GrpcTransport per server multiplexes every Raft group hosted there. Sending: one gRPC
// channel and one sender thread per peer server; Send only queues the message on that peer's
// queue, and the sender ships everything queued as one UpdateConsensus RPC (with a deadline), so
// messages produced while an RPC is in flight share the next one. Heartbeats and heartbeat
// responses are not urgent: they wait up to the coalescing window for other traffic, so the
// heartbeats of all idle groups towards one peer share one RPC per window. Any other message
// (appends, votes, responses, TimeoutNow) is sent at once, taking the waiting heartbeats along.
// A slow or dead peer only fills its own bounded queue (overflow is dropped, which Raft
// tolerates); after a failed RPC its sender waits one window before trying again.
//
// Receiving: a ConsensusService implementation decodes and validates each batch
// (raft_message_pb.h) and hands every message to the handler registered for its group; messages
// of unknown groups are dropped. Replies (docs/raft.md "Replies"): one group's messages of a batch
// go to its batch handler, which may run the replica's round on the calling thread, and the call
// answers with what this server queued for the sender meanwhile (an append's acknowledgement), so
// the acknowledgement needs no RPC of its own; the sender delivers a reply like a request. The
// service is served by the transport's own gRPC server (Start with a bind address), or registered
// by the caller on a server it owns (service()).
//
// Lifecycle: construct -> AddPeer/Register (any time) -> Start() -> Send... -> Shutdown() (or the
// destructor), which stops the server and the senders; queued messages are dropped.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/log_throttle.h"
#include "consensus/transport.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace basalt {

class FrameServer;
struct GroupMessage;

namespace pb {
class UpdateConsensusRequestPB;
class UpdateConsensusResponsePB;
}  // namespace pb

struct GrpcTransportOptions {
  // This server's uuid: every RaftNode registered here has it as its peer id.
  PeerId server_id;
  // "host:port" to serve on, port 0 for an ephemeral port (see port()); empty: the caller
  // registers service() on its own gRPC server.
  std::string bind_address = "127.0.0.1:0";
  // Deadline of each UpdateConsensus RPC. <= 0: --consensus_rpc_timeout_ms.
  int rpc_timeout_ms = 0;
  // How long heartbeats wait for company. < 0: --consensus_heartbeat_coalesce_ms.
  int heartbeat_coalesce_ms = -1;
  // Whether a peer that names its frame RPC port in its answers is sent to over it (docs/
  // frame_rpc.md) instead of gRPC. <0: --consensus_frame_rpc.
  int use_frame_rpc = -1;
  // After a peer's frame port failed (cannot connect, broken connection, not the peer), how long
  // its batches go over gRPC only.
  absl::Duration frame_retry_after = absl::Seconds(30);
  // Whether incoming batches go to batch handlers and calls are answered with replies (see
  // above). <0: --consensus_replies.
  int use_replies = -1;
  // Target size of one RPC (at least one message is sent). 0: --consensus_rpc_max_batch_bytes.
  uint64_t max_batch_bytes = 0;
  // Bytes queued per peer beyond which new messages are dropped. 0:
  // --consensus_peer_queue_max_bytes.
  uint64_t max_queue_bytes = 0;
};

class GrpcTransport : public Transport {
 public:
  // Counters since construction.
  struct Stats {
    int64_t rpcs_sent = 0;                // UpdateConsensus calls made (including failed ones).
    int64_t frame_rpcs_sent = 0;          // ... of them over frame RPC.
    int64_t rpcs_failed = 0;              // ... that did not return OK.
    int64_t messages_sent = 0;            // Messages in those calls.
    int64_t messages_dropped = 0;         // Unknown peer, full queue, failed RPC, shutdown.
    int64_t rpcs_received = 0;            // UpdateConsensus calls served (valid or not).
    int64_t messages_received = 0;        // Messages delivered to a registered handler ...
    int64_t reply_messages_received = 0;  // ... of them from the answers to calls made.
    int64_t reply_messages_sent = 0;      // Messages sent in the answers to calls served.
  };

  explicit GrpcTransport(GrpcTransportOptions options);
  ~GrpcTransport() override;

  GrpcTransport(const GrpcTransport&) = delete;
  GrpcTransport& operator=(const GrpcTransport&) = delete;

  // Starts the gRPC server on options.bind_address (if not empty). UNAVAILABLE if it cannot
  // bind, FAILED_PRECONDITION if already started or shut down.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops serving (waiting briefly for calls in progress), cancels RPCs in flight, joins the
  // sender threads and drops what they still queue. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_, peers_mu_);
  // The bound port once started with a bind address; 0 otherwise.
  int port() const ABSL_LOCKS_EXCLUDED(mu_);
  // The ConsensusService implementation, to register on a gRPC server the caller owns (when
  // bind_address is empty). Owned by the transport.
  grpc::Service* service();

  // Serves UpdateConsensus on `server` too (ConsensusFrameMethodPB), with
  // UpdateConsensusFrameHandler(). REQUIRES: before server->Start(); `server` is shut down before
  // the transport.
  void RegisterFrameMethods(FrameServer* server);
  // The frame RPC handler of UpdateConsensus (HandleUpdate on the decoded batch), for an owner
  // that registers it itself (the tablet server, which records it in its RPC metrics).
  std::function<absl::Status(std::string_view, absl::Time, std::string*)>
  UpdateConsensusFrameHandler();
  // The port this server's frame RPC answers UpdateConsensus on, named in every answer so that
  // peers switch to it; 0 (the default): none.
  void SetFrameRpcPort(int port) { frame_rpc_port_.store(port); }

  // Sets (or changes) the address of peer server `peer`, "host:port". INVALID_ARGUMENT for an
  // empty id or address, or this server's own id; FAILED_PRECONDITION after Shutdown.
  absl::Status AddPeer(const PeerId& peer, const std::string& address)
      ABSL_LOCKS_EXCLUDED(peers_mu_);

  // ---- Transport ----
  // INVALID_ARGUMENT unless `peer` is this server's id; ALREADY_EXISTS if registered.
  absl::Status Register(const std::string& group_id, const PeerId& peer,
                        RaftMessageHandler handler) override ABSL_LOCKS_EXCLUDED(reg_mu_);
  absl::Status Register(const std::string& group_id, const PeerId& peer, RaftMessageHandler handler,
                        RaftBatchHandler batch_handler) override ABSL_LOCKS_EXCLUDED(reg_mu_);
  void Unregister(const std::string& group_id, const PeerId& peer) override
      ABSL_LOCKS_EXCLUDED(reg_mu_);
  void Send(const std::string& group_id, RaftMessage message) override
      ABSL_LOCKS_EXCLUDED(peers_mu_);
  void SendBatch(const std::string& group_id, std::vector<RaftMessage> messages) override
      ABSL_LOCKS_EXCLUDED(peers_mu_);
  // INVALID_ARGUMENT unless `peer` is this server's id; ALREADY_EXISTS if registered.
  absl::Status RegisterVoter(const std::string& group_id, const PeerId& peer,
                             RaftMessageHandler handler) override ABSL_LOCKS_EXCLUDED(reg_mu_);
  void UnregisterVoter(const std::string& group_id, const PeerId& peer) override
      ABSL_LOCKS_EXCLUDED(reg_mu_);

  Stats stats() const;
  const PeerId& server_id() const { return options_.server_id; }

  // Serves one UpdateConsensus: validates the batch and delivers its messages, consuming
  // `*request`; lists the groups it has no handler for in the response, and answers with the
  // messages queued for the sender if it accepts a reply. The errors of
  // proto/consensus.proto's ConsensusService. For an owner that implements ConsensusService
  // itself (the tablet server) instead of registering service().
  absl::Status HandleUpdate(pb::UpdateConsensusRequestPB* request,
                            pb::UpdateConsensusResponsePB* response) ABSL_LOCKS_EXCLUDED(reg_mu_);

 private:
  class Peer;
  class Service;

  // What Deliver did with a batch.
  struct Delivery {
    int64_t delivered = 0;                    // Messages handed to a handler.
    uint32_t unknown = 0;                     // Messages of groups without one ...
    std::vector<std::string> unknown_groups;  // ... and those groups, at most 1,000.
  };
  // Hands every message of `batch` to its group's handler; with `batched`, the messages of the
  // first group registered with a batch handler go to that handler last, in one call, and if
  // `replier` (the sender's Peer) is given, *reply gets what is queued for it after that call.
  Delivery Deliver(std::vector<GroupMessage> batch, bool batched, Peer* replier,
                   std::vector<GroupMessage>* reply) ABSL_LOCKS_EXCLUDED(reg_mu_);
  // Validates and delivers the reply `*reply` that peer `from` answered a call with.
  void ReceiveReply(const PeerId& from, pb::UpdateConsensusRequestPB* reply)
      ABSL_LOCKS_EXCLUDED(reg_mu_);
  std::shared_ptr<Peer> FindPeer(const PeerId& id) ABSL_LOCKS_EXCLUDED(peers_mu_);

  // Tells the local replica of each group in `group_ids` that server `peer` has none
  // (MessageType::kPeerMissing).
  void DeliverPeerMissing(const PeerId& peer, const std::vector<std::string>& group_ids)
      ABSL_LOCKS_EXCLUDED(reg_mu_);
  // Queues `messages` (all to `to`) on that peer's queue, or drops them.
  void Enqueue(const PeerId& to, std::vector<GroupMessage> messages) ABSL_LOCKS_EXCLUDED(peers_mu_);

  // Constant after construction.
  const GrpcTransportOptions options_;
  const std::unique_ptr<Service> service_;

  mutable absl::Mutex mu_;  // Lifecycle; never held with the others.
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
  int port_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;

  // Invariant: a handler runs only while reg_mu_ is held shared, so Unregister (exclusive)
  // returns only when no call of that handler is in progress.
  absl::Mutex reg_mu_;
  struct Receiver {
    RaftMessageHandler each;
    RaftBatchHandler batch;  // May be empty.
  };
  using HandlerMap = absl::flat_hash_map<std::string, Receiver>;
  // (Un)Register and (Un)RegisterVoter, on `map` (handlers_ or voters_); `what` names it.
  absl::Status RegisterIn(HandlerMap GrpcTransport::*map, const char* what,
                          const std::string& group_id, const PeerId& peer, Receiver receiver)
      ABSL_LOCKS_EXCLUDED(reg_mu_);
  void UnregisterIn(HandlerMap GrpcTransport::*map, const std::string& group_id, const PeerId& peer)
      ABSL_LOCKS_EXCLUDED(reg_mu_);

  HandlerMap handlers_ ABSL_GUARDED_BY(reg_mu_);
  // Vote-only receivers (RegisterVoter), for groups without a handler.
  HandlerMap voters_ ABSL_GUARDED_BY(reg_mu_);

  // Lock order: peers_mu_ before a Peer's own mutex.
  absl::Mutex peers_mu_;
  std::map<PeerId, std::shared_ptr<Peer>> peers_ ABSL_GUARDED_BY(peers_mu_);
  bool peers_closed_ ABSL_GUARDED_BY(peers_mu_) = false;

  // Atomic: set once the frame server has started, read by every HandleUpdate.
  std::atomic<int> frame_rpc_port_{0};

  // Counters: atomics because they are bumped on many threads and only read as statistics.
  struct Counters {
    std::atomic<int64_t> rpcs_sent{0};
    std::atomic<int64_t> frame_rpcs_sent{0};
    std::atomic<int64_t> rpcs_failed{0};
    std::atomic<int64_t> messages_sent{0};
    std::atomic<int64_t> messages_dropped{0};
    std::atomic<int64_t> rpcs_received{0};
    std::atomic<int64_t> messages_received{0};
    std::atomic<int64_t> reply_messages_sent{0};
    std::atomic<int64_t> reply_messages_received{0};
  };
  Counters counters_;
  // The warnings about rejected batches (thread-safe itself: they arrive on any RPC thread).
  LogThrottle rejected_log_;
};

}  // namespace basalt
