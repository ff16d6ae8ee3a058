#pragma once

// TabletCopyTrigger: the leader's side of bringing a follower in by tablet copy. When the Raft
// leader finds that a follower's server holds no replica of the tablet, or that the follower
// needs entries the leader's log no longer has (RaftCore's snapshot state), it asks that server
// to copy the tablet from the leader: ConsensusService.StartTabletCopy, which answers once the
// copy is installed and the new replica started (docs/tablet_copy.md). Each call runs on a thread
// of its own so the Raft worker never waits; the RaftNode retries failures with a growing delay.
// Each call to a peer is logged ("asking ... to copy"), the retries of a copy that keeps failing
// at most once a minute with their count (LogThrottle), until a copy to that peer succeeds.
//
// Lifecycle: construct -> Start()* -> Shutdown() (cancels calls in flight, joins the threads).
// Thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/log_throttle.h"
#include "consensus/state_machine.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace basalt {

class AddressBook;

class TabletCopyTrigger {
 public:
  // `address_book` is borrowed (may be null: every Start then fails) and outlives the trigger;
  // it must know this server's own address (the peer copies from it).
  TabletCopyTrigger(std::string server_uuid, std::string tablet_id, AddressBook* address_book);
  ~TabletCopyTrigger();
  TabletCopyTrigger(const TabletCopyTrigger&) = delete;
  TabletCopyTrigger& operator=(const TabletCopyTrigger&) = delete;

  // Asks server `peer` to copy this tablet from this server. `term` is the leader's term and
  // `log_first_index` the first entry its log still holds (a replica whose log ends before it
  // cannot catch up and is replaced) and `log_first_prev_term` the term of the entry before it;
  // `config_index` the index of its newest configuration, which names `peer`. `done` runs once, on
  // the call's thread (or at once, with UNAVAILABLE after Shutdown or NOT_FOUND for a peer without
  // a known address), with OK and the last log index the new replica holds, or the error.
  void Start(const std::string& peer, uint64_t term, uint64_t log_first_index,
             uint64_t log_first_prev_term, uint64_t config_index,
             StateMachine::SnapshotDoneCallback done) ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Call;
  // Joins the threads of calls that have finished.
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string server_uuid_;
  const std::string tablet_id_;
  AddressBook* const address_book_;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
  // The "asking ... to copy" lines, by peer; an entry lives from a peer's first call until a
  // call to it succeeds. Lock order: mu_ before a LogThrottle's own lock.
  std::map<std::string, LogThrottle> call_logs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
