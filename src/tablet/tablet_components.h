#pragma once

// Tablet internals shared by the files that implement Tablet (tablet.cc, tablet_history.cc): the
// in-memory store and the immutable rowset snapshot (Components). Include tablet.h elsewhere.

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/schema.h"
#include "tablet/diskrowset.h"
#include "tablet/memrowset.h"
#include "tablet/rowset_tree.h"
#include "tablet/tablet.h"

namespace basalt {

namespace tablet_internal {
// "No op index": what an in-memory store that holds no op reports as its smallest index.
inline constexpr int64_t kNoOpIndex = std::numeric_limits<int64_t>::max();
}  // namespace tablet_internal

// A MemRowSet and the smallest op index it holds (WAL retention).
struct Tablet::MemStore {
  explicit MemStore(std::shared_ptr<MemRowSet> m) : mrs(std::move(m)) {}
  std::shared_ptr<MemRowSet> mrs;
  std::atomic<int64_t> min_op_index{tablet_internal::kNoOpIndex};
};

// The tablet's rowsets at one instant. Immutable; replaced as a whole on every change.
struct Tablet::Components {
  std::shared_ptr<const Schema> schema;
  std::shared_ptr<MemStore> mrs;
  std::shared_ptr<MemStore> frozen;  // The MRS being flushed, or nullptr.
  std::string frozen_max_key;        // Its greatest key (it takes no new keys).
  std::vector<std::shared_ptr<DiskRowSet>> drs;
  std::shared_ptr<const RowSetTree> tree;  // Over drs, same order.

  // A copy with `drs` replaced and the tree rebuilt.
  std::shared_ptr<Components> WithDiskRowSets(std::vector<std::shared_ptr<DiskRowSet>> d) const {
    auto c = std::make_shared<Components>(*this);
    c->drs = std::move(d);
    std::vector<RowSetTree::Interval> intervals;
    for (const auto& r : c->drs) intervals.push_back({r->min_key(), r->max_key()});
    c->tree = std::make_shared<RowSetTree>(std::move(intervals));
    return c;
  }
};

}  // namespace basalt
