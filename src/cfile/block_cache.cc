#include "cfile/block_cache.h"

#include <algorithm>
#include <utility>

#include "gflags/gflags.h"

DEFINE_int64(block_cache_capacity_mb, 512,
             "Sets the capacity of the block cache, in MiB, shared by all column file readers.");

namespace basalt {

// One cached value. Lives until it is out of the cache (in_cache false) and unpinned (handles 0).
struct BlockCache::Entry {
  Key key;
  std::unique_ptr<Value> value;
  size_t charge = 0;
  uint32_t handles = 0;   // Outstanding Handles.
  bool in_cache = false;  // In the shard's table (Lookup can find it).
  // Links in the shard's LRU list; set only while in_cache && handles == 0.
  Entry* prev = nullptr;
  Entry* next = nullptr;
};

// One shard: a table and an LRU list of its unpinned entries under one mutex.
// Thread-safe.
class BlockCache::Shard {
 public:
  explicit Shard(size_t capacity) : capacity_(capacity) { lru_.prev = lru_.next = &lru_; }
  ~Shard();

  Handle Insert(const Key& key, std::unique_ptr<Value> value, size_t charge)
      ABSL_LOCKS_EXCLUDED(mu_);
  Handle Lookup(const Key& key) ABSL_LOCKS_EXCLUDED(mu_);
  void Erase(const Key& key) ABSL_LOCKS_EXCLUDED(mu_);
  void Release(Entry* e) ABSL_LOCKS_EXCLUDED(mu_);
  void AddStats(Stats* stats) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Pin(Entry* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops a handle's pin; appends `e` to `*to_free` if nothing holds it any more.
  void Unpin(Entry* e, std::vector<Entry*>* to_free) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `e` out of the table (which the caller already did) and the LRU list.
  void RemoveFromCache(Entry* e, std::vector<Entry*>* to_free) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EvictIfNeeded(std::vector<Entry*>* to_free) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LruAppend(Entry* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void LruRemove(Entry* e);
  // Frees entries outside the lock: value destructors may be slow (large pages).
  static void Free(const std::vector<Entry*>& entries);

  const size_t capacity_;

  mutable absl::Mutex mu_;
  size_t usage_ ABSL_GUARDED_BY(mu_) = 0;
  size_t pinned_usage_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<Key, Entry*> table_ ABSL_GUARDED_BY(mu_);
  // Dummy head of a circular list of unpinned cached entries; lru_.next is the oldest.
  Entry lru_ ABSL_GUARDED_BY(mu_);

  // Statistics. Atomics so GetStats reads them without the lock; relaxed order is enough for
  // counters that nothing synchronizes on.
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> misses_{0};
  std::atomic<int64_t> inserts_{0};
  std::atomic<int64_t> evictions_{0};
};

BlockCache::Shard::~Shard() {
  absl::MutexLock l(&mu_);
  std::vector<Entry*> to_free;
  for (auto& [key, e] : table_) {
    CHECK_EQ(e->handles, 0u) << "block cache destroyed with a pinned entry";
    RemoveFromCache(e, &to_free);
  }
  table_.clear();
  Free(to_free);
}

void BlockCache::Shard::LruAppend(Entry* e) {
  e->next = &lru_;
  e->prev = lru_.prev;
  e->prev->next = e;
  e->next->prev = e;
}

void BlockCache::Shard::LruRemove(Entry* e) {
  e->next->prev = e->prev;
  e->prev->next = e->next;
  e->prev = e->next = nullptr;
}

void BlockCache::Shard::Free(const std::vector<Entry*>& entries) {
  for (Entry* e : entries) delete e;
}

void BlockCache::Shard::Pin(Entry* e) {
  if (e->handles++ == 0) {
    pinned_usage_ += e->charge;
    if (e->in_cache) LruRemove(e);
  }
}

void BlockCache::Shard::Unpin(Entry* e, std::vector<Entry*>* to_free) {
  DCHECK_GT(e->handles, 0u);
  if (--e->handles > 0) return;
  pinned_usage_ -= e->charge;
  if (e->in_cache) {
    LruAppend(e);
  } else {
    usage_ -= e->charge;
    to_free->push_back(e);
  }
}

void BlockCache::Shard::RemoveFromCache(Entry* e, std::vector<Entry*>* to_free) {
  DCHECK(e->in_cache);
  e->in_cache = false;
  if (e->handles == 0) {
    LruRemove(e);
    usage_ -= e->charge;
    to_free->push_back(e);
  }
}

void BlockCache::Shard::EvictIfNeeded(std::vector<Entry*>* to_free) {
  while (usage_ > capacity_ && lru_.next != &lru_) {
    Entry* victim = lru_.next;
    table_.erase(victim->key);
    RemoveFromCache(victim, to_free);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

BlockCache::Handle BlockCache::Shard::Insert(const Key& key, std::unique_ptr<Value> value,
                                             size_t charge) {
  CHECK(value != nullptr);
  auto* e = new Entry{.key = key, .value = std::move(value), .charge = charge};
  std::vector<Entry*> to_free;
  {
    absl::MutexLock l(&mu_);
    inserts_.fetch_add(1, std::memory_order_relaxed);
    usage_ += charge;
    Pin(e);
    if (capacity_ > 0) {
      e->in_cache = true;
      auto [it, inserted] = table_.try_emplace(key, e);
      if (!inserted) {
        RemoveFromCache(it->second, &to_free);
        it->second = e;
      }
    }
    EvictIfNeeded(&to_free);
  }
  Free(to_free);
  return Handle(this, e);
}

BlockCache::Handle BlockCache::Shard::Lookup(const Key& key) {
  absl::MutexLock l(&mu_);
  auto it = table_.find(key);
  if (it == table_.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return Handle();
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  Entry* e = it->second;
  Pin(e);  // Off the LRU list while pinned; back at its most recent end when released.
  return Handle(this, e);
}

void BlockCache::Shard::Erase(const Key& key) {
  std::vector<Entry*> to_free;
  {
    absl::MutexLock l(&mu_);
    auto it = table_.find(key);
    if (it == table_.end()) return;
    Entry* e = it->second;
    table_.erase(it);
    RemoveFromCache(e, &to_free);
  }
  Free(to_free);
}

void BlockCache::Shard::Release(Entry* e) {
  std::vector<Entry*> to_free;
  {
    absl::MutexLock l(&mu_);
    Unpin(e, &to_free);
    EvictIfNeeded(&to_free);
  }
  Free(to_free);
}

void BlockCache::Shard::AddStats(Stats* stats) const {
  stats->hits += hits_.load(std::memory_order_relaxed);
  stats->misses += misses_.load(std::memory_order_relaxed);
  stats->inserts += inserts_.load(std::memory_order_relaxed);
  stats->evictions += evictions_.load(std::memory_order_relaxed);
  absl::MutexLock l(&mu_);
  stats->usage += usage_;
  stats->pinned_usage += pinned_usage_;
  stats->entries += table_.size();
}

// ---- Handle -------------------------------------------------------------------------------------

BlockCache::Handle::Handle(Handle&& other) noexcept
    : shard_(std::exchange(other.shard_, nullptr)), entry_(std::exchange(other.entry_, nullptr)) {}

BlockCache::Handle& BlockCache::Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    Release();
    shard_ = std::exchange(other.shard_, nullptr);
    entry_ = std::exchange(other.entry_, nullptr);
  }
  return *this;
}

const BlockCache::Value& BlockCache::Handle::value() const {
  DCHECK(entry_ != nullptr);
  return *entry_->value;
}

size_t BlockCache::Handle::charge() const {
  DCHECK(entry_ != nullptr);
  return entry_->charge;
}

void BlockCache::Handle::Release() {
  if (entry_ == nullptr) return;
  shard_->Release(entry_);
  shard_ = nullptr;
  entry_ = nullptr;
}

// ---- BlockCache ---------------------------------------------------------------------------------

BlockCache::BlockCache(size_t capacity_bytes, int num_shard_bits)
    : capacity_(capacity_bytes), num_shard_bits_(num_shard_bits) {
  CHECK(num_shard_bits >= 0 && num_shard_bits <= 10) << num_shard_bits;
  const size_t num_shards = size_t{1} << num_shard_bits;
  const size_t per_shard = (capacity_bytes + num_shards - 1) / num_shards;
  for (size_t i = 0; i < num_shards; ++i) shards_.push_back(std::make_unique<Shard>(per_shard));
}

BlockCache::~BlockCache() = default;

BlockCache* BlockCache::Default() {
  static BlockCache* const cache = new BlockCache(
      static_cast<size_t>(std::max<int64_t>(0, FLAGS_block_cache_capacity_mb)) << 20);
  return cache;
}

BlockCache::Shard& BlockCache::ShardFor(const Key& key) const {
  if (num_shard_bits_ == 0) return *shards_[0];
  // A fixed 64-bit mix (murmur3's finalizer) of both key fields; the top bits pick the shard.
  uint64_t h = key.block_id * 0x9e3779b97f4a7c15ull ^ key.offset;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return *shards_[h >> (64 - num_shard_bits_)];
}

BlockCache::Handle BlockCache::Insert(const Key& key, std::unique_ptr<Value> value, size_t charge) {
  return ShardFor(key).Insert(key, std::move(value), charge);
}

BlockCache::Handle BlockCache::Lookup(const Key& key) { return ShardFor(key).Lookup(key); }

void BlockCache::Erase(const Key& key) { ShardFor(key).Erase(key); }

BlockCache::Stats BlockCache::GetStats() const {
  Stats stats;
  stats.capacity = capacity_;
  for (const auto& shard : shards_) shard->AddStats(&stats);
  return stats;
}

}  // namespace basalt
