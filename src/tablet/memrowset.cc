#include "tablet/memrowset.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <tuple>

#include <glog/logging.h>

#include "common/bitmap.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/row_changelist.h"

namespace basalt {

namespace {

// The MRS arena starts small (many tablets have small MRSs) and grows to 8 MiB blocks, which are
// huge-page backed: page faults on fresh arena memory bound the insert rate.
constexpr size_t kRowArenaInitialBlockSize = 16 * 1024;
constexpr size_t kRowArenaMaxBlockSize = 8 * 1024 * 1024;

bool HasNullableColumn(const Schema& schema) {
  for (int i = 0; i < schema.num_columns(); ++i) {
    if (schema.column(i).is_nullable()) return true;
  }
  return false;
}

// Only absl::int128 cells (DECIMAL128) need more than 8 (Schema::ComputeLayout).
size_t RowAlignment(const Schema& schema) {
  for (int i = 0; i < schema.num_columns(); ++i) {
    if (schema.column(i).type_info().physical_type() == PhysicalType::kInt128) {
      return kRowAlignment;
    }
  }
  return alignof(MRSRow);
}

}  // namespace

const uint8_t MRSRow::kNoNulls[(kMaxColumns + 7) / 8] = {};

MemRowSet::MemRowSet(int64_t mrs_id, const Schema& schema)
    : id_(mrs_id),
      schema_(schema),
      null_bitmap_size_(HasNullableColumn(schema) ? BitmapSize(schema.num_columns()) : 0),
      row_alignment_(RowAlignment(schema)),
      arena_(kRowArenaInitialBlockSize, kRowArenaMaxBlockSize, /*huge_pages=*/true),
      tree_(&arena_) {
  CHECK_GT(schema_.num_key_columns(), 0);
  // MRSRow keeps 16-bit offsets (kMaxColumns cells of at most 16 bytes fit easily).
  CHECK_LT(schema_.fixed_row_size() + null_bitmap_size_, size_t{MRSRow::kNoBitmap});
  for (int i = 0; i < schema_.num_columns(); ++i) {
    if (schema_.column(i).type_info().is_variable_length()) varlen_columns_.push_back(i);
  }
  footprint_.store(arena_.MemoryUsage(), std::memory_order_relaxed);
}

void MemRowSet::NoteWrite(HybridTime ts) {
  if (ts.value() < min_ts_.load(std::memory_order_relaxed)) {
    min_ts_.store(ts.value(), std::memory_order_relaxed);
  }
  // The tails map is small next to the arena: only rows with mutations are in it.
  footprint_.store(arena_.MemoryUsage() + tails_.capacity() * (sizeof(*tails_.begin()) + 1),
                   std::memory_order_relaxed);
}

MRSRow* MemRowSet::NewRow(HybridTime ts, std::string_view key, const uint8_t* row_data,
                          const uint8_t* null_bitmap) {
  const size_t fixed = schema_.fixed_row_size();
  const size_t key_offset = fixed + null_bitmap_size_;
  const size_t size = sizeof(MRSRow) + key_offset + key.size();
  char* mem;
  if (row_alignment_ == alignof(MRSRow)) {
    mem = static_cast<char*>(arena_.AllocateAligned(size, alignof(MRSRow)));
  } else {
    // The 24-byte header starts 8 bytes into a 16-byte aligned block: the data after it is
    // 16-byte aligned.
    static_assert(sizeof(MRSRow) % kRowAlignment == kRowAlignment - 8);
    mem = static_cast<char*>(arena_.AllocateAligned(size + 8, kRowAlignment)) + 8;
  }
  const uint16_t bitmap_offset =
      null_bitmap_size_ == 0 ? MRSRow::kNoBitmap : static_cast<uint16_t>(fixed);
  auto* row = new (mem) MRSRow(ts, bitmap_offset, static_cast<uint16_t>(key_offset),
                               static_cast<uint32_t>(key.size()));
  uint8_t* data = row->mutable_row_data();
  DCHECK_EQ(reinterpret_cast<uintptr_t>(data) % row_alignment_, 0u);
  std::memcpy(data, row_data, fixed);
  if (null_bitmap_size_ > 0) {
    if (null_bitmap != nullptr) {
      std::memcpy(data + fixed, null_bitmap, null_bitmap_size_);
    } else {
      std::memset(data + fixed, 0, null_bitmap_size_);
    }
  }
  std::memcpy(data + key_offset, key.data(), key.size());
  if (!varlen_columns_.empty()) {
    CopyIndirectCells(data, {reinterpret_cast<const char*>(data + key_offset), key.size()});
  }
  return row;
}

void MemRowSet::CopyIndirectCells(uint8_t* data, std::string_view key) {
  const uint8_t* nulls = null_bitmap_size_ == 0 ? nullptr : data + schema_.fixed_row_size();
  // A string key column's bytes are in the encoded key verbatim unless it holds a 0x00 byte
  // (docs/keys.md): its cell then points there, into the row's own key copy, instead of at a
  // second copy of its own. Time series keys are mostly strings (tags), so this is most of
  // what such rows would copy.
  size_t key_pos = 0;
  for (int i = 0; i < schema_.num_key_columns(); ++i) {
    const TypeInfo& type = schema_.column(i).type_info();
    if (!type.is_variable_length()) {
      key_pos += type.size();
      continue;
    }
    uint8_t* cell = data + schema_.column_offset(i);
    std::string_view s;
    std::memcpy(&s, cell, sizeof(s));
    const bool last = i + 1 == schema_.num_key_columns();
    const bool verbatim = s.empty() || std::memchr(s.data(), '\0', s.size()) == nullptr;
    if (verbatim && key_pos + s.size() <= key.size() &&
        std::memcmp(key.data() + key_pos, s.data(), s.size()) == 0) {
      s = key.substr(key_pos, s.size());
      key_pos += s.size() + (last ? 0 : 2);  // The value, then its 0x00 0x00 terminator.
    } else {
      // Escaped in the key (or a key that does not match the row: never for rows the tablet
      // encodes itself): a copy of its own, and the key columns after it copy theirs too.
      key_pos = key.size() + 1;
      s = arena_.AddString(s);
    }
    std::memcpy(cell, &s, sizeof(s));
  }
  for (int i : varlen_columns_) {
    if (i < schema_.num_key_columns()) continue;
    if (nulls != nullptr && BitmapTest(nulls, i)) continue;
    uint8_t* cell = data + schema_.column_offset(i);
    std::string_view s;
    std::memcpy(&s, cell, sizeof(s));
    s = arena_.AddString(s);
    std::memcpy(cell, &s, sizeof(s));
  }
}

absl::Status MemRowSet::Insert(HybridTime ts, const uint8_t* row_data, const uint8_t* null_bitmap) {
  return Insert(ts, row_data, null_bitmap, EncodeKey(schema_, row_data));
}

absl::Status MemRowSet::Insert(HybridTime ts, const uint8_t* row_data, const uint8_t* null_bitmap,
                               std::string_view key) {
  DCHECK_EQ(key, EncodeKey(schema_, row_data));
  if (null_bitmap != nullptr) {
    for (int i = 0; i < schema_.num_columns(); ++i) {
      if (BitmapTest(null_bitmap, i) && !schema_.column(i).is_nullable()) {
        return absl::InvalidArgumentError(
            StrCat("NULL in NOT NULL column ", schema_.column(i).name()));
      }
    }
  }
  MRSRow* row;
  bool inserted;
  if (frozen()) {
    // A frozen MRS takes no new keys, but a deleted row's key is reinserted in place: it must
    // stay in this rowset, or the flush would write a second row with the same key.
    row = tree_.Find(key);
    if (row == nullptr) {
      return absl::FailedPreconditionError(StrCat("MemRowSet ", id_, " is frozen for flush"));
    }
    inserted = false;
  } else {
    std::tie(row, inserted) =
        tree_.InsertIfAbsent(key, [&] { return NewRow(ts, key, row_data, null_bitmap); });
  }
  if (!inserted) {
    if (IsLive(row, nullptr)) {
      return absl::AlreadyExistsError("key already present");
    }
    RowChangeListEncoder enc(&scratch_);
    enc.EncodeReinsert(schema_, row_data, null_bitmap);
    // The REINSERT carries copies of the values (strings included) in its bytes.
    AppendMutation(row, ts, scratch_);
  }
  NoteWrite(ts);
  return absl::OkStatus();
}

absl::Status MemRowSet::ValidateMutation(std::string_view changelist) const {
  absl::Status s = ValidateRowChangeList(schema_, changelist);
  if (!s.ok()) return absl::InvalidArgumentError(s.message());
  RowChangeListDecoder dec(changelist);
  CHECK(dec.Init().ok());
  if (dec.is_reinsert()) {
    return absl::InvalidArgumentError("MutateRow takes UPDATE or DELETE, not REINSERT");
  }
  return absl::OkStatus();
}

absl::Status MemRowSet::MutateRow(HybridTime ts, std::string_view key,
                                  std::string_view changelist) {
  BASALT_RETURN_IF_ERROR(ValidateMutation(changelist));
  MRSRow* row = tree_.Find(key);
  if (row == nullptr || !IsLive(row, nullptr)) return absl::NotFoundError("key not found");
  AppendMutation(row, ts, changelist);
  NoteWrite(ts);
  return absl::OkStatus();
}

void MemRowSet::AppendMutation(MRSRow* row, HybridTime ts, std::string_view changelist) {
  void* mem = arena_.AllocateAligned(sizeof(Mutation) + changelist.size(), alignof(Mutation));
  auto* m = new (mem) Mutation(ts, static_cast<uint32_t>(changelist.size()));
  std::memcpy(reinterpret_cast<char*>(m + 1), changelist.data(), changelist.size());
  // Publish: the mutation is complete before the release store that links it.
  auto [tail, first] = tails_.try_emplace(row, m);
  if (first) {
    row->head_.store(m, std::memory_order_release);
  } else {
    tail->second->next_.store(m, std::memory_order_release);
    tail->second = m;
  }
}

bool MemRowSet::IsLive(const MRSRow* row, const MvccSnapshot* snap) {
  if (snap != nullptr && !snap->IsCommitted(row->insert_timestamp())) return false;
  bool live = true;
  for (const Mutation* m = row->redo_head(); m != nullptr; m = m->next()) {
    if (snap != nullptr && !snap->IsCommitted(m->timestamp())) continue;
    // The first byte is the change type (row_changelist.h); validated when appended.
    auto type = static_cast<RowChangeType>(m->changelist()[0]);
    if (type == RowChangeType::kDelete) live = false;
    if (type == RowChangeType::kReinsert) live = true;
  }
  return live;
}

bool MemRowSet::CheckRowPresent(std::string_view key, const MvccSnapshot& snap) const {
  const MRSRow* row = tree_.Find(key);
  return row != nullptr && IsLive(row, &snap);
}

bool MemRowSet::CheckRowPresentLatest(std::string_view key) const {
  const MRSRow* row = tree_.Find(key);
  return row != nullptr && IsLive(row, nullptr);
}

std::unique_ptr<MemRowSetIterator> MemRowSet::NewIterator(const Schema* projection,
                                                          MvccSnapshot snap,
                                                          EncodedKeyRange range) const {
  return std::make_unique<MemRowSetIterator>(this, projection, std::move(snap), std::move(range));
}

// ---- MemRowSetIterator --------------------------------------------------------------------------

MemRowSetIterator::MemRowSetIterator(const MemRowSet* mrs, const Schema* projection,
                                     MvccSnapshot snap, EncodedKeyRange range)
    : mrs_(mrs),
      projection_(projection),
      snap_(std::move(snap)),
      range_(std::move(range)),
      iter_(&mrs->tree()) {}

absl::Status MemRowSetIterator::Init() {
  const Schema& base = mrs_->schema();
  cols_.clear();
  defaults_.assign(projection_->num_columns(), Datum());
  for (int j = 0; j < projection_->num_columns(); ++j) {
    const ColumnSchema& pcol = projection_->column(j);
    ColumnId id = projection_->column_id(j);
    ProjectedColumn pc{-1, 0, pcol.type_info().size(), pcol.is_nullable(), nullptr};
    int idx = base.find_column_by_id(id);
    if (idx >= 0) {
      if (base.column(idx).type() != pcol.type()) {
        return absl::InvalidArgumentError(StrCat("column ", pcol.name(), " has type ",
                                                 pcol.TypeToString(), " in the projection but ",
                                                 base.column(idx).TypeToString(), " in the MRS"));
      }
      pc.mrs_idx = idx;
      pc.offset = base.column_offset(idx);
    } else if (pcol.default_value().has_value() && !pcol.default_value()->is_null()) {
      defaults_[j] = *pcol.default_value();
      pc.default_cell = defaults_[j].cell();
    } else if (!pcol.is_nullable()) {
      return absl::InvalidArgumentError(
          StrCat("projected column ", pcol.name(), " is not in the MRS and has no default"));
    }
    cols_.push_back(pc);
  }
  // Predicates name the projection's (current) columns; the MRS's own columns are matched by
  // id, as for the projection (a renamed or re-added column keeps or changes its id).
  prefilter_.clear();
  for (const ColumnPredicate& p : prefilter_predicates_) {
    const int j = projection_->find_column(p.column().name());
    if (j < 0 || cols_[j].mrs_idx < 0 || projection_->column(j).type() != p.column().type()) {
      continue;
    }
    prefilter_.push_back({&p, cols_[j].mrs_idx, cols_[j].offset});
  }
  if (range_.lower.empty()) {
    iter_.SeekToStart();
  } else {
    iter_.Seek(range_.lower);
  }
  done_ = !iter_.Valid();
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status MemRowSetIterator::CheckBlocks(absl::Span<ColumnBlock* const> blocks,
                                            size_t max_rows) const {
  if (!initialized_) return absl::FailedPreconditionError("iterator not initialized");
  if (blocks.size() != cols_.size()) {
    return absl::InvalidArgumentError(
        StrCat(blocks.size(), " column blocks for ", cols_.size(), " projected columns"));
  }
  for (size_t j = 0; j < blocks.size(); ++j) {
    const ColumnSchema& pcol = projection_->column(static_cast<int>(j));
    const ColumnBlock* b = blocks[j];
    if (b->type != pcol.type() || b->capacity < max_rows ||
        (pcol.is_nullable() && b->null_bitmap == nullptr)) {
      return absl::InvalidArgumentError(StrCat("column block ", j, " does not fit column ",
                                               pcol.ToString(), " and ", max_rows, " rows"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> MemRowSetIterator::NextBlock(absl::Span<ColumnBlock* const> blocks,
                                                    size_t max_rows) {
  BASALT_RETURN_IF_ERROR(CheckBlocks(blocks, max_rows));
  size_t n = 0;
  const bool has_upper = !range_.upper.empty();
  while (n < max_rows && iter_.Valid()) {
    // Process the buffered leaf in a tight loop.
    const MRSRow* const* rows = iter_.remaining();
    size_t avail = iter_.num_remaining();
    size_t used = 0;
    for (; used < avail && n < max_rows; ++used) {
      // Rows sit in the arena in insert order, not key order: a scan in key order misses the
      // cache on nearly every row unless it asks for the rows a few entries ahead.
      if (used + kPrefetchRows < avail) Prefetch(rows[used + kPrefetchRows]);
      const MRSRow* row = rows[used];
      if (has_upper && row->key() >= range_.upper) {
        done_ = true;
        return n;
      }
      ++rows_examined_;
      if (ProjectRow(row, blocks, n)) ++n;
    }
    iter_.Skip(used);
  }
  if (!iter_.Valid()) done_ = true;
  return n;
}

void MemRowSetIterator::CopyBaseRow(const MRSRow* row, absl::Span<ColumnBlock* const> blocks,
                                    size_t out) {
  const uint8_t* data = row->row_data();
  const uint8_t* nulls = row->null_bitmap();
  for (size_t j = 0; j < cols_.size(); ++j) {
    const ProjectedColumn& pc = cols_[j];
    ColumnBlock* b = blocks[j];
    bool is_null;
    if (pc.mrs_idx >= 0) {
      is_null = BitmapTest(nulls, pc.mrs_idx);
      if (!is_null) std::memcpy(b->cell(out), data + pc.offset, pc.cell_size);
    } else {
      is_null = pc.default_cell == nullptr;
      if (!is_null) std::memcpy(b->cell(out), pc.default_cell, pc.cell_size);
    }
    if (b->null_bitmap != nullptr) b->SetNull(out, is_null);
  }
}

void MemRowSetIterator::ApplyChanges(std::string_view changelist,
                                     absl::Span<ColumnBlock* const> blocks, size_t out) {
  RowChangeListDecoder dec(changelist);
  CHECK(dec.Init().ok());  // Validated when appended.
  while (dec.HasNext()) {
    ColumnUpdate u;
    CHECK(dec.ReadNext(&u).ok());
    // A linear search on the few columns of most projections (Schema::find_column_by_id).
    const int j = projection_->find_column_by_id(u.column_id);
    if (j < 0) continue;
    ColumnBlock* b = blocks[j];
    if (b->null_bitmap != nullptr) b->SetNull(out, u.is_null);
    if (u.is_null) continue;
    if (GetTypeInfo(b->type).is_variable_length()) {
      std::memcpy(b->cell(out), &u.value, sizeof(u.value));
    } else {
      std::memcpy(b->cell(out), u.value.data(), u.value.size());
    }
  }
}

void MemRowSetIterator::Prefetch(const MRSRow* row) const {
  __builtin_prefetch(row);
  const char* data = reinterpret_cast<const char*>(row->row_data());
  for (const Prefilter& f : prefilter_) __builtin_prefetch(data + f.offset);
}

bool MemRowSetIterator::PassesPrefilter(const MRSRow* row) const {
  const uint8_t* data = row->row_data();
  const uint8_t* nulls = row->null_bitmap();
  for (const Prefilter& f : prefilter_) {
    const void* cell = BitmapTest(nulls, f.mrs_idx) ? nullptr : data + f.offset;
    if (!f.predicate->Evaluate(cell)) return false;
  }
  return true;
}

bool MemRowSetIterator::ProjectRow(const MRSRow* row, absl::Span<ColumnBlock* const> blocks,
                                   size_t out) {
  if (!snap_.IsCommitted(row->insert_timestamp())) return false;
  // Without mutations the base cells are the row's state at any snapshot: a mutation appended
  // after this load belongs to an op the snapshot does not contain.
  if (!prefilter_.empty() && row->redo_head() == nullptr && !PassesPrefilter(row)) return false;
  CopyBaseRow(row, blocks, out);
  bool live = true;
  for (const Mutation* m = row->redo_head(); m != nullptr; m = m->next()) {
    if (!snap_.IsCommitted(m->timestamp())) continue;
    std::string_view cl = m->changelist();
    auto type = static_cast<RowChangeType>(cl[0]);
    if (type == RowChangeType::kDelete) {
      live = false;
      continue;
    }
    if (type == RowChangeType::kReinsert) live = true;
    ApplyChanges(cl, blocks, out);
  }
  return live;
}

}  // namespace basalt
