#include "tsdb/line_protocol.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <numeric>
#include <optional>
#include <system_error>

#include "absl/base/macros.h"
#include "absl/strings/charconv.h"
#include "absl/strings/escaping.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt::tsdb {

namespace {

// Bytes that a backslash escapes in a measurement, and in tag keys, tag values and field keys.
constexpr std::string_view kMeasurementEscapes = ", ";
constexpr std::string_view kKeyEscapes = ",= ";
// Bytes that end a measurement, and a tag key, tag value or field key, besides a line end.
// A tag value stops at '=' only to report it: an unescaped '=' there is an error.
constexpr std::string_view kMeasurementStops = ", ";
constexpr std::string_view kKeyStops = ",= ";

constexpr std::string_view kBooleans[] = {"t", "T", "true",  "True",  "TRUE",
                                          "f", "F", "false", "False", "FALSE"};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The bytes that end a run ScanName copies as is: the stops, a backslash and the line-end
// bytes. Built once per kind of name (it was built on every call: a fifth of ScanName's work),
// as a table of 256 flags: one load per byte of a name.
struct ByteSet {
  bool flags[256] = {};
  constexpr explicit ByteSet(std::string_view stops) {
    for (char c : stops) flags[static_cast<uint8_t>(c)] = true;
    flags[static_cast<uint8_t>('\\')] = true;
    flags[static_cast<uint8_t>('\n')] = true;
    flags[static_cast<uint8_t>('\r')] = true;
  }
  bool Has(char c) const { return flags[static_cast<uint8_t>(c)]; }
};
constexpr ByteSet kMeasurementSpecial(kMeasurementStops);
constexpr ByteSet kKeySpecial(kKeyStops);

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// User text for an error message: quoted, C-escaped (it may hold any byte) and cut at 64 bytes
// so that a megabyte of garbage does not become a megabyte of message.
std::string Quote(std::string_view text) {
  constexpr size_t kMaxQuoted = 64;
  const bool cut = text.size() > kMaxQuoted;
  return StrCat("'", absl::CEscape(ToAbsl(text.substr(0, kMaxQuoted))), cut ? "...'" : "'");
}

// Checks `text` against the float grammar of the file comment. On success sets *magnitude to the
// decimal exponent of its first significant digit (1e3 and 1000 give 3, 0.05 gives -2), which
// tells an overflow from an underflow when the conversion is out of range; a zero gives 0.
bool ScanFloat(std::string_view text, int64_t* magnitude) {
  size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  int64_t leading = 0;  // Exponent of the first significant digit, while scanning the mantissa.
  bool significant = false;
  size_t digits = 0;
  for (; i < text.size() && IsDigit(text[i]); ++i, ++digits) {
    if (significant) {
      ++leading;
    } else if (text[i] != '0') {
      significant = true;
    }
  }
  if (i < text.size() && text[i] == '.') {
    int64_t place = -1;  // Exponent of each fraction digit.
    for (++i; i < text.size() && IsDigit(text[i]); ++i, ++digits, --place) {
      if (!significant && text[i] != '0') {
        significant = true;
        leading = place;
      }
    }
  }
  if (digits == 0) return false;  // "", "-", ".", "-.e5"
  int64_t exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    if (i == text.size()) return false;  // "1e", "1e-"
    for (; i < text.size() && IsDigit(text[i]); ++i) {
      // Saturate: any exponent beyond a million is out of range either way.
      exponent = std::min<int64_t>(exponent * 10 + (text[i] - '0'), 1000000);
    }
    if (negative) exponent = -exponent;
  }
  *magnitude = significant ? leading + exponent : 0;
  return i == text.size();
}

// Plain decimals ("-12.34": no exponent, at most 15 digits) as an exact integer scaled by an
// exact power of ten: one IEEE division, correctly rounded, so the same double from_chars gives
// (Clinger's fast path), at a fraction of its cost. nullopt: not such a decimal.
std::optional<double> ParsePlainDecimal(std::string_view text) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  uint64_t mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (IsDigit(c)) {
      if (++digits > 15) return std::nullopt;  // Beyond 2^53 is not exact any more.
      mantissa = mantissa * 10 + static_cast<uint64_t>(c - '0');
      if (point) ++fraction_digits;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      return std::nullopt;  // An exponent, or anything ScanFloat must judge.
    }
  }
  if (digits == 0) return std::nullopt;
  const double value = static_cast<double>(mantissa) / kPow10[fraction_digits];
  return negative ? -value : value;
}

