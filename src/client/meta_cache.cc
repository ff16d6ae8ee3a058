#include "client/meta_cache.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "client/client_internal.h"
#include "client/frame_targets.h"
#include "client/master_proxy.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/master.pb.h"
#include "rpc/net_util.h"

namespace basalt::client::internal {

// ---- RemoteTablet
// --------------------------------------------------------------------------------

RemoteTablet::RemoteTablet(std::string tablet_id, Partition partition,
                           std::vector<ReplicaLocation> replicas, int64_t expiry_nanos)
    : tablet_id_(std::move(tablet_id)),
      partition_(std::move(partition)),
      expiry_nanos_(expiry_nanos),
      replicas_(std::move(replicas)) {}

void RemoteTablet::Refresh(std::vector<ReplicaLocation> replicas, int64_t expiry_nanos) {
  absl::MutexLock l(&mu_);
  replicas_ = std::move(replicas);
  expiry_nanos_.store(expiry_nanos, std::memory_order_relaxed);
}

std::vector<ReplicaLocation> RemoteTablet::replicas() const {
  absl::MutexLock l(&mu_);
  return replicas_;
}

std::vector<ReplicaLocation> RemoteTablet::ReplicasInOrder() const {
  std::vector<ReplicaLocation> out;
  std::vector<std::string> failed_addresses;
  {
    absl::MutexLock l(&mu_);
    out = replicas_;
    failed_addresses = failed_;
  }
  auto rank = [&](const ReplicaLocation& r) {
    bool failed = std::find(failed_addresses.begin(), failed_addresses.end(), r.address) !=
                  failed_addresses.end();
    return failed ? 2 : (r.leader ? 0 : 1);
  };
  std::stable_sort(out.begin(), out.end(), [&](const ReplicaLocation& a, const ReplicaLocation& b) {
    return rank(a) < rank(b);
  });
  return out;
}

bool RemoteTablet::MarkLeader(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  bool found = false;
  for (ReplicaLocation& r : replicas_) {
    r.leader = r.uuid == uuid;
    found |= r.leader;
  }
  return found;
}

void RemoteTablet::MarkFollower(const std::string& address) {
  absl::MutexLock l(&mu_);
  for (ReplicaLocation& r : replicas_) {
    if (r.address == address) r.leader = false;
  }
}

void RemoteTablet::MarkFailed(const std::string& address) {
  absl::MutexLock l(&mu_);
  if (std::find(failed_.begin(), failed_.end(), address) == failed_.end()) {
    failed_.push_back(address);
  }
  for (ReplicaLocation& r : replicas_) {
    if (r.address == address) r.leader = false;
  }
}

void RemoteTablet::MarkSucceeded(const std::string& address) {
  absl::MutexLock l(&mu_);
  failed_.erase(std::remove(failed_.begin(), failed_.end(), address), failed_.end());
}

// ---- TableLocations
// ------------------------------------------------------------------------------

std::shared_ptr<RemoteTablet> TableLocations::Find(std::string_view partition_key,
                                                   int64_t now_nanos) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = by_start_.upper_bound(partition_key);
  if (it == by_start_.begin()) return nullptr;
  --it;
  const RemoteTablet* t = it->second.get();
  if (!t->partition().Contains(partition_key) || !t->IsFresh(now_nanos)) return nullptr;
  return it->second;
}

std::shared_ptr<RemoteTablet> TableLocations::FindOrNext(std::string_view partition_key,
                                                         int64_t now_nanos, bool* known) const {
  absl::ReaderMutexLock l(&mu_);
  *known = false;
  auto it = by_start_.upper_bound(partition_key);
  if (it != by_start_.begin()) {
    auto prev = std::prev(it);
    if (prev->second->partition().Contains(partition_key)) {
      *known = prev->second->IsFresh(now_nanos);
      return prev->second;
    }
    // `prev` ends at or before the key; the next cached tablet is the answer only if it starts
    // exactly where `prev` ends (no gap the cache knows nothing about).
    if (it != by_start_.end() && it->second->IsFresh(now_nanos) &&
        prev->second->partition().partition_key_end() == it->first) {
      *known = true;
      return it->second;
    }
  }
  return nullptr;
}

std::vector<std::shared_ptr<RemoteTablet>> TableLocations::Snapshot(uint64_t* version) const {
  absl::ReaderMutexLock l(&mu_);
  *version = version_.load(std::memory_order_relaxed);
  std::vector<std::shared_ptr<RemoteTablet>> out;
  out.reserve(by_start_.size());
  for (const auto& [start, t] : by_start_) out.push_back(t);
  return out;
}

