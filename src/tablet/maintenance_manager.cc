#include "tablet/maintenance_manager.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "tablet/memory_budget.h"

DEFINE_int32(maintenance_manager_num_threads, 1,
             "Sets the number of threads that run maintenance ops (flushes, compactions). On "
             "spinning disks it should not exceed the number of data disks.");
DEFINE_validator(maintenance_manager_num_threads,
                 [](const char*, int32_t value) { return value >= 1; });
DEFINE_int32(maintenance_manager_polling_interval_ms, 250,
             "Sets how often the maintenance scheduler looks for an op to run when it is not "
             "woken earlier by a finished op or by memory pressure, in milliseconds.");
DEFINE_validator(maintenance_manager_polling_interval_ms,
                 [](const char*, int32_t value) { return value >= 1; });
DEFINE_int32(maintenance_manager_history_size, 8,
             "Sets how many completed maintenance ops are kept for status pages.");
DEFINE_validator(maintenance_manager_history_size,
                 [](const char*, int32_t value) { return value >= 0; });
DEFINE_int64(log_target_retention_bytes, int64_t{1} << 30,
             "Sets the WAL size a tablet's unflushed data may keep from being garbage-collected "
             "before the maintenance manager gives priority to the op that releases the most of "
             "it, in bytes. It bounds the WAL replayed at startup.");
DEFINE_validator(log_target_retention_bytes, [](const char*, int64_t value) { return value >= 0; });

