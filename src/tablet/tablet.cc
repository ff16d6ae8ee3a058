#include "tablet/tablet.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/bitmap.h"
#include "common/column_block.h"
#include "common/datum.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/delta_tracker.h"
#include "tablet/diskrowset.h"
#include "tablet/filter_iterator.h"
#include "tablet/memrowset.h"
#include "tablet/merge_iterator.h"
#include "tablet/row_changelist.h"
#include "tablet/row_state.h"
#include "tablet/rowset_tree.h"
#include "tablet/scan_key_range.h"
#include "tablet/tablet_components.h"
#include "tablet/union_iterator.h"

DEFINE_int32(rowset_target_size_mb, 32,
             "Size at which a flush or compaction starts a new DiskRowSet, in MiB.");
DEFINE_int32(tablet_history_max_age_sec, 900,
             "How long past versions of rows stay readable by snapshot scans, in seconds. Older "
             "history (UNDO deltas, deleted rows) is garbage-collected by compactions and the "
             "history GC maintenance op, and snapshot scans older than it are refused.");

namespace basalt {

namespace {

using tablet_internal::kNoOpIndex;

}  // namespace

Tablet::Tablet(TabletOptions options, std::string tablet_id, Schema schema)
    : options_(std::move(options)), tablet_id_(std::move(tablet_id)) {
  if (options_.memory_budget != nullptr) {
    memory_consumer_ = options_.memory_budget->RegisterConsumer(StrCat("tablet ", tablet_id_));
  }
  auto c = std::make_shared<Components>();
  c->schema = std::make_shared<const Schema>(std::move(schema));
  c->mrs = std::make_shared<MemStore>(std::make_shared<MemRowSet>(next_mrs_id_++, *c->schema));
  components_ = c->WithDiskRowSets({});
}

Tablet::~Tablet() = default;

absl::StatusOr<std::unique_ptr<Tablet>> Tablet::Create(TabletOptions options, std::string tablet_id,
                                                       const Schema& schema) {
  CHECK(options.env != nullptr && options.block_manager != nullptr && options.clock != nullptr);
  if (options.env->FileExists(options.superblock_path)) {
    return absl::AlreadyExistsError(
        StrCat("tablet superblock ", options.superblock_path, " already exists"));
  }
  std::unique_ptr<Tablet> t(new Tablet(std::move(options), std::move(tablet_id), schema));
  BASALT_RETURN_IF_ERROR(t->PersistSuperBlock({}));
  return t;
}

absl::StatusOr<std::unique_ptr<Tablet>> Tablet::Open(TabletOptions options) {
  CHECK(options.env != nullptr && options.block_manager != nullptr && options.clock != nullptr);
  BASALT_ASSIGN_OR_RETURN(TabletSuperBlock sb,
                          ReadSuperBlock(options.env, options.superblock_path));
  std::unique_ptr<Tablet> t(new Tablet(std::move(options), sb.tablet_id, sb.schema));
  BASALT_RETURN_IF_ERROR(t->InitFromSuperBlock(sb));
  return t;
}

absl::Status Tablet::InitFromSuperBlock(const TabletSuperBlock& sb) {
  for (BlockId id : sb.orphaned_blocks) {
    absl::Status s = options_.block_manager->DeleteBlock(id);
    if (!s.ok() && !absl::IsNotFound(s)) LOG(WARNING) << "deleting orphaned block: " << s;
  }
  std::vector<std::shared_ptr<DiskRowSet>> drs;
  for (const RowSetMetadata& meta : sb.rowsets) {
    BASALT_ASSIGN_OR_RETURN(auto r,
                            DiskRowSet::Open(meta, {options_.block_manager, options_.block_cache}));
    drs.push_back(std::move(r));
  }
  SetComponents(GetComponents()->WithDiskRowSets(std::move(drs)));
  next_rowset_id_ = sb.next_rowset_id;
  last_applied_op_index_ = sb.durable_op_index;
  persisted_durable_op_index_ = sb.durable_op_index;
  last_applied_ts_ = sb.max_durable_timestamp.value();
  history_gc_mark_ = sb.history_gc_mark.value();
  {
    absl::MutexLock l(&metadata_mu_);
    superblock_version_ = static_cast<int64_t>(sb.version);
  }
  {
    absl::MutexLock l(&write_mu_);
    last_write_ts_ = sb.max_durable_timestamp;
  }
  mvcc_.AdjustSafeTime(sb.max_durable_timestamp);
  return options_.clock->Update(sb.max_durable_timestamp);
}

std::shared_ptr<const Tablet::Components> Tablet::GetComponents() const {
  absl::ReaderMutexLock l(&components_mu_);
  return components_;
}

void Tablet::SetComponents(std::shared_ptr<const Components> c) {
  // A flush or compaction that drops an in-memory store must lower the reported usage at once:
  // writes refused at the memory budget's hard limit wait for exactly that.
  ReportMemory(*c);
  absl::MutexLock l(&components_mu_);
  components_ = std::move(c);
}

Schema Tablet::schema() const { return *GetComponents()->schema; }

int64_t Tablet::NextRowSetId() { return next_rowset_id_++; }

// ---- Writes -------------------------------------------------------------------------------------

absl::Status Tablet::ApplyRowOperations(HybridTime ts, int64_t op_index,
                                        absl::Span<const DecodedRowOperation> ops,
                                        std::vector<RowOutcome>* results, bool replay) {
  // A replicated op must be applied: it was committed. Memory pressure slows only new writes.
  absl::MutexLock l(&write_mu_);
  return ApplyLocked(ts, op_index, ops, results, replay);
}

absl::Status Tablet::Write(absl::Span<const DecodedRowOperation> ops,
                           std::vector<RowOutcome>* results, HybridTime* ts) {
  if (options_.memory_budget != nullptr) {
    BASALT_RETURN_IF_ERROR(options_.memory_budget->AdmitWrite());
  }
  absl::MutexLock l(&write_mu_);
  HybridTime now = options_.clock->Now();
  if (ts != nullptr) *ts = now;
  return ApplyLocked(now, 0, ops, results, false);
}

absl::Status Tablet::ApplyLocked(HybridTime ts, int64_t op_index,
                                 absl::Span<const DecodedRowOperation> ops,
                                 std::vector<RowOutcome>* results, bool replay) {
  // A failed tablet applies nothing more (its error, whatever its code, is one of the storage).
  if (absl::Status failed = health(); !failed.ok()) return StorageError(failed);
  // Replayed ops may lie below timestamps the rowsets already hold (another store was flushed
  // later); they run before the tablet serves reads, so they bypass MVCC tracking.
  if (!ts.is_valid() || (!replay && ts <= last_write_ts_)) {
    return absl::InvalidArgumentError(StrCat(
        "op timestamp ", ts.ToString(), " is not above the last one ", last_write_ts_.ToString()));
  }
  std::shared_ptr<const Components> c = GetComponents();
  const Schema* checked = c->schema.get();
  for (const DecodedRowOperation& op : ops) {
    if (op.schema != c->schema.get() && op.schema != checked) {
      if (!op.schema->Equals(*c->schema)) {
        return absl::InvalidArgumentError("row operations were decoded with another schema");
      }
      checked = op.schema;
    }
  }
  if (!replay) BASALT_RETURN_IF_ERROR(mvcc_.StartOp(ts));
  replay_decisions_.clear();
  results->assign(ops.size(), RowOutcome::kApplied);
  absl::Status storage;
  for (size_t i = 0; i < ops.size() && storage.ok(); ++i) {
    absl::StatusOr<RowOutcome> outcome = ApplyOp(*c, ts, op_index, ops[i], replay);
    if (outcome.ok()) {
      (*results)[i] = *outcome;
    } else {
      storage = StorageError(outcome.status());
    }
  }
  if (!storage.ok()) {
    // Part of the op may be applied in memory: nothing of this tablet may become durable now, nor
    // be read (Fail, before the op becomes visible), and the caller fails the replica, whose log
    // still holds the op.
    storage = absl::Status(storage.code(), StrCat("tablet ", tablet_id_, ": applying op ", op_index,
                                                  ": ", storage.message()));
    Fail(storage);
  }
  if (!replay) mvcc_.FinishOp(ts);
  if (!storage.ok()) return storage;
  mvcc_.AdjustSafeTime(ts);
  ReportMemory(*c);
  last_write_ts_ = std::max(last_write_ts_, ts);
  last_applied_ts_.store(last_write_ts_.value());
  if (op_index > 0) last_applied_op_index_.store(op_index);
  return absl::OkStatus();
}

absl::StatusOr<RowOutcome> Tablet::ApplyOp(const Components& c, HybridTime ts, int64_t op_index,
                                           const DecodedRowOperation& op, bool replay) {
  const Schema& schema = *c.schema;
  std::string key = EncodeKey(schema, op.row_data);
  if (replay) {
    BASALT_ASSIGN_OR_RETURN(bool reflected, ReplayFindsOpReflected(c, key, ts));
    if (reflected) return RowOutcome::kApplied;
  }
  if (RowOperationIsInsertLike(op.type)) {
    BASALT_ASSIGN_OR_RETURN(RowOutcome inserted, InsertRow(c, ts, op_index, op, key));
    if (inserted != RowOutcome::kKeyExists || op.type == RowOperationType::kInsert) {
      return inserted;
    }
    if (op.type == RowOperationType::kInsertIgnore) return RowOutcome::kApplied;
    // UPSERT of an existing row: an UPDATE of the columns it sets.
  }
  RowChangeListEncoder enc(&scratch_changes_);
  if (RowOperationIsDeleteLike(op.type)) {
    enc.SetToDelete();
  } else {
    enc.SetToUpdate();
    for (int i = schema.num_key_columns(); i < schema.num_columns(); ++i) {
      if (!op.IsSet(i)) continue;
      enc.AddColumnUpdate(schema.column_id(i), schema.column(i).type(),
                          op.IsNull(i) ? nullptr : op.cell(i));
    }
    if (scratch_changes_.size() == 1) return RowOutcome::kApplied;  // An UPSERT of the key only.
  }
  BASALT_ASSIGN_OR_RETURN(RowOutcome mutated, MutateRow(c, ts, op_index, key, scratch_changes_));
  if (mutated == RowOutcome::kKeyNotFound &&
      (op.type == RowOperationType::kUpdateIgnore || op.type == RowOperationType::kDeleteIgnore)) {
    return RowOutcome::kApplied;
  }
  return mutated;
}

namespace {

// A row outcome from a store's status (its outcome codes, documented by MemRowSet and
// DiskRowSet), or a storage error for anything else.
absl::StatusOr<RowOutcome> OutcomeOf(const absl::Status& s) {
  if (s.ok()) return RowOutcome::kApplied;
  if (absl::IsAlreadyExists(s)) return RowOutcome::kKeyExists;
  if (absl::IsNotFound(s)) return RowOutcome::kKeyNotFound;
  return StorageError(s);
}

}  // namespace

namespace {

// The timestamp of the last change to an MRS row.
HybridTime LatestChange(const MRSRow* row) {
  HybridTime ts = row->insert_timestamp();
  for (const Mutation* m = row->redo_head(); m != nullptr; m = m->next()) ts = m->timestamp();
  return ts;
}

}  // namespace

absl::StatusOr<RowOutcome> Tablet::InsertRow(const Components& c, HybridTime ts, int64_t op_index,
                                             const DecodedRowOperation& op, std::string_view key) {
  const Schema& schema = *c.schema;
  // The full row: unset columns take their defaults.
  scratch_row_.assign(reinterpret_cast<const char*>(op.row_data), schema.fixed_row_size());
  size_t bitmap_size = BitmapSize(schema.num_columns());
  std::string nulls(reinterpret_cast<const char*>(op.isnull), bitmap_size);
  for (int i = schema.num_key_columns(); i < schema.num_columns(); ++i) {
    if (op.IsSet(i)) continue;
    const std::optional<Datum>& def = schema.column(i).default_value();
    bool null = !def.has_value() || def->is_null();
    BitmapChange(reinterpret_cast<uint8_t*>(nulls.data()), i, null);
    if (!null) {
      std::memcpy(scratch_row_.data() + schema.column_offset(i), def->cell(),
                  schema.column(i).type_info().size());
    }
  }
  const auto* row = reinterpret_cast<const uint8_t*>(scratch_row_.data());
  const auto* null_bitmap = reinterpret_cast<const uint8_t*>(nulls.data());

  // A key lives in one rowset: a deleted row's key is reinserted where the row is.
  BASALT_ASSIGN_OR_RETURN(DiskRowLocation loc, LocateInDiskRowSets(c, key));
  if (loc.drs != nullptr) {
    RowChangeListEncoder enc(&scratch_changes_);
    enc.EncodeReinsert(schema, row, null_bitmap);
    absl::Status s = loc.drs->MutateRowAt(ts, loc.row, scratch_changes_, op_index);
    if (absl::IsNotFound(s)) return absl::InternalError("row vanished from its rowset");
    return OutcomeOf(s);
  }
  MemStore* target = c.mrs.get();
  // New keys (above the frozen MRS's range, as with sequential inserts) skip its lookup.
  if (c.frozen != nullptr && key <= c.frozen_max_key && c.frozen->mrs->FindRow(key) != nullptr) {
    target = c.frozen.get();
  }
  absl::Status s = target->mrs->Insert(ts, row, null_bitmap, key);
  // The decoder refuses NULLs in NOT NULL columns first; the store's check is a second line.
  if (absl::IsInvalidArgument(s)) return RowOutcome::kInvalidRow;
  if (s.ok()) NoteMemStoreWrite(target, op_index);
  return OutcomeOf(s);
}

absl::StatusOr<RowOutcome> Tablet::MutateRow(const Components& c, HybridTime ts, int64_t op_index,
                                             std::string_view key, std::string_view changes) {
  for (MemStore* store : {c.mrs.get(), c.frozen.get()}) {
    if (store == nullptr || (store == c.frozen.get() && key > c.frozen_max_key)) continue;
    const MRSRow* row = store->mrs->FindRow(key);
    if (row == nullptr) continue;
    absl::Status s = store->mrs->MutateRow(ts, key, changes);
    if (s.ok()) NoteMemStoreWrite(store, op_index);
    return OutcomeOf(s);
  }
  BASALT_ASSIGN_OR_RETURN(DiskRowLocation loc, LocateInDiskRowSets(c, key));
  if (loc.drs == nullptr) return RowOutcome::kKeyNotFound;
  return OutcomeOf(loc.drs->MutateRowAt(ts, loc.row, changes, op_index));
}

absl::StatusOr<Tablet::DiskRowLocation> Tablet::LocateInDiskRowSets(const Components& c,
                                                                    std::string_view key) {
  c.tree->FindContaining(key, &candidates_);
  if (candidates_.empty()) return DiskRowLocation{};
  const uint64_t hash = BloomKeyHash(key);  // Once for every candidate's bloom filter.
  for (int idx : candidates_) {
    DiskRowSet& drs = *c.drs[idx];
    absl::StatusOr<std::optional<rowid_t>> found = drs.FindRow(key, hash);
    if (!found.ok()) return StorageError(found.status());  // Reading the key index or bloom.
    const std::optional<rowid_t>& rowid = *found;
    if (!rowid.has_value()) continue;
    return DiskRowLocation{&drs, *rowid};
  }
  return DiskRowLocation{};
}

// WAL replay re-applies an op's mutations of a row unless the rowsets already reflect the op for
// that row. What must stay true:
//  - All of one op's mutations of one row land in one store under the write lock, and a store is
//    flushed or swapped only between ops, so a row reflects either all of them or none.
//  - The decision is taken once per (op, key), at the op's first mutation of the key, before
//    replay changed the row: then a row changed at or after `ts` holds the op's whole effect and
//    is skipped. Re-deciding later in the op would be wrong both ways: the op's own replayed
//    mutations carry `ts` (so "changed at ts" no longer means "already reflected"), and
//    re-applying an op to its own result is not a no-op when one of its row ops failed the first
//    time and would now succeed (UPDATE of an absent key, then INSERT of it: replaying the UPDATE
//    over the reinserted row would lose the INSERT's values).
//  - A DiskRowSet's base data reflect every op below its snapshot (base_snapshot_before is
//    exclusive); ops at or above it are REDOs.
absl::StatusOr<bool> Tablet::ReplayFindsOpReflected(const Components& c, const std::string& key,
                                                    HybridTime ts) {
  auto it = replay_decisions_.find(key);
  if (it != replay_decisions_.end()) return it->second;
  bool reflected = false;
  const MRSRow* row = nullptr;
  for (MemStore* store : {c.mrs.get(), c.frozen.get()}) {
    if (store != nullptr && row == nullptr) row = store->mrs->FindRow(key);
  }
  if (row != nullptr) {
    reflected = LatestChange(row) >= ts;
  } else {
    BASALT_ASSIGN_OR_RETURN(DiskRowLocation loc, LocateInDiskRowSets(c, key));
    if (loc.drs != nullptr) {
      absl::StatusOr<HybridTime> latest = loc.drs->delta_tracker()->LatestRedoTimestamp(loc.row);
      if (!latest.ok()) return StorageError(latest.status());
      const HybridTime redo = *latest;
      reflected =
          (redo.is_valid() && redo >= ts) || loc.drs->CurrentMetadata().base_snapshot_before > ts;
    }
  }
  replay_decisions_.emplace(key, reflected);
  return reflected;
}

void Tablet::NoteMemStoreWrite(MemStore* store, int64_t op_index) {
  if (op_index > 0 && op_index < store->min_op_index.load(std::memory_order_relaxed)) {
    store->min_op_index.store(op_index, std::memory_order_relaxed);
  }
}

absl::Status Tablet::ApplyOrphan(const Components& c, const OrphanedMutation& m, int64_t op_index) {
  RowChangeListDecoder dec(m.changes);
  BASALT_RETURN_IF_ERROR(dec.Init());
  if (!dec.is_reinsert()) {
    BASALT_RETURN_IF_ERROR(c.mrs->mrs->MutateRow(m.ts, m.key, m.changes));
  } else {
    RowState state(c.schema.get());
    BASALT_RETURN_IF_ERROR(state.LoadKey(m.key));
    BASALT_RETURN_IF_ERROR(state.Apply(m.changes, nullptr));
    BASALT_RETURN_IF_ERROR(c.mrs->mrs->Insert(m.ts, state.row_data(), state.null_bitmap()));
  }
  NoteMemStoreWrite(c.mrs.get(), op_index);
  return absl::OkStatus();
}

// ---- Scans --------------------------------------------------------------------------------------

// Adapts the caller's blocks to the internal projection: the columns the caller asked for are
// read straight into its blocks; key columns (ordered scans) and predicate-only columns it did
// not ask for go to scratch buffers.
class Tablet::Iterator : public RowBlockIterator {
 public:
  Iterator(std::shared_ptr<const Components> components, std::unique_ptr<Schema> internal,
           std::vector<int> internal_to_user, size_t num_user_columns)
      : components_(std::move(components)),
        internal_(std::move(internal)),
        internal_to_user_(std::move(internal_to_user)),
        num_user_columns_(num_user_columns),
        blocks_(internal_->num_columns()),
        scratch_(internal_->num_columns()) {}

