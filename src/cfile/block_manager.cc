#include "cfile/block_manager.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/coding.h"
#include "common/crash_point.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"

namespace basalt {
namespace {

constexpr std::string_view kBlocksDirName = "blocks";
constexpr std::string_view kLockFileName = "LOCK";
constexpr std::string_view kEpochFileName = "EPOCH";
constexpr std::string_view kTempSuffix = ".tmp";
// EPOCH: fixed64 epoch, fixed32 format version (2), fixed32 masked CRC32C of those 12 bytes.
// Version 1 (12 bytes: no version field) holds an epoch of the old id layout (epoch << 40).
constexpr size_t kEpochFileSize = 16;
constexpr size_t kEpochFileV1Size = 12;
constexpr uint32_t kEpochFileVersion = 2;
constexpr int kNumSubdirs = 256;

std::string SubdirName(int index) { return absl::StrFormat("%02x", index); }

bool HasSuffix(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

uint64_t EpochOf(BlockId id) {
  return (id.value() >> BlockManager::kCounterBits) & BlockManager::kMaxEpoch;
}

// <blocks_dir>/<xx>/<id>: the path of finalized block `id`.
std::string BlockFilePath(const std::string& blocks_dir, BlockId id) {
  return JoinPath(JoinPath(blocks_dir, SubdirName(static_cast<int>(id.value() & 0xff))),
                  id.ToString());
}

// Creates `path` (a directory) if missing and returns whether it did.
absl::StatusOr<bool> CreateDirIfMissing(Env* env, const std::string& path) {
  if (env->FileExists(path)) return false;
  BASALT_RETURN_IF_ERROR(env->CreateDirs(path));
  return true;
}

// Creates <data_dir>/blocks (durably) if missing. Returns the blocks dir path.
absl::StatusOr<std::string> EnsureBlocksDir(Env* env, const std::string& data_dir) {
  BASALT_ASSIGN_OR_RETURN(bool created_data_dir, CreateDirIfMissing(env, data_dir));
  if (created_data_dir) BASALT_RETURN_IF_ERROR(env->SyncDir(DirName(data_dir)));
  std::string blocks_dir = JoinPath(data_dir, kBlocksDirName);
  BASALT_ASSIGN_OR_RETURN(bool created_blocks_dir, CreateDirIfMissing(env, blocks_dir));
  if (created_blocks_dir) BASALT_RETURN_IF_ERROR(env->SyncDir(data_dir));
  return blocks_dir;
}

// Creates any missing subdirectory (durably). REQUIRES: the lock is held.
absl::Status EnsureSubdirs(Env* env, const std::string& blocks_dir) {
  bool created_any = false;
  for (int i = 0; i < kNumSubdirs; ++i) {
    BASALT_ASSIGN_OR_RETURN(bool created,
                            CreateDirIfMissing(env, JoinPath(blocks_dir, SubdirName(i))));
    created_any |= created;
  }
  return created_any ? env->SyncDir(blocks_dir) : absl::OkStatus();
}

// Deletes temporary files left by a crash and returns the highest epoch of any finalized block
// (0 if none). FAILED_PRECONDITION if a block's id names another directory position than `index`
// (the list of data directories was reordered). REQUIRES: the lock is held, so no other writer
// can own a temporary file.
absl::StatusOr<uint64_t> CleanTempFilesAndFindMaxEpoch(Env* env, const std::string& blocks_dir,
                                                       int index) {
  uint64_t max_epoch = 0;
  for (int i = 0; i < kNumSubdirs; ++i) {
    const std::string subdir = JoinPath(blocks_dir, SubdirName(i));
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->GetChildren(subdir));
    for (const std::string& name : names) {
      if (HasSuffix(name, kTempSuffix)) {
        LOG(INFO) << "removing incomplete block " << JoinPath(subdir, name);
        BASALT_RETURN_IF_ERROR(env->DeleteFile(JoinPath(subdir, name)));
        continue;
      }
      std::optional<BlockId> id = BlockId::FromString(name);
      if (!id.has_value()) {
        LOG(WARNING) << "ignoring unexpected file " << JoinPath(subdir, name);
        continue;
      }
      if (BlockManager::DirOf(*id) != index) {
        return absl::FailedPreconditionError(
            StrCat(blocks_dir, " holds block ", id->ToString(), " of data directory position ",
                   BlockManager::DirOf(*id), " but is listed at position ", index,
                   ": data directories must keep their positions (new ones may only be appended)"));
      }
      max_epoch = std::max(max_epoch, EpochOf(*id));
    }
  }
  return max_epoch;
}

// Reads EPOCH; 0 if it does not exist. A version 1 file's epoch counts as the highest epoch an id
// of it can have in the current layout (block_manager.h).
absl::StatusOr<uint64_t> ReadEpochFile(Env* env, const std::string& path) {
  if (!env->FileExists(path)) return 0;
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &data));
  if (data.size() != kEpochFileSize && data.size() != kEpochFileV1Size) {
    return absl::DataLossError(
        StrCat(path, ": corrupt epoch file: ", data.size(), " bytes, expected ", kEpochFileSize));
  }
  const size_t crc_at = data.size() - 4;
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(data.data() + crc_at));
  if (stored != crc32c::Value(data.data(), crc_at)) {
    return absl::DataLossError(StrCat(path, ": corrupt epoch file: checksum mismatch"));
  }
  const uint64_t epoch = DecodeFixed64(data.data());
  if (data.size() == kEpochFileV1Size) return (epoch << 8) | 0xff;
  if (DecodeFixed32(data.data() + 8) != kEpochFileVersion) {
    return absl::DataLossError(
        StrCat(path, ": unknown epoch file version ", DecodeFixed32(data.data() + 8)));
  }
  return epoch;
}

