#pragma once

// ScannerManager: the open scanners of a tablet server by id, with TTL expiry (docs/cluster.md
// "Scans": a scanner lives --scanner_ttl_ms after each call). A reaper thread removes expired
// scanners; a lookup of an expired one that the reaper has not reached yet also fails.
//
// Lifecycle: construct -> Start() -> ... -> Shutdown() (joins the reaper; drops every scanner).
// Thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tserver/scanner.h"

namespace basalt {

class ScannerManager {
 public:
  // `ttl`: idle time after which a scanner expires. `max_scanners`: open scanners beyond which a
  // new scan is refused with UNAVAILABLE + SERVER_OVERLOADED.
  ScannerManager(absl::Duration ttl, size_t max_scanners);
  ~ScannerManager();
  ScannerManager(const ScannerManager&) = delete;
  ScannerManager& operator=(const ScannerManager&) = delete;

  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Registers `scanner` and returns its new id. SERVER_OVERLOADED when too many are open.
  absl::StatusOr<std::string> Register(std::shared_ptr<Scanner> scanner) ABSL_LOCKS_EXCLUDED(mu_);
  // The scanner with this id, touched (its TTL restarts). NOT_FOUND + SCANNER_EXPIRED when
  // unknown or expired.
  absl::StatusOr<std::shared_ptr<Scanner>> Get(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_);
  // Drops every scanner of a tablet (it is being deleted).
  void RemoveTablet(const std::string& tablet_id) ABSL_LOCKS_EXCLUDED(mu_);
  size_t num_scanners() const ABSL_LOCKS_EXCLUDED(mu_);
  // Removes expired scanners now; returns how many.
  int RemoveExpired() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  bool Expired(const Scanner& s, int64_t now_micros) const;
  void ReaperLoop() ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration ttl_;
  const size_t max_scanners_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Scanner>> scanners_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread reaper_;  // Started by Start(), joined by Shutdown().
};

}  // namespace basalt