void TableLocations::Insert(std::shared_ptr<RemoteTablet> tablet) {
  absl::MutexLock l(&mu_);
  const Partition& p = tablet->partition();
  auto same = by_start_.find(p.partition_key_start());
  if (same != by_start_.end() && same->second->tablet_id() == tablet->tablet_id() &&
      same->second->partition() == p && !same->second->is_stale()) {
    same->second->Refresh(tablet->replicas(), tablet->expiry_nanos());
    return;
  }
  version_.fetch_add(1, std::memory_order_release);
  auto it = by_start_.lower_bound(p.partition_key_start());
  if (it != by_start_.begin()) {
    auto prev = std::prev(it);
    const std::string& prev_end = prev->second->partition().partition_key_end();
    if (prev_end.empty() || prev_end > p.partition_key_start()) it = prev;
  }
  while (it != by_start_.end() &&
         (p.partition_key_end().empty() || it->first < p.partition_key_end())) {
    it = by_start_.erase(it);
  }
  by_start_.emplace(p.partition_key_start(), std::move(tablet));
}

void TableLocations::Remove(const RemoteTablet* tablet) {
  absl::MutexLock l(&mu_);
  version_.fetch_add(1, std::memory_order_release);
  auto it = by_start_.find(tablet->partition().partition_key_start());
  if (it != by_start_.end() && it->second.get() == tablet) by_start_.erase(it);
}

// ---- MetaCache
// -----------------------------------------------------------------------------------

std::shared_ptr<TableLocations> MetaCache::GetTable(const std::string& table_id) {
  absl::MutexLock l(&mu_);
  auto& t = tables_[table_id];
  if (t == nullptr) t = std::make_shared<TableLocations>(table_id);
  return t;
}

absl::StatusOr<std::shared_ptr<RemoteTablet>> MetaCache::InsertLocations(
    TableLocations* table, const pb::GetTableLocationsResponsePB& resp, int64_t now_nanos,
    FrameTargets* frames) {
  const int64_t expiry = now_nanos + int64_t{resp.ttl_millis()} * 1000000;
  std::vector<std::shared_ptr<RemoteTablet>> tablets;
  for (const pb::TabletLocationsPB& loc : resp.tablet_locations()) {
    auto partition = Partition::FromPB(loc.partition());
    if (!partition.ok() || loc.tablet_id().empty()) {
      return absl::DataLossError(StrCat("master returned a malformed location for tablet '",
                                        loc.tablet_id(), "': ", partition.status().message()));
    }
    std::vector<ReplicaLocation> replicas;
    for (const auto& r : loc.replicas()) {
      replicas.push_back(
          {r.ts_uuid(), HostPort::FromPB(r.rpc_address()).ToString(), r.role() == pb::LEADER});
      if (frames != nullptr) {
        frames->Learn(replicas.back().address,
                      r.has_frame_rpc_address() ? HostPort::FromPB(r.frame_rpc_address()).ToString()
                                                : std::string());
      }
    }
    tablets.push_back(std::make_shared<RemoteTablet>(loc.tablet_id(), *std::move(partition),
                                                     std::move(replicas), expiry));
  }
  std::shared_ptr<RemoteTablet> first = tablets.empty() ? nullptr : tablets.front();
  for (auto& t : tablets) table->Insert(std::move(t));
  return first;
}

absl::StatusOr<std::shared_ptr<RemoteTablet>> MetaCache::Refresh(TableLocations* table,
                                                                 std::string_view partition_key,
                                                                 absl::Time deadline) {
  pb::GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_id(table->table_id());
  req.set_partition_key_start(std::string(partition_key));
  pb::GetTableLocationsResponsePB resp;
  BASALT_RETURN_IF_ERROR(master_->Call("GetTableLocations", &MasterProxy::Stub::GetTableLocations,
                                       req, &resp, deadline));
  return InsertLocations(table, resp, absl::GetCurrentTimeNanos(), frames_);
}

absl::StatusOr<std::shared_ptr<RemoteTablet>> MetaCache::Lookup(TableLocations* table,
                                                                std::string_view partition_key,
                                                                absl::Time deadline) {
  if (auto t = table->Find(partition_key, CoarseWallNanos())) return t;
  BASALT_ASSIGN_OR_RETURN(auto first, Refresh(table, partition_key, deadline));
  if (first == nullptr || !first->partition().Contains(partition_key)) {
    return absl::NotFoundError(
        "no tablet covers the row's partition key (it lies outside every range partition)");
  }
  return first;
}

absl::StatusOr<std::shared_ptr<RemoteTablet>> MetaCache::LookupOrNext(
    TableLocations* table, std::string_view partition_key, absl::Time deadline) {
  bool known;
  auto t = table->FindOrNext(partition_key, CoarseWallNanos(), &known);
  if (known) return t;
  // The master answers from the tablet containing the key, or else the next one.
  return Refresh(table, partition_key, deadline);
}

void MetaCache::Invalidate(TableLocations* table, RemoteTablet* tablet) {
  tablet->MarkStale();
  table->Remove(tablet);
}

}  // namespace basalt::client::internal
