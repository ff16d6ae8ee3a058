#pragma once

// KuduPartialRow: a row under construction against a table's schema: the row of a write
// operation (KuduWriteOperation::mutable_row), a range bound or split row (KuduSchema::NewRow),
// or a scan key bound. Any subset of columns may be set; a set column holds a value or NULL.
//
// Setters are typed: SetInt32 needs an INT32 column, SetString a STRING column, SetVarchar a
// VARCHAR column, SetBinary a BINARY column, and so on. Errors: NotFound for an unknown column
// name; InvalidArgument for an index out of range, a type mismatch, NULL for a NOT NULL column or
// a value beyond the column's limits (DECIMAL precision, VARCHAR length, 64 KiB). On error the row
// is unchanged. Getters return NotFound for a column that is not set (or NULL).
//
// Differences from Kudu: every string setter copies (the *NoCopy forms too), SetVarchar truncates
// to the column's length in characters as Kudu does, DECIMAL values must fit 64 bits, and serial
// (auto-incrementing) columns do not exist (SetSerial/GetSerial return NotSupported).
//
// A row of a write operation lives inside the operation; a row from NewRow is owned by the
// caller until handed to a method that takes it. The schema must outlive the row.
// Not thread-safe; a const row may be read from several threads.

#include <cstdint>
#include <string>

#include "kudu/client/stubs.h"
#include "kudu/util/int128.h"
#include "kudu/util/kudu_export.h"
#include "kudu/util/slice.h"
#include "kudu/util/status.h"

namespace basalt {
namespace client {
class PartialRow;  // The Basalt row this one wraps.
}  // namespace client
}  // namespace basalt

namespace kudu {

namespace client {
class KuduWriteOperation;
namespace internal {
struct Access;
}  // namespace internal
}  // namespace client

class KUDU_EXPORT KuduPartialRow {
 public:
  virtual ~KuduPartialRow();
  // A copy owns its cells (and refers to the same schema).
  KuduPartialRow(const KuduPartialRow& other);
  KuduPartialRow& operator=(KuduPartialRow other);

  Status SetBool(const Slice& col_name, bool val) WARN_UNUSED_RESULT;
  Status SetInt8(const Slice& col_name, int8_t val) WARN_UNUSED_RESULT;
  Status SetInt16(const Slice& col_name, int16_t val) WARN_UNUSED_RESULT;
  Status SetInt32(const Slice& col_name, int32_t val) WARN_UNUSED_RESULT;
  Status SetInt64(const Slice& col_name, int64_t val) WARN_UNUSED_RESULT;
  Status SetSerial(const Slice& col_name, uint64_t val) WARN_UNUSED_RESULT;
  Status SetUnixTimeMicros(const Slice& col_name,
                           int64_t micros_since_utc_epoch) WARN_UNUSED_RESULT;
  Status SetDate(const Slice& col_name, int32_t days_since_unix_epoch) WARN_UNUSED_RESULT;
  Status SetFloat(const Slice& col_name, float val) WARN_UNUSED_RESULT;
  Status SetDouble(const Slice& col_name, double val) WARN_UNUSED_RESULT;
  Status SetUnscaledDecimal(const Slice& col_name, int128_t val) WARN_UNUSED_RESULT;

  Status SetBool(int col_idx, bool val) WARN_UNUSED_RESULT;
  Status SetInt8(int col_idx, int8_t val) WARN_UNUSED_RESULT;
  Status SetInt16(int col_idx, int16_t val) WARN_UNUSED_RESULT;
  Status SetInt32(int col_idx, int32_t val) WARN_UNUSED_RESULT;
  Status SetInt64(int col_idx, int64_t val) WARN_UNUSED_RESULT;
  Status SetSerial(int col_idx, uint64_t val) WARN_UNUSED_RESULT;
  Status SetUnixTimeMicros(int col_idx, int64_t micros_since_utc_epoch) WARN_UNUSED_RESULT;
  Status SetDate(int col_idx, int32_t days_since_unix_epoch) WARN_UNUSED_RESULT;
  Status SetFloat(int col_idx, float val) WARN_UNUSED_RESULT;
  Status SetDouble(int col_idx, double val) WARN_UNUSED_RESULT;
  Status SetUnscaledDecimal(int col_idx, int128_t val) WARN_UNUSED_RESULT;

  Status SetBinary(const Slice& col_name, const Slice& val) WARN_UNUSED_RESULT;
  Status SetString(const Slice& col_name, const Slice& val) WARN_UNUSED_RESULT;
  Status SetVarchar(const Slice& col_name, const Slice& val) WARN_UNUSED_RESULT;
  Status SetBinary(int col_idx, const Slice& val) WARN_UNUSED_RESULT;
  Status SetString(int col_idx, const Slice& val) WARN_UNUSED_RESULT;
  Status SetVarchar(int col_idx, const Slice& val) WARN_UNUSED_RESULT;
  Status SetBinaryCopy(const Slice& col_name, const Slice& val) WARN_UNUSED_RESULT;
  Status SetStringCopy(const Slice& col_name, const Slice& val) WARN_UNUSED_RESULT;
  Status SetStringCopy(int col_idx, const Slice& val) WARN_UNUSED_RESULT;
  Status SetBinaryCopy(int col_idx, const Slice& val) WARN_UNUSED_RESULT;
  Status SetBinaryNoCopy(const Slice& col_name, const Slice& val) WARN_UNUSED_RESULT;
  Status SetStringNoCopy(const Slice& col_name, const Slice& val) WARN_UNUSED_RESULT;
  Status SetVarcharNoCopyUnsafe(const Slice& col_name, const Slice& val) WARN_UNUSED_RESULT;
  Status SetVarcharNoCopyUnsafe(int col_idx, const Slice& val) WARN_UNUSED_RESULT;
  Status SetBinaryNoCopy(int col_idx, const Slice& val) WARN_UNUSED_RESULT;
  Status SetStringNoCopy(int col_idx, const Slice& val) WARN_UNUSED_RESULT;

