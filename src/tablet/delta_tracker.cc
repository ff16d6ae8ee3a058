#include "tablet/delta_tracker.h"

#include <algorithm>
#include <optional>
#include <queue>

#include <glog/logging.h>

#include <utility>
#include "absl/container/inlined_vector.h"

#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/delta_applier.h"
#include "tablet/delta_file.h"
#include "tablet/deltamemstore.h"
#include "tablet/row_changelist.h"

namespace basalt {

namespace {

// Rows per batch when a flush or compaction merges stores: bounds the entries (and copied
// change bytes) held in memory at once.
constexpr size_t kMergeChunkRows = 16 * 1024;

}  // namespace

DeltaTracker::DeltaTracker(DeltaTrackerOptions options) : options_(std::move(options)) {
  absl::MutexLock l(&mu_);
  dms_ = std::make_shared<DeltaMemStore>(next_dms_id_++);
}

DeltaTracker::~DeltaTracker() = default;

absl::StatusOr<std::shared_ptr<const DeltaFileReader>> DeltaTracker::OpenFile(
    BlockId id, DeltaType expected) const {
  const std::string what = StrCat(options_.name, ": delta file ", id.ToString());
  absl::StatusOr<std::unique_ptr<ReadableBlock>> block = options_.block_manager->OpenBlock(id);
  if (!block.ok()) return PrependToStatus(block.status(), what);
  absl::StatusOr<std::unique_ptr<DeltaFileReader>> reader =
      DeltaFileReader::Open(*std::move(block), options_.block_cache);
  if (!reader.ok()) return PrependToStatus(reader.status(), options_.name);
  if ((*reader)->type() != expected) {
    return absl::DataLossError(StrCat(what, " is listed as ", DeltaTypeName(expected),
                                      " but holds ", DeltaTypeName((*reader)->type()), " deltas"));
  }
  if ((*reader)->num_entries() > 0 && (*reader)->max_row() >= options_.num_rows) {
    return absl::DataLossError(StrCat(what, " has deltas of row ", (*reader)->max_row(),
                                      " but the rowset has ", options_.num_rows, " rows"));
  }
  return std::shared_ptr<const DeltaFileReader>(*std::move(reader));
}

absl::StatusOr<std::unique_ptr<DeltaTracker>> DeltaTracker::Open(
    DeltaTrackerOptions options, const std::vector<BlockId>& redo_blocks,
    const std::vector<BlockId>& undo_blocks) {
  CHECK(options.block_manager != nullptr);
  std::unique_ptr<DeltaTracker> t(new DeltaTracker(std::move(options)));
  std::vector<std::shared_ptr<const DeltaFileReader>> redos, undos;
  for (BlockId id : redo_blocks) {
    BASALT_ASSIGN_OR_RETURN(auto f, t->OpenFile(id, DeltaType::kRedo));
    redos.push_back(std::move(f));
  }
  for (BlockId id : undo_blocks) {
    BASALT_ASSIGN_OR_RETURN(auto f, t->OpenFile(id, DeltaType::kUndo));
    undos.push_back(std::move(f));
  }
  for (const auto& f : redos) {
    if (f->num_entries() > 0) t->redos_may_change_liveness_.store(true, std::memory_order_release);
  }
  absl::MutexLock l(&t->mu_);
  t->redo_files_ = std::move(redos);
  t->undo_files_ = std::move(undos);
  return t;
}

absl::Status DeltaTracker::Update(HybridTime ts, rowid_t row, std::string_view changes,
                                  int64_t op_index) {
  if (row >= options_.num_rows) {
    return absl::InvalidArgumentError(
        StrCat(options_.name, ": update of row ", row, " of ", options_.num_rows));
  }
  RowChangeListDecoder dec(changes);
  if (dec.Init().ok() && !dec.is_update()) {
    // Before the entry is visible, so a reader that sees the flag clear saw no such entry.
    redos_may_change_liveness_.store(true, std::memory_order_release);
  }
  // Shared: readers proceed; FlushDMS's swap waits for this update to land in the DMS.
  absl::ReaderMutexLock l(&mu_);
  return dms_->Update(ts, row, changes, op_index);
}

// ---- Readers ------------------------------------------------------------------------------------

void DeltaTracker::AppendRedosLocked(std::vector<std::shared_ptr<const DeltaStore>>* out) const {
  out->reserve(redo_files_.size() + 2);
  out->insert(out->end(), redo_files_.begin(), redo_files_.end());
  if (flushing_dms_ != nullptr) out->push_back(flushing_dms_);
  out->push_back(dms_);
}

DeltaTracker::StoreSet DeltaTracker::GetStores() const {
  StoreSet set;
  absl::ReaderMutexLock l(&mu_);
  set.undos.assign(undo_files_.begin(), undo_files_.end());
  AppendRedosLocked(&set.redos);
  return set;
}

std::vector<std::shared_ptr<const DeltaStore>> DeltaTracker::GetRedoStores() const {
  std::vector<std::shared_ptr<const DeltaStore>> redos;
  absl::ReaderMutexLock l(&mu_);
  AppendRedosLocked(&redos);
  return redos;
}

absl::Status DeltaTracker::CollectMerged(std::span<const std::shared_ptr<const DeltaStore>> stores,
                                         rowid_t start, size_t n, Arena* arena,
                                         std::vector<DeltaEntry>* out) {
  // Collect each store's sorted run at the end of *out, remembering where runs begin.
  const size_t base = out->size();
  absl::InlinedVector<size_t, 8> runs;  // Start offsets of non-empty runs.
  for (const auto& store : stores) {
    if (store->num_entries() == 0) continue;
    const size_t before = out->size();
    BASALT_RETURN_IF_ERROR(store->CollectEntries(start, n, arena, out));
    if (out->size() > before) runs.push_back(before);
  }
  if (runs.size() <= 1) return absl::OkStatus();
  // k-way merge of the runs with a heap; ties go to the earlier store (stable).
  const size_t total = out->size() - base;
  std::vector<DeltaEntry> merged;
  merged.reserve(total);
  struct Cursor {
    size_t pos, end, run;
  };
  auto later = [&](const Cursor& a, const Cursor& b) {
    const DeltaKey& ka = (*out)[a.pos].key;
    const DeltaKey& kb = (*out)[b.pos].key;
    return ka != kb ? ka > kb : a.run > b.run;
  };
  std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heap(later);
  for (size_t i = 0; i < runs.size(); ++i) {
    heap.push(Cursor{runs[i], i + 1 < runs.size() ? runs[i + 1] : out->size(), i});
  }
  while (!heap.empty()) {
    Cursor c = heap.top();
    heap.pop();
    merged.push_back((*out)[c.pos]);
    if (++c.pos < c.end) heap.push(c);
  }
  std::copy(merged.begin(), merged.end(), out->begin() + base);
  return absl::OkStatus();
}

absl::Status DeltaTracker::CollectRow(std::span<const std::shared_ptr<const DeltaStore>> stores,
                                      rowid_t row, Arena* arena, std::vector<DeltaEntry>* out) {
  return CollectMerged(stores, row, 1, arena, out);
}

namespace {

// Whether the last DELETE or REINSERT among `entries` (one row's REDOs in DeltaKey order) is a
// DELETE; UPDATEs do not change liveness, and a row with neither is live.
absl::StatusOr<bool> LastLivenessChangeIsDelete(const std::vector<DeltaEntry>& entries,
                                                std::string_view name, rowid_t row) {
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    RowChangeListDecoder dec(it->changes);
    BASALT_RETURN_IF_ERROR_PREPEND(dec.Init(), StrCat(name, ": row ", row));
    if (!dec.is_update()) return dec.is_delete();
  }
  return false;
}

}  // namespace

