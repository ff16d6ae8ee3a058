#pragma once

// DiskRowSet (DRS): immutable base data of a range of rows plus their delta stores (DESIGN.md
// section 4; docs/tablet.md "DiskRowSet").
//
// Files (all blocks of the block manager, named by RowSetMetadata): one column file per column of
// the schema the rowset was written with (matched to readers' schemas by column id), the key index
// (a BINARY key column file of the encoded primary keys with a value index; when the key is one
// integer column there is none and that column's file, a sorted key file, serves), and a bloom
// filter over the encoded keys. Base rows are sorted by key and addressed by ordinal (rowid_t, from
// 0). Mutations of base rows live in the DeltaTracker (REDO DeltaMemStore and files, UNDO files).
//
// Lookups: [min_key, max_key] bounds, then the key filter (bloom filter, or the exact key bitmap
// of an integer key), then a key index seek. The filter is resident: Open reads and verifies its
// tail; each 4 KiB page is read and its CRC checked the first time a probe needs it, then kept in
// the rowset (about 2.1 bytes per row for a bloom filter at 0.001 once every page was probed)
// and probed without the block cache. Callers probing several
// rowsets hash the key once (BloomKeyHash) and pass the hash. Scans: DiskRowSetIterator
// (diskrowset_iterator.h) over a key range mapped to ordinals through the key index.
//
// Lifecycle: Open() reads and validates every file's header (column files, key index, bloom
// tail) and opens the delta tracker; the rowset then serves lookups, scans and mutations until
// destroyed (shared_ptr: running scans pin it).
// Thread-safe: any number of readers concurrent with one writer (MutateRow) and a maintenance
// thread (delta flush, through delta_tracker()).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cfile/block_cache.h"
#include "cfile/block_manager.h"
#include "cfile/bloom_filter.h"
#include "cfile/cfile_reader.h"
#include "common/datum.h"
#include "common/hybrid_clock.h"
#include "common/schema.h"
#include "tablet/delta_store.h"
#include "tablet/delta_tracker.h"
#include "tablet/mvcc.h"
#include "tablet/row_iterator.h"
#include "tablet/rowset_metadata.h"

namespace basalt {

struct DiskRowSetOptions {
  BlockManager* block_manager = nullptr;  // Borrowed; outlives the rowset.
  // Caches column file and key index pages; nullptr: no caching. Borrowed.
  BlockCache* block_cache = nullptr;
  // Ids of the tablet's key columns; scans never let a delta touch them. When empty, Open infers
  // them from the files (the leading columns whose first and last values encode to min_key and
  // max_key). They matter only for projections that hold key columns without leading with them.
  std::vector<ColumnId> key_column_ids;
};

// Lookup counters of one rowset (for tests and benchmarks). A bloom false positive is a probe
// that passed the filter for a key the key index then did not hold.
struct DiskRowSetLookupStats {
  int64_t bloom_probes = 0;
  int64_t bloom_rejections = 0;
  int64_t key_index_seeks = 0;
  int64_t bloom_false_positives = 0;
};

class DiskRowSetIterator;

class DiskRowSet {
 public:
  // Opens the rowset described by `meta`. Errors name the rowset and the file: NOT_FOUND for a
  // missing block, DATA_LOSS for a corrupt one or files that disagree with `meta` (row counts,
  // min/max key, types), I/O errors from the block manager.
  static absl::StatusOr<std::shared_ptr<DiskRowSet>> Open(const RowSetMetadata& meta,
                                                          DiskRowSetOptions options);
  ~DiskRowSet();
  DiskRowSet(const DiskRowSet&) = delete;
  DiskRowSet& operator=(const DiskRowSet&) = delete;

  int64_t id() const { return meta_.id; }
  const std::string& min_key() const { return meta_.min_key; }
  const std::string& max_key() const { return meta_.max_key; }
  rowid_t num_rows() const { return static_cast<rowid_t>(meta_.num_rows); }
  // The metadata with the delta tracker's current REDO/UNDO block lists.
  RowSetMetadata CurrentMetadata() const;

  // The ordinal of the base row with `key` (live or deleted), or nullopt when the key is not a
  // base row: bounds check, bloom filter, key index. DATA_LOSS for corrupt bloom or key pages.
  absl::StatusOr<std::optional<rowid_t>> FindRow(std::string_view key) const;
  // The same with the key's bloom hash given: REQUIRES key_hash == BloomKeyHash(key).
  absl::StatusOr<std::optional<rowid_t>> FindRow(std::string_view key, uint64_t key_hash) const;

  // Whether a live row with `key` exists at *snap, or at the latest state when snap is null.
  absl::StatusOr<bool> CheckRowPresent(std::string_view key, const MvccSnapshot* snap) const;

  // Writer only. Applies a RowChangeList to the base row with `key`: UPDATE/DELETE need the row
  // live at the latest state, else NOT_FOUND; REINSERT needs a base row deleted at the latest
  // state, else ALREADY_EXISTS (live) or NOT_FOUND (absent). Appends to the delta tracker's DMS
  // (`op_index`: the op's Raft index, 0 without a WAL). INVALID_ARGUMENT for a malformed list.
  // Errors of the delta stores come as StorageError (row_outcome.h), never as those codes.
  absl::Status MutateRow(HybridTime ts, std::string_view key, std::string_view changes,
                         int64_t op_index);
  // Writer only. MutateRow for the base row at ordinal `row` (as FindRow returned it), without
  // looking the key up again. INVALID_ARGUMENT for a row out of range.
  absl::Status MutateRowAt(HybridTime ts, rowid_t row, std::string_view changes, int64_t op_index);

