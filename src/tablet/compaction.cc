#include "tablet/compaction.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>

#include <glog/logging.h>

#include "absl/container/flat_hash_map.h"

#include "common/column_block.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/delta_file.h"
#include "tablet/delta_store.h"
#include "tablet/delta_tracker.h"
#include "tablet/diskrowset.h"
#include "tablet/diskrowset_writer.h"
#include "tablet/memrowset.h"
#include "tablet/row_changelist.h"
#include "tablet/row_state.h"

namespace basalt {

namespace {

constexpr size_t kBatchRows = 1024;
constexpr uint32_t kDropped = std::numeric_limits<uint32_t>::max();

struct RowDelta {
  HybridTime ts;
  std::string_view changes;
};

// The rows of one input in key order, each with its base values and history.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual absl::Status Init() = 0;
  virtual bool Valid() const = 0;
  virtual std::string_view key() const = 0;
  // Loads the current row: base values into *state, UNDOs (any order) and REDOs (oldest first).
  // The delta bytes stay valid until Next().
  virtual absl::Status Load(RowState* state, std::vector<RowDelta>* undos,
                            std::vector<RowDelta>* redos) = 0;
  virtual absl::Status Next() = 0;
};

// A frozen MemRowSet: base = the row as inserted, UNDO = "did not exist before the insert",
// REDOs = the mutation chain.
class MemRowSetCursor : public Cursor {
 public:
  explicit MemRowSetCursor(const MemRowSet* mrs) : mrs_(mrs), iter_(mrs->NewRawIterator()) {}
  absl::Status Init() override {
    iter_.SeekToStart();
    return absl::OkStatus();
  }
  bool Valid() const override { return iter_.Valid(); }
  std::string_view key() const override { return iter_.entry()->key(); }
  absl::Status Load(RowState* state, std::vector<RowDelta>* undos,
                    std::vector<RowDelta>* redos) override {
    const MRSRow* row = iter_.entry();
    state->LoadFromRow(mrs_->schema(), row->row_data(), row->null_bitmap());
    undos->push_back({row->insert_timestamp(), kDeleteChange});
    for (const Mutation* m = row->redo_head(); m != nullptr; m = m->next()) {
      redos->push_back({m->timestamp(), m->changelist()});
    }
    return absl::OkStatus();
  }
  absl::Status Next() override {
    iter_.Next();
    return absl::OkStatus();
  }

 private:
  static constexpr std::string_view kDeleteChange{"\x02", 1};
  const MemRowSet* mrs_;
  MRSTree::Iterator iter_;
};

// A DiskRowSet: base rows in ordinal order read in batches, with the deltas of each batch.
class DiskRowSetCursor : public Cursor {
 public:
  DiskRowSetCursor(const DiskRowSet* drs, const Schema* schema) : drs_(drs), schema_(schema) {}

  absl::Status Init() override {
    BASALT_ASSIGN_OR_RETURN(iter_, drs_->NewBaseIterator(schema_));
    BASALT_RETURN_IF_ERROR(iter_->Init());
    stores_ = drs_->delta_tracker()->GetStores();
    for (int i = 0; i < schema_->num_columns(); ++i) {
      const ColumnSchema& col = schema_->column(i);
      buffers_.push_back(
          std::make_unique<ColumnBlockBuffer>(col.type(), kBatchRows, col.is_nullable()));
      blocks_.push_back(buffers_.back()->block());
    }
    return LoadBatch();
  }
  bool Valid() const override { return pos_ < batch_rows_; }
  std::string_view key() const override { return key_; }
  absl::Status Load(RowState* state, std::vector<RowDelta>* undos,
                    std::vector<RowDelta>* redos) override {
    state->LoadFromBlocks(blocks_, pos_);
    rowid_t row = batch_start_ + static_cast<rowid_t>(pos_);
    TakeDeltas(undo_entries_, row, &undo_next_, undos);
    TakeDeltas(redo_entries_, row, &redo_next_, redos);
    return absl::OkStatus();
  }
  absl::Status Next() override {
    if (++pos_ < batch_rows_) {
      EncodeCurrentKey();
      return absl::OkStatus();
    }
    return LoadBatch();
  }

