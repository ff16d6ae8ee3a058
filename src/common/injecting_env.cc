#include "common/injecting_env.h"

#include <random>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/strings.h"

DEFINE_double(env_inject_eio, 0.0,
              "Test only: probability that a file operation under --env_inject_eio_path_prefix "
              "fails as with EIO (a failing disk).");
DEFINE_string(env_inject_eio_path_prefix, "",
              "Test only: the directory whose file operations --env_inject_eio fails (empty: "
              "none).");
DEFINE_string(env_inject_eio_trigger_file, "",
              "Test only: when set, --env_inject_eio applies only while this file exists.");
DEFINE_double(env_inject_enospc, 0.0,
              "Test only: probability that a file operation taking space under "
              "--env_inject_enospc_path_prefix fails as with ENOSPC (a full disk); free space "
              "there reads as 0 while it is above 0.");
DEFINE_string(env_inject_enospc_path_prefix, "",
              "Test only: the directory whose writes --env_inject_enospc fails (empty: none).");

namespace basalt {
namespace {

bool Chance(double p) {
  if (p <= 0) return false;
  if (p >= 1) return true;
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

class InjectingWritableFile final : public WritableFile {
 public:
  InjectingWritableFile(const InjectingEnv* env, std::unique_ptr<WritableFile> base)
      : env_(env), base_(std::move(base)) {}
  absl::Status Append(std::string_view data) override {
    BASALT_RETURN_IF_ERROR(env_->Inject("write", filename(), true));
    return base_->Append(data);
  }
  absl::Status Flush() override {
    BASALT_RETURN_IF_ERROR(env_->Inject("write", filename(), true));
    return base_->Flush();
  }
  absl::Status Sync() override {
    BASALT_RETURN_IF_ERROR(env_->Inject("fdatasync", filename(), true));
    return base_->Sync();
  }
  absl::Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }
  const std::string& filename() const override { return base_->filename(); }

 private:
  const InjectingEnv* const env_;
  const std::unique_ptr<WritableFile> base_;
};

class InjectingRandomAccessFile final : public RandomAccessFile {
 public:
  InjectingRandomAccessFile(const InjectingEnv* env, std::unique_ptr<RandomAccessFile> base)
      : env_(env), base_(std::move(base)) {}
  absl::Status ReadAt(uint64_t offset, size_t n, char* scratch,
                      std::string_view* result) const override {
    BASALT_RETURN_IF_ERROR(env_->Inject("read", filename(), false));
    return base_->ReadAt(offset, n, scratch, result);
  }
  absl::StatusOr<uint64_t> Size() const override { return base_->Size(); }
  const std::string& filename() const override { return base_->filename(); }

 private:
  const InjectingEnv* const env_;
  const std::unique_ptr<RandomAccessFile> base_;
};

class InjectingSequentialFile final : public SequentialFile {
 public:
  InjectingSequentialFile(const InjectingEnv* env, std::unique_ptr<SequentialFile> base)
      : env_(env), base_(std::move(base)) {}
  absl::Status Read(size_t n, char* scratch, std::string_view* result) override {
    BASALT_RETURN_IF_ERROR(env_->Inject("read", filename(), false));
    return base_->Read(n, scratch, result);
  }
  absl::Status Skip(uint64_t n) override { return base_->Skip(n); }
  const std::string& filename() const override { return base_->filename(); }