absl::Status WriteEpochFile(Env* env, const std::string& path, uint64_t epoch) {
  char buf[kEpochFileSize];
  EncodeFixed64(buf, epoch);
  EncodeFixed32(buf + 8, kEpochFileVersion);
  EncodeFixed32(buf + 12, crc32c::Mask(crc32c::Value(buf, 12)));
  return WriteFileAtomically(env, path, std::string_view(buf, sizeof(buf)));
}

// Opens (locks, completes, cleans up) the block store of one data directory at position `index`
// and returns the highest epoch it has seen (see BlockManager::Open).
absl::StatusOr<uint64_t> OpenDataDir(Env* env, const std::string& data_dir, int index,
                                     std::string* blocks_dir, std::unique_ptr<FileLock>* lock) {
  BASALT_ASSIGN_OR_RETURN(*blocks_dir, EnsureBlocksDir(env, data_dir));
  BASALT_ASSIGN_OR_RETURN(*lock, env->LockFile(JoinPath(*blocks_dir, kLockFileName)));
  BASALT_RETURN_IF_ERROR(EnsureSubdirs(env, *blocks_dir));
  BASALT_ASSIGN_OR_RETURN(uint64_t max_block_epoch,
                          CleanTempFilesAndFindMaxEpoch(env, *blocks_dir, index));
  BASALT_ASSIGN_OR_RETURN(uint64_t file_epoch,
                          ReadEpochFile(env, JoinPath(*blocks_dir, kEpochFileName)));
  return std::max(max_block_epoch, file_epoch);
}

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

// ---- Data directories ---------------------------------------------------------------------------

// Whether a data directory failed, and telling the owner when it does. Shared by the directory
// and the blocks open in it (a block open past its manager keeps it). A failure is permanent:
// `failed_` goes from false to true once, with `error_`. Thread-safe.
class DataDirHealth {
 public:
  // The owner's failure callback, shared by the directories of one Open().
  struct Listener {
    absl::Mutex mu;
    BlockManager::DirFailureCallback callback ABSL_GUARDED_BY(mu);
  };

  DataDirHealth(int index, std::string path, std::shared_ptr<Listener> listener)
      : index_(index), path_(std::move(path)), listener_(std::move(listener)) {}

