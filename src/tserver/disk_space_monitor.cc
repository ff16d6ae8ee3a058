#include "tserver/disk_space_monitor.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "absl/time/clock.h"
#include "common/env.h"
#include "common/strings.h"
#include "tserver/tserver_errors.h"

namespace basalt {
namespace {

const char* RoleName(const DiskSpaceMonitor::Dir& d) {
  return d.holds_data ? (d.holds_wal ? "data and WAL" : "data") : "WAL";
}

}  // namespace

DiskSpaceMonitor::DiskSpaceMonitor(Env* env, std::string server_uuid, std::vector<Dir> dirs,
                                   absl::Duration refresh)
    : env_(env), server_uuid_(std::move(server_uuid)), refresh_(refresh) {
  for (Dir& d : dirs) dirs_.push_back(State{std::move(d)});
}

void DiskSpaceMonitor::RefreshLocked() {
  const absl::Time now = absl::Now();
  if (now - refreshed_at_ < refresh_) return;
  refreshed_at_ = now;
  for (State& st : dirs_) {
    absl::StatusOr<SpaceInfo> info = env_->GetSpaceInfo(st.dir.path);
    if (!info.ok()) {
      // No information (or the directory failed, which its own I/O reports): not full.
      LOG_IF(WARNING, !absl::IsUnimplemented(info.status()))
          << "free space of " << st.dir.path << ": " << info.status();
      st.full = false;
      continue;
    }
    st.free_bytes = info->free_bytes;
    st.reserve_bytes = st.dir.reserved_bytes >= 0 ? static_cast<uint64_t>(st.dir.reserved_bytes)
                                                  : info->capacity_bytes / 100;
    const bool full = info->free_bytes < st.reserve_bytes || info->free_bytes == 0;
    if (full != st.full) {
      LOG(WARNING) << "the " << RoleName(st.dir) << " directory " << st.dir.path
                   << (full ? " is full" : " has room again") << ": " << info->free_bytes
                   << " bytes free, " << st.reserve_bytes << " reserved";
    }
    st.full = full;
  }
}

absl::Status DiskSpaceMonitor::Check(bool wal_too, std::span<const int> group) {
  absl::MutexLock l(&mu_);
  RefreshLocked();
  for (const State& st : dirs_) {
    if (!st.full || (!wal_too && !st.dir.holds_data)) continue;
    const bool needed = st.dir.holds_wal || st.dir.position == 0 || group.empty() ||
                        std::find(group.begin(), group.end(), st.dir.position) != group.end();
    if (!needed) continue;
    return DiskFullError(StrCat("tablet server ", server_uuid_, ": the ", RoleName(st.dir),
                                " directory ", st.dir.path, " is full (", st.free_bytes,
                                " bytes free, ", st.reserve_bytes,
                                " reserved); retry once space is freed"));
  }
  return absl::OkStatus();
}

absl::Status DiskSpaceMonitor::CheckRoomForWrites(std::span<const int> group) {
  return Check(/*wal_too=*/true, group);
}

absl::Status DiskSpaceMonitor::CheckRoomForData(std::span<const int> group) {
  return Check(/*wal_too=*/false, group);
}

std::vector<std::string> DiskSpaceMonitor::FullDirs() {
  absl::MutexLock l(&mu_);
  RefreshLocked();
  std::vector<std::string> out;
  for (const State& st : dirs_) {
    if (st.full) out.push_back(st.dir.path);
  }
  return out;
}

}  // namespace basalt
