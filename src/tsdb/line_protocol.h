#pragma once

// The InfluxDB 1.x line protocol, the body of a POST /write to basalt-tsdbd, parsed into points.
//
// One point a line:
//
//   measurement[,tag_key=tag_value...] field_key=field_value[,field_key=field_value...] [timestamp]
//
// Lines. A line ends at '\n' or "\r\n" (a '\r' at the very end of the body also ends it), except
// inside a quoted string field value, which may hold raw line breaks. Blank lines (spaces and
// tabs only) and lines whose first byte other than spaces and tabs is '#' are skipped; a comment
// runs to the next '\n' whatever it holds. Leading spaces and tabs of a line are ignored.
//
// Sections. The measurement-and-tags section, the fields and the timestamp are separated by an
// unescaped space; any spaces and tabs after that space are ignored, so are spaces and tabs after
// a space that ends the last section. A tab directly after a value is part of the value.
//
// Escapes. A backslash and the byte after it form a pair, which is never a separator:
//   measurement:                     \,  and  \  (space) stand for ',' and ' '
//   tag keys, tag values, field keys: \,  \=  and  \  (space) stand for ',', '=' and ' '
// Any other pair is kept as written, both bytes (so `a\\b` is the four bytes a \ \ b, and the
// byte after `\\` is read afresh). A backslash before a line end, or at the end of the body, is a
// literal backslash: a line break cannot be escaped. An unescaped '=' is allowed in a measurement
// and is an error in a tag value.
//
// Field values:
//   float     -?(digits[.digits*] | .digits)([eE][+-]?digits)?   1  -1.5  1e3  1.5E-2  .5  1.
//             (no inf, nan, hex or leading '+'; a value that underflows reads as 0)
//   integer   -?digits followed by 'i', within int64                -5i
//   unsigned  digits followed by 'u', within uint64                  5u
//   boolean   t T true True TRUE f F false False FALSE
//   string    "..." where \" stands for '"' and \\ for '\'; any other byte, a lone backslash and
//             raw line breaks included, is kept as written. At most kMaxStringFieldBytes bytes
//             once unescaped.
//
// Timestamp: an optional -?digits in the request's precision, converted to microseconds since
// the epoch (nanoseconds are floor-divided by 1000, so -1 ns is -1 us).
//
// Names: a measurement, a tag key or a field key holds 1 to kMaxNameBytes bytes once unescaped;
// a tag value is not empty. Bytes are not checked to be UTF-8.
//
// Errors (INVALID_ARGUMENT, "line L, column C: <what>"): L counts '\n' bytes from the start of
// the body, those inside quoted strings too, so it is the line an editor shows; C is the 1-based
// byte offset within that line. C points at the first byte of the offending element (a name,
// value or timestamp), or where something missing was expected:
//   missing measurement            the line starts with ','
//   empty tag key                  `,=v` or `,,` or `, `
//   missing '=' after tag key      `,host v=1`
//   empty tag value                `,host= v=1`
//   unescaped '=' in tag value     `,a=b=c`            (column of the second '=')
//   duplicate tag key 'k'          `,a=1,a=2`          (column of the later key)
//   missing fields                 nothing after the measurement and tags
//   empty field key                `cpu =1`, `v=1,`
//   missing '=' after field key    `cpu v`
//   missing field value            `cpu v=`, `v=,w=1`
//   invalid field value / number / integer / unsigned integer, or out of range
//   unterminated string            (column of the opening quote)
//   string field value is longer than 65536 bytes   (column of the opening quote)
//   unexpected text after the string field value    `s="a"b`
//   invalid timestamp, timestamp out of range (also when converting to microseconds overflows)
//   unexpected text after the timestamp
//   measurement / tag key / field key is longer than 256 bytes
//
// Thread-safe: the functions keep no state.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt::tsdb {

// Longest measurement, tag key or field key, in bytes once unescaped.
inline constexpr size_t kMaxNameBytes = 256;
// Longest string field value, in bytes once unescaped (InfluxDB 1.x's limit).
inline constexpr size_t kMaxStringFieldBytes = 64 * 1024;

// One field value; only the member named by `type` is meaningful, the others keep their defaults.
struct FieldValue {
  enum Type { kFloat, kInteger, kUnsigned, kString, kBool };
  Type type = kFloat;
  double f = 0;
  int64_t i = 0;
  uint64_t u = 0;
  std::string s;
  bool b = false;
};

// One parsed line.
struct Point {
  std::string measurement;
  // Sorted by key (byte order, as InfluxDB orders a series key); keys unique.
  std::vector<std::pair<std::string, std::string>> tags;
  // In line order, keys unique: a repeated key keeps the slot of its first occurrence and the
  // value of its last.
  std::vector<std::pair<std::string, FieldValue>> fields;
  // Microseconds since the epoch; absent when the line had none (the server then uses its time).
  std::optional<int64_t> timestamp_us;
  // 1-based line number of the point's first byte in the body (counted as for errors).
  int line = 0;
};

// Whether two points have the same tag keys, and the same field keys with values of the same
// types, in the same order: what checking a point against its table's schema and finding its
// columns depends on. The points of a series usually do (TSBS's all do), so a writer resolves a
// run of them once.
bool SameKeys(const Point& a, const Point& b);

// The unit of the timestamps in a body (the `precision` query parameter of /write).
enum class Precision { kNanoseconds, kMicroseconds, kMilliseconds, kSeconds, kMinutes, kHours };

// Reads a `precision` parameter: "n"/"ns", "u"/"us", "ms", "s", "m", "h"; empty means
// nanoseconds. Returns INVALID_ARGUMENT for anything else.
absl::StatusOr<Precision> ParsePrecision(std::string_view name);

// Parses a whole request body, all or nothing. On success *points holds one point per non-blank,
// non-comment line in body order (its previous contents are dropped). On the first bad line
// returns INVALID_ARGUMENT "line L, column C: <what>" (see the file comment) and leaves *points
// empty. REQUIRES: points != nullptr.
absl::Status ParseLineProtocol(std::string_view body, Precision precision,
                               std::vector<Point>* points);

}  // namespace basalt::tsdb
