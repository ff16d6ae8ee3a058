#pragma once

// RowSetTree: which rowsets may hold a key, or keys of a range (DESIGN.md section 4).
//
// A key lookup (insert uniqueness check, update, delete) asks the tree for the rowsets whose
// [min key, max key] interval contains the key, and only then consults their bloom filters and
// key indexes; a scan with key bounds visits only the rowsets whose interval overlaps its range.
// The tablet builds a new tree on every change of its rowset set (flush, compaction) and publishes
// it together with the rowsets, so the tree itself is immutable. How it works: docs/tablet.md,
// "RowSetTree and compaction policy".

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace basalt {

// The first 8 bytes of `key` as a big-endian integer, zero-padded if `key` is shorter. For any
// keys a, b: KeyPrefix64(a) < KeyPrefix64(b) implies a < b (memcmp order), and a <= b implies
// KeyPrefix64(a) <= KeyPrefix64(b); equal prefixes need a full comparison.
uint64_t KeyPrefix64(std::string_view key);

// A static interval tree over inclusive [min_key, max_key] intervals of encoded keys, compared as
// byte strings (memcmp order). Intervals are identified by their index in the constructor's
// vector.
//
// Representation: the intervals sorted by min key, with an 8-byte key prefix kept beside each key
// so most comparisons touch no string bytes. When no two intervals overlap (the steady state after
// compactions), every query is one or two binary searches. Otherwise a max-segment-tree over the
// sorted order (each node: the interval with the greatest max key below it) answers "among the
// intervals with min key <= x, which have max key >= y" in O((1 + results) log n).
//
// Immutable after construction; const methods are thread-safe.
class RowSetTree {
 public:
  struct Interval {
    std::string min_key;
    std::string max_key;
  };

  // REQUIRES: min_key <= max_key for every interval; fewer than 2^31 intervals.
  explicit RowSetTree(std::vector<Interval> intervals);

  RowSetTree(const RowSetTree&) = delete;
  RowSetTree& operator=(const RowSetTree&) = delete;

  // Replaces `*out` with the indices of the intervals with min_key <= key <= max_key, ascending.
  void FindContaining(std::string_view key, std::vector<int>* out) const;

  // Replaces `*out` with the indices of the intervals overlapping the half-open range
  // [lower, upper), ascending. An empty `lower` or `upper` is unbounded on that side (the empty
  // key is the smallest key, so an empty `lower` is also the natural lower bound). An empty range
  // (upper <= lower, both bounded) overlaps nothing.
  void FindOverlapping(std::string_view lower, std::string_view upper, std::vector<int>* out) const;

  size_t size() const { return intervals_.size(); }
  const Interval& interval(int index) const { return intervals_[index]; }
  // True if no two intervals share a key (the fast path).
  bool non_overlapping() const { return non_overlapping_; }

 private:
  // A key with its KeyPrefix64, for fast comparisons.
  struct Key {
    uint64_t prefix;
    std::string_view bytes;  // Points into intervals_.
  };
  static Key MakeKey(std::string_view bytes) { return Key{KeyPrefix64(bytes), bytes}; }
  // A column of keys by sorted position, prefixes apart from the bytes so binary searches touch
  // one contiguous array of integers.
  struct KeyColumn {
    std::vector<uint64_t> prefixes;
    std::vector<std::string_view> bytes;  // Point into intervals_.
    void Add(std::string_view key) {
      prefixes.push_back(KeyPrefix64(key));
      bytes.push_back(key);
    }
    // memcmp-order comparison of the key at position `p` with `k`: < 0, 0, > 0.
    int Compare(int p, const Key& k) const {
      if (prefixes[p] != k.prefix) return prefixes[p] < k.prefix ? -1 : 1;
      return bytes[p].compare(k.bytes);
    }
    Key at(int p) const { return Key{prefixes[p], bytes[p]}; }
  };

  // Sorted positions: the first with min key > `key` (upper) or >= `key` (!upper).
  int MinKeyBound(const Key& key, bool upper) const;
  // Non-overlapping only: the first sorted position with max key >= `key`.
  int FirstMaxAtLeast(const Key& key) const;
  // Appends the sorted positions p < `end` whose max key >= `threshold`, ascending.
  void CollectMaxAtLeast(int end, const Key& threshold, std::vector<int>* positions) const;
  // Replaces positions in `*out` by interval indices and sorts them.
  void PositionsToIndices(std::vector<int>* out) const;
  void BuildSegmentTree();

  // Constant after construction.
  const std::vector<Interval> intervals_;
  // By sorted position (sorted by min key, then max key, then index).
  std::vector<int> order_;  // Sorted position -> interval index.
  KeyColumn min_keys_;
  KeyColumn max_keys_;
  bool identity_order_ = true;  // order_[p] == p for all p.
  bool non_overlapping_ = true;
  // Max-segment-tree (only when overlapping): node 1 is the root, node k has children 2k and
  // 2k + 1, leaves start at num_leaves_. Each node holds the sorted position with the greatest
  // max key in its subtree, or -1 for empty padding.
  int num_leaves_ = 0;
  std::vector<int> tree_;
};

}  // namespace basalt