 private:
  // Appends the entries of `row` (entries are in (row, ts) order; *next is the cursor).
  static void TakeDeltas(const std::vector<DeltaEntry>& entries, rowid_t row, size_t* next,
                         std::vector<RowDelta>* out) {
    while (*next < entries.size() && entries[*next].key.row < row) ++*next;
    while (*next < entries.size() && entries[*next].key.row == row) {
      out->push_back({entries[*next].key.ts, entries[*next].changes});
      ++*next;
    }
  }

  absl::Status LoadBatch() {
    batch_start_ += static_cast<rowid_t>(batch_rows_);
    pos_ = 0;
    batch_rows_ = 0;
    for (auto& b : buffers_) b->arena()->Reset();
    delta_arena_.Reset();
    undo_entries_.clear();
    redo_entries_.clear();
    undo_next_ = redo_next_ = 0;
    while (batch_rows_ == 0 && iter_->HasNext()) {
      BASALT_ASSIGN_OR_RETURN(batch_rows_, iter_->NextBlock(blocks_, kBatchRows));
    }
    if (batch_rows_ == 0) return absl::OkStatus();
    BASALT_RETURN_IF_ERROR(DeltaTracker::CollectMerged(stores_.undos, batch_start_, batch_rows_,
                                                       &delta_arena_, &undo_entries_));
    BASALT_RETURN_IF_ERROR(DeltaTracker::CollectMerged(stores_.redos, batch_start_, batch_rows_,
                                                       &delta_arena_, &redo_entries_));
    EncodeCurrentKey();
    return absl::OkStatus();
  }

  void EncodeCurrentKey() {
    key_.clear();
    int nkeys = schema_->num_key_columns();
    for (int i = 0; i < nkeys; ++i) {
      EncodeKeyCell(blocks_[i]->type, blocks_[i]->cell(pos_), i == nkeys - 1, &key_);
    }
  }

  const DiskRowSet* drs_;
  const Schema* schema_;
  std::unique_ptr<RowBlockIterator> iter_;
  DeltaTracker::StoreSet stores_;
  std::vector<std::unique_ptr<ColumnBlockBuffer>> buffers_;
  std::vector<ColumnBlock*> blocks_;
  rowid_t batch_start_ = 0;
  size_t batch_rows_ = 0;
  size_t pos_ = 0;
  std::string key_;
  Arena delta_arena_;
  std::vector<DeltaEntry> undo_entries_;
  std::vector<DeltaEntry> redo_entries_;
  size_t undo_next_ = 0;
  size_t redo_next_ = 0;
};

}  // namespace

// Per input: its cursor and, for CarryOver, what became of each row (in cursor order).
struct RowSetCompaction::InputState {
  std::unique_ptr<Cursor> cursor;
  std::vector<uint32_t> fate;  // Global output row number, or kDropped.
  absl::flat_hash_map<uint32_t, std::string> dropped_keys;
};

// Writes rows into output rowsets, rolling at the target size. Rows and their deltas are
// buffered per batch; a rowset rolls only between batches, so a batch's deltas always belong to
// the rowset its rows went to.
class RowSetCompaction::Writer {
 public:
  // `input_rows` bounds the rows still to come, which sizes each output's bloom filter.
  Writer(const CompactionOptions& options, uint64_t input_rows, CompactionStats* stats)
      : options_(options), schema_(options.schema), stats_(stats), input_rows_(input_rows) {
    for (int i = 0; i < schema_->num_columns(); ++i) {
      const ColumnSchema& col = schema_->column(i);
      buffers_.push_back(
          std::make_unique<ColumnBlockBuffer>(col.type(), kBatchRows, col.is_nullable()));
      blocks_.push_back(buffers_.back()->block());
      const_blocks_.push_back(buffers_.back()->block());
    }
  }

