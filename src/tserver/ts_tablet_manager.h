#pragma once

// TsTabletManager: the tablet replicas of one tablet server (docs/cluster.md "Processes, flags,
// directories", "Bootstrap"): creates them (CreateTablet), opens every one found under
// <data_dir>/tablets/ at start, deletes them with their files and blocks (DeleteTablet), and
// looks them up for the services.
//
// Lifecycle: construct -> OpenAll() -> requests -> Shutdown() (shuts every replica down).
// Thread-safe. No lock is held while a replica does disk I/O or waits.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "tserver/tablet_replica.h"

namespace basalt {

class TsTabletManager {
 public:
  // `ctx`'s pointers are borrowed and outlive the manager.
  explicit TsTabletManager(const TabletReplicaContext& ctx);
  ~TsTabletManager();
  TsTabletManager(const TsTabletManager&) = delete;
  TsTabletManager& operator=(const TsTabletManager&) = delete;

  // Opens and starts every replica under <data_dir>/tablets/ (replay continues in the
  // background; each replica is BOOTSTRAPPING until done). Directories without a replica file
  // (a creation cut short by a crash) are removed. A replica that fails to open is remembered as
  // FAILED and reported; the others still open. Errors: listing the directory.
  absl::Status OpenAll() ABSL_LOCKS_EXCLUDED(mu_);

  // Creates and starts a new replica. ALREADY_EXISTS if present (or being created).
  absl::Status CreateTablet(TabletReplicaMeta meta, const Schema& schema, const RaftConfig& config,
                            const std::map<PeerId, std::string>& addresses)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Shuts the replica down and deletes its files and blocks. NOT_FOUND + TABLET_NOT_FOUND if
  // absent.
  absl::Status DeleteTablet(const std::string& tablet_id) ABSL_LOCKS_EXCLUDED(mu_);

  // NOT_FOUND + TABLET_NOT_FOUND if absent.
  absl::StatusOr<std::shared_ptr<TabletReplica>> Lookup(const std::string& tablet_id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<TabletReplica>> List() const ABSL_LOCKS_EXCLUDED(mu_);
  // Replicas that failed to open, with why.
  std::map<std::string, absl::Status> Failed() const ABSL_LOCKS_EXCLUDED(mu_);

  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const TabletReplicaContext ctx_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<TabletReplica>> replicas_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> failed_ ABSL_GUARDED_BY(mu_);
  // Ids being created or deleted (their files are changing).
  absl::flat_hash_set<std::string> busy_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace basalt