  const Schema* internal() const { return internal_.get(); }
  void set_child(std::unique_ptr<RowBlockIterator> child) { child_ = std::move(child); }

  absl::Status Init() override { return child_->Init(); }
  bool HasNext() const override { return child_->HasNext(); }
  absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks,
                                   size_t max_rows) override {
    if (blocks.size() != num_user_columns_) {
      return absl::InvalidArgumentError(
          StrCat("scan got ", blocks.size(), " blocks for ", num_user_columns_, " columns"));
    }
    for (int j = 0; j < internal_->num_columns(); ++j) {
      int u = internal_to_user_[j];
      if (u >= 0) {
        blocks_[j] = blocks[u];
        continue;
      }
      if (scratch_[j] == nullptr || scratch_[j]->block()->capacity < max_rows) {
        const ColumnSchema& col = internal_->column(j);
        scratch_[j] = std::make_unique<ColumnBlockBuffer>(col.type(), max_rows, col.is_nullable());
      }
      scratch_[j]->arena()->Reset();
      blocks_[j] = scratch_[j]->block();
    }
    return child_->NextBlock(blocks_, max_rows);
  }

 private:
  const std::shared_ptr<const Components> components_;  // Keeps the rowsets alive.
  const std::unique_ptr<Schema> internal_;
  const std::vector<int> internal_to_user_;
  const size_t num_user_columns_;
  std::unique_ptr<RowBlockIterator> child_;
  std::vector<ColumnBlock*> blocks_;
  std::vector<std::unique_ptr<ColumnBlockBuffer>> scratch_;
};

