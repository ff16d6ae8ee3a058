#include "tools/sql_parser.h"

#include <cctype>
#include <utility>

#include "absl/strings/numbers.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/lexer.h"

namespace basalt::tools {

namespace {

using client::Scanner;

constexpr std::pair<const char*, Scanner::AggregateFunction> kFunctions[] = {
    {"count", Scanner::COUNT}, {"sum", Scanner::SUM}, {"min", Scanner::MIN},
    {"max", Scanner::MAX},     {"avg", Scanner::AVG}, {"first", Scanner::FIRST},
    {"last", Scanner::LAST},
};

// Words that end an item; never taken as an alias without AS.
constexpr const char* kClauseWords[] = {"FROM", "WHERE", "GROUP", "ORDER", "LIMIT", "AS"};

constexpr std::pair<const char*, int64_t> kUnits[] = {
    {"us", 1},
    {"microsecond", 1},
    {"microseconds", 1},
    {"ms", 1000},
    {"millisecond", 1000},
    {"milliseconds", 1000},
    {"s", 1000000},
    {"sec", 1000000},
    {"second", 1000000},
    {"seconds", 1000000},
    {"m", 60000000},
    {"min", 60000000},
    {"minute", 60000000},
    {"minutes", 60000000},
    {"h", 3600000000LL},
    {"hour", 3600000000LL},
    {"hours", 3600000000LL},
    {"d", 86400000000LL},
    {"day", 86400000000LL},
    {"days", 86400000000LL},
    {"w", 604800000000LL},
    {"week", 604800000000LL},
    {"weeks", 604800000000LL},
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An interval argument of time_bucket: an integer (microseconds), a number directly followed by
// a unit (60s, 1m) or quoted text ('1h30m').
absl::StatusOr<int64_t> ParseIntervalTokens(TokenStream* ts, std::string_view what) {
  const Token t = ts->Peek();
  if (t.kind == Token::kString) {
    ts->Next();
    absl::StatusOr<int64_t> v = ParseInterval(t.text);
    if (!v.ok()) return ts->ErrorAt(t.pos, StrCat(what, ": ", v.status().message()));
    return v;
  }
  if (t.kind != Token::kNumber) {
    return ts->ErrorAtNext(StrCat("expected ", what, " (microseconds, or text such as '1m')"));
  }
  ts->Next();
  std::string text = t.text;
  // 60s or 5 minutes: the lexer splits the number from its unit. Only ',' or ')' may follow an
  // interval, so an identifier here is its unit.
  if (ts->Peek().kind == Token::kIdent) StrAppend(&text, " ", ts->Next().text);
  absl::StatusOr<int64_t> v = ParseInterval(text);
  if (!v.ok()) return ts->ErrorAt(t.pos, StrCat(what, ": ", v.status().message()));
  return v;
}

absl::StatusOr<std::string> ParseColumnName(TokenStream* ts) {
  return ts->ExpectIdentifier("a column name");
}

absl::Status ParseTimeBucket(TokenStream* ts, SqlItem* item) {
  item->kind = SqlItem::kTimeBucket;
  BASALT_RETURN_IF_ERROR(ts->ExpectSymbol("("));
  BASALT_ASSIGN_OR_RETURN(item->column, ParseColumnName(ts));
  BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(","));
  const size_t width_pos = ts->Peek().pos;
  BASALT_ASSIGN_OR_RETURN(item->width_micros, ParseIntervalTokens(ts, "the bucket width"));
  if (item->width_micros <= 0) return ts->ErrorAt(width_pos, "the bucket width must be positive");
  item->text = StrCat("time_bucket(", item->column, ", ", item->width_micros);
  if (ts->ConsumeSymbol(",")) {
    BASALT_ASSIGN_OR_RETURN(item->offset_micros, ParseIntervalTokens(ts, "the bucket offset"));
    StrAppend(&item->text, ", ", item->offset_micros);
  }
  item->text += ")";
  return ts->ExpectSymbol(")");
}

// A column, an aggregate or a time bucket (no alias).
absl::StatusOr<SqlItem> ParseExpression(TokenStream* ts, bool allow_aggregate) {
  SqlItem item;
  item.pos = ts->Peek().pos;
  if (ts->Peek().kind == Token::kIdent && ts->Peek(1).kind == Token::kSymbol &&
      ts->Peek(1).text == "(") {
    const std::string name = Lower(ts->Peek().text);
    if (name == "time_bucket") {
      ts->Next();
      BASALT_RETURN_IF_ERROR(ParseTimeBucket(ts, &item));
      return item;
    }
    for (const auto& [fname, f] : kFunctions) {
      if (name != fname) continue;
      if (!allow_aggregate) return ts->ErrorAtNext("an aggregate cannot be grouped by");
      ts->Next();
      ts->Next();
      item.kind = SqlItem::kAggregate;
      item.function = f;
      if (ts->ConsumeSymbol("*")) {
        if (f != Scanner::COUNT) return ts->ErrorAt(item.pos, StrCat(fname, "(*) is not defined"));
        item.function = Scanner::COUNT_ALL;
        item.text = "count(*)";
      } else {
        BASALT_ASSIGN_OR_RETURN(item.column, ParseColumnName(ts));
        item.text = StrCat(fname, "(", item.column, ")");
      }
      BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(")"));
      return item;
    }
    return ts->ErrorAtNext(
        "unknown function (COUNT, SUM, MIN, MAX, AVG, FIRST, LAST, time_bucket)");
  }
  item.kind = SqlItem::kColumn;
  BASALT_ASSIGN_OR_RETURN(item.column, ParseColumnName(ts));
  item.text = item.column;
  return item;
}

bool IsClauseWord(const TokenStream& ts) {
  for (const char* w : kClauseWords) {
    if (ts.PeekKeyword(w)) return true;
  }
  return false;
}

absl::Status ParseSelectItem(TokenStream* ts, std::vector<SqlItem>* items) {
  if (ts->PeekSymbol("*")) {
    SqlItem star;
    star.kind = SqlItem::kStar;
    star.pos = ts->Next().pos;
    star.text = "*";
    items->push_back(std::move(star));
    return absl::OkStatus();
  }
  BASALT_ASSIGN_OR_RETURN(SqlItem item, ParseExpression(ts, true));
  if (ts->ConsumeKeyword("AS")) {
    BASALT_ASSIGN_OR_RETURN(item.alias, ts->ExpectIdentifier("an alias"));
  } else if (ts->Peek().kind == Token::kIdent && !IsClauseWord(*ts)) {
    item.alias = ts->Next().text;
  }
  items->push_back(std::move(item));
  return absl::OkStatus();
}

absl::StatusOr<SqlItem> ParseGroupOrOrderTarget(TokenStream* ts, bool group) {
  if (ts->Peek().kind == Token::kNumber) {
    SqlItem item;
    item.kind = SqlItem::kPosition;
    item.pos = ts->Peek().pos;
    BASALT_ASSIGN_OR_RETURN(item.position, ts->ExpectInteger("a position"));
    item.text = std::to_string(item.position);
    return item;
  }
  if (group) return ParseExpression(ts, false);
  // ORDER BY names a result column: a name, an alias or an aggregate's text.
  return ParseExpression(ts, true);
}

}  // namespace

