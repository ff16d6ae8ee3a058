// `basalt sql <masters> ["<SELECT ...>"]`: one SELECT over one table (docs/sql.md), planned into a
// scan that pushes what it can to the tablet servers (sql_planner.h); without a query, a shell
// reading statements ended by ';' (line editing and history through libedit when the input is a
// terminal, ~/.basalt_sql_history).

#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "editline/readline.h"
#include "tools/output.h"
#include "tools/sql_parser.h"
#include "tools/sql_planner.h"
#include "tools/tool_common.h"

namespace basalt::tools {

namespace {

using client::ColumnSchema;

// A cell as a sort key: NULL first, then integers, floating point or bytes by value.
struct SortValue {
  enum Kind { kNull, kInt, kDouble, kBytes };
  Kind kind = kNull;
  absl::int128 i = 0;
  double d = 0;
  std::string s;
};

SortValue ValueOf(const client::ScanBatch& batch, int column, int64_t row) {
  SortValue v;
  const client::ScanBatch::ColumnView view = batch.Column(column);
  if (view.IsNull(row)) return v;
  const char* cell = static_cast<const char*>(view.data) + row * view.cell_size;
  switch (view.type) {
    case ColumnSchema::FLOAT: {
      float f;
      std::memcpy(&f, cell, sizeof(f));
      v.kind = SortValue::kDouble;
      v.d = f;
      return v;
    }
    case ColumnSchema::DOUBLE:
      v.kind = SortValue::kDouble;
      std::memcpy(&v.d, cell, sizeof(v.d));
      return v;
    case ColumnSchema::STRING:
    case ColumnSchema::BINARY:
    case ColumnSchema::VARCHAR:
      v.kind = SortValue::kBytes;
      v.s = std::string(view.GetString(row));
      return v;
    default:
      break;
  }
  // Integer-backed: BOOL, INT8..INT64, DATE, UNIXTIME_MICROS, DECIMAL (4, 8 or 16 bytes).
  v.kind = SortValue::kInt;
  switch (view.cell_size) {
    case 1: {
      int8_t x;
      std::memcpy(&x, cell, 1);
      v.i = view.type == ColumnSchema::BOOL ? static_cast<uint8_t>(x) : x;
      break;
    }
    case 2: {
      int16_t x;
      std::memcpy(&x, cell, 2);
      v.i = x;
      break;
    }
    case 4: {
      int32_t x;
      std::memcpy(&x, cell, 4);
      v.i = x;
      break;
    }
    case 8: {
      int64_t x;
      std::memcpy(&x, cell, 8);
      v.i = x;
      break;
    }
    default:
      std::memcpy(&v.i, cell, sizeof(v.i));
      break;
  }
  return v;
}

int Compare(const SortValue& a, const SortValue& b) {
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;  // NULL first.
  switch (a.kind) {
    case SortValue::kNull:
      return 0;
    case SortValue::kInt:
      return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
    case SortValue::kDouble: {
      // IEEE total order (NaN above +inf, -0.0 below +0.0), as aggregate groups are ordered.
      auto order = [](double d) {
        uint64_t u;
        std::memcpy(&u, &d, sizeof(u));
        return (u >> 63) != 0 ? ~u : (u | (uint64_t{1} << 63));
      };
      return order(a.d) < order(b.d) ? -1 : order(a.d) > order(b.d) ? 1 : 0;
    }
    case SortValue::kBytes:
      return a.s.compare(b.s) < 0 ? -1 : a.s == b.s ? 0 : 1;
  }
  return 0;
}

// One statement: parse, plan, scan, print. Tables opened before are reused.
class SqlSession {
 public:
  SqlSession(std::shared_ptr<client::Client> client, TableWriter::Format format, std::ostream* out,
             std::ostream* err)
      : client_(std::move(client)), format_(format), out_(out), err_(err) {}

