#pragma once

// TombstoneVoter: the vote of a tombstoned replica (docs/tablet_copy.md "Tombstones vote"). A
// tombstone is often still a voter of its group's configuration (its copy failed, or it was
// tombstoned to be replaced by a copy); without its vote, a group of three that lost its leader
// while one replica is a tombstone could not elect a new leader, and so could never copy the
// tombstone back. The voter answers the group's vote and pre-vote requests as a Raft follower
// with no leader would (RaftCore::HandleVoteRequest), comparing candidates' logs with the last
// op the tombstone's logs held (TabletReplicaPB.tombstone_last_logged), and persists its term and
// vote in the tombstone's consensus metadata before answering. Every other message of the group
// is left to the transport to report as for a group this server does not host (so the leader
// starts a tablet copy).
//
// Lifecycle: Start() registers with the transport; the destructor unregisters (no request is
// being handled once it returns). The owner stops the voter before anything else touches the
// tombstone's consensus metadata (a tablet copy, a deletion). Thread-safe.

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "consensus/raft_messages.h"
#include "consensus/raft_types.h"

namespace basalt {

class ConsensusMetadata;
class Env;
class Transport;

class TombstoneVoter {
 public:
  // Registers the voter of `group_id` for this server (`self`) with `transport`
  // (Transport::RegisterVoter: UNIMPLEMENTED on a transport without voters). The metadata at
  // `cmeta_path` is read at the first request. `env` and `transport` must outlive the voter.
  static absl::StatusOr<std::unique_ptr<TombstoneVoter>> Start(Env* env, Transport* transport,
                                                               std::string group_id, PeerId self,
                                                               std::string cmeta_path,
                                                               OpId last_logged);
  ~TombstoneVoter();
  TombstoneVoter(const TombstoneVoter&) = delete;
  TombstoneVoter& operator=(const TombstoneVoter&) = delete;

  // The answer to vote or pre-vote `request` of a replica whose hard state is `*hs` and whose log
  // ends at `last_logged`, with `*hs` updated as it must be persisted before the answer is sent
  // (a newer term, a vote). nullopt: no answer (a vote request of an older term, which Raft
  // ignores). The answer's `from` is left empty.
  static std::optional<RaftMessage> Decide(const RaftMessage& request, const OpId& last_logged,
                                           HardState* hs);

 private:
  TombstoneVoter(Env* env, Transport* transport, std::string group_id, PeerId self,
                 std::string cmeta_path, OpId last_logged);
  void Handle(RaftMessage request) ABSL_LOCKS_EXCLUDED(mu_);

  Env* const env_;
  Transport* const transport_;
  const std::string group_id_;
  const PeerId self_;
  const std::string cmeta_path_;
  const OpId last_logged_;

  absl::Mutex mu_;  // Serializes requests: a vote is persisted before the next one is decided.
  std::unique_ptr<ConsensusMetadata> cmeta_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
