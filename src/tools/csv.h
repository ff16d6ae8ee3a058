#pragma once

// CSV records (RFC 4180) for `basalt table load`: fields separated by commas, records by LF or
// CRLF; a field may be quoted with '"', and inside quotes '""' is one quote and commas and line
// breaks are data. Pure: no I/O.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt::tools {

struct CsvField {
  std::string value;
  bool quoted = false;  // Written in quotes: an empty quoted field is an empty string, not NULL.
};

// Reads the records of `data` in order. The data must outlive the reader.
// Not thread-safe; the caller serializes.
class CsvReader {
 public:
  explicit CsvReader(std::string_view data) : data_(data) {}

  // Reads the next record into *fields. Returns false at the end of the data (a final line break
  // does not start a record). Errors (INVALID_ARGUMENT "line N: ..."): a quote inside an unquoted
  // field, text after a closing quote, a quoted field that never ends.
  absl::StatusOr<bool> Next(std::vector<CsvField>* fields);

  // The 1-based line on which the record last returned by Next starts.
  int record_line() const { return record_line_; }
  // Bytes consumed so far (for progress).
  size_t position() const { return pos_; }

 private:
  absl::Status ReadQuoted(CsvField* field);
  absl::Status ReadUnquoted(CsvField* field);

  std::string_view data_;
  size_t pos_ = 0;
  int line_ = 1;
  int record_line_ = 0;
};

}  // namespace basalt::tools
