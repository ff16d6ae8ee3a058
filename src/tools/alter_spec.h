#pragma once

// The ALTER TABLE spec of `basalt table alter` (grammar: docs/cli.md), parsed into an AlterSpec.
// It shares the tokenizer (lexer.h) and the column and range-partition syntax of CREATE TABLE
// (table_spec.h). Pure: no I/O; literals of range bounds are bound to column types by the caller.
//
//   ALTER TABLE metrics ADD COLUMN note STRING DEFAULT '', DROP COLUMN old,
//     RENAME COLUMN value TO v, ADD RANGE PARTITION VALUES >= 2000 AND < 3000, RENAME TO m2

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/table_spec.h"

namespace basalt::tools {

// One step of an ALTER TABLE spec.
struct AlterStep {
  enum Kind {
    kRenameTable,        // RENAME TO new_name
    kAddColumn,          // ADD COLUMN column
    kDropColumn,         // DROP COLUMN name
    kRenameColumn,       // RENAME COLUMN name TO new_name (or ALTER COLUMN name RENAME TO new_name)
    kAddRangePartition,  // ADD RANGE PARTITION range
    kDropRangePartition,  // DROP RANGE PARTITION range
  };
  Kind kind = kRenameTable;
  std::string name;         // The column of column steps.
  std::string new_name;     // kRenameTable, kRenameColumn.
  ColumnSpecDef column;     // kAddColumn.
  RangePartitionDef range;  // Range steps.
  size_t pos = 0;           // Where the step starts in the spec (for errors).
  std::string range_text;   // Range steps: the bounds as written ("VALUES >= 0 AND < 10").
};

struct AlterSpec {
  std::string table_name;
  std::vector<AlterStep> steps;  // At least one, in the order written.
};

// Parses a spec. Errors are INVALID_ARGUMENT naming the bad token, its position and a caret line,
// including for steps the client cannot perform (ALTER COLUMN ... SET/DROP DEFAULT and other
// column changes but RENAME TO), a second RENAME TO, a key column or a NOT NULL column without
// DEFAULT added, and defaults that do not fit the added column's type.
absl::StatusOr<AlterSpec> ParseAlterSpec(std::string_view spec);

// A step in words for the summary line: "added column c", "dropped column c", "renamed column a
// to b", "renamed table to t2", "added range partition VALUES >= 0 AND < 10".
std::string AlterStepSummary(const AlterStep& step);

}  // namespace basalt::tools