absl::StatusOr<double> ParseFloat(std::string_view text) {
  if (const std::optional<double> plain = ParsePlainDecimal(text)) return *plain;
  int64_t magnitude = 0;
  if (!ScanFloat(text, &magnitude)) {
    return absl::InvalidArgumentError(StrCat("invalid number ", Quote(text)));
  }
  double value = 0;
  const absl::from_chars_result r = absl::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec == std::errc::result_out_of_range) {
    // What from_chars leaves in `value` on a range error is not settled (LWG 3081), so decide by
    // the magnitude: too large is an error, too small reads as a zero of the same sign, as in
    // InfluxDB (Go's ParseFloat).
    if (magnitude > 0)
      return absl::InvalidArgumentError(StrCat("float ", Quote(text), " is out of range"));
    return text[0] == '-' ? -0.0 : 0.0;
  }
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    return absl::InvalidArgumentError(StrCat("invalid number ", Quote(text)));
  }
  return value;
}

// Parses `digits` (the text before an 'i' or 'u' suffix) as an integer of type T. `whole` is the
// value as written, for messages.
template <typename T>
absl::StatusOr<T> ParseInteger(std::string_view digits, std::string_view whole,
                               std::string_view kind) {
  T value = 0;
  const char* end = digits.data() + digits.size();
  // std::from_chars takes no leading '+' or whitespace; for unsigned types no '-' either.
  const std::from_chars_result r = std::from_chars(digits.data(), end, value);
  if (r.ec == std::errc::invalid_argument || r.ptr != end) {
    return absl::InvalidArgumentError(StrCat("invalid ", kind, " ", Quote(whole)));
  }
  if (r.ec == std::errc::result_out_of_range) {
    return absl::InvalidArgumentError(StrCat(kind, " ", Quote(whole), " is out of range"));
  }
  return value;
}

// Reads an unquoted field value (`token` is not empty) into *v (a default FieldValue): a
// boolean, an integer, an unsigned integer or a float. Errors carry no position; the caller adds
// it.
absl::Status ParseScalar(std::string_view token, FieldValue* v) {
  const char first = token.front();
  if (!IsDigit(first) && first != '-' && first != '.') {
    // No boolean spelling starts like a number: numbers, by far the most common values, skip
    // these comparisons.
    for (std::string_view spelling : kBooleans) {
      if (token == spelling) {
        v->type = FieldValue::kBool;
        v->b = spelling[0] == 't' || spelling[0] == 'T';
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(
        StrCat("invalid field value ", Quote(token), " (a number, a quoted string or a boolean)"));
  }
  const std::string_view digits = token.substr(0, token.size() - 1);
  if (token.back() == 'i') {
    v->type = FieldValue::kInteger;
    BASALT_ASSIGN_OR_RETURN(v->i, ParseInteger<int64_t>(digits, token, "integer"));
  } else if (token.back() == 'u') {
    v->type = FieldValue::kUnsigned;
    BASALT_ASSIGN_OR_RETURN(v->u, ParseInteger<uint64_t>(digits, token, "unsigned integer"));
  } else {
    v->type = FieldValue::kFloat;
    BASALT_ASSIGN_OR_RETURN(v->f, ParseFloat(token));
  }
  return absl::OkStatus();
}

// Converts a timestamp in `precision` units to microseconds; nullopt when that overflows.
std::optional<int64_t> ToMicros(int64_t value, Precision precision) {
  int64_t factor = 1;
  switch (precision) {
    case Precision::kNanoseconds: {
      // Floor, not truncation: -1 ns lies in the microsecond before the epoch.
      int64_t q = value / 1000;
      if (value % 1000 < 0) --q;
      return q;
    }
    case Precision::kMicroseconds:
      factor = 1;
      break;
    case Precision::kMilliseconds:
      factor = 1000;
      break;
    case Precision::kSeconds:
      factor = 1000000;
      break;
    case Precision::kMinutes:
      factor = 60 * int64_t{1000000};
      break;
    case Precision::kHours:
      factor = 3600 * int64_t{1000000};
      break;
  }
  int64_t micros = 0;
  if (__builtin_mul_overflow(value, factor, &micros)) return std::nullopt;
  return micros;
}

// Sorts the tags (given in line order) by key, and `positions` (the byte offset of each tag key,
// increasing in line order) with them. When a key repeats, returns the index, in the sorted
// order, of the repetition that comes first in the line. Stable: equal keys keep their line
// order, so in a run of one key every member after the first repeats it. A line's handful of
// tags is sorted in place by insertion (this runs for every point of a /write); many tags go
// through a sort of their indices, as a body (up to 64 MiB) may hold one line of a million tags
// in reverse order, which insertion would take hours over.
std::optional<size_t> SortTags(std::vector<std::pair<std::string, std::string>>* tags,
                               std::vector<size_t>* positions) {
  auto& t = *tags;
  auto& pos = *positions;
  const size_t n = t.size();
  constexpr size_t kInsertionSortMax = 32;
  if (n <= kInsertionSortMax) {
    for (size_t i = 1; i < n; ++i) {
      if (!(t[i].first < t[i - 1].first)) continue;
      auto tag = std::move(t[i]);
      const size_t p = pos[i];
      size_t j = i;
      for (; j > 0 && tag.first < t[j - 1].first; --j) {
        t[j] = std::move(t[j - 1]);
        pos[j] = pos[j - 1];
      }
      t[j] = std::move(tag);
      pos[j] = p;
    }
  } else {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return t[a].first < t[b].first; });
    std::vector<std::pair<std::string, std::string>> sorted;
    std::vector<size_t> sorted_pos;
    sorted.reserve(n);
    sorted_pos.reserve(n);
    for (size_t i : order) {
      sorted.push_back(std::move(t[i]));
      sorted_pos.push_back(pos[i]);
    }
    t = std::move(sorted);
    pos = std::move(sorted_pos);
  }
  std::optional<size_t> duplicate;
  for (size_t k = 1; k < n; ++k) {
    if (t[k].first == t[k - 1].first && (!duplicate.has_value() || pos[k] < pos[*duplicate])) {
      duplicate = k;
    }
  }
  return duplicate;
}

