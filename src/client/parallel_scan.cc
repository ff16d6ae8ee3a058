#include "client/parallel_scan.h"

#include <utility>

#include "absl/time/clock.h"
#include "client/client_internal.h"
#include "client/elastic_thread_pool.h"
#include "client/tablet_scanner.h"
#include "proto/tserver.pb.h"

namespace basalt::client::internal {

ParallelScan::ParallelScan(ScanConfig* config, PartitionPruner* pruner,
                           std::unique_ptr<TabletScanner> first, int num_workers,
                           absl::Duration timeout)
    : config_(config),
      timeout_(timeout),
      capacity_(static_cast<size_t>(num_workers)),
      pruner_(pruner) {
  if (first != nullptr && !first->has_more()) first.reset();
  absl::MutexLock l(&mu_);
  workers_.resize(num_workers);
  StartWorkerLocked(std::move(first));
}

void ParallelScan::StartWorkerLocked(std::unique_ptr<TabletScanner> first) {
  const int index = started_++;
  running_++;
  auto done = std::make_shared<std::promise<void>>();
  workers_done_.push_back(done->get_future());
  // std::function needs a copyable task: the scanner travels in a shared_ptr.
  auto holder = std::make_shared<std::unique_ptr<TabletScanner>>(std::move(first));
  config_->client->scan_workers->Run([this, index, holder, done] {
    Run(index, std::move(*holder));
    done->set_value();
  });
}

void ParallelScan::MaybeStartNextWorker() {
  absl::MutexLock l(&mu_);
  if (!stopping_ && started_ < static_cast<int>(workers_.size())) StartWorkerLocked(nullptr);
}

ParallelScan::~ParallelScan() { Stop(); }

bool ParallelScan::SetScanner(int index, TabletScanner* scanner) {
  absl::MutexLock l(&mu_);
  workers_[index].scanner = scanner;
  return !stopping_;
}

void ParallelScan::Run(int index, std::unique_ptr<TabletScanner> scanner) {
  if (!SetScanner(index, scanner.get()) && scanner != nullptr) scanner->Cancel();
  if (scanner != nullptr) MaybeStartNextWorker();
  for (;;) {
    absl::Status s;
    if (scanner == nullptr) {
      if (Stopping()) break;
      absl::StatusOr<std::shared_ptr<RemoteTablet>> tablet;
      {
        absl::MutexLock l(&claim_mu_);
        if (Stopping()) break;  // Workers queue here; a stopped scan must not make them wait.
        tablet = ClaimNextTablet(*config_, pruner_, absl::Now() + timeout_);
      }
      if (!tablet.ok()) {
        Fail(tablet.status());
        break;
      }
      if (*tablet == nullptr) break;  // No tablet left.
      scanner = std::make_unique<TabletScanner>(config_, std::move(*tablet));
      if (!SetScanner(index, scanner.get())) break;
      MaybeStartNextWorker();
      s = scanner->Open(absl::Now() + timeout_, /*limit=*/0);
    } else if (scanner->has_more()) {
      s = scanner->Continue(absl::Now() + timeout_, /*limit=*/0);
    } else {
      SetScanner(index, nullptr);
      scanner.reset();
      continue;
    }
    if (!s.ok()) {
      Fail(std::move(s));
      break;
    }
    if (scanner->range_dropped()) continue;  // No answer; the next round claims another.
    if (!Push(index, *scanner)) break;
  }
  if (scanner != nullptr) {
    SetScanner(index, nullptr);
    scanner->Close();
  }
  absl::MutexLock l(&mu_);
  running_--;
}

bool ParallelScan::Stopping() const {
  absl::MutexLock l(&mu_);
  return stopping_;
}

// How often a worker waiting for room keeps its server-side scanner alive: well inside the
// servers' default --scanner_ttl_ms (60 s). Without it, n workers each waiting n times the
// caller's time per batch would lose their scanners long before the caller paused that long.
constexpr absl::Duration kWaitingKeepAliveInterval = absl::Seconds(15);

bool ParallelScan::Push(int index, TabletScanner& scanner) {
  std::unique_ptr<pb::ScanResponsePB> resp = scanner.TakeResponse();
  absl::MutexLock l(&mu_);
  workers_[index].waiting = true;
  const absl::Condition room(
      +[](ParallelScan* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
        return p->stopping_ || p->queue_.size() < p->capacity_;
      },
      this);
  while (!mu_.AwaitWithTimeout(room, kWaitingKeepAliveInterval)) {
    mu_.Unlock();
    // Best effort: an expired scanner shows at the next Continue.
    (void)scanner.KeepAlive(absl::Now() + absl::Seconds(5));
    mu_.Lock();
  }
  workers_[index].waiting = false;
  if (stopping_) return false;
  queue_.push_back(std::move(resp));
  return true;
}

void ParallelScan::Fail(absl::Status s) {
  absl::MutexLock l(&mu_);
  if (stopping_) return;  // Stopped by the caller or by another failure: nobody reads this one.
  queue_.push_back(std::move(s));
  StopLocked();
}

void ParallelScan::StopLocked() {
  stopping_ = true;
  for (Worker& w : workers_) {
    if (w.scanner != nullptr) w.scanner->Cancel();
  }
}

absl::StatusOr<std::unique_ptr<pb::ScanResponsePB>> ParallelScan::Next(absl::Time deadline) {
  absl::MutexLock l(&mu_);
  if (ended_) return std::unique_ptr<pb::ScanResponsePB>();
  const bool ready =
      mu_.AwaitWithDeadline(absl::Condition(
                                +[](ParallelScan* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
                                  return !p->queue_.empty() || p->running_ == 0;
                                },
                                this),
                            deadline);
  if (!ready) {
    return absl::DeadlineExceededError(
        "no tablet of the scan answered within the scanner's timeout");
  }
  if (queue_.empty()) {
    ended_ = true;
    return std::unique_ptr<pb::ScanResponsePB>();
  }
  if (!queue_.front().ok()) {
    absl::Status failure = queue_.front().status();
    queue_.pop_front();
    ended_ = true;
    return failure;
  }
  std::unique_ptr<pb::ScanResponsePB> next = std::move(*queue_.front());
  queue_.pop_front();
  return next;
}

bool ParallelScan::HasMore() const {
  absl::MutexLock l(&mu_);
  return !ended_ && (!queue_.empty() || running_ > 0);
}

absl::Status ParallelScan::KeepAlive(absl::Time deadline) {
  // Copies, taken while the workers they belong to wait in Push (they cannot leave it without
  // mu_): the RPCs below then touch no state a worker may change.
  std::vector<std::pair<std::string, std::string>> idle;
  {
    absl::MutexLock l(&mu_);
    for (const Worker& w : workers_) {
      if (w.waiting && w.scanner != nullptr && w.scanner->has_more()) {
        idle.emplace_back(w.scanner->server(), w.scanner->scanner_id());
      }
    }
  }
  absl::Status first;
  for (const auto& [server, id] : idle) {
    absl::Status s = SendKeepAlive(config_->client, server, id, deadline);
    if (first.ok()) first = s;
  }
  return first;
}

void ParallelScan::Stop() {
  std::vector<std::future<void>> done;
  {
    absl::MutexLock l(&mu_);
    StopLocked();
    // No worker starts once stopping_ is set: these are all of them.
    done.swap(workers_done_);
  }
  for (std::future<void>& f : done) f.wait();
}

}  // namespace basalt::client::internal
