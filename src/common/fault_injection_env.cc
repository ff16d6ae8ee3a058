#include "common/fault_injection_env.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

using OpKind = FaultInjectionEnv::OpKind;

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kAny:
      return "any";
    case OpKind::kCreate:
      return "create";
    case OpKind::kAppend:
      return "append";
    case OpKind::kSync:
      return "sync";
    case OpKind::kSyncDir:
      return "sync dir";
    case OpKind::kRename:
      return "rename";
    case OpKind::kDelete:
      return "delete";
    case OpKind::kRead:
      return "read";
  }
  return "unknown";
}

namespace {

bool IsUnder(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
}

// Moves tracking entries for `from` and everything below it to `to`.
template <typename Map>
void MoveTracked(Map* files, const std::string& from, const std::string& to) {
  std::vector<std::pair<std::string, typename Map::mapped_type>> moved;
  for (auto it = files->begin(); it != files->end();) {
    if (it->first == from || IsUnder(it->first, from)) {
      moved.emplace_back(to + it->first.substr(from.size()), std::move(it->second));
      it = files->erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [path, state] : moved) (*files)[path] = std::move(state);
}

}  // namespace

// ---- File wrappers ----

class FaultInjectionEnv::TrackedWritableFile final : public WritableFile {
 public:
  TrackedWritableFile(FaultInjectionEnv* env, std::unique_ptr<WritableFile> base,
                      std::shared_ptr<FileState> state, uint64_t epoch)
      : env_(env), base_(std::move(base)), state_(std::move(state)), epoch_(epoch) {
    absl::MutexLock l(&env_->mu_);
    env_->writers_.insert(this);
  }

  ~TrackedWritableFile() override {
    absl::MutexLock l(&env_->mu_);
    env_->writers_.erase(this);
  }

  absl::Status Append(std::string_view data) override {
    {
      absl::MutexLock l(&env_->mu_);
      BASALT_RETURN_IF_ERROR(CheckAliveLocked());
      BASALT_RETURN_IF_ERROR(env_->MaybeFailLocked(OpKind::kAppend, filename()));
    }
    BASALT_RETURN_IF_ERROR(base_->Append(data));
    absl::MutexLock l(&env_->mu_);
    state_->size += data.size();
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    {
      absl::MutexLock l(&env_->mu_);
      BASALT_RETURN_IF_ERROR(CheckAliveLocked());
    }
    return base_->Flush();
  }

  absl::Status Sync() override {
    uint64_t size_at_start;
    {
      absl::MutexLock l(&env_->mu_);
      BASALT_RETURN_IF_ERROR(CheckAliveLocked());
      BASALT_RETURN_IF_ERROR(env_->MaybeFailLocked(OpKind::kSync, filename()));
      size_at_start = state_->size;
    }
    BASALT_RETURN_IF_ERROR(base_->Sync());
    absl::MutexLock l(&env_->mu_);
    if (epoch_ == env_->epoch_) {
      state_->synced_size = std::max(state_->synced_size, size_at_start);
      env_->RecordSyncPointLocked();
    }
    return absl::OkStatus();
  }

  absl::Status Close() override {
    {
      absl::MutexLock l(&env_->mu_);
      BASALT_RETURN_IF_ERROR(CheckAliveLocked());
    }
    return base_->Close();
  }

  uint64_t Size() const override { return base_->Size(); }
  const std::string& filename() const override { return base_->filename(); }

  // Closes the base file for a simulated crash. Called by DropUnsyncedData with env_->mu_ held
  // (not annotated: the analysis cannot tell that the caller's `this` is env_).
  void CloseForCrashLocked() {
    absl::Status s = base_->Close();
    LOG_IF(WARNING, !s.ok()) << "closing " << filename() << " for simulated crash: " << s;
  }

 private:
  absl::Status CheckAliveLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(env_->mu_) {
    if (epoch_ == env_->epoch_) return absl::OkStatus();
    return absl::InternalError(
        StrCat("injected I/O error: ", filename(), " was invalidated by a simulated crash"));
  }

  FaultInjectionEnv* const env_;
  const std::unique_ptr<WritableFile> base_;
  const std::shared_ptr<FileState> state_;
  const uint64_t epoch_;
};

class FaultInjectionEnv::FaultyRandomAccessFile final : public RandomAccessFile {
 public:
  FaultyRandomAccessFile(FaultInjectionEnv* env, std::unique_ptr<RandomAccessFile> base)
      : env_(env), base_(std::move(base)) {}