  ~Writer() { Abandon(); }

  // The global number the next row will get.
  uint32_t next_row() const { return rows_total_; }

  // Adds a row; its UNDOs (any order) and REDOs (oldest first) are copied.
  absl::Status AddRow(std::string_view key, const RowState& state,
                      const std::vector<std::pair<HybridTime, std::string>>& undos,
                      const std::vector<RowDelta>& redos) {
    for (int i = 0; i < schema_->num_columns(); ++i) state.CopyCellTo(i, blocks_[i], n_);
    keys_.emplace_back(key);
    size_t first_undo = undos_.size();
    for (const auto& [ts, changes] : undos) undos_.push_back({n_, ts, changes});
    DCHECK(std::is_sorted(undos_.begin() + first_undo, undos_.end(),
                          [](const Pending& a, const Pending& b) { return a.ts < b.ts; }));
    for (const RowDelta& r : redos) redos_.push_back({n_, r.ts, std::string(r.changes)});
    ++n_;
    ++rows_total_;
    if (n_ == kBatchRows) return FlushBatch();
    return absl::OkStatus();
  }

  // Writes what is buffered and finishes the last rowset.
  absl::Status Finish() {
    BASALT_RETURN_IF_ERROR(FlushBatch());
    if (writer_ != nullptr) BASALT_RETURN_IF_ERROR(FinishRowSet());
    return absl::OkStatus();
  }

  std::vector<RowSetMetadata> TakeOutputs() {
    finalized_.clear();
    return std::move(outputs_);
  }

  // On failure: deletes every block finalized so far (they are not referenced yet).
  void Abandon() {
    for (BlockId id : finalized_) {
      absl::Status s = options_.block_manager->DeleteBlock(id);
      if (!s.ok()) LOG(WARNING) << "compaction cleanup: " << s;
    }
    finalized_.clear();
  }

 private:
  struct Pending {
    size_t row;  // In the batch.
    HybridTime ts;
    std::string changes;
  };

  absl::Status FlushBatch() {
    if (n_ == 0) return absl::OkStatus();
    if (writer_ == nullptr) BASALT_RETURN_IF_ERROR(StartRowSet());
    rowid_t base = static_cast<rowid_t>(writer_->rows_written());
    std::vector<std::string_view> keys(keys_.begin(), keys_.end());
    BASALT_RETURN_IF_ERROR(writer_->AppendBlock(const_blocks_, keys, n_));
    BASALT_RETURN_IF_ERROR(AppendDeltas(DeltaType::kUndo, base, &undos_, &undo_writer_));
    BASALT_RETURN_IF_ERROR(AppendDeltas(DeltaType::kRedo, base, &redos_, &redo_writer_));
    n_ = 0;
    keys_.clear();
    for (auto& b : buffers_) b->arena()->Reset();
    if (writer_->bytes_written() >= options_.target_rowset_bytes) return FinishRowSet();
    return absl::OkStatus();
  }

