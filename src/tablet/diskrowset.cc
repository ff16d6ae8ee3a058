#include "tablet/diskrowset.h"

#include <cstring>
#include <utility>

#include "common/column_block.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "tablet/diskrowset_iterator.h"
#include "tablet/row_changelist.h"
#include "tablet/row_outcome.h"
#include "tablet/scan_key_range.h"

namespace basalt {

DiskRowSet::DiskRowSet(const RowSetMetadata& meta, DiskRowSetOptions options)
    : meta_(meta), options_(options), name_(StrCat("rowset ", meta.id)) {}

namespace {

constexpr uint8_t kBloomPageReady = 1;

}  // namespace

DiskRowSet::~DiskRowSet() = default;

absl::Status DiskRowSet::Corruption(std::string_view what) const {
  return absl::DataLossError(StrCat(name_, ": ", what));
}

absl::StatusOr<std::shared_ptr<DiskRowSet>> DiskRowSet::Open(const RowSetMetadata& meta,
                                                             DiskRowSetOptions options) {
  if (options.block_manager == nullptr) {
    return absl::InvalidArgumentError("DiskRowSet::Open: no block manager");
  }
  std::shared_ptr<DiskRowSet> rs(new DiskRowSet(meta, options));
  if (meta.num_rows == 0 || meta.num_rows > UINT32_MAX || meta.min_key > meta.max_key ||
      (meta.num_rows == 1) != (meta.min_key == meta.max_key)) {
    return rs->Corruption(StrCat("metadata has ", meta.num_rows, " rows and bad key bounds"));
  }
  BASALT_RETURN_IF_ERROR(rs->OpenColumns());
  BASALT_RETURN_IF_ERROR(rs->OpenKeyIndex());
  BASALT_RETURN_IF_ERROR(rs->OpenBloom());
  BASALT_RETURN_IF_ERROR(rs->InferKeyColumns());
  DeltaTrackerOptions dopts;
  dopts.block_manager = options.block_manager;
  dopts.block_cache = options.block_cache;
  dopts.name = rs->name_;
  dopts.num_rows = rs->num_rows();
  auto tracker = DeltaTracker::Open(dopts, meta.redo_blocks, meta.undo_blocks);
  if (!tracker.ok()) return PrependToStatus(tracker.status(), rs->name_);
  rs->delta_tracker_ = std::move(*tracker);
  return rs;
}

namespace {

absl::StatusOr<std::unique_ptr<CFileReader>> OpenFile(const DiskRowSetOptions& options,
                                                      BlockId id) {
  BASALT_ASSIGN_OR_RETURN(auto block, options.block_manager->OpenBlock(id));
  CFileReaderOptions ropts;
  ropts.block_cache = options.block_cache;
  return CFileReader::Open(std::move(block), ropts);
}

}  // namespace

absl::Status DiskRowSet::OpenColumns() {
  for (const auto& [id, block] : meta_.column_blocks) {
    const std::string what = StrCat(name_, ": column ", id);
    if (columns_.contains(id)) return Corruption(StrCat("column ", id, " listed twice"));
    auto reader = OpenFile(options_, block);
    if (!reader.ok()) return PrependToStatus(reader.status(), what);
    if ((*reader)->num_rows() != meta_.num_rows) {
      return Corruption(
          StrCat("column ", id, " has ", (*reader)->num_rows(), " rows, not ", meta_.num_rows));
    }
    base_size_bytes_ += (*reader)->file_size();
    columns_.emplace(id, std::move(*reader));
  }
  return absl::OkStatus();
}

absl::Status DiskRowSet::OpenKeyIndex() {
  if (!meta_.key_index_block.valid()) {
    // The writer's choice for a key of one integer column: that column's file is the index.
    const ColumnId id = meta_.column_blocks.empty() ? ColumnId() : meta_.column_blocks[0].first;
    const CFileReader* reader = meta_.column_blocks.empty() ? nullptr : columns_.at(id).get();
    if (reader == nullptr || IntegerKeyWidth(reader->type()) == 0 || !reader->is_sorted() ||
        reader->nullable()) {
      return Corruption(
          StrCat("no key index, and its first column ", id, " is not a sorted integer key file"));
    }
    key_reader_ = reader;
    key_width_ = IntegerKeyWidth(reader->type());
  } else {
    auto reader = OpenFile(options_, meta_.key_index_block);
    if (!reader.ok()) return PrependToStatus(reader.status(), StrCat(name_, ": key index"));
    key_index_ = std::move(*reader);
    if (key_index_->type() != DataType::kBinary || !key_index_->is_sorted() ||
        key_index_->nullable() || key_index_->num_rows() != meta_.num_rows) {
      return Corruption(StrCat("key index ", key_index_->name(), " is not a BINARY key file of ",
                               meta_.num_rows, " rows"));
    }
    base_size_bytes_ += key_index_->file_size();
    key_reader_ = key_index_.get();
  }
  BASALT_ASSIGN_OR_RETURN(std::string first, ReadKeyAt(0));
  BASALT_ASSIGN_OR_RETURN(std::string last, ReadKeyAt(num_rows() - 1));
  if (first != meta_.min_key || last != meta_.max_key) {
    return Corruption("the key index disagrees with the metadata's min/max key");
  }
  return absl::OkStatus();
}

absl::StatusOr<Datum> DiskRowSet::ReadValue(const CFileReader& reader, rowid_t ordinal) const {
  std::unique_ptr<CFileIterator> it = reader.NewIterator();
  BASALT_RETURN_IF_ERROR_PREPEND(it->SeekToOrdinal(ordinal), name_);
  ColumnBlockBuffer buf(reader.type(), 1, reader.nullable());
  size_t got = 0;
  BASALT_RETURN_IF_ERROR_PREPEND(it->Scan(1, buf.block(), &got), name_);
  if (got != 1) return Corruption(StrCat(reader.name(), " has no row ", ordinal));
  const ColumnBlock& b = buf.block_ref();
  return b.is_null(0) ? Datum::Null(reader.type()) : Datum::FromCell(reader.type(), b.cell(0));
}

absl::StatusOr<std::string> DiskRowSet::ReadKeyAt(rowid_t ordinal) const {
  BASALT_ASSIGN_OR_RETURN(Datum key, ReadValue(*key_reader_, ordinal));
  if (key_width_ == 0) return std::string(key.string_value());
  std::string encoded;
  EncodeKeyCell(key_reader_->type(), key.cell(), /*is_last=*/true, &encoded);
  return encoded;
}

absl::Status DiskRowSet::SeekKey(CFileIterator* it, std::string_view key, bool* exact) const {
  if (key_width_ == 0) return it->SeekAtOrAfter(&key, exact);
  const size_t width = key_width_;
  if (key.size() == width) return it->SeekAtOrAfterEncoded(key, exact);
  // A bound of another length (a scan's range or a successor) equals no key.
  *exact = false;
  bool found = false;
  if (key.size() < width) {
    // The smallest key of `width` bytes with `key` as its prefix is the first one >= `key`.
    std::string padded(key);
    padded.resize(width, '\0');
    return it->SeekAtOrAfterEncoded(padded, &found);
  }
  // Longer than every key: the first key >= it is the first key > its first `width` bytes.
  BASALT_RETURN_IF_ERROR(it->SeekAtOrAfterEncoded(key.substr(0, width), &found));
  if (!found) return absl::OkStatus();
  if (it->ordinal() + 1 < num_rows()) return it->SeekToOrdinal(it->ordinal() + 1);
  BASALT_RETURN_IF_ERROR(it->SeekToOrdinal(num_rows()));
  return absl::NotFoundError(StrCat(name_, ": every key is smaller"));
}

absl::Status DiskRowSet::InferKeyColumns() {
  if (!options_.key_column_ids.empty()) {
    key_column_ids_ = options_.key_column_ids;
    return absl::OkStatus();
  }
  // The writer lists the columns in schema order, key columns first. The key columns are the
  // shortest prefix whose values in the first and last rows encode to min_key and max_key.
  std::string first, last;  // Encoded prefixes in the non-last form.
  std::vector<ColumnId> ids;
  for (const auto& [id, block] : meta_.column_blocks) {
    const CFileReader& reader = *columns_.at(id);
    if (reader.nullable() || first.size() > meta_.min_key.size()) break;
    BASALT_ASSIGN_OR_RETURN(Datum v0, ReadValue(reader, 0));
    BASALT_ASSIGN_OR_RETURN(Datum v1, ReadValue(reader, num_rows() - 1));
    ids.push_back(id);
    std::string first_last = first, last_last = last;
    EncodeKeyCell(reader.type(), v0.cell(), /*is_last=*/true, &first_last);
    EncodeKeyCell(reader.type(), v1.cell(), /*is_last=*/true, &last_last);
    if (first_last == meta_.min_key && last_last == meta_.max_key) {
      key_column_ids_ = std::move(ids);
      return absl::OkStatus();
    }
    EncodeKeyCell(reader.type(), v0.cell(), /*is_last=*/false, &first);
    EncodeKeyCell(reader.type(), v1.cell(), /*is_last=*/false, &last);
  }
  return absl::OkStatus();  // Unknown: scans rely on the projection's key columns.
}

absl::Status DiskRowSet::OpenBloom() {
  const std::string context = StrCat(name_, ": bloom filter ", meta_.bloom_block.ToString());
  auto block = options_.block_manager->OpenBlock(meta_.bloom_block);
  if (!block.ok()) return PrependToStatus(block.status(), context);
  bloom_block_ = std::move(*block);
  const uint64_t size = bloom_block_->size();
  if (size < kBloomTrailerSize) return absl::DataLossError(StrCat(context, ": truncated"));
  std::string trailer;
  BASALT_RETURN_IF_ERROR(
      bloom_block_->ReadAt(size - kBloomTrailerSize, kBloomTrailerSize, &trailer));
  BASALT_ASSIGN_OR_RETURN(uint32_t pages, BloomFilterLayout::ParseNumPages(trailer, size, context));
  const uint64_t tail_size = BloomFilterLayout::TailSize(pages);
  std::string tail;
  BASALT_RETURN_IF_ERROR(bloom_block_->ReadAt(size - tail_size, tail_size, &tail));
  BASALT_ASSIGN_OR_RETURN(BloomFilterLayout layout, BloomFilterLayout::Parse(tail, size, context));
  if (layout.num_keys() != meta_.num_rows) {
    return absl::DataLossError(
        StrCat(context, ": holds ", layout.num_keys(), " keys, not ", meta_.num_rows));
  }
  if (layout.kind() == KeyFilterKind::kKeyBitmap) {
    // Bit i is the key min_key + i: only a key of one integer column has such offsets.
    if (key_width_ == 0) {
      return absl::DataLossError(
          StrCat(context, ": a key bitmap, but the key is not one integer column"));
    }
    const uint64_t span =
        EncodedIntegerKeyValue(meta_.max_key) - EncodedIntegerKeyValue(meta_.min_key);
    if (span >= layout.num_bits()) {
      return absl::DataLossError(StrCat(context, ": a key bitmap of ", layout.num_bits(),
                                        " bits cannot cover a key range of ", span + 1));
    }
    key_bitmap_base_ = EncodedIntegerKeyValue(meta_.min_key);
  }
  bloom_ = std::move(layout);
  // Not value-initialized: pages never probed cost no memory.
  bloom_data_.reset(new char[size_t{pages} * kBloomPageSize]);
  bloom_page_state_ = std::make_unique<std::atomic<uint8_t>[]>(pages);
  base_size_bytes_ += size;
  return absl::OkStatus();
}

absl::Status DiskRowSet::LoadBloomPage(uint32_t page) const {
  absl::MutexLock l(&bloom_load_mu_);
  if (bloom_page_state_[page].load(std::memory_order_acquire) == kBloomPageReady) {
    return absl::OkStatus();
  }
  char* dst = bloom_data_.get() + BloomFilterLayout::PageOffset(page);
  std::string_view bytes;
  BASALT_RETURN_IF_ERROR(
      bloom_block_->ReadAt(BloomFilterLayout::PageOffset(page), kBloomPageSize, dst, &bytes));
  BASALT_RETURN_IF_ERROR(bloom_->VerifyPage(page, bytes));
  if (bytes.data() != dst) std::memcpy(dst, bytes.data(), kBloomPageSize);
  // Publishes the bytes: readers that see the state read them without the lock.
  bloom_page_state_[page].store(kBloomPageReady, std::memory_order_release);
  return absl::OkStatus();
}

absl::StatusOr<bool> DiskRowSet::FilterMayContain(std::string_view key, uint64_t hash) const {
  const bool bitmap = bloom_->kind() == KeyFilterKind::kKeyBitmap;
  uint64_t offset = 0;
  if (bitmap) {
    // The caller checked the bounds and the key's width, so the offset is inside the bitmap
    // (Open checked its size).
    DCHECK_EQ(key.size(), static_cast<size_t>(key_width_));
    offset = EncodedIntegerKeyValue(key) - key_bitmap_base_;
  }
  const uint32_t page = bitmap ? bloom_->PageForOffset(offset) : bloom_->PageForHash(hash);
  if (bloom_page_state_[page].load(std::memory_order_acquire) != kBloomPageReady) {
    BASALT_RETURN_IF_ERROR(LoadBloomPage(page));
  }
  const std::string_view bytes(bloom_data_.get() + BloomFilterLayout::PageOffset(page),
                               kBloomPageSize);
  return bitmap ? bloom_->PageHasOffset(bytes, offset) : bloom_->PageMayContain(bytes, hash);
}

absl::StatusOr<std::optional<rowid_t>> DiskRowSet::SeekKeyIndex(std::string_view key) const {
  // A fresh iterator per lookup: a kept one would pin its key index page in the block cache
  // between lookups.
  std::unique_ptr<CFileIterator> it = key_reader_->NewIterator();
  bool exact = false;
  const absl::Status s = SeekKey(it.get(), key, &exact);
  if (!s.ok() && !absl::IsNotFound(s)) return PrependToStatus(s, name_);
  if (!s.ok() || !exact) return std::nullopt;
  return static_cast<rowid_t>(it->ordinal());
}

absl::StatusOr<std::optional<rowid_t>> DiskRowSet::FindRow(std::string_view key) const {
  if (key < meta_.min_key || key > meta_.max_key) return std::nullopt;
  return FindRow(key, BloomKeyHash(key));
}

absl::StatusOr<std::optional<rowid_t>> DiskRowSet::FindRow(std::string_view key,
                                                           uint64_t key_hash) const {
  DCHECK_EQ(key_hash, BloomKeyHash(key));
  if (key < meta_.min_key || key > meta_.max_key) return std::nullopt;
  // An integer key column holds keys of one width only.
  if (key_width_ > 0 && key.size() != static_cast<size_t>(key_width_)) return std::nullopt;
  if (key == meta_.min_key) return rowid_t{0};
  if (key == meta_.max_key) return num_rows() - 1;
  bloom_probes_.fetch_add(1, std::memory_order_relaxed);
  BASALT_ASSIGN_OR_RETURN(bool may_contain, FilterMayContain(key, key_hash));
  if (!may_contain) {
    bloom_rejections_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  key_index_seeks_.fetch_add(1, std::memory_order_relaxed);
  BASALT_ASSIGN_OR_RETURN(std::optional<rowid_t> row, SeekKeyIndex(key));
  if (!row.has_value()) bloom_false_positives_.fetch_add(1, std::memory_order_relaxed);
  return row;
}

absl::StatusOr<rowid_t> DiskRowSet::LowerBound(std::string_view key) const {
  if (key <= meta_.min_key) return rowid_t{0};
  if (key > meta_.max_key) return num_rows();
  std::unique_ptr<CFileIterator> it = key_reader_->NewIterator();
  bool exact = false;
  absl::Status s = SeekKey(it.get(), key, &exact);
  if (absl::IsNotFound(s)) return Corruption("key index ends before max_key");
  BASALT_RETURN_IF_ERROR_PREPEND(s, name_);
  return static_cast<rowid_t>(it->ordinal());
}

absl::Status DiskRowSet::OrdinalRange(const EncodedKeyRange& range, rowid_t* start,
                                      rowid_t* end) const {
  *start = 0;
  *end = num_rows();
  if (IsSingleKeyRange(range)) {
    // A point lookup: the bloom filter usually answers "not here" without the key index.
    BASALT_ASSIGN_OR_RETURN(std::optional<rowid_t> row, FindRow(range.lower));
    *start = row.value_or(0);
    *end = row.has_value() ? *row + 1 : 0;
    return absl::OkStatus();
  }
  if (!range.lower.empty()) {
    BASALT_ASSIGN_OR_RETURN(*start, LowerBound(range.lower));
  }
  if (!range.upper.empty()) {
    BASALT_ASSIGN_OR_RETURN(*end, LowerBound(range.upper));
  }
  if (*end < *start) *end = *start;
  return absl::OkStatus();
}

const CFileReader* DiskRowSet::column_reader(ColumnId id) const {
  auto it = columns_.find(id);
  return it == columns_.end() ? nullptr : it->second.get();
}

absl::StatusOr<bool> DiskRowSet::CheckRowPresent(std::string_view key,
                                                 const MvccSnapshot* snap) const {
  BASALT_ASSIGN_OR_RETURN(std::optional<rowid_t> row, FindRow(key));
  if (!row.has_value()) return false;
  if (snap != nullptr) return delta_tracker_->IsLiveAt(*row, *snap);
  BASALT_ASSIGN_OR_RETURN(bool deleted, delta_tracker_->IsDeletedLatest(*row));
  return !deleted;
}

absl::Status DiskRowSet::MutateRow(HybridTime ts, std::string_view key, std::string_view changes,
                                   int64_t op_index) {
  RowChangeListDecoder dec(changes);
  absl::Status s = dec.Init();
  if (!s.ok()) return absl::InvalidArgumentError(StrCat("bad row change list: ", s.message()));
  BASALT_ASSIGN_OR_RETURN(std::optional<rowid_t> row, FindRow(key));
  if (!row.has_value()) return absl::NotFoundError(StrCat(name_, ": key not found"));
  return ApplyMutation(ts, *row, dec.is_reinsert(), changes, op_index);
}

absl::Status DiskRowSet::MutateRowAt(HybridTime ts, rowid_t row, std::string_view changes,
                                     int64_t op_index) {
  RowChangeListDecoder dec(changes);
  absl::Status s = dec.Init();
  if (!s.ok()) return absl::InvalidArgumentError(StrCat("bad row change list: ", s.message()));
  if (row >= num_rows()) {
    return absl::InvalidArgumentError(StrCat(name_, ": row ", row, " of ", num_rows()));
  }
  return ApplyMutation(ts, row, dec.is_reinsert(), changes, op_index);
}

absl::Status DiskRowSet::ApplyMutation(HybridTime ts, rowid_t row, bool reinsert,
                                       std::string_view changes, int64_t op_index) {
  // Only the liveness checks below answer ALREADY_EXISTS / NOT_FOUND; a delta store's errors are
  // the storage's (a missing delta file must not read as a deleted row).
  absl::StatusOr<bool> deleted = delta_tracker_->IsDeletedLatest(row);
  if (!deleted.ok()) return StorageError(deleted.status());
  if (reinsert) {
    if (!*deleted) return absl::AlreadyExistsError(StrCat(name_, ": row is live"));
  } else if (*deleted) {
    return absl::NotFoundError(StrCat(name_, ": row is deleted"));
  }
  absl::Status s = delta_tracker_->Update(ts, row, changes, op_index);
  return s.ok() ? s : StorageError(s);
}

RowSetMetadata DiskRowSet::CurrentMetadata() const {
  RowSetMetadata meta = meta_;
  meta.redo_blocks = delta_tracker_->redo_blocks();
  meta.undo_blocks = delta_tracker_->undo_blocks();
  return meta;
}

absl::StatusOr<std::unique_ptr<RowBlockIterator>> DiskRowSet::NewIterator(
    const Schema* projection, const MvccSnapshot& snap, const ScanSpec& spec) const {
  auto it = std::make_unique<DiskRowSetIterator>(this, projection, snap, spec);
  BASALT_RETURN_IF_ERROR(it->Init());
  return std::unique_ptr<RowBlockIterator>(std::move(it));
}

absl::StatusOr<std::unique_ptr<RowBlockIterator>> DiskRowSet::NewBaseIterator(
    const Schema* projection) const {
  auto it = std::make_unique<DiskRowSetIterator>(this, projection, std::nullopt, ScanSpec());
  BASALT_RETURN_IF_ERROR(it->Init());
  return std::unique_ptr<RowBlockIterator>(std::move(it));
}

DiskRowSetLookupStats DiskRowSet::lookup_stats() const {
  DiskRowSetLookupStats s;
  s.bloom_probes = bloom_probes_.load(std::memory_order_relaxed);
  s.bloom_rejections = bloom_rejections_.load(std::memory_order_relaxed);
  s.key_index_seeks = key_index_seeks_.load(std::memory_order_relaxed);
  s.bloom_false_positives = bloom_false_positives_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace basalt
