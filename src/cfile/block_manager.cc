#include "cfile/block_manager.h"

#include <algorithm>
#include <cstring>
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
// EPOCH: fixed64 epoch, fixed32 masked CRC32C of those 8 bytes.
constexpr size_t kEpochFileSize = 12;
constexpr int kNumSubdirs = 256;

std::string SubdirName(int index) { return absl::StrFormat("%02x", index); }

bool HasSuffix(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

uint64_t EpochOf(BlockId id) { return id.value() >> BlockManager::kCounterBits; }

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
// (0 if none). REQUIRES: the lock is held, so no other writer can own a temporary file.
absl::StatusOr<uint64_t> CleanTempFilesAndFindMaxEpoch(Env* env, const std::string& blocks_dir) {
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
      max_epoch = std::max(max_epoch, EpochOf(*id));
    }
  }
  return max_epoch;
}

// Reads EPOCH; 0 if it does not exist.
absl::StatusOr<uint64_t> ReadEpochFile(Env* env, const std::string& path) {
  if (!env->FileExists(path)) return 0;
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &data));
  if (data.size() != kEpochFileSize) {
    return absl::DataLossError(
        StrCat(path, ": corrupt epoch file: ", data.size(), " bytes, expected ", kEpochFileSize));
  }
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(data.data() + 8));
  if (stored != crc32c::Value(data.data(), 8)) {
    return absl::DataLossError(StrCat(path, ": corrupt epoch file: checksum mismatch"));
  }
  return DecodeFixed64(data.data());
}

absl::Status WriteEpochFile(Env* env, const std::string& path, uint64_t epoch) {
  char buf[kEpochFileSize];
  EncodeFixed64(buf, epoch);
  EncodeFixed32(buf + 8, crc32c::Mask(crc32c::Value(buf, 8)));
  return WriteFileAtomically(env, path, std::string_view(buf, sizeof(buf)));
}

}  // namespace

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

WritableBlock::WritableBlock(BlockManager* manager, BlockId id, std::unique_ptr<WritableFile> file)
    : manager_(manager), id_(id), file_(std::move(file)) {}

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
  absl::Status s = file_->Append(data);
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
                             BlockReadHook hook)
    : id_(id), file_(std::move(file)), size_(size), hook_(std::move(hook)) {}

absl::Status ReadableBlock::ReadAt(uint64_t offset, size_t n, char* scratch,
                                   std::string_view* result) const {
  if (offset > size_ || n > size_ - offset) {
    return absl::DataLossError(absl::StrFormat(
        "block %s (%s): read of %d bytes at offset %d extends past its end at %d bytes",
        id_.ToString(), file_->filename(), n, offset, size_));
  }
  if (hook_) BASALT_RETURN_IF_ERROR(hook_(n));
  BASALT_RETURN_IF_ERROR_PREPEND(file_->ReadAt(offset, n, scratch, result),
                                 StrCat("reading block ", id_.ToString()));
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
  BASALT_ASSIGN_OR_RETURN(std::string blocks_dir, EnsureBlocksDir(env, data_dir));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock,
                          env->LockFile(JoinPath(blocks_dir, kLockFileName)));
  BASALT_RETURN_IF_ERROR(EnsureSubdirs(env, blocks_dir));
  BASALT_ASSIGN_OR_RETURN(uint64_t max_block_epoch, CleanTempFilesAndFindMaxEpoch(env, blocks_dir));
  const std::string epoch_path = JoinPath(blocks_dir, kEpochFileName);
  BASALT_ASSIGN_OR_RETURN(uint64_t file_epoch, ReadEpochFile(env, epoch_path));
  const uint64_t epoch = std::max(max_block_epoch, file_epoch) + 1;
  if (epoch > kMaxEpoch) {
    return absl::ResourceExhaustedError(
        StrCat(blocks_dir, ": block id epochs exhausted (", kMaxEpoch, " opens)"));
  }
  // Durable before any id of this epoch exists, so a crash can never lead to reusing one.
  BASALT_RETURN_IF_ERROR(WriteEpochFile(env, epoch_path, epoch));
  return std::unique_ptr<BlockManager>(
      new BlockManager(env, std::move(blocks_dir), std::move(lock), epoch));
}

BlockManager::BlockManager(Env* env, std::string blocks_dir, std::unique_ptr<FileLock> lock,
                           uint64_t epoch)
    : env_(env), blocks_dir_(std::move(blocks_dir)), lock_(std::move(lock)), epoch_(epoch) {}

BlockManager::~BlockManager() = default;

std::string BlockManager::SubdirPath(BlockId id) const {
  return JoinPath(blocks_dir_, SubdirName(static_cast<int>(id.value() & 0xff)));
}

std::string BlockManager::BlockPath(BlockId id) const { return BlockFilePath(blocks_dir_, id); }

std::string BlockManager::TempPath(BlockId id) const { return StrCat(BlockPath(id), kTempSuffix); }

