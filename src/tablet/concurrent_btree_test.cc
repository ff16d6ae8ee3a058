#include "tablet/concurrent_btree.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/container/flat_hash_set.h"
#include "common/arena.h"
#include "common/coding.h"
#include "common/random.h"

namespace basalt {
namespace {
namespace concurrent_btree_test_file {

struct TestEntry {
  std::string_view k;
  int64_t value;
  std::string_view key() const { return k; }
};
using Tree = ConcurrentBTree<TestEntry>;

class BTreeTest : public ::testing::Test {
 protected:
  // Inserts (key, value); returns whether it was new.
  bool Insert(std::string_view key, int64_t value) {
    auto [e, inserted] = tree_.InsertIfAbsent(key, [&] {
      return arena_.NewObject<TestEntry>(TestEntry{arena_.AddString(key), value});
    });
    EXPECT_EQ(e->key(), key);
    return inserted;
  }
  static std::string BigEndianKey(uint32_t v) {
    char buf[4];
    EncodeBigEndian32(buf, v);
    return std::string(buf, 4);
  }
  // Checks a full scan and scans from random bounds against `model`.
  void CheckAgainstModel(const std::map<std::string, int64_t>& model, Random* rnd) {
    Tree::Iterator it(&tree_);
    it.SeekToStart();
    for (const auto& [k, v] : model) {
      ASSERT_TRUE(it.Valid());
      ASSERT_EQ(it.entry()->key(), k);
      ASSERT_EQ(it.entry()->value, v);
      it.Next();
    }
    EXPECT_FALSE(it.Valid());
    for (int i = 0; i < 200; ++i) {
      std::string lower = RandomKey(rnd);
      auto mit = model.lower_bound(lower);
      it.Seek(lower);
      for (int j = 0; j < 100 && mit != model.end(); ++j, ++mit) {
        ASSERT_TRUE(it.Valid());
        ASSERT_EQ(it.entry()->key(), mit->first);
        it.Next();
      }
      if (mit == model.end()) {
        EXPECT_FALSE(it.Valid());
      }
    }
  }
  // Keys over a small alphabet with shared prefixes longer than 8 bytes, so both the prefix
  // comparison and the full comparison are exercised.
  static std::string RandomKey(Random* rnd) {
    static const char* kPrefixes[] = {"", "aaaaaaaaaa", "aaaaaaaab", "\x00\x00", "zz"};
    std::string k = kPrefixes[rnd->Uniform(5)];
    size_t len = rnd->Uniform(12);
    for (size_t i = 0; i < len; ++i) k.push_back(static_cast<char>("ab\x00z"[rnd->Uniform(4)]));
    return k;
  }

