#pragma once

// ConcurrentBTree: an in-memory B+tree from byte-string keys to entries, with ONE writer and any
// number of lock-free readers. The MemRowSet's index (DESIGN.md section 4).
//
// Concurrency design: optimistic concurrency with a per-node version counter (a seqlock), as in
// Kudu's cbtree, rather than copy-on-write leaves. Copy-on-write would copy a ~2 KiB leaf per
// insert (tens of GB of memcpy for 10 M rows) and needs path copying up to the root on splits;
// with versions the writer modifies nodes in place and readers pay two extra loads per node.
//
//  - Every node has `version`: even when stable, odd while the writer modifies it. The writer
//    bumps it to odd (relaxed store + release fence), edits the node with atomic stores, and
//    bumps it to the next even value with a release store. Every field a reader looks at is a
//    std::atomic, so a reader that races with an edit sees stale or mixed values but never has
//    undefined behaviour; it detects the race by re-reading the version (acquire fence + load)
//    and retries from the root.
//  - Entry and child pointers are stored with release and loaded with acquire, so whatever
//    pointer a reader loads - even from a node it later finds inconsistent - points at a fully
//    constructed, immutable entry or node. Nodes and entries are never freed or reused while the
//    tree lives, so dereferencing a stale pointer is safe.
//  - Descent is hand-over-hand: a reader reads the child's stable version before re-validating
//    the parent. A split locks every node it changes (leaf up to the highest changed ancestor)
//    before editing any, and unlocks them only after all edits; so a reader that sees a split
//    child's new version also sees its parent's version change and retries. A root split stores
//    the new root before unlocking the old one, and readers re-check the root pointer after
//    reading the root's version.
//  - Keys never move between leaves except by splits, and separators are never removed (the
//    tree has no deletion), so a leaf's key range only narrows. Iteration therefore needs no leaf
//    links: it copies one leaf's entries at a consistent version, then re-seeks from the root at
//    the leaf's upper separator. An entry present before the iteration started is always seen.
//
// Writer fast path: the writer remembers the rightmost leaf; a key greater than that leaf's last
// key is appended there without a descent when the leaf has room. Nodes on the right edge split
// 90/10 instead of 50/50, so sequential inserts leave leaves ~90% full.
//
// Entry requirements: `std::string_view key() const` returning bytes that never change or move
// while the tree lives; entries are owned by the caller and must outlive the tree. Nodes are
// allocated from the caller's Arena (only the writer allocates).
//
// Thread safety: mutators (InsertIfAbsent) must be serialized by the caller and must not run
// concurrently with destruction; Find, iterators and the stats accessors are thread-safe and
// never block the writer (readers may spin briefly while a node is being edited).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <glog/logging.h>

#include "common/arena.h"
#include "common/coding.h"

namespace basalt {

template <typename Entry>
class ConcurrentBTree {
 public:
  // An iterator re-descends from the root once per leaf (no leaf links): wider leaves mean fewer
  // descents per row scanned; a random insert shifts more slots (docs/tablet.md, "Nodes").
  static constexpr int kLeafCapacity = 128;
  static constexpr int kInnerCapacity = 64;  // Children per inner node.
  static constexpr int kMaxHeight = 16;

  // `arena` is borrowed, must outlive the tree, and is used only by the writer.
  explicit ConcurrentBTree(Arena* arena) : arena_(arena) {
    LeafNode* root = NewLeaf();
    root_.store(root, std::memory_order_release);
    rightmost_leaf_ = root;
  }
  ConcurrentBTree(const ConcurrentBTree&) = delete;
  ConcurrentBTree& operator=(const ConcurrentBTree&) = delete;

  // Writer. If an entry with `key` exists, returns {it, false}. Otherwise calls `make()` (which
  // returns an Entry* whose key() equals `key`), inserts the result and returns {it, true}.
  template <typename MakeEntry>
  std::pair<Entry*, bool> InsertIfAbsent(std::string_view key, MakeEntry&& make);

  // The entry with `key`, or nullptr. Thread-safe.
  Entry* Find(std::string_view key) const;

