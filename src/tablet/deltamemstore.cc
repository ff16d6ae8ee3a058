#include "tablet/deltamemstore.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "common/coding.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {

namespace {

// Most rowsets see few updates: start small, grow to 1 MiB blocks under heavy update load.
constexpr size_t kDeltaArenaInitialBlockSize = 4 * 1024;
constexpr size_t kDeltaArenaMaxBlockSize = 1024 * 1024;

void StoreMin(std::atomic<uint64_t>* a, uint64_t v) {
  if (v < a->load(std::memory_order_relaxed)) a->store(v, std::memory_order_relaxed);
}
void StoreMax(std::atomic<uint64_t>* a, uint64_t v) {
  if (v > a->load(std::memory_order_relaxed)) a->store(v, std::memory_order_relaxed);
}

}  // namespace

void EncodeDeltaKey(const DeltaKey& key, char* dst) {
  EncodeBigEndian32(dst, key.row);
  EncodeBigEndian64(dst + 4, key.ts.value());
}

DeltaKey DecodeDeltaKey(const char* src) {
  return DeltaKey{DecodeBigEndian32(src), HybridTime(DecodeBigEndian64(src + 4))};
}

DeltaMemStore::DeltaMemStore(int64_t id)
    : id_(id), arena_(kDeltaArenaInitialBlockSize, kDeltaArenaMaxBlockSize), tree_(&arena_) {
  footprint_.store(arena_.MemoryUsage(), std::memory_order_relaxed);
}

std::string DeltaMemStore::ToString() const { return StrCat("DMS ", id_); }

auto DeltaMemStore::NewPayload(std::string_view bytes) -> const Payload* {
  void* mem = arena_.AllocateAligned(sizeof(Payload) + bytes.size(), alignof(Payload));
  auto* p = new (mem) Payload{static_cast<uint32_t>(bytes.size())};
  std::memcpy(reinterpret_cast<char*>(p + 1), bytes.data(), bytes.size());
  return p;
}

void DeltaMemStore::NoteUpdate(HybridTime ts, rowid_t row, int64_t op_index) {
  StoreMin(&min_ts_, ts.value());
  StoreMax(&max_ts_, ts.value());
  if (op_index < min_op_index_.load(std::memory_order_relaxed)) {
    min_op_index_.store(op_index, std::memory_order_relaxed);
  }
  if (row < min_row_.load(std::memory_order_relaxed)) {
    min_row_.store(row, std::memory_order_relaxed);
  }
  if (row > max_row_.load(std::memory_order_relaxed)) {
    max_row_.store(row, std::memory_order_relaxed);
  }
}

absl::Status DeltaMemStore::Update(HybridTime ts, rowid_t row, std::string_view changes,
                                   int64_t op_index) {
  if (!ts.is_valid() || ts == HybridTime::kMax) {
    return absl::InvalidArgumentError(StrCat(ToString(), ": invalid timestamp"));
  }
  absl::Status s = CheckRowChangeListFraming(changes);
  if (!s.ok()) return absl::InvalidArgumentError(StrCat(ToString(), ": ", s.message()));
  if (changes.size() > UINT32_MAX) {
    return absl::InvalidArgumentError(StrCat(ToString(), ": change list too large"));
  }
  char key[kEncodedDeltaKeySize];
  EncodeDeltaKey(DeltaKey{row, ts}, key);
  const std::string_view key_view(key, sizeof(key));
  auto [entry, inserted] = tree_.InsertIfAbsent(key_view, [&] {
    // The row filter and stats are updated before the entry is published (see the header).
    NoteUpdate(ts, row, op_index);
    void* mem = arena_.AllocateAligned(sizeof(Entry), alignof(Entry));
    auto* e = new (mem) Entry;
    std::memcpy(e->key_bytes, key, sizeof(key));
    e->payload.store(NewPayload(changes), std::memory_order_relaxed);
    return e;
  });
  if (!inserted) {
    const Payload* old = entry->payload.load(std::memory_order_relaxed);
    s = MergeSameTimestampRedos(old->bytes(), changes, &merge_scratch_);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          StrCat(ToString(), ": row ", row, " at ", ts.ToString(), ": ", s.message()));
    }
    NoteUpdate(ts, row, op_index);
    entry->payload.store(NewPayload(merge_scratch_), std::memory_order_release);
  }
  footprint_.store(arena_.MemoryUsage(), std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status DeltaMemStore::CollectEntries(rowid_t start, size_t n, Arena* /*arena*/,
                                           std::vector<DeltaEntry>* out) const {
  if (n == 0 || empty()) return absl::OkStatus();
  const uint64_t end = RowRangeEnd(start, n);
  if (start > max_row_.load(std::memory_order_relaxed) ||
      end <= min_row_.load(std::memory_order_relaxed)) {
    return absl::OkStatus();
  }
  char seek[kEncodedDeltaKeySize];
  EncodeDeltaKey(DeltaKey{start, HybridTime::kMin}, seek);
  ConcurrentBTree<Entry>::Iterator it(&tree_);
  it.Seek(std::string_view(seek, sizeof(seek)));
  while (it.Valid()) {
    const Entry* const* entries = it.remaining();
    const size_t avail = it.num_remaining();
    for (size_t i = 0; i < avail; ++i) {
      const Entry* e = entries[i];
      const DeltaKey key = DecodeDeltaKey(e->key_bytes);
      if (key.row >= end) return absl::OkStatus();
      out->push_back(DeltaEntry{key, e->payload.load(std::memory_order_acquire)->bytes()});
    }
    it.Skip(avail);
  }
  return absl::OkStatus();
}

}  // namespace basalt