  bool failed() const { return failed_.load(std::memory_order_acquire); }
  absl::Status error() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    return error_;
  }
  // The directory's error as the result of an operation on it: the same code, naming it.
  absl::Status FailedError() const {
    return PrependToStatus(error(), StrCat("data directory ", path_, " failed"));
  }

  // Returns `s`, first marking the directory failed if `s` is a disk failure.
  absl::Status Note(absl::Status s) {
    if (!s.ok() && BlockManager::IsDiskFailure(s)) MarkFailed(s, /*notify=*/true);
    return s;
  }

  // Marks the directory failed with `error` (not OK) unless it is already; logs it and, if
  // `notify`, calls the owner's callback.
  void MarkFailed(const absl::Status& error, bool notify) ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock l(&mu_);
      if (!error_.ok()) return;
      error_ = error;
      failed_.store(true, std::memory_order_release);
    }
    LOG(ERROR) << "data directory " << path_ << " failed: " << error
               << "; no block is created in it any more, and the tablets with blocks in it fail";
    if (!notify) return;
    BlockManager::DirFailureCallback callback;
    {
      absl::MutexLock l(&listener_->mu);
      callback = listener_->callback;
    }
    if (callback) callback(index_, path_, error);
  }

 private:
  const int index_;
  const std::string path_;
  const std::shared_ptr<Listener> listener_;
  // Set once, with error_; readable without the lock on every block operation.
  std::atomic<bool> failed_{false};
  mutable absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// One data directory of an Open(). Every field but the counter and the health is set by Open()
// and constant after; the counter is atomic, the health thread-safe, so a BlockDir is used by
// many threads without a lock.
struct BlockDir {
  int index = 0;
  std::string data_dir;
  std::string blocks_dir;
  std::unique_ptr<FileLock> lock;  // Null if it failed to open.
  uint64_t epoch = 0;              // 0 if it failed to open.
  // Blocks created in it since Open(): the low kCounterBits of the next id. An atomic suffices
  // because it is an independent counter: fetch_add hands each caller a distinct value.
  std::atomic<uint64_t> next_counter{0};
  std::shared_ptr<DataDirHealth> health;

  std::string SubdirPath(BlockId id) const {
    return JoinPath(blocks_dir, SubdirName(static_cast<int>(id.value() & 0xff)));
  }
  std::string BlockPath(BlockId id) const { return BlockFilePath(blocks_dir, id); }
  std::string TempPath(BlockId id) const { return StrCat(BlockPath(id), kTempSuffix); }
};

struct BlockManager::Shared {
  Env* env = nullptr;
  std::vector<std::unique_ptr<BlockDir>> dirs;  // By position.
  std::shared_ptr<DataDirHealth::Listener> listener;
};

bool BlockManager::IsDiskFailure(const absl::Status& s) {
  return absl::IsInternal(s) || absl::IsPermissionDenied(s);
}

// ---- BlockId ------------------------------------------------------------------------------------

std::string BlockId::ToString() const { return absl::StrFormat("%016x", value_); }

std::optional<BlockId> BlockId::FromString(std::string_view s) {
  if (s.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    v = (v << 4) | static_cast<uint64_t>(digit);
  }
  if (v == 0) return std::nullopt;
  return BlockId(v);
}

// ---- WritableBlock ------------------------------------------------------------------------------

WritableBlock::WritableBlock(BlockManager* manager, BlockDir* dir, BlockId id,
                             std::unique_ptr<WritableFile> file)
    : manager_(manager), dir_(dir), id_(id), file_(std::move(file)) {}

WritableBlock::~WritableBlock() {
  if (state_ == State::kWriting) {
    absl::Status s = Abort();
    if (!s.ok()) LOG(WARNING) << "aborting unfinished block " << id_.ToString() << ": " << s;
  }
}

absl::Status WritableBlock::Append(std::string_view data) {
  if (state_ != State::kWriting) {
    return absl::FailedPreconditionError(
        StrCat("block ", id_.ToString(), ": append to a block that is not being written"));
  }
  absl::Status s = dir_->health->failed() ? dir_->health->FailedError()
                                          : dir_->health->Note(file_->Append(data));
  if (!s.ok()) {
    state_ = State::kFailed;
    file_.reset();
    manager_->RemoveBestEffort(*this);
    return PrependToStatus(s, StrCat("appending to block ", id_.ToString()));
  }
  bytes_written_ += data.size();
  return absl::OkStatus();
}

absl::Status WritableBlock::Finalize() {
  WritableBlock* self = this;
  return manager_->FinalizeBlocks(std::span<WritableBlock* const>(&self, 1));
}

