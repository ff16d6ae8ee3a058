#include "common/env_memory.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <glog/logging.h>

#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

struct MemoryEnv::FileData {
  mutable absl::Mutex mu;
  std::string data ABSL_GUARDED_BY(mu);
};

namespace {

using FileData = MemoryEnv::FileData;

uint64_t DataSize(const FileData& f) {
  absl::MutexLock l(&f.mu);
  return f.data.size();
}

class MemoryWritableFile final : public WritableFile {
 public:
  MemoryWritableFile(std::string filename, std::shared_ptr<FileData> file)
      : filename_(std::move(filename)), file_(std::move(file)), size_(DataSize(*file_)) {}

  absl::Status Append(std::string_view data) override {
    DCHECK(!closed_) << filename_ << " is closed";
    absl::MutexLock l(&file_->mu);
    // Write at this writer's position, like pwrite, so a concurrent truncation by another writer
    // behaves as on POSIX (the gap is zero-filled).
    if (file_->data.size() < size_) file_->data.resize(size_, '\0');
    file_->data.replace(size_, data.size(), data.data(), data.size());
    size_ += data.size();
    return absl::OkStatus();
  }
  absl::Status Flush() override { return absl::OkStatus(); }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Close() override {
    closed_ = true;
    return absl::OkStatus();
  }
  uint64_t Size() const override { return size_; }
  const std::string& filename() const override { return filename_; }

 private:
  const std::string filename_;
  const std::shared_ptr<FileData> file_;
  uint64_t size_;
  bool closed_ = false;
};

class MemoryRandomAccessFile final : public RandomAccessFile {
 public:
  MemoryRandomAccessFile(std::string filename, std::shared_ptr<FileData> file)
      : filename_(std::move(filename)), file_(std::move(file)) {}

  absl::Status ReadAt(uint64_t offset, size_t n, char* scratch,
                      std::string_view* result) const override {
    absl::MutexLock l(&file_->mu);
    if (offset >= file_->data.size()) {
      *result = std::string_view();
      return absl::OkStatus();
    }
    const size_t len = std::min<uint64_t>(n, file_->data.size() - offset);
    // Copy: the file may change after the lock is released.
    std::memcpy(scratch, file_->data.data() + offset, len);
    *result = std::string_view(scratch, len);
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Size() const override { return DataSize(*file_); }
  const std::string& filename() const override { return filename_; }

 private:
  const std::string filename_;
  const std::shared_ptr<FileData> file_;
};

class MemorySequentialFile final : public SequentialFile {
 public:
  MemorySequentialFile(std::string filename, std::shared_ptr<FileData> file)
      : file_(filename, std::move(file)) {}

  absl::Status Read(size_t n, char* scratch, std::string_view* result) override {
    BASALT_RETURN_IF_ERROR(file_.ReadAt(pos_, n, scratch, result));
    pos_ += result->size();
    return absl::OkStatus();
  }
  absl::Status Skip(uint64_t n) override {
    pos_ += n;
    return absl::OkStatus();
  }
  const std::string& filename() const override { return file_.filename(); }

 private:
  MemoryRandomAccessFile file_;
  uint64_t pos_ = 0;
};

}  // namespace

class MemoryEnv::Lock final : public FileLock {
 public:
  Lock(MemoryEnv* env, std::string filename) : env_(env), filename_(std::move(filename)) {}
  ~Lock() override { env_->Unlock(filename_); }
  const std::string& filename() const override { return filename_; }

