#pragma once

// Encoded keys (DESIGN.md section 2; byte layout in docs/keys.md).
//
// An encoded key is a byte string whose memcmp order (shorter is smaller when one is a prefix of
// the other) equals the order of the values it encodes, column by column, as TypeInfo::Compare
// orders them. It is how the MemRowSet, key indexes, bloom filters, rowset bounds and partition
// keys compare rows without knowing the schema.
//
// Per column, in order:
//   - integer-backed types (INT8..INT64, DATE, UNIXTIME_MICROS, DECIMAL32/64/128): big-endian
//     two's complement with the sign bit flipped, so negative values sort first;
//   - BOOL: one byte, 0x00 or 0x01;
//   - FLOAT/DOUBLE: the IEEE bits big-endian, all bits inverted for negative values (sign bit
//     set) and only the sign bit flipped otherwise, which yields the IEEE total order
//     -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN;
//   - STRING/BINARY/VARCHAR: in the last position of the key the raw bytes; in any other position
//     each 0x00 is written as 0x00 0x01 and the value ends with 0x00 0x00, so a shorter value
//     sorts before every longer value it prefixes and the columns after it stay aligned.
//
// "Last position" means the last column of whatever is being encoded: the last primary key
// column for primary keys and key prefixes, the last listed column for EncodeColumns (partition
// range and hash keys).
//
// All functions are stateless and thread-safe.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/datum.h"
#include "common/schema.h"
#include "common/types.h"

namespace basalt {

class PartialRow;

// Appends the encoding of one cell (row-buffer form, see types.h) to `out`. `is_last` selects
// the raw form of variable-length types. REQUIRES: IsValidDataType(type), `cell` is non-NULL.
void EncodeKeyCell(DataType type, const void* cell, bool is_last, std::string* out);

// Consumes the encoding of one cell of `type` from the front of `*input` and returns its value.
// INVALID_ARGUMENT when the bytes are truncated, a string escape is malformed, or a BOOL byte is
// neither 0 nor 1. Does not check type attributes (see DecodeColumns).
absl::StatusOr<Datum> DecodeKeyCell(DataType type, bool is_last, std::string_view* input);

// The encoded primary key of a row. REQUIRES: every key column of `row` is set (and so non-NULL;
// key columns are NOT NULL), and `row.schema()` is `schema`.
std::string EncodeKey(const Schema& schema, const PartialRow& row);
// The same from a row buffer in `schema`'s layout (Schema::column_offset).
// REQUIRES: the key cells are valid.
std::string EncodeKey(const Schema& schema, const uint8_t* row_data);
// The same from one Datum per key column. REQUIRES: key.size() == num_key_columns(), and each
// Datum is non-NULL and of its column's type.
std::string EncodeKey(const Schema& schema, const std::vector<Datum>& key);

// Encodes the first prefix.size() key columns. A column takes the raw "last" form only if it is
// the schema's last key column, so the result is a byte prefix of the encoded key of every row
// whose leading key columns equal `prefix`: [result, PrefixSuccessor(result)) is exactly those
// keys. REQUIRES: prefix.size() <= num_key_columns(), Datums non-NULL and of the column types.
std::string EncodeKeyPrefix(const Schema& schema, const std::vector<Datum>& prefix);

// Appends the encoding of the listed columns, in the listed order, the last listed column in
// the "last" form. Partitioning encodes its hash and range columns with this.
// REQUIRES: each listed column is set and non-NULL in `row`; indexes are valid.
void EncodeColumns(const Schema& schema, const PartialRow& row,
                   absl::Span<const int> column_indexes, std::string* out);
void EncodeColumns(const Schema& schema, const uint8_t* row_data,
                   absl::Span<const int> column_indexes, std::string* out);

// Decodes an encoded primary key into one Datum per key column. INVALID_ARGUMENT (with the
// column named) when `encoded` is truncated, malformed, has trailing bytes, or decodes to a
// value outside the column's type attributes (DECIMAL precision, VARCHAR length or UTF-8).
// Callers that read the key from disk should report the error as DATA_LOSS.
absl::StatusOr<std::vector<Datum>> DecodeKey(const Schema& schema, std::string_view encoded);
// The inverse of EncodeColumns, with the same validation as DecodeKey.
absl::StatusOr<std::vector<Datum>> DecodeColumns(const Schema& schema,
                                                 absl::Span<const int> column_indexes,
                                                 std::string_view encoded);

// The smallest byte string greater than `key`: key + '\0'. Turns an inclusive upper bound on
// encoded keys into an exclusive one.
std::string KeySuccessor(std::string_view key);
// The smallest byte string greater than every string that starts with `prefix`: drops trailing
// 0xFF bytes and increments the last remaining byte. Returns "" (meaning "no upper bound") when
// `prefix` is empty or all 0xFF.
std::string PrefixSuccessor(std::string_view prefix);

// ---- Single integer keys ----
//
// An integer-backed key column (INT8..INT64, DATE, UNIXTIME_MICROS, DECIMAL32/64) encodes to a
// fixed number of bytes that, read as a big-endian unsigned integer, order like the values. A
// rowset whose primary key is one such column needs no separate key index (the column file, a
// sorted key file, is one) and may filter keys with an exact bitmap over [min key, max key]
// (docs/tablet.md "DiskRowSet layout").

// The encoded width (1..8) of a key column of `type`, or 0 for any other type.
int IntegerKeyWidth(DataType type);
// IntegerKeyWidth of the schema's only key column; 0 with several key columns.
int SingleIntegerKeyWidth(const Schema& schema);
// The big-endian unsigned value of an encoded integer key. REQUIRES: 1 <= encoded.size() <= 8.
uint64_t EncodedIntegerKeyValue(std::string_view encoded);
// The inverse: appends the `width` low bytes of `value`, big-endian. REQUIRES: 1 <= width <= 8.
void AppendEncodedIntegerKey(uint64_t value, int width, std::string* out);

}  // namespace basalt
