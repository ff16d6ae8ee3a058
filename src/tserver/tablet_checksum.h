#pragma once

// The replica checksum of docs/cluster.md "Checksum": the sum (mod 2^64) over rows of crc32c of
// the row's cells in schema order, each a null byte (1 = NULL) followed, if not NULL, by the
// cell's little-endian bytes (variable-length: a uint32 length and the bytes). Order-independent,
// so replicas agree whatever their rowset layout.

#include <cstdint>

#include "absl/status/status.h"
#include "tablet/mvcc.h"

namespace basalt {

class Tablet;

struct TabletChecksum {
  uint64_t checksum = 0;
  uint64_t num_rows = 0;
};

// Scans every column of `tablet` at `snap`. Errors of the tablet's iterators.
absl::StatusOr<TabletChecksum> ChecksumTablet(const Tablet& tablet, const MvccSnapshot& snap);

}  // namespace basalt
