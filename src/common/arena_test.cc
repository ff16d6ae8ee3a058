#include "common/arena.h"

#include <sys/mman.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/cleanup/cleanup.h"
#include "common/random.h"

namespace basalt {
namespace {
namespace arena_test_file {

bool IsAligned(const void* p, size_t align) { return reinterpret_cast<uintptr_t>(p) % align == 0; }

TEST(ArenaTest, EmptyArenaUsesNoBlocks) {
  Arena arena;
  EXPECT_EQ(arena.bytes_allocated(), 0u);
  EXPECT_LT(arena.MemoryUsage(), 1024u);
}

TEST(ArenaTest, SmallAllocationsShareABlock) {
  Arena arena(4096, 65536);
  char* a = arena.Allocate(10);
  char* b = arena.Allocate(20);
  // Bump allocation: b follows a directly.
  EXPECT_EQ(b, a + 10);
  const size_t usage = arena.MemoryUsage();
  EXPECT_GE(usage, 4096u);
  EXPECT_LT(usage, 4096u + 1024u);
  EXPECT_EQ(arena.bytes_allocated(), 30u);
}

TEST(ArenaTest, AllocationsDoNotOverlapAndKeepContents) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rng(seed);
  Arena arena(128, 8192);
  std::vector<std::pair<char*, std::string>> allocs;
  size_t total = 0;
  for (int i = 0; i < 5000; ++i) {
    const size_t n = rng.OneIn(50) ? rng.Uniform(20000) : rng.Uniform(100);
    char* p =
        rng.OneIn(3) ? arena.AllocateAligned(n, size_t{1} << rng.Uniform(7)) : arena.Allocate(n);
    ASSERT_NE(p, nullptr);
    std::string expected = rng.Bytes(n);
    std::memcpy(p, expected.data(), n);
    allocs.emplace_back(p, std::move(expected));
    total += n;
  }
  // Every allocation still holds what was written: nothing overlapped or moved.
  for (const auto& [p, expected] : allocs) {
    ASSERT_EQ(std::string(p, expected.size()), expected);
  }
  EXPECT_EQ(arena.bytes_allocated(), total);
  EXPECT_GE(arena.MemoryUsage(), total);
}

TEST(ArenaTest, AlignedAllocations) {
  Arena arena(4096, 4096);
  for (size_t align : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u, 256u, 4096u}) {
    arena.Allocate(1);  // Misalign the bump pointer.
    char* p = arena.AllocateAligned(24, align);
    EXPECT_TRUE(IsAligned(p, align)) << "align=" << align;
    std::memset(p, 0xab, 24);
  }
  // Alignment larger than the block size still works (dedicated block).
  char* big = arena.AllocateAligned(8, 8192);
  EXPECT_TRUE(IsAligned(big, 8192));
}

TEST(ArenaTest, LargeAllocationGetsDedicatedBlock) {
  Arena arena(4096, 16384);
  char* small1 = arena.Allocate(16);
  const size_t before = arena.MemoryUsage();
  char* large = arena.Allocate(100000);
  std::memset(large, 0x5a, 100000);
  EXPECT_GE(arena.MemoryUsage(), before + 100000);
  // The current block keeps serving small allocations after the large one.
  char* small2 = arena.Allocate(16);
  EXPECT_EQ(small2, small1 + 16);
  for (int i = 0; i < 100000; ++i) ASSERT_EQ(large[i], 0x5a);
}

TEST(ArenaTest, BlocksGrowUpToMax) {
  Arena arena(1024, 4096);
  // Allocate 200 bytes at a time (below a quarter of every block size) and watch the usage grow:
  // blocks of 1 KiB, 2 KiB, 4 KiB, 4 KiB, ...
  size_t last_usage = arena.MemoryUsage();
  std::vector<size_t> growth;
  for (int i = 0; i < 200; ++i) {
    arena.Allocate(200);
    const size_t usage = arena.MemoryUsage();
    if (usage != last_usage) {
      growth.push_back(usage - last_usage);
      last_usage = usage;
    }
  }
  ASSERT_GE(growth.size(), 4u);
  // Growth includes a little bookkeeping (vector capacity), so compare with tolerance.
  EXPECT_NEAR(static_cast<double>(growth[0]), 1024, 256);
  EXPECT_NEAR(static_cast<double>(growth[1]), 2048, 256);
  EXPECT_NEAR(static_cast<double>(growth[2]), 4096, 256);
  for (size_t i = 3; i < growth.size(); ++i) EXPECT_LE(growth[i], 4096u + 512u);
}

TEST(ArenaTest, AddStringAndCopy) {
  Arena arena;
  std::string source = "hello, arena";
  std::string_view copy = arena.AddString(source);
  source[0] = 'J';  // The copy is independent of the source.
  EXPECT_EQ(copy, "hello, arena");
  EXPECT_NE(copy.data(), source.data());
  std::string_view empty = arena.AddString("");
  EXPECT_TRUE(empty.empty());
  std::string with_nul("a\0b", 3);
  EXPECT_EQ(arena.AddString(with_nul), with_nul);
  const int64_t value = 0x0102030405060708;
  char* p = arena.Copy(&value, sizeof(value));
  int64_t back;
  std::memcpy(&back, p, sizeof(back));
  EXPECT_EQ(back, value);
}

TEST(ArenaTest, ZeroByteAllocations) {
  Arena arena(16, 16);
  char* a = arena.Allocate(0);
  EXPECT_NE(a, nullptr);
  char* b = arena.AllocateAligned(0, 64);
  EXPECT_NE(b, nullptr);
  EXPECT_TRUE(IsAligned(b, 64));
}

TEST(ArenaTest, NewObject) {
  struct Point {
    int32_t x;
    int64_t y;
  };
  Arena arena;
  arena.Allocate(3);
  Point* p = arena.NewObject<Point>(Point{1, 2});
  EXPECT_TRUE(IsAligned(p, alignof(Point)));
  EXPECT_EQ(p->x, 1);
  EXPECT_EQ(p->y, 2);
}

TEST(ArenaTest, ResetKeepsOneBlockAndReusesIt) {
  Arena arena(1024, 1024);
  for (int i = 0; i < 50; ++i) arena.Allocate(200);
  arena.Allocate(50000);
  const size_t grown = arena.MemoryUsage();
  EXPECT_GT(grown, 50000u);
  arena.Reset();
  EXPECT_EQ(arena.bytes_allocated(), 0u);
  const size_t after_reset = arena.MemoryUsage();
  EXPECT_LT(after_reset, 2048u + 1024u);
  EXPECT_GE(after_reset, 1024u);  // One block retained.
  // Allocations after Reset reuse the retained block: usage does not grow.
  char* a = arena.Allocate(100);
  char* b = arena.Allocate(100);
  EXPECT_EQ(b, a + 100);
  EXPECT_EQ(arena.MemoryUsage(), after_reset);
}

TEST(ArenaTest, ResetOfEmptyArenaAndRepeatedResets) {
  Arena arena;
  arena.Reset();
  arena.Reset();
  EXPECT_EQ(arena.AddString("x"), "x");
  arena.Reset();
  EXPECT_EQ(arena.AddString("yz"), "yz");
}

// Huge-page blocks: mapped, 2 MiB aligned, rounded to whole huge pages, and with the same
// semantics as heap blocks (contents kept, Reset keeps and reuses the current block).
TEST(ArenaTest, HugePageBlocks) {
  constexpr size_t kHuge = Arena::kHugePageSize;
  Random rng(SeedFromEnvOrTime());
  Arena arena(kHuge, 4 * kHuge, /*huge_pages=*/true);
  // The first regular block is exactly one huge page, mapped at a huge-page boundary (a heap
  // block of that size would start just past malloc's chunk header).
  char* first = arena.Allocate(1);
  EXPECT_TRUE(IsAligned(first, kHuge));
  EXPECT_GE(arena.MemoryUsage(), kHuge);
  // Fill several blocks (2, 4, then 8 MiB) with a pattern and check every byte survives.
  std::vector<std::pair<char*, size_t>> chunks;
  size_t total = 0;
  while (total < 10 * kHuge) {
    const size_t n = 1 + rng.Uniform(64 * 1024);
    char* p = arena.AllocateAligned(n, 8);
    ASSERT_TRUE(IsAligned(p, 8));
    std::memset(p, static_cast<int>(chunks.size() & 0xff), n);
    chunks.emplace_back(p, n);
    total += n;
  }
  // A dedicated 5 MiB + 1 block (larger than a quarter of the next block) is rounded up to three
  // whole huge pages.
  const size_t before = arena.MemoryUsage();
  char* big = arena.Allocate(5 * kHuge + 1);
  std::memset(big, 0x5a, 5 * kHuge + 1);
  EXPECT_TRUE(IsAligned(big, kHuge));
  EXPECT_GE(arena.MemoryUsage() - before, 6 * kHuge);
  for (size_t i = 0; i < chunks.size(); i++) {
    const auto [p, n] = chunks[i];
    for (size_t j = 0; j < n; j += 997) {
      ASSERT_EQ(p[j], static_cast<char>(i & 0xff)) << "chunk " << i << " byte " << j;
    }
    ASSERT_EQ(p[n - 1], static_cast<char>(i & 0xff));
  }
  EXPECT_EQ(arena.bytes_allocated(), 1 + total + 5 * kHuge + 1);
  // Reset unmaps everything but the current regular block, which is reused.
  arena.Reset();
  const size_t after_reset = arena.MemoryUsage();
  EXPECT_LE(after_reset, 4 * kHuge + 4096);
  char* a = arena.Allocate(100);
  EXPECT_TRUE(IsAligned(a, kHuge));
  EXPECT_EQ(arena.Allocate(100), a + 100);
  EXPECT_EQ(arena.MemoryUsage(), after_reset);
}

// Blocks below kHugePageSize come from the heap even with huge_pages, and an arena without the
// option never maps.
TEST(ArenaTest, HugePagesOnlyForLargeBlocks) {
  Arena small_blocks(4096, 65536, /*huge_pages=*/true);
  for (int i = 0; i < 100; i++) small_blocks.Allocate(1000);
  EXPECT_LT(small_blocks.MemoryUsage(), Arena::kHugePageSize);
  Arena heap(Arena::kHugePageSize, Arena::kHugePageSize);
  char* p = heap.Allocate(1);
  EXPECT_FALSE(IsAligned(p, Arena::kHugePageSize));
  EXPECT_LT(heap.MemoryUsage(), Arena::kHugePageSize + 4096);
}

// The VmFlags of the mapping holding `p` in /proc/self/smaps ("hg": advised MADV_HUGEPAGE), or
// nullopt when they cannot be read.
std::optional<std::string> VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = addr >= lo && addr < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8) + " ";
    }
  }
  return std::nullopt;
}