  Status SetNull(const Slice& col_name) WARN_UNUSED_RESULT;
  Status SetNull(int col_idx) WARN_UNUSED_RESULT;
  Status Unset(const Slice& col_name) WARN_UNUSED_RESULT;
  Status Unset(int col_idx) WARN_UNUSED_RESULT;

  // False for an unknown column.
  bool IsColumnSet(const Slice& col_name) const;
  bool IsColumnSet(int col_idx) const;
  bool IsNull(const Slice& col_name) const;
  bool IsNull(int col_idx) const;

  Status GetBool(const Slice& col_name, bool* val) const WARN_UNUSED_RESULT;
  Status GetInt8(const Slice& col_name, int8_t* val) const WARN_UNUSED_RESULT;
  Status GetInt16(const Slice& col_name, int16_t* val) const WARN_UNUSED_RESULT;
  Status GetInt32(const Slice& col_name, int32_t* val) const WARN_UNUSED_RESULT;
  Status GetInt64(const Slice& col_name, int64_t* val) const WARN_UNUSED_RESULT;
  Status GetSerial(const Slice& col_name, uint64_t* val) const WARN_UNUSED_RESULT;
  Status GetUnixTimeMicros(const Slice& col_name,
                           int64_t* micros_since_utc_epoch) const WARN_UNUSED_RESULT;
  Status GetDate(const Slice& col_name, int32_t* days_since_unix_epoch) const WARN_UNUSED_RESULT;
  Status GetFloat(const Slice& col_name, float* val) const WARN_UNUSED_RESULT;
  Status GetDouble(const Slice& col_name, double* val) const WARN_UNUSED_RESULT;
  Status GetUnscaledDecimal(const Slice& col_name, int128_t* val) WARN_UNUSED_RESULT;
  Status GetUnscaledDecimal(const Slice& col_name, int128_t* val) const WARN_UNUSED_RESULT;

  Status GetBool(int col_idx, bool* val) const WARN_UNUSED_RESULT;
  Status GetInt8(int col_idx, int8_t* val) const WARN_UNUSED_RESULT;
  Status GetInt16(int col_idx, int16_t* val) const WARN_UNUSED_RESULT;
  Status GetInt32(int col_idx, int32_t* val) const WARN_UNUSED_RESULT;
  Status GetInt64(int col_idx, int64_t* val) const WARN_UNUSED_RESULT;
  Status GetSerial(int col_idx, uint64_t* val) const WARN_UNUSED_RESULT;
  Status GetUnixTimeMicros(int col_idx, int64_t* micros_since_utc_epoch) const WARN_UNUSED_RESULT;
  Status GetDate(int col_idx, int32_t* days_since_unix_epoch) const WARN_UNUSED_RESULT;
  Status GetFloat(int col_idx, float* val) const WARN_UNUSED_RESULT;
  Status GetDouble(int col_idx, double* val) const WARN_UNUSED_RESULT;
  Status GetUnscaledDecimal(int col_idx, int128_t* val) WARN_UNUSED_RESULT;
  Status GetUnscaledDecimal(int col_idx, int128_t* val) const WARN_UNUSED_RESULT;

  // The slices point into the row: valid until the column is set again or the row dies.
  Status GetString(const Slice& col_name, Slice* val) const WARN_UNUSED_RESULT;
  Status GetBinary(const Slice& col_name, Slice* val) const WARN_UNUSED_RESULT;
  Status GetVarchar(const Slice& col_name, Slice* val) const WARN_UNUSED_RESULT;
  Status GetString(int col_idx, Slice* val) const WARN_UNUSED_RESULT;
  Status GetBinary(int col_idx, Slice* val) const WARN_UNUSED_RESULT;
  Status GetVarchar(int col_idx, Slice* val) const WARN_UNUSED_RESULT;

  // Kudu's encoded primary key format is not Basalt's: NotSupported.
  Status EncodeRowKey(std::string* encoded_key) const;
  // Aborts (see EncodeRowKey).
  std::string ToEncodedRowKeyOrDie() const;

  bool IsKeySet() const;                     // Every primary key column is set.
  bool IsNonUniqueKeySet() const;            // Same as IsKeySet (Basalt keys are unique).
  bool IsAutoIncrementingColumnSet() const;  // Always false.
  bool AllColumnsSet() const;
  // "int32 key=1, string name=\"x\"" over the set columns.
  std::string ToString() const;

 private:
  friend class client::KuduWriteOperation;
  friend struct client::internal::Access;

  // Wraps `row`; owns it when `owned`.
  KuduPartialRow(basalt::client::PartialRow* row, bool owned);

  basalt::client::PartialRow* row_;
  bool owned_;
};

}  // namespace kudu