// Removes repeated field keys: the first occurrence keeps its slot and takes the last value.
void DedupFields(std::vector<std::pair<std::string, FieldValue>>* fields) {
  const size_t n = fields->size();
  if (n < 2) return;
  // Repeats are rare: a pairwise check of a line's few keys costs less than sorting them.
  constexpr size_t kPairwiseCheck = 32;
  if (n <= kPairwiseCheck) {
    bool any = false;
    for (size_t i = 1; i < n && !any; ++i) {
      for (size_t j = 0; j < i && !any; ++j) any = (*fields)[i].first == (*fields)[j].first;
    }
    if (!any) return;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return (*fields)[a].first < (*fields)[b].first; });
  std::vector<bool> drop(n, false);
  bool any = false;
  for (size_t k = 0; k < n;) {
    // [k, end) is a run of equal keys, in line order.
    size_t end = k + 1;
    while (end < n && (*fields)[order[end]].first == (*fields)[order[k]].first) ++end;
    if (end - k > 1) {
      (*fields)[order[k]].second = std::move((*fields)[order[end - 1]].second);
      for (size_t j = k + 1; j < end; ++j) drop[order[j]] = true;
      any = true;
    }
    k = end;
  }
  if (!any) return;
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (drop[i]) continue;
    if (out != i) (*fields)[out] = std::move((*fields)[i]);
    ++out;
  }
  fields->resize(out);
}

// A single pass over one body: each Parse* method starts at pos_ and leaves pos_ on the first
// byte it did not consume. Not thread-safe; one instance parses one body.
class LineParser {
 public:
  LineParser(std::string_view body, Precision precision) : body_(body), precision_(precision) {}

  // Appends the points of the body to *points, stopping at the first error.
  absl::Status ParseBody(std::vector<Point>* points);

 private:
  // Every read of the body goes through At(); callers check the bounds first.
  char At(size_t i) const {
    ABSL_ASSERT(i < body_.size());
    return body_[i];
  }
  // True at the end of the body, at '\n', and at a '\r' that precedes '\n' or ends the body.
  bool AtLineEnd(size_t i) const {
    if (i >= body_.size()) return true;
    if (body_[i] == '\n') return true;
    return body_[i] == '\r' && (i + 1 == body_.size() || body_[i + 1] == '\n');
  }
  size_t SkipBlanks(size_t i) const {
    while (i < body_.size() && IsBlank(body_[i])) ++i;
    return i;
  }
  // The start of the line after the one holding `i` (a raw search: no quotes in comments, and
  // after a point pos_ already sits at its line end).
  size_t NextLine(size_t i) const {
    const size_t newline = body_.find('\n', i);
    return newline == std::string_view::npos ? body_.size() : newline + 1;
  }

