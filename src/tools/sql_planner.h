#pragma once

// Plans a parsed SELECT (sql_parser.h) against a table's schema: what the scan pushes to every
// tablet (projection or aggregates and groups, predicates, the limit when nothing is sorted after
// it) and what the client does with the rows (merge, sort, limit, which columns to print in which
// order). docs/sql.md has the rules.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"
#include "tools/sql_parser.h"

namespace basalt::tools {

struct SqlPlan {
  std::string table;
  bool aggregate = false;
  // Row scans: the projected columns. Aggregate scans: the groups and aggregates, in the
  // scanner's result order (groups first).
  std::vector<std::string> projection;
  struct Group {
    std::string column;
    int64_t width_micros = 0;
    int64_t offset_micros = 0;
    std::string text;
  };
  std::vector<Group> groups;
  struct Aggregate {
    client::Scanner::AggregateFunction function = client::Scanner::COUNT_ALL;
    std::string column;
    std::string text;
  };
  std::vector<Aggregate> aggregates;
  std::vector<PredicateDef> predicates;
  // Printed columns: the scanner's result column each comes from, and its header.
  std::vector<int> outputs;
  std::vector<std::string> headers;
  // Sort (after the scan) by these scanner result columns.
  struct SortKey {
    int column = 0;
    bool descending = false;
    std::string text;
  };
  std::vector<SortKey> sort;
  std::optional<int64_t> limit;
  bool limit_pushed = false;  // Sent with the scan (nothing is sorted after it).
};

// INVALID_ARGUMENT (pointing at the item in `sql`) for: an unknown column; an aggregate of a
// type it does not take; a selected column neither grouped nor aggregated; a GROUP BY or ORDER
// BY position out of range or naming an aggregate; `*` beside aggregates; time_bucket outside
// an aggregate query.
absl::StatusOr<SqlPlan> PlanSelect(std::string_view sql, const SelectStmt& stmt,
                                   const client::Schema& schema);

// Configures `scanner` (of `table`) as `plan` says.
absl::Status ConfigureScanner(const SqlPlan& plan, client::Table* table, client::Scanner* scanner);

// What EXPLAIN prints: the work pushed to the tablets and the work of the client, one step per
// line.
std::string ExplainPlan(const SqlPlan& plan);

}  // namespace basalt::tools
