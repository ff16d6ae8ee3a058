#include "tablet/diskrowset_iterator.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/bitmap.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/diskrowset.h"
#include "tablet/row_block_util.h"

namespace basalt {

namespace {

// Bounds the working memory of a scan whatever max_rows the caller asks for.
constexpr size_t kMaxChunkRows = 32 * 1024;

// Sets bits [0, k) of `bitmap` (BitmapSize(k) bytes) and clears the rest of its last byte.
void SetAllBits(std::vector<uint8_t>* bitmap, size_t k) {
  bitmap->assign(BitmapSize(k), 0xff);
  if (k % 8 != 0) bitmap->back() = static_cast<uint8_t>((1u << (k % 8)) - 1);
}

}  // namespace

DiskRowSetIterator::DiskRowSetIterator(const DiskRowSet* rowset, const Schema* projection,
                                       std::optional<MvccSnapshot> snap, ScanSpec spec)
    : rowset_(rowset), projection_(projection), snap_(std::move(snap)), spec_(std::move(spec)) {}

DiskRowSetIterator::~DiskRowSetIterator() = default;

absl::Status DiskRowSetIterator::Init() {
  if (initialized_) return absl::OkStatus();
  if (!snap_.has_value() &&
      (!spec_.predicates.empty() || !spec_.range.lower.empty() || !spec_.range.upper.empty())) {
    return absl::InvalidArgumentError("a base iterator takes no scan spec");
  }
  cols_.clear();
  cols_.resize(projection_->num_columns());
  pred_cols_.clear();
  pred_ids_.clear();
  has_var_len_ = false;
  for (int j = 0; j < projection_->num_columns(); ++j) BASALT_RETURN_IF_ERROR(InitColumn(j));
  BASALT_RETURN_IF_ERROR(InitPredicates());
  next_ = 0;
  end_ = rowset_->num_rows();
  if (snap_.has_value()) {
    BASALT_RETURN_IF_ERROR(rowset_->OrdinalRange(spec_.range, &next_, &end_));
    InitStores();
    applier_.emplace(projection_, rowset_->key_column_ids_);
    if (PrunedByFileStats()) end_ = next_;
  }
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status DiskRowSetIterator::InitColumn(int idx) {
  const ColumnSchema& pcol = projection_->column(idx);
  Column& c = cols_[idx];
  c.id = projection_->column_id(idx);
  c.cell_size = pcol.type_info().size();
  c.var_len = pcol.type_info().is_variable_length();
  has_var_len_ |= c.var_len;
  c.reader = rowset_->column_reader(c.id);
  if (c.reader != nullptr) {
    if (c.reader->type() != pcol.type() || (c.reader->nullable() && !pcol.is_nullable())) {
      return absl::InvalidArgumentError(
          StrCat(rowset_->name(), ": column ", pcol.name(), " is ", pcol.ToString(),
                 " in the projection but ", DataTypeName(c.reader->type()),
                 c.reader->nullable() ? " NULLABLE" : " NOT NULL", " in the rowset"));
    }
    c.iter = c.reader->NewIterator();
    return absl::OkStatus();
  }
  if (pcol.default_value().has_value() && !pcol.default_value()->is_null()) {
    c.default_value = *pcol.default_value();
  } else if (!pcol.is_nullable()) {
    return absl::InvalidArgumentError(StrCat("projected column ", pcol.name(), " is not in ",
                                             rowset_->name(), " and has no default"));
  }
  return absl::OkStatus();
}

absl::Status DiskRowSetIterator::InitPredicates() {
  for (const ColumnPredicate& pred : spec_.predicates) {
    const int j = projection_->find_column(pred.column().name());
    if (j < 0 || projection_->column(j).type() != pred.column().type()) {
      return absl::InvalidArgumentError(
          StrCat("predicate ", pred.ToString(), " names no projected column of its type"));
    }
    Column& c = cols_[j];
    if (c.predicate.has_value()) {
      c.predicate = c.predicate->Merge(pred);
      continue;
    }
    c.predicate = pred;
    pred_cols_.push_back(j);
    pred_ids_.push_back(c.id);
  }
  // Columns whose pages answer predicates on their codes go first: they decode nothing, and the
  // columns after them are read only for chunks where a row is still selected.
  std::stable_partition(pred_cols_.begin(), pred_cols_.end(), [this](int j) {
    return cols_[j].reader != nullptr && cols_[j].reader->encoding() == EncodingType::kDict;
  });
  for (int j : pred_cols_) {
    Column& c = cols_[j];
    if (c.reader == nullptr) {
      c.default_matches =
          c.predicate->Evaluate(c.default_value.is_null() ? nullptr : c.default_value.cell());
    }
  }
  return absl::OkStatus();
}

void DiskRowSetIterator::InitStores() {
  // Only stores that can change a row's state at the snapshot are kept: an UNDO file matters if
  // the snapshot may lack one of its timestamps, a REDO store if the snapshot may hold one. An
  // empty DMS is dropped too: every mutation the snapshot holds was applied before the snapshot
  // was taken, so whatever the DMS receives later is invisible to this scan.
  DeltaTracker::StoreSet all = rowset_->delta_tracker()->GetStores();
  for (auto& s : all.undos) {
    if (s->num_entries() > 0 && snap_->MayHaveUncommittedOpsAtOrBefore(s->max_timestamp())) {
      stores_.undos.push_back(std::move(s));
    }
  }
  for (auto& s : all.redos) {
    if (s->num_entries() > 0 && snap_->MayHaveCommittedOpsAtOrAfter(s->min_timestamp())) {
      stores_.redos.push_back(std::move(s));
    }
  }
}

bool DiskRowSetIterator::PrunedByFileStats() const {
  if (!stores_.undos.empty() || !stores_.redos.empty()) return false;
  for (int j : pred_cols_) {
    const Column& c = cols_[j];
    if (c.reader == nullptr ? !c.default_matches : !c.reader->MayMatch(*c.predicate)) return true;
  }
  return false;
}

CFileIteratorStats DiskRowSetIterator::file_stats() const {
  CFileIteratorStats total;
  for (const Column& c : cols_) {
    if (c.iter == nullptr) continue;
    const CFileIteratorStats& s = c.iter->stats();
    total.pages_read += s.pages_read;
    total.pages_from_disk += s.pages_from_disk;
    total.pages_decoded += s.pages_decoded;
    total.pages_skipped += s.pages_skipped;
    total.ranges_evaluated_encoded += s.ranges_evaluated_encoded;
    total.rows_scanned += s.rows_scanned;
  }
  return total;
}

absl::StatusOr<size_t> DiskRowSetIterator::NextBlock(absl::Span<ColumnBlock* const> blocks,
                                                     size_t max_rows) {
  if (!initialized_) return absl::FailedPreconditionError("iterator not initialized");
  BASALT_RETURN_IF_ERROR(CheckBlocksFitProjection(*projection_, blocks, max_rows));
  size_t out = 0;
  while (next_ < end_ && out < max_rows) {
    // Variable-length cells of earlier chunks may point into pages a later chunk releases; a
    // nearly full batch is returned rather than processing a tiny chunk.
    if (out > 0 && (has_var_len_ || max_rows - out < max_rows / 4)) break;
    const size_t span = std::min({max_rows, static_cast<size_t>(end_ - next_), kMaxChunkRows});
    size_t consumed = 0;
    BASALT_ASSIGN_OR_RETURN(size_t got, ProcessChunk(span, max_rows - out, blocks, out, &consumed));
    out += got;
    next_ += static_cast<rowid_t>(consumed);
  }
  return out;
}

void DiskRowSetIterator::EnsureScratch(size_t k) {
  if (k <= scratch_capacity_) return;
  // Room for later chunks too (1024 rows), but no more than the scan can still read: a point
  // lookup's one row must not allocate and clear 1024 cells per column.
  scratch_capacity_ = std::max(k, std::min(size_t{1024}, static_cast<size_t>(end_ - next_)));
  scratch_blocks_.clear();
  for (int j = 0; j < projection_->num_columns(); ++j) {
    cols_[j].scratch =
        std::make_unique<ColumnBlockBuffer>(projection_->column(j).type(), scratch_capacity_, true);
    scratch_blocks_.push_back(cols_[j].scratch->block());
  }
}

bool DiskRowSetIterator::AnySelected(size_t k) const {
  for (size_t i = 0; i < BitmapSize(k); ++i) {
    if (sel_[i] != 0) return true;
  }
  return false;
}

void DiskRowSetIterator::PrepareChunk(size_t span, size_t out) {
  EnsureScratch(span);
  if (out == 0 || !has_var_len_) {
    // Only variable-length cells of this batch's output point into these arenas.
    delta_arena_.Reset();
    for (Column& c : cols_) c.scratch->arena()->Reset();
  }
  for (Column& c : cols_) c.decoded = false;
  ++stats_.chunks;
}

absl::StatusOr<size_t> DiskRowSetIterator::ProcessChunk(size_t span, size_t room,
                                                        absl::Span<ColumnBlock* const> blocks,
                                                        size_t out, size_t* consumed) {
  const rowid_t start = next_;
  PrepareChunk(span, out);
  BASALT_RETURN_IF_ERROR(CollectDeltas(start, span));
  // Predicates are evaluated inside the files over the whole span unless a delta may change a
  // predicate column; the chunk then ends after the room-th selected row. Otherwise the chunk
  // is at most `room` rows, as every row may be selected.
  const bool pushed = !pred_cols_.empty() && !AnyEntryTouches(undos_, pred_ids_) &&
                      !AnyEntryTouches(redos_, pred_ids_);
  size_t k = std::min(span, room);
  SetAllBits(&sel_, span);
  if (pushed) {
    BASALT_ASSIGN_OR_RETURN(k, PushPredicates(start, span, room));
    if (k == 0) {
      stats_.rows_examined += span;
      *consumed = span;
      return 0;
    }
  }
  *consumed = k;
  stats_.rows_examined += k;
  TruncateDeltas(start + static_cast<rowid_t>(k));
  const bool has_deltas =
      (!undos_.empty() || !redos_.empty()) && (AnyEntryAffects(undos_, *snap_, DeltaType::kUndo) ||
                                               AnyEntryAffects(redos_, *snap_, DeltaType::kRedo));
  const bool evaluate_after = !pred_cols_.empty() && !pushed;
  if (has_deltas || evaluate_after) {
    BASALT_RETURN_IF_ERROR(ApplyAndEvaluate(start, k, has_deltas, evaluate_after));
  }
  return EmitRows(start, k, blocks, out, /*may_decode_direct=*/!has_deltas && !evaluate_after);
}

absl::StatusOr<size_t> DiskRowSetIterator::PushPredicates(rowid_t start, size_t span, size_t room) {
  for (int j : pred_cols_) {
    BASALT_RETURN_IF_ERROR(PushPredicate(&cols_[j], start, span));
    if (!AnySelected(span)) return 0;
  }
  rows_.clear();
  if (SelectedRows(sel_.data(), span, &rows_) <= room) return span;
  return rows_[room - 1] + 1;
}

absl::StatusOr<size_t> DiskRowSetIterator::EmitRows(rowid_t start, size_t k,
                                                    absl::Span<ColumnBlock* const> blocks,
                                                    size_t out, bool may_decode_direct) {
  if (may_decode_direct && BitmapCountSet(sel_.data(), k) == k) {
    ++stats_.chunks_all_selected;
    for (size_t j = 0; j < cols_.size(); ++j) {
      BASALT_RETURN_IF_ERROR(DecodeDirect(&cols_[j], start, k, blocks[j], out));
    }
    return k;
  }
  rows_.clear();
  if (SelectedRows(sel_.data(), k, &rows_) == 0) return 0;
  for (size_t j = 0; j < cols_.size(); ++j) {
    Column& c = cols_[j];
    if (!c.decoded && c.reader == nullptr) {
      FillDefault(c, blocks[j], out, rows_.size());
      continue;
    }
    if (c.decoded || c.reader == nullptr) {
      BASALT_RETURN_IF_ERROR(DecodeToScratch(&c, start, k));
    } else {
      // Only the span of the selected rows (from a byte-aligned row, for the null bits): a
      // selective scan decodes what it returns, not the whole chunk. Rows of the scratch
      // outside the span are left as they were; none of them is gathered.
      const size_t lo = rows_.front() & ~size_t{7};
      const size_t hi = rows_.back() + 1;
      ColumnBlock view = *c.scratch->block();
      view.cells = view.cell(lo);
      if (view.null_bitmap != nullptr) view.null_bitmap += lo / 8;
      view.capacity = hi - lo;
      BASALT_RETURN_IF_ERROR(ScanColumn(&c, start + static_cast<rowid_t>(lo), hi - lo, &view));
    }
    ColumnBlock* src = c.scratch->block();
    GatherRows(absl::MakeConstSpan(&src, 1), rows_, blocks.subspan(j, 1), out);
  }
  return rows_.size();
}

void DiskRowSetIterator::TruncateDeltas(rowid_t end) {
  for (std::vector<DeltaEntry>* v : {&undos_, &redos_}) {
    auto it = std::partition_point(v->begin(), v->end(),
                                   [end](const DeltaEntry& e) { return e.key.row < end; });
    v->erase(it, v->end());
  }
}

absl::Status DiskRowSetIterator::CollectDeltas(rowid_t start, size_t k) {
  undos_.clear();
  redos_.clear();
  if (!stores_.undos.empty()) {
    BASALT_RETURN_IF_ERROR(
        DeltaTracker::CollectMerged(stores_.undos, start, k, &delta_arena_, &undos_));
  }
  if (!stores_.redos.empty()) {
    BASALT_RETURN_IF_ERROR(
        DeltaTracker::CollectMerged(stores_.redos, start, k, &delta_arena_, &redos_));
  }
  return absl::OkStatus();
}

absl::Status DiskRowSetIterator::PushPredicate(Column* c, rowid_t start, size_t k) {
  if (c->reader == nullptr) {
    if (!c->default_matches) std::fill(sel_.begin(), sel_.end(), 0);
    return absl::OkStatus();
  }
  BASALT_RETURN_IF_ERROR(SeekColumn(c, start));
  // DICT pages are evaluated on their codes when no values are asked for; other encodings decode
  // anyway, so the values are kept for the output.
  ColumnBlock* out = c->reader->encoding() == EncodingType::kDict ? nullptr : c->scratch->block();
  size_t got = 0;
  BASALT_RETURN_IF_ERROR_PREPEND(
      c->iter->ScanWithPredicate(*c->predicate, k, sel_.data(), out, &got), rowset_->name());
  if (got != k) return ShortRead(*c, got, k);
  c->iter_pos += k;
  // Rows of pages the zone maps skipped are unspecified, but they are not selected.
  c->decoded = out != nullptr;
  return absl::OkStatus();
}

absl::Status DiskRowSetIterator::ApplyAndEvaluate(rowid_t start, size_t k, bool apply,
                                                  bool evaluate) {
  for (Column& c : cols_) BASALT_RETURN_IF_ERROR(DecodeToScratch(&c, start, k));
  if (apply) {
    ++stats_.chunks_with_deltas;
    SetAllBits(&live_, k);
    BASALT_RETURN_IF_ERROR_PREPEND(
        applier_->Apply(*snap_, start, k, undos_, redos_, scratch_blocks_, live_.data()),
        rowset_->name());
    for (size_t i = 0; i < live_.size(); ++i) sel_[i] &= live_[i];
  }
  if (evaluate) {
    ++stats_.chunks_evaluated_after_deltas;
    for (int j : pred_cols_) {
      const ColumnBlock& b = *cols_[j].scratch->block();
      cols_[j].predicate->EvaluateVector(b.cells, b.null_bitmap, k, sel_.data());
    }
  }
  return absl::OkStatus();
}

absl::Status DiskRowSetIterator::SeekColumn(Column* c, rowid_t start) {
  if (c->iter_pos == start) return absl::OkStatus();
  BASALT_RETURN_IF_ERROR_PREPEND(c->iter->SeekToOrdinal(start), rowset_->name());
  c->iter_pos = start;
  return absl::OkStatus();
}

absl::Status DiskRowSetIterator::ShortRead(const Column& c, size_t got, size_t want) const {
  return absl::DataLossError(StrCat(rowset_->name(), ": ", c.reader->name(), " returned ", got,
                                    " rows where ", want, " were expected"));
}

absl::Status DiskRowSetIterator::ScanColumn(Column* c, rowid_t start, size_t k, ColumnBlock* dst) {
  BASALT_RETURN_IF_ERROR(SeekColumn(c, start));
  size_t got = 0;
  BASALT_RETURN_IF_ERROR_PREPEND(c->iter->Scan(k, dst, &got), rowset_->name());
  if (got != k) return ShortRead(*c, got, k);
  c->iter_pos += k;
  return absl::OkStatus();
}

absl::Status DiskRowSetIterator::DecodeToScratch(Column* c, rowid_t start, size_t k) {
  if (c->decoded) return absl::OkStatus();
  if (c->reader == nullptr) {
    FillDefault(*c, c->scratch->block(), 0, k);
  } else {
    BASALT_RETURN_IF_ERROR(ScanColumn(c, start, k, c->scratch->block()));
  }
  c->decoded = true;
  return absl::OkStatus();
}

absl::Status DiskRowSetIterator::DecodeDirect(Column* c, rowid_t start, size_t k, ColumnBlock* dst,
                                              size_t out) {
  if (c->decoded || (out % 8 != 0 && dst->null_bitmap != nullptr)) {
    // Already decoded by a predicate, or the output's null bits are not byte aligned.
    BASALT_RETURN_IF_ERROR(DecodeToScratch(c, start, k));
    ColumnBlock* src = c->scratch->block();
    CopyRows(absl::MakeConstSpan(&src, 1), 0, absl::MakeConstSpan(&dst, 1), out, k);
    return absl::OkStatus();
  }
  if (c->reader == nullptr) {
    FillDefault(*c, dst, out, k);
    return absl::OkStatus();
  }
  ColumnBlock view = *dst;
  view.cells = dst->cell(out);
  view.null_bitmap = dst->null_bitmap == nullptr ? nullptr : dst->null_bitmap + out / 8;
  view.capacity = k;
  view.arena = c->scratch->arena();  // PREFIX pages rebuild values there.
  return ScanColumn(c, start, k, &view);
}

void DiskRowSetIterator::FillDefault(const Column& c, ColumnBlock* dst, size_t off, size_t n) {
  const bool is_null = c.default_value.is_null();
  if (!is_null) {
    const void* cell = c.default_value.cell();
    for (size_t i = 0; i < n; ++i) std::memcpy(dst->cell(off + i), cell, c.cell_size);
  }
  if (dst->null_bitmap != nullptr) {
    for (size_t i = 0; i < n; ++i) BitmapChange(dst->null_bitmap, off + i, is_null);
  }
}

}  // namespace basalt
