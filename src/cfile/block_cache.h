#pragma once

// BlockCache: a sharded LRU cache of block pages with a byte budget.
//
// Column file readers cache pages (decompressed and checksum-verified, ready to decode) by
// (block id, offset in the block). Block ids are never reused (block_manager.h), so a deleted
// block's entries are never served for another block; they simply age out.
//
// Entries are pinned by Handles. A pinned entry is never freed, even when it is evicted, erased
// or replaced: the cache only stops returning it from Lookup, and frees it when the last handle
// is released. Eviction removes least recently used unpinned entries while the usage exceeds the
// capacity. Usage counts the charge of every entry not yet freed, pinned or not, so pinned pages
// count against the budget (the cache may stay above capacity while pins prevent eviction).
//
// The key space is split into 2^num_shard_bits shards by a hash of the key; each shard has its
// own mutex, table, LRU list and capacity/num_shards of the budget.
//
// Thread-safe. Handles must be released before the cache is destroyed.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"

namespace basalt {

class BlockCache {
 public:
  // A cached page: `offset` of block `block_id` (BlockId::value()).
  struct Key {
    uint64_t block_id = 0;
    uint64_t offset = 0;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.block_id, k.offset);
    }
  };

  // Base class of cached values. The cache owns inserted values and destroys them when they are
  // freed (evicted or erased, and unpinned), possibly on another thread.
  class Value {
   public:
    virtual ~Value() = default;
  };

  // A value that is a byte string (e.g. a decompressed page).
  class BytesValue final : public Value {
   public:
    explicit BytesValue(std::string data) : data_(std::move(data)) {}
    const std::string& data() const { return data_; }

   private:
    const std::string data_;
  };

  class Shard;
  struct Entry;

  // A pin on one entry: its value stays alive and unevictable while the handle exists. An empty
  // (default-constructed, moved-from or released) handle pins nothing. Move-only.
  // Not thread-safe; the caller serializes use of one handle.
  class Handle {
   public:
    Handle() = default;
    Handle(Handle&& other) noexcept;
    Handle& operator=(Handle&& other) noexcept;
    ~Handle() { Release(); }

    explicit operator bool() const { return entry_ != nullptr; }
    // REQUIRES: non-empty.
    const Value& value() const;
    // The value as its concrete type. REQUIRES: non-empty and the value is a T.
    template <typename T>
    const T& value_as() const {
      DCHECK(dynamic_cast<const T*>(&value()) != nullptr);
      return static_cast<const T&>(value());
    }
    size_t charge() const;

    // Unpins the entry (a no-op on an empty handle); the handle becomes empty.
    void Release();

   private:
    friend class BlockCache;
    Handle(Shard* shard, Entry* entry) : shard_(shard), entry_(entry) {}

    Shard* shard_ = nullptr;
    Entry* entry_ = nullptr;
  };

  struct Stats {
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t inserts = 0;
    int64_t evictions = 0;    // Entries removed to stay within capacity.
    size_t usage = 0;         // Charge of all entries not yet freed, pinned or not.
    size_t pinned_usage = 0;  // Charge of entries with at least one handle.
    size_t entries = 0;       // Entries Lookup can return.
    size_t capacity = 0;
  };

  // A cache of `capacity_bytes` split into 2^num_shard_bits shards. Capacity 0 disables caching:
  // Insert returns a handle to an entry no Lookup finds. REQUIRES: 0 <= num_shard_bits <= 10.
  explicit BlockCache(size_t capacity_bytes, int num_shard_bits = 4);
  // REQUIRES: every handle has been released.
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // The process-wide cache of --block_cache_capacity_mb, created at first use; never destroyed.
  static BlockCache* Default();

  // Inserts `value` under `key` with `charge` bytes counted against the capacity, replacing any
  // entry with the same key (the old one is freed once unpinned), then evicts unpinned entries
  // as needed. Returns a handle pinning the new entry. REQUIRES: value != nullptr.
  Handle Insert(const Key& key, std::unique_ptr<Value> value, size_t charge);

  // Returns a handle to the entry for `key` and marks it most recently used; empty on a miss.
  Handle Lookup(const Key& key);

  // Removes the entry for `key` if any; it is freed once unpinned.
  void Erase(const Key& key);

  Stats GetStats() const;
  size_t capacity() const { return capacity_; }

 private:
  Shard& ShardFor(const Key& key) const;

  // Constant after construction.
  const size_t capacity_;
  const int num_shard_bits_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace basalt
