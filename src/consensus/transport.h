#pragma once

// Transport: how RaftNodes (raft_node.h) exchange RaftMessages. One Transport per server
// multiplexes every Raft group hosted there: receivers register per (group id, local peer id),
// and messages are addressed by (group id, RaftMessage::to). Peer ids are server uuids, so all
// messages to one `to` go to one server, which lets an implementation batch them (the gRPC
// transport coalesces heartbeats of many groups between two servers).
//
// Delivery is best effort, like a network: a message may be dropped, and Raft copes with loss.
// Send never blocks on the network or on the receiving node.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "consensus/raft_messages.h"

namespace basalt {

// Called with every message that arrives for a registered (group, peer). Must be quick and must
// not block (RaftNode only queues the message for its worker thread); it may run on any thread.
using RaftMessageHandler = std::function<void(RaftMessage message)>;

// Optional, registered with a RaftMessageHandler: takes the messages of one group that arrived
// together, in order, on the thread that read them, and may do the receiver's work on that thread
// before it returns (RaftNode runs its worker's round there when the worker is idle), so that the
// answer is queued by the time the incoming call returns: GrpcTransport sends it back in the
// call's reply. It may block on the disk (a WAL sync); it must not call Register or Unregister.
using RaftBatchHandler = std::function<void(std::vector<RaftMessage> messages)>;

// Thread-safe (every implementation).
class Transport {
 public:
  virtual ~Transport() = default;

  // Registers `handler` for messages of group `group_id` addressed to `peer`. ALREADY_EXISTS if
  // that pair is registered.
  virtual absl::Status Register(const std::string& group_id, const PeerId& peer,
                                RaftMessageHandler handler) = 0;
  // As above; a transport that delivers batches (GrpcTransport) hands some of them to
  // `batch_handler` instead of `handler`. The default ignores `batch_handler`.
  virtual absl::Status Register(const std::string& group_id, const PeerId& peer,
                                RaftMessageHandler handler, RaftBatchHandler batch_handler);
  // Removes the registration; once it returns the handler is not running and is never called
  // again. A no-op if not registered.
  virtual void Unregister(const std::string& group_id, const PeerId& peer) = 0;

  // Sends `message` of group `group_id` to `message.to`, asynchronously and unreliably: it may be
  // dropped (unknown destination, partition, overload) without notice.
  virtual void Send(const std::string& group_id, RaftMessage message) = 0;

  // Sends every message of one Ready (one group). The default sends them one by one;
  // implementations that batch per destination server override it.
  virtual void SendBatch(const std::string& group_id, std::vector<RaftMessage> messages);

  // Registers `handler` for the vote requests (kVote, kPreVote) of group `group_id` addressed to
  // `peer`, where no replica runs: a tombstone's vote (tserver/tombstone_voter.h). Every other
  // message of the group is treated as for a group this server does not host. A Register of the
  // same pair takes precedence. The default: UNIMPLEMENTED (such a transport has no tombstones).
  virtual absl::Status RegisterVoter(const std::string& group_id, const PeerId& peer,
                                     RaftMessageHandler handler);
  // As Unregister, for RegisterVoter.
  virtual void UnregisterVoter(const std::string& group_id, const PeerId& peer) {}
};

}  // namespace basalt
