#pragma once

// The meta cache: where each tablet of a table is, by partition key (DESIGN.md section 7).
//
// Locations come from the master's GetTableLocations and are kept for the ttl it returns. A
// RemoteTablet knows its replicas and which one leads as far as the client has learned (from the
// master's report, NOT_THE_LEADER hints, and failures). A tablet that a server no longer has
// (TABLET_NOT_FOUND) is invalidated, so the next lookup asks the master again.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/partition.h"

namespace basalt::pb {
class GetTableLocationsResponsePB;
}  // namespace basalt::pb

namespace basalt::client::internal {

class FrameTargets;
class MasterProxy;

struct ReplicaLocation {
  std::string uuid;
  std::string address;  // "host:port".
  bool leader = false;
};

// One tablet and its replicas. Thread-safe.
class RemoteTablet {
 public:
  RemoteTablet(std::string tablet_id, Partition partition, std::vector<ReplicaLocation> replicas,
               int64_t expiry_nanos);

  const std::string& tablet_id() const { return tablet_id_; }
  const Partition& partition() const { return partition_; }
  // Whether the entry may still be used without asking the master (not expired or invalidated).
  bool IsFresh(int64_t now_nanos) const {
    return now_nanos < expiry_nanos_.load(std::memory_order_relaxed) &&
           !stale_.load(std::memory_order_relaxed);
  }
  // Takes newer locations of the same tablet from the master.
  void Refresh(std::vector<ReplicaLocation> replicas, int64_t expiry_nanos)
      ABSL_LOCKS_EXCLUDED(mu_);
  void MarkStale() { stale_.store(true, std::memory_order_relaxed); }
  bool is_stale() const { return stale_.load(std::memory_order_relaxed); }
  int64_t expiry_nanos() const { return expiry_nanos_.load(std::memory_order_relaxed); }
  std::vector<ReplicaLocation> replicas() const ABSL_LOCKS_EXCLUDED(mu_);

  // Replicas in the order to try them: the believed leader first, then the others, replicas
  // that failed recently last.
  std::vector<ReplicaLocation> ReplicasInOrder() const ABSL_LOCKS_EXCLUDED(mu_);
  // A NOT_THE_LEADER hint: `uuid` (if known) leads; otherwise `address` is not the leader.
  // False (nothing marked) when no known replica has that uuid.
  bool MarkLeader(const std::string& uuid) ABSL_LOCKS_EXCLUDED(mu_);
  void MarkFollower(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);
  // The server at `address` failed to answer (its replica is tried last from now on).
  void MarkFailed(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);
  void MarkSucceeded(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string tablet_id_;
  const Partition partition_;
  // Atomics: read on every lookup without mu_; each is meaningful on its own.
  std::atomic<int64_t> expiry_nanos_;
  std::atomic<bool> stale_{false};

  mutable absl::Mutex mu_;
  std::vector<ReplicaLocation> replicas_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> failed_ ABSL_GUARDED_BY(mu_);
};

// The cached tablets of one table, by partition key start. Thread-safe.
class TableLocations {
 public:
  explicit TableLocations(std::string table_id) : table_id_(std::move(table_id)) {}
  const std::string& table_id() const { return table_id_; }

  // The fresh cached tablet whose partition contains `partition_key`, or nullptr.
  std::shared_ptr<RemoteTablet> Find(std::string_view partition_key, int64_t now_nanos) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The fresh cached tablet containing `partition_key`, else the first cached one after it if no
  // cached tablet lies between; `*known` tells whether the answer can be trusted without asking
  // the master.
  std::shared_ptr<RemoteTablet> FindOrNext(std::string_view partition_key, int64_t now_nanos,
                                           bool* known) const ABSL_LOCKS_EXCLUDED(mu_);
  // Bumped by every Insert and Remove, so callers can tell whether a Snapshot is current.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // The cached tablets in partition-key order, and the version they are of.
  std::vector<std::shared_ptr<RemoteTablet>> Snapshot(uint64_t* version) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces cached tablets that overlap `tablet` (an entry for the same tablet and partition is
  // refreshed in place instead, so holders of it keep a current object).
  void Insert(std::shared_ptr<RemoteTablet> tablet) ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(const RemoteTablet* tablet) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string table_id_;
  std::atomic<uint64_t> version_{0};  // Atomic: read without mu_ on every routed write.
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<RemoteTablet>, std::less<>> by_start_ ABSL_GUARDED_BY(mu_);
};

class MetaCache {
 public:
  // `master` and `frames` are borrowed and must outlive the cache; `frames` (may be null) learns
  // the tablet servers' frame RPC addresses from the locations.
  explicit MetaCache(MasterProxy* master, FrameTargets* frames = nullptr)
      : master_(master), frames_(frames) {}

  // The locations object of a table (created empty on first use).
  std::shared_ptr<TableLocations> GetTable(const std::string& table_id) ABSL_LOCKS_EXCLUDED(mu_);

  // The tablet containing `partition_key`, from the cache or the master. NOT_FOUND when no
  // tablet covers the key (a non-covered range), the master's error otherwise.
  absl::StatusOr<std::shared_ptr<RemoteTablet>> Lookup(TableLocations* table,
                                                       std::string_view partition_key,
                                                       absl::Time deadline);
  // The tablet containing `partition_key` or the first one after it; nullptr when there is none.
  absl::StatusOr<std::shared_ptr<RemoteTablet>> LookupOrNext(TableLocations* table,
                                                             std::string_view partition_key,
                                                             absl::Time deadline);
  // Forgets a tablet (TABLET_NOT_FOUND), so the next lookup asks the master.
  void Invalidate(TableLocations* table, RemoteTablet* tablet);

  // Fills `table` from a GetTableLocations response; returns its first tablet (nullptr for
  // none). DATA_LOSS for a malformed partition. `frames` (may be null) learns the servers'
  // frame RPC addresses.
  static absl::StatusOr<std::shared_ptr<RemoteTablet>> InsertLocations(
      TableLocations* table, const pb::GetTableLocationsResponsePB& resp, int64_t now_nanos,
      FrameTargets* frames = nullptr);

 private:
  // Asks the master for the tablets from `partition_key` on; returns the first.
  absl::StatusOr<std::shared_ptr<RemoteTablet>> Refresh(TableLocations* table,
                                                        std::string_view partition_key,
                                                        absl::Time deadline);

  MasterProxy* const master_;
  FrameTargets* const frames_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<TableLocations>> tables_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::client::internal