absl::StatusOr<int64_t> ParseInterval(std::string_view text) {
  std::string_view s = text;
  auto skip_spaces = [&] {
    while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  };
  skip_spaces();
  // A negative interval (a time_bucket offset before the epoch's grid).
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) s.remove_prefix(1);
  if (s.empty()) return absl::InvalidArgumentError("empty interval");
  int64_t total = 0;
  bool any_unit = false;
  while (!s.empty()) {
    size_t n = 0;
    while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
    if (n == 0) return absl::InvalidArgumentError(StrCat("'", text, "' is not an interval"));
    int64_t value = 0;
    if (!absl::SimpleAtoi(ToAbsl(s.substr(0, n)), &value)) {
      return absl::InvalidArgumentError(StrCat("'", text, "' is out of range"));
    }
    s.remove_prefix(n);
    skip_spaces();
    size_t u = 0;
    while (u < s.size() && std::isalpha(static_cast<unsigned char>(s[u]))) ++u;
    int64_t unit = 0;
    if (u == 0) {
      if (any_unit || !s.empty()) {
        return absl::InvalidArgumentError(StrCat("'", text, "': a number without a unit"));
      }
      unit = 1;  // A bare integer: microseconds.
    } else {
      const std::string name = Lower(std::string(s.substr(0, u)));
      for (const auto& [uname, micros] : kUnits) {
        if (name == uname) unit = micros;
      }
      if (unit == 0) {
        return absl::InvalidArgumentError(
            StrCat("unknown unit '", s.substr(0, u), "' (us, ms, s, m, h, d, w)"));
      }
      any_unit = true;
    }
    int64_t part = 0;
    if (__builtin_mul_overflow(value, unit, &part) || __builtin_add_overflow(total, part, &total)) {
      return absl::InvalidArgumentError(StrCat("'", text, "' is out of range"));
    }
    s.remove_prefix(u);
    skip_spaces();
  }
  return negative ? -total : total;
}