  absl::Status Run(const std::string& sql) {
    BASALT_ASSIGN_OR_RETURN(SelectStmt stmt, ParseSelect(sql));
    client::Table* table = nullptr;
    BASALT_RETURN_IF_ERROR(OpenTable(stmt.table, &table));
    BASALT_ASSIGN_OR_RETURN(SqlPlan plan, PlanSelect(sql, stmt, table->schema()));
    if (stmt.explain) {
      // The scanner checks what the plan cannot (an aggregate's column type) without a scan.
      client::Scanner check(table);
      BASALT_RETURN_IF_ERROR(ConfigureScanner(plan, table, &check));
      *out_ << ExplainPlan(plan);
      return absl::OkStatus();
    }
    client::Scanner scanner(table);
    BASALT_RETURN_IF_ERROR(ConfigureScanner(plan, table, &scanner));
    BASALT_RETURN_IF_ERROR(scanner.SetTimeoutMillis(static_cast<int>(OperationTimeout().count())));
    BASALT_RETURN_IF_ERROR(scanner.Open());
    TableWriter w(format_, plan.headers, out_);
    struct Row {
      std::vector<SortValue> keys;
      std::vector<Cell> cells;
    };
    std::vector<Row> rows;
    int64_t printed = 0;
    const int64_t limit = plan.limit.value_or(-1);
    client::ScanBatch batch;
    while (scanner.HasMoreRows() && (!plan.sort.empty() || limit < 0 || printed < limit)) {
      BASALT_RETURN_IF_ERROR(scanner.NextBatch(&batch));
      for (int64_t r = 0; r < batch.NumRows(); r++) {
        Row row;
        for (int c : plan.outputs) row.cells.push_back(FormatCell(batch, c, r));
        if (plan.sort.empty()) {
          if (limit >= 0 && printed >= limit) break;
          w.AddRow(std::move(row.cells));
          printed++;
          continue;
        }
        for (const SqlPlan::SortKey& k : plan.sort) row.keys.push_back(ValueOf(batch, k.column, r));
        rows.push_back(std::move(row));
      }
    }
    scanner.Close();
    if (!plan.sort.empty()) {
      std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
        for (size_t k = 0; k < plan.sort.size(); k++) {
          const int c = Compare(a.keys[k], b.keys[k]);
          if (c != 0) return plan.sort[k].descending ? c > 0 : c < 0;
        }
        return false;
      });
      for (Row& row : rows) {
        if (limit >= 0 && printed >= limit) break;
        w.AddRow(std::move(row.cells));
        printed++;
      }
    }
    w.Finish();
    if (format_ == TableWriter::kTable) *err_ << "(" << printed << " rows)\n";
    return absl::OkStatus();
  }

 private:
  absl::Status OpenTable(const std::string& name, client::Table** table) {
    auto it = tables_.find(name);
    if (it == tables_.end()) {
      std::shared_ptr<client::Table> t;
      BASALT_RETURN_IF_ERROR(client_->OpenTable(name, &t));
      it = tables_.emplace(name, std::move(t)).first;
    }
    *table = it->second.get();
    return absl::OkStatus();
  }

  std::shared_ptr<client::Client> client_;
  const TableWriter::Format format_;
  std::ostream* const out_;
  std::ostream* const err_;
  std::map<std::string, std::shared_ptr<client::Table>> tables_;
};

// Splits off the statements ended by ';' (outside quotes) at the front of *buffer.
std::vector<std::string> TakeStatements(std::string* buffer) {
  std::vector<std::string> out;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < buffer->size(); i++) {
    const char c = (*buffer)[i];
    if (quote != 0) {
      if (c == quote) quote = 0;  // A doubled quote reopens at once: same effect.
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ';') {
      std::string stmt = buffer->substr(start, i - start);
      // Trimmed, so that error carets count from the statement's first word.
      stmt.erase(0, std::min(stmt.size(), stmt.find_first_not_of(" \t\r\n")));
      out.push_back(std::move(stmt));
      start = i + 1;
    }
  }
  buffer->erase(0, start);
  return out;
}