 private:
  MemoryEnv* const env_;
  const std::string filename_;
};

MemoryEnv::MemoryEnv() {
  absl::MutexLock l(&mu_);
  dirs_.insert("/");
  dirs_.insert(".");
}

MemoryEnv::~MemoryEnv() = default;

absl::Status MemoryEnv::CheckParentLocked(const std::string& path, std::string_view op) const {
  const std::string parent = DirName(path);
  if (dirs_.count(parent) != 0) return absl::OkStatus();
  if (files_.count(parent) != 0) {
    return absl::FailedPreconditionError(StrCat(op, " ", path, ": parent is not a directory"));
  }
  return absl::NotFoundError(StrCat(op, " ", path, ": parent directory does not exist"));
}

absl::StatusOr<std::shared_ptr<FileData>> MemoryEnv::FindFileLocked(const std::string& path,
                                                                    std::string_view op) const {
  auto it = files_.find(path);
  if (it != files_.end()) return it->second;
  if (dirs_.count(path) != 0) {
    return absl::FailedPreconditionError(StrCat(op, " ", path, ": is a directory"));
  }
  return absl::NotFoundError(StrCat(op, " ", path, ": no such file"));
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemoryEnv::OpenForWrite(const std::string& raw_path,
                                                                      bool truncate) {
  const std::string path = NormalizePath(raw_path);
  std::shared_ptr<FileData> file;
  {
    absl::MutexLock l(&mu_);
    BASALT_RETURN_IF_ERROR(CheckParentLocked(path, "create"));
    if (dirs_.count(path) != 0) {
      return absl::FailedPreconditionError(StrCat("create ", path, ": is a directory"));
    }
    std::shared_ptr<FileData>& slot = files_[path];
    if (slot == nullptr) slot = std::make_shared<FileData>();
    file = slot;
  }
  if (truncate) {
    absl::MutexLock l(&file->mu);
    file->data.clear();
  }
  return std::unique_ptr<WritableFile>(new MemoryWritableFile(path, std::move(file)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemoryEnv::NewWritableFile(const std::string& path) {
  return OpenForWrite(path, /*truncate=*/true);
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemoryEnv::NewAppendableFile(
    const std::string& path) {
  return OpenForWrite(path, /*truncate=*/false);
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> MemoryEnv::NewRandomAccessFile(
    const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  absl::MutexLock l(&mu_);
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<FileData> file, FindFileLocked(path, "open"));
  return std::unique_ptr<RandomAccessFile>(new MemoryRandomAccessFile(path, std::move(file)));
}

absl::StatusOr<std::unique_ptr<SequentialFile>> MemoryEnv::NewSequentialFile(
    const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  absl::MutexLock l(&mu_);
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<FileData> file, FindFileLocked(path, "open"));
  return std::unique_ptr<SequentialFile>(new MemorySequentialFile(path, std::move(file)));
}

bool MemoryEnv::FileExists(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  absl::MutexLock l(&mu_);
  return files_.count(path) != 0 || dirs_.count(path) != 0;
}

absl::StatusOr<std::vector<std::string>> MemoryEnv::GetChildren(const std::string& raw_dir) {
  const std::string dir = NormalizePath(raw_dir);
  absl::MutexLock l(&mu_);
  if (dirs_.count(dir) == 0) {
    if (files_.count(dir) != 0) {
      return absl::FailedPreconditionError(StrCat("list directory ", dir, ": not a directory"));
    }
    return absl::NotFoundError(StrCat("list directory ", dir, ": no such directory"));
  }
  std::vector<std::string> names;
  for (const auto& [path, file] : files_) {
    if (DirName(path) == dir) names.push_back(BaseName(path));
  }
  for (const std::string& path : dirs_) {
    if (path != dir && DirName(path) == dir) names.push_back(BaseName(path));
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<bool> MemoryEnv::IsDirectory(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  absl::MutexLock l(&mu_);
  if (dirs_.count(path) != 0) return true;
  if (files_.count(path) != 0) return false;
  return absl::NotFoundError(StrCat("stat ", path, ": no such file or directory"));
}

absl::StatusOr<uint64_t> MemoryEnv::GetFileSize(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  std::shared_ptr<FileData> file;
  {
    absl::MutexLock l(&mu_);
    auto it = files_.find(path);
    if (it == files_.end()) {
      if (dirs_.count(path) != 0) return 0;  // Like stat: directories have a size.
      return absl::NotFoundError(StrCat("stat ", path, ": no such file"));
    }
    file = it->second;
  }
  return DataSize(*file);
}

absl::Status MemoryEnv::DeleteFile(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  absl::MutexLock l(&mu_);
  BASALT_RETURN_IF_ERROR(FindFileLocked(path, "delete").status());
  files_.erase(path);
  return absl::OkStatus();
}

absl::Status MemoryEnv::RenameFile(const std::string& raw_src, const std::string& raw_target) {
  const std::string src = NormalizePath(raw_src);
  const std::string target = NormalizePath(raw_target);
  absl::MutexLock l(&mu_);
  const std::string op = StrCat("rename ", src, " to");
  BASALT_RETURN_IF_ERROR(CheckParentLocked(target, op));
  if (src == target && (files_.count(src) != 0 || dirs_.count(src) != 0)) return absl::OkStatus();
  auto it = files_.find(src);
  if (it != files_.end()) {
    if (dirs_.count(target) != 0) {
      return absl::FailedPreconditionError(StrCat(op, " ", target, ": target is a directory"));
    }
    std::shared_ptr<FileData> file = std::move(it->second);
    files_.erase(it);
    files_[target] = std::move(file);
    return absl::OkStatus();
  }
  if (dirs_.count(src) == 0) {
    return absl::NotFoundError(StrCat("rename ", src, ": no such file or directory"));
  }
  // Directory rename: only to a name that does not exist yet, and not into itself.
  if (files_.count(target) != 0 || dirs_.count(target) != 0) {
    return absl::AlreadyExistsError(StrCat(op, " ", target, ": target exists"));
  }
  const std::string prefix = src + "/";
  if (target.starts_with(prefix)) {
    return absl::InvalidArgumentError(StrCat(op, " ", target, ": target is inside source"));
  }
  // Entries below src are contiguous in the sorted maps.
  const auto rebase = [&](const std::string& key) { return target + key.substr(src.size()); };
  std::vector<std::pair<std::string, std::shared_ptr<FileData>>> moved_files;
  for (auto f = files_.lower_bound(prefix); f != files_.end() && f->first.starts_with(prefix);) {
    moved_files.emplace_back(rebase(f->first), std::move(f->second));
    f = files_.erase(f);
  }
  files_.insert(moved_files.begin(), moved_files.end());
  std::vector<std::string> moved_dirs;
  for (auto d = dirs_.lower_bound(prefix); d != dirs_.end() && d->starts_with(prefix);) {
    moved_dirs.push_back(rebase(*d));
    d = dirs_.erase(d);
  }
  dirs_.insert(moved_dirs.begin(), moved_dirs.end());
  dirs_.erase(src);
  dirs_.insert(target);
  return absl::OkStatus();
}

absl::Status MemoryEnv::CreateDir(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  absl::MutexLock l(&mu_);
  if (dirs_.count(path) != 0 || files_.count(path) != 0) {
    return absl::AlreadyExistsError(StrCat("create directory ", path, ": exists"));
  }
  BASALT_RETURN_IF_ERROR(CheckParentLocked(path, "create directory"));
  dirs_.insert(path);
  return absl::OkStatus();
}

absl::Status MemoryEnv::DeleteDir(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  absl::MutexLock l(&mu_);
  if (dirs_.count(path) == 0) {
    if (files_.count(path) != 0) {
      return absl::FailedPreconditionError(StrCat("delete directory ", path, ": not a directory"));
    }
    return absl::NotFoundError(StrCat("delete directory ", path, ": no such directory"));
  }
  auto has_child = [&](const std::string& p) { return p != path && DirName(p) == path; };
  if (std::any_of(dirs_.begin(), dirs_.end(), has_child) ||
      std::any_of(files_.begin(), files_.end(),
                  [&](const auto& e) { return has_child(e.first); })) {
    return absl::FailedPreconditionError(StrCat("delete directory ", path, ": not empty"));
  }
  dirs_.erase(path);
  return absl::OkStatus();
}

absl::Status MemoryEnv::SyncDir(const std::string& raw_dir) {
  const std::string dir = NormalizePath(raw_dir);
  absl::MutexLock l(&mu_);
  if (dirs_.count(dir) != 0) return absl::OkStatus();
  if (files_.count(dir) != 0) {
    return absl::FailedPreconditionError(StrCat("sync directory ", dir, ": not a directory"));
  }
  return absl::NotFoundError(StrCat("sync directory ", dir, ": no such directory"));
}

absl::StatusOr<std::unique_ptr<FileLock>> MemoryEnv::LockFile(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  absl::MutexLock l(&mu_);
  if (locked_.count(path) != 0) {
    return absl::UnavailableError(StrCat("lock ", path, ": already locked"));
  }
  if (files_.count(path) == 0) {
    BASALT_RETURN_IF_ERROR(CheckParentLocked(path, "open lock file"));
    if (dirs_.count(path) != 0) {
      return absl::FailedPreconditionError(StrCat("open lock file ", path, ": is a directory"));
    }
    files_[path] = std::make_shared<FileData>();
  }
  locked_.insert(path);
  return std::unique_ptr<FileLock>(new Lock(this, path));
}

void MemoryEnv::Unlock(const std::string& path) {
  absl::MutexLock l(&mu_);
  CHECK_EQ(locked_.erase(path), 1u) << "lock " << path << " was not held";
}

uint64_t MemoryEnv::TotalFileBytes() const {
  std::vector<std::shared_ptr<FileData>> files;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [path, file] : files_) files.push_back(file);
  }
  uint64_t total = 0;
  for (const auto& f : files) total += DataSize(*f);
  return total;
}

}  // namespace basalt