namespace basalt {
namespace {

enum class ChoiceKind { kNone, kMemory, kLog, kGc, kPerf };

struct Choice {
  int index = -1;
  ChoiceKind kind = ChoiceKind::kNone;
  std::string reason;
};

struct Policy {
  bool under_pressure;
  int64_t log_target_retention_bytes;
  double min_perf_improvement;
  bool prefer_gc;  // When both a GC op and a perf op qualify (alternation).
};

double PerfScore(const MaintenanceOpStats& s) {
  return s.perf_improvement * (1 + std::max(0.0, s.workload_score));
}

// Returns the index of the runnable op with the greatest key (first registered on ties), or -1.
// `key` returns nullopt for an op the rule does not apply to.
template <typename KeyFn>
int ArgMax(const std::vector<MaintenanceOpStats>& stats, KeyFn key) {
  int best = -1;
  std::pair<double, double> best_key;
  for (size_t i = 0; i < stats.size(); ++i) {
    if (!stats[i].runnable) continue;
    std::optional<std::pair<double, double>> k = key(stats[i]);
    if (k && (best < 0 || *k > best_key)) {
      best = static_cast<int>(i);
      best_key = *k;
    }
  }
  return best;
}

using Key = std::optional<std::pair<double, double>>;

// The scheduling rules of the header comment, as a pure function of the ops' stats.
Choice ChooseOp(const std::vector<MaintenanceOpStats>& stats, const Policy& policy) {
  if (policy.under_pressure) {
    const int i = ArgMax(stats, [](const MaintenanceOpStats& s) -> Key {
      if (s.ram_anchored_bytes <= 0) return std::nullopt;
      return std::pair<double, double>(s.ram_anchored_bytes, s.logs_retained_bytes);
    });
    if (i >= 0) {
      return {i, ChoiceKind::kMemory,
              absl::StrFormat("memory pressure: frees %d bytes", stats[i].ram_anchored_bytes)};
    }
    VLOG(1) << "Under memory pressure, but no runnable op anchors memory";
  }
  const int log = ArgMax(stats, [&](const MaintenanceOpStats& s) -> Key {
    if (s.logs_retained_bytes <= policy.log_target_retention_bytes) return std::nullopt;
    return std::pair<double, double>(s.logs_retained_bytes, s.ram_anchored_bytes);
  });
  if (log >= 0) {
    return {log, ChoiceKind::kLog,
            absl::StrFormat("WAL retention: releases %d bytes", stats[log].logs_retained_bytes)};
  }
  const int gc = ArgMax(stats, [](const MaintenanceOpStats& s) -> Key {
    if (s.data_retained_bytes <= 0) return std::nullopt;
    return std::pair<double, double>(s.data_retained_bytes, PerfScore(s));
  });
  const int perf = ArgMax(stats, [&](const MaintenanceOpStats& s) -> Key {
    if (!(s.perf_improvement > policy.min_perf_improvement)) return std::nullopt;
    return std::pair<double, double>(PerfScore(s), s.ram_anchored_bytes);
  });
  if (gc >= 0 && (perf < 0 || policy.prefer_gc)) {
    return {gc, ChoiceKind::kGc,
            absl::StrFormat("history GC: frees %d bytes on disk", stats[gc].data_retained_bytes)};
  }
  if (perf >= 0) {
    return {perf, ChoiceKind::kPerf, absl::StrFormat("perf score %.4f", PerfScore(stats[perf]))};
  }
  return {};
}

absl::Duration FailureBackoff(const MaintenanceManager::Options& options, int failures) {
  absl::Duration backoff = options.failure_backoff;
  for (int i = 1; i < failures && backoff < options.max_failure_backoff; ++i) backoff *= 2;
  return std::min(backoff, options.max_failure_backoff);
}

}  // namespace

MaintenanceOp::~MaintenanceOp() {
  CHECK(manager_.load() == nullptr)
      << "maintenance op " << name_ << " destroyed while still registered";
}

MaintenanceManager::Options MaintenanceManager::Options::FromFlags() {
  Options options;
  options.num_threads = FLAGS_maintenance_manager_num_threads;
  options.polling_interval = absl::Milliseconds(FLAGS_maintenance_manager_polling_interval_ms);
  options.history_size = FLAGS_maintenance_manager_history_size;
  options.log_target_retention_bytes = FLAGS_log_target_retention_bytes;
  options.memory_budget = MemoryBudget::Process();
  return options;
}

MaintenanceManager::MaintenanceManager(Options options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Default()) {
  CHECK_GE(options_.num_threads, 1);
  CHECK_GE(options_.history_size, 0);
  CHECK(options_.polling_interval > absl::ZeroDuration());
}

MaintenanceManager::~MaintenanceManager() {
  Shutdown();
  absl::MutexLock l(&mu_);
  CHECK(ops_.empty()) << ops_.size() << " maintenance ops still registered, the first "
                      << ops_.begin()->second.op->name();
}

void MaintenanceManager::Start() {
  {
    absl::MutexLock l(&mu_);
    CHECK(!started_) << "MaintenanceManager::Start called twice";
    started_ = true;
    if (shutting_down_) return;
  }
  for (int i = 0; i < options_.num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  if (options_.memory_budget != nullptr) {
    pressure_listener_id_ = options_.memory_budget->AddPressureListener([this] { WakeUp(); });
  }
  if (options_.start_scheduler_thread) scheduler_ = std::thread([this] { SchedulerLoop(); });
}

void MaintenanceManager::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
  }
  if (pressure_listener_id_ >= 0) {
    options_.memory_budget->RemovePressureListener(pressure_listener_id_);
    pressure_listener_id_ = -1;
  }
  {
    absl::MutexLock l(&wake_mu_);
    scheduler_stop_ = true;
    wake_cv_.Signal();
  }
  if (scheduler_.joinable()) scheduler_.join();
  // Wait out a pass in flight (RunSchedulingPassForTests); later passes see shutting_down_.
  { absl::MutexLock pass_lock(&pass_mu_); }
  {
    absl::MutexLock l(&mu_);
    workers_stop_ = true;
    work_cv_.SignalAll();
  }
  // Workers perform every op already handed over (Prepare() took what Perform() releases), then
  // exit.
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void MaintenanceManager::RegisterOp(MaintenanceOp* op) {
  CHECK(op != nullptr);
  absl::MutexLock l(&mu_);
  CHECK(op->manager_.load() == nullptr) << "maintenance op " << op->name() << " is registered";
  const int64_t id = next_registration_id_++;
  ops_.emplace(id, OpEntry{.op = op});
  op->registration_id_ = id;
  op->manager_.store(this);
  VLOG(1) << "Registered maintenance op " << op->name();
}

void MaintenanceManager::UnregisterOp(MaintenanceOp* op) {
  absl::MutexLock l(&mu_);
  CHECK(op->manager_.load() == this) << "maintenance op " << op->name() << " is not registered";
  OpEntry& entry = EntryLocked(op);  // std::map: the reference survives other insertions.
  CHECK(!(entry.performing && entry.performing_thread == std::this_thread::get_id()))
      << "maintenance op " << op->name() << " unregistered from its own Perform()";
  entry.unregistering = true;
  if (entry.running) VLOG(1) << "Waiting for maintenance op " << op->name() << " to finish";
  while (entry.running || entry.scoring) op_cv_.Wait(&mu_);
  ops_.erase(op->registration_id_);
  op->registration_id_ = -1;
  op->manager_.store(nullptr);
  VLOG(1) << "Unregistered maintenance op " << op->name();
}

void MaintenanceManager::WakeUp() {
  absl::MutexLock l(&wake_mu_);
  wake_requested_ = true;
  wake_cv_.Signal();
}

MaintenanceManager::OpEntry& MaintenanceManager::EntryLocked(const MaintenanceOp* op) {
  auto it = ops_.find(op->registration_id_);
  CHECK(it != ops_.end() && it->second.op == op) << "unknown maintenance op " << op->name();
  return it->second;
}

// ---- Scheduling ---------------------------------------------------------------------------------

void MaintenanceManager::SchedulerLoop() {
  while (true) {
    {
      absl::MutexLock l(&wake_mu_);
      if (!wake_requested_ && !scheduler_stop_) {
        wake_cv_.WaitWithTimeout(&wake_mu_, options_.polling_interval);
      }
      if (scheduler_stop_) return;
      wake_requested_ = false;
    }
    // Fill the free workers; stop at the first pass that hands nothing over.
    while (RunSchedulingPass() != nullptr) {
    }
  }
}

MaintenanceOp* MaintenanceManager::RunSchedulingPassForTests() { return RunSchedulingPass(); }

MaintenanceOp* MaintenanceManager::RunSchedulingPass() {
  absl::MutexLock pass_lock(&pass_mu_);
  bool under_pressure = false;
  const std::vector<MaintenanceOp*> candidates = PinCandidates(&under_pressure);
  if (candidates.empty()) return nullptr;
  std::vector<MaintenanceOpStats> stats(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) candidates[i]->UpdateStats(&stats[i]);
  std::vector<MaintenanceOpStats> choosable = stats;
  MaintenanceOp* handed_over = nullptr;
  while (handed_over == nullptr) {
    const Choice choice =
        ChooseOp(choosable, Policy{under_pressure, options_.log_target_retention_bytes,
                                   options_.min_perf_improvement, !last_discretionary_was_gc_});
    if (choice.index < 0) break;
    MaintenanceOp* op = candidates[choice.index];
    if (PrepareAndHandOver(op, choice.reason)) {
      handed_over = op;
      if (choice.kind == ChoiceKind::kGc) last_discretionary_was_gc_ = true;
      if (choice.kind == ChoiceKind::kPerf) last_discretionary_was_gc_ = false;
    } else {
      choosable[choice.index].runnable = false;  // Choose again among the others.
    }
  }
  UnpinCandidates(candidates, stats);
  return handed_over;
}

std::vector<MaintenanceOp*> MaintenanceManager::PinCandidates(bool* under_pressure) {
  absl::MutexLock l(&mu_);
  std::vector<MaintenanceOp*> out;
  if (!started_ || shutting_down_ || running_count_ >= options_.num_threads) return out;
  const int64_t now = clock_->MonotonicMicros();
  for (auto& [id, entry] : ops_) {
    if (entry.running || entry.unregistering || now < entry.retry_after_micros) continue;
    entry.scoring = true;
    out.push_back(entry.op);
  }
  *under_pressure = options_.memory_budget != nullptr && options_.memory_budget->UnderPressure();
  return out;
}

void MaintenanceManager::UnpinCandidates(const std::vector<MaintenanceOp*>& candidates,
                                         const std::vector<MaintenanceOpStats>& stats) {
  absl::MutexLock l(&mu_);
  for (size_t i = 0; i < candidates.size(); ++i) {
    OpEntry& entry = EntryLocked(candidates[i]);
    entry.scoring = false;
    entry.last_stats = stats[i];
  }
  op_cv_.SignalAll();
}

bool MaintenanceManager::PrepareAndHandOver(MaintenanceOp* op, std::string reason) {
  {
    absl::MutexLock l(&mu_);
    OpEntry& entry = EntryLocked(op);  // Pinned by this pass: it cannot go away.
    DCHECK(!entry.running);
    entry.running = true;
    ++running_count_;
  }
  const bool ready = op->Prepare();
  absl::MutexLock l(&mu_);
  OpEntry& entry = EntryLocked(op);
  if (!ready) {
    LOG(INFO) << "Maintenance op " << op->name() << " declined to run in Prepare()";
    entry.running = false;
    --running_count_;
    op_cv_.SignalAll();
    idle_cv_.SignalAll();
    return false;
  }
  LOG(INFO) << "Scheduling maintenance op " << op->name() << ": " << reason;
  entry.run = MaintenanceOpRun{.name = op->name(), .reason = std::move(reason)};
  pending_.push_back(op);
  work_cv_.Signal();
  return true;
}

// ---- Workers ------------------------------------------------------------------------------------

void MaintenanceManager::WorkerLoop() {
  while (true) {
    MaintenanceOp* op;
    {
      absl::MutexLock l(&mu_);
      while (pending_.empty() && !workers_stop_) work_cv_.Wait(&mu_);
      if (pending_.empty()) return;
      op = pending_.front();
      pending_.pop_front();
      OpEntry& entry = EntryLocked(op);
      entry.performing = true;
      entry.performing_thread = std::this_thread::get_id();
      entry.run.start_wall_micros = clock_->NowMicros();
      entry.run_start_micros = clock_->MonotonicMicros();
    }
    const absl::Status status = op->Perform();
    FinishRun(op, status);
  }
}

void MaintenanceManager::FinishRun(MaintenanceOp* op, const absl::Status& status) {
  const int64_t end = clock_->MonotonicMicros();
  {
    absl::MutexLock l(&mu_);
    OpEntry& entry = EntryLocked(op);
    entry.run.duration = absl::Microseconds(end - entry.run_start_micros);
    entry.run.status = status;
    if (status.ok()) {
      entry.consecutive_failures = 0;
      LOG(INFO) << "Maintenance op " << op->name() << " complete in " << entry.run.duration;
    } else {
      ++entry.consecutive_failures;
      const absl::Duration backoff = FailureBackoff(options_, entry.consecutive_failures);
      entry.retry_after_micros = end + absl::ToInt64Microseconds(backoff);
      LOG(WARNING) << "Maintenance op " << op->name() << " failed after " << entry.run.duration
                   << " (" << entry.consecutive_failures << " in a row): " << status
                   << "; not retried for " << backoff;
    }
    RecordCompletedLocked(std::move(entry.run));
    entry.run = MaintenanceOpRun();
    entry.running = false;
    entry.performing = false;
    entry.performing_thread = std::thread::id();
    --running_count_;
    op_cv_.SignalAll();
    idle_cv_.SignalAll();
  }
  WakeUp();  // A worker is free.
}

void MaintenanceManager::RecordCompletedLocked(MaintenanceOpRun run) {
  if (options_.history_size == 0) return;
  completed_.push_front(std::move(run));
  while (completed_.size() > static_cast<size_t>(options_.history_size)) completed_.pop_back();
}

// ---- Status -------------------------------------------------------------------------------------

MaintenanceManagerStatus MaintenanceManager::GetStatus() const {
  const int64_t now = clock_->MonotonicMicros();
  absl::MutexLock l(&mu_);
  MaintenanceManagerStatus status;
  status.shutting_down = shutting_down_;
  for (const auto& [id, entry] : ops_) {
    status.ops.push_back({entry.op->name(), entry.running, entry.unregistering, entry.last_stats,
                          entry.consecutive_failures});
    if (entry.performing) {
      MaintenanceOpRun run = entry.run;
      run.duration = absl::Microseconds(now - entry.run_start_micros);
      status.running.push_back(std::move(run));
    }
  }
  std::sort(status.running.begin(), status.running.end(),
            [](const MaintenanceOpRun& a, const MaintenanceOpRun& b) {
              return a.start_wall_micros < b.start_wall_micros;
            });
  status.completed.assign(completed_.begin(), completed_.end());
  return status;
}

void MaintenanceManager::WaitForIdleForTests() const {
  absl::MutexLock l(&mu_);
  while (running_count_ > 0) idle_cv_.Wait(&mu_);
}

}  // namespace basalt
