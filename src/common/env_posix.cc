// The POSIX implementation of Env (Env::Default()).
//
// Files are opened with O_CLOEXEC; reads and writes use pread/pwrite at tracked offsets and retry
// on EINTR and short transfers. WritableFile buffers appends in user space (kWriteBufferSize) so
// many small appends (WAL records) cost few system calls.

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include <glog/logging.h>

#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {
namespace {

constexpr size_t kWriteBufferSize = 64 * 1024;

// Closes `fd`, retrying nothing: on Linux the descriptor is released even when close fails with
// EINTR, so a retry could close someone else's descriptor.
int CloseFd(int fd) { return close(fd); }

template <typename Fn>
auto RetryOnEintr(Fn fn) {
  decltype(fn()) r;
  do {
    r = fn();
  } while (r < 0 && errno == EINTR);
  return r;
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string filename, int fd, uint64_t initial_size)
      : filename_(std::move(filename)), fd_(fd), flushed_size_(initial_size) {}

  ~PosixWritableFile() override {
    if (fd_ >= 0) {
      absl::Status s = Close();
      LOG_IF(WARNING, !s.ok()) << "closing " << filename_ << " in destructor: " << s;
    }
  }

  absl::Status Append(std::string_view data) override {
    DCHECK_GE(fd_, 0) << filename_ << " is closed";
    if (buffer_.size() + data.size() <= kWriteBufferSize) {
      buffer_.append(data.data(), data.size());
      return absl::OkStatus();
    }
    BASALT_RETURN_IF_ERROR(Flush());
    if (data.size() <= kWriteBufferSize) {
      buffer_.append(data.data(), data.size());
      return absl::OkStatus();
    }
    return WriteUnbuffered(data);  // Large appends bypass the buffer.
  }

  absl::Status Flush() override {
    if (buffer_.empty()) return absl::OkStatus();
    absl::Status s = WriteUnbuffered(buffer_);
    buffer_.clear();
    return s;
  }

  absl::Status Sync() override {
    BASALT_RETURN_IF_ERROR(Flush());
    // fdatasync also persists the file size, which is all the metadata a reader needs.
    if (RetryOnEintr([&] { return fdatasync(fd_); }) != 0) {
      return PosixError(StrCat("fdatasync ", filename_), errno);
    }
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    absl::Status s = Flush();
    // Zeros nobody wrote into are cut off (not synced: a reader of a preallocated file handles
    // them if the cut is lost in a crash).
    if (s.ok() && zeroed_end_ > flushed_size_ &&
        RetryOnEintr([&] { return ftruncate(fd_, static_cast<off_t>(flushed_size_)); }) != 0) {
      s = PosixError(StrCat("truncate ", filename_), errno);
    }
    if (CloseFd(fd_) != 0 && s.ok()) s = PosixError(StrCat("close ", filename_), errno);
    fd_ = -1;
    return s;
  }

  uint64_t Size() const override { return flushed_size_ + buffer_.size(); }
  const std::string& filename() const override { return filename_; }

