#pragma once

// Heartbeater: the tablet server's periodic TSHeartbeat to every master (docs/cluster.md;
// proto/master.proto). The first report to a master is full (every replica), as is the one after
// the master asks (needs_full_tablet_report); later ones are incremental: the replicas whose
// reported fields changed since the last report the master acknowledged, and the ids of replicas
// removed since. Responses teach the server the other tablet servers' addresses, and the masters
// of the catalog group: a master added by `basalt master add` gets heartbeats (a thread of its
// own) without a restart. Masters are never dropped (a removed one just fails, with backoff).
//
// One thread per master, so a hung or paused master delays nobody's heartbeats but its own.
// After a failed heartbeat a thread waits longer before the next one (HeartbeatRetryDelay: the
// interval, doubled per failure in a row, capped, with jitter) and the first success goes back to
// the interval; TriggerNow() still wakes it at once. A master that stays unreachable costs one
// warning at once and then at most one a minute, each with the count of failures it stands for
// (LogThrottle), and one line when heartbeats succeed again.
//
// Lifecycle: construct -> Start() -> Shutdown() (joins the threads). Thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rpc/net_util.h"

namespace basalt {

class AddressBook;
class TsTabletManager;

namespace pb {
class TSHeartbeatResponsePB;
}  // namespace pb

struct HeartbeaterOptions {
  std::string server_uuid;
  HostPort rpc_address;        // Advertised.
  HostPort frame_rpc_address;  // Advertised; port 0: the server has no frame RPC port.
  std::vector<HostPort> masters;
  absl::Duration interval = absl::Seconds(1);
  // The longest backoff after failed heartbeats to one master (before jitter); an interval above
  // it wins.
  absl::Duration max_failure_backoff = absl::Seconds(10);
};

// The wait before the next heartbeat to a master after `consecutive_failures` failed ones in a
// row: the backoff b = interval * 2^(consecutive_failures - 1), at most max(max_backoff,
// interval), scaled by the jitter factor 0.75 + 0.5 * `unit_random` (+-25%). `unit_random` is a
// uniform draw from [0, 1) (the caller's random source, so tests fix it).
// REQUIRES: consecutive_failures >= 1; interval > 0; 0 <= unit_random < 1.
absl::Duration HeartbeatRetryDelay(absl::Duration interval, absl::Duration max_backoff,
                                   int consecutive_failures, double unit_random);

class Heartbeater {
 public:
  // `manager` and `book` are borrowed and outlive the heartbeater.
  Heartbeater(HeartbeaterOptions options, TsTabletManager* manager, AddressBook* book);
  ~Heartbeater();
  Heartbeater(const Heartbeater&) = delete;
  Heartbeater& operator=(const Heartbeater&) = delete;

  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);
  // Sends the next heartbeats now instead of at the end of the interval.
  void TriggerNow() ABSL_LOCKS_EXCLUDED(mu_);

  // Heartbeats a master acknowledged, over all masters.
  int64_t num_acknowledged() const { return acknowledged_.load(); }

 private:
  struct Master;

  // A Master for `address`, unless one exists (nullptr then).
  Master* AddMasterLocked(const HostPort& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts heartbeating the masters `response` names that this server does not know yet.
  void LearnMasters(const pb::TSHeartbeatResponsePB& response) ABSL_LOCKS_EXCLUDED(mu_);
  // The heartbeat thread of master `m`.
  void Loop(Master* m) ABSL_LOCKS_EXCLUDED(mu_);
  // One heartbeat to `m`; the RPC's status.
  absl::Status Beat(Master* m);
  // Counts the outcome `s` of a heartbeat to `m` and logs it if due; returns how long to wait
  // before the next one (barring a trigger).
  absl::Duration RecordOutcome(Master* m, const absl::Status& s);

  const HeartbeaterOptions options_;
  TsTabletManager* const manager_;
  AddressBook* const book_;
  const uint64_t seed_;  // Of the per-master retry jitter.

  absl::Mutex mu_;
  // Only grows; each Master is used by its own heartbeat thread only.
  std::vector<std::unique_ptr<Master>> masters_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> known_addresses_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Bumped by TriggerNow; each thread beats early when it changed since its last look.
  uint64_t trigger_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);  // Joined by Shutdown().
  // A statistic for tests; atomic because it is read from any thread.
  std::atomic<int64_t> acknowledged_{0};
};

}  // namespace basalt