// Mapped blocks are advised huge pages unless SetAdviseHugePages(false); they are mapped at
// huge-page boundaries either way.
TEST(ArenaTest, HugePageAdviceCanBeTurnedOff) {
  constexpr size_t kHuge = Arena::kHugePageSize;
  absl::Cleanup restore = [] { Arena::SetAdviseHugePages(true); };  // Process-wide: the default.
  for (bool advise : {true, false}) {
    SCOPED_TRACE(advise ? "advised" : "not advised");
    Arena::SetAdviseHugePages(advise);
    Arena a(kHuge, kHuge, /*huge_pages=*/true);
    char* p = a.Allocate(1);
    EXPECT_TRUE(IsAligned(p, kHuge));
    std::optional<std::string> flags = VmFlagsOf(p);
    if (!flags.has_value()) GTEST_SKIP() << "no VmFlags in /proc/self/smaps";
#ifdef MADV_HUGEPAGE
    EXPECT_EQ(flags->find(" hg ") != std::string::npos, advise) << *flags;
#endif
  }
}

// Freed mapped blocks are kept up to the cache limit and handed to the next arena needing a block
// of the same size; lowering the limit releases them; with no limit nothing is kept.
TEST(ArenaTest, FreedMappedBlocksAreReusedUpToTheCacheLimit) {
  constexpr size_t kHuge = Arena::kHugePageSize;
  ASSERT_EQ(Arena::MappedBlockCacheBytes(), 0u);
  char* first;
  {
    Arena a(kHuge, kHuge, /*huge_pages=*/true);
    first = a.Allocate(1);
    std::memset(first, 0x11, kHuge);
  }
  EXPECT_EQ(Arena::MappedBlockCacheBytes(), 0u);  // No limit set: unmapped.

  Arena::SetMappedBlockCacheLimit(3 * kHuge);
  {
    Arena a(kHuge, kHuge, /*huge_pages=*/true);
    for (int i = 0; i < 4; i++) std::memset(a.Allocate(kHuge), 0x22, kHuge);  // Dedicated.
    char* big = a.Allocate(5 * kHuge);  // A dedicated 6 MiB block: over the limit, unmapped.
    big[0] = 1;
  }
  EXPECT_EQ(Arena::MappedBlockCacheBytes(), 3 * kHuge);  // Three of the four 2 MiB blocks.

  std::vector<char*> reused;
  {
    Arena a(kHuge, kHuge, /*huge_pages=*/true);
    for (int i = 0; i < 4; i++) {
      char* p = a.Allocate(kHuge);
      EXPECT_TRUE(IsAligned(p, kHuge));
      std::memset(p, 0x33, kHuge);  // Usable as fresh memory.
      reused.push_back(p);
    }
    EXPECT_EQ(Arena::MappedBlockCacheBytes(), 0u);  // Three taken, one mapped anew.
  }
  EXPECT_EQ(Arena::MappedBlockCacheBytes(), 3 * kHuge);
  Arena::SetMappedBlockCacheLimit(kHuge);
  EXPECT_EQ(Arena::MappedBlockCacheBytes(), kHuge);
  Arena::SetMappedBlockCacheLimit(0);
  EXPECT_EQ(Arena::MappedBlockCacheBytes(), 0u);
}

TEST(ArenaDeathTest, NonPowerOfTwoAlignmentDies) {
  Arena arena;
  EXPECT_DEATH(arena.AllocateAligned(8, 3), "power of two");
}

}  // namespace arena_test_file
}  // namespace
}  // namespace basalt
