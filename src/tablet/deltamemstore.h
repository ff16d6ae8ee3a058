#pragma once

// DeltaMemStore (DMS): the in-memory REDO store of one DiskRowSet (docs/tablet.md "Deltas").
//
// Maps (row ordinal, timestamp) to a RowChangeList. Entries live in a ConcurrentBTree keyed by
// the 12-byte big-endian encoding of (row, ts), so the tree's byte order is DeltaKey order, and
// their bytes live in the DMS arena until the DMS is destroyed. Each entry holds an atomic
// pointer to an immutable payload (length + change bytes): a second mutation of the same row at
// the same timestamp (two ops of one batch) is merged with MergeSameTimestampRedos into a new
// payload published with one release store, so keys stay unique and readers see either the old
// or the merged list, never a torn one.
//
// Thread safety: Update is called by one writer at a time (the caller serializes); everything
// else is thread-safe, lock-free, and never blocks the writer. The change bytes CollectEntries
// hands out point into the DMS and stay valid while the DMS lives.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/arena.h"
#include "common/hybrid_clock.h"
#include "tablet/concurrent_btree.h"
#include "tablet/delta_store.h"

namespace basalt {

// The tree key of a delta: row (4 bytes) then timestamp (8 bytes), both big-endian, so memcmp
// order is DeltaKey order.
inline constexpr size_t kEncodedDeltaKeySize = 12;
void EncodeDeltaKey(const DeltaKey& key, char* dst);
DeltaKey DecodeDeltaKey(const char* src);

class DeltaMemStore final : public DeltaStore {
 public:
  explicit DeltaMemStore(int64_t id);
  DeltaMemStore(const DeltaMemStore&) = delete;
  DeltaMemStore& operator=(const DeltaMemStore&) = delete;

  // Adds the REDO `changes` (UPDATE, DELETE or REINSERT) of `row` at `ts`, copying the bytes. A
  // second call for the same (row, ts) merges (MergeSameTimestampRedos). `op_index` is the Raft
  // index of the op, tracked for WAL retention (min_op_index()). INVALID_ARGUMENT for an invalid
  // timestamp, malformed change bytes or an impossible merge; the store is unchanged then.
  // Writer only.
  absl::Status Update(HybridTime ts, rowid_t row, std::string_view changes, int64_t op_index = 0);

  // ---- DeltaStore ----
  DeltaType type() const override { return DeltaType::kRedo; }
  // Never fails; borrows (does not use `arena`). Returns at once when no entry can match.
  absl::Status CollectEntries(rowid_t start, size_t n, Arena* arena,
                              std::vector<DeltaEntry>* out) const override;
  int64_t num_entries() const override { return tree_.num_entries(); }
  uint64_t size_bytes() const override { return memory_footprint(); }
  HybridTime min_timestamp() const override { return LoadTs(min_ts_); }
  HybridTime max_timestamp() const override {
    return empty() ? HybridTime::kInvalid : LoadTs(max_ts_);
  }
  std::string ToString() const override;

  int64_t id() const { return id_; }
  bool empty() const { return num_entries() == 0; }
  // Bytes held by the arena (entries, payloads, tree nodes).
  size_t memory_footprint() const { return footprint_.load(std::memory_order_relaxed); }
  // Smallest op_index passed to Update, or INT64_MAX while empty.
  int64_t min_op_index() const { return min_op_index_.load(std::memory_order_relaxed); }

 private:
  struct Payload {
    uint32_t size;
    std::string_view bytes() const { return {reinterpret_cast<const char*>(this + 1), size}; }
  };
  // One tree entry. `payload` is replaced (release store) only by a same-key merge.
  struct Entry {
    char key_bytes[kEncodedDeltaKeySize];
    std::atomic<const Payload*> payload;
    std::string_view key() const { return {key_bytes, kEncodedDeltaKeySize}; }
  };

  static HybridTime LoadTs(const std::atomic<uint64_t>& v) {
    return HybridTime(v.load(std::memory_order_relaxed));
  }
  const Payload* NewPayload(std::string_view bytes);
  void NoteUpdate(HybridTime ts, rowid_t row, int64_t op_index);

  // Constant after construction.
  const int64_t id_;

  // Writer-only (only the writer allocates from the arena).
  Arena arena_;
  ConcurrentBTree<Entry> tree_;
  std::string merge_scratch_;

  // Written by the writer, read by anyone: single words, so relaxed atomics suffice (they are
  // statistics and a conservative row filter; entries themselves are published by the tree).
  std::atomic<size_t> footprint_{0};
  std::atomic<uint64_t> min_ts_{HybridTime::kInvalid.value()};
  std::atomic<uint64_t> max_ts_{0};
  std::atomic<int64_t> min_op_index_{INT64_MAX};
  // Smallest and largest row with an entry (min > max while empty). Updated before the entry is
  // published, so a reader that finds a row outside [min_row, max_row] may skip the tree.
  std::atomic<uint32_t> min_row_{UINT32_MAX};
  std::atomic<uint32_t> max_row_{0};
};

}  // namespace basalt