bool IsBlank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

bool IsQuit(const std::string& s) {
  std::string t;
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c)) && c != ';') {
      t.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return t == "quit" || t == "exit" || t == "\\q";
}

// Runs one statement, reporting its error; returns whether it succeeded.
bool RunReported(SqlSession* session, const std::string& sql, std::ostream* err) {
  absl::Status s = session->Run(sql);
  if (s.ok()) return true;
  *err << "Error: " << s.message() << "\n";
  return false;
}

// The shell on a terminal: libedit for editing and history.
absl::Status InteractiveShell(SqlSession* session, std::ostream* err) {
  const char* home = std::getenv("HOME");
  const std::string history = StrCat(home != nullptr ? home : ".", "/.basalt_sql_history");
  using_history();
  read_history(history.c_str());
  *err << "basalt sql: end statements with ';', quit with \\q or Ctrl-D\n";
  std::string buffer;
  while (true) {
    char* line = readline(buffer.empty() ? "basalt> " : "   ...> ");
    if (line == nullptr) break;
    const std::string text(line);
    std::free(line);
    if (buffer.empty() && IsQuit(text)) break;
    if (!IsBlank(text)) add_history(text.c_str());
    buffer += text + "\n";
    for (const std::string& stmt : TakeStatements(&buffer)) {
      if (!IsBlank(stmt)) RunReported(session, stmt, err);
    }
    if (IsBlank(buffer)) buffer.clear();
  }
  write_history(history.c_str());
  return absl::OkStatus();
}

absl::Status Failed(int failed) {
  if (failed == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat(failed, " statement(s) failed"));
}

// Statements from a pipe or file: each runs; the first failure is returned at the end.
absl::Status ScriptShell(SqlSession* session, std::istream* in, std::ostream* err) {
  std::string buffer;
  std::string line;
  int failed = 0;
  while (std::getline(*in, line)) {
    if (IsBlank(buffer) && IsQuit(line)) return Failed(failed);
    buffer += line + "\n";
    for (const std::string& stmt : TakeStatements(&buffer)) {
      if (IsBlank(stmt) || IsQuit(stmt)) continue;
      if (!RunReported(session, stmt, err)) failed++;
    }
  }
  if (!IsBlank(buffer) && !RunReported(session, buffer, err)) failed++;
  return Failed(failed);
}

absl::Status Sql(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(TableWriter::Format format, OutputFormat());
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(ctx.args[0], &client));
  SqlSession session(std::move(client), format, ctx.out, ctx.err);
  if (ctx.args.size() > 1) return session.Run(ctx.args[1]);
  if (isatty(STDIN_FILENO)) return InteractiveShell(&session, ctx.err);
  return ScriptShell(&session, &std::cin, ctx.err);
}

}  // namespace

Command SqlCommand() {
  Command c{"sql", "Run SELECT statements over a table (docs/sql.md)", {}};
  c.actions.push_back(
      {"",
       "Run a SELECT over one table, or a shell of them",
       "SELECT items FROM table [WHERE ...] [GROUP BY ...] [ORDER BY ...] [LIMIT n]: columns, "
       "COUNT(*), COUNT/SUM/MIN/MAX/AVG/FIRST/LAST(column) and time_bucket(column, interval) "
       "with GROUP BY; predicates (comparisons, IN, IS [NOT] NULL, BETWEEN) joined by AND. "
       "Predicates, aggregates and groups run in the tablet servers; the client merges, sorts "
       "and limits. EXPLAIN SELECT ... prints the plan. Without <query>, reads statements ended "
       "by ';' from the terminal (with line editing and history) or from standard input.",
       {MasterAddressesArg(), {"query", "one SELECT statement (quote it for the shell)", true}},
       {"format"},
       Sql});
  return c;
}

}  // namespace basalt::tools