absl::Status WritableBlock::Abort() {
  if (state_ == State::kFinalized) {
    return absl::FailedPreconditionError(
        StrCat("block ", id_.ToString(), ": abort of a finalized block"));
  }
  if (state_ == State::kAborted) return absl::OkStatus();
  absl::Status s;
  if (file_ != nullptr) s = file_->Close();
  file_.reset();
  state_ = State::kAborted;
  manager_->RemoveBestEffort(*this);
  return s;
}

// ---- ReadableBlock ------------------------------------------------------------------------------

ReadableBlock::ReadableBlock(BlockId id, std::unique_ptr<RandomAccessFile> file, uint64_t size,
                             BlockReadHook hook, std::shared_ptr<DataDirHealth> health)
    : id_(id),
      file_(std::move(file)),
      size_(size),
      hook_(std::move(hook)),
      health_(std::move(health)) {}

absl::Status ReadableBlock::ReadAt(uint64_t offset, size_t n, char* scratch,
                                   std::string_view* result) const {
  if (offset > size_ || n > size_ - offset) {
    return absl::DataLossError(absl::StrFormat(
        "block %s (%s): read of %d bytes at offset %d extends past its end at %d bytes",
        id_.ToString(), file_->filename(), n, offset, size_));
  }
  if (hook_) BASALT_RETURN_IF_ERROR(hook_(n));
  absl::Status s;
  if (health_ != nullptr && health_->failed()) {
    s = health_->FailedError();
  } else {
    s = file_->ReadAt(offset, n, scratch, result);
    if (health_ != nullptr) s = health_->Note(std::move(s));
  }
  BASALT_RETURN_IF_ERROR_PREPEND(s, StrCat("reading block ", id_.ToString()));
  if (result->size() != n) {
    return absl::DataLossError(
        absl::StrFormat("block %s (%s): short read of %d bytes at offset %d: got %d bytes",
                        id_.ToString(), file_->filename(), n, offset, result->size()));
  }
  return absl::OkStatus();
}

absl::Status ReadableBlock::ReadAt(uint64_t offset, size_t n, std::string* out) const {
  out->resize(n);
  std::string_view result;
  BASALT_RETURN_IF_ERROR(ReadAt(offset, n, out->data(), &result));
  if (n > 0 && result.data() != out->data()) std::memmove(out->data(), result.data(), n);
  return absl::OkStatus();
}

// ---- BlockManager -------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<BlockManager>> BlockManager::Open(Env* env, std::string data_dir) {
  return Open(env, std::vector<std::string>{std::move(data_dir)});
}

absl::StatusOr<std::unique_ptr<BlockManager>> BlockManager::Open(
    Env* env, std::vector<std::string> data_dirs) {
  if (data_dirs.empty()) return absl::InvalidArgumentError("no data directory");
  if (data_dirs.size() > static_cast<size_t>(kMaxDataDirs)) {
    return absl::InvalidArgumentError(
        StrCat(data_dirs.size(), " data directories; at most ", kMaxDataDirs));
  }
  std::set<std::string> seen;
  for (const std::string& d : data_dirs) {
    if (d.empty()) return absl::InvalidArgumentError("a data directory path is empty");
    if (!seen.insert(StripTrailingSlashes(d)).second) {
      return absl::InvalidArgumentError(StrCat("data directory ", d, " is listed twice"));
    }
  }
  auto shared = std::make_shared<Shared>();
  shared->env = env;
  shared->listener = std::make_shared<DataDirHealth::Listener>();
  std::vector<int> all;
  uint64_t max_epoch = 0;
  // Phase 1: lock, complete and clean up each directory, and find the highest epoch any has seen.
  for (size_t i = 0; i < data_dirs.size(); ++i) {
    auto dir = std::make_unique<BlockDir>();
    dir->index = static_cast<int>(i);
    dir->data_dir = data_dirs[i];
    dir->health = std::make_shared<DataDirHealth>(dir->index, dir->data_dir, shared->listener);
    absl::StatusOr<uint64_t> seen =
        OpenDataDir(env, dir->data_dir, dir->index, &dir->blocks_dir, &dir->lock);
    if (seen.ok()) {
      max_epoch = std::max(max_epoch, *seen);
    } else if (!FailLaterDataDir(dir.get(), seen.status())) {
      return seen.status();
    }
    shared->dirs.push_back(std::move(dir));
    all.push_back(static_cast<int>(i));
  }
  // Phase 2: one epoch for all, above every epoch any of them has seen, durable in each (the
  // first's first: it must open, so its EPOCH alone bounds every id ever handed out, even in a
  // directory since replaced by an empty one) before any id of it exists.
  const uint64_t epoch = max_epoch + 1;
  if (epoch > kMaxEpoch) {
    return absl::ResourceExhaustedError(
        StrCat(data_dirs[0], ": block id epochs exhausted (", kMaxEpoch, " opens)"));
  }
  for (const std::unique_ptr<BlockDir>& dir : shared->dirs) {
    if (dir->health->failed()) continue;
    absl::Status s = WriteEpochFile(env, JoinPath(dir->blocks_dir, kEpochFileName), epoch);
    if (s.ok()) {
      dir->epoch = epoch;
    } else if (!FailLaterDataDir(dir.get(), s)) {
      return s;
    }
  }
  return std::unique_ptr<BlockManager>(new BlockManager(std::move(shared), std::move(all)));
}