  absl::Status ReadAt(uint64_t offset, size_t n, char* scratch,
                      std::string_view* result) const override {
    *result = std::string_view();
    BASALT_RETURN_IF_ERROR(env_->MaybeFail(OpKind::kRead, filename()));
    return base_->ReadAt(offset, n, scratch, result);
  }
  absl::StatusOr<uint64_t> Size() const override { return base_->Size(); }
  const std::string& filename() const override { return base_->filename(); }

 private:
  FaultInjectionEnv* const env_;
  const std::unique_ptr<RandomAccessFile> base_;
};

class FaultInjectionEnv::FaultySequentialFile final : public SequentialFile {
 public:
  FaultySequentialFile(FaultInjectionEnv* env, std::unique_ptr<SequentialFile> base)
      : env_(env), base_(std::move(base)) {}

  absl::Status Read(size_t n, char* scratch, std::string_view* result) override {
    *result = std::string_view();
    BASALT_RETURN_IF_ERROR(env_->MaybeFail(OpKind::kRead, filename()));
    return base_->Read(n, scratch, result);
  }
  absl::Status Skip(uint64_t n) override {
    BASALT_RETURN_IF_ERROR(env_->MaybeFail(OpKind::kRead, filename()));
    return base_->Skip(n);
  }
  const std::string& filename() const override { return base_->filename(); }

