#include "tools/csv.h"

#include "absl/status/status.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt::tools {

absl::StatusOr<bool> CsvReader::Next(std::vector<CsvField>* fields) {
  fields->clear();
  if (pos_ >= data_.size()) return false;
  record_line_ = line_;
  while (true) {
    CsvField field;
    if (data_[pos_] == '"') {
      BASALT_RETURN_IF_ERROR(ReadQuoted(&field));
    } else {
      BASALT_RETURN_IF_ERROR(ReadUnquoted(&field));
    }
    fields->push_back(std::move(field));
    if (pos_ >= data_.size()) return true;
    const char c = data_[pos_++];
    if (c == ',') {
      if (pos_ >= data_.size()) {
        fields->emplace_back();
        return true;
      }
      continue;
    }
    if (c == '\r' && pos_ < data_.size() && data_[pos_] == '\n') ++pos_;
    ++line_;  // c is '\n' or '\r'.
    return true;
  }
}

absl::Status CsvReader::ReadUnquoted(CsvField* field) {
  const size_t start = pos_;
  while (pos_ < data_.size()) {
    const char c = data_[pos_];
    if (c == ',' || c == '\n' || c == '\r') break;
    if (c == '"') {
      return absl::InvalidArgumentError(
          StrCat("line ", line_, ": quote inside an unquoted field (quote the whole field)"));
    }
    ++pos_;
  }
  field->value = std::string(data_.substr(start, pos_ - start));
  return absl::OkStatus();
}

absl::Status CsvReader::ReadQuoted(CsvField* field) {
  const int start_line = line_;
  field->quoted = true;
  ++pos_;  // The opening quote.
  while (true) {
    if (pos_ >= data_.size()) {
      return absl::InvalidArgumentError(
          StrCat("line ", start_line, ": quoted field is not closed before the end of the file"));
    }
    const char c = data_[pos_++];
    if (c == '"') {
      if (pos_ < data_.size() && data_[pos_] == '"') {
        field->value.push_back('"');
        ++pos_;
        continue;
      }
      break;
    }
    if (c == '\n') ++line_;
    field->value.push_back(c);
  }
  if (pos_ < data_.size() && data_[pos_] != ',' && data_[pos_] != '\n' && data_[pos_] != '\r') {
    return absl::InvalidArgumentError(
        StrCat("line ", line_, ": unexpected text after a closing quote"));
  }
  return absl::OkStatus();
}

}  // namespace basalt::tools
