#include "tools/alter_spec.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/lexer.h"

namespace basalt::tools {

namespace {

// ADD COLUMN <column definition>: no key columns; NOT NULL needs a DEFAULT.
absl::Status ParseAddColumn(TokenStream* ts, AlterStep* step) {
  bool primary_key = false;
  BASALT_RETURN_IF_ERROR(ParseColumnDef(ts, &step->column, &primary_key));
  const ColumnSpecDef& col = step->column;
  if (primary_key) {
    return ts->ErrorAt(col.pos, StrCat("column '", col.name, "': key columns cannot be added"));
  }
  if (col.nullable == false && !col.default_value) {
    return ts->ErrorAt(col.pos, StrCat("column '", col.name,
                                       "': a NOT NULL column added to a table needs a DEFAULT"));
  }
  step->name = col.name;
  return ValidateColumnDefault(*ts, col);
}

// [ADD | DROP] RANGE PARTITION <range as in CREATE TABLE>; keeps the bounds' text.
absl::Status ParseRangeStep(std::string_view input, TokenStream* ts, AlterStep* step) {
  BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("RANGE"));
  const size_t start = ts->Peek(1).pos;  // After PARTITION.
  BASALT_ASSIGN_OR_RETURN(step->range, ParseRangePartition(ts));
  const std::string_view text = input.substr(start, ts->Peek().pos - start);
  step->range_text = std::string(absl::StripTrailingAsciiWhitespace(ToAbsl(text)));
  // One line, for the summary.
  std::replace_if(
      step->range_text.begin(), step->range_text.end(),
      [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  return absl::OkStatus();
}

// ALTER COLUMN name RENAME TO new_name. The other column changes of SQL (SET/DROP DEFAULT, SET
// NOT NULL, TYPE ...) are errors: the client's TableAlterer::AlterColumn supports only RenameTo.
absl::Status ParseAlterColumn(TokenStream* ts, AlterStep* step) {
  BASALT_ASSIGN_OR_RETURN(step->name, ts->ExpectIdentifier("a column name"));
  if (!ts->PeekKeyword("RENAME")) {
    if (ts->PeekKeyword("SET") || ts->PeekKeyword("DROP")) {
      return ts->ErrorAtNext(
          "ALTER COLUMN supports only RENAME TO (changing defaults is not supported yet)");
    }
    return ts->ErrorAtNext("expected RENAME TO");
  }
  ts->Next();
  BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("TO"));
  step->kind = AlterStep::kRenameColumn;
  BASALT_ASSIGN_OR_RETURN(step->new_name, ts->ExpectIdentifier("the new column name"));
  return absl::OkStatus();
}

absl::Status ParseRename(TokenStream* ts, AlterStep* step) {
  if (ts->ConsumeKeyword("COLUMN")) {
    step->kind = AlterStep::kRenameColumn;
    BASALT_ASSIGN_OR_RETURN(step->name, ts->ExpectIdentifier("a column name"));
    BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("TO"));
    BASALT_ASSIGN_OR_RETURN(step->new_name, ts->ExpectIdentifier("the new column name"));
    return absl::OkStatus();
  }
  if (!ts->PeekKeyword("TO")) return ts->ErrorAtNext("expected TO or COLUMN");
  ts->Next();
  step->kind = AlterStep::kRenameTable;
  BASALT_ASSIGN_OR_RETURN(step->new_name, ts->ExpectIdentifier("the new table name"));
  return absl::OkStatus();
}

absl::StatusOr<AlterStep> ParseStep(std::string_view input, TokenStream* ts) {
  AlterStep step;
  step.pos = ts->Peek().pos;
  if (ts->ConsumeKeyword("ADD")) {
    if (ts->ConsumeKeyword("COLUMN")) {
      step.kind = AlterStep::kAddColumn;
      BASALT_RETURN_IF_ERROR(ParseAddColumn(ts, &step));
      return step;
    }
    if (!ts->PeekKeyword("RANGE")) return ts->ErrorAtNext("expected COLUMN or RANGE PARTITION");
    step.kind = AlterStep::kAddRangePartition;
    BASALT_RETURN_IF_ERROR(ParseRangeStep(input, ts, &step));
  } else if (ts->ConsumeKeyword("DROP")) {
    if (ts->ConsumeKeyword("COLUMN")) {
      step.kind = AlterStep::kDropColumn;
      BASALT_ASSIGN_OR_RETURN(step.name, ts->ExpectIdentifier("a column name"));
      return step;
    }
    if (!ts->PeekKeyword("RANGE")) return ts->ErrorAtNext("expected COLUMN or RANGE PARTITION");
    step.kind = AlterStep::kDropRangePartition;
    BASALT_RETURN_IF_ERROR(ParseRangeStep(input, ts, &step));
  } else if (ts->ConsumeKeyword("RENAME")) {
    BASALT_RETURN_IF_ERROR(ParseRename(ts, &step));
  } else if (ts->ConsumeKeyword("ALTER")) {
    BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("COLUMN"));
    BASALT_RETURN_IF_ERROR(ParseAlterColumn(ts, &step));
  } else {
    return ts->ErrorAtNext("expected ADD, DROP, RENAME or ALTER");
  }
  return step;
}

}  // namespace

absl::StatusOr<AlterSpec> ParseAlterSpec(std::string_view input) {
  BASALT_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(input));
  TokenStream ts(input, std::move(tokens));
  AlterSpec spec;
  BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("ALTER"));
  BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("TABLE"));
  BASALT_ASSIGN_OR_RETURN(spec.table_name, ts.ExpectIdentifier("a table name"));
  bool renamed = false;
  do {
    BASALT_ASSIGN_OR_RETURN(AlterStep step, ParseStep(input, &ts));
    if (step.kind == AlterStep::kRenameTable) {
      if (renamed) return ts.ErrorAt(step.pos, "the table is renamed twice");
      renamed = true;
    }
    spec.steps.push_back(std::move(step));
  } while (ts.ConsumeSymbol(","));
  if (!ts.AtEnd()) return ts.ErrorAtNext("expected ',' or the end of the spec");
  return spec;
}

std::string AlterStepSummary(const AlterStep& step) {
  switch (step.kind) {
    case AlterStep::kRenameTable:
      return StrCat("renamed table to ", step.new_name);
    case AlterStep::kAddColumn:
      return StrCat("added column ", step.name);
    case AlterStep::kDropColumn:
      return StrCat("dropped column ", step.name);
    case AlterStep::kRenameColumn:
      return StrCat("renamed column ", step.name, " to ", step.new_name);
    case AlterStep::kAddRangePartition:
      return StrCat("added range partition ", step.range_text);
    case AlterStep::kDropRangePartition:
      return StrCat("dropped range partition ", step.range_text);
  }
  return "";
}

}  // namespace basalt::tools
