#include "tools/scan_predicates.h"

#include <memory>
#include <vector>

#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/predicate_parser.h"
#include "tools/table_spec.h"

namespace basalt::tools {

namespace {

absl::StatusOr<std::unique_ptr<client::Predicate>> BindPredicate(const PredicateDef& p,
                                                                 std::string_view what,
                                                                 client::Table* table) {
  const client::Schema& schema = table->schema();
  const int idx = schema.FindColumn(p.column);
  if (idx < 0) {
    return absl::InvalidArgumentError(StrCat(what, ": table has no column '", p.column, "'"));
  }
  const client::ColumnSchema col = schema.Column(idx);
  std::vector<client::Value> values;
  for (const Literal& l : p.values) {
    auto v = LiteralToValue(l, col.type(), col.scale());
    if (!v.ok()) return absl::InvalidArgumentError(StrCat(what, ": ", v.status().message()));
    values.push_back(*std::move(v));
  }
  switch (p.kind) {
    case PredicateDef::kComparison:
      return table->NewComparisonPredicate(p.column, p.op, values[0]);
    case PredicateDef::kInList:
      return table->NewInListPredicate(p.column, values);
    case PredicateDef::kIsNull:
      return table->NewIsNullPredicate(p.column);
    case PredicateDef::kIsNotNull:
      return table->NewIsNotNullPredicate(p.column);
  }
  return absl::InternalError("unknown predicate kind");
}

}  // namespace

absl::Status AddScanPredicates(std::string_view expr, client::Table* table,
                               client::Scanner* scanner) {
  auto preds = ParsePredicates(expr);
  if (!preds.ok()) {
    return absl::InvalidArgumentError(StrCat("--predicates: ", preds.status().message()));
  }
  return AddPredicateDefs(*preds, "--predicates", table, scanner);
}

absl::Status AddPredicateDefs(const std::vector<PredicateDef>& preds, std::string_view what,
                              client::Table* table, client::Scanner* scanner) {
  for (const PredicateDef& p : preds) {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<client::Predicate> pred, BindPredicate(p, what, table));
    BASALT_RETURN_IF_ERROR(scanner->AddConjunctPredicate(std::move(pred)));
  }
  return absl::OkStatus();
}

}  // namespace basalt::tools
