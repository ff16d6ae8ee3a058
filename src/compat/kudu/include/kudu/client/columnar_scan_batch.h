#pragma once

// KuduColumnarScanBatch: one batch of a scan in columnar layout, filled by
// KuduScanner::NextBatch(KuduColumnarScanBatch*) after SetRowFormatFlags(COLUMNAR_LAYOUT).
//
// Layout (as Kudu's, in Apache Arrow's shape): a fixed-length column is NumRows() little-endian
// cells back to back (BOOL one byte; DECIMAL 4, 8 or 16 bytes by precision; NULL cells hold
// zeros); a variable-length column is NumRows() + 1 uint32 offsets into its data (none when the
// batch is empty); the non-null bitmap of a nullable column has bit i (LSB first) set when row i
// is not NULL. Everything handed out is valid until the next NextBatch into this batch or its
// destruction. Not thread-safe.

#include "kudu/client/stubs.h"
#include "kudu/util/kudu_export.h"
#include "kudu/util/status.h"

namespace kudu {

class Slice;

namespace client {

namespace internal {
struct Access;
}  // namespace internal

class KUDU_EXPORT KuduColumnarScanBatch {
 public:
  KuduColumnarScanBatch();
  ~KuduColumnarScanBatch();

  int NumRows() const;
  // InvalidArgument for an index out of range or a variable-length column.
  Status GetFixedLengthColumn(int idx, Slice* data) const;
  // InvalidArgument for an index out of range or a fixed-length column.
  Status GetVariableLengthColumn(int idx, Slice* offsets, Slice* data) const;
  // InvalidArgument for an index out of range or a column that is not nullable.
  Status GetNonNullBitmapForColumn(int idx, Slice* data) const;

 private:
  friend struct internal::Access;
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduColumnarScanBatch);
};

}  // namespace client
}  // namespace kudu