 private:
  const InjectingEnv* const env_;
  const std::unique_ptr<SequentialFile> base_;
};

}  // namespace

bool InjectingEnv::Rule::Covers(const std::string& path) const {
  if (prefix.empty() || probability <= 0 || path.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/';
}

InjectingEnv::InjectingEnv(Env* base) : base_(base) {
  SetEio(FLAGS_env_inject_eio_path_prefix, FLAGS_env_inject_eio);
  SetEnospc(FLAGS_env_inject_enospc_path_prefix, FLAGS_env_inject_enospc);
  SetEioTrigger(FLAGS_env_inject_eio_trigger_file);
}

void InjectingEnv::SetEioTrigger(std::string path) {
  absl::MutexLock l(&mu_);
  eio_trigger_ = std::move(path);
  eio_trigger_checked_ = absl::InfinitePast();
}

void InjectingEnv::SetEio(std::string prefix, double probability) {
  absl::MutexLock l(&mu_);
  eio_ = Rule{std::move(prefix), probability};
}

void InjectingEnv::SetEnospc(std::string prefix, double probability) {
  absl::MutexLock l(&mu_);
  enospc_ = Rule{std::move(prefix), probability};
}

absl::Status InjectingEnv::Inject(const char* what, const std::string& path,
                                  bool takes_space) const {
  double eio = 0;
  double enospc = 0;
  {
    absl::MutexLock l(&mu_);
    if (eio_.Covers(path)) eio = eio_.probability;
    if (takes_space && enospc_.Covers(path)) enospc = enospc_.probability;
    if (eio > 0 && !eio_trigger_.empty()) {
      const absl::Time now = absl::Now();
      if (now - eio_trigger_checked_ > absl::Milliseconds(100)) {
        eio_triggered_ = base_->FileExists(eio_trigger_);  // A stat; test only.
        eio_trigger_checked_ = now;
      }
      if (!eio_triggered_) eio = 0;
    }
  }
  if (Chance(eio)) {
    return absl::InternalError(StrCat(what, " ", path, ": Input/output error (injected)"));
  }
  if (Chance(enospc)) {
    return absl::ResourceExhaustedError(
        StrCat(what, " ", path, ": No space left on device (injected)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<WritableFile>> InjectingEnv::NewWritableFile(
    const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("create", path, true));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, base_->NewWritableFile(path));
  return std::unique_ptr<WritableFile>(new InjectingWritableFile(this, std::move(f)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> InjectingEnv::NewAppendableFile(
    const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("open for append", path, true));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, base_->NewAppendableFile(path));
  return std::unique_ptr<WritableFile>(new InjectingWritableFile(this, std::move(f)));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> InjectingEnv::NewRandomAccessFile(
    const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("open", path, false));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, base_->NewRandomAccessFile(path));
  return std::unique_ptr<RandomAccessFile>(new InjectingRandomAccessFile(this, std::move(f)));
}

absl::StatusOr<std::unique_ptr<SequentialFile>> InjectingEnv::NewSequentialFile(
    const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("open", path, false));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> f, base_->NewSequentialFile(path));
  return std::unique_ptr<SequentialFile>(new InjectingSequentialFile(this, std::move(f)));
}

absl::StatusOr<std::vector<std::string>> InjectingEnv::GetChildren(const std::string& dir) {
  BASALT_RETURN_IF_ERROR(Inject("list directory", dir, false));
  return base_->GetChildren(dir);
}

absl::StatusOr<bool> InjectingEnv::IsDirectory(const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("stat", path, false));
  return base_->IsDirectory(path);
}

absl::StatusOr<uint64_t> InjectingEnv::GetFileSize(const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("stat", path, false));
  return base_->GetFileSize(path);
}

absl::Status InjectingEnv::DeleteFile(const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("delete", path, false));
  return base_->DeleteFile(path);
}

absl::Status InjectingEnv::RenameFile(const std::string& src, const std::string& target) {
  BASALT_RETURN_IF_ERROR(Inject("rename", src, true));
  BASALT_RETURN_IF_ERROR(Inject("rename", target, true));
  return base_->RenameFile(src, target);
}

absl::Status InjectingEnv::CreateDir(const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("create directory", path, true));
  return base_->CreateDir(path);
}

absl::Status InjectingEnv::DeleteDir(const std::string& path) {
  BASALT_RETURN_IF_ERROR(Inject("delete directory", path, false));
  return base_->DeleteDir(path);
}

absl::Status InjectingEnv::SyncDir(const std::string& dir) {
  BASALT_RETURN_IF_ERROR(Inject("fsync directory", dir, true));
  return base_->SyncDir(dir);
}

absl::StatusOr<SpaceInfo> InjectingEnv::GetSpaceInfo(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(SpaceInfo info, base_->GetSpaceInfo(path));
  absl::MutexLock l(&mu_);
  if (enospc_.Covers(path)) info.free_bytes = 0;
  return info;
}

Env* MaybeWrapForInjection(Env* base) {
  if (FLAGS_env_inject_eio_path_prefix.empty() && FLAGS_env_inject_enospc_path_prefix.empty()) {
    return base;
  }
  LOG(WARNING) << "file operations go through the fault injection Env (test only): EIO under '"
               << FLAGS_env_inject_eio_path_prefix << "' at " << FLAGS_env_inject_eio
               << (FLAGS_env_inject_eio_trigger_file.empty()
                       ? ""
                       : StrCat(" while ", FLAGS_env_inject_eio_trigger_file, " exists"))
               << ", ENOSPC under '" << FLAGS_env_inject_enospc_path_prefix << "' at "
               << FLAGS_env_inject_enospc;
  static Env* const wrapped = new InjectingEnv(base);  // Lives as long as the process.
  return wrapped;
}

}  // namespace basalt
