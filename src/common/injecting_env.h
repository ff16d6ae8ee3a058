#pragma once

// InjectingEnv: an Env that forwards to a base Env and, for tests of disk faults, makes operations
// on paths under a prefix fail like a failing or full disk (docs/tserver.md "Disk faults"):
//
//   --env_inject_eio=P with --env_inject_eio_path_prefix=DIR: every operation on a path under DIR
//     (open, read, append, sync, rename, delete, directory operations) fails with probability P
//     as EIO would (INTERNAL "... Input/output error (injected)").
//   --env_inject_eio_trigger_file=F: the EIO rule applies only while file F exists (looked up at
//     most every 100 ms), so that a test can make a running server's disk fail at a time it
//     chooses.
//   --env_inject_enospc=P with --env_inject_enospc_path_prefix=DIR: every operation that takes
//     space under DIR (create, append, sync, rename, create directory) fails with probability P
//     as ENOSPC would (RESOURCE_EXHAUSTED "... No space left on device (injected)"), and
//     GetSpaceInfo reports no free space there while P > 0.
//
// The rules start from the flags; in-process tests change them at any time (SetEio, SetEnospc),
// files already open included. An empty prefix injects nothing. Test only: the daemons wrap their
// Env in one only when a prefix flag is set at startup (MaybeWrapForInjection).
//
// Thread-safe. The base Env must outlive this object, and this object its file objects.

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include <gflags/gflags_declare.h>

#include "common/env.h"

DECLARE_double(env_inject_eio);
DECLARE_string(env_inject_eio_path_prefix);
DECLARE_string(env_inject_eio_trigger_file);
DECLARE_double(env_inject_enospc);
DECLARE_string(env_inject_enospc_path_prefix);

namespace basalt {

class InjectingEnv final : public Env {
 public:
  // Rules from the --env_inject_* flags.
  explicit InjectingEnv(Env* base);

  // Operations on paths under `prefix` fail as with EIO (ENOSPC) with `probability`.
  void SetEio(std::string prefix, double probability) ABSL_LOCKS_EXCLUDED(mu_);
  void SetEnospc(std::string prefix, double probability) ABSL_LOCKS_EXCLUDED(mu_);
  // The EIO rule applies only while file `path` exists (empty: always).
  void SetEioTrigger(std::string path) ABSL_LOCKS_EXCLUDED(mu_);

  // The fault an operation on `path` gets now: EIO first, then (if `takes_space`) ENOSPC; OK if
  // none. `what` names the operation in the message.
  absl::Status Inject(const char* what, const std::string& path, bool takes_space) const
      ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) override;
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::Status DeleteFile(const std::string& path) override;
  absl::Status RenameFile(const std::string& src, const std::string& target) override;
  absl::Status CreateDir(const std::string& path) override;
  absl::Status DeleteDir(const std::string& path) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return base_->LockFile(path);
  }
  absl::Status UnlockFile(std::unique_ptr<FileLock> lock) override {
    return base_->UnlockFile(std::move(lock));
  }
  absl::StatusOr<SpaceInfo> GetSpaceInfo(const std::string& path) override;

 private:
  struct Rule {
    std::string prefix;
    double probability = 0;
    bool Covers(const std::string& path) const;
  };

  Env* const base_;
  mutable absl::Mutex mu_;
  Rule eio_ ABSL_GUARDED_BY(mu_);
  Rule enospc_ ABSL_GUARDED_BY(mu_);
  std::string eio_trigger_ ABSL_GUARDED_BY(mu_);
  // Whether eio_trigger_ existed at the last look, and when that was.
  mutable bool eio_triggered_ ABSL_GUARDED_BY(mu_) = false;
  mutable absl::Time eio_trigger_checked_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// `base` itself, or (when a --env_inject_*_path_prefix flag is set) a process-lifetime
// InjectingEnv over it, with a warning in the log.
Env* MaybeWrapForInjection(Env* base);

}  // namespace basalt