absl::StatusOr<bool> DeltaTracker::IsDeletedLatest(rowid_t row) const {
  if (!redos_may_change_liveness_.load(std::memory_order_acquire)) return false;
  // Fast path (every lookup of a write): when no REDO file's row range holds `row`, only the
  // DMSs matter. They borrow their bytes (no arena) and are lock-free; copying at most two
  // pointers into an inline vector and leaving `entries` empty allocates nothing.
  absl::InlinedVector<std::shared_ptr<const DeltaStore>, 2> dmss;
  bool files_may_hold = false;
  {
    absl::ReaderMutexLock l(&mu_);
    for (const auto& f : redo_files_) {
      if (f->num_entries() > 0 && row >= f->min_row() && row <= f->max_row()) {
        files_may_hold = true;
        break;
      }
    }
    if (!files_may_hold) {
      if (flushing_dms_ != nullptr) dmss.push_back(flushing_dms_);
      dmss.push_back(dms_);
    }
  }
  std::vector<DeltaEntry> entries;  // Borrows from the stores and `arena` below.
  std::vector<std::shared_ptr<const DeltaStore>> redos;
  std::optional<Arena> arena;
  if (files_may_hold) {
    redos = GetRedoStores();
    arena.emplace(256);
    BASALT_RETURN_IF_ERROR(CollectRow(redos, row, &*arena, &entries));
  } else {
    BASALT_RETURN_IF_ERROR(CollectRow(dmss, row, /*arena=*/nullptr, &entries));
  }
  return LastLivenessChangeIsDelete(entries, options_.name, row);
}