absl::StatusOr<std::unique_ptr<RowBlockIterator>> Tablet::NewIterator(const Schema& projection,
                                                                      const MvccSnapshot& snap,
                                                                      const ScanSpec& spec,
                                                                      bool ordered) const {
  BASALT_RETURN_IF_ERROR(health());  // A failed tablet may hold part of an op: nothing is read.
  std::shared_ptr<const Components> c = GetComponents();
  const Schema& schema = *c->schema;
  for (const ColumnPredicate& p : spec.predicates) {
    if (schema.find_column(p.column().name()) < 0) {
      return absl::InvalidArgumentError(StrCat("predicate on unknown column ", p.column().name()));
    }
  }
  // Predicates on the key narrow the key range, so that stores seek instead of filtering (and a
  // lookup by the whole key drops its equalities: the range implies them).
  ScanSpec narrowed = spec;
  NarrowKeyRange(schema, &narrowed);
  // The internal projection: key columns first when ordered, then the caller's columns, then
  // columns only predicates need.
  std::vector<std::string> names;
  std::vector<int> to_user;
  auto add = [&](const std::string& name, int user) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) {
        if (user >= 0) to_user[i] = user;
        return;
      }
    }
    names.push_back(name);
    to_user.push_back(user);
  };
  if (ordered) {
    for (int i = 0; i < schema.num_key_columns(); ++i) add(schema.column(i).name(), -1);
  }
  for (int u = 0; u < projection.num_columns(); ++u) {
    int idx = schema.find_column_by_id(projection.column_id(u));
    if (idx < 0) {
      return absl::InvalidArgumentError(
          StrCat("projected column ", projection.column(u).name(), " is not in the schema"));
    }
    add(schema.column(idx).name(), u);
  }
  for (const ColumnPredicate& p : narrowed.predicates) add(p.column().name(), -1);
  BASALT_ASSIGN_OR_RETURN(Schema internal, schema.Project(names));
  auto iter = std::make_unique<Iterator>(c, std::make_unique<Schema>(std::move(internal)),
                                         std::move(to_user), projection.num_columns());
  const Schema* proj = iter->internal();

  std::vector<std::unique_ptr<RowBlockIterator>> children;
  for (const auto& store : {c->frozen, c->mrs}) {
    if (store == nullptr) continue;
    std::unique_ptr<MemRowSetIterator> mrs_it = store->mrs->NewIterator(proj, snap, narrowed.range);
    std::unique_ptr<RowBlockIterator> it;
    if (narrowed.predicates.empty()) {
      it = std::move(mrs_it);
    } else {
      // Rows without mutations are filtered before their cells are copied; the FilterIterator
      // decides for the rest.
      mrs_it->SetPrefilter(narrowed.predicates);
      it = std::make_unique<FilterIterator>(std::move(mrs_it), proj, narrowed.predicates);
    }
    children.push_back(std::move(it));
  }
  std::vector<int> overlapping;
  c->tree->FindOverlapping(narrowed.range.lower, narrowed.range.upper, &overlapping);
  for (int idx : overlapping) {
    BASALT_ASSIGN_OR_RETURN(auto it, c->drs[idx]->NewIterator(proj, snap, narrowed));
    children.push_back(std::move(it));
  }
  // Only now: every store the scan reads is pinned (tablet_history.cc, point 2).
  BASALT_RETURN_IF_ERROR(CheckSnapshotIsExact(snap));
  if (ordered) {
    iter->set_child(std::make_unique<MergeIterator>(std::move(children), proj));
  } else {
    iter->set_child(std::make_unique<UnionIterator>(std::move(children)));
  }
  return std::unique_ptr<RowBlockIterator>(std::move(iter));
}