  absl::Status PreallocateZeros(uint64_t end) override {
    DCHECK_GE(fd_, 0) << filename_ << " is closed";
    BASALT_RETURN_IF_ERROR(Flush());
    uint64_t at = std::max(flushed_size_, zeroed_end_);
    if (end <= at) return absl::OkStatus();
    static const std::string* const kZeros = new std::string(64 << 10, '\0');
    while (at < end) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(end - at, kZeros->size()));
      const ssize_t w =
          RetryOnEintr([&] { return pwrite(fd_, kZeros->data(), n, static_cast<off_t>(at)); });
      if (w < 0) return PosixError(StrCat("write zeros to ", filename_), errno);
      at += static_cast<uint64_t>(w);
    }
    // Durable now, so that the appends' syncs find the file's size and blocks unchanged.
    if (RetryOnEintr([&] { return fdatasync(fd_); }) != 0) {
      return PosixError(StrCat("fdatasync ", filename_), errno);
    }
    zeroed_end_ = at;
    return absl::OkStatus();
  }

 private:
  absl::Status WriteUnbuffered(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = RetryOnEintr(
          [&] { return pwrite(fd_, data.data(), data.size(), static_cast<off_t>(flushed_size_)); });
      if (n < 0) return PosixError(StrCat("write ", filename_), errno);
      data.remove_prefix(static_cast<size_t>(n));
      flushed_size_ += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  }

  const std::string filename_;
  int fd_;
  // Bytes written to the OS; the logical size adds the buffered bytes.
  uint64_t flushed_size_;
  // The file holds zeros written by PreallocateZeros up to here (0: none).
  uint64_t zeroed_end_ = 0;
  std::string buffer_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string filename, int fd) : filename_(std::move(filename)), fd_(fd) {}
  ~PosixRandomAccessFile() override { CloseFd(fd_); }

  absl::Status ReadAt(uint64_t offset, size_t n, char* scratch,
                      std::string_view* result) const override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = RetryOnEintr(
          [&] { return pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done)); });
      if (r < 0) {
        *result = std::string_view();
        return PosixError(StrCat("read ", filename_, " at offset ", offset + done), errno);
      }
      if (r == 0) break;  // End of file.
      done += static_cast<size_t>(r);
    }
    *result = std::string_view(scratch, done);
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Size() const override {
    struct stat st;
    if (fstat(fd_, &st) != 0) return PosixError(StrCat("fstat ", filename_), errno);
    return static_cast<uint64_t>(st.st_size);
  }

  const std::string& filename() const override { return filename_; }

 private:
  const std::string filename_;
  const int fd_;
};

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string filename, int fd) : filename_(std::move(filename)), fd_(fd) {}
  ~PosixSequentialFile() override { CloseFd(fd_); }

  absl::Status Read(size_t n, char* scratch, std::string_view* result) override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = RetryOnEintr([&] { return read(fd_, scratch + done, n - done); });
      if (r < 0) {
        *result = std::string_view();
        return PosixError(StrCat("read ", filename_), errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    *result = std::string_view(scratch, done);
    return absl::OkStatus();
  }

  absl::Status Skip(uint64_t n) override {
    if (lseek(fd_, static_cast<off_t>(n), SEEK_CUR) < 0) {
      return PosixError(StrCat("seek ", filename_), errno);
    }
    return absl::OkStatus();
  }

  const std::string& filename() const override { return filename_; }

 private:
  const std::string filename_;
  const int fd_;
};

class PosixFileLock final : public FileLock {
 public:
  PosixFileLock(std::string filename, int fd) : filename_(std::move(filename)), fd_(fd) {}
  // Closing the descriptor releases the flock.
  ~PosixFileLock() override { CloseFd(fd_); }
  const std::string& filename() const override { return filename_; }

  absl::Status Release() {
    if (RetryOnEintr([&] { return flock(fd_, LOCK_UN); }) != 0) {
      return PosixError(StrCat("unlock ", filename_), errno);
    }
    return absl::OkStatus();
  }

 private:
  const std::string filename_;
  const int fd_;
};