bool BlockManager::FailLaterDataDir(BlockDir* dir, const absl::Status& error) {
  // The first holds the server's metadata; UNAVAILABLE (another process has it) and
  // FAILED_PRECONDITION (a reordered list) are mistakes to fix, not failed disks.
  if (dir->index == 0 || absl::IsUnavailable(error) || absl::IsFailedPrecondition(error)) {
    return false;
  }
  // A failed disk must not keep the server's other directories from serving.
  dir->lock.reset();
  dir->epoch = 0;
  if (dir->blocks_dir.empty()) dir->blocks_dir = JoinPath(dir->data_dir, kBlocksDirName);
  dir->health->MarkFailed(PrependToStatus(error, "opening the block store"), /*notify=*/false);
  return true;
}

BlockManager::BlockManager(std::shared_ptr<Shared> shared, std::vector<int> group)
    : shared_(std::move(shared)), group_(std::move(group)) {}

BlockManager::~BlockManager() = default;

std::vector<BlockManager::DirInfo> BlockManager::Dirs() const {
  std::vector<DirInfo> out;
  for (const auto& d : shared_->dirs) out.push_back({d->data_dir, d->health->error()});
  return out;
}

int BlockManager::num_dirs() const { return static_cast<int>(shared_->dirs.size()); }

bool BlockManager::DirFailed(int dir) const {
  CHECK(dir >= 0 && dir < num_dirs()) << dir;
  return shared_->dirs[dir]->health->failed();
}

void BlockManager::MarkDirFailed(int dir, const absl::Status& error) {
  CHECK(dir >= 0 && dir < num_dirs()) << dir;
  CHECK(!error.ok());
  shared_->dirs[dir]->health->MarkFailed(error, /*notify=*/true);
}

void BlockManager::SetDirFailureCallback(DirFailureCallback callback) {
  absl::MutexLock l(&shared_->listener->mu);
  shared_->listener->callback = std::move(callback);
}

BlockManager* BlockManager::ForGroup(std::vector<int> dirs) {
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  CHECK(!dirs.empty());
  for (int d : dirs) CHECK(d >= 0 && d < num_dirs()) << "no data directory at position " << d;
  if (dirs == group_) return this;
  absl::MutexLock l(&views_mu_);
  std::unique_ptr<BlockManager>& view = views_[dirs];
  if (view == nullptr) view.reset(new BlockManager(shared_, dirs));
  return view.get();
}

absl::StatusOr<BlockDir*> BlockManager::DirFor(BlockId id, std::string_view what) const {
  const int d = DirOf(id);
  if (!id.valid() || d >= num_dirs()) {
    return absl::NotFoundError(StrCat(what, " ", id.ToString(), ": no data directory at position ",
                                      d, " (", num_dirs(), " configured)"));
  }
  BlockDir* dir = shared_->dirs[d].get();
  if (dir->health->failed()) {
    return PrependToStatus(dir->health->FailedError(), StrCat(what, " ", id.ToString()));
  }
  return dir;
}

uint64_t BlockManager::epoch(int dir) const {
  CHECK(dir >= 0 && dir < num_dirs()) << dir;
  return shared_->dirs[dir]->epoch;
}

const std::string& BlockManager::blocks_dir() const { return shared_->dirs[0]->blocks_dir; }

