#pragma once

// Block manager: immutable data blocks stored as files named by a 64-bit block id, in one or more
// data directories.
//
// Every column file, bloom filter and delta file of a tablet is one block. A block is written
// once, front to back, then finalized (made durable and visible under its final name) or
// aborted; after that it is only read, and eventually deleted. Metadata (the tablet superblock)
// refers to blocks by id and must only point to finalized blocks.
//
// On-disk layout, under each data directory `<data_dir>` (docs/cfile_blocks.md has the details):
//
//   <data_dir>/blocks/LOCK             held (Env::LockFile) while a BlockManager is open
//   <data_dir>/blocks/EPOCH            the id epoch of the last Open(), 12 bytes with a CRC
//   <data_dir>/blocks/<xx>/            256 subdirectories, xx = the id's low byte in hex
//   <data_dir>/blocks/<xx>/<id>        a finalized block; <id> is 16 lowercase hex digits
//   <data_dir>/blocks/<xx>/<id>.tmp    a block being written (removed by Open() after a crash)
//
// Crash protocol: a block is written to <id>.tmp; Finalize() syncs the file, renames it to <id>
// and syncs the subdirectory. A crash at any point therefore leaves either no file under the
// final name or the complete block, never a prefix of it. Leftover .tmp files are deleted by the
// next Open().
//
// Block ids are unique for the life of the data directories, even after deletions, restarts and
// a directory replaced by an empty one: id = dir << 56 | epoch << 32 | counter. `dir` (8 bits)
// is the data directory's position in the list given to Open(), so any reader finds a block from
// its id alone; the 24-bit epoch is one more than the highest epoch seen in any of the
// directories (in their EPOCH files or in any existing block's id) and is written durably to
// every directory's EPOCH, the first's first, by Open() before any id is handed out (the first
// directory must open, so its EPOCH only grows); the 32-bit counter counts blocks created in
// that directory since Open(). Id 0 is never used. Because ids are never reused, a block cache
// keyed by block id never serves a deleted block's bytes, and metadata that names a block of a
// lost directory never names a new block by mistake. The positions of the data directories must
// never change (directories may be appended): Open() refuses a directory holding blocks of
// another position.
//
// Ids written before there were several directories (epoch << 40 | counter, epochs far below
// 2^16) read as position 0 with epoch (old epoch << 8 | counter >> 32): below every new epoch,
// as an old EPOCH file (12 bytes) counts as epoch (old epoch << 8 | 0xff).
//
// Several data directories: a tablet keeps its blocks in a group of them (ForGroup), so that the
// failure of one directory fails only the tablets whose group holds it. A directory fails at the
// first I/O error of a block operation in it that is not about a single block (IsDiskFailure: EIO
// and the like, never ENOSPC or a missing file), or when Open() cannot open it; after that no
// block is created in it, and the failure callback tells the owner (the tablet server fails the
// tablets of the directory's groups).

#include <atomic>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"

namespace basalt {

// The name of a block: a 64-bit value, printed as 16 lowercase hex digits. 0 is "no block".
// Copyable value type.
class BlockId {
 public:
  constexpr BlockId() = default;
  constexpr explicit BlockId(uint64_t value) : value_(value) {}

  constexpr uint64_t value() const { return value_; }
  constexpr bool valid() const { return value_ != 0; }

  // 16 lowercase hex digits, e.g. "0000010000000002".
  std::string ToString() const;
  // Parses exactly 16 lowercase hex digits of a valid (non-zero) id; nullopt otherwise.
  static std::optional<BlockId> FromString(std::string_view s);

  friend constexpr auto operator<=>(BlockId a, BlockId b) = default;
  template <typename H>
  friend H AbslHashValue(H h, BlockId id) {
    return H::combine(std::move(h), id.value_);
  }

