#include "tserver/replica_wal.h"

#include "common/env.h"
#include "common/strings.h"
#include "consensus/log.h"
#include "consensus/server_log.h"

namespace basalt {

std::string ReplicaWal::ToString() const {
  if (server_log != nullptr) return StrCat("server WAL group ", tablet_id);
  return StrCat("WAL directory ", dir);
}

bool ReplicaWal::Exists() const {
  if (server_log != nullptr) return server_log->HasGroup(tablet_id);
  return env->FileExists(dir);
}

absl::StatusOr<std::unique_ptr<Log>> ReplicaWal::Open() const {
  if (server_log != nullptr) return server_log->OpenGroup(tablet_id);
  return Log::Open(env, dir, LogOptions::FromFlags());
}

absl::Status ReplicaWal::Delete() const {
  if (server_log != nullptr) return server_log->DropGroup(tablet_id);
  if (!env->FileExists(dir)) return absl::OkStatus();
  return env->DeleteDirRecursively(dir);
}

}  // namespace basalt
