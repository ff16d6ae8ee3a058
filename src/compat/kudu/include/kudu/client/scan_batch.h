#pragma once

// KuduScanBatch: one batch of scan results, filled by KuduScanner::NextBatch. Rows are read in
// place from the batch (no copies): a RowPtr, and every Slice a getter returns, is valid until
// the next NextBatch into this batch or its destruction.
//
//   for (KuduScanBatch::RowPtr row : batch) { int32_t k; KUDU_CHECK_OK(row.GetInt32("key", &k)); }
//
// Not thread-safe; const methods may be called concurrently.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>

#include "kudu/client/stubs.h"
#include "kudu/util/int128.h"
#include "kudu/util/kudu_export.h"
#include "kudu/util/slice.h"
#include "kudu/util/status.h"

namespace kudu {
namespace client {

namespace internal {
struct Access;
}  // namespace internal

class KuduSchema;

class KUDU_EXPORT KuduScanBatch {
 public:
  class RowPtr;
  class const_iterator;
  typedef RowPtr value_type;

  KuduScanBatch();
  ~KuduScanBatch();

  int NumRows() const;
  // REQUIRES: 0 <= idx < NumRows().
  KuduScanBatch::RowPtr Row(int idx) const;
  const_iterator begin() const;
  const_iterator end() const;
  // The columns of the rows (the scanner's projection); null before the first batch.
  const KuduSchema* projection_schema() const;
  // Kudu's row-wise wire buffers do not exist in Basalt (batches arrive columnar): both return
  // an empty slice.
  Slice direct_data() const;
  Slice indirect_data() const;

 private:
  friend struct internal::Access;
  class KUDU_NO_EXPORT Data;
  Data* data_;  // Owned.
  DISALLOW_COPY_AND_ASSIGN(KuduScanBatch);
};

// One row of a batch. Getters are typed like KuduPartialRow's: InvalidArgument for a type
// mismatch or an index out of range, NotFound for an unknown name or a NULL cell.
class KUDU_EXPORT KuduScanBatch::RowPtr {
 public:
  RowPtr() : batch_(nullptr), row_(0) {}
  const RowPtr* operator->() const { return this; }

  // False for an unknown column.
  bool IsNull(const Slice& col_name) const;
  bool IsNull(int col_idx) const;

  Status GetBool(const Slice& col_name, bool* val) const WARN_UNUSED_RESULT;
  Status GetInt8(const Slice& col_name, int8_t* val) const WARN_UNUSED_RESULT;
  Status GetInt16(const Slice& col_name, int16_t* val) const WARN_UNUSED_RESULT;
  Status GetInt32(const Slice& col_name, int32_t* val) const WARN_UNUSED_RESULT;
  Status GetInt64(const Slice& col_name, int64_t* val) const WARN_UNUSED_RESULT;
  Status GetUnixTimeMicros(const Slice& col_name,
                           int64_t* micros_since_utc_epoch) const WARN_UNUSED_RESULT;
  Status GetDate(const Slice& col_name, int32_t* days_since_unix_epoch) const WARN_UNUSED_RESULT;
  Status GetFloat(const Slice& col_name, float* val) const WARN_UNUSED_RESULT;
  Status GetDouble(const Slice& col_name, double* val) const WARN_UNUSED_RESULT;
  Status GetUnscaledDecimal(const Slice& col_name, int128_t* val) const WARN_UNUSED_RESULT;

  Status GetBool(int col_idx, bool* val) const WARN_UNUSED_RESULT;
  Status GetInt8(int col_idx, int8_t* val) const WARN_UNUSED_RESULT;
  Status GetInt16(int col_idx, int16_t* val) const WARN_UNUSED_RESULT;
  Status GetInt32(int col_idx, int32_t* val) const WARN_UNUSED_RESULT;
  Status GetInt64(int col_idx, int64_t* val) const WARN_UNUSED_RESULT;
  Status GetUnixTimeMicros(int col_idx, int64_t* micros_since_utc_epoch) const WARN_UNUSED_RESULT;
  Status GetDate(int col_idx, int32_t* days_since_unix_epoch) const WARN_UNUSED_RESULT;
  Status GetFloat(int col_idx, float* val) const WARN_UNUSED_RESULT;
  Status GetDouble(int col_idx, double* val) const WARN_UNUSED_RESULT;
  Status GetUnscaledDecimal(int col_idx, int128_t* val) const WARN_UNUSED_RESULT;

  Status GetString(const Slice& col_name, Slice* val) const WARN_UNUSED_RESULT;
  Status GetBinary(const Slice& col_name, Slice* val) const WARN_UNUSED_RESULT;
  Status GetVarchar(const Slice& col_name, Slice* val) const WARN_UNUSED_RESULT;
  Status GetString(int col_idx, Slice* val) const WARN_UNUSED_RESULT;
  Status GetBinary(int col_idx, Slice* val) const WARN_UNUSED_RESULT;
  Status GetVarchar(int col_idx, Slice* val) const WARN_UNUSED_RESULT;

  // The raw cell of a fixed-length column (little-endian, DECIMAL 4/8/16 bytes); nullptr for a
  // variable-length column (Basalt keeps no Slice per cell) or an index out of range.
  const void* cell(int col_idx) const;
  // "(int32 key=1, string v=NULL)".
  std::string ToString() const;

 private:
  friend class KuduScanBatch;
  RowPtr(const KuduScanBatch::Data* batch, int row) : batch_(batch), row_(row) {}
  const KuduScanBatch::Data* batch_;
  int row_;
};

class KUDU_EXPORT KuduScanBatch::const_iterator {
 public:
  typedef std::forward_iterator_tag iterator_category;
  typedef KuduScanBatch::RowPtr value_type;
  typedef std::ptrdiff_t difference_type;
  typedef KuduScanBatch::RowPtr pointer;
  typedef KuduScanBatch::RowPtr reference;

  ~const_iterator() {}
  KuduScanBatch::RowPtr operator*() const { return batch_->Row(idx_); }
  KuduScanBatch::RowPtr operator->() const { return batch_->Row(idx_); }
  const_iterator& operator++() {
    ++idx_;
    return *this;
  }
  const_iterator operator++(int) {
    const_iterator tmp(batch_, idx_);
    ++idx_;
    return tmp;
  }
  bool operator==(const const_iterator& other) const {
    return idx_ == other.idx_ && batch_ == other.batch_;
  }
  bool operator!=(const const_iterator& other) const { return !(*this == other); }

 private:
  friend class KuduScanBatch;
  const_iterator(const KuduScanBatch* b, int idx) : batch_(b), idx_(idx) {}
  const KuduScanBatch* const batch_;
  int idx_;
};

inline KuduScanBatch::const_iterator KuduScanBatch::begin() const {
  return const_iterator(this, 0);
}
inline KuduScanBatch::const_iterator KuduScanBatch::end() const {
  return const_iterator(this, NumRows());
}

}  // namespace client
}  // namespace kudu