// ---- Flush and compaction -----------------------------------------------------------------------

MvccSnapshot Tablet::CleanSnapshot() const {
  return MvccSnapshot::IncludingAllBefore(mvcc_.all_committed_before());
}

// One flush or compaction (tablet.h, "Flush and compaction").
struct Tablet::CompactionJob {
  // Fixed when the job is planned.
  std::vector<RowSetCompaction::Input> inputs;
  MvccSnapshot snap;
  HybridTime ahm;      // Rows and history older than this may be dropped.
  bool flush = false;  // inputs[0] is the frozen MRS, swapped out with the others.
  // Set by WriteOutputs. The schema outlives the compaction, which borrows it.
  std::shared_ptr<const Schema> schema;
  std::unique_ptr<RowSetCompaction> compaction;
  std::vector<std::shared_ptr<DiskRowSet>> outputs;
  // The smallest op index the inputs hold only in memory: carried mutations inherit it, so the
  // WAL keeps those ops until the outputs' delta stores are flushed.
  int64_t op_index = kNoOpIndex;
};

absl::Status Tablet::FlushMemRowSet() {
  absl::MutexLock fl(&flush_mu_);
  std::optional<CompactionJob> job;
  {
    absl::MutexLock wl(&write_mu_);
    job = PlanFlush();
  }
  if (!job.has_value()) return absl::OkStatus();
  BASALT_RETURN_IF_ERROR(RunCompaction(&*job));
  flushes_++;
  return absl::OkStatus();
}

