#pragma once

// The SELECT statement of `basalt sql` (syntax: docs/sql.md), parsed into a SelectStmt. Pure:
// names are resolved against a table by the planner (sql_planner.h).
//
//   [EXPLAIN] SELECT item [, item ...] FROM table
//     [WHERE predicate [AND predicate ...]]
//     [GROUP BY group [, group ...]]
//     [ORDER BY name-or-position [ASC | DESC] [, ...]]
//     [LIMIT n] [;]
//   item:  * | column | aggregate(column) | COUNT(*) | time_bucket(column, interval[, offset])
//          [[AS] alias]
//   group: column | time_bucket(...) | an item's alias | an item's position (1-based)
//
// Errors are INVALID_ARGUMENT pointing at the bad token with a caret line (lexer.h).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/scanner.h"
#include "tools/predicate_parser.h"

namespace basalt::tools {

// A select item or a GROUP BY entry.
struct SqlItem {
  enum Kind {
    kStar,        // *
    kColumn,      // a column (in GROUP BY also an item's alias)
    kAggregate,   // function(column) or COUNT(*)
    kTimeBucket,  // time_bucket(column, width[, offset])
    kPosition,    // GROUP BY / ORDER BY n
  };
  Kind kind = kColumn;
  std::string column;  // Empty for COUNT(*).
  client::Scanner::AggregateFunction function = client::Scanner::COUNT_ALL;
  int64_t width_micros = 0;
  int64_t offset_micros = 0;
  int64_t position = 0;  // kPosition.
  std::string alias;     // AS alias; empty when none.
  std::string text;      // Normalized: "sum(v)", "count(*)", "time_bucket(ts, 60s)".
  size_t pos = 0;
};

struct SqlOrder {
  SqlItem item;  // kColumn (a result column's name) or kPosition.
  bool descending = false;
};

struct SelectStmt {
  bool explain = false;
  std::vector<SqlItem> items;
  std::string table;
  size_t table_pos = 0;
  std::vector<PredicateDef> where;
  std::vector<SqlItem> group_by;
  std::vector<SqlOrder> order_by;
  std::optional<int64_t> limit;
};

absl::StatusOr<SelectStmt> ParseSelect(std::string_view sql);

// An interval in microseconds: an integer (microseconds), or text such as '90s', '1h30m',
// '5 minutes' (units us, ms, s, m, h, d, w and their long names). INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> ParseInterval(std::string_view text);

}  // namespace basalt::tools
