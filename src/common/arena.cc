#include "common/arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <glog/logging.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace basalt {
namespace {

inline bool IsPowerOfTwo(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

inline char* AlignUp(char* p, size_t align) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<char*>((v + align - 1) & ~(uintptr_t{align} - 1));
}

// Blocks come from new char[] (aligned for any fundamental type) or mmap (page aligned).
constexpr size_t kBlockAlignment = alignof(std::max_align_t);

std::atomic<bool> advise_huge_pages{true};

// Maps `size` bytes (a multiple of kHugePageSize) at a kHugePageSize-aligned address and advises
// huge pages (unless SetAdviseHugePages(false)). Returns null when mmap fails.
char* MapHugePages(size_t size) {
  constexpr size_t kAlign = Arena::kHugePageSize;
  // Over-map by one huge page and trim both ends so the kept range is aligned.
  const size_t mapped = size + kAlign;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  char* base = static_cast<char*>(raw);
  char* aligned = AlignUp(base, kAlign);
  if (aligned > base) munmap(base, aligned - base);
  char* tail = aligned + size;
  if (base + mapped > tail) munmap(tail, base + mapped - tail);
#ifdef MADV_HUGEPAGE
  // Failure (no THP in this kernel) only means normal pages.
  if (advise_huge_pages.load(std::memory_order_relaxed)) madvise(aligned, size, MADV_HUGEPAGE);
#endif
  return aligned;
}

// Mapped blocks freed by arenas, kept (up to a byte limit) for the next block of the same size.
// A reused block costs no page faults and no zeroing by the kernel: with every MemRowSet faulting
// fresh memory in, clear_page was 29% of the tablet servers' CPU under a bulk load (W2 of
// docs/performance.md). Thread-safe.
class MappedBlockCache {
 public:
  static MappedBlockCache& Get() {
    static MappedBlockCache* const cache = new MappedBlockCache();  // Never destroyed.
    return *cache;
  }

  // A cached block of exactly `size` bytes, or null.
  char* Take(size_t size) {
    absl::MutexLock l(&mu_);
    for (size_t i = blocks_.size(); i-- > 0;) {
      if (blocks_[i].second == size) {
        char* p = blocks_[i].first;
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
        bytes_ -= size;
        return p;
      }
    }
    return nullptr;
  }

  // Keeps the block if it fits under the limit; false: the caller unmaps it.
  bool Put(char* p, size_t size) {
    absl::MutexLock l(&mu_);
    if (bytes_ + size > limit_) return false;
    blocks_.emplace_back(p, size);
    bytes_ += size;
    return true;
  }

  void SetLimit(size_t limit) {
    std::vector<std::pair<char*, size_t>> evicted;
    {
      absl::MutexLock l(&mu_);
      limit_ = limit;
      while (bytes_ > limit_) {
        evicted.push_back(blocks_.front());
        bytes_ -= blocks_.front().second;
        blocks_.erase(blocks_.begin());
      }
    }
    for (const auto& [p, size] : evicted) PCHECK(munmap(p, size) == 0) << "munmap";
  }

  size_t bytes() {
    absl::MutexLock l(&mu_);
    return bytes_;
  }

 private:
  absl::Mutex mu_;
  size_t limit_ ABSL_GUARDED_BY(mu_) = 0;
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<char*, size_t>> blocks_ ABSL_GUARDED_BY(mu_);  // Oldest first.
};

}  // namespace

void Arena::SetMappedBlockCacheLimit(size_t bytes) { MappedBlockCache::Get().SetLimit(bytes); }

void Arena::SetAdviseHugePages(bool advise) {
  advise_huge_pages.store(advise, std::memory_order_relaxed);
}

size_t Arena::MappedBlockCacheBytes() { return MappedBlockCache::Get().bytes(); }

void Arena::BlockDeleter::operator()(char* p) const {
  if (mapped_bytes > 0) {
    if (!MappedBlockCache::Get().Put(p, mapped_bytes)) {
      PCHECK(munmap(p, mapped_bytes) == 0) << "munmap of an arena block";
    }
  } else {
    delete[] p;
  }
}

