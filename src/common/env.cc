#include "common/env.h"

#include <cerrno>
#include <cstring>

#include <glog/logging.h>

#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

absl::Status Env::CreateDirs(const std::string& path) {
  absl::StatusOr<bool> is_dir = IsDirectory(path);
  if (is_dir.ok()) {
    if (*is_dir) return absl::OkStatus();
    return absl::AlreadyExistsError(StrCat("create directories ", path, ": exists as a file"));
  }
  if (!absl::IsNotFound(is_dir.status())) return is_dir.status();
  const std::string parent = DirName(path);
  if (parent != path) BASALT_RETURN_IF_ERROR(CreateDirs(parent));
  absl::Status s = CreateDir(path);
  if (absl::IsAlreadyExists(s)) {
    // Lost a race with a concurrent creator; fine if it made a directory.
    is_dir = IsDirectory(path);
    if (is_dir.ok() && *is_dir) return absl::OkStatus();
  }
  return s;
}

absl::Status Env::DeleteDirRecursively(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(const bool is_dir, IsDirectory(path));
  if (!is_dir) return DeleteFile(path);
  BASALT_ASSIGN_OR_RETURN(const std::vector<std::string> children, GetChildren(path));
  for (const std::string& child : children) {
    BASALT_RETURN_IF_ERROR(DeleteDirRecursively(JoinPath(path, child)));
  }
  return DeleteDir(path);
}

absl::Status Env::UnlockFile(std::unique_ptr<FileLock> lock) {
  CHECK(lock != nullptr);
  lock.reset();  // Implementations release the lock in their destructor.
  return absl::OkStatus();
}

absl::StatusOr<SpaceInfo> Env::GetSpaceInfo(const std::string& path) {
  return absl::UnimplementedError(StrCat("no space information for ", path));
}

absl::Status WriteFileAtomically(Env* env, const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  auto write_tmp = [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(tmp));
    BASALT_RETURN_IF_ERROR(file->Append(data));
    BASALT_RETURN_IF_ERROR(file->Sync());
    return file->Close();
  };
  absl::Status s = write_tmp();
  if (s.ok()) s = env->RenameFile(tmp, path);
  if (!s.ok()) {
    // Best effort: the temporary file is garbage either way and is overwritten next time.
    env->DeleteFile(tmp).IgnoreError();
    return s;
  }
  return env->SyncDir(DirName(path));
}

absl::Status ReadFileToString(Env* env, const std::string& path, std::string* data) {
  data->clear();
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, env->NewSequentialFile(path));
  constexpr size_t kChunk = 64 * 1024;
  std::string scratch(kChunk, '\0');
  while (true) {
    std::string_view chunk;
    BASALT_RETURN_IF_ERROR(file->Read(kChunk, scratch.data(), &chunk));
    if (chunk.empty()) return absl::OkStatus();
    data->append(chunk.data(), chunk.size());
  }
}

absl::Status WriteStringToFile(Env* env, const std::string& path, std::string_view data,
                               bool sync) {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(path));
  BASALT_RETURN_IF_ERROR(file->Append(data));
  if (sync) BASALT_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string result(dir);
  if (result.back() != '/') result.push_back('/');
  result.append(name.data(), name.size());
  return result;
}

namespace {

// Returns `path` without trailing slashes, keeping a lone "/".
std::string_view StripTrailingSlashes(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return path;
}

}  // namespace

std::string DirName(std::string_view path) {
  path = StripTrailingSlashes(path);
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(StripTrailingSlashes(path.substr(0, slash)));
}

std::string BaseName(std::string_view path) {
  path = StripTrailingSlashes(path);
  if (path == "/") return "/";
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string NormalizePath(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

absl::Status PosixError(std::string_view context, int errno_value) {
  char buf[256];
  // GNU strerror_r returns a pointer to the message (possibly not `buf`).
  const char* msg = strerror_r(errno_value, buf, sizeof(buf));
  std::string message = StrCat(context, ": ", msg, " (errno ", errno_value, ")");
  switch (errno_value) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case ENOSPC:
    case EDQUOT:
    // Out of descriptors or memory: the process's limits, not a failing disk (an INTERNAL error
    // of a block operation fails its data directory for good: cfile/block_manager.h).
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::ResourceExhaustedError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOTDIR:
    case EISDIR:
    case ENOTEMPTY:
      return absl::FailedPreconditionError(message);
    case EWOULDBLOCK:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace basalt