std::optional<Tablet::CompactionJob> Tablet::PlanFlush() {
  std::shared_ptr<const Components> c = GetComponents();
  if (c->frozen == nullptr) {
    if (c->mrs->mrs->entry_count() == 0) return std::nullopt;
    // Freeze: new keys go to a fresh MRS; the frozen one keeps taking mutations (and
    // reinserts of its deleted rows) until the swap.
    c->mrs->mrs->Freeze();
    auto next = std::make_shared<Components>(*c);
    next->frozen = c->mrs;
    next->frozen_max_key = c->mrs->mrs->MaxKey();
    next->mrs = std::make_shared<MemStore>(std::make_shared<MemRowSet>(next_mrs_id_++, *c->schema));
    SetComponents(next);
    c = next;
  }
  // else: a flush that failed earlier left its MRS frozen; retry it.
  CompactionJob job;
  RowSetCompaction::Input in;
  in.mrs = c->frozen->mrs;
  job.inputs.push_back(std::move(in));
  job.snap = CleanSnapshot();
  job.ahm = AncientHistoryMark(*c);
  job.flush = true;
  return job;
}

absl::StatusOr<std::vector<std::shared_ptr<DiskRowSet>>> Tablet::OpenOutputs(
    const std::vector<RowSetMetadata>& metas) {
  std::vector<std::shared_ptr<DiskRowSet>> out;
  for (const RowSetMetadata& m : metas) {
    BASALT_ASSIGN_OR_RETURN(auto r,
                            DiskRowSet::Open(m, {options_.block_manager, options_.block_cache}));
    out.push_back(std::move(r));
  }
  return out;
}

absl::Status Tablet::RunCompaction(CompactionJob* job) {
  BASALT_RETURN_IF_ERROR(WriteOutputs(job));
  {
    absl::MutexLock wl(&write_mu_);
    BASALT_RETURN_IF_ERROR(InstallOutputs(job));
  }
  return FinishCompaction(*job);
}

absl::Status Tablet::RunCompactionWritesBlocked(CompactionJob* job) {
  BASALT_RETURN_IF_ERROR(WriteOutputs(job));
  BASALT_RETURN_IF_ERROR(InstallOutputs(job));
  return FinishCompaction(*job);
}