 private:
  FaultInjectionEnv* const env_;
  const std::unique_ptr<SequentialFile> base_;
};

// ---- FaultInjectionEnv ----

FaultInjectionEnv::FaultInjectionEnv(Env* base) : base_(base) { CHECK(base != nullptr); }

FaultInjectionEnv::~FaultInjectionEnv() {
  absl::MutexLock l(&mu_);
  CHECK(writers_.empty()) << writers_.size() << " writable files outlive their FaultInjectionEnv";
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::OpenForWrite(
    const std::string& raw_path, bool truncate) {
  const std::string path = NormalizePath(raw_path);
  BASALT_RETURN_IF_ERROR(MaybeFail(OpKind::kCreate, path));
  const bool existed = base_->FileExists(path);
  absl::StatusOr<std::unique_ptr<WritableFile>> file =
      truncate ? base_->NewWritableFile(path) : base_->NewAppendableFile(path);
  BASALT_RETURN_IF_ERROR(file.status());
  std::shared_ptr<FileState> state;
  uint64_t epoch;
  {
    absl::MutexLock l(&mu_);
    std::shared_ptr<FileState>& slot = files_[path];
    if (truncate || slot == nullptr) {
      slot = std::make_shared<FileState>();
      slot->size = (*file)->Size();
      // Existing contents kept by an append-open were there before we knew of the file: durable.
      slot->synced_size = existed ? slot->size : 0;
    }
    state = slot;
    if (!existed) {
      AddPendingLocked({PendingOp::Type::kCreateFile, path, "", std::nullopt, {DirName(path)}});
    }
    epoch = epoch_;
  }
  return std::unique_ptr<WritableFile>(
      new TrackedWritableFile(this, *std::move(file), std::move(state), epoch));
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(
    const std::string& path) {
  return OpenForWrite(path, /*truncate=*/true);
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewAppendableFile(
    const std::string& path) {
  return OpenForWrite(path, /*truncate=*/false);
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultInjectionEnv::NewRandomAccessFile(
    const std::string& path) {
  BASALT_RETURN_IF_ERROR(MaybeFail(OpKind::kRead, path));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, base_->NewRandomAccessFile(path));
  return std::unique_ptr<RandomAccessFile>(new FaultyRandomAccessFile(this, std::move(file)));
}

absl::StatusOr<std::unique_ptr<SequentialFile>> FaultInjectionEnv::NewSequentialFile(
    const std::string& path) {
  BASALT_RETURN_IF_ERROR(MaybeFail(OpKind::kRead, path));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, base_->NewSequentialFile(path));
  return std::unique_ptr<SequentialFile>(new FaultySequentialFile(this, std::move(file)));
}

bool FaultInjectionEnv::FileExists(const std::string& path) { return base_->FileExists(path); }

absl::StatusOr<std::vector<std::string>> FaultInjectionEnv::GetChildren(const std::string& dir) {
  return base_->GetChildren(dir);
}

absl::StatusOr<bool> FaultInjectionEnv::IsDirectory(const std::string& path) {
  return base_->IsDirectory(path);
}

absl::StatusOr<uint64_t> FaultInjectionEnv::GetFileSize(const std::string& path) {
  return base_->GetFileSize(path);
}

absl::StatusOr<std::string> FaultInjectionEnv::ReadDurableContents(const std::string& path) {
  std::string contents;
  BASALT_RETURN_IF_ERROR(ReadFileToString(base_, path, &contents));
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it != files_.end() && contents.size() > it->second->synced_size) {
    contents.resize(it->second->synced_size);
  }
  return contents;
}

absl::Status FaultInjectionEnv::DeleteFile(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  BASALT_RETURN_IF_ERROR(MaybeFail(OpKind::kDelete, path));
  absl::StatusOr<std::string> saved = ReadDurableContents(path);
  BASALT_RETURN_IF_ERROR(base_->DeleteFile(path));
  absl::MutexLock l(&mu_);
  files_.erase(path);
  std::optional<std::string> contents;
  if (saved.ok()) contents = *std::move(saved);
  AddPendingLocked({PendingOp::Type::kDeleteFile, path, "", std::move(contents), {DirName(path)}});
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::RenameFile(const std::string& raw_src,
                                           const std::string& raw_target) {
  const std::string src = NormalizePath(raw_src);
  const std::string target = NormalizePath(raw_target);
  BASALT_RETURN_IF_ERROR(MaybeFail(OpKind::kRename, src));
  std::optional<std::string> replaced;
  absl::StatusOr<bool> target_is_dir = base_->IsDirectory(target);
  if (src != target && target_is_dir.ok() && !*target_is_dir) {
    BASALT_ASSIGN_OR_RETURN(replaced, ReadDurableContents(target));
  }
  BASALT_RETURN_IF_ERROR(base_->RenameFile(src, target));
  if (src == target) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  files_.erase(target);
  MoveTracked(&files_, src, target);
  AddPendingLocked({PendingOp::Type::kRename,
                    src,
                    target,
                    std::move(replaced),
                    {DirName(src), DirName(target)}});
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::CreateDir(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  BASALT_RETURN_IF_ERROR(MaybeFail(OpKind::kCreate, path));
  BASALT_RETURN_IF_ERROR(base_->CreateDir(path));
  absl::MutexLock l(&mu_);
  AddPendingLocked({PendingOp::Type::kCreateDir, path, "", std::nullopt, {DirName(path)}});
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::DeleteDir(const std::string& raw_path) {
  const std::string path = NormalizePath(raw_path);
  BASALT_RETURN_IF_ERROR(MaybeFail(OpKind::kDelete, path));
  BASALT_RETURN_IF_ERROR(base_->DeleteDir(path));
  absl::MutexLock l(&mu_);
  AddPendingLocked({PendingOp::Type::kDeleteDir, path, "", std::nullopt, {DirName(path)}});
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::SyncDir(const std::string& raw_dir) {
  const std::string dir = NormalizePath(raw_dir);
  BASALT_RETURN_IF_ERROR(MaybeFail(OpKind::kSyncDir, dir));
  BASALT_RETURN_IF_ERROR(base_->SyncDir(dir));
  absl::MutexLock l(&mu_);
  for (PendingOp& op : pending_) op.unsynced_dirs.erase(dir);
  std::erase_if(pending_, [](const PendingOp& op) { return op.unsynced_dirs.empty(); });
  RecordSyncPointLocked();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FileLock>> FaultInjectionEnv::LockFile(const std::string& path) {
  return base_->LockFile(path);
}

absl::Status FaultInjectionEnv::UnlockFile(std::unique_ptr<FileLock> lock) {
  return base_->UnlockFile(std::move(lock));
}

// ---- Failure injection ----

void FaultInjectionEnv::FailAfter(int n, OpKind kind, bool one_shot, absl::StatusCode code) {
  CHECK_GE(n, 0);
  absl::MutexLock l(&mu_);
  fail_kind_ = kind;
  fail_code_ = code;
  fail_countdown_ = n;
  fail_one_shot_ = one_shot;
  fail_probability_ = 0;
}

void FaultInjectionEnv::FailRandomly(double probability, uint64_t seed, OpKind kind) {
  absl::MutexLock l(&mu_);
  fail_kind_ = kind;
  fail_code_ = absl::StatusCode::kInternal;
  fail_probability_ = probability;
  fail_rng_.Reseed(seed);
  fail_countdown_ = 0;
  fail_one_shot_ = false;
  if (probability <= 0) fail_kind_.reset();
}

void FaultInjectionEnv::ClearFailures() {
  absl::MutexLock l(&mu_);
  fail_kind_.reset();
  fail_probability_ = 0;
}

int64_t FaultInjectionEnv::num_injected_failures() const {
  absl::MutexLock l(&mu_);
  return num_injected_failures_;
}

absl::Status FaultInjectionEnv::MaybeFail(OpKind kind, std::string_view path) {
  absl::MutexLock l(&mu_);
  return MaybeFailLocked(kind, path);
}

absl::Status FaultInjectionEnv::MaybeFailLocked(OpKind kind, std::string_view path) {
  if (crashed_ && kind != OpKind::kRead) {
    ++num_injected_failures_;
    return absl::InternalError(StrCat("injected I/O error (simulated crash after sync point ",
                                      num_sync_points_, "): ", OpKindName(kind), " ", path));
  }
  if (!fail_kind_.has_value() || (*fail_kind_ != OpKind::kAny && *fail_kind_ != kind)) {
    return absl::OkStatus();
  }
  if (fail_probability_ > 0) {
    if (fail_rng_.NextDouble() >= fail_probability_) return absl::OkStatus();
  } else if (fail_countdown_ > 0) {
    --fail_countdown_;
    return absl::OkStatus();
  } else if (fail_one_shot_) {
    fail_kind_.reset();
  }
  ++num_injected_failures_;
  return absl::Status(fail_code_, StrCat("injected I/O error: ", OpKindName(kind), " ", path));
}

// ---- Crash simulation ----

int64_t FaultInjectionEnv::num_sync_points() const {
  absl::MutexLock l(&mu_);
  return num_sync_points_;
}

void FaultInjectionEnv::SetCrashAtSyncPoint(int64_t k) {
  CHECK_GE(k, 0);
  absl::MutexLock l(&mu_);
  crash_at_sync_point_ = num_sync_points_ + k;
  crashed_ = k == 0;
}

bool FaultInjectionEnv::crashed() const {
  absl::MutexLock l(&mu_);
  return crashed_;
}

void FaultInjectionEnv::RecordSyncPointLocked() {
  ++num_sync_points_;
  if (crash_at_sync_point_.has_value() && num_sync_points_ >= *crash_at_sync_point_) {
    crashed_ = true;
  }
}

void FaultInjectionEnv::AddPendingLocked(PendingOp op) {
  DCHECK(!op.unsynced_dirs.empty());
  pending_.push_back(std::move(op));
}

absl::Status FaultInjectionEnv::UndoLocked(const PendingOp& op) {
  auto ignore = [](absl::Status s, bool (*benign)(const absl::Status&)) {
    return benign(s) ? absl::OkStatus() : s;
  };
  switch (op.type) {
    case PendingOp::Type::kCreateFile:
      files_.erase(op.path);
      return ignore(base_->DeleteFile(op.path), absl::IsNotFound);
    case PendingOp::Type::kCreateDir:
      std::erase_if(files_, [&](const auto& e) { return IsUnder(e.first, op.path); });
      return ignore(base_->DeleteDirRecursively(op.path), absl::IsNotFound);
    case PendingOp::Type::kDeleteFile:
      files_.erase(op.path);
      if (!op.saved_contents.has_value()) return absl::OkStatus();
      return WriteStringToFile(base_, op.path, *op.saved_contents, /*sync=*/false);
    case PendingOp::Type::kDeleteDir:
      return ignore(base_->CreateDir(op.path), absl::IsAlreadyExists);
    case PendingOp::Type::kRename: {
      BASALT_RETURN_IF_ERROR(base_->RenameFile(op.target, op.path));
      MoveTracked(&files_, op.target, op.path);
      if (!op.saved_contents.has_value()) return absl::OkStatus();
      return WriteStringToFile(base_, op.target, *op.saved_contents, /*sync=*/false);
    }
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::TruncateToSyncedLocked() {
  absl::Status first_error;
  for (const auto& [path, state] : files_) {
    absl::StatusOr<uint64_t> size = base_->GetFileSize(path);
    if (!size.ok() || *size <= state->synced_size) continue;
    std::string contents;
    absl::Status s = ReadFileToString(base_, path, &contents);
    if (s.ok()) {
      contents.resize(state->synced_size);
      s = WriteStringToFile(base_, path, contents, /*sync=*/false);
    }
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  return first_error;
}

absl::Status FaultInjectionEnv::DropUnsyncedData() {
  absl::MutexLock l(&mu_);
  for (TrackedWritableFile* writer : writers_) writer->CloseForCrashLocked();
  ++epoch_;
  absl::Status first_error;
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    absl::Status s = UndoLocked(*it);
    if (!s.ok() && first_error.ok()) first_error = PrependToStatus(s, "undoing pending operation");
  }
  absl::Status s = TruncateToSyncedLocked();
  if (!s.ok() && first_error.ok()) first_error = s;
  files_.clear();
  pending_.clear();
  crashed_ = false;
  crash_at_sync_point_.reset();
  return first_error;
}

void FaultInjectionEnv::ResetState() {
  absl::MutexLock l(&mu_);
  for (auto& [path, state] : files_) state->synced_size = state->size;
  pending_.clear();
}

}  // namespace basalt
