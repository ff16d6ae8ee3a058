#include "tools/predicate_parser.h"

#include <utility>

#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/lexer.h"

namespace basalt::tools {

namespace {

using client::Predicate;

absl::StatusOr<Literal> ParseNonNull(TokenStream* ts) {
  const size_t pos = ts->Peek().pos;
  BASALT_ASSIGN_OR_RETURN(Literal l, ParseLiteral(ts));
  if (l.kind == Literal::kNull) {
    return ts->ErrorAt(pos, "NULL cannot be compared; use IS NULL or IS NOT NULL");
  }
  return l;
}

// One term; BETWEEN appends two predicates.
absl::Status ParseTerm(TokenStream* ts, std::vector<PredicateDef>* out) {
  PredicateDef p;
  p.pos = ts->Peek().pos;
  BASALT_ASSIGN_OR_RETURN(p.column, ts->ExpectIdentifier("a column name"));
  if (ts->ConsumeKeyword("IS")) {
    p.kind = ts->ConsumeKeyword("NOT") ? PredicateDef::kIsNotNull : PredicateDef::kIsNull;
    BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("NULL"));
  } else if (ts->ConsumeKeyword("IN")) {
    p.kind = PredicateDef::kInList;
    BASALT_RETURN_IF_ERROR(ts->ExpectSymbol("("));
    do {
      BASALT_ASSIGN_OR_RETURN(Literal l, ParseNonNull(ts));
      p.values.push_back(std::move(l));
    } while (ts->ConsumeSymbol(","));
    BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(")"));
  } else if (ts->ConsumeKeyword("BETWEEN")) {
    PredicateDef upper = p;
    p.op = Predicate::GREATER_EQUAL;
    upper.op = Predicate::LESS_EQUAL;
    BASALT_ASSIGN_OR_RETURN(Literal lo, ParseNonNull(ts));
    BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("AND"));
    BASALT_ASSIGN_OR_RETURN(Literal hi, ParseNonNull(ts));
    p.values.push_back(std::move(lo));
    upper.values.push_back(std::move(hi));
    out->push_back(std::move(p));
    out->push_back(std::move(upper));
    return absl::OkStatus();
  } else {
    static constexpr std::pair<const char*, Predicate::ComparisonOp> kOps[] = {
        {"<", Predicate::LESS},
        {"<=", Predicate::LESS_EQUAL},
        {"=", Predicate::EQUAL},
        {">=", Predicate::GREATER_EQUAL},
        {">", Predicate::GREATER}};
    bool found = false;
    for (const auto& [sym, op] : kOps) {
      if (ts->ConsumeSymbol(sym)) {
        p.op = op;
        found = true;
        break;
      }
    }
    if (!found) {
      return ts->ErrorAtNext("expected <, <=, =, >=, >, IN, BETWEEN or IS [NOT] NULL");
    }
    BASALT_ASSIGN_OR_RETURN(Literal l, ParseNonNull(ts));
    p.values.push_back(std::move(l));
  }
  out->push_back(std::move(p));
  return absl::OkStatus();
}

}  // namespace

absl::Status ParsePredicateConjunction(TokenStream* ts, std::vector<PredicateDef>* out) {
  do {
    BASALT_RETURN_IF_ERROR(ParseTerm(ts, out));
  } while (ts->ConsumeKeyword("AND"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PredicateDef>> ParsePredicates(std::string_view expr) {
  BASALT_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(expr));
  TokenStream ts(expr, std::move(tokens));
  std::vector<PredicateDef> preds;
  if (ts.AtEnd()) return preds;
  BASALT_RETURN_IF_ERROR(ParsePredicateConjunction(&ts, &preds));
  if (!ts.AtEnd()) return ts.ErrorAtNext("expected AND or the end of the predicates");
  return preds;
}

}  // namespace basalt::tools