absl::Status Tablet::WriteOutputs(CompactionJob* job) {
  // A failed tablet writes no blocks: they could never be named (PersistSuperBlock refuses).
  BASALT_RETURN_IF_ERROR(RefuseIfFailed());
  job->schema = GetComponents()->schema;
  CompactionOptions opts;
  opts.block_manager = options_.block_manager;
  opts.schema = job->schema.get();
  opts.snapshot = job->snap;
  opts.ancient_history_mark = job->ahm;
  opts.target_rowset_bytes = options_.rowset_target_bytes > 0
                                 ? options_.rowset_target_bytes
                                 : uint64_t{static_cast<uint32_t>(FLAGS_rowset_target_size_mb)}
                                       << 20;
  opts.next_rowset_id = [this] { return NextRowSetId(); };
  job->compaction = std::make_unique<RowSetCompaction>(std::move(opts), job->inputs);
  BASALT_RETURN_IF_ERROR(job->compaction->Run());
  BASALT_ASSIGN_OR_RETURN(job->outputs, OpenOutputs(job->compaction->outputs()));
  job->op_index = kNoOpIndex;
  for (const auto& in : job->inputs) {
    if (in.drs != nullptr) {
      job->op_index = std::min(job->op_index, in.drs->delta_tracker()->min_unflushed_op_index());
    }
  }
  return absl::OkStatus();
}

absl::Status Tablet::InstallOutputs(CompactionJob* job) {
  std::shared_ptr<const Components> c = GetComponents();
  if (job->flush) job->op_index = std::min(job->op_index, c->frozen->min_op_index.load());
  std::vector<OrphanedMutation> orphaned;
  BASALT_RETURN_IF_ERROR(job->compaction->CarryOver(job->outputs, job->op_index, &orphaned));
  std::vector<std::shared_ptr<DiskRowSet>> drs;
  for (const auto& r : c->drs) {
    bool replaced = std::any_of(job->inputs.begin(), job->inputs.end(),
                                [&](const auto& in) { return in.drs == r; });
    if (!replaced) drs.push_back(r);
  }
  for (auto& r : job->outputs) drs.push_back(r);
  std::shared_ptr<Components> next = c->WithDiskRowSets(std::move(drs));
  if (job->flush) next->frozen = nullptr;
  // The outputs lack history below ahm: the mark goes up before scans can reach them.
  RaiseHistoryGcMark(job->ahm);
  SetComponents(next);
  for (const OrphanedMutation& m : orphaned) {
    BASALT_RETURN_IF_ERROR(ApplyOrphan(*next, m, job->op_index));
  }
  return absl::OkStatus();
}

absl::Status Tablet::FinishCompaction(const CompactionJob& job) {
  // The inputs' blocks are unreferenced once the new superblock is durable.
  std::vector<BlockId> orphans;
  for (const auto& in : job.inputs) {
    if (in.drs == nullptr) continue;
    for (BlockId id : in.drs->CurrentMetadata().AllBlocks()) orphans.push_back(id);
  }
  const CompactionStats& st = job.compaction->stats();
  VLOG(1) << "tablet " << tablet_id_ << (job.flush ? " flush" : " compaction") << ": "
          << job.inputs.size() << " inputs, " << st.rows_read << " rows read, " << st.rows_written
          << " written, " << st.rows_gced << " GCed, " << job.outputs.size() << " outputs, "
          << st.mutations_carried << " mutations carried over";
  return PersistSuperBlock(std::move(orphans));
}

std::vector<std::shared_ptr<DiskRowSet>> Tablet::ReserveRowSets(
    const std::vector<std::shared_ptr<DiskRowSet>>& candidates) {
  absl::MutexLock l(&busy_mu_);
  std::vector<std::shared_ptr<DiskRowSet>> out;
  for (const auto& r : candidates) {
    if (busy_.insert(r->id()).second) out.push_back(r);
  }
  return out;
}

void Tablet::ReleaseRowSets(const std::vector<std::shared_ptr<DiskRowSet>>& rowsets) {
  absl::MutexLock l(&busy_mu_);
  for (const auto& r : rowsets) busy_.erase(r->id());
  ++busy_releases_;
}

uint64_t Tablet::busy_releases() const {
  absl::MutexLock l(&busy_mu_);
  return busy_releases_;
}

bool Tablet::AwaitRowSetRelease(uint64_t since, absl::Time deadline) const {
  absl::MutexLock l(&busy_mu_);
  auto released = [this, since]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(busy_mu_) { return busy_releases_ != since; };
  return busy_mu_.AwaitWithDeadline(absl::Condition(&released), deadline);
}

absl::Status Tablet::CompactRowSets(std::vector<std::shared_ptr<DiskRowSet>> inputs) {
  if (inputs.empty()) return absl::OkStatus();
  CompactionJob job;
  {
    absl::MutexLock wl(&write_mu_);
    job.snap = CleanSnapshot();
    job.ahm = AncientHistoryMark(*GetComponents());
  }
  for (auto& r : inputs) job.inputs.push_back({nullptr, r});
  absl::Status s = RunCompaction(&job);
  ReleaseRowSets(inputs);
  if (s.ok()) compactions_++;
  return s;
}

absl::Status Tablet::Compact(bool all) {
  std::shared_ptr<const Components> c = GetComponents();
  std::vector<std::shared_ptr<DiskRowSet>> free = ReserveRowSets(c->drs);
  if (all) return CompactRowSets(std::move(free));
  CompactionSelection pick = BudgetedCompactionPolicy(CompactionPolicyOptions::FromFlags())
                                 .PickRowSets(CompactionCandidates(free));
  std::vector<std::shared_ptr<DiskRowSet>> chosen;
  std::vector<std::shared_ptr<DiskRowSet>> unused;
  for (auto& r : free) {
    bool picked = std::binary_search(pick.rowset_ids.begin(), pick.rowset_ids.end(), r->id());
    (picked ? chosen : unused).push_back(r);
  }
  ReleaseRowSets(unused);
  return CompactRowSets(std::move(chosen));
}

