#pragma once

// DiskSpaceMonitor: whether a tablet server's data and WAL directories have room for more
// (docs/tserver.md "Disk faults"). A directory is full when the free space of its file system is
// below its reserve: --fs_data_dirs_reserved_bytes / --fs_wal_dir_reserved_bytes (-1: 1% of the
// file system's capacity). Reserving space ahead of ENOSPC keeps the WAL and metadata writes
// that must succeed (an fsync of an entry already accepted, a superblock) from running out.
//
// While a directory is full: writes are refused with a retriable RESOURCE_EXHAUSTED + DISK_FULL
// naming the server and the directory (CheckRoomForWrites); flushes and compactions wait
// (CheckRoomForData: their maintenance ops report themselves not runnable); reads go on. All of
// it resumes by itself once space is freed: the free space is read again (statvfs) at most every
// `refresh`, so a check costs a clock read in between.
//
// Thread-safe.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace basalt {

class Env;

class DiskSpaceMonitor {
 public:
  struct Dir {
    std::string path;
    bool holds_data = true;       // Blocks and tablet metadata: flushes need its room.
    bool holds_wal = false;       // WAL segments: writes need its room.
    int64_t reserved_bytes = -1;  // -1: 1% of the capacity.
    // For a data directory: its position in --fs_data_dirs (BlockManager). Position 0 also holds
    // every tablet's metadata, so every tablet needs its room.
    int position = 0;
  };

  // `env` is borrowed. An Env without space information (UNIMPLEMENTED) never reports full.
  DiskSpaceMonitor(Env* env, std::string server_uuid, std::vector<Dir> dirs,
                   absl::Duration refresh = absl::Seconds(1));

  // OK, or DISK_FULL naming the first full directory (data or WAL) a tablet whose blocks are in
  // the data directories at positions `group` needs (empty: every directory).
  absl::Status CheckRoomForWrites(std::span<const int> group = {}) ABSL_LOCKS_EXCLUDED(mu_);
  // OK, or DISK_FULL naming the first full data directory of `group` (as above).
  absl::Status CheckRoomForData(std::span<const int> group = {}) ABSL_LOCKS_EXCLUDED(mu_);
  // The directories full at the last refresh (for the status page and metrics).
  std::vector<std::string> FullDirs() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct State {
    Dir dir;
    bool full = false;
    uint64_t free_bytes = 0;
    uint64_t reserve_bytes = 0;
  };
  absl::Status Check(bool wal_too, std::span<const int> group) ABSL_LOCKS_EXCLUDED(mu_);
  void RefreshLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Env* const env_;
  const std::string server_uuid_;
  const absl::Duration refresh_;
  absl::Mutex mu_;
  std::vector<State> dirs_ ABSL_GUARDED_BY(mu_);
  absl::Time refreshed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace basalt