 private:
  uint64_t value_ = 0;
};

// Called before every read of a block opened with it (BlockManager::OpenBlock(id, hook)), with
// the number of bytes about to be read. A non-OK status fails the read with that status, reading
// nothing. Used to pace a background reader (the block scrubber); it runs on the reading thread.
using BlockReadHook = std::function<absl::Status(size_t bytes)>;

class BlockManager;
// One open data directory and its health (defined in block_manager.cc).
struct BlockDir;
class DataDirHealth;

// A block being written. Obtained from BlockManager::CreateBlock. Call order: Append* then exactly
// one of Finalize() or Abort(); destroying an unfinished block aborts it (best effort, logging
// errors). After any failed call the block is unusable: further Appends return
// FAILED_PRECONDITION and Abort() cleans up. The BlockManager must outlive this object.
// Not thread-safe; the caller serializes.
class WritableBlock {
 public:
  ~WritableBlock();
  WritableBlock(const WritableBlock&) = delete;
  WritableBlock& operator=(const WritableBlock&) = delete;

  BlockId id() const { return id_; }
  // Bytes appended so far.
  uint64_t bytes_written() const { return bytes_written_; }

  // Appends `data` to the block. FAILED_PRECONDITION if the block is finalized, aborted or
  // failed; I/O errors from the Env.
  absl::Status Append(std::string_view data);

  // Makes the block durable and visible under its final name (see the file comment). On OK the
  // block can be opened with BlockManager::OpenBlock and survives a crash. On error the block is
  // removed on a best-effort basis (a leftover file is an orphan for ListBlocks-based GC) and the
  // caller must treat it as never written. Equivalent to BlockManager::FinalizeBlocks({this}).
  absl::Status Finalize();

  // Discards the block: closes and deletes its temporary file. OK if already aborted.
  // FAILED_PRECONDITION if already finalized.
  absl::Status Abort();

 private:
  friend class BlockManager;
  enum class State { kWriting, kFinalized, kAborted, kFailed };

  WritableBlock(BlockManager* manager, BlockDir* dir, BlockId id,
                std::unique_ptr<WritableFile> file);

  BlockManager* const manager_;  // Borrowed; outlives this object.
  BlockDir* const dir_;          // Where it is written; owned by the manager.
  const BlockId id_;
  std::unique_ptr<WritableFile> file_;
  uint64_t bytes_written_ = 0;
  State state_ = State::kWriting;
};

// A finalized block open for reading. Obtained from BlockManager::OpenBlock. Blocks are
// immutable, so the size is read once at open. The Env must outlive this object.
// Thread-safe: concurrent ReadAt calls are allowed.
class ReadableBlock {
 public:
  ReadableBlock(const ReadableBlock&) = delete;
  ReadableBlock& operator=(const ReadableBlock&) = delete;

  BlockId id() const { return id_; }
  // The block's size in bytes.
  uint64_t size() const { return size_; }

  // Reads exactly `n` bytes at `offset`. On OK `*result` holds them; it may point into `scratch`
  // (room for n bytes, owned by the caller) or into memory owned by the block (valid while the
  // block is open). DATA_LOSS naming the block if [offset, offset + n) extends past its end (a
  // truncated block); I/O errors from the Env, prefixed with the block id; the read hook's error
  // if the block has one and it fails.
  absl::Status ReadAt(uint64_t offset, size_t n, char* scratch, std::string_view* result) const;

  // Like ReadAt above, copying the bytes into `*out` (resized to n).
  absl::Status ReadAt(uint64_t offset, size_t n, std::string* out) const;

 private:
  friend class BlockManager;
  ReadableBlock(BlockId id, std::unique_ptr<RandomAccessFile> file, uint64_t size,
                BlockReadHook hook, std::shared_ptr<DataDirHealth> health);

  const BlockId id_;
  const std::unique_ptr<RandomAccessFile> file_;
  const uint64_t size_;
  const BlockReadHook hook_;  // May be empty.
  // The directory's health, told about read errors; null for OpenBlockReadOnly. Shared, so a
  // block open past its manager's life stays valid.
  const std::shared_ptr<DataDirHealth> health_;
};

// Creates, opens, lists and deletes the blocks of one or more data directories. Open() takes
// each directory's lock, so at most one BlockManager (in any process) uses a directory at a time.
// The manager Open() returns is the root: it creates blocks in every directory that has not
// failed, round robin; ForGroup() returns managers that create blocks only in a group of them.
// All of them read, delete and list blocks of every directory. Thread-safe.
class BlockManager {
 public:
  // An id's layout (see the file comment): dir << kDirShift | epoch << kCounterBits | counter.
  static constexpr int kCounterBits = 32;
  static constexpr int kEpochBits = 24;
  static constexpr int kDirShift = kCounterBits + kEpochBits;
  static constexpr uint64_t kMaxEpoch = (uint64_t{1} << kEpochBits) - 1;
  static constexpr int kMaxDataDirs = 1 << (64 - kDirShift);

