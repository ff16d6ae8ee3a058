// `basalt table load <master> <table> <file.csv>`: bulk-loads a CSV file (docs/cli.md).
//
// The whole file is parsed and every value converted first; rows are written only when all of
// them are valid, so a malformed line never leaves a partly loaded table behind.

#include <gflags/gflags.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/bulk_write.h"
#include "tools/csv.h"
#include "tools/table_spec.h"
#include "tools/tool_common.h"

DECLARE_string(columns);
DEFINE_int32(load_buffer_size_mb, 32, "Mutation buffer of table load's session, MiB.");
DEFINE_int32(load_max_error_examples, 5, "How many failed rows table load shows.");

namespace basalt::tools {

namespace {

using client::ColumnSchema;

// The literal a CSV field stands for in a column of `type`.
Literal FieldLiteral(const std::string& text, ColumnSchema::DataType type) {
  Literal l;
  l.text = text;
  switch (type) {
    case ColumnSchema::STRING:
    case ColumnSchema::BINARY:
    case ColumnSchema::VARCHAR:
      l.kind = Literal::kString;
      return l;
    default:
      break;
  }
  l.text = std::string(absl::StripAsciiWhitespace(text));
  int64_t unused = 0;
  switch (type) {
    case ColumnSchema::BOOL:
      l.kind = Literal::kBool;
      l.text = absl::AsciiStrToLower(l.text);
      if (l.text != "true" && l.text != "false") l.kind = Literal::kString;
      break;
    case ColumnSchema::FLOAT:
    case ColumnSchema::DOUBLE:
    case ColumnSchema::DECIMAL:
      l.kind = Literal::kFloat;
      break;
    case ColumnSchema::UNIXTIME_MICROS:
    case ColumnSchema::DATE:
      l.kind = absl::SimpleAtoi(l.text, &unused) ? Literal::kInteger : Literal::kString;
      break;
    default:
      l.kind = Literal::kInteger;
      break;
  }
  return l;
}

// The columns the CSV fields map to, with their schema indexes.
struct LoadColumns {
  std::vector<int> indexes;
  std::vector<ColumnSchema> columns;
};

absl::StatusOr<LoadColumns> ResolveColumns(const client::Schema& schema,
                                           const std::vector<std::string>& names) {
  LoadColumns lc;
  for (const std::string& n : names) {
    const int idx = schema.FindColumn(std::string(absl::StripAsciiWhitespace(n)));
    if (idx < 0) return absl::InvalidArgumentError(StrCat("table has no column '", n, "'"));
    if (std::find(lc.indexes.begin(), lc.indexes.end(), idx) != lc.indexes.end()) {
      return absl::InvalidArgumentError(StrCat("column '", n, "' is named twice"));
    }
    lc.indexes.push_back(idx);
    lc.columns.push_back(schema.Column(idx));
  }
  for (int i = 0; i < schema.num_columns(); ++i) {
    const ColumnSchema col = schema.Column(i);
    const bool named = std::find(lc.indexes.begin(), lc.indexes.end(), i) != lc.indexes.end();
    if (!named && !col.is_nullable() && !col.default_value().has_value()) {
      return absl::InvalidArgumentError(
          StrCat("column '", col.name(), "' is NOT NULL without a default but is not loaded"));
    }
  }
  return lc;
}

// Sets the fields of one record on `row`; errors name the column.
absl::Status SetRecord(const std::vector<CsvField>& fields, const LoadColumns& lc,
                       client::PartialRow* row) {
  if (fields.size() != lc.columns.size()) {
    return absl::InvalidArgumentError(
        StrCat("expected ", lc.columns.size(), " field(s), got ", fields.size()));
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    const ColumnSchema& col = lc.columns[i];
    auto column_error = [&](auto msg) {
      return absl::InvalidArgumentError(StrCat("column '", col.name(), "': ", msg));
    };
    if (!fields[i].quoted && fields[i].value.empty()) {
      if (col.is_nullable()) {
        BASALT_RETURN_IF_ERROR(row->SetNull(lc.indexes[i]));
        continue;
      }
      if (col.default_value().has_value()) continue;
      return column_error("empty value for a NOT NULL column");
    }
    auto v = LiteralToValue(FieldLiteral(fields[i].value, col.type()), col.type(), col.scale());
    if (!v.ok()) return column_error(v.status().message());
    const absl::Status s = row->Set(lc.indexes[i], *v);
    if (!s.ok()) return column_error(s.message());
  }
  return absl::OkStatus();
}

// Calls `fn(fields, line)` for every data record of `data` (after the header when `header`).
template <typename Fn>
absl::Status ForEachRecord(std::string_view data, bool header, Fn fn) {
  CsvReader reader(data);
  std::vector<CsvField> fields;
  if (header) BASALT_RETURN_IF_ERROR(reader.Next(&fields).status());
  while (true) {
    BASALT_ASSIGN_OR_RETURN(bool more, reader.Next(&fields));
    if (!more) return absl::OkStatus();
    BASALT_RETURN_IF_ERROR(fn(fields, reader.record_line()));
  }
}

absl::StatusOr<std::string> ReadCsvFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot open '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::DataLossError(StrCat("cannot read '", path, "'"));
  return ss.str();
}

// The first pass: the columns, and the number of rows once every record has been checked.
absl::StatusOr<int64_t> ValidateFile(const std::string& path, std::string_view data,
                                     const client::Schema& schema, LoadColumns* lc) {
  std::vector<std::string> names;
  if (!FLAGS_columns.empty()) {
    names = absl::StrSplit(FLAGS_columns, ',');
  } else {
    CsvReader header(data);
    std::vector<CsvField> fields;
    BASALT_ASSIGN_OR_RETURN(bool any, header.Next(&fields));
    if (!any) return absl::InvalidArgumentError(StrCat(path, ": empty file, no header line"));
    for (const CsvField& f : fields) names.push_back(f.value);
  }
  auto resolved = ResolveColumns(schema, names);
  if (!resolved.ok()) {
    return absl::InvalidArgumentError(
        StrCat(path, FLAGS_columns.empty() ? ": header: " : ": ", resolved.status().message()));
  }
  *lc = *std::move(resolved);
  int64_t rows = 0;
  const absl::Status s =
      ForEachRecord(data, FLAGS_columns.empty(), [&](const std::vector<CsvField>& f, int line) {
        auto row = schema.NewRow();
        BASALT_RETURN_IF_ERROR_PREPEND(SetRecord(f, *lc, row.get()), StrCat(path, ":", line));
        ++rows;
        return absl::OkStatus();
      });
  if (!s.ok() && !absl::StartsWith(s.message(), path)) {
    return absl::InvalidArgumentError(StrCat(path, ": ", s.message()));
  }
  BASALT_RETURN_IF_ERROR(s);
  return rows;
}

// Turns the session's failed rows into one error: counts and the first few examples.
absl::Status ReportRowErrors(client::Session* session, int64_t total) {
  bool overflowed = false;
  auto errors = session->GetPendingErrors(&overflowed);
  return RowErrorsStatus(errors, overflowed, total, "load", FLAGS_load_max_error_examples);
}

absl::Status LoadTable(const ActionContext& ctx) {
  const std::string& path = ctx.args[2];
  BASALT_ASSIGN_OR_RETURN(std::string data, ReadCsvFile(path));
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  std::shared_ptr<client::Table> table;
  BASALT_RETURN_IF_ERROR(client->OpenTable(ctx.args[1], &table));
  LoadColumns lc;
  BASALT_ASSIGN_OR_RETURN(int64_t total, ValidateFile(path, data, table->schema(), &lc));

  auto session = client->NewSession();
  BASALT_RETURN_IF_ERROR(session->SetFlushMode(client::Session::AUTO_FLUSH_BACKGROUND));
  BASALT_RETURN_IF_ERROR(
      session->SetMutationBufferSpace(static_cast<size_t>(FLAGS_load_buffer_size_mb) << 20));
  ProgressBar progress(ctx.err, total, ProgressEnabled());
  const absl::Time start = absl::Now();
  int64_t done = 0;
  BASALT_RETURN_IF_ERROR(
      ForEachRecord(data, FLAGS_columns.empty(), [&](const std::vector<CsvField>& f, int) {
        auto op = table->NewInsert();
        BASALT_RETURN_IF_ERROR(SetRecord(f, lc, op->mutable_row()));
        BASALT_RETURN_IF_ERROR(session->Apply(std::move(op)));
        progress.Update(++done);
        return absl::OkStatus();
      }));
  const absl::Status flushed = session->Flush();
  progress.Update(done, /*final=*/true);
  BASALT_RETURN_IF_ERROR(ReportRowErrors(session.get(), total));
  BASALT_RETURN_IF_ERROR(flushed);
  BASALT_RETURN_IF_ERROR(session->Close());
  const double secs = std::max(absl::ToDoubleSeconds(absl::Now() - start), 1e-6);
  *ctx.out << "Loaded " << total << " rows into " << ctx.args[1] << " in "
           << absl::StrFormat("%.2f s (%.0f rows/s)", secs, total / secs) << "\n";
  return absl::OkStatus();
}

}  // namespace

Action TableLoadAction() {
  return {"load",
          "Insert the rows of a CSV file into a table",
          "The first line names the columns (or --columns does, and every line is data). Fields "
          "follow RFC 4180: comma-separated, quoted with \" when they hold commas, quotes or line "
          "breaks. An empty unquoted field is NULL (or the column's default); values are written "
          "as in a CREATE TABLE spec without quotes (DATE and UNIXTIME_MICROS also as "
          "'YYYY-MM-DD[ HH:MM:SS[.ffffff]]'). The whole file is checked before anything is "
          "written; a malformed line is reported with its line number and column.",
          {MasterAddressesArg(), TableNameArg(), {"file.csv", "The CSV file to load"}},
          {"columns", "progress", "load_buffer_size_mb", "load_max_error_examples"},
          LoadTable};
}

}  // namespace basalt::tools
