#include "cfile/block_cache.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "common/strings.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace block_cache_test_file {

using Key = BlockCache::Key;

// A value that counts its live instances, to observe when the cache frees entries.
class CountedValue final : public BlockCache::Value {
 public:
  CountedValue(int id, std::atomic<int>* live) : id_(id), live_(live) { ++*live_; }
  ~CountedValue() override { --*live_; }
  int id() const { return id_; }

 private:
  const int id_;
  std::atomic<int>* const live_;
};

class BlockCacheTest : public testing::Test {
 protected:
  // A one-shard cache of `capacity` bytes, so eviction order is global LRU.
  void MakeCache(size_t capacity) { cache_ = std::make_unique<BlockCache>(capacity, 0); }

  BlockCache::Handle Insert(uint64_t block, int id, size_t charge = 1) {
    return cache_->Insert(Key{block, 0}, std::make_unique<CountedValue>(id, &live_), charge);
  }
  // Returns the id of the cached value of `block`, or -1 on a miss.
  int Find(uint64_t block) {
    BlockCache::Handle h = cache_->Lookup(Key{block, 0});
    return h ? h.value_as<CountedValue>().id() : -1;
  }

  std::atomic<int> live_{0};
  std::unique_ptr<BlockCache> cache_;
};

TEST_F(BlockCacheTest, InsertLookupAndCounters) {
  MakeCache(100);
  Insert(1, 10).Release();
  EXPECT_EQ(Find(1), 10);
  EXPECT_EQ(Find(2), -1);
  EXPECT_FALSE(static_cast<bool>(cache_->Lookup(Key{1, 4096})));  // Offsets are part of the key.
  const BlockCache::Stats stats = cache_->GetStats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 2);
  EXPECT_EQ(stats.inserts, 1);
  EXPECT_EQ(stats.evictions, 0);
  EXPECT_EQ(stats.usage, 1u);
  EXPECT_EQ(stats.pinned_usage, 0u);
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.capacity, 100u);
}

TEST_F(BlockCacheTest, EvictsLeastRecentlyUsedFirst) {
  MakeCache(3);
  Insert(1, 1).Release();
  Insert(2, 2).Release();
  Insert(3, 3).Release();
  EXPECT_EQ(Find(1), 1);  // 1 becomes the most recently used; 2 is now the oldest.
  Insert(4, 4).Release();
  EXPECT_EQ(Find(2), -1);
  EXPECT_EQ(Find(3), 3);
  Insert(5, 5).Release();  // Evicts 1 (order now 1, 3, 4 → 4, 3 used after 1).
  EXPECT_EQ(Find(1), -1);
  EXPECT_EQ(Find(3), 3);
  EXPECT_EQ(Find(4), 4);
  EXPECT_EQ(Find(5), 5);
  EXPECT_EQ(cache_->GetStats().evictions, 2);
  EXPECT_EQ(live_.load(), 3);
}

TEST_F(BlockCacheTest, ChargeIsCountedInBytes) {
  MakeCache(1000);
  Insert(1, 1, 600).Release();
  Insert(2, 2, 300).Release();
  EXPECT_EQ(cache_->GetStats().usage, 900u);
  Insert(3, 3, 200).Release();  // 1100 > 1000: evicts block 1 only.
  EXPECT_EQ(Find(1), -1);
  EXPECT_EQ(Find(2), 2);
  EXPECT_EQ(cache_->GetStats().usage, 500u);
}

TEST_F(BlockCacheTest, PinnedEntriesAreNeverFreedAndCountTowardUsage) {
  MakeCache(2);
  BlockCache::Handle pinned = Insert(1, 1);
  for (int i = 2; i < 20; ++i) Insert(i, i).Release();
  EXPECT_EQ(Find(1), 1);  // Survived all that pressure.
  EXPECT_EQ(pinned.value_as<CountedValue>().id(), 1);
  BlockCache::Stats stats = cache_->GetStats();
  EXPECT_EQ(stats.pinned_usage, 1u);
  EXPECT_LE(stats.usage, 2u);
  // Erasing a pinned entry hides it but keeps it alive until released.
  const int live_before = live_.load();
  cache_->Erase(Key{1, 0});
  EXPECT_EQ(Find(1), -1);
  EXPECT_EQ(live_.load(), live_before);
  EXPECT_EQ(pinned.value_as<CountedValue>().id(), 1);
  EXPECT_EQ(cache_->GetStats().usage, stats.usage);  // Still charged while alive.
  pinned.Release();
  EXPECT_FALSE(static_cast<bool>(pinned));
  EXPECT_EQ(live_.load(), live_before - 1);
  EXPECT_EQ(cache_->GetStats().pinned_usage, 0u);
}