  absl::Status AppendDeltas(DeltaType type, rowid_t base, std::vector<Pending>* pending,
                            std::unique_ptr<DeltaFileWriter>* writer) {
    for (const Pending& p : *pending) {
      if (*writer == nullptr) {
        BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableBlock> block,
                                options_.block_manager->CreateBlock());
        *writer = std::make_unique<DeltaFileWriter>(type, std::move(block));
        BASALT_RETURN_IF_ERROR((*writer)->Start());
      }
      BASALT_RETURN_IF_ERROR(
          (*writer)->Append(DeltaKey{base + static_cast<rowid_t>(p.row), p.ts}, p.changes));
      (type == DeltaType::kUndo ? stats_->undos_written : stats_->redos_written)++;
    }
    pending->clear();
    return absl::OkStatus();
  }

  absl::Status StartRowSet() {
    uint64_t remaining = input_rows_ > rows_total_ ? input_rows_ - rows_total_ : 1;
    writer_ = std::make_unique<DiskRowSetWriter>(options_.block_manager, schema_,
                                                 options_.next_rowset_id(), remaining);
    return writer_->Open();
  }

  absl::Status FinishRowSet() {
    std::vector<std::unique_ptr<WritableBlock>> blocks;
    BASALT_ASSIGN_OR_RETURN(RowSetMetadata meta, writer_->FinishWithoutFinalize(&blocks));
    stats_->bytes_written += writer_->bytes_written();
    for (auto* w : {&undo_writer_, &redo_writer_}) {
      if (*w == nullptr) continue;
      BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableBlock> block, (*w)->FinishWithoutFinalize());
      (w == &undo_writer_ ? meta.undo_blocks : meta.redo_blocks).push_back(block->id());
      stats_->bytes_written += block->bytes_written();
      blocks.push_back(std::move(block));
      w->reset();
    }
    std::vector<WritableBlock*> raw;
    for (auto& b : blocks) raw.push_back(b.get());
    BASALT_RETURN_IF_ERROR(options_.block_manager->FinalizeBlocks(raw));
    for (auto& b : blocks) finalized_.push_back(b->id());
    meta.base_snapshot_before = options_.snapshot.all_committed_before();
    outputs_.push_back(std::move(meta));
    writer_.reset();
    return absl::OkStatus();
  }

  const CompactionOptions& options_;
  const Schema* schema_;
  CompactionStats* stats_;
  const uint64_t input_rows_;
  std::vector<std::unique_ptr<ColumnBlockBuffer>> buffers_;
  std::vector<ColumnBlock*> blocks_;
  std::vector<const ColumnBlock*> const_blocks_;
  std::vector<std::string> keys_;
  std::vector<Pending> undos_;
  std::vector<Pending> redos_;
  size_t n_ = 0;
  uint32_t rows_total_ = 0;
  std::unique_ptr<DiskRowSetWriter> writer_;
  std::unique_ptr<DeltaFileWriter> undo_writer_;
  std::unique_ptr<DeltaFileWriter> redo_writer_;
  std::vector<RowSetMetadata> outputs_;
  std::vector<BlockId> finalized_;
};

RowSetCompaction::RowSetCompaction(CompactionOptions options, std::vector<Input> inputs)
    : options_(std::move(options)), inputs_(std::move(inputs)) {}

RowSetCompaction::~RowSetCompaction() = default;

absl::Status RowSetCompaction::Run() {
  for (const Input& in : inputs_) {
    auto state = std::make_unique<InputState>();
    if (in.mrs != nullptr) {
      state->cursor = std::make_unique<MemRowSetCursor>(in.mrs.get());
    } else {
      state->cursor = std::make_unique<DiskRowSetCursor>(in.drs.get(), options_.schema);
    }
    BASALT_RETURN_IF_ERROR(state->cursor->Init());
    states_.push_back(std::move(state));
  }
  uint64_t input_rows = 0;
  for (const Input& in : inputs_) {
    input_rows +=
        in.mrs != nullptr ? static_cast<uint64_t>(in.mrs->entry_count()) : in.drs->num_rows();
  }
  Writer writer(options_, input_rows, &stats_);
  absl::Status s = WriteRows(&writer);
  if (s.ok()) s = writer.Finish();
  if (!s.ok()) {
    writer.Abandon();
    return s;
  }
  outputs_ = writer.TakeOutputs();
  return absl::OkStatus();
}

