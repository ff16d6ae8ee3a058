#pragma once

// Key bounds implied by a scan's predicates (docs/tablet.md, "Scans").
//
// A scan whose predicates fix the leading primary-key columns (equalities), and possibly bound
// the next one (a range or an IN list), can only match rows in one interval of encoded keys.
// Narrowing ScanSpec::range to it lets the tablet seek instead of filtering everything: the
// rowset interval tree drops rowsets outside it, the MemRowSet and each DiskRowSet's key index
// seek to it, and a single-key interval is looked up through the rowset's bloom filter. A point
// lookup by the full primary key goes from a filtered scan of the tablet to one seek per rowset
// that may hold the key.
//
// The narrowed range is always a superset of the matching rows, and the predicates stay in the
// spec and are still evaluated, so the narrowing only saves work and never changes a result.
// One exception: when equalities fix every key column, the range holds exactly the rows those
// equalities match, and they are dropped from the spec.
// Stateless functions; thread-safe.

#include "common/schema.h"
#include "tablet/row_iterator.h"

namespace basalt {

// Intersects spec->range with the key interval spec->predicates imply for `schema` (the tablet's
// schema; predicates name its columns). Predicates on non-key columns, or on key columns after
// the first one without an equality, do not narrow the range. When equalities fix the whole key,
// the equalities the range implies are removed from spec->predicates. REQUIRES: whoever reads
// the narrowed spec reads exactly spec->range.
void NarrowKeyRange(const Schema& schema, ScanSpec* spec);

// Whether `range` holds exactly one encoded key (upper == KeySuccessor(lower)): a point lookup.
bool IsSingleKeyRange(const EncodedKeyRange& range);

}  // namespace basalt
