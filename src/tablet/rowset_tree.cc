#include "tablet/rowset_tree.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include <glog/logging.h>

#include "common/coding.h"

namespace basalt {

uint64_t KeyPrefix64(std::string_view key) {
  if (key.size() >= 8) return DecodeBigEndian64(key.data());
  char buf[8] = {};
  std::memcpy(buf, key.data(), key.size());
  return DecodeBigEndian64(buf);
}

RowSetTree::RowSetTree(std::vector<Interval> intervals) : intervals_(std::move(intervals)) {
  const int n = static_cast<int>(intervals_.size());
  CHECK_EQ(static_cast<size_t>(n), intervals_.size()) << "too many intervals";
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(), [this](int a, int b) {
    const Interval& x = intervals_[a];
    const Interval& y = intervals_[b];
    if (int c = x.min_key.compare(y.min_key); c != 0) return c < 0;
    if (int c = x.max_key.compare(y.max_key); c != 0) return c < 0;
    return a < b;
  });
  for (int p = 0; p < n; ++p) {
    const Interval& iv = intervals_[order_[p]];
    CHECK_LE(iv.min_key, iv.max_key) << "interval " << order_[p] << " has min_key > max_key";
    min_keys_.Add(iv.min_key);
    max_keys_.Add(iv.max_key);
    if (order_[p] != p) identity_order_ = false;
    if (p > 0 && max_keys_.Compare(p - 1, min_keys_.at(p)) >= 0) non_overlapping_ = false;
  }
  if (!non_overlapping_) BuildSegmentTree();
}

void RowSetTree::BuildSegmentTree() {
  const int n = static_cast<int>(order_.size());
  num_leaves_ = 1;
  while (num_leaves_ < n) num_leaves_ *= 2;
  tree_.assign(2 * num_leaves_, -1);
  for (int p = 0; p < n; ++p) tree_[num_leaves_ + p] = p;
  for (int node = num_leaves_ - 1; node >= 1; --node) {
    const int l = tree_[2 * node];
    const int r = tree_[2 * node + 1];
    if (r < 0 || (l >= 0 && max_keys_.Compare(l, max_keys_.at(r)) >= 0)) {
      tree_[node] = l;
    } else {
      tree_[node] = r;
    }
  }
}

int RowSetTree::MinKeyBound(const Key& key, bool upper) const {
  int lo = 0;
  int hi = static_cast<int>(order_.size());
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    const int c = min_keys_.Compare(mid, key);
    if (c < 0 || (upper && c == 0)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

int RowSetTree::FirstMaxAtLeast(const Key& key) const {
  DCHECK(non_overlapping_);
  int lo = 0;
  int hi = static_cast<int>(order_.size());
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (max_keys_.Compare(mid, key) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

void RowSetTree::CollectMaxAtLeast(int end, const Key& threshold,
                                   std::vector<int>* positions) const {
  if (end <= 0) return;
  // Depth-first, left child first, so positions come out ascending. The stack never holds more
  // than one pending right sibling per level plus the current node.
  struct Frame {
    int node;
    int begin;  // First leaf position covered by the node.
    int width;  // Number of leaf positions covered.
  };
  Frame stack[2 * 32 + 2];
  int top = 0;
  stack[top++] = {1, 0, num_leaves_};
  while (top > 0) {
    const Frame f = stack[--top];
    if (f.begin >= end) continue;
    const int best = tree_[f.node];
    if (best < 0 || max_keys_.Compare(best, threshold) < 0) continue;
    if (f.width == 1) {
      positions->push_back(f.begin);
      continue;
    }
    const int half = f.width / 2;
    stack[top++] = {2 * f.node + 1, f.begin + half, half};
    stack[top++] = {2 * f.node, f.begin, half};
  }
}

void RowSetTree::PositionsToIndices(std::vector<int>* out) const {
  if (identity_order_) return;
  for (int& p : *out) p = order_[p];
  if (out->size() > 1) std::sort(out->begin(), out->end());
}

void RowSetTree::FindContaining(std::string_view key, std::vector<int>* out) const {
  out->clear();
  const Key k = MakeKey(key);
  // Candidates: sorted positions [0, end) have min_key <= key.
  const int end = MinKeyBound(k, /*upper=*/true);
  if (non_overlapping_) {
    if (end > 0 && max_keys_.Compare(end - 1, k) >= 0) out->push_back(order_[end - 1]);
    return;
  }
  CollectMaxAtLeast(end, k, out);
  PositionsToIndices(out);
}

void RowSetTree::FindOverlapping(std::string_view lower, std::string_view upper,
                                 std::vector<int>* out) const {
  out->clear();
  if (!upper.empty() && upper <= lower) return;
  const Key lo = MakeKey(lower);
  // Candidates: sorted positions [0, end) have min_key < upper.
  const int end = upper.empty() ? static_cast<int>(order_.size())
                                : MinKeyBound(MakeKey(upper), /*upper=*/false);
  if (non_overlapping_ || lower.empty()) {
    // Max keys ascend with positions when nothing overlaps; with no lower bound all qualify.
    const int begin = lower.empty() ? 0 : FirstMaxAtLeast(lo);
    for (int p = begin; p < end; ++p) out->push_back(p);
  } else {
    CollectMaxAtLeast(end, lo, out);
  }
  PositionsToIndices(out);
}

}  // namespace basalt