  Arena arena_;
  Tree tree_{&arena_};
};

TEST_F(BTreeTest, EmptyTree) {
  Tree::Iterator it(&tree_);
  it.SeekToStart();
  EXPECT_FALSE(it.Valid());
  EXPECT_EQ(tree_.Find("x"), nullptr);
  EXPECT_EQ(tree_.height(), 1);
}

TEST_F(BTreeTest, RandomInsertsMatchStdMap) {
  Random rnd(SeedFromEnvOrTime());
  std::map<std::string, int64_t> model;
  for (int i = 0; i < 60000; ++i) {
    std::string k = RandomKey(&rnd);
    bool inserted = Insert(k, i);
    ASSERT_EQ(inserted, model.emplace(k, i).second) << "key size " << k.size();
  }
  EXPECT_EQ(tree_.num_entries(), static_cast<int64_t>(model.size()));
  for (const auto& [k, v] : model) {
    TestEntry* e = tree_.Find(k);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->value, v);
  }
  EXPECT_EQ(tree_.Find("not a key \xff"), nullptr);
  CheckAgainstModel(model, &rnd);
  EXPECT_GT(tree_.leaf_splits(), 0);
}

TEST_F(BTreeTest, SequentialInsertsTakeFastPathAndSplitEveryLevel) {
  Random rnd(SeedFromEnvOrTime());
  std::map<std::string, int64_t> model;
  // Enough keys for three inner levels: leaves of ~0.9 kLeafCapacity keys under right-edge
  // inner nodes of ~0.9 kInnerCapacity children, more of those than one node above them holds.
  constexpr int kLeaf = Tree::kLeafCapacity * 9 / 10;
  constexpr int kInner = Tree::kInnerCapacity * 9 / 10;
  constexpr int kN = kLeaf * kInner * Tree::kInnerCapacity * 5 / 4;
  for (int i = 0; i < kN; ++i) {
    std::string k = BigEndianKey(static_cast<uint32_t>(i));
    ASSERT_TRUE(Insert(k, i));
    model.emplace(k, i);
  }
  // Only the first insert into each new rightmost leaf (after a split) takes the slow path.
  EXPECT_GE(tree_.fast_path_inserts(), kN - tree_.leaf_splits() - 2);
  // 90/10 splits on the right edge: leaves hold ~90% of kLeafCapacity entries, not ~half.
  EXPECT_LT(tree_.leaf_splits(), kN / (Tree::kLeafCapacity * 3 / 4));
  // kN / kLeaf leaves need 3 inner levels of kInner-child right-edge nodes: the root split twice.
  EXPECT_GE(tree_.height(), 4);
  EXPECT_GT(tree_.inner_splits(), 1);
  EXPECT_FALSE(Insert(BigEndianKey(12345), 0));
  CheckAgainstModel(model, &rnd);
}

TEST_F(BTreeTest, DescendingInsertsSplitHalfAndHalf) {
  Random rnd(SeedFromEnvOrTime());
  std::map<std::string, int64_t> model;
  for (int i = 100000; i > 0; --i) {
    std::string k = BigEndianKey(static_cast<uint32_t>(i));
    ASSERT_TRUE(Insert(k, i));
    model.emplace(k, i);
  }
  EXPECT_EQ(tree_.fast_path_inserts(), 0);
  // Half-full leaves: about 100000 / (kLeafCapacity / 2) splits, well over this.
  EXPECT_GT(tree_.leaf_splits(), 100000 / (Tree::kLeafCapacity * 5 / 8));
  EXPECT_GE(tree_.height(), 3);
  CheckAgainstModel(model, &rnd);
}

// One writer inserts keys in a fixed random order and publishes how many it has inserted;
// readers scan and look up concurrently. Every scan must be strictly ascending and contain every
// key published before it began; every lookup of a published key must succeed.
TEST_F(BTreeTest, ConcurrentReadersSeeEveryPublishedKey) {
  Random rnd(SeedFromEnvOrTime());
  constexpr int kN = 60000;
  std::vector<std::string> keys;
  absl::flat_hash_set<std::string> unique;
  while (static_cast<int>(keys.size()) < kN) {
    // Half sequential-ish (fast path), half random. A random key may take a sequential key's
    // place (RandomKey can be empty): that slot then gets a random key, or the loop would retry
    // the same taken key forever (seed 1236448965507760861 hung so).
    std::string k = BigEndianKey(static_cast<uint32_t>(keys.size()) << 8);
    if (keys.size() % 2 == 0 || unique.contains(k))
      k = BigEndianKey(rnd.Next32()) + RandomKey(&rnd);
    if (unique.insert(k).second) keys.push_back(k);
  }
  std::atomic<int> published{0};
  std::atomic<bool> done{false};
  std::atomic<int64_t> scans{0};
  auto reader = [&](uint64_t seed) {
    Random r(seed);
    std::vector<char> seen(kN);
    while (!done.load(std::memory_order_acquire) || scans.load() < 6) {
      int before = published.load(std::memory_order_acquire);
      std::fill(seen.begin(), seen.end(), 0);
      Tree::Iterator it(&tree_);
      it.SeekToStart();
      std::string prev;
      bool first = true;
      for (; it.Valid(); it.Next()) {
        const TestEntry* e = it.entry();
        ASSERT_TRUE(first || prev < e->key());
        ASSERT_EQ(keys[e->value], e->key());
        seen[e->value] = 1;
        prev = std::string(e->key());
        first = false;
      }
      for (int i = 0; i < before; ++i) ASSERT_TRUE(seen[i]) << "missed key #" << i;
      for (int i = 0; i < 200 && before > 0; ++i) {
        int j = static_cast<int>(r.Uniform(before));
        TestEntry* e = tree_.Find(keys[j]);
        ASSERT_NE(e, nullptr);
        ASSERT_EQ(e->value, j);
      }
      scans.fetch_add(1);
    }
  };
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) readers.emplace_back(reader, rnd.Next64());
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(Insert(keys[i], i));
    published.store(i + 1, std::memory_order_release);
  }
  done.store(true, std::memory_order_release);
  for (auto& t : readers) t.join();
  EXPECT_GE(scans.load(), 6);
  LOG(INFO) << "scans=" << scans.load() << " reader_retries=" << tree_.reader_retries();
}

}  // namespace concurrent_btree_test_file
}  // namespace
}  // namespace basalt