std::string BlockManager::BlockPath(BlockId id) const {
  const int d = DirOf(id);
  return d < num_dirs() ? shared_->dirs[d]->BlockPath(id) : std::string();
}

bool BlockManager::CreatedBeforeOpen(BlockId id) const {
  const int d = DirOf(id);
  return d < num_dirs() && EpochOf(id) < shared_->dirs[d]->epoch;
}

absl::StatusOr<std::unique_ptr<WritableBlock>> BlockManager::CreateBlock() {
  // The next directory of the group that has not failed; if all have, the last one's error.
  BlockDir* dir = nullptr;
  for (size_t tries = 0; tries < group_.size(); ++tries) {
    const uint64_t next = next_dir_.fetch_add(1, std::memory_order_relaxed);
    dir = shared_->dirs[group_[next % group_.size()]].get();
    if (!dir->health->failed()) break;
  }
  if (dir->health->failed()) {
    return PrependToStatus(dir->health->FailedError(), "creating a block");
  }
  const uint64_t counter = dir->next_counter.fetch_add(1, std::memory_order_relaxed);
  if (counter >= (uint64_t{1} << kCounterBits)) {
    return absl::ResourceExhaustedError(StrCat(dir->blocks_dir, ": block ids of epoch ", dir->epoch,
                                               " exhausted; reopen to continue"));
  }
  const BlockId id((static_cast<uint64_t>(dir->index) << kDirShift) | (dir->epoch << kCounterBits) |
                   counter);
  absl::StatusOr<std::unique_ptr<WritableFile>> file =
      shared_->env->NewWritableFile(dir->TempPath(id));
  BASALT_RETURN_IF_ERROR(dir->health->Note(file.status()));
  return std::unique_ptr<WritableBlock>(new WritableBlock(this, dir, id, std::move(*file)));
}

absl::Status BlockManager::FinalizeBlocks(std::span<WritableBlock* const> blocks) {
  // Written, not durable: a crash here leaves only temporary files, which Open() deletes.
  MaybeCrashAt("block_manager_before_finalize");
  for (WritableBlock* b : blocks) {
    CHECK(b->manager_->shared_ == shared_)
        << "block " << b->id().ToString() << " is from another manager";
    if (b->state_ != WritableBlock::State::kWriting) {
      return absl::FailedPreconditionError(
          StrCat("block ", b->id().ToString(), ": finalize of a block that is not being written"));
    }
  }
  Env* env = shared_->env;
  absl::Status s;
  // Nothing becomes durable in a directory that failed (its tablets are being failed).
  for (WritableBlock* b : blocks) {
    if (s.ok() && b->dir_->health->failed()) s = b->dir_->health->FailedError();
  }
  for (WritableBlock* b : blocks) {
    if (s.ok()) s = b->dir_->health->Note(b->file_->Sync());
    if (s.ok()) s = b->dir_->health->Note(b->file_->Close());
    b->file_.reset();
  }
  for (size_t i = 0; s.ok() && i < blocks.size(); ++i) {
    const BlockDir* dir = blocks[i]->dir_;
    s = dir->health->Note(
        env->RenameFile(dir->TempPath(blocks[i]->id()), dir->BlockPath(blocks[i]->id())));
  }
  std::map<std::string, BlockDir*> subdirs;
  for (WritableBlock* b : blocks) subdirs[b->dir_->SubdirPath(b->id())] = b->dir_;
  for (auto it = subdirs.begin(); s.ok() && it != subdirs.end(); ++it) {
    s = it->second->health->Note(env->SyncDir(it->first));
  }
  for (WritableBlock* b : blocks) {
    b->state_ = s.ok() ? WritableBlock::State::kFinalized : WritableBlock::State::kFailed;
    if (!s.ok()) RemoveBestEffort(*b);
  }
  if (!s.ok() && !blocks.empty()) {
    return PrependToStatus(s, StrCat("finalizing block ", blocks[0]->id().ToString(),
                                     blocks.size() > 1 ? " and others" : ""));
  }
  // Durable, and no metadata names them yet: a crash here leaves orphans for the block GC
  // (src/tserver/block_gc.h) to find.
  MaybeCrashAt("block_manager_after_finalize");
  return s;
}

