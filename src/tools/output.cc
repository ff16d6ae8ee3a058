#include "tools/output.h"

#include <algorithm>
#include <cstdio>

#include "common/strings.h"

namespace basalt::tools {

absl::StatusOr<TableWriter::Format> TableWriter::ParseFormat(std::string_view name) {
  if (name == "table") return kTable;
  if (name == "csv") return kCsv;
  if (name == "json") return kJson;
  return absl::InvalidArgumentError(
      StrCat("unknown --format '", name, "' (expected table, csv or json)"));
}

TableWriter::TableWriter(Format format, std::vector<std::string> headers, std::ostream* out)
    : format_(format), headers_(std::move(headers)), out_(out) {
  if (format_ == kCsv) {
    WriteCsvRow(headers_);
  } else if (format_ == kJson) {
    *out_ << "[";
  }
}

std::string CsvQuote(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out.push_back(c);
  }
  out += "\"";
  return out;
}

void TableWriter::WriteCsvRow(const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) *out_ << ',';
    *out_ << CsvQuote(fields[i]);
  }
  *out_ << '\n';
}

void TableWriter::WriteJsonRow(const std::vector<Cell>& row) {
  *out_ << (first_json_row_ ? "\n  {" : ",\n  {");
  first_json_row_ = false;
  for (size_t i = 0; i < row.size() && i < headers_.size(); ++i) {
    if (i > 0) *out_ << ", ";
    *out_ << JsonQuote(headers_[i]) << ": ";
    switch (row[i].kind) {
      case Cell::kNull:
        *out_ << "null";
        break;
      case Cell::kString:
        *out_ << JsonQuote(row[i].text);
        break;
      case Cell::kNumber:
        // JSON has no NaN or infinities.
        if (row[i].text == "nan" || row[i].text == "inf" || row[i].text == "-inf") {
          *out_ << JsonQuote(row[i].text);
        } else {
          *out_ << row[i].text;
        }
        break;
      case Cell::kBool:
        *out_ << row[i].text;
        break;
    }
  }
  *out_ << "}";
}

void TableWriter::AddRow(std::vector<Cell> row) {
  switch (format_) {
    case kTable:
      buffered_.push_back(std::move(row));
      break;
    case kCsv: {
      std::vector<std::string> fields;
      for (auto& c : row) fields.push_back(c.kind == Cell::kNull ? "" : std::move(c.text));
      WriteCsvRow(fields);
      break;
    }
    case kJson:
      WriteJsonRow(row);
      break;
  }
}

void TableWriter::Finish() {
  if (format_ == kJson) {
    *out_ << (first_json_row_ ? "]\n" : "\n]\n");
    return;
  }
  if (format_ != kTable) return;
  std::vector<size_t> widths;
  for (const auto& h : headers_) widths.push_back(h.size());
  auto shown = [](const Cell& c) { return c.kind == Cell::kNull ? std::string("NULL") : c.text; };
  for (const auto& row : buffered_) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], shown(row[i]).size());
    }
  }
  auto write_line = [&](const std::vector<std::string>& fields, const std::vector<bool>& right) {
    std::string line;
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string f = i < fields.size() ? fields[i] : "";
      const std::string pad(widths[i] - std::min(widths[i], f.size()), ' ');
      if (i > 0) line += " | ";
      line += (i < right.size() && right[i]) ? pad + f : f + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    *out_ << line << '\n';
  };
  write_line(headers_, {});
  std::string rule;
  for (size_t i = 0; i < widths.size(); ++i) {
    if (i > 0) rule += "-+-";
    rule += std::string(widths[i], '-');
  }
  *out_ << rule << '\n';
  for (const auto& row : buffered_) {
    std::vector<std::string> fields;
    std::vector<bool> right;
    for (const auto& c : row) {
      fields.push_back(shown(c));
      right.push_back(c.kind == Cell::kNumber);
    }
    write_line(fields, right);
  }
  buffered_.clear();
}

}  // namespace basalt::tools
