#pragma once

// ScanBatch: one batch of scan results (Kudu's KuduScanBatch), filled by Scanner::NextBatch.
//
// Rows arrive columnar and are not copied: typed row access (Row(i).GetInt32(...)) and the
// columnar view (Column(j)) both read the response buffers in place. Everything handed out points
// into the batch and is valid until the next NextBatch into it or its destruction.
//
// Columnar view of column j (ColumnView):
//   - fixed-width types: `data` holds num_rows cells of cell_size bytes back to back, little-endian
//     (BOOL one byte 0/1; DECIMAL 4, 8 or 16 bytes by precision); NULL rows hold zero bytes;
//   - STRING, BINARY, VARCHAR: `offsets` holds num_rows + 1 offsets into `data`, value i being
//     data[offsets[i], offsets[i + 1]);
//   - `null_bitmap`: one bit per row, LSB first, set for NULL; nullptr when no row is NULL.
// `data` and `offsets` are aligned for their cell type.
//
// Not thread-safe; const methods may be called concurrently.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "client/export.h"
#include "client/schema.h"

namespace basalt::client {

namespace internal {
struct Access;
struct ScanBatchData;
}  // namespace internal

class BASALT_EXPORT ScanBatch {
 public:
  struct ColumnView {
    ColumnSchema::DataType type = ColumnSchema::INT32;
    size_t cell_size = 0;  // 0 for variable-length types.
    const void* data = nullptr;
    const uint32_t* offsets = nullptr;     // Variable-length types only.
    const uint8_t* null_bitmap = nullptr;  // nullptr when no row is NULL.
    bool IsNull(int64_t row) const {
      return null_bitmap != nullptr && ((null_bitmap[row >> 3] >> (row & 7)) & 1);
    }
    // REQUIRES: a variable-length column.
    std::string_view GetString(int64_t row) const {
      return std::string_view(static_cast<const char*>(data) + offsets[row],
                              offsets[row + 1] - offsets[row]);
    }
  };

  // One row of the batch. Getters are strictly typed like PartialRow's: INVALID_ARGUMENT for a
  // type mismatch or an index out of range, NOT_FOUND for an unknown name or a NULL cell.
  class BASALT_EXPORT RowPtr {
   public:
#define BASALT_ROW_PTR_GETTER(Name, CppType)                      \
  absl::Status Name(std::string_view column, CppType* out) const; \
  absl::Status Name(int column_idx, CppType* out) const;
    BASALT_ROW_PTR_GETTER(GetBool, bool)
    BASALT_ROW_PTR_GETTER(GetInt8, int8_t)
    BASALT_ROW_PTR_GETTER(GetInt16, int16_t)
    BASALT_ROW_PTR_GETTER(GetInt32, int32_t)
    BASALT_ROW_PTR_GETTER(GetInt64, int64_t)
    BASALT_ROW_PTR_GETTER(GetFloat, float)
    BASALT_ROW_PTR_GETTER(GetDouble, double)
    BASALT_ROW_PTR_GETTER(GetUnixTimeMicros, int64_t)
    BASALT_ROW_PTR_GETTER(GetDate, int32_t)
    BASALT_ROW_PTR_GETTER(GetUnscaledDecimal, int64_t)
    BASALT_ROW_PTR_GETTER(GetString, std::string_view)
    BASALT_ROW_PTR_GETTER(GetBinary, std::string_view)
#undef BASALT_ROW_PTR_GETTER
    // False for an unknown column or index.
    bool IsNull(std::string_view column) const;
    bool IsNull(int column_idx) const;
    // "(int32 key=1, string v=NULL)".
    std::string ToString() const;

   private:
    friend class ScanBatch;
    friend struct internal::Access;
    RowPtr(const internal::ScanBatchData* batch, int64_t row) : batch_(batch), row_(row) {}
    const internal::ScanBatchData* batch_;
    int64_t row_;
  };

  ScanBatch();
  ~ScanBatch();
  ScanBatch(const ScanBatch&) = delete;
  ScanBatch& operator=(const ScanBatch&) = delete;

  int64_t NumRows() const;
  // REQUIRES: 0 <= idx < NumRows().
  RowPtr Row(int64_t idx) const;
  // REQUIRES: 0 <= column_idx < projection_schema().num_columns().
  ColumnView Column(int column_idx) const;
  // The columns of the batch (the scanner's projection).
  const Schema& projection_schema() const;

 private:
  friend struct internal::Access;
  std::unique_ptr<internal::ScanBatchData> data_;
};

}  // namespace basalt::client