absl::StatusOr<std::unique_ptr<WritableBlock>> BlockManager::CreateBlock() {
  const uint64_t counter = next_counter_.fetch_add(1, std::memory_order_relaxed);
  if (counter >= (uint64_t{1} << kCounterBits)) {
    return absl::ResourceExhaustedError(
        StrCat(blocks_dir_, ": block ids of epoch ", epoch_, " exhausted; reopen to continue"));
  }
  const BlockId id((epoch_ << kCounterBits) | counter);
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env_->NewWritableFile(TempPath(id)));
  return std::unique_ptr<WritableBlock>(new WritableBlock(this, id, std::move(file)));
}

absl::Status BlockManager::FinalizeBlocks(std::span<WritableBlock* const> blocks) {
  // Written, not durable: a crash here leaves only temporary files, which Open() deletes.
  MaybeCrashAt("block_manager_before_finalize");
  for (WritableBlock* b : blocks) {
    CHECK_EQ(b->manager_, this) << "block " << b->id().ToString() << " is from another manager";
    if (b->state_ != WritableBlock::State::kWriting) {
      return absl::FailedPreconditionError(
          StrCat("block ", b->id().ToString(), ": finalize of a block that is not being written"));
    }
  }
  absl::Status s;
  for (WritableBlock* b : blocks) {
    if (s.ok()) s = b->file_->Sync();
    if (s.ok()) s = b->file_->Close();
    b->file_.reset();
  }
  for (size_t i = 0; s.ok() && i < blocks.size(); ++i) {
    s = env_->RenameFile(TempPath(blocks[i]->id()), BlockPath(blocks[i]->id()));
  }
  std::set<std::string> dirs;
  for (WritableBlock* b : blocks) dirs.insert(SubdirPath(b->id()));
  for (auto it = dirs.begin(); s.ok() && it != dirs.end(); ++it) s = env_->SyncDir(*it);
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
  for (const std::string& path : {TempPath(block.id()), BlockPath(block.id())}) {
    if (!env_->FileExists(path)) continue;
    absl::Status s = env_->DeleteFile(path);
    if (!s.ok()) LOG(WARNING) << "could not remove " << path << ": " << s;
  }
}

absl::StatusOr<std::unique_ptr<ReadableBlock>> BlockManager::OpenBlockFile(Env* env,
                                                                           const std::string& path,
                                                                           BlockId id,
                                                                           BlockReadHook hook) {
  const std::string context = StrCat("opening block ", id.ToString());
  if (!id.valid()) return absl::InvalidArgumentError(StrCat(context, ": invalid block id"));
  auto file = env->NewRandomAccessFile(path);
  BASALT_RETURN_IF_ERROR_PREPEND(file.status(), context);
  absl::StatusOr<uint64_t> size = (*file)->Size();
  BASALT_RETURN_IF_ERROR_PREPEND(size.status(), context);
  return std::unique_ptr<ReadableBlock>(
      new ReadableBlock(id, std::move(*file), *size, std::move(hook)));
}

absl::StatusOr<std::unique_ptr<ReadableBlock>> BlockManager::OpenBlock(BlockId id) const {
  return OpenBlockFile(env_, BlockPath(id), id);
}

absl::StatusOr<std::unique_ptr<ReadableBlock>> BlockManager::OpenBlock(BlockId id,
                                                                       BlockReadHook hook) const {
  return OpenBlockFile(env_, BlockPath(id), id, std::move(hook));
}

absl::StatusOr<std::unique_ptr<ReadableBlock>> BlockManager::OpenBlockReadOnly(
    Env* env, const std::string& data_dir, BlockId id) {
  return OpenBlockFile(env, BlockFilePath(JoinPath(data_dir, kBlocksDirName), id), id);
}

absl::Status BlockManager::DeleteBlock(BlockId id) {
  BASALT_RETURN_IF_ERROR_PREPEND(env_->DeleteFile(BlockPath(id)),
                                 StrCat("deleting block ", id.ToString()));
  return absl::OkStatus();
}

bool BlockManager::BlockExists(BlockId id) const {
  return id.valid() && env_->FileExists(BlockPath(id));
}

absl::StatusOr<std::vector<BlockId>> BlockManager::ListBlocks() const {
  std::vector<BlockId> ids;
  for (int i = 0; i < kNumSubdirs; ++i) {
    const std::string subdir = JoinPath(blocks_dir_, SubdirName(i));
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env_->GetChildren(subdir));
    for (const std::string& name : names) {
      std::optional<BlockId> id = BlockId::FromString(name);
      if (id.has_value() && (id->value() & 0xff) == static_cast<uint64_t>(i)) {
        ids.push_back(*id);
      } else if (!HasSuffix(name, kTempSuffix)) {
        LOG(WARNING) << "ignoring unexpected file " << JoinPath(subdir, name);
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace basalt