namespace {

// Merges runs of REDOs with equal timestamps (several ops of one write batch on one row) into one
// entry each, so that every (row, timestamp) is unique in the output. Merged bytes live in
// *storage.
absl::Status CoalesceRedos(std::vector<RowDelta>* redos, std::deque<std::string>* storage) {
  size_t out = 0;
  for (size_t i = 0; i < redos->size(); ++i) {
    RowDelta r = (*redos)[i];
    if (out > 0 && (*redos)[out - 1].ts == r.ts) {
      std::string merged;
      BASALT_RETURN_IF_ERROR(
          MergeSameTimestampRedos((*redos)[out - 1].changes, r.changes, &merged));
      storage->push_back(std::move(merged));
      (*redos)[out - 1].changes = storage->back();
      continue;
    }
    (*redos)[out++] = r;
  }
  redos->resize(out);
  return absl::OkStatus();
}

// Sorts UNDOs given in the chronological order of the ops they undo by timestamp and merges
// equal timestamps: the UNDO of the later op applies first, so it is the "older" list of the merge.
absl::Status CoalesceUndos(std::vector<std::pair<HybridTime, std::string>>* undos) {
  // Most rows have one UNDO (an insert's): nothing to sort or merge, and no temporary buffer.
  if (undos->size() < 2) return absl::OkStatus();
  std::stable_sort(undos->begin(), undos->end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<HybridTime, std::string>> out;
  for (size_t i = 0; i < undos->size();) {
    size_t j = i + 1;
    while (j < undos->size() && (*undos)[j].first == (*undos)[i].first) ++j;
    std::string merged = std::move((*undos)[j - 1].second);
    for (size_t k = j - 1; k > i; --k) {
      std::string next;
      BASALT_RETURN_IF_ERROR(MergeSameTimestampRedos(merged, (*undos)[k - 1].second, &next));
      merged = std::move(next);
    }
    out.emplace_back((*undos)[i].first, std::move(merged));
    i = j;
  }
  *undos = std::move(out);
  return absl::OkStatus();
}

}  // namespace

absl::Status RowSetCompaction::WriteRows(Writer* writer) {
  const MvccSnapshot& snap = options_.snapshot;
  const HybridTime ahm = options_.ancient_history_mark;
  RowState state(options_.schema);
  std::vector<RowDelta> undos;
  std::vector<RowDelta> redos;
  std::vector<std::pair<HybridTime, std::string>> new_undos;
  std::vector<RowDelta> kept_redos;
  std::deque<std::string> storage;
  std::string inverse;
  while (true) {
    // The input with the smallest current key (keys are unique across inputs).
    InputState* next = nullptr;
    for (auto& st : states_) {
      if (st->cursor->Valid() && (next == nullptr || st->cursor->key() < next->cursor->key())) {
        next = st.get();
      }
    }
    if (next == nullptr) return absl::OkStatus();
    Cursor* cur = next->cursor.get();
    undos.clear();
    redos.clear();
    new_undos.clear();
    kept_redos.clear();
    storage.clear();
    BASALT_RETURN_IF_ERROR(cur->Load(&state, &undos, &redos));
    BASALT_RETURN_IF_ERROR(CoalesceRedos(&redos, &storage));
    ++stats_.rows_read;
    // History first (chronological order: the input's UNDOs predate its REDOs).
    for (const RowDelta& u : undos) new_undos.emplace_back(u.ts, std::string(u.changes));
    // Apply the REDOs the snapshot holds (a prefix: the snapshot is clean). If the row ends dead,
    // the DELETE that killed it stays a REDO (later DELETEs of the dead row are no-ops).
    size_t in_snap = 0;
    while (in_snap < redos.size() && snap.IsCommitted(redos[in_snap].ts)) ++in_snap;
    size_t apply_end = in_snap;
    std::optional<RowDelta> ghost_delete;
    bool live = true;
    for (size_t i = 0; i < in_snap; ++i) {
      auto type = static_cast<RowChangeType>(redos[i].changes.empty() ? 0 : redos[i].changes[0]);
      if (type == RowChangeType::kDelete && live) {
        live = false;
        apply_end = i;
      } else if (type == RowChangeType::kReinsert) {
        live = true;
        apply_end = in_snap;
      }
    }
    if (!live) ghost_delete = redos[apply_end];
    for (size_t i = 0; i < apply_end; ++i) {
      const RowDelta& r = redos[i];
      BASALT_RETURN_IF_ERROR(state.Apply(r.changes, &inverse));
      if (!inverse.empty()) new_undos.emplace_back(r.ts, inverse);
    }
    if (!state.live()) {
      return absl::InternalError("compaction: row is dead without a trailing DELETE");
    }
    BASALT_RETURN_IF_ERROR(CoalesceUndos(&new_undos));
    // History GC: UNDOs before the mark go (they are sorted by timestamp).
    size_t keep_from = 0;
    while (keep_from < new_undos.size() && new_undos[keep_from].first < ahm) ++keep_from;
    stats_.undos_gced += static_cast<int64_t>(keep_from);
    new_undos.erase(new_undos.begin(), new_undos.begin() + static_cast<ptrdiff_t>(keep_from));
    if (ghost_delete.has_value()) {
      if (ghost_delete->ts < ahm) {
        // Deleted before the history we keep: drop the row (carried REINSERTs become orphans).
        next->dropped_keys.emplace(static_cast<uint32_t>(next->fate.size()), cur->key());
        next->fate.push_back(kDropped);
        ++stats_.rows_gced;
        BASALT_RETURN_IF_ERROR(cur->Next());
        continue;
      }
      kept_redos.push_back(*ghost_delete);
    }
    next->fate.push_back(writer->next_row());
    BASALT_RETURN_IF_ERROR(writer->AddRow(cur->key(), state, new_undos, kept_redos));
    ++stats_.rows_written;
    BASALT_RETURN_IF_ERROR(cur->Next());
  }
}

absl::Status RowSetCompaction::CarryOver(const std::vector<std::shared_ptr<DiskRowSet>>& opened,
                                         int64_t op_index, std::vector<OrphanedMutation>* orphans) {
  CHECK_EQ(opened.size(), outputs_.size());
  std::vector<uint32_t> starts;  // Global row number of each output's first row.
  uint32_t total = 0;
  for (const RowSetMetadata& m : outputs_) {
    starts.push_back(total);
    total += static_cast<uint32_t>(m.num_rows);
  }
  const MvccSnapshot& snap = options_.snapshot;
  auto apply = [&](const InputState& st, uint32_t pos, HybridTime ts,
                   std::string_view changes) -> absl::Status {
    if (snap.IsCommitted(ts)) return absl::OkStatus();
    ++stats_.mutations_carried;
    CHECK_LT(pos, st.fate.size());
    uint32_t row = st.fate[pos];
    if (row == kDropped) {
      orphans->push_back({st.dropped_keys.at(pos), ts, std::string(changes)});
      return absl::OkStatus();
    }
    size_t out = std::upper_bound(starts.begin(), starts.end(), row) - starts.begin() - 1;
    return opened[out]->delta_tracker()->Update(ts, row - starts[out], changes, op_index);
  };
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const InputState& st = *states_[i];
    if (inputs_[i].mrs != nullptr) {
      MRSTree::Iterator it = inputs_[i].mrs->NewRawIterator();
      uint32_t pos = 0;
      for (it.SeekToStart(); it.Valid(); it.Next(), ++pos) {
        for (const Mutation* m = it.entry()->redo_head(); m != nullptr; m = m->next()) {
          BASALT_RETURN_IF_ERROR(apply(st, pos, m->timestamp(), m->changelist()));
        }
      }
      continue;
    }
    const DiskRowSet& drs = *inputs_[i].drs;
    DeltaTracker::StoreSet stores = drs.delta_tracker()->GetStores();
    constexpr rowid_t kChunk = 64 << 10;
    for (rowid_t start = 0; start < drs.num_rows(); start += kChunk) {
      Arena arena;
      std::vector<DeltaEntry> entries;
      BASALT_RETURN_IF_ERROR(DeltaTracker::CollectMerged(
          stores.redos, start, std::min<size_t>(kChunk, drs.num_rows() - start), &arena, &entries));
      for (const DeltaEntry& e : entries) {
        BASALT_RETURN_IF_ERROR(apply(st, e.key.row, e.key.ts, e.changes));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace basalt
