#pragma once

// MaintenanceManager: the background threads that keep tablets healthy by running, one at a time
// per worker, the most useful maintenance op registered by any tablet: MemRowSet and DeltaMemStore
// flushes, rowset compactions, delta compactions, ancient history GC (DESIGN.md section 4).
//
// Each op describes what running it now would be worth (MaintenanceOpStats). A scheduling pass
// asks every idle op for its stats and picks one by these rules, in order:
//
//  1. Memory pressure (the MemoryBudget is at or above its pressure mark): the runnable op that
//     anchors the most memory (ram_anchored_bytes > 0), ties broken by WAL retained.
//  2. WAL retention: if some runnable op retains more than --log_target_retention_bytes of WAL,
//     the op retaining the most, ties broken by memory anchored.
//  3. Discretionary work, where two candidates compete: the op with the most data_retained_bytes
//     (history GC, frees disk) and the op with the best perf score above a small threshold
//     (perf_improvement > min_perf_improvement; ranked by
//     perf_improvement * (1 + workload_score)). When both exist they alternate, so neither
//     starves the other; otherwise the one that exists runs.
//  Nothing else runs: time-based urgency (e.g. a MemRowSet older than --flush_threshold_secs) is
//  expressed by the op itself through a perf_improvement that grows with age.
//
// Threads: one scheduler thread runs a pass every --maintenance_manager_polling_interval_ms, at
// once when an op completes, and when the MemoryBudget reports the pressure mark crossed;
// --maintenance_manager_num_threads workers run the chosen ops' Perform(). An op is never
// scheduled while an instance of it runs. A failed Perform() is logged and recorded; the op is
// not reconsidered for a backoff that doubles with each consecutive failure.
//
// Lifecycle: construct, Start(), RegisterOp()/UnregisterOp() at any time, Shutdown() (also run by
// the destructor). Tests may skip the scheduler thread (Options::start_scheduler_thread = false)
// and drive passes with RunSchedulingPassForTests().
//
// Contract with ops: UpdateStats(), Prepare() and Perform() of one op never run concurrently with
// each other; UpdateStats() and Prepare() are called by the scheduling pass with no manager lock
// held, Perform() on a worker thread. Different ops run concurrently.

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace basalt {

class MaintenanceManager;
class MemoryBudget;

// What running an op now would be worth. Filled by MaintenanceOp::UpdateStats from zero values.
struct MaintenanceOpStats {
  // False when the op has nothing to do or cannot run now; the other fields are then ignored.
  bool runnable = false;
  // Memory a successful run releases (e.g. the MemRowSet's bytes for a flush).
  int64_t ram_anchored_bytes = 0;
  // WAL bytes that cannot be garbage-collected until the op runs.
  int64_t logs_retained_bytes = 0;
  // Disk bytes a run frees (ancient history GC).
  int64_t data_retained_bytes = 0;
  // Dimensionless benefit for future reads and writes: 0 = nothing to gain; about 1 = clearly
  // worth an IO-heavy run now (e.g. a MemRowSet at its size threshold). May grow with urgency.
  double perf_improvement = 0;
  // How busy the op's tablet is (>= 0; 0 = idle); it scales perf_improvement so that hot
  // tablets are maintained first.
  double workload_score = 0;
};

// One kind of maintenance work of one tablet (e.g. "FlushMRS(tablet-1234)"). Owned by its tablet;
// registered with one manager at a time. REQUIRES: unregistered before it is destroyed (checked).
// Thread safety: see the contract in the file comment.
class MaintenanceOp {
 public:
  explicit MaintenanceOp(std::string name) : name_(std::move(name)) {}
  virtual ~MaintenanceOp();
  MaintenanceOp(const MaintenanceOp&) = delete;
  MaintenanceOp& operator=(const MaintenanceOp&) = delete;

  const std::string& name() const { return name_; }

  // Fills `stats` (zeroed by the caller). Must be quick: it runs for every op on every pass.
  virtual void UpdateStats(MaintenanceOpStats* stats) = 0;
  // Called after the op is chosen, before it is handed to a worker; may take what Perform needs
  // (e.g. freeze the MemRowSet). Returns false when the op can no longer run; it is then not
  // performed and the pass picks another op.
  virtual bool Prepare() = 0;
  // Does the work. Called exactly once after each Prepare() that returned true, even if the
  // manager is shutting down. An error is logged and recorded; the manager carries on.
  virtual absl::Status Perform() = 0;

 private:
  friend class MaintenanceManager;
  const std::string name_;
  // Set by the manager that registered this op (under its lock); the atomic lets the destructor
  // check it without that lock.
  std::atomic<MaintenanceManager*> manager_{nullptr};
  int64_t registration_id_ = -1;  // Written and read under the manager's mu_.
};

// One run of an op, for status pages.
struct MaintenanceOpRun {
  std::string name;
  std::string reason;  // Why the scheduler chose it ("memory pressure: ...").
  int64_t start_wall_micros = 0;
  absl::Duration duration;  // So far, for a running op.
  absl::Status status;      // OK for a running op.
};

// A registered op and the stats its last UpdateStats() returned.
struct MaintenanceOpState {
  std::string name;
  bool running = false;
  bool unregistering = false;  // UnregisterOp() is waiting for it.
  MaintenanceOpStats last_stats;
  int consecutive_failures = 0;
};

struct MaintenanceManagerStatus {
  bool shutting_down = false;
  std::vector<MaintenanceOpState> ops;      // Registration order.
  std::vector<MaintenanceOpRun> running;    // Start order.
  std::vector<MaintenanceOpRun> completed;  // Newest first, at most history_size.
};

// See the file comment. Thread-safe.
class MaintenanceManager {
 public:
  struct Options {
    int num_threads = 1;
    absl::Duration polling_interval = absl::Milliseconds(250);
    int history_size = 8;
    int64_t log_target_retention_bytes = int64_t{1} << 30;
    // Rule 3 only considers ops whose perf_improvement is strictly above this.
    double min_perf_improvement = 1e-4;
    // After a failed Perform(), the op waits failure_backoff * 2^(failures - 1), capped at
    // max_failure_backoff, before it is considered again.
    absl::Duration failure_backoff = absl::Seconds(1);
    absl::Duration max_failure_backoff = absl::Seconds(60);
    // Under pressure when it is; never when null. Not owned; must outlive the manager.
    MemoryBudget* memory_budget = nullptr;
    // For durations, start times and backoffs; null means Clock::Default(). Not owned.
    Clock* clock = nullptr;
    // False in tests that drive passes with RunSchedulingPassForTests().
    bool start_scheduler_thread = true;

    // Options from --maintenance_manager_num_threads, --maintenance_manager_polling_interval_ms,
    // --maintenance_manager_history_size and --log_target_retention_bytes; the process budget.
    static Options FromFlags();
  };

  // REQUIRES: options.num_threads >= 1, history_size >= 0, polling_interval > 0.
  explicit MaintenanceManager(Options options);
  ~MaintenanceManager();
  MaintenanceManager(const MaintenanceManager&) = delete;
  MaintenanceManager& operator=(const MaintenanceManager&) = delete;

  // Starts the workers and (unless disabled) the scheduler. REQUIRES: called once.
  void Start() ABSL_LOCKS_EXCLUDED(mu_, wake_mu_);
  // Stops scheduling, lets running and handed-over ops finish, joins every thread. Registered ops
  // stay registered (their owners unregister them). Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(pass_mu_, mu_, wake_mu_);

  // Registers `op` (borrowed: it must stay alive until UnregisterOp returns).
  // REQUIRES: `op` is not registered with any manager.
  void RegisterOp(MaintenanceOp* op) ABSL_LOCKS_EXCLUDED(mu_);
  // Unregisters `op`, first waiting for a running instance of it (and a pass scoring it) to
  // finish. REQUIRES: `op` is registered here; not called from op's own methods, nor while
  // holding a lock they take.
  void UnregisterOp(MaintenanceOp* op) ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes the scheduler for a pass now (e.g. a tablet knows it has urgent work).
  void WakeUp() ABSL_LOCKS_EXCLUDED(wake_mu_);

  MaintenanceManagerStatus GetStatus() const ABSL_LOCKS_EXCLUDED(mu_);

  // Runs one scheduling pass on the calling thread: scores the ops, chooses one, prepares it and
  // hands it to a worker. Returns the op handed over, or null when none was (no free worker,
  // nothing worth running, shutting down).
  MaintenanceOp* RunSchedulingPassForTests() ABSL_LOCKS_EXCLUDED(pass_mu_, mu_);
  // Blocks until no op is running or handed over.
  void WaitForIdleForTests() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct OpEntry {
    MaintenanceOp* op;
    bool running = false;     // From reservation before Prepare() until Perform() returns.
    bool performing = false;  // A worker is in Perform().
    bool scoring = false;     // A pass holds it between its UpdateStats() and the choice.
    bool unregistering = false;
    MaintenanceOpStats last_stats;
    int consecutive_failures = 0;
    int64_t retry_after_micros = 0;  // Monotonic; 0 = now.
    MaintenanceOpRun run;            // The current run while running.
    int64_t run_start_micros = 0;    // Monotonic start of Perform().
    std::thread::id performing_thread;
  };

  void SchedulerLoop() ABSL_LOCKS_EXCLUDED(pass_mu_, mu_, wake_mu_);
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);

  MaintenanceOp* RunSchedulingPass() ABSL_LOCKS_EXCLUDED(pass_mu_, mu_);
  // Pins and returns the ops a pass may consider; empty when no worker is free.
  std::vector<MaintenanceOp*> PinCandidates(bool* under_pressure) ABSL_LOCKS_EXCLUDED(mu_);
  // Unpins them, keeping the stats they reported (parallel vectors) for GetStatus().
  void UnpinCandidates(const std::vector<MaintenanceOp*>& candidates,
                       const std::vector<MaintenanceOpStats>& stats) ABSL_LOCKS_EXCLUDED(mu_);
  // Reserves, prepares and hands over the chosen op. Returns false if Prepare() declined.
  bool PrepareAndHandOver(MaintenanceOp* op, std::string reason) ABSL_LOCKS_EXCLUDED(mu_);
  void FinishRun(MaintenanceOp* op, const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  void RecordCompletedLocked(MaintenanceOpRun run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  OpEntry& EntryLocked(const MaintenanceOp* op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const Options options_;
  Clock* const clock_;

  // Lock order: pass_mu_ -> mu_ -> wake_mu_. The budget calls the pressure listener (which takes
  // only wake_mu_) under its own listener lock. No lock here is held while an op's method runs.
  //
  // Serializes scheduling passes, so UpdateStats()/Prepare() run on one thread at a time.
  absl::Mutex pass_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Set by the discretionary rule when it last chose GC over a perf op (alternation state).
  bool last_discretionary_was_gc_ ABSL_GUARDED_BY(pass_mu_) = false;

  mutable absl::Mutex mu_ ABSL_ACQUIRED_BEFORE(wake_mu_);
  absl::CondVar op_cv_;            // Signalled when an op stops running or scoring (UnregisterOp).
  absl::CondVar work_cv_;          // Signalled when pending_ grows or on shutdown (workers).
  mutable absl::CondVar idle_cv_;  // Signalled when running_count_ drops.
  std::map<int64_t, OpEntry> ops_ ABSL_GUARDED_BY(mu_);  // By registration id (= order).
  int64_t next_registration_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<MaintenanceOp*> pending_ ABSL_GUARDED_BY(mu_);      // Prepared, awaiting a worker.
  int running_count_ ABSL_GUARDED_BY(mu_) = 0;                   // Entries with running == true.
  std::deque<MaintenanceOpRun> completed_ ABSL_GUARDED_BY(mu_);  // Newest first.
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool workers_stop_ ABSL_GUARDED_BY(mu_) = false;  // Set once no pass can hand over any more.
  std::vector<std::thread> workers_;                // Written by Start() and Shutdown() only.
  std::thread scheduler_;                           // Likewise.
  int pressure_listener_id_ = -1;                   // Likewise.

  // The scheduler's sleep: a leaf lock so that the budget's listener can take it from the write
  // path without risk of deadlock.
  absl::Mutex wake_mu_;
  absl::CondVar wake_cv_;
  bool wake_requested_ ABSL_GUARDED_BY(wake_mu_) = false;
  bool scheduler_stop_ ABSL_GUARDED_BY(wake_mu_) = false;
};

}  // namespace basalt