absl::Status Tablet::MajorCompactDeltas(int64_t rowset_id) {
  std::shared_ptr<const Components> c = GetComponents();
  std::shared_ptr<DiskRowSet> target;
  for (const auto& r : c->drs) {
    const DeltaTracker& t = *r->delta_tracker();
    if (rowset_id >= 0 ? r->id() == rowset_id
                       : (t.num_redo_files() > 0 || t.dms_entries() > 0) &&
                             (target == nullptr ||
                              t.redo_file_bytes() > target->delta_tracker()->redo_file_bytes())) {
      target = r;
    }
  }
  if (target == nullptr) return absl::OkStatus();
  return CompactRowSets(ReserveRowSets({target}));
}

absl::Status Tablet::FlushDeltas() {
  std::shared_ptr<const Components> c = GetComponents();
  std::vector<std::shared_ptr<DiskRowSet>> mine = ReserveRowSets(c->drs);
  absl::Status s;
  bool flushed = false;
  for (const auto& r : mine) {
    if (r->delta_tracker()->dms_entries() == 0) continue;
    s = r->delta_tracker()->FlushDMS();
    if (!s.ok()) break;
    flushed = true;
  }
  ReleaseRowSets(mine);
  BASALT_RETURN_IF_ERROR(s);
  return flushed ? PersistSuperBlock({}) : absl::OkStatus();
}

absl::Status Tablet::MinorCompactDeltas() {
  std::shared_ptr<const Components> c = GetComponents();
  std::vector<std::shared_ptr<DiskRowSet>> mine = ReserveRowSets(c->drs);
  absl::Status s;
  std::vector<BlockId> obsolete;
  for (const auto& r : mine) {
    if (r->delta_tracker()->num_redo_files() < 2) continue;
    s = r->delta_tracker()->MinorCompactRedoFiles();
    for (BlockId id : r->delta_tracker()->TakeObsoleteBlocks()) obsolete.push_back(id);
    if (!s.ok()) break;
  }
  ReleaseRowSets(mine);
  BASALT_RETURN_IF_ERROR(s);
  return obsolete.empty() ? absl::OkStatus() : PersistSuperBlock(std::move(obsolete));
}

absl::Status Tablet::AlterSchema(const Schema& new_schema) {
  absl::MutexLock fl(&flush_mu_);
  absl::MutexLock wl(&write_mu_);
  std::shared_ptr<const Components> c = GetComponents();
  const Schema& old = *c->schema;
  if (new_schema.num_key_columns() != old.num_key_columns()) {
    return absl::InvalidArgumentError("AlterSchema cannot change the primary key");
  }
  for (int i = 0; i < new_schema.num_columns(); ++i) {
    int idx = old.find_column_by_id(new_schema.column_id(i));
    if (idx < 0) continue;
    if (old.column(idx).type() != new_schema.column(i).type() ||
        (i < new_schema.num_key_columns()) != (idx < old.num_key_columns())) {
      return absl::InvalidArgumentError(
          StrCat("AlterSchema cannot change the type or key membership of column ",
                 new_schema.column(i).name()));
    }
  }
  auto next = std::make_shared<Components>(*c);
  next->schema = std::make_shared<const Schema>(new_schema);
  SetComponents(next);
  // Flush with writes blocked: the frozen MRS keeps the old schema, the new MRS gets the new one,
  // and no write can reach the old-schema MRS meanwhile.
  if (std::optional<CompactionJob> job = PlanFlush()) {
    BASALT_RETURN_IF_ERROR(RunCompactionWritesBlocked(&*job));
    flushes_++;
  }
  c = GetComponents();
  if (!c->mrs->mrs->schema().Equals(new_schema)) {
    auto fresh = std::make_shared<Components>(*c);
    fresh->mrs =
        std::make_shared<MemStore>(std::make_shared<MemRowSet>(next_mrs_id_++, new_schema));
    SetComponents(fresh);
  }
  return PersistSuperBlock({});
}

std::vector<CompactionCandidate> Tablet::CompactionCandidates(
    const std::vector<std::shared_ptr<DiskRowSet>>& rowsets) const {
  std::vector<CompactionCandidate> out;
  for (const auto& r : rowsets) {
    const DeltaTracker& t = *r->delta_tracker();
    out.push_back({r->id(), r->min_key(), r->max_key(),
                   r->base_size_bytes() + t.redo_file_bytes() + t.undo_file_bytes()});
  }
  return out;
}

double Tablet::MergeCompactionQuality() const {
  std::shared_ptr<const Components> c = GetComponents();
  std::vector<std::shared_ptr<DiskRowSet>> free;
  {
    absl::MutexLock l(&busy_mu_);
    for (const auto& r : c->drs) {
      if (!busy_.contains(r->id())) free.push_back(r);
    }
  }
  return BudgetedCompactionPolicy(CompactionPolicyOptions::FromFlags())
      .PickRowSets(CompactionCandidates(free))
      .quality;
}

size_t Tablet::InMemoryBytes(const Components& c) {
  size_t bytes = 0;
  for (const auto& store : {c.mrs, c.frozen}) {
    if (store != nullptr) bytes += store->mrs->memory_footprint();
  }
  for (const auto& r : c.drs) bytes += r->delta_tracker()->dms_memory();
  return bytes;
}