  int64_t num_entries() const { return num_entries_.load(std::memory_order_relaxed); }
  // The entry with the greatest key, or nullptr when empty. Writer only.
  Entry* LastEntryForWriter() const {
    uint32_t n = rightmost_leaf_->count.load(std::memory_order_relaxed);
    return n == 0 ? nullptr : LoadSlot(&rightmost_leaf_->slots[n - 1]).entry;
  }
  int64_t fast_path_inserts() const { return fast_path_inserts_.load(std::memory_order_relaxed); }
  int64_t leaf_splits() const { return leaf_splits_.load(std::memory_order_relaxed); }
  int64_t inner_splits() const { return inner_splits_.load(std::memory_order_relaxed); }
  int height() const { return height_.load(std::memory_order_relaxed); }
  // Reader retries caused by concurrent edits (for tests and stats).
  int64_t reader_retries() const { return reader_retries_.load(std::memory_order_relaxed); }

  // Forward iteration in key order over a live tree. Sees every entry inserted before Seek*()
  // was called; entries inserted concurrently may or may not be seen. Not thread-safe itself
  // (one iterator per thread); the tree must outlive it.
  class Iterator {
   public:
    explicit Iterator(const ConcurrentBTree* tree) : tree_(tree) {}
    void SeekToStart() { Seek(std::string_view()); }
    // Positions at the first entry with key >= `lower`.
    void Seek(std::string_view lower);
    bool Valid() const { return pos_ < buffer_.size(); }
    Entry* entry() const { return buffer_[pos_]; }
    void Next() {
      if (++pos_ >= buffer_.size()) LoadNextLeaf();
    }
    // The entries of the current leaf from the current one on, for batch processing; Skip(n)
    // advances past n of them. REQUIRES: Valid().
    const Entry* const* remaining() const { return buffer_.data() + pos_; }
    size_t num_remaining() const { return buffer_.size() - pos_; }
    void Skip(size_t n) {
      pos_ += n;
      if (pos_ >= buffer_.size()) LoadNextLeaf();
    }

   private:
    void LoadNextLeaf();
    const ConcurrentBTree* tree_;
    std::vector<Entry*> buffer_;
    size_t pos_ = 0;
    // Upper separator of the buffered leaf; nullptr when it was the rightmost leaf.
    const Entry* high_ = nullptr;
  };

 private:
  struct Slot {
    std::atomic<uint64_t> prefix{0};  // First 8 key bytes, big-endian, zero padded.
    std::atomic<Entry*> entry{nullptr};
  };
  struct Node {
    explicit Node(bool leaf) : is_leaf(leaf) {}
    std::atomic<uint64_t> version{0};
    // Leaf: number of slots used. Inner: number of children.
    std::atomic<uint32_t> count{0};
    const bool is_leaf;  // Constant; published with the node.
  };
  struct LeafNode : Node {
    LeafNode() : Node(true) {}
    Slot slots[kLeafCapacity];
  };
  struct InnerNode : Node {
    InnerNode() : Node(false) {}
    // keys[i] is the smallest key of children[i + 1]'s subtree (at the time of the split).
    Slot keys[kInnerCapacity - 1];
    std::atomic<Node*> children[kInnerCapacity] = {};
  };
  // A (prefix, entry) pair outside the tree.
  struct Item {
    uint64_t prefix;
    Entry* entry;
  };
  // The writer's descent: nodes from the root down and the child index taken at each.
  struct Path {
    Node* nodes[kMaxHeight];
    int child_idx[kMaxHeight];
    int depth = 0;  // nodes[depth - 1] is the leaf.
  };

