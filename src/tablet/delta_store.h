#pragma once

// Delta stores: where mutations of DiskRowSet base rows live (DESIGN.md section 4; docs/tablet.md
// "Deltas").
//
// A DiskRowSet's base data is immutable. Its rows are addressed by ordinal (rowid_t). Every later
// mutation of a base row is a REDO delta; every earlier state a reader at a past snapshot may need
// is an UNDO delta. Both are RowChangeLists (row_changelist.h) keyed by (row ordinal, timestamp):
//
//   REDO at ts: the mutation the op at ts applied (UPDATE, DELETE, or REINSERT of a deleted row).
//   UNDO at ts: what turns the row back into its state before the op at ts: an UPDATE with the
//               old values, a DELETE (the op inserted the row), or a REINSERT carrying every
//               non-key column (the op deleted the row).
//
// Invariant of one DiskRowSet: every UNDO timestamp is below every REDO timestamp (the base is the
// row state at the snapshot the rowset was written at). A reader at snapshot S applies the UNDOs
// whose timestamps S does not contain, newest first, then the REDOs S contains, oldest first
// (delta_applier.h).
//
// Stores: DeltaMemStore (in memory, takes new REDOs), DeltaFile (immutable REDO or UNDO file).

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/arena.h"
#include "common/hybrid_clock.h"

namespace basalt {

// A row's ordinal within one DiskRowSet (rows are numbered from 0 in key order).
using rowid_t = uint32_t;

enum class DeltaType : uint8_t {
  kRedo = 0,
  kUndo = 1,
};

std::string_view DeltaTypeName(DeltaType type);

// The order of entries in every delta store: by row, then by timestamp.
struct DeltaKey {
  rowid_t row = 0;
  HybridTime ts;
  friend auto operator<=>(const DeltaKey&, const DeltaKey&) = default;
};

// The end (exclusive, up to 2^32) of rows [start, start + n), without overflow.
inline uint64_t RowRangeEnd(rowid_t start, size_t n) {
  constexpr uint64_t kRowLimit = uint64_t{1} << 32;
  return n >= kRowLimit - start ? kRowLimit : uint64_t{start} + n;
}

// One delta: `changes` is a RowChangeList, borrowed (see DeltaStore::CollectEntries).
struct DeltaEntry {
  DeltaKey key;
  std::string_view changes;
};

// A source of deltas of one DiskRowSet. Implementations are thread-safe for readers.
class DeltaStore {
 public:
  virtual ~DeltaStore() = default;

  virtual DeltaType type() const = 0;

  // Appends every entry of rows [start, start + n) to *out, in DeltaKey order. The change bytes
  // either point into memory that lives as long as the store or are copied into `arena`.
  // DATA_LOSS (naming the store) for corrupt data.
  virtual absl::Status CollectEntries(rowid_t start, size_t n, Arena* arena,
                                      std::vector<DeltaEntry>* out) const = 0;

  virtual int64_t num_entries() const = 0;
  // Bytes in memory (DeltaMemStore) or on disk (DeltaFile).
  virtual uint64_t size_bytes() const = 0;
  // Smallest and largest timestamps held (HybridTime::kInvalid while empty).
  virtual HybridTime min_timestamp() const = 0;
  virtual HybridTime max_timestamp() const = 0;

  // "DMS 7" / "REDO file <block id>", for errors and logs.
  virtual std::string ToString() const = 0;
};

// Checks the framing of a RowChangeList as RowChangeListDecoder sees it (type byte, every entry
// complete). DATA_LOSS with the offset otherwise. Schema-free: delta stores keep lists of columns
// that may since have been dropped.
absl::Status CheckRowChangeListFraming(std::string_view changes);

// Combines two REDOs of one row at the same timestamp (two ops of one write batch on one row)
// into one list with the same effect, written to *out: a DELETE wins; anything then REINSERT is
// the REINSERT; UPDATE or REINSERT then UPDATE keeps the first type with the later value of each
// column. INVALID_ARGUMENT for an UPDATE after a DELETE (not possible for one row), DATA_LOSS for
// bad framing.
absl::Status MergeSameTimestampRedos(std::string_view older, std::string_view newer,
                                     std::string* out);

}  // namespace basalt
