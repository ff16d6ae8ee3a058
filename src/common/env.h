#pragma once

// Env: the file-system interface under column files, the WAL and all metadata.
//
// Every Basalt component does file I/O through an `Env*` so tests can substitute an in-memory
// file system (MemoryEnv, common/env_memory.h) or one that injects failures and simulates crashes
// (FaultInjectionEnv, common/fault_injection_env.h). Env::Default() is the real POSIX file system.
//
// Durability contract (what a crash may lose), shared by every implementation:
//  - Bytes appended to a WritableFile are durable only after a successful Sync() of that file.
//  - Creating, renaming or deleting a directory entry is durable only after a successful
//    SyncDir() of the directory containing it (both directories for a cross-directory rename).
//  - RenameFile atomically replaces an existing target: after a crash the target name refers to
//    either the old or the new file, never to a mix or to nothing.
// WriteFileAtomically() below builds "replace this small file durably" from these rules.
//
// Errors: absl::Status codes follow the POSIX mapping in PosixError(): NOT_FOUND for a missing
// file or directory, ALREADY_EXISTS, RESOURCE_EXHAUSTED for a full disk, PERMISSION_DENIED,
// FAILED_PRECONDITION for a wrong kind of path (not a directory, directory not empty), INTERNAL
// for other I/O errors. Messages name the operation and the path.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt {

// A file open for sequential writing. Obtained from Env::NewWritableFile / NewAppendableFile.
// The destructor closes the file if Close() was not called (logging, not returning, an error).
// Not thread-safe; the caller serializes.
class WritableFile {
 public:
  virtual ~WritableFile() = default;

  // Appends `data` at the end of the file. The data may sit in a user-space buffer until Flush(),
  // Sync() or Close(). Returns an I/O error status on failure; after an error the file's contents
  // past the last successful Sync() are unspecified.
  virtual absl::Status Append(std::string_view data) = 0;

  // Hands buffered data to the operating system so other readers of the file can see it. Does not
  // make it durable.
  virtual absl::Status Flush() = 0;

  // Makes everything appended so far (and the file's size) durable: fdatasync on POSIX.
  virtual absl::Status Sync() = 0;

  // Flushes and closes the file. Does not sync. Further calls other than the destructor are
  // invalid. Returns the first error of the flush or the close.
  virtual absl::Status Close() = 0;

  // Returns the logical size of the file: its size at open plus all bytes appended since.
  virtual uint64_t Size() const = 0;

  // Makes the file hold durable zero bytes from the end of what was appended up to offset
  // `end` (no-op where it already does, or if `end` <= Size()); Size() does not change and later
  // appends overwrite them. Why: an fdatasync after overwriting blocks already written writes
  // only the data, while one after growing the file must also write its inode (here 80 instead
  // of 140 us of CPU and 300 instead of 450 us per append + fdatasync; docs/performance.md). A
  // reader of such a file must know where its data ends (WAL segments: consensus/log_segment.h):
  // Close() cuts the zeros off, but a crash before it leaves them.
  // The default does nothing: files of the in-memory and fault-injecting environments stay
  // exactly their appended size.
  virtual absl::Status PreallocateZeros(uint64_t /*end*/) { return absl::OkStatus(); }

  virtual const std::string& filename() const = 0;
};

// A file open for reads at arbitrary offsets. Obtained from Env::NewRandomAccessFile.
// Thread-safe: concurrent ReadAt calls are allowed.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;

  // Reads up to `n` bytes starting at `offset`. On success `*result` holds the bytes read; it may
  // point into `scratch` (which must have room for n bytes and outlive the use of *result) or
  // elsewhere. Fewer than n bytes are returned only when the range extends past the end of the
  // file (empty if offset >= Size()); callers needing exactly n bytes must check result->size()
  // and report a short read as DATA_LOSS. Returns an I/O error status on failure.
  virtual absl::Status ReadAt(uint64_t offset, size_t n, char* scratch,
                              std::string_view* result) const = 0;

  // Returns the current size of the file.
  virtual absl::StatusOr<uint64_t> Size() const = 0;

  virtual const std::string& filename() const = 0;
};

// A file read from front to back. Obtained from Env::NewSequentialFile.
// Not thread-safe; the caller serializes.
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;

  // Reads up to `n` bytes into `scratch` and sets `*result` to them. Fewer than n bytes (possibly
  // none) are returned only at the end of the file. `scratch` must have room for n bytes.
  virtual absl::Status Read(size_t n, char* scratch, std::string_view* result) = 0;

  // Skips `n` bytes. Skipping past the end of the file is not an error; later reads return
  // nothing.
  virtual absl::Status Skip(uint64_t n) = 0;

  virtual const std::string& filename() const = 0;
};

// An exclusive lock on a file, held until Env::UnlockFile or destruction of this object. Used so
// two daemons cannot share a data directory. The Env that created the lock must outlive it.
class FileLock {
 public:
  virtual ~FileLock() = default;
  virtual const std::string& filename() const = 0;
};

// Space of the file system holding a path.
struct SpaceInfo {
  uint64_t capacity_bytes = 0;
  uint64_t free_bytes = 0;  // Available to this (unprivileged) process.
};

// The file-system interface. Paths are absolute or relative to the process working directory;
// implementations treat "a/b/" like "a/b". Ownership: every returned file object belongs to the
// caller and must not outlive the Env.
// Thread-safe: all methods may be called concurrently.
class Env {
 public:
  virtual ~Env() = default;