class PosixEnv final : public Env {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    const int fd = RetryOnEintr(
        [&] { return open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); });
    if (fd < 0) return PosixError(StrCat("create ", path), errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, 0));
  }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(
      const std::string& path) override {
    // Not O_APPEND: Linux pwrite ignores the offset on O_APPEND descriptors. We write at the size
    // found at open instead.
    const int fd =
        RetryOnEintr([&] { return open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644); });
    if (fd < 0) return PosixError(StrCat("open for append ", path), errno);
    struct stat st;
    if (fstat(fd, &st) != 0) {
      absl::Status s = PosixError(StrCat("fstat ", path), errno);
      CloseFd(fd);
      return s;
    }
    return std::unique_ptr<WritableFile>(
        new PosixWritableFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    BASALT_ASSIGN_OR_RETURN(const int fd, OpenForRead(path));
    return std::unique_ptr<RandomAccessFile>(new PosixRandomAccessFile(path, fd));
  }

  absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) override {
    BASALT_ASSIGN_OR_RETURN(const int fd, OpenForRead(path));
    return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd));
  }

  bool FileExists(const std::string& path) override { return access(path.c_str(), F_OK) == 0; }

  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return PosixError(StrCat("list directory ", dir), errno);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* entry = readdir(d)) {
      const std::string_view name(entry->d_name);
      if (name != "." && name != "..") names.emplace_back(name);
    }
    const int err = errno;
    closedir(d);
    if (err != 0) return PosixError(StrCat("list directory ", dir), err);
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return PosixError(StrCat("stat ", path), errno);
    return S_ISDIR(st.st_mode);
  }

  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return PosixError(StrCat("stat ", path), errno);
    return static_cast<uint64_t>(st.st_size);
  }

  absl::Status DeleteFile(const std::string& path) override {
    if (unlink(path.c_str()) != 0) return PosixError(StrCat("delete ", path), errno);
    return absl::OkStatus();
  }

  absl::Status RenameFile(const std::string& src, const std::string& target) override {
    if (rename(src.c_str(), target.c_str()) != 0) {
      return PosixError(StrCat("rename ", src, " to ", target), errno);
    }
    return absl::OkStatus();
  }

  absl::Status CreateDir(const std::string& path) override {
    if (mkdir(path.c_str(), 0755) != 0) return PosixError(StrCat("create directory ", path), errno);
    return absl::OkStatus();
  }

  absl::Status DeleteDir(const std::string& path) override {
    if (rmdir(path.c_str()) != 0) return PosixError(StrCat("delete directory ", path), errno);
    return absl::OkStatus();
  }

  absl::Status DeleteDirRecursively(const std::string& path) override {
    // lstat, so a symlink to a directory is removed rather than followed.
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return PosixError(StrCat("stat ", path), errno);
    if (!S_ISDIR(st.st_mode)) return DeleteFile(path);
    BASALT_ASSIGN_OR_RETURN(const std::vector<std::string> children, GetChildren(path));
    for (const std::string& child : children) {
      BASALT_RETURN_IF_ERROR(DeleteDirRecursively(JoinPath(path, child)));
    }
    return DeleteDir(path);
  }

  absl::StatusOr<SpaceInfo> GetSpaceInfo(const std::string& path) override {
    struct statvfs st;
    if (RetryOnEintr([&] { return statvfs(path.c_str(), &st); }) != 0) {
      return PosixError(StrCat("statvfs ", path), errno);
    }
    SpaceInfo info;
    info.capacity_bytes = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
    info.free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    return info;
  }

  absl::Status SyncDir(const std::string& dir) override {
    const int fd =
        RetryOnEintr([&] { return open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) return PosixError(StrCat("open directory ", dir), errno);
    absl::Status s;
    if (RetryOnEintr([&] { return fsync(fd); }) != 0) {
      s = PosixError(StrCat("fsync directory ", dir), errno);
    }
    CloseFd(fd);
    return s;
  }

  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    const int fd =
        RetryOnEintr([&] { return open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644); });
    if (fd < 0) return PosixError(StrCat("open lock file ", path), errno);
    // flock locks belong to the open file description, so a second LockFile of the same path
    // fails even within this process.
    if (RetryOnEintr([&] { return flock(fd, LOCK_EX | LOCK_NB); }) != 0) {
      const int err = errno;
      CloseFd(fd);
      return PosixError(StrCat("lock ", path, " (held by another process or FileLock?)"), err);
    }
    return std::unique_ptr<FileLock>(new PosixFileLock(path, fd));
  }

  absl::Status UnlockFile(std::unique_ptr<FileLock> lock) override {
    CHECK(lock != nullptr);
    auto* posix_lock = dynamic_cast<PosixFileLock*>(lock.get());
    CHECK(posix_lock != nullptr) << "lock " << lock->filename() << " is not from this Env";
    return posix_lock->Release();
  }

 private:
  static absl::StatusOr<int> OpenForRead(const std::string& path) {
    const int fd = RetryOnEintr([&] { return open(path.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd < 0) return PosixError(StrCat("open ", path), errno);
    return fd;
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* const env = new PosixEnv();
  return env;
}

}  // namespace basalt
