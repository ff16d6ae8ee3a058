#pragma once

// MemoryEnv: a complete file system held in memory, for fast, hermetic tests.

#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"

namespace basalt {

// An Env whose files and directories live in process memory, with the same semantics (and error
// codes) as the POSIX Env where tests can observe them: parents must exist, directories must be
// empty to delete, open files survive deletion and renames, RenameFile replaces atomically, a
// second LockFile of a path fails. It starts with only the root directory "/" (and ".", so
// relative paths work); create the directories tests use with CreateDirs.
//
// Nothing is lost on a "crash": every operation is immediately durable, and Sync/SyncDir only
// check their argument. Use FaultInjectionEnv over a MemoryEnv to test crash behaviour.
//
// File objects keep their file's data alive; the MemoryEnv must outlive FileLocks it returns.
// Thread-safe.
class MemoryEnv final : public Env {
 public:
  MemoryEnv();
  ~MemoryEnv() override;

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

  // Returns the total bytes of file data held.
  uint64_t TotalFileBytes() const;

  // File contents; shared by the namespace and by open file objects. Internal.
  struct FileData;

 private:
  class Lock;
  friend class Lock;

  // All private helpers take paths normalized by NormalizePath.
  // Returns OK if the parent of `path` is an existing directory.
  absl::Status CheckParentLocked(const std::string& path, std::string_view op) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::shared_ptr<FileData>> FindFileLocked(const std::string& path,
                                                           std::string_view op) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path, bool truncate)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Unlock(const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  // Keys are normalized paths.
  std::map<std::string, std::shared_ptr<FileData>> files_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirs_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> locked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
