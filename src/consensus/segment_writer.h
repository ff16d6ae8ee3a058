#pragma once

// The file side of write-ahead log segments shared by the per-group Log (log.h) and the
// ServerLog (server_log.h): the options, a segment as published to readers, listing a log
// directory's segments, and the writer of the active segment.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/env.h"
#include "consensus/log_segment.h"

namespace basalt {

struct LogOptions {
  // A segment is closed and a new one started once it reaches this size (a segment may exceed it
  // by one batch). Default: --log_segment_size_mb.
  uint64_t segment_size_bytes = 8 << 20;
  // Sync (fdatasync) each group of batches before acknowledging it. Default:
  // --log_force_fsync_all. When false, an acknowledged entry survives a process crash but not a
  // machine crash.
  bool force_fsync = true;
  // With force_fsync, the active segment is kept zero-filled this far ahead of its batches
  // (WritableFile::PreallocateZeros), in steps of this size: a batch's fdatasync then overwrites
  // blocks the file already has and writes no inode. 0 disables. Default: --log_preallocate_kb.
  uint64_t preallocate_bytes = 1 << 20;
  // Written into every segment header; when not empty, Open() refuses segments of another log.
  std::string log_id;

  // Returns options with the defaults taken from the flags.
  static LogOptions FromFlags();
};

// A segment as published to readers. Immutable: a rewritten segment gets a new object, so a
// reader holding the old one keeps reading the old (still consistent) file, and a deleted
// segment stays readable to whoever still holds it.
struct SegmentFile {
  uint64_t seq = 0;
  // A per-group log's segment: its header's first index and previous term (0 in a server log).
  uint64_t first_index = 0;
  uint64_t prev_term = 0;
  std::shared_ptr<RandomAccessFile> reader;
};

// Returns the segment sequence numbers in `dir`, sorted, creating the directory (durably) if
// needed and deleting temporary files left by an interrupted rewrite.
absl::StatusOr<std::vector<uint64_t>> ListSegmentFiles(Env* env, const std::string& dir);

// The active segment of a log: creates segments durably, appends, keeps the file zero-filled
// ahead of its data, and syncs. Not thread-safe: one writing thread at a time.
class SegmentWriter {
 public:
  SegmentWriter(Env* env, std::string dir, const LogOptions& options);
  ~SegmentWriter();

  SegmentWriter(const SegmentWriter&) = delete;
  SegmentWriter& operator=(const SegmentWriter&) = delete;

  bool is_open() const { return file_ != nullptr; }
  // The active segment's sequence number (the last one opened, even after Close).
  uint64_t seq() const { return seq_; }
  // Bytes of data in the active segment. REQUIRES: is_open().
  uint64_t size() const { return file_->Size(); }
  // Number of syncs of appended data so far.
  int64_t num_syncs() const { return num_syncs_; }
  std::string Path(uint64_t seq) const { return JoinPath(dir_, SegmentFileName(seq)); }

  // Creates segment header.seq durably (file and directory synced) and makes it the active one.
  // Returns it for the caller to publish. REQUIRES: !is_open().
  absl::StatusOr<std::shared_ptr<SegmentFile>> Create(const SegmentHeader& header);
  // Makes existing segment `seq` the active one, appending at its end. REQUIRES: !is_open().
  absl::Status OpenExisting(uint64_t seq);
  // Appends `data` at the end of the active segment and syncs it (force_fsync, timed in
  // basalt_wal_fsync_seconds) or flushes it to the OS. Returns the offset it starts at. On an
  // error, write_failed() tells whether it came before the sync (so the file holds its synced
  // data and possibly part of `data` after it: Rewind can undo it) or from the sync (what the
  // file holds is unknown).
  absl::StatusOr<uint64_t> Append(std::string_view data);
  bool write_failed() const { return write_failed_; }
  // Syncs what was appended (without force_fsync, Append only hands it to the OS).
  // REQUIRES: is_open().
  absl::Status Sync() { return file_->Sync(); }
  // After an Append whose write failed: durably cuts the active segment back to the data synced
  // before it (a rewrite, as the failed bytes may have reached the file) and closes it, so that
  // the next data goes to a new segment. Readers holding the segment read the data synced
  // before. REQUIRES: write_failed().
  absl::Status Rewind();
  // Syncs and closes the active segment, if open: a segment that is not the newest must be
  // complete on disk.
  absl::Status Close();

 private:
  // Zero-fills the active segment ahead of a write that ends at `end` (preallocate_bytes).
  absl::Status PreallocateFor(uint64_t end);

  Env* const env_;
  const std::string dir_;
  const LogOptions options_;
  std::unique_ptr<WritableFile> file_;
  uint64_t seq_ = 0;
  uint64_t preallocated_end_ = 0;  // file_ is zero-filled up to here (PreallocateFor).
  uint64_t synced_size_ = 0;       // The data the last successful Append left (Rewind).
  bool write_failed_ = false;
  int64_t num_syncs_ = 0;
};

}  // namespace basalt
