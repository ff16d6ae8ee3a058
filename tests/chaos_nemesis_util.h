#pragma once

// The chaos suite's nemesis (tests/chaos_test.cc): a thread that, at random intervals drawn from
// its seed, injects one fault into a running ExternalMiniCluster and heals it after a random time:
//   - kill -9 a tablet server or a master, restarted later;
//   - pause one (SIGSTOP), resumed later (SIGCONT);
//   - lose a quorum: kill -9 two tablet servers at once (with replication 3, some tablets lose
//     their majority), both restarted later;
//   - alter the table (add, rename and drop a column; rename the table), through its own client;
//   - move a replica of a random tablet to a server without one (`basalt tablet change_config
//     move_replica`);
//   - cut the network (clusters made with network_namespaces): isolate a tablet server or a
//     master from every other daemon, or cut one tablet server's traffic to the others one way.
// At most two tablet servers and one master are faulted at a time, plus one alter or move in
// flight. Every action goes into a log with its time since Run() began.
//
// Run() drives the cluster on the calling thread, which must outlive the daemons it restarts
// (external_daemon.h: they die with the thread that started them; gtest's main thread does).
// Alters and moves run on a background thread that starts no daemon. Not thread-safe, except
// action_log() and table_name().

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/random.h"
#include "testing/external_mini_cluster.h"

namespace basalt::chaos {

struct NemesisOptions {
  uint64_t seed = 0;
  // The table the writers write (altered, renamed and its replicas moved).
  std::string table_name;
  // A directory for the CLI's output files.
  std::string scratch_dir;
  // Time between the starts of two actions: uniform in [min, max].
  absl::Duration min_interval = absl::Milliseconds(500);
  absl::Duration max_interval = absl::Seconds(4);
  // How long a fault lasts: uniform in [min, max].
  absl::Duration min_fault = absl::Seconds(1);
  absl::Duration max_fault = absl::Seconds(8);
  bool alters = true;
  bool moves = true;
  // Network cuts; REQUIRES the cluster was made with network_namespaces.
  bool partitions = false;
};

class Nemesis {
 public:
  Nemesis(ExternalMiniCluster* cluster, NemesisOptions options);
  ~Nemesis();

  // Injects faults for `duration`, then heals everything: resumes paused daemons, restarts
  // killed ones, removes network cuts and waits for the alter or move in flight. Returns the
  // first error of healing or of an action that had to succeed (a restart, a cut); alters and
  // moves may fail (the cluster was faulty), which is only logged. Call once.
  absl::Status Run(absl::Duration duration);

  std::vector<std::string> action_log() const ABSL_LOCKS_EXCLUDED(mu_);
  // The table's name now (after renames).
  std::string table_name() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class FaultKind { kKilled, kPaused };
  struct Fault {
    ExternalDaemon* daemon;
    FaultKind kind;
    absl::Time heal_at;
  };

  // Picks and starts one action that the faults in effect allow.
  void Act();
  void HealDue(absl::Time now);
  absl::Status HealFault(const Fault& f);
  void Log(const std::string& what) ABSL_LOCKS_EXCLUDED(mu_);
  void Fail(const absl::Status& s) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Duration FaultLength();
  bool Faulted(const ExternalDaemon* d) const;
  // Running, unfaulted daemons of one kind.
  std::vector<ExternalDaemon*> Healthy(bool masters) const;
  int FaultedTabletServers() const;

  // Actions.
  void Kill(ExternalDaemon* d);
  void Pause(ExternalDaemon* d);
  void LoseQuorum();
  void Cut();
  void StartAlter();
  void StartMove();
  // Runs `action` on the background thread (one at a time).
  void InBackground(std::function<void()> action);
  // Sets table_name_ to the name the table (by id) has now, asking the master until `timeout`.
  absl::Status ResolveTableName(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  void JoinBackground();

  ExternalMiniCluster* const cluster_;
  const NemesisOptions options_;
  Random* rnd_ = nullptr;  // Run()'s.
  absl::Time start_;

  // The thread in Run() only.
  std::vector<Fault> faults_;
  absl::Time cut_heal_at_ = absl::InfiniteFuture();
  std::vector<const ExternalDaemon*> cut_daemons_;
  int alter_step_ = 0;
  std::string table_id_;  // Set before the first action; constant after.
  std::shared_ptr<client::Client> client_;
  std::thread background_;
  std::atomic<bool> background_busy_{false};

  mutable absl::Mutex mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
  std::string table_name_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::chaos