  // Returns the POSIX file system. Never null; lives for the whole process; must not be deleted.
  static Env* Default();

  // Creates `path`, truncating it if it exists, and opens it for writing.
  // NOT_FOUND if the parent directory does not exist.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) = 0;

  // Opens `path` for appending at its end, creating it (empty) if it does not exist. Size()
  // starts at the existing size.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(
      const std::string& path) = 0;

  // Opens an existing file for random reads. NOT_FOUND if it does not exist.
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;

  // Opens an existing file for sequential reads from its start. NOT_FOUND if it does not exist.
  virtual absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) = 0;

  // Returns true if `path` names an existing file or directory.
  virtual bool FileExists(const std::string& path) = 0;

  // Returns the names (not paths) of the entries of directory `dir`, sorted, without "." and
  // "..". NOT_FOUND if `dir` does not exist; FAILED_PRECONDITION if it is not a directory.
  virtual absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;

  // Returns whether `path` is a directory. NOT_FOUND if it does not exist.
  virtual absl::StatusOr<bool> IsDirectory(const std::string& path) = 0;

  // Returns the size of file `path`. NOT_FOUND if it does not exist.
  virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;

  // Removes file `path`. NOT_FOUND if it does not exist. Open files stay readable and writable.
  virtual absl::Status DeleteFile(const std::string& path) = 0;

  // Renames file `src` to `target`, atomically replacing `target` if it exists. NOT_FOUND if
  // `src` (or the target's directory) does not exist.
  virtual absl::Status RenameFile(const std::string& src, const std::string& target) = 0;

  // Creates directory `path`. ALREADY_EXISTS if it exists; NOT_FOUND if its parent does not.
  virtual absl::Status CreateDir(const std::string& path) = 0;

  // Creates directory `path` and any missing parents. OK if it already exists as a directory;
  // ALREADY_EXISTS if it or a parent exists as a non-directory.
  virtual absl::Status CreateDirs(const std::string& path);

  // Removes empty directory `path`. NOT_FOUND if missing; FAILED_PRECONDITION if not empty.
  virtual absl::Status DeleteDir(const std::string& path) = 0;

  // Removes directory `path` and everything below it (symlinks are removed, not followed).
  // NOT_FOUND if `path` does not exist.
  virtual absl::Status DeleteDirRecursively(const std::string& path);

  // Makes the creations, renames and deletions of entries in directory `dir` durable (fsync of
  // the directory on POSIX). NOT_FOUND if `dir` does not exist.
  virtual absl::Status SyncDir(const std::string& dir) = 0;

  // Takes an exclusive lock on `path` (creating the file if needed) and returns it. UNAVAILABLE if
  // another process or another FileLock already holds it. The lock is released by UnlockFile or by
  // destroying the returned object; on POSIX the OS also releases it when the process dies.
  virtual absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;

  // Releases a lock returned by LockFile of this Env.
  virtual absl::Status UnlockFile(std::unique_ptr<FileLock> lock);

  // The capacity and free space of the file system holding `path` (statvfs on POSIX). The default
  // is UNIMPLEMENTED (an Env without a notion of space: callers treat the space as unlimited).
  virtual absl::StatusOr<SpaceInfo> GetSpaceInfo(const std::string& path);
};

// Durably replaces the contents of `path` with `data`: writes `path` + ".tmp", syncs it, renames
// it over `path` and syncs the parent directory. After a crash at any point, `path` holds either
// its old contents (or does not exist, if it did not before) or `data`, never a mix; a stale
// ".tmp" file may be left behind and is overwritten by the next call. Returns the first error;
// on error the temporary file is removed on a best-effort basis.
absl::Status WriteFileAtomically(Env* env, const std::string& path, std::string_view data);

// Replaces `*data` with the whole contents of file `path`. NOT_FOUND if it does not exist.
absl::Status ReadFileToString(Env* env, const std::string& path, std::string* data);

// Writes `data` to `path` (created or truncated), syncing the file if `sync`. Not atomic: a crash
// may leave a prefix. Prefer WriteFileAtomically for metadata.
absl::Status WriteStringToFile(Env* env, const std::string& path, std::string_view data, bool sync);

// Path helpers. Paths use '/' separators.
// JoinPath("a", "b") == "a/b"; JoinPath("a/", "b") == "a/b"; JoinPath("", "b") == "b".
std::string JoinPath(std::string_view dir, std::string_view name);
// Returns the directory part of `path`: DirName("/a/b") == "/a", DirName("/a") == "/",
// DirName("a") == ".", DirName("a/b/") == "a". Trailing slashes are ignored.
std::string DirName(std::string_view path);
// Returns the last component: BaseName("/a/b") == "b", BaseName("a/b/") == "b".
std::string BaseName(std::string_view path);
// Returns `path` with duplicate and trailing slashes removed ("/a//b/" -> "/a/b"; "/" stays).
// Does not resolve "." or "..".
std::string NormalizePath(std::string_view path);

// Returns a status for a failed POSIX call: `context` (typically "<operation> <path>") followed
// by strerror(errno_value). ENOENT → NOT_FOUND, EEXIST → ALREADY_EXISTS, ENOSPC/EDQUOT →
// RESOURCE_EXHAUSTED, EACCES/EPERM/EROFS → PERMISSION_DENIED, ENOTDIR/EISDIR/ENOTEMPTY →
// FAILED_PRECONDITION, EWOULDBLOCK → UNAVAILABLE, anything else → INTERNAL.
absl::Status PosixError(std::string_view context, int errno_value);

}  // namespace basalt
