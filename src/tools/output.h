#pragma once

// Tabular output of the CLI in the three --format choices:
//   table: aligned columns under a header and a rule (buffered until Finish, for the widths);
//   csv:   a header line, then RFC 4180 rows (quoted when needed; NULL is an empty field);
//   json:  a JSON array of objects, one row per line (numbers and booleans unquoted, NULL null).

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/json_quote.h"

namespace basalt::tools {

struct Cell {
  enum Kind { kNull, kString, kNumber, kBool };
  Kind kind = kNull;
  std::string text;

  static Cell Null() { return Cell{}; }
  static Cell String(std::string s) { return Cell{kString, std::move(s)}; }
  static Cell Number(std::string s) { return Cell{kNumber, std::move(s)}; }
  static Cell Bool(bool b) { return Cell{kBool, b ? "true" : "false"}; }
};

// Writes rows to a stream in one format. Create, AddRow any number of times, Finish once.
// Not thread-safe.
class TableWriter {
 public:
  enum Format { kTable, kCsv, kJson };
  static absl::StatusOr<Format> ParseFormat(std::string_view name);  // "table", "csv", "json".

  TableWriter(Format format, std::vector<std::string> headers, std::ostream* out);
  void AddRow(std::vector<Cell> row);
  void Finish();

 private:
  void WriteCsvRow(const std::vector<std::string>& fields);
  void WriteJsonRow(const std::vector<Cell>& row);

  const Format format_;
  const std::vector<std::string> headers_;
  std::ostream* const out_;
  std::vector<std::vector<Cell>> buffered_;  // kTable only.
  bool first_json_row_ = true;
};

std::string CsvQuote(std::string_view s);

}  // namespace basalt::tools