absl::StatusOr<bool> DeltaTracker::IsLiveAt(rowid_t row, const MvccSnapshot& snap) const {
  const StoreSet set = GetStores();
  Arena arena(256);
  std::vector<DeltaEntry> undos, redos;
  BASALT_RETURN_IF_ERROR(CollectRow(set.undos, row, &arena, &undos));
  BASALT_RETURN_IF_ERROR(CollectRow(set.redos, row, &arena, &redos));
  if (undos.empty() && redos.empty()) return true;
  static const Schema* const kNoColumns = new Schema();
  uint8_t live = 1;
  BASALT_RETURN_IF_ERROR_PREPEND(
      DeltaApplier(kNoColumns).Apply(snap, row, 1, undos, redos, {}, &live), options_.name);
  return live != 0;
}

absl::StatusOr<HybridTime> DeltaTracker::LatestRedoTimestamp(rowid_t row) const {
  const auto redos = GetRedoStores();
  Arena arena(256);
  std::vector<DeltaEntry> entries;
  BASALT_RETURN_IF_ERROR(CollectRow(redos, row, &arena, &entries));
  // Merged in DeltaKey order: the last entry has the latest timestamp.
  return entries.empty() ? HybridTime::kInvalid : entries.back().key.ts;
}

// ---- Flush and compaction -----------------------------------------------------------------------

namespace {

// Appends merged entries to a writer, combining entries of one row at one timestamp that come
// from different stores (ops of one batch split by a DMS flush) with MergeSameTimestampRedos.
class MergingAppender {
 public:
  explicit MergingAppender(DeltaFileWriter* writer) : writer_(writer) {}

  absl::Status Add(const DeltaEntry& e) {
    if (has_pending_ && e.key == pending_key_) {
      BASALT_RETURN_IF_ERROR(MergeSameTimestampRedos(pending_, e.changes, &scratch_));
      pending_.swap(scratch_);
      return absl::OkStatus();
    }
    BASALT_RETURN_IF_ERROR(Flush());
    has_pending_ = true;
    pending_key_ = e.key;
    pending_.assign(e.changes);
    return absl::OkStatus();
  }
  absl::Status Flush() {
    if (!has_pending_) return absl::OkStatus();
    has_pending_ = false;
    return writer_->Append(pending_key_, pending_);
  }

