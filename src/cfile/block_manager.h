#pragma once

// Block manager: immutable data blocks stored as files named by a 64-bit block id.
//
// Every column file, bloom filter and delta file of a tablet is one block. A block is written
// once, front to back, then finalized (made durable and visible under its final name) or
// aborted; after that it is only read, and eventually deleted. Metadata (the tablet superblock)
// refers to blocks by id and must only point to finalized blocks.
//
// On-disk layout, under the data directory `<data_dir>` (docs/cfile_blocks.md has the details):
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
// Block ids are unique for the life of the data directory, even after deletions and restarts:
// id = epoch << 40 | counter, where the 24-bit epoch is one more than the highest epoch seen (in
// EPOCH or in any existing block's id) and is written durably to EPOCH by Open() before any id is
// handed out; the 40-bit counter counts blocks created since Open(). Id 0 is never used. Because
// ids are never reused, a block cache keyed by block id never serves a deleted block's bytes.

#include <atomic>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

class BlockManager;

// Called before every read of a block opened with it (BlockManager::OpenBlock(id, hook)), with
// the number of bytes about to be read. A non-OK status fails the read with that status, reading
// nothing. Used to pace a background reader (the block scrubber); it runs on the reading thread.
using BlockReadHook = std::function<absl::Status(size_t bytes)>;

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

  WritableBlock(BlockManager* manager, BlockId id, std::unique_ptr<WritableFile> file);

  BlockManager* const manager_;  // Borrowed; outlives this object.
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
                BlockReadHook hook = nullptr);

  const BlockId id_;
  const std::unique_ptr<RandomAccessFile> file_;
  const uint64_t size_;
  const BlockReadHook hook_;  // May be empty.
};

// Creates, opens, lists and deletes the blocks of one data directory. Open() takes the directory's
// lock, so at most one BlockManager (in any process) uses a directory at a time.
// Thread-safe.
class BlockManager {
 public:
  // Number of bits of an id taken by the per-Open() counter; the epoch is the 24 bits above.
  static constexpr int kCounterBits = 40;
  static constexpr uint64_t kMaxEpoch = (uint64_t{1} << (64 - kCounterBits)) - 1;

  // Opens the block store under `data_dir`, creating `<data_dir>/blocks` and its subdirectories if
  // missing (and `data_dir` itself). Removes temporary files left by a crash, chooses the new id
  // epoch and writes it durably. `env` is borrowed and must outlive the manager.
  // Errors: UNAVAILABLE if another BlockManager holds the directory's lock; DATA_LOSS if EPOCH is
  // corrupt; RESOURCE_EXHAUSTED if the epoch space is used up; I/O errors from the Env.
  static absl::StatusOr<std::unique_ptr<BlockManager>> Open(Env* env, std::string data_dir);

  ~BlockManager();
  BlockManager(const BlockManager&) = delete;
  BlockManager& operator=(const BlockManager&) = delete;

  // Starts a new block with a fresh id. The returned block is owned by the caller.
  // Errors: RESOURCE_EXHAUSTED after 2^40 blocks in one Open(); I/O errors from the Env.
  absl::StatusOr<std::unique_ptr<WritableBlock>> CreateBlock();

  // Finalizes several blocks at once, paying one directory sync per distinct subdirectory
  // instead of one per block: syncs and closes every file, renames each to its final name, then
  // syncs the directories. REQUIRES: every block is in the writing state and came from this
  // manager. Returns the first error; on error every block that is not known durable is
  // removed on a best-effort basis, and all of them are unusable.
  absl::Status FinalizeBlocks(std::span<WritableBlock* const> blocks);

  // Opens finalized block `id` for reading. NOT_FOUND if there is no such block.
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
  // again. NOT_FOUND if there is no such block.
  absl::Status DeleteBlock(BlockId id);

  // Returns the ids of all finalized blocks, sorted. Files with other names are skipped (logged).
  absl::StatusOr<std::vector<BlockId>> ListBlocks() const;

  // Whether finalized block `id` exists.
  bool BlockExists(BlockId id) const;

  // The epoch of the ids this manager hands out.
  uint64_t epoch() const { return epoch_; }
  // `<data_dir>/blocks`.
  const std::string& blocks_dir() const { return blocks_dir_; }
  // The path of finalized block `id`.
  std::string BlockPath(BlockId id) const;

 private:
  friend class WritableBlock;

  BlockManager(Env* env, std::string blocks_dir, std::unique_ptr<FileLock> lock, uint64_t epoch);

  // Opens the finalized block file `path` of block `id`, with `hook` (may be empty).
  static absl::StatusOr<std::unique_ptr<ReadableBlock>> OpenBlockFile(Env* env,
                                                                      const std::string& path,
                                                                      BlockId id,
                                                                      BlockReadHook hook = nullptr);
  std::string SubdirPath(BlockId id) const;
  std::string TempPath(BlockId id) const;
  // Deletes `block`'s temporary and final files if present, ignoring errors.
  void RemoveBestEffort(const WritableBlock& block);

  // Constant after construction.
  Env* const env_;
  const std::string blocks_dir_;
  const std::unique_ptr<FileLock> lock_;
  const uint64_t epoch_;

  // Blocks created since Open(): the low kCounterBits of the next id. An atomic suffices because
  // it is an independent counter: fetch_add hands each caller a distinct value.
  std::atomic<uint64_t> next_counter_{0};
};

}  // namespace basalt
