#pragma once

// Heartbeater: the tablet server's periodic TSHeartbeat to every master (docs/cluster.md;
// proto/master.proto). The first report to a master is full (every replica), as is the one after
// the master asks (needs_full_tablet_report); later ones are incremental: the replicas whose
// reported fields changed since the last report the master acknowledged, and the ids of replicas
// removed since. Responses teach the server the other tablet servers' addresses.
//
// One thread per master, so a hung or paused master delays nobody's heartbeats but its own.
//
// Lifecycle: construct -> Start() -> Shutdown() (joins the threads). Thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
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

struct HeartbeaterOptions {
  std::string server_uuid;
  HostPort rpc_address;  // Advertised.
  std::vector<HostPort> masters;
  absl::Duration interval = absl::Seconds(1);
};

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

  // The heartbeat thread of master `m`.
  void Loop(Master* m) ABSL_LOCKS_EXCLUDED(mu_);
  // One heartbeat to `m`; the RPC's status.
  absl::Status Beat(Master* m);

  const HeartbeaterOptions options_;
  TsTabletManager* const manager_;
  AddressBook* const book_;
  // Constant after construction; each Master is used by its own heartbeat thread only.
  std::vector<std::unique_ptr<Master>> masters_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Bumped by TriggerNow; each thread beats early when it changed since its last look.
  uint64_t trigger_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;  // Started by Start(), joined by Shutdown().
  // A statistic for tests; atomic because it is read from any thread.
  std::atomic<int64_t> acknowledged_{0};
};

}  // namespace basalt