  // A snapshot scan of `projection` (columns matched by id; columns the rowset lacks read as their
  // default, or NULL) within spec.range, returning only rows live at `snap` that match every
  // predicate of `spec` (predicates name projection columns), in key order. INVALID_ARGUMENT
  // (from Init) when a projected column is missing with neither default nor nullability, a
  // type differs, or a predicate names no projected column. `projection` and this rowset must
  // outlive the iterator.
  absl::StatusOr<std::unique_ptr<RowBlockIterator>> NewIterator(const Schema* projection,
                                                                const MvccSnapshot& snap,
                                                                const ScanSpec& spec) const;
  // Every base row in ordinal order with no deltas applied and no filtering (compaction input).
  absl::StatusOr<std::unique_ptr<RowBlockIterator>> NewBaseIterator(const Schema* projection) const;

  // Thread-safe (see delta_tracker.h for which methods one thread at a time may call).
  DeltaTracker* delta_tracker() const { return delta_tracker_.get(); }

  // On-disk bytes of the base column files, the key index and the bloom filter.
  uint64_t base_size_bytes() const { return base_size_bytes_; }
  DiskRowSetLookupStats lookup_stats() const;

  // "rowset <id>", the prefix of error messages.
  const std::string& name() const { return name_; }

 private:
  friend class DiskRowSetIterator;

  DiskRowSet(const RowSetMetadata& meta, DiskRowSetOptions options);
  absl::Status OpenColumns();
  absl::Status OpenKeyIndex();
  absl::Status OpenBloom();
  // Sets key_column_ids_ from the options or, when they name none, from the files (see the .cc).
  absl::Status InferKeyColumns();
  absl::StatusOr<Datum> ReadValue(const CFileReader& reader, rowid_t ordinal) const;
  // Reads the key at `ordinal` of the key index.
  absl::StatusOr<std::string> ReadKeyAt(rowid_t ordinal) const;
  // Whether the filter may hold `key` (bloom hash `hash`): the bloom filter's answer, or the key
  // bitmap's exact one. REQUIRES: min_key <= key <= max_key, and a key bitmap's key has the key
  // column's width.
  absl::StatusOr<bool> FilterMayContain(std::string_view key, uint64_t hash) const;
  // Reads and verifies filter page `page` into bloom_data_ unless another thread did (slow path
  // of FilterMayContain).
  absl::Status LoadBloomPage(uint32_t page) const ABSL_LOCKS_EXCLUDED(bloom_load_mu_);
  // MutateRow's checks and update once the row is known; `reinsert`: the list is a REINSERT.
  absl::Status ApplyMutation(HybridTime ts, rowid_t row, bool reinsert, std::string_view changes,
                             int64_t op_index);
  // Positions `it` (over key_reader_) at the first row whose encoded key is >= `key` (any byte
  // string) and sets *exact to whether it equals `key`. NOT_FOUND, at the end, if none is.
  absl::Status SeekKey(CFileIterator* it, std::string_view key, bool* exact) const;
  // Key index seek for `key`: the ordinal holding it, or nullopt.
  absl::StatusOr<std::optional<rowid_t>> SeekKeyIndex(std::string_view key) const;
  // The ordinals [*start, *end) of base rows with keys in `range`.
  absl::Status OrdinalRange(const EncodedKeyRange& range, rowid_t* start, rowid_t* end) const;
  // The first ordinal whose key is >= key (num_rows() if none).
  absl::StatusOr<rowid_t> LowerBound(std::string_view key) const;
  // The reader of column `id`, or nullptr when the rowset lacks the column.
  const CFileReader* column_reader(ColumnId id) const;
  absl::Status Corruption(std::string_view what) const;

  // Constant after Open.
  const RowSetMetadata meta_;  // Delta block lists as of Open; see CurrentMetadata().
  const DiskRowSetOptions options_;
  const std::string name_;
  absl::flat_hash_map<ColumnId, std::unique_ptr<CFileReader>> columns_;
  std::unique_ptr<CFileReader> key_index_;  // The BINARY key index; nullptr when a column serves.
  // The key index: key_index_, or the integer key column's file (then key_width_ is its encoded
  // width, else 0).
  const CFileReader* key_reader_ = nullptr;
  int key_width_ = 0;
  std::unique_ptr<ReadableBlock> bloom_block_;
  std::optional<BloomFilterLayout> bloom_;  // The filter: a bloom filter or a key bitmap.
  uint64_t key_bitmap_base_ = 0;            // A key bitmap's bit 0: min_key's integer value.
  // The resident bloom pages: num_pages * kBloomPageSize bytes, page p valid once
  // bloom_page_state_[p] is kBloomPageReady (release-stored after the bytes are written and
  // verified; written once, under bloom_load_mu_). Memory of pages never loaded is not touched.
  std::unique_ptr<char[]> bloom_data_;
  std::unique_ptr<std::atomic<uint8_t>[]> bloom_page_state_;
  mutable absl::Mutex bloom_load_mu_;
  std::unique_ptr<DeltaTracker> delta_tracker_;
  std::vector<ColumnId> key_column_ids_;  // Empty when unknown.
  uint64_t base_size_bytes_ = 0;

  // Lookup counters; relaxed atomics, as they are independent statistics.
  mutable std::atomic<int64_t> bloom_probes_{0};
  mutable std::atomic<int64_t> bloom_rejections_{0};
  mutable std::atomic<int64_t> key_index_seeks_{0};
  mutable std::atomic<int64_t> bloom_false_positives_{0};
};

}  // namespace basalt