  // Opens the block store under `data_dir`, creating `<data_dir>/blocks` and its subdirectories if
  // missing (and `data_dir` itself). Removes temporary files left by a crash, chooses the new id
  // epoch and writes it durably to EPOCH. `env` is borrowed and must outlive the manager.
  // Errors: UNAVAILABLE if another BlockManager holds the directory's lock; DATA_LOSS if EPOCH is
  // corrupt; RESOURCE_EXHAUSTED if the epoch space is used up; FAILED_PRECONDITION if the
  // directory holds blocks of another position; I/O errors from the Env.
  static absl::StatusOr<std::unique_ptr<BlockManager>> Open(Env* env, std::string data_dir);

  // The same for several data directories, each at its position in `data_dirs` (which must never
  // change; directories may be appended). The first must open (the tablet server keeps its
  // metadata there too): any error of it is returned, as above. A later directory that fails to
  // open (any error but UNAVAILABLE or FAILED_PRECONDITION, which are returned) is marked failed,
  // logged, and the others open. INVALID_ARGUMENT for no directories, more than kMaxDataDirs or
  // one listed twice.
  static absl::StatusOr<std::unique_ptr<BlockManager>> Open(Env* env,
                                                            std::vector<std::string> data_dirs);

  ~BlockManager();
  BlockManager(const BlockManager&) = delete;
  BlockManager& operator=(const BlockManager&) = delete;

  // ---- Data directories ----

  // The data directory position block `id` lives at.
  static int DirOf(BlockId id) { return static_cast<int>(id.value() >> kDirShift); }
  // Whether `s` (an error of a block operation) means the directory's disk failed: INTERNAL (EIO
  // and errnos without a meaning of their own) or PERMISSION_DENIED (EROFS: a file system the
  // kernel remounted read-only after errors). Not NOT_FOUND, RESOURCE_EXHAUSTED (ENOSPC),
  // DATA_LOSS (one corrupt block) or any other code.
  static bool IsDiskFailure(const absl::Status& s);

  struct DirInfo {
    std::string path;    // The data directory, as given to Open().
    absl::Status error;  // Not OK: the directory failed with this error.
  };
  // Every data directory, by position.
  std::vector<DirInfo> Dirs() const;
  int num_dirs() const;
  bool DirFailed(int dir) const;
  // Marks directory `dir` failed with `error` (logged), and calls the failure callback, unless it
  // failed already. Block operations do it themselves for errors IsDiskFailure accepts.
  void MarkDirFailed(int dir, const absl::Status& error);
  // Called once per directory when it fails after this call (on the thread whose operation hit
  // the error; must be quick and not call back into a block operation). Directories that failed
  // in Open() are not reported: read Dirs(). Replaces any previous callback.
  using DirFailureCallback =
      std::function<void(int dir, const std::string& path, const absl::Status& error)>;
  void SetDirFailureCallback(DirFailureCallback callback);

  // A manager that creates blocks only in the directories at positions `dirs` (round robin), and
  // reads, deletes and lists like this one. Owned by this manager, valid while it lives; the same
  // object for the same set. REQUIRES: `dirs` non-empty, positions valid (CHECKed).
  BlockManager* ForGroup(std::vector<int> dirs);
  // The positions this manager creates blocks in, sorted.
  const std::vector<int>& group() const { return group_; }

  // ---- Blocks ----

  // Starts a new block with a fresh id in the next directory of this manager's group. The
  // returned block is owned by the caller. Errors: the directory's error (naming it) if it
  // failed; RESOURCE_EXHAUSTED after 2^32 blocks in one directory in one Open(); I/O errors from
  // the Env. Appending to or finalizing a block of a directory that failed meanwhile returns the
  // directory's error.
  absl::StatusOr<std::unique_ptr<WritableBlock>> CreateBlock();

