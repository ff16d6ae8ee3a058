#include "tserver/scanner_manager.h"

#include <algorithm>
#include <vector>

#include "common/clock.h"
#include "common/strings.h"
#include "server/server_instance.h"
#include "tserver/tserver_errors.h"

namespace basalt {

ScannerManager::ScannerManager(absl::Duration ttl, size_t max_scanners)
    : ttl_(ttl), max_scanners_(max_scanners) {}

ScannerManager::~ScannerManager() { Shutdown(); }

void ScannerManager::Start() {
  reaper_ = std::thread([this] { ReaperLoop(); });
}

void ScannerManager::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (reaper_.joinable()) reaper_.join();
  absl::flat_hash_map<std::string, std::shared_ptr<Scanner>> dropped;
  {
    absl::MutexLock l(&mu_);
    dropped.swap(scanners_);
  }
}

bool ScannerManager::Expired(const Scanner& s, int64_t now_micros) const {
  return now_micros - s.last_access_micros() > absl::ToInt64Microseconds(ttl_);
}

absl::StatusOr<std::string> ScannerManager::Register(std::shared_ptr<Scanner> scanner) {
  std::string id = GenerateUuid();
  absl::MutexLock l(&mu_);
  if (scanners_.size() >= max_scanners_) {
    return ServerOverloadedError(StrCat("too many open scanners (", scanners_.size(), ")"));
  }
  scanners_[id] = std::move(scanner);
  return id;
}

absl::StatusOr<std::shared_ptr<Scanner>> ScannerManager::Get(const std::string& id) {
  const int64_t now = Clock::Default()->MonotonicMicros();
  std::shared_ptr<Scanner> expired;  // Destroyed outside the lock.
  absl::MutexLock l(&mu_);
  auto it = scanners_.find(id);
  if (it == scanners_.end() || Expired(*it->second, now)) {
    if (it != scanners_.end()) {
      expired = std::move(it->second);
      scanners_.erase(it);
    }
    return ScannerExpiredError(StrCat("scanner ", id.size() == 32 ? id : "(malformed id)",
                                      " not found: it expired or never existed"));
  }
  it->second->Touch();
  return it->second;
}

void ScannerManager::Remove(const std::string& id) {
  std::shared_ptr<Scanner> dropped;  // Destroyed outside the lock.
  absl::MutexLock l(&mu_);
  auto it = scanners_.find(id);
  if (it == scanners_.end()) return;
  dropped = std::move(it->second);
  scanners_.erase(it);
}

void ScannerManager::RemoveTablet(const std::string& tablet_id) {
  std::vector<std::shared_ptr<Scanner>> dropped;
  absl::MutexLock l(&mu_);
  for (auto it = scanners_.begin(); it != scanners_.end();) {
    if (it->second->tablet_id() == tablet_id) {
      dropped.push_back(std::move(it->second));
      scanners_.erase(it++);
    } else {
      ++it;
    }
  }
}

size_t ScannerManager::num_scanners() const {
  absl::MutexLock l(&mu_);
  return scanners_.size();
}

int ScannerManager::RemoveExpired() {
  const int64_t now = Clock::Default()->MonotonicMicros();
  std::vector<std::shared_ptr<Scanner>> dropped;
  absl::MutexLock l(&mu_);
  for (auto it = scanners_.begin(); it != scanners_.end();) {
    if (Expired(*it->second, now)) {
      dropped.push_back(std::move(it->second));
      scanners_.erase(it++);
    } else {
      ++it;
    }
  }
  return static_cast<int>(dropped.size());
}

void ScannerManager::ReaperLoop() {
  const absl::Duration period = std::clamp(ttl_ / 4, absl::Milliseconds(10), absl::Seconds(1));
  while (true) {
    {
      absl::MutexLock l(&mu_);
      auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stop), period)) return;
    }
    RemoveExpired();
  }
}

}  // namespace basalt