  static uint64_t KeyPrefix(std::string_view key) {
    char buf[8] = {};
    if (!key.empty()) std::memcpy(buf, key.data(), std::min<size_t>(8, key.size()));
    return DecodeBigEndian64(buf);
  }
  // Three-way comparison of (key, prefix) against a slot's contents; a null entry (only seen by
  // a reader racing with an edit) compares greater, and the reader's validation then fails.
  static int CompareSlot(std::string_view key, uint64_t prefix, uint64_t slot_prefix,
                         const Entry* e) {
    if (prefix != slot_prefix) return prefix < slot_prefix ? -1 : 1;
    if (e == nullptr) return -1;
    int c = key.compare(e->key());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  // First slot index in [0, n) whose key is >= key (exact set to whether it is equal).
  static int LowerBound(const Slot* slots, int n, std::string_view key, uint64_t prefix,
                        bool* exact);
  // Child index of an inner node for `key`: the number of separators <= key.
  static int ChildIndex(const InnerNode* node, int n, std::string_view key, uint64_t prefix);

  // Seqlock primitives.
  static uint64_t StableVersion(const Node* n) {
    uint64_t v = n->version.load(std::memory_order_acquire);
    while (v & 1) {
      std::this_thread::yield();
      v = n->version.load(std::memory_order_acquire);
    }
    return v;
  }
  static bool Validate(const Node* n, uint64_t v) {
    std::atomic_thread_fence(std::memory_order_acquire);
    return n->version.load(std::memory_order_relaxed) == v;
  }
  static void Lock(Node* n) {
    uint64_t v = n->version.load(std::memory_order_relaxed);
    DCHECK_EQ(v & 1, 0u);
    n->version.store(v + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  static void Unlock(Node* n) {
    uint64_t v = n->version.load(std::memory_order_relaxed);
    DCHECK_EQ(v & 1, 1u);
    n->version.store(v + 1, std::memory_order_release);
  }
  static uint32_t Count(const Node* n, uint32_t cap) {
    return std::min(n->count.load(std::memory_order_relaxed), cap);
  }
  // Prefetches a whole node: a binary search touches ~log2(64) scattered cache lines, and
  // fetching them in parallel beats taking the misses one after another.
  static void PrefetchNode(const Node* n) {
    const char* p = reinterpret_cast<const char*>(n);
    // Without reading the node (that would take the miss now); prefetch never faults.
    constexpr size_t kSize = std::max(sizeof(LeafNode), sizeof(InnerNode));
    for (size_t off = 0; off < kSize; off += 64) __builtin_prefetch(p + off);
  }
  static void StoreSlot(Slot* s, uint64_t prefix, Entry* e) {
    s->prefix.store(prefix, std::memory_order_relaxed);
    s->entry.store(e, std::memory_order_release);
  }
  static Item LoadSlot(const Slot* s) {
    return {s->prefix.load(std::memory_order_relaxed), s->entry.load(std::memory_order_acquire)};
  }

  // Reader descent: returns the leaf for `key` with its stable version, and its upper separator
  // entry (nullptr on the right edge). Retries internally until the path validates.
  const LeafNode* DescendToLeaf(std::string_view key, uint64_t prefix, uint64_t* leaf_version,
                                const Entry** high) const;
  // Copies the entries of the leaf for `lower` with key >= lower into `out` at a consistent
  // version.
  void ReadLeaf(std::string_view lower, std::vector<Entry*>* out, const Entry** high) const;

  LeafNode* NewLeaf() { return arena_->NewObject<LeafNode>(); }
  InnerNode* NewInner() { return arena_->NewObject<InnerNode>(); }

  // Writer helpers.
  void WriterDescend(std::string_view key, uint64_t prefix, Path* path) const;
  void InsertIntoLeaf(LeafNode* leaf, int pos, Item item);
  void InsertWithSplits(Path* path, int pos, Item item);
  // Splits a full leaf while inserting `item` at `pos`; returns the new right sibling.
  LeafNode* SplitLeaf(LeafNode* leaf, int pos, Item item, bool rightmost);
  // Inserts separator `sep` and child `right` after child `idx`, splitting a full node; returns
  // the new right sibling (or nullptr) and sets *promoted to the separator to push up.
  InnerNode* InsertIntoInner(InnerNode* node, int idx, Item sep, Node* right, bool rightmost,
                             Item* promoted);

  Arena* const arena_;
  std::atomic<Node*> root_{nullptr};
  // Writer-only state.
  LeafNode* rightmost_leaf_ = nullptr;
  // Stats, written by the writer, read by anyone (relaxed atomics: just counters).
  std::atomic<int64_t> num_entries_{0};
  std::atomic<int64_t> fast_path_inserts_{0};
  std::atomic<int64_t> leaf_splits_{0};
  std::atomic<int64_t> inner_splits_{0};
  std::atomic<int> height_{1};
  mutable std::atomic<int64_t> reader_retries_{0};
};

// ---- Implementation -----------------------------------------------------------------------------

template <typename Entry>
int ConcurrentBTree<Entry>::LowerBound(const Slot* slots, int n, std::string_view key,
                                       uint64_t prefix, bool* exact) {
  int lo = 0, hi = n;
  *exact = false;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    Item it = LoadSlot(&slots[mid]);
    int c = CompareSlot(key, prefix, it.prefix, it.entry);
    if (c == 0) {
      *exact = true;
      return mid;
    }
    if (c > 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <typename Entry>
int ConcurrentBTree<Entry>::ChildIndex(const InnerNode* node, int n, std::string_view key,
                                       uint64_t prefix) {
  if (n <= 1) return 0;
  bool exact;
  int i = LowerBound(node->keys, n - 1, key, prefix, &exact);
  return exact ? i + 1 : i;
}

template <typename Entry>
auto ConcurrentBTree<Entry>::DescendToLeaf(std::string_view key, uint64_t prefix,
                                           uint64_t* leaf_version, const Entry** high) const
    -> const LeafNode* {
  for (;;) {
    const Node* n = root_.load(std::memory_order_acquire);
    uint64_t v = StableVersion(n);
    if (root_.load(std::memory_order_acquire) != n) continue;
    const Entry* bound = nullptr;
    bool ok = true;
    while (!n->is_leaf) {
      const auto* inner = static_cast<const InnerNode*>(n);
      int count = static_cast<int>(Count(n, kInnerCapacity));
      int idx = ChildIndex(inner, count, key, prefix);
      const Node* child = inner->children[idx].load(std::memory_order_acquire);
      const Entry* b = idx < count - 1 ? LoadSlot(&inner->keys[idx]).entry : nullptr;
      if (child == nullptr || count == 0) {
        ok = false;
        break;
      }
      PrefetchNode(child);
      uint64_t cv = StableVersion(child);
      if (!Validate(n, v)) {
        ok = false;
        break;
      }
      if (b != nullptr) bound = b;
      n = child;
      v = cv;
    }
    if (ok) {
      *leaf_version = v;
      *high = bound;
      return static_cast<const LeafNode*>(n);
    }
    reader_retries_.fetch_add(1, std::memory_order_relaxed);
  }
}

template <typename Entry>
Entry* ConcurrentBTree<Entry>::Find(std::string_view key) const {
  uint64_t prefix = KeyPrefix(key);
  for (;;) {
    uint64_t v;
    const Entry* high;
    const LeafNode* leaf = DescendToLeaf(key, prefix, &v, &high);
    bool exact;
    int pos = LowerBound(leaf->slots, Count(leaf, kLeafCapacity), key, prefix, &exact);
    Entry* e = exact ? LoadSlot(&leaf->slots[pos]).entry : nullptr;
    if (Validate(leaf, v)) return e;
    reader_retries_.fetch_add(1, std::memory_order_relaxed);
  }
}

template <typename Entry>
void ConcurrentBTree<Entry>::ReadLeaf(std::string_view lower, std::vector<Entry*>* out,
                                      const Entry** high) const {
  uint64_t prefix = KeyPrefix(lower);
  for (;;) {
    uint64_t v;
    const LeafNode* leaf = DescendToLeaf(lower, prefix, &v, high);
    int n = static_cast<int>(Count(leaf, kLeafCapacity));
    bool exact;
    int pos = LowerBound(leaf->slots, n, lower, prefix, &exact);
    out->clear();
    for (int i = pos; i < n; ++i) out->push_back(LoadSlot(&leaf->slots[i]).entry);
    if (Validate(leaf, v)) return;
    reader_retries_.fetch_add(1, std::memory_order_relaxed);
  }
}

template <typename Entry>
void ConcurrentBTree<Entry>::Iterator::Seek(std::string_view lower) {
  tree_->ReadLeaf(lower, &buffer_, &high_);
  pos_ = 0;
  if (buffer_.empty()) LoadNextLeaf();
}

template <typename Entry>
void ConcurrentBTree<Entry>::Iterator::LoadNextLeaf() {
  // Leaves are non-empty except an empty root, but a leaf's part >= lower may be empty.
  while (high_ != nullptr) {
    std::string_view lower = high_->key();
    tree_->ReadLeaf(lower, &buffer_, &high_);
    pos_ = 0;
    if (!buffer_.empty()) return;
  }
  buffer_.clear();
  pos_ = 0;
}

// ---- Writer -------------------------------------------------------------------------------------

template <typename Entry>
void ConcurrentBTree<Entry>::WriterDescend(std::string_view key, uint64_t prefix,
                                           Path* path) const {
  Node* n = root_.load(std::memory_order_relaxed);
  path->depth = 0;
  while (!n->is_leaf) {
    auto* inner = static_cast<InnerNode*>(n);
    int idx = ChildIndex(inner, static_cast<int>(inner->count.load(std::memory_order_relaxed)), key,
                         prefix);
    path->nodes[path->depth] = n;
    path->child_idx[path->depth] = idx;
    ++path->depth;
    n = inner->children[idx].load(std::memory_order_relaxed);
    PrefetchNode(n);
  }
  path->nodes[path->depth] = n;
  path->child_idx[path->depth] = -1;
  ++path->depth;
}

template <typename Entry>
template <typename MakeEntry>
std::pair<Entry*, bool> ConcurrentBTree<Entry>::InsertIfAbsent(std::string_view key,
                                                               MakeEntry&& make) {
  uint64_t prefix = KeyPrefix(key);
  // Fast path: append to the rightmost leaf.
  LeafNode* rl = rightmost_leaf_;
  uint32_t rn = rl->count.load(std::memory_order_relaxed);
  if (rn > 0 && rn < kLeafCapacity) {
    Item last = LoadSlot(&rl->slots[rn - 1]);
    if (CompareSlot(key, prefix, last.prefix, last.entry) > 0) {
      Entry* e = make();
      InsertIntoLeaf(rl, static_cast<int>(rn), {prefix, e});
      fast_path_inserts_.fetch_add(1, std::memory_order_relaxed);
      return {e, true};
    }
  }
  Path path;
  WriterDescend(key, prefix, &path);
  auto* leaf = static_cast<LeafNode*>(path.nodes[path.depth - 1]);
  bool exact;
  int pos = LowerBound(leaf->slots, static_cast<int>(leaf->count.load(std::memory_order_relaxed)),
                       key, prefix, &exact);
  if (exact) return {LoadSlot(&leaf->slots[pos]).entry, false};
  Entry* e = make();
  DCHECK_EQ(e->key(), key);
  if (leaf->count.load(std::memory_order_relaxed) < kLeafCapacity) {
    InsertIntoLeaf(leaf, pos, {prefix, e});
  } else {
    InsertWithSplits(&path, pos, {prefix, e});
  }
  return {e, true};
}

template <typename Entry>
void ConcurrentBTree<Entry>::InsertIntoLeaf(LeafNode* leaf, int pos, Item item) {
  int n = static_cast<int>(leaf->count.load(std::memory_order_relaxed));
  Lock(leaf);
  for (int i = n; i > pos; --i) {
    Item prev = LoadSlot(&leaf->slots[i - 1]);
    StoreSlot(&leaf->slots[i], prev.prefix, prev.entry);
  }
  StoreSlot(&leaf->slots[pos], item.prefix, item.entry);
  leaf->count.store(n + 1, std::memory_order_relaxed);
  Unlock(leaf);
  num_entries_.fetch_add(1, std::memory_order_relaxed);
}

template <typename Entry>
void ConcurrentBTree<Entry>::InsertWithSplits(Path* path, int pos, Item item) {
  // Find the highest node that changes: the deepest ancestor with room, else the root.
  int top = path->depth - 1;
  while (top > 0 &&
         path->nodes[top]->count.load(std::memory_order_relaxed) >=
             static_cast<uint32_t>(top == path->depth - 1 ? kLeafCapacity : kInnerCapacity)) {
    --top;
  }
  // A node is on the right edge when every child index above it is the last one.
  bool rightmost[kMaxHeight];
  rightmost[0] = true;
  for (int d = 1; d < path->depth; ++d) {
    auto* parent = path->nodes[d - 1];
    rightmost[d] =
        rightmost[d - 1] && path->child_idx[d - 1] ==
                                static_cast<int>(parent->count.load(std::memory_order_relaxed)) - 1;
  }
  for (int d = path->depth - 1; d >= top; --d) Lock(path->nodes[d]);

  auto* leaf = static_cast<LeafNode*>(path->nodes[path->depth - 1]);
  Node* right = SplitLeaf(leaf, pos, item, rightmost[path->depth - 1]);
  Item sep = LoadSlot(&static_cast<LeafNode*>(right)->slots[0]);
  for (int d = path->depth - 2; d >= top && right != nullptr; --d) {
    Item promoted;
    right = InsertIntoInner(static_cast<InnerNode*>(path->nodes[d]), path->child_idx[d], sep, right,
                            rightmost[d], &promoted);
    sep = promoted;
  }
  Node* old_root = path->nodes[0];
  if (right != nullptr) {
    // The root split: grow the tree. Publish before unlocking the old root (see class comment).
    DCHECK_EQ(top, 0);
    InnerNode* root = NewInner();
    root->children[0].store(old_root, std::memory_order_relaxed);
    root->children[1].store(right, std::memory_order_relaxed);
    StoreSlot(&root->keys[0], sep.prefix, sep.entry);
    root->count.store(2, std::memory_order_relaxed);
    root_.store(root, std::memory_order_release);
    height_.fetch_add(1, std::memory_order_relaxed);
    CHECK_LT(height_.load(std::memory_order_relaxed), kMaxHeight);
  }
  for (int d = path->depth - 1; d >= top; --d) Unlock(path->nodes[d]);
  num_entries_.fetch_add(1, std::memory_order_relaxed);
}

template <typename Entry>
auto ConcurrentBTree<Entry>::SplitLeaf(LeafNode* leaf, int pos, Item item, bool rightmost)
    -> LeafNode* {
  constexpr int kTotal = kLeafCapacity + 1;
  Item all[kTotal];
  for (int i = 0, j = 0; i < kTotal; ++i) {
    all[i] = i == pos ? item : LoadSlot(&leaf->slots[j++]);
  }
  int left_n = rightmost ? kTotal * 9 / 10 : kTotal / 2;
  LeafNode* right = NewLeaf();
  for (int i = left_n; i < kTotal; ++i)
    StoreSlot(&right->slots[i - left_n], all[i].prefix, all[i].entry);
  right->count.store(kTotal - left_n, std::memory_order_relaxed);
  for (int i = pos; i < left_n; ++i) StoreSlot(&leaf->slots[i], all[i].prefix, all[i].entry);
  leaf->count.store(left_n, std::memory_order_relaxed);
  if (rightmost) rightmost_leaf_ = right;
  leaf_splits_.fetch_add(1, std::memory_order_relaxed);
  return right;
}

template <typename Entry>
auto ConcurrentBTree<Entry>::InsertIntoInner(InnerNode* node, int idx, Item sep, Node* right,
                                             bool rightmost, Item* promoted) -> InnerNode* {
  int n = static_cast<int>(node->count.load(std::memory_order_relaxed));
  if (n < kInnerCapacity) {
    // Shift keys[idx..n-2] and children[idx+1..n-1] right by one.
    for (int i = n - 1; i > idx; --i) {
      Item k = LoadSlot(&node->keys[i - 1]);
      StoreSlot(&node->keys[i], k.prefix, k.entry);
      node->children[i + 1].store(node->children[i].load(std::memory_order_relaxed),
                                  std::memory_order_release);
    }
    StoreSlot(&node->keys[idx], sep.prefix, sep.entry);
    node->children[idx + 1].store(right, std::memory_order_release);
    node->count.store(n + 1, std::memory_order_relaxed);
    return nullptr;
  }
  // Full: merge into scratch arrays (kInnerCapacity keys, kInnerCapacity + 1 children), split.
  constexpr int kChildren = kInnerCapacity + 1;
  Item keys[kInnerCapacity];
  Node* children[kChildren];
  for (int i = 0, j = 0; i < kInnerCapacity; ++i) {
    keys[i] = i == idx ? sep : LoadSlot(&node->keys[j++]);
  }
  for (int i = 0, j = 0; i < kChildren; ++i) {
    children[i] = i == idx + 1 ? right : node->children[j++].load(std::memory_order_relaxed);
  }
  int left_n = rightmost ? kChildren * 9 / 10 : kChildren / 2;  // Children kept on the left.
  InnerNode* sib = NewInner();
  for (int i = left_n; i < kChildren; ++i) {
    sib->children[i - left_n].store(children[i], std::memory_order_relaxed);
    if (i < kChildren - 1) StoreSlot(&sib->keys[i - left_n], keys[i].prefix, keys[i].entry);
  }
  sib->count.store(kChildren - left_n, std::memory_order_relaxed);
  *promoted = keys[left_n - 1];
  for (int i = idx; i < left_n - 1; ++i) StoreSlot(&node->keys[i], keys[i].prefix, keys[i].entry);
  for (int i = idx + 1; i < left_n; ++i) {
    node->children[i].store(children[i], std::memory_order_release);
  }
  node->count.store(left_n, std::memory_order_relaxed);
  inner_splits_.fetch_add(1, std::memory_order_relaxed);
  return sib;
}

}  // namespace basalt
