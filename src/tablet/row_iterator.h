#pragma once

// The columnar iterator interface every rowset scan implements, and what a scan asks for.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/column_block.h"
#include "common/column_predicate.h"

namespace basalt {

// Optional encoded-key bounds of a scan: [lower, upper); empty means unbounded.
struct EncodedKeyRange {
  std::string lower;
  std::string upper;
};

// What a rowset scan returns: rows within `range` for which every predicate holds. Predicates
// name columns of the scan's projection (by name: ColumnPredicate::column().name()).
struct ScanSpec {
  EncodedKeyRange range;
  std::vector<ColumnPredicate> predicates;
};

// A scan producing columnar batches of a projection, in key order unless documented otherwise.
//
// Lifecycle: Init() once, then NextBlock() while HasNext(). Not thread-safe (one per thread).
class RowBlockIterator {
 public:
  virtual ~RowBlockIterator() = default;

  virtual absl::Status Init() = 0;
  virtual bool HasNext() const = 0;
  // Fills rows [0, n) of `blocks` (one per projected column, in projection order, each with
  // capacity >= max_rows and a null bitmap if the column is nullable) and returns n. n may be 0
  // while HasNext() stays true (a batch whose rows were all filtered out). Variable-length cells
  // stay valid until the next call or the iterator's destruction, whichever comes first.
  virtual absl::StatusOr<size_t> NextBlock(absl::Span<ColumnBlock* const> blocks,
                                           size_t max_rows) = 0;
};

}  // namespace basalt