void Tablet::ReportMemory(const Components& c) {
  if (memory_consumer_ != nullptr) memory_consumer_->Set(static_cast<int64_t>(InMemoryBytes(c)));
}

// ---- Metadata -----------------------------------------------------------------------------------

int64_t Tablet::DurableOpIndex() const {
  // Read the applied index first: everything up to it was applied before the in-memory stores
  // are inspected, so an op they no longer hold is durable.
  int64_t applied = last_applied_op_index_.load();
  std::shared_ptr<const Components> c = GetComponents();
  int64_t min_mem = kNoOpIndex;
  for (const auto& store : {c->mrs, c->frozen}) {
    if (store != nullptr) min_mem = std::min(min_mem, store->min_op_index.load());
  }
  for (const auto& r : c->drs) {
    min_mem = std::min(min_mem, r->delta_tracker()->min_unflushed_op_index());
  }
  if (min_mem == kNoOpIndex) return applied;
  // Without a WAL (op index 0) nothing is retained.
  return std::max<int64_t>(0, std::min(applied, min_mem - 1));
}

void Tablet::Fail(const absl::Status& error) {
  absl::MutexLock l(&failure_mu_);
  if (failure_.ok()) failure_ = error.ok() ? absl::InternalError("failed with OK") : error;
}

absl::Status Tablet::health() const {
  absl::MutexLock l(&failure_mu_);
  return failure_;
}

void Tablet::SetBeforeSuperBlockWrite(std::function<absl::Status(int64_t)> hook) {
  absl::MutexLock l(&metadata_mu_);
  before_superblock_write_ = std::move(hook);
}

absl::Status Tablet::RefuseIfFailed() const {
  absl::Status failed = health();
  if (failed.ok()) return failed;
  return absl::Status(failed.code(),
                      StrCat("tablet ", tablet_id_, " failed; not persisting: ", failed.message()));
}

absl::Status Tablet::PersistSuperBlock(std::vector<BlockId> orphans) {
  absl::MutexLock l(&metadata_mu_);
  // Nothing of a failed tablet becomes durable: its memory may hold part of an op (or worse), and
  // the replica's log still holds every op a restart needs. Blocks written meanwhile are left to
  // the block GC.
  BASALT_RETURN_IF_ERROR(RefuseIfFailed());
  std::shared_ptr<const Components> c = GetComponents();
  TabletSuperBlock sb;
  sb.tablet_id = tablet_id_;
  sb.schema = *c->schema;
  for (const auto& r : c->drs) sb.rowsets.push_back(r->CurrentMetadata());
  sb.next_rowset_id = next_rowset_id_.load();
  sb.durable_op_index = DurableOpIndex();
  sb.max_durable_timestamp = HybridTime(last_applied_ts_.load());
  // Loaded after the components: at least the mark of every GC those rowsets reflect.
  sb.history_gc_mark = history_gc_mark();
  for (BlockId id : orphans) pending_orphans_.push_back(id);
  sb.orphaned_blocks = pending_orphans_;
  if (before_superblock_write_) {
    BASALT_RETURN_IF_ERROR(before_superblock_write_(sb.durable_op_index));
  }
  sb.version = static_cast<uint64_t>(++superblock_version_);
  BASALT_RETURN_IF_ERROR(WriteSuperBlock(options_.env, options_.superblock_path, sb));
  if (sb.durable_op_index > persisted_durable_op_index_.load()) {
    persisted_durable_op_index_.store(sb.durable_op_index);
  }
  // Durable: nothing refers to the orphans any more. Readers that still hold the old rowsets keep
  // their open files.
  for (BlockId id : pending_orphans_) {
    absl::Status s = options_.block_manager->DeleteBlock(id);
    if (!s.ok() && !absl::IsNotFound(s))
      LOG(WARNING) << "deleting block " << id.ToString() << ": " << s;
  }
  pending_orphans_.clear();
  return absl::OkStatus();
}

TabletStats Tablet::GetStats() const {
  std::shared_ptr<const Components> c = GetComponents();
  TabletStats st;
  for (const auto& store : {c->mrs, c->frozen}) {
    if (store == nullptr) continue;
    st.mrs_bytes += store->mrs->memory_footprint();
    st.mrs_rows += store->mrs->entry_count();
    HybridTime t = store->mrs->min_timestamp();
    if (t.is_valid() && (!st.mrs_oldest.is_valid() || t < st.mrs_oldest)) st.mrs_oldest = t;
  }
  for (const auto& r : c->drs) {
    const DeltaTracker& t = *r->delta_tracker();
    st.dms_bytes += t.dms_memory();
    const uint64_t redo = t.redo_file_bytes();
    const uint64_t undo = t.undo_file_bytes();
    st.on_disk_bytes += r->base_size_bytes() + redo + undo;
    st.redo_bytes += redo;
    st.undo_bytes += undo;
    HybridTime d = t.dms_min_timestamp();
    if (d.is_valid() && (!st.dms_oldest.is_valid() || d < st.dms_oldest)) st.dms_oldest = d;
    st.max_redo_files = std::max(st.max_redo_files, t.num_redo_files());
    if (r->base_size_bytes() > 0) {
      st.max_redo_ratio =
          std::max(st.max_redo_ratio, static_cast<double>(redo) / r->base_size_bytes());
    }
  }
  st.num_rowsets = static_cast<int>(c->drs.size());
  st.flushes = flushes_.load();
  st.compactions = compactions_.load();
  return st;
}

std::vector<RowSetMetadata> Tablet::RowSetsForTests() const {
  std::vector<RowSetMetadata> out;
  for (const auto& r : GetComponents()->drs) out.push_back(r->CurrentMetadata());
  return out;
}

}  // namespace basalt