std::unique_ptr<char, Arena::BlockDeleter> Arena::AllocateBlock(size_t size, bool huge_pages) {
  if (huge_pages && size >= kHugePageSize) {
    const size_t rounded = (size + kHugePageSize - 1) / kHugePageSize * kHugePageSize;
    if (char* p = MappedBlockCache::Get().Take(rounded)) {
#ifndef NDEBUG
      std::memset(p, 0xa5, rounded);  // Arena memory is uninitialized: let debug builds show it.
#endif
      return std::unique_ptr<char, BlockDeleter>(p, BlockDeleter{rounded});
    }
    if (char* p = MapHugePages(rounded)) {
      return std::unique_ptr<char, BlockDeleter>(p, BlockDeleter{rounded});
    }
  }
  return std::unique_ptr<char, BlockDeleter>(new char[size], BlockDeleter{0});
}

Arena::Arena(size_t initial_block_size, size_t max_block_size, bool huge_pages)
    : initial_block_size_(initial_block_size),
      max_block_size_(max_block_size),
      huge_pages_(huge_pages),
      next_block_size_(initial_block_size) {
  CHECK_GT(initial_block_size, 0u);
  CHECK_LE(initial_block_size, max_block_size);
}

Arena::~Arena() = default;

char* Arena::Allocate(size_t n) { return AllocateAligned(n, 1); }

char* Arena::AllocateAligned(size_t n, size_t align) {
  CHECK(IsPowerOfTwo(align)) << "alignment " << align << " is not a power of two";
  if (alloc_ptr_ != nullptr) {
    char* result = AlignUp(alloc_ptr_, align);
    if (result <= alloc_end_ && static_cast<size_t>(alloc_end_ - result) >= n) {
      alloc_ptr_ = result + n;
      bytes_allocated_ += n;
      return result;
    }
  }
  return AllocateFallback(n, align);
}

char* Arena::AllocateFallback(size_t n, size_t align) {
  // Worst-case padding needed to align the start of a fresh block.
  const size_t padding = align > kBlockAlignment ? align - 1 : 0;
  CHECK_LE(n, SIZE_MAX / 2) << "arena allocation of " << n << " bytes is absurdly large";
  const size_t needed = n + padding;
  bytes_allocated_ += n;
  if (needed > next_block_size_ / 4) {
    // Dedicated block: keep the current block for later small allocations.
    return AlignUp(NewBlock(needed), align);
  }
  char* block = NewBlock(next_block_size_);
  alloc_ptr_ = block;
  alloc_end_ = block + next_block_size_;
  next_block_size_ = std::min(next_block_size_ * 2, max_block_size_);
  char* result = AlignUp(alloc_ptr_, align);
  alloc_ptr_ = result + n;
  DCHECK_LE(alloc_ptr_, alloc_end_);
  return result;
}

char* Arena::NewBlock(size_t size) {
  // Allocate at least one byte so Allocate(0) in a dedicated block returns a distinct pointer.
  const size_t alloc_size = std::max<size_t>(size, 1);
  blocks_.push_back(Block{AllocateBlock(alloc_size, huge_pages_), alloc_size});
  const size_t mapped = blocks_.back().data.get_deleter().mapped_bytes;
  total_block_bytes_ += std::max(mapped, alloc_size);
  return blocks_.back().data.get();
}

std::string_view Arena::AddString(std::string_view data) {
  return std::string_view(Copy(data.data(), data.size()), data.size());
}

char* Arena::Copy(const void* data, size_t n) {
  char* dst = Allocate(n);
  if (n > 0) std::memcpy(dst, data, n);
  return dst;
}

size_t Arena::MemoryUsage() const {
  return sizeof(*this) + total_block_bytes_ + blocks_.capacity() * sizeof(Block);
}

void Arena::Reset() {
  bytes_allocated_ = 0;
  // Find the current regular block (the one alloc_ptr_ points into) and keep only it.
  Block kept{std::unique_ptr<char, BlockDeleter>(nullptr, BlockDeleter{0}), 0};
  if (alloc_ptr_ != nullptr) {
    for (Block& b : blocks_) {
      if (alloc_end_ == b.data.get() + b.size) {
        kept = std::move(b);
        break;
      }
    }
    DCHECK(kept.data != nullptr);
  }
  blocks_.clear();
  total_block_bytes_ = 0;
  if (kept.data != nullptr) {
    alloc_ptr_ = kept.data.get();
    alloc_end_ = alloc_ptr_ + kept.size;
    total_block_bytes_ = std::max(kept.size, kept.data.get_deleter().mapped_bytes);
    blocks_.push_back(std::move(kept));
  } else {
    alloc_ptr_ = alloc_end_ = nullptr;
    next_block_size_ = initial_block_size_;
  }
}

}  // namespace basalt
