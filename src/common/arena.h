#pragma once

// Arena: a bump allocator for many small allocations that die together, such as the rows of a
// memrowset, decoded cells of a scan batch, or the encoded keys of a write batch.
//
// Memory comes from blocks that start at `initial_block_size` bytes and double up to
// `max_block_size`. An allocation is carved from the current block when it fits; otherwise a new
// block is started. A request larger than a quarter of the next block size gets a dedicated block
// of its own, so one huge allocation neither wastes the rest of the current block nor inflates
// later blocks. Nothing is freed individually: memory is released by Reset() or destruction.
//
// With `huge_pages`, every block of at least kHugePageSize bytes (regular or dedicated) is mapped
// with mmap at a 2 MiB-aligned address, its size rounded up to a multiple of 2 MiB, and advised
// MADV_HUGEPAGE, so transparent huge pages back it and first touches fault once per 2 MiB instead
// of once per 4 KiB (unless SetAdviseHugePages(false), which the tablet server does by default:
// on VMs that report free memory to the host a fresh huge page is far dearer than its 4 KiB
// pages, docs/performance.md change 25). Where mmap fails the block comes from the heap, and
// where THP is unavailable (madvise fails, or THP is disabled) the mapping simply keeps normal
// pages; either way the arena behaves the same. Mapped blocks are freed by Reset() and destruction
// like any other: into a process-wide cache of mapped blocks when SetMappedBlockCacheLimit allowed
// one (the next arena needing a block of that size reuses it without page faults or kernel zeroing;
// its contents are then whatever the last arena wrote), else unmapped.
//
// Invariants: every pointer returned stays valid (and is never moved) until Reset() or the
// destructor; MemoryUsage() is at least the sum of all block sizes.
//
// Objects placed in the arena are never destroyed, so NewObject() only accepts trivially
// destructible types.
//
// Not thread-safe; the caller serializes all calls.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace basalt {

class Arena {
 public:
  static constexpr size_t kDefaultInitialBlockSize = 4096;
  static constexpr size_t kDefaultMaxBlockSize = 1 << 20;
  // Blocks at least this large are mapped as huge pages when the arena is built with
  // huge_pages = true.
  static constexpr size_t kHugePageSize = size_t{2} << 20;

  // REQUIRES: 0 < initial_block_size <= max_block_size.
  explicit Arena(size_t initial_block_size = kDefaultInitialBlockSize,
                 size_t max_block_size = kDefaultMaxBlockSize, bool huge_pages = false);
  ~Arena();

  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Returns a pointer to `n` uninitialized bytes with no particular alignment. Allocate(0)
  // returns a non-null pointer that must not be dereferenced. Never returns null (allocation
  // failure aborts, like operator new).
  char* Allocate(size_t n);

  // Returns `n` uninitialized bytes aligned to `align`.
  // REQUIRES: align is a power of two.
  char* AllocateAligned(size_t n, size_t align);

  // Copies `data` into the arena and returns a view of the copy.
  std::string_view AddString(std::string_view data);

  // Copies n bytes from `data` into the arena and returns a pointer to the copy.
  char* Copy(const void* data, size_t n);

  // Constructs a T in the arena. T must be trivially destructible because the arena never runs
  // destructors.
  template <typename T, typename... Args>
  T* NewObject(Args&&... args) {
    static_assert(std::is_trivially_destructible_v<T>,
                  "Arena never runs destructors; use trivially destructible types");
    void* mem = AllocateAligned(sizeof(T), alignof(T));
    return new (mem) T(std::forward<Args>(args)...);
  }

  // Lets up to `bytes` of freed mapped blocks be kept for reuse, process-wide (0, the default:
  // none; lowering it unmaps the oldest kept blocks). Thread-safe.
  static void SetMappedBlockCacheLimit(size_t bytes);
  // Whether mapped blocks mapped from now on are advised MADV_HUGEPAGE (true, the default).
  // Process-wide; blocks are still mapped at 2 MiB-aligned addresses and cached either way.
  // Thread-safe.
  static void SetAdviseHugePages(bool advise);
  // Bytes of mapped blocks kept for reuse now. Thread-safe.
  static size_t MappedBlockCacheBytes();

  // Returns the bytes of memory held by this arena (all blocks plus bookkeeping).
  size_t MemoryUsage() const;

  // Returns the number of bytes handed out by Allocate*/AddString/Copy since construction or the
  // last Reset(), excluding alignment padding.
  size_t bytes_allocated() const { return bytes_allocated_; }

  // Invalidates every pointer returned so far and frees all blocks except the most recent
  // regular (non-dedicated) one, which is kept for reuse.
  void Reset();

 private:
  // Frees a block: munmap of `mapped_bytes` when it was mapped, else delete[].
  struct BlockDeleter {
    size_t mapped_bytes;
    void operator()(char* p) const;
  };
  struct Block {
    std::unique_ptr<char, BlockDeleter> data;
    size_t size;  // Usable bytes (the mapping may be larger).
  };

  // Returns a block of at least `size` bytes: mapped huge pages when huge_pages_ and size is at
  // least kHugePageSize and mmap succeeds, else the heap.
  static std::unique_ptr<char, BlockDeleter> AllocateBlock(size_t size, bool huge_pages);

  // Allocates a new block of `size` bytes and appends it to blocks_.
  char* NewBlock(size_t size);
  // Slow path of AllocateAligned: the request does not fit in the current block.
  char* AllocateFallback(size_t n, size_t align);

  const size_t initial_block_size_;
  const size_t max_block_size_;
  const bool huge_pages_;

  std::vector<Block> blocks_;
  // Current allocation position and end in the current regular block; null when there is none.
  char* alloc_ptr_ = nullptr;
  char* alloc_end_ = nullptr;
  // Size of the next regular block to allocate.
  size_t next_block_size_;
  size_t total_block_bytes_ = 0;
  size_t bytes_allocated_ = 0;
};

}  // namespace basalt
