#pragma once

// FaultInjectionEnv: an Env wrapper that injects I/O errors and simulates crashes, so tests can
// check that the WAL, column files and metadata survive power loss and failing disks.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "common/random.h"

namespace basalt {

// Wraps a base Env (typically a MemoryEnv, or the POSIX Env under a temporary directory) and
// forwards every call to it, while:
//
// (1) Injecting failures. FailAfter(n, kind) lets the next n operations of `kind` succeed and makes
//     the following one fail (and every later one too, unless one_shot). FailRandomly() fails each
//     matching operation with a probability. A failed operation has no effect on the base Env and
//     returns INTERNAL with a message containing "injected". Metadata queries (FileExists,
//     GetChildren, IsDirectory, GetFileSize) and Close/Flush never fail.
//
// (2) Tracking durability, to simulate a crash with DropUnsyncedData(). The model:
//     - File data: for every file written through this Env, the "synced size" is the size it had
//       at its last successful WritableFile::Sync(). Files never opened for writing here are
//       fully durable. Opening an existing file with NewWritableFile (truncation) makes its synced
//       size 0: the truncation is treated as durable at once, which is the pessimistic choice.
//       NewAppendableFile of an existing file treats its current contents as durable.
//     - Namespace: creating a file or directory, deleting one, and renaming are "pending" until
//       SyncDir() has been called on the directory of every name involved (the parent of a
//       created/deleted path; the parents of both source and target of a rename).
//     - DropUnsyncedData() first closes every open WritableFile of this Env, then undoes every
//       pending namespace operation, newest first (a pending create is deleted, together with
//       everything below it for a directory; a pending delete is recreated with the file's durable
//       contents; a pending rename is moved back and a file it replaced is restored with its
//       durable contents), then truncates every tracked file to its synced size. Afterwards the
//       base Env holds exactly the durable state; all tracking is reset (everything is durable),
//       the crash point is cleared, and file objects opened before return errors.
//     Deleting a file, or renaming over one, reads the file's durable contents into memory so the
//     operation can be undone; use small files.
//
// (3) Crashing at a sync point. Every successful WritableFile::Sync() and SyncDir() is a "sync
//     point" (num_sync_points()). SetCrashAtSyncPoint(k) makes the Env "crashed" once k more sync
//     points have completed (at once for k == 0): from then on every mutating operation (create,
//     append, sync, rename, delete, sync dir) fails. A test counts the sync points of an operation
//     and, for each k, crashes at k, calls DropUnsyncedData() and checks recovery.
//
// Limitations: undo assumes the test does not depend on a durable operation that follows an
// undone one on the same names; paths are compared textually after removing duplicate and
// trailing slashes; file locks pass through untracked.
//
// Thread-safe, except that DropUnsyncedData() must not run concurrently with operations on files
// opened from this Env. The base Env must outlive this object, and this object its file objects.
class FaultInjectionEnv final : public Env {
 public:
  enum class OpKind {
    kAny,      // Matches every kind below.
    kCreate,   // NewWritableFile, NewAppendableFile, CreateDir (and CreateDirs).
    kAppend,   // WritableFile::Append.
    kSync,     // WritableFile::Sync.
    kSyncDir,  // SyncDir.
    kRename,   // RenameFile.
    kDelete,   // DeleteFile, DeleteDir (and DeleteDirRecursively).
    kRead,     // NewRandomAccessFile, NewSequentialFile, ReadAt, Read, Skip.
  };

  // `base` is borrowed and must outlive this object.
  explicit FaultInjectionEnv(Env* base);
  ~FaultInjectionEnv() override;

  FaultInjectionEnv(const FaultInjectionEnv&) = delete;
  FaultInjectionEnv& operator=(const FaultInjectionEnv&) = delete;

  Env* base() const { return base_; }