TEST_F(BlockCacheTest, OverCapacityWhilePinnedShrinksOnRelease) {
  MakeCache(2);
  std::vector<BlockCache::Handle> handles;
  for (int i = 0; i < 5; ++i) handles.push_back(Insert(i, i));
  EXPECT_EQ(cache_->GetStats().usage, 5u);  // Nothing evictable.
  EXPECT_EQ(cache_->GetStats().entries, 5u);
  handles.clear();
  EXPECT_LE(cache_->GetStats().usage, 2u);
  EXPECT_EQ(live_.load(), 2);
  EXPECT_EQ(Find(4), 4);  // The most recently released survive.
  EXPECT_EQ(Find(3), 3);
}

TEST_F(BlockCacheTest, ReplacingAKeyKeepsTheOldValueForItsHolders) {
  MakeCache(10);
  BlockCache::Handle old_handle = Insert(1, 100);
  Insert(1, 200).Release();
  EXPECT_EQ(Find(1), 200);
  EXPECT_EQ(old_handle.value_as<CountedValue>().id(), 100);
  EXPECT_EQ(live_.load(), 2);
  old_handle.Release();
  EXPECT_EQ(live_.load(), 1);
  EXPECT_EQ(cache_->GetStats().entries, 1u);
}

TEST_F(BlockCacheTest, ZeroCapacityCachesNothing) {
  MakeCache(0);
  BlockCache::Handle h = Insert(1, 1, 50);
  EXPECT_EQ(h.value_as<CountedValue>().id(), 1);
  EXPECT_EQ(Find(1), -1);
  h.Release();
  EXPECT_EQ(live_.load(), 0);
  EXPECT_EQ(cache_->GetStats().usage, 0u);
}

TEST_F(BlockCacheTest, HandlesMoveAndDestructionFreesEverything) {
  MakeCache(100);
  BlockCache::Handle a = Insert(1, 1);
  BlockCache::Handle b = std::move(a);
  EXPECT_FALSE(static_cast<bool>(a));
  ASSERT_TRUE(static_cast<bool>(b));
  a = Insert(2, 2);
  a = std::move(b);  // Releases the pin on 2.
  EXPECT_EQ(a.value_as<CountedValue>().id(), 1);
  EXPECT_EQ(cache_->GetStats().pinned_usage, 1u);
  a.Release();
  EXPECT_EQ(live_.load(), 2);
  cache_.reset();
  EXPECT_EQ(live_.load(), 0);
}

TEST_F(BlockCacheTest, BytesValue) {
  MakeCache(1 << 20);
  cache_->Insert(Key{7, 8192}, std::make_unique<BlockCache::BytesValue>("page bytes"), 10)
      .Release();
  BlockCache::Handle h = cache_->Lookup(Key{7, 8192});
  ASSERT_TRUE(static_cast<bool>(h));
  EXPECT_EQ(h.value_as<BlockCache::BytesValue>().data(), "page bytes");
  EXPECT_EQ(h.charge(), 10u);
}

TEST(BlockCacheDefaultTest, UsesTheFlag) {
  EXPECT_EQ(BlockCache::Default()->capacity(), size_t{512} << 20);
  EXPECT_EQ(BlockCache::Default(), BlockCache::Default());
}

// Threads insert, look up, erase and hold pins on overlapping keys; every value read must be
// the one stored under its key, and the accounting must balance at the end.
TEST(BlockCacheStressTest, ConcurrentUseIsConsistent) {
  const uint64_t seed = SeedFromEnvOrTime();
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 30000;
  constexpr int kKeys = 500;
  BlockCache cache(64 * 100, 3);  // Room for about 100 of the 500 keys of charge 64.
  std::atomic<int> errors{0};
  std::atomic<int64_t> lookups{0};
  std::atomic<int64_t> inserts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Random rng(seed + t);
      std::vector<BlockCache::Handle> held;
      for (int i = 0; i < kOpsPerThread; ++i) {
        const uint64_t k = rng.Uniform(kKeys);
        const Key key{k, k * 4096};
        const uint64_t op = rng.Uniform(10);
        BlockCache::Handle h;
        if (op < 5) {
          h = cache.Lookup(key);
          ++lookups;
        } else if (op < 9) {
          h = cache.Insert(key, std::make_unique<BlockCache::BytesValue>(StrCat(k)), 64);
          ++inserts;
        } else {
          cache.Erase(key);
        }
        if (h && h.value_as<BlockCache::BytesValue>().data() != StrCat(k)) ++errors;
        if (h && rng.OneIn(4)) held.push_back(std::move(h));
        if (held.size() > 8) held.erase(held.begin() + rng.Uniform(held.size()));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  const BlockCache::Stats stats = cache.GetStats();
  EXPECT_EQ(stats.pinned_usage, 0u);
  EXPECT_LE(stats.usage, cache.capacity() + 8 * 64);  // Per-shard rounding slack.
  EXPECT_EQ(stats.usage, stats.entries * 64);
  EXPECT_GT(stats.hits, 0);
  EXPECT_GT(stats.evictions, 0);
  EXPECT_EQ(stats.hits + stats.misses, lookups.load());
  EXPECT_EQ(stats.inserts, inserts.load());
}

}  // namespace block_cache_test_file
}  // namespace
}  // namespace basalt
