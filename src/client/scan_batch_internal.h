#pragma once

// The state behind a ScanBatch: one scan response and validated views of its columns. Private to
// src/client.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/scan_batch.h"
#include "client/schema.h"
#include "common/schema.h"

namespace basalt::pb {
class ColumnarRowBlockPB;
}  // namespace basalt::pb

namespace basalt::client::internal {

struct alignas(16) AlignedChunk {
  unsigned char bytes[16];
};

struct ScanBatchData {
  ScanBatchData();
  ~ScanBatchData();

  // Takes `block` (the columnar data of a scan response against `projection`), validates it and
  // exposes at most `max_rows` of its rows. DATA_LOSS naming the column for a block that does
  // not match the projection: wrong column count, data or offsets of the wrong size, offsets out
  // of order or past the data, a null bitmap too short, NULL in a NOT NULL column. On error the
  // batch is empty.
  absl::Status Reset(const Schema& projection, std::unique_ptr<pb::ColumnarRowBlockPB> block,
                     int64_t max_rows);
  void Clear();

  Schema projection;
  const basalt::Schema* schema = nullptr;  // Internal schema of `projection`.
  std::unique_ptr<pb::ColumnarRowBlockPB> block;
  int64_t num_rows = 0;
  std::vector<ScanBatch::ColumnView> columns;
  // Copies of buffers that were not aligned for their cell type (rare: tiny inline strings).
  std::vector<std::unique_ptr<AlignedChunk[]>> realigned;

 private:
  absl::Status ValidateColumn(int idx, int64_t rows);
  const void* Aligned(const std::string& bytes, size_t alignment);
};

}  // namespace basalt::client::internal