  absl::Status ParseLine(Point* point);
  absl::Status ParseSeriesKey(Point* point);
  absl::Status ParseTag(Point* point);
  absl::Status ParseField(Point* point);
  // Parse a value into *value, a default FieldValue.
  absl::Status ParseFieldValue(FieldValue* value);
  absl::Status ParseString(FieldValue* value);
  absl::Status ParseTimestamp(Point* point);

  // Reads a name from `i` up to a line end or an unescaped byte of `stops` into *out, turning
  // the pairs `\x` with x in `escapes` into x. Returns where it stopped. REQUIRES: `special`
  // is ByteSet(stops) (kMeasurementSpecial or kKeySpecial).
  size_t ScanName(size_t i, std::string_view escapes, std::string_view stops,
                  const ByteSet& special, std::string* out) const;
  absl::Status CheckNameLength(size_t start, const std::string& name, std::string_view what);

  // The 1-based line of `pos`, counting '\n' bytes incrementally from the last call.
  int LineOf(size_t pos);
  // INVALID_ARGUMENT "line L, column C: <what>" for the byte at `pos` (<= body size).
  absl::Status Error(size_t pos, std::string_view what);

  const std::string_view body_;
  const Precision precision_;
  size_t pos_ = 0;
  // LineOf's memo: the line of byte counted_to_.
  size_t counted_to_ = 0;
  int counted_line_ = 1;
  // The current line's tag key offsets, in tag order (reused from line to line).
  std::vector<size_t> key_positions_;
  // The previous point's tag and field counts: the next point's likely capacity.
  size_t last_tags_ = 0;
  size_t last_fields_ = 0;
};

absl::Status LineParser::ParseBody(std::vector<Point>* points) {
  while (pos_ < body_.size()) {
    const size_t start = SkipBlanks(pos_);
    if (AtLineEnd(start) || At(start) == '#') {  // Blank line or comment.
      pos_ = NextLine(start);
      continue;
    }
    // Parsed in place: on an error the caller drops every point anyway.
    Point& point = points->emplace_back();
    point.line = LineOf(start);
    // Capped: a small line after a huge one must not keep the huge one's capacity.
    constexpr size_t kMaxCapacityHint = 64;
    point.tags.reserve(std::min(last_tags_, kMaxCapacityHint));
    point.fields.reserve(std::min(last_fields_, kMaxCapacityHint));
    pos_ = start;
    BASALT_RETURN_IF_ERROR(ParseLine(&point));
    last_tags_ = point.tags.size();
    last_fields_ = point.fields.size();
    pos_ = NextLine(pos_);
  }
  return absl::OkStatus();
}

// REQUIRES: pos_ is at the line's first byte, which is neither blank nor a line end.
absl::Status LineParser::ParseLine(Point* point) {
  BASALT_RETURN_IF_ERROR(ParseSeriesKey(point));
  // The series key stops only at a space or a line end.
  pos_ = SkipBlanks(pos_);
  if (AtLineEnd(pos_)) return Error(pos_, "missing fields");
  while (true) {
    BASALT_RETURN_IF_ERROR(ParseField(point));
    if (AtLineEnd(pos_) || At(pos_) != ',') break;
    ++pos_;  // The ',' before the next field.
  }
  DedupFields(&point->fields);
  // A field value stops only at ',', a space or a line end.
  pos_ = SkipBlanks(pos_);
  if (AtLineEnd(pos_)) return absl::OkStatus();
  BASALT_RETURN_IF_ERROR(ParseTimestamp(point));
  pos_ = SkipBlanks(pos_);
  if (!AtLineEnd(pos_)) return Error(pos_, "unexpected text after the timestamp");
  return absl::OkStatus();
}