  // Finalizes several blocks at once, paying one directory sync per distinct subdirectory
  // instead of one per block: syncs and closes every file, renames each to its final name, then
  // syncs the directories. REQUIRES: every block is in the writing state and came from this
  // manager or another of the same Open(). Returns the first error; on error every block that is
  // not known durable is removed on a best-effort basis, and all of them are unusable.
  absl::Status FinalizeBlocks(std::span<WritableBlock* const> blocks);

  // Opens finalized block `id` for reading. NOT_FOUND if there is no such block (or no data
  // directory at its position); the directory's error if it failed.
  absl::StatusOr<std::unique_ptr<ReadableBlock>> OpenBlock(BlockId id) const;
  // The same, with `hook` called before every read of the block (see BlockReadHook); the hook
  // must stay callable while the block is open.
  absl::StatusOr<std::unique_ptr<ReadableBlock>> OpenBlock(BlockId id, BlockReadHook hook) const;

  // Opens finalized block `id` of the block store under `data_dir` for reading without opening
  // the store: takes no lock and creates, deletes or writes nothing, so it may run next to a live
  // BlockManager of the directory (finalized blocks are immutable). For offline inspection
  // (`basalt fs dump cfile`). `env` is borrowed and must outlive the block. INVALID_ARGUMENT for
  // id 0; NOT_FOUND if there is no such block; other I/O errors from the Env.
  static absl::StatusOr<std::unique_ptr<ReadableBlock>> OpenBlockReadOnly(
      Env* env, const std::string& data_dir, BlockId id);

  // Deletes finalized block `id`. Readers that have it open keep reading it. The deletion is not
  // synced: after a crash the block may reappear, as an orphan for ListBlocks-based GC to delete
  // again. NOT_FOUND if there is no such block; the directory's error if it failed.
  absl::Status DeleteBlock(BlockId id);

  // Returns the ids of all finalized blocks of the directories that have not failed, sorted.
  // Files with other names are skipped (logged). A directory that fails while listed is left out.
  absl::StatusOr<std::vector<BlockId>> ListBlocks() const;

  // Whether finalized block `id` exists.
  bool BlockExists(BlockId id) const;

  // Whether block `id` was created before this Open(): its epoch is older than its directory's
  // current one. Such a block cannot be in flight in this process (the block GC relies on it).
  bool CreatedBeforeOpen(BlockId id) const;
  // The epoch of the ids this Open() hands out (the same in every directory; 0 for a directory
  // that failed to open).
  uint64_t epoch(int dir = 0) const;
  // `<first data_dir>/blocks`.
  const std::string& blocks_dir() const;
  // The path of finalized block `id` (under the directory at its position; empty if none).
  std::string BlockPath(BlockId id) const;

 private:
  friend class WritableBlock;
  struct Shared;

  BlockManager(std::shared_ptr<Shared> shared, std::vector<int> group);

  // For Open(): marks `dir`, which failed to open with `error`, failed and returns true, unless
  // the error must fail Open() (see Open).
  static bool FailLaterDataDir(BlockDir* dir, const absl::Status& error);

  // The directory block `id` lives in, or NOT_FOUND naming the block.
  absl::StatusOr<BlockDir*> DirFor(BlockId id, std::string_view what) const;
  // Opens the finalized block file `path` of block `id`, with `hook` (may be empty) and the
  // directory's `health` (may be null).
  static absl::StatusOr<std::unique_ptr<ReadableBlock>> OpenBlockFile(
      Env* env, const std::string& path, BlockId id, BlockReadHook hook,
      std::shared_ptr<DataDirHealth> health);
  // Deletes `block`'s temporary and final files if present, ignoring errors.
  void RemoveBestEffort(const WritableBlock& block);

  // Constant after construction; shared with the managers of ForGroup.
  const std::shared_ptr<Shared> shared_;
  const std::vector<int> group_;

  // The next position in group_ to create a block in (modulo its size).
  std::atomic<uint64_t> next_dir_{0};

  // The root's managers of ForGroup, by group.
  absl::Mutex views_mu_;
  std::map<std::vector<int>, std::unique_ptr<BlockManager>> views_ ABSL_GUARDED_BY(views_mu_);
};

}  // namespace basalt