 private:
  DeltaFileWriter* const writer_;
  bool has_pending_ = false;
  DeltaKey pending_key_;
  std::string pending_;
  std::string scratch_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const DeltaFileReader>> DeltaTracker::WriteRedoFile(
    std::span<const std::shared_ptr<const DeltaStore>> inputs) const {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableBlock> block,
                          options_.block_manager->CreateBlock());
  const BlockId id = block->id();
  DeltaFileWriter writer(DeltaType::kRedo, std::move(block));
  BASALT_RETURN_IF_ERROR(writer.Start());
  MergingAppender appender(&writer);
  Arena arena(64 * 1024);
  std::vector<DeltaEntry> entries;
  for (uint64_t row = 0; row < options_.num_rows; row += kMergeChunkRows) {
    arena.Reset();
    entries.clear();
    BASALT_RETURN_IF_ERROR(
        CollectMerged(inputs, static_cast<rowid_t>(row), kMergeChunkRows, &arena, &entries));
    for (const DeltaEntry& e : entries) BASALT_RETURN_IF_ERROR(appender.Add(e));
    BASALT_RETURN_IF_ERROR(appender.Flush());  // The pending bytes live in `arena`.
  }
  BASALT_RETURN_IF_ERROR(writer.Finish());
  return OpenFile(id, DeltaType::kRedo);
}

absl::Status DeltaTracker::FlushDMS() {
  std::shared_ptr<const DeltaStore> to_flush;
  {
    absl::MutexLock l(&mu_);
    if (flush_running_) {
      return absl::FailedPreconditionError(StrCat(options_.name, ": a DMS flush is running"));
    }
    if (flushing_dms_ == nullptr) {  // Otherwise retry the frozen DMS an earlier flush failed on.
      if (dms_->empty()) return absl::OkStatus();
      flushing_dms_ = std::move(dms_);
      dms_ = std::make_shared<DeltaMemStore>(next_dms_id_++);
    }
    to_flush = flushing_dms_;
    flush_running_ = true;
  }
  absl::StatusOr<std::shared_ptr<const DeltaFileReader>> file =
      WriteRedoFile(std::span<const std::shared_ptr<const DeltaStore>>(&to_flush, 1));
  absl::MutexLock l(&mu_);
  flush_running_ = false;
  if (!file.ok()) {
    return PrependToStatus(file.status(),
                           StrCat(options_.name, ": flush of ", to_flush->ToString()));
  }
  redo_files_.push_back(*std::move(file));
  flushing_dms_.reset();
  return absl::OkStatus();
}

absl::Status DeltaTracker::MinorCompactRedoFiles() {
  std::vector<std::shared_ptr<const DeltaStore>> inputs;
  {
    absl::MutexLock l(&mu_);
    if (compaction_running_) {
      return absl::FailedPreconditionError(
          StrCat(options_.name, ": a minor compaction is running"));
    }
    if (redo_files_.size() < 2) return absl::OkStatus();
    inputs.assign(redo_files_.begin(), redo_files_.end());
    compaction_running_ = true;
  }
  absl::StatusOr<std::shared_ptr<const DeltaFileReader>> file = WriteRedoFile(inputs);
  absl::MutexLock l(&mu_);
  compaction_running_ = false;
  if (!file.ok()) {
    return PrependToStatus(file.status(), StrCat(options_.name, ": minor delta compaction"));
  }
  // A flush may have appended files meanwhile; the inputs are still the oldest ones.
  CHECK_GE(redo_files_.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    CHECK(redo_files_[i] == inputs[i]) << "REDO files changed under a minor compaction";
    obsolete_blocks_.push_back(redo_files_[i]->block_id());
  }
  redo_files_.erase(redo_files_.begin(), redo_files_.begin() + inputs.size());
  redo_files_.insert(redo_files_.begin(), *std::move(file));
  return absl::OkStatus();
}

// ---- History GC ---------------------------------------------------------------------------------

namespace {

// Whether every entry of UNDO file `f` is older than `mark` (HybridTime::kInvalid, the
// max_timestamp of an empty file, is never below a mark).
bool IsAncient(const DeltaFileReader& f, HybridTime mark) {
  return f.num_entries() == 0 || f.max_timestamp() < mark;
}

}  // namespace

uint64_t DeltaTracker::AncientUndoBytes(HybridTime mark) const {
  absl::ReaderMutexLock l(&mu_);
  uint64_t bytes = 0;
  for (const auto& f : undo_files_) {
    if (IsAncient(*f, mark)) bytes += f->size_bytes();
  }
  return bytes;
}

std::vector<BlockId> DeltaTracker::DropAncientUndoFiles(HybridTime mark) {
  std::vector<BlockId> dropped;
  absl::MutexLock l(&mu_);
  // Readers copy undo_files_ under the lock into their StoreSets, which own the readers: a scan
  // that started before this keeps its files open (and their blocks readable) until it ends.
  auto ancient = [&](const std::shared_ptr<const DeltaFileReader>& f) {
    if (!IsAncient(*f, mark)) return false;
    dropped.push_back(f->block_id());
    return true;
  };
  undo_files_.erase(std::remove_if(undo_files_.begin(), undo_files_.end(), ancient),
                    undo_files_.end());
  return dropped;
}

// ---- Block lists and stats ----------------------------------------------------------------------

std::vector<BlockId> DeltaTracker::redo_blocks() const {
  absl::ReaderMutexLock l(&mu_);
  std::vector<BlockId> ids;
  for (const auto& f : redo_files_) ids.push_back(f->block_id());
  return ids;
}

std::vector<BlockId> DeltaTracker::undo_blocks() const {
  absl::ReaderMutexLock l(&mu_);
  std::vector<BlockId> ids;
  for (const auto& f : undo_files_) ids.push_back(f->block_id());
  return ids;
}

std::vector<BlockId> DeltaTracker::TakeObsoleteBlocks() {
  absl::MutexLock l(&mu_);
  return std::exchange(obsolete_blocks_, {});
}

size_t DeltaTracker::dms_memory() const {
  absl::ReaderMutexLock l(&mu_);
  return dms_->memory_footprint() + (flushing_dms_ ? flushing_dms_->memory_footprint() : 0);
}

int64_t DeltaTracker::dms_entries() const {
  absl::ReaderMutexLock l(&mu_);
  return dms_->num_entries() + (flushing_dms_ ? flushing_dms_->num_entries() : 0);
}

HybridTime DeltaTracker::dms_min_timestamp() const {
  absl::ReaderMutexLock l(&mu_);
  // kInvalid is the largest raw value, so min() ignores an empty store.
  return std::min(dms_->min_timestamp(),
                  flushing_dms_ ? flushing_dms_->min_timestamp() : HybridTime::kInvalid);
}

int64_t DeltaTracker::min_unflushed_op_index() const {
  absl::ReaderMutexLock l(&mu_);
  return std::min(dms_->min_op_index(), flushing_dms_ ? flushing_dms_->min_op_index() : INT64_MAX);
}

size_t DeltaTracker::num_redo_files() const {
  absl::ReaderMutexLock l(&mu_);
  return redo_files_.size();
}

uint64_t DeltaTracker::redo_file_bytes() const {
  absl::ReaderMutexLock l(&mu_);
  uint64_t bytes = 0;
  for (const auto& f : redo_files_) bytes += f->size_bytes();
  return bytes;
}

uint64_t DeltaTracker::undo_file_bytes() const {
  absl::ReaderMutexLock l(&mu_);
  uint64_t bytes = 0;
  for (const auto& f : undo_files_) bytes += f->size_bytes();
  return bytes;
}

}  // namespace basalt