absl::StatusOr<SelectStmt> ParseSelect(std::string_view sql) {
  // One statement; a final ';' is allowed.
  std::string_view body = sql;
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) {
    body.remove_suffix(1);
  }
  if (!body.empty() && body.back() == ';') body.remove_suffix(1);
  BASALT_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(body));
  TokenStream ts(sql, std::move(tokens));
  SelectStmt stmt;
  stmt.explain = ts.ConsumeKeyword("EXPLAIN");
  BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("SELECT"));
  do {
    BASALT_RETURN_IF_ERROR(ParseSelectItem(&ts, &stmt.items));
  } while (ts.ConsumeSymbol(","));
  BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("FROM"));
  stmt.table_pos = ts.Peek().pos;
  BASALT_ASSIGN_OR_RETURN(stmt.table, ts.ExpectIdentifier("a table name"));
  while (ts.ConsumeSymbol(".")) {  // db.table
    BASALT_ASSIGN_OR_RETURN(std::string part, ts.ExpectIdentifier("a table name"));
    StrAppend(&stmt.table, ".", part);
  }
  if (ts.ConsumeKeyword("WHERE")) {
    BASALT_RETURN_IF_ERROR(ParsePredicateConjunction(&ts, &stmt.where));
  }
  if (ts.ConsumeKeyword("GROUP")) {
    BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("BY"));
    do {
      BASALT_ASSIGN_OR_RETURN(SqlItem g, ParseGroupOrOrderTarget(&ts, true));
      stmt.group_by.push_back(std::move(g));
    } while (ts.ConsumeSymbol(","));
  }
  if (ts.ConsumeKeyword("ORDER")) {
    BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("BY"));
    do {
      SqlOrder o;
      BASALT_ASSIGN_OR_RETURN(o.item, ParseGroupOrOrderTarget(&ts, false));
      if (ts.ConsumeKeyword("DESC")) {
        o.descending = true;
      } else {
        ts.ConsumeKeyword("ASC");
      }
      stmt.order_by.push_back(std::move(o));
    } while (ts.ConsumeSymbol(","));
  }
  if (ts.ConsumeKeyword("LIMIT")) {
    const size_t pos = ts.Peek().pos;
    BASALT_ASSIGN_OR_RETURN(int64_t n, ts.ExpectInteger("the row limit"));
    if (n < 0) return ts.ErrorAt(pos, "the limit must not be negative");
    stmt.limit = n;
  }
  if (!ts.AtEnd()) {
    return ts.ErrorAtNext(
        stmt.limit ? "expected the end of the statement"
                   : "expected WHERE, GROUP BY, ORDER BY, LIMIT or the end of the statement");
  }
  return stmt;
}

}  // namespace basalt::tools