void BlockManager::RemoveBestEffort(const WritableBlock& block) {
  Env* env = shared_->env;
  for (const std::string& path :
       {block.dir_->TempPath(block.id()), block.dir_->BlockPath(block.id())}) {
    if (!env->FileExists(path)) continue;
    absl::Status s = env->DeleteFile(path);
    if (!s.ok()) LOG(WARNING) << "could not remove " << path << ": " << s;
  }
}

absl::StatusOr<std::unique_ptr<ReadableBlock>> BlockManager::OpenBlockFile(
    Env* env, const std::string& path, BlockId id, BlockReadHook hook,
    std::shared_ptr<DataDirHealth> health) {
  const std::string context = StrCat("opening block ", id.ToString());
  if (!id.valid()) return absl::InvalidArgumentError(StrCat(context, ": invalid block id"));
  auto note = [&](absl::Status s) { return health != nullptr ? health->Note(std::move(s)) : s; };
  auto file = env->NewRandomAccessFile(path);
  BASALT_RETURN_IF_ERROR_PREPEND(note(file.status()), context);
  absl::StatusOr<uint64_t> size = (*file)->Size();
  BASALT_RETURN_IF_ERROR_PREPEND(note(size.status()), context);
  return std::unique_ptr<ReadableBlock>(
      new ReadableBlock(id, std::move(*file), *size, std::move(hook), std::move(health)));
}

absl::StatusOr<std::unique_ptr<ReadableBlock>> BlockManager::OpenBlock(BlockId id) const {
  return OpenBlock(id, nullptr);
}

absl::StatusOr<std::unique_ptr<ReadableBlock>> BlockManager::OpenBlock(BlockId id,
                                                                       BlockReadHook hook) const {
  if (!id.valid()) {
    return absl::InvalidArgumentError(
        StrCat("opening block ", id.ToString(), ": invalid block id"));
  }
  BASALT_ASSIGN_OR_RETURN(BlockDir * dir, DirFor(id, "opening block"));
  return OpenBlockFile(shared_->env, dir->BlockPath(id), id, std::move(hook), dir->health);
}

absl::StatusOr<std::unique_ptr<ReadableBlock>> BlockManager::OpenBlockReadOnly(
    Env* env, const std::string& data_dir, BlockId id) {
  return OpenBlockFile(env, BlockFilePath(JoinPath(data_dir, kBlocksDirName), id), id, nullptr,
                       nullptr);
}

absl::Status BlockManager::DeleteBlock(BlockId id) {
  BASALT_ASSIGN_OR_RETURN(BlockDir * dir, DirFor(id, "deleting block"));
  BASALT_RETURN_IF_ERROR_PREPEND(dir->health->Note(shared_->env->DeleteFile(dir->BlockPath(id))),
                                 StrCat("deleting block ", id.ToString()));
  return absl::OkStatus();
}

bool BlockManager::BlockExists(BlockId id) const {
  absl::StatusOr<BlockDir*> dir = DirFor(id, "block");
  return dir.ok() && shared_->env->FileExists((*dir)->BlockPath(id));
}

absl::StatusOr<std::vector<BlockId>> BlockManager::ListBlocks() const {
  std::vector<BlockId> ids;
  for (const auto& dir : shared_->dirs) {
    if (dir->health->failed()) continue;
    std::vector<BlockId> in_dir;
    absl::Status s;
    for (int i = 0; s.ok() && i < kNumSubdirs; ++i) {
      const std::string subdir = JoinPath(dir->blocks_dir, SubdirName(i));
      absl::StatusOr<std::vector<std::string>> names = shared_->env->GetChildren(subdir);
      s = dir->health->Note(names.status());
      if (!s.ok()) break;
      for (const std::string& name : *names) {
        std::optional<BlockId> id = BlockId::FromString(name);
        if (id.has_value() && (id->value() & 0xff) == static_cast<uint64_t>(i) &&
            DirOf(*id) == dir->index) {
          in_dir.push_back(*id);
        } else if (!HasSuffix(name, kTempSuffix)) {
          LOG(WARNING) << "ignoring unexpected file " << JoinPath(subdir, name);
        }
      }
    }
    if (!s.ok() && !dir->health->failed()) return s;
    if (s.ok()) ids.insert(ids.end(), in_dir.begin(), in_dir.end());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace basalt