absl::Status LineParser::ParseSeriesKey(Point* point) {
  const size_t start = pos_;
  pos_ = ScanName(start, kMeasurementEscapes, kMeasurementStops, kMeasurementSpecial,
                  &point->measurement);
  if (point->measurement.empty()) return Error(start, "missing measurement");
  BASALT_RETURN_IF_ERROR(CheckNameLength(start, point->measurement, "measurement"));
  key_positions_.clear();
  while (!AtLineEnd(pos_) && At(pos_) == ',') {
    ++pos_;
    BASALT_RETURN_IF_ERROR(ParseTag(point));
  }
  const std::optional<size_t> duplicate = SortTags(&point->tags, &key_positions_);
  if (duplicate.has_value()) {
    return Error(key_positions_[*duplicate],
                 StrCat("duplicate tag key ", Quote(point->tags[*duplicate].first)));
  }
  return absl::OkStatus();
}

absl::Status LineParser::ParseTag(Point* point) {
  const size_t key_start = pos_;
  // Filled in place (an error drops the point).
  auto& [key, value] = point->tags.emplace_back();
  pos_ = ScanName(pos_, kKeyEscapes, kKeyStops, kKeySpecial, &key);
  if (key.empty()) return Error(key_start, "empty tag key");
  BASALT_RETURN_IF_ERROR(CheckNameLength(key_start, key, "tag key"));
  if (AtLineEnd(pos_) || At(pos_) != '=') return Error(pos_, "missing '=' after tag key");
  ++pos_;
  const size_t value_start = pos_;
  pos_ = ScanName(pos_, kKeyEscapes, kKeyStops, kKeySpecial, &value);
  if (value.empty()) return Error(value_start, "empty tag value");
  if (!AtLineEnd(pos_) && At(pos_) == '=') return Error(pos_, "unescaped '=' in tag value");
  key_positions_.push_back(key_start);
  return absl::OkStatus();
}

absl::Status LineParser::ParseField(Point* point) {
  const size_t key_start = pos_;
  // Filled in place (an error drops the point).
  auto& [key, value] = point->fields.emplace_back();
  pos_ = ScanName(pos_, kKeyEscapes, kKeyStops, kKeySpecial, &key);
  if (key.empty()) return Error(key_start, "empty field key");
  BASALT_RETURN_IF_ERROR(CheckNameLength(key_start, key, "field key"));
  if (AtLineEnd(pos_) || At(pos_) != '=') return Error(pos_, "missing '=' after field key");
  ++pos_;
  return ParseFieldValue(&value);
}

absl::Status LineParser::ParseFieldValue(FieldValue* value) {
  const size_t start = pos_;
  if (AtLineEnd(start) || At(start) == ',' || At(start) == ' ') {
    return Error(start, "missing field value");
  }
  if (At(start) == '"') return ParseString(value);
  // Unquoted values hold no escapes: the token runs to the next ',', space or line end.
  size_t end = start;
  while (!AtLineEnd(end) && At(end) != ',' && At(end) != ' ') ++end;
  pos_ = end;
  const absl::Status s = ParseScalar(body_.substr(start, end - start), value);
  if (!s.ok()) return Error(start, std::string_view(s.message().data(), s.message().size()));
  return absl::OkStatus();
}

// REQUIRES: pos_ is at the opening quote.
absl::Status LineParser::ParseString(FieldValue* out) {
  const size_t open = pos_;
  FieldValue& value = *out;
  value.type = FieldValue::kString;
  bool too_long = false;
  size_t i = open + 1;
  // Line ends are ordinary bytes here: the string runs to the next unescaped quote.
  while (true) {
    if (i >= body_.size()) return Error(open, "unterminated string");
    char c = At(i);
    if (c == '"') break;
    if (c == '\\' && i + 1 < body_.size() && (At(i + 1) == '"' || At(i + 1) == '\\')) {
      c = At(++i);
    }
    ++i;
    // Keep scanning past the limit, so that an unterminated string is reported as such.
    if (value.s.size() < kMaxStringFieldBytes) {
      value.s.push_back(c);
    } else {
      too_long = true;
    }
  }
  pos_ = i + 1;  // Past the closing quote.
  if (too_long) {
    return Error(open,
                 StrCat("string field value is longer than ", kMaxStringFieldBytes, " bytes"));
  }
  if (!AtLineEnd(pos_) && At(pos_) != ',' && At(pos_) != ' ') {
    return Error(pos_, "unexpected text after the string field value");
  }
  return absl::OkStatus();
}