  // ---- Env ----
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) override;
  bool FileExists(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::Status DeleteFile(const std::string& path) override;
  absl::Status RenameFile(const std::string& src, const std::string& target) override;
  absl::Status CreateDir(const std::string& path) override;
  absl::Status DeleteDir(const std::string& path) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  absl::Status UnlockFile(std::unique_ptr<FileLock> lock) override;

  // ---- Failure injection ----
  // After `n` more successful operations of `kind`, operations of `kind` fail: only the next one
  // if `one_shot`, otherwise all until ClearFailures(). Replaces earlier FailAfter/FailRandomly.
  // The failures have `code`: INTERNAL is what EIO maps to (a disk failure for the block manager,
  // which then fails the directory for good); RESOURCE_EXHAUSTED is ENOSPC (it does not).
  // REQUIRES: n >= 0.
  void FailAfter(int n, OpKind kind, bool one_shot = false,
                 absl::StatusCode code = absl::StatusCode::kInternal) ABSL_LOCKS_EXCLUDED(mu_);
  // Fails each operation of `kind` with `probability`, drawing from Random(seed). Replaces earlier
  // FailAfter/FailRandomly.
  void FailRandomly(double probability, uint64_t seed, OpKind kind = OpKind::kAny)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Stops FailAfter/FailRandomly failures (not a crash; see DropUnsyncedData).
  void ClearFailures() ABSL_LOCKS_EXCLUDED(mu_);
  // Number of failures injected so far (including those caused by the crashed state).
  int64_t num_injected_failures() const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Crash simulation ----
  // Number of successful sync points since construction.
  int64_t num_sync_points() const ABSL_LOCKS_EXCLUDED(mu_);
  // Crash (fail all mutating operations) once `k` more sync points have completed.
  // REQUIRES: k >= 0.
  void SetCrashAtSyncPoint(int64_t k) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns true once the crash point set by SetCrashAtSyncPoint has been reached.
  bool crashed() const ABSL_LOCKS_EXCLUDED(mu_);
  // Reverts the base Env to its durable state as described in the class comment. Returns the
  // first error of the base Env while doing so.
  absl::Status DropUnsyncedData() ABSL_LOCKS_EXCLUDED(mu_);
  // Treats the current state as durable: forgets pending operations and unsynced sizes.
  void ResetState() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class TrackedWritableFile;
  class FaultyRandomAccessFile;
  class FaultySequentialFile;
  friend class TrackedWritableFile;
  friend class FaultyRandomAccessFile;
  friend class FaultySequentialFile;

  // Durability state of a file being written. Shared between files_ and its writers.
  struct FileState {
    uint64_t size = 0;
    uint64_t synced_size = 0;
  };

  // A namespace operation not yet made durable by SyncDir.
  struct PendingOp {
    enum class Type { kCreateFile, kCreateDir, kDeleteFile, kDeleteDir, kRename };
    Type type;
    std::string path;    // Created/deleted path, or rename source.
    std::string target;  // Rename target.
    // Durable contents of the deleted file or of the file a rename replaced.
    std::optional<std::string> saved_contents;
    // Directories still to be synced before the operation is durable.
    std::set<std::string> unsynced_dirs;
  };

  // Returns an injected error if an operation of `kind` on `path` must fail now.
  absl::Status MaybeFail(OpKind kind, std::string_view path) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status MaybeFailLocked(OpKind kind, std::string_view path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordSyncPointLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddPendingLocked(PendingOp op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the durable contents of existing file `path` (through the base Env).
  absl::StatusOr<std::string> ReadDurableContents(const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path, bool truncate)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status UndoLocked(const PendingOp& op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status TruncateToSyncedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  Env* const base_;

  mutable absl::Mutex mu_;
  // Failure injection settings.
  std::optional<OpKind> fail_kind_ ABSL_GUARDED_BY(mu_);
  int fail_countdown_ ABSL_GUARDED_BY(mu_) = 0;
  bool fail_one_shot_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusCode fail_code_ ABSL_GUARDED_BY(mu_) = absl::StatusCode::kInternal;
  double fail_probability_ ABSL_GUARDED_BY(mu_) = 0;  // > 0 selects random failures.
  Random fail_rng_ ABSL_GUARDED_BY(mu_){0};
  int64_t num_injected_failures_ ABSL_GUARDED_BY(mu_) = 0;
  // Crash simulation.
  int64_t num_sync_points_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<int64_t> crash_at_sync_point_ ABSL_GUARDED_BY(mu_);
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  // Incremented by DropUnsyncedData; file objects from an older epoch refuse to work.
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  // Durability tracking, keyed by normalized path.
  std::map<std::string, std::shared_ptr<FileState>> files_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingOp> pending_ ABSL_GUARDED_BY(mu_);
  // Open writers, closed by DropUnsyncedData.
  std::set<TrackedWritableFile*> writers_ ABSL_GUARDED_BY(mu_);
};

const char* OpKindName(FaultInjectionEnv::OpKind kind);

}  // namespace basalt