absl::Status LineParser::ParseTimestamp(Point* point) {
  const size_t start = pos_;
  size_t end = start;
  while (!AtLineEnd(end) && At(end) != ' ') ++end;
  pos_ = end;
  const std::string_view text = body_.substr(start, end - start);
  int64_t value = 0;
  const std::from_chars_result r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec == std::errc::invalid_argument || r.ptr != text.data() + text.size()) {
    return Error(start, StrCat("invalid timestamp ", Quote(text)));
  }
  std::optional<int64_t> micros;
  if (r.ec == std::errc()) micros = ToMicros(value, precision_);
  if (!micros.has_value())
    return Error(start, StrCat("timestamp ", Quote(text), " is out of range"));
  point->timestamp_us = *micros;
  return absl::OkStatus();
}

size_t LineParser::ScanName(size_t i, std::string_view escapes, std::string_view stops,
                            const ByteSet& special, std::string* out) const {
  out->clear();
  // A name is mostly a run of bytes outside `special` (ByteSet), appended at once (a per-byte
  // search of `stops` cost a fifth of basalt-tsdbd's CPU under a /write load).
  const char* const data = body_.data();
  const size_t size = body_.size();
  while (true) {
    size_t j = i;
    while (j < size && !special.Has(data[j])) ++j;
    out->append(body_.data() + i, j - i);
    i = j;
    if (AtLineEnd(i)) break;
    const char c = At(i);
    // A pair is never a separator. A line end is not escapable: the backslash stays literal.
    if (c == '\\' && !AtLineEnd(i + 1)) {
      const char next = At(i + 1);
      if (escapes.find(next) == std::string_view::npos) out->push_back('\\');
      out->push_back(next);
      i += 2;
      continue;
    }
    if (stops.find(c) != std::string_view::npos) break;
    out->push_back(c);  // A backslash before a line end, or a '\r' inside the line.
    ++i;
  }
  return i;
}

absl::Status LineParser::CheckNameLength(size_t start, const std::string& name,
                                         std::string_view what) {
  if (name.size() <= kMaxNameBytes) return absl::OkStatus();
  return Error(start, StrCat(what, " is longer than ", kMaxNameBytes, " bytes"));
}

int LineParser::LineOf(size_t pos) {
  if (pos < counted_to_) {  // Not expected (positions only grow), but stay correct.
    counted_to_ = 0;
    counted_line_ = 1;
  }
  // memchr jumps from line end to line end (a byte-by-byte count was a tenth of the parse).
  const char* p = body_.data() + counted_to_;
  const char* const end = body_.data() + std::min(pos, body_.size());
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (nl == nullptr) break;
    ++counted_line_;
    p = static_cast<const char*>(nl) + 1;
  }
  counted_to_ = std::min(pos, body_.size());
  return counted_line_;
}

absl::Status LineParser::Error(size_t pos, std::string_view what) {
  const size_t line_start = pos == 0 ? std::string_view::npos : body_.rfind('\n', pos - 1);
  const size_t column = line_start == std::string_view::npos ? pos + 1 : pos - line_start;
  return absl::InvalidArgumentError(StrCat("line ", LineOf(pos), ", column ", column, ": ", what));
}

}  // namespace

absl::StatusOr<Precision> ParsePrecision(std::string_view name) {
  if (name.empty() || name == "n" || name == "ns") return Precision::kNanoseconds;
  if (name == "u" || name == "us") return Precision::kMicroseconds;
  if (name == "ms") return Precision::kMilliseconds;
  if (name == "s") return Precision::kSeconds;
  if (name == "m") return Precision::kMinutes;
  if (name == "h") return Precision::kHours;
  return absl::InvalidArgumentError(
      StrCat("unknown precision ", Quote(name), " (n, ns, u, us, ms, s, m or h)"));
}

absl::Status ParseLineProtocol(std::string_view body, Precision precision,
                               std::vector<Point>* points) {
  points->clear();
  std::vector<Point> parsed;
  LineParser parser(body, precision);
  BASALT_RETURN_IF_ERROR(parser.ParseBody(&parsed));
  *points = std::move(parsed);
  return absl::OkStatus();
}

bool SameKeys(const Point& a, const Point& b) {
  if (a.tags.size() != b.tags.size() || a.fields.size() != b.fields.size()) return false;
  for (size_t i = 0; i < a.tags.size(); ++i) {
    if (a.tags[i].first != b.tags[i].first) return false;
  }
  for (size_t i = 0; i < a.fields.size(); ++i) {
    if (a.fields[i].second.type != b.fields[i].second.type ||
        a.fields[i].first != b.fields[i].first) {
      return false;
    }
  }
  return true;
}

}  // namespace basalt::tsdb
