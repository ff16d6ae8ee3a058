#include "tsdb/influxql.h"

#include <cctype>
#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt::tsdb {

namespace {

struct Tok {
  enum Kind { kIdent, kQuotedIdent, kNumber, kDuration, kString, kSymbol, kEnd };
  Kind kind = kEnd;
  std::string text;
  size_t pos = 0;
};

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

absl::Status ErrorAt(size_t pos, absl::string_view message) {
  return absl::InvalidArgumentError(StrCat(message, " at position ", pos + 1));
}

// Scans a quoted run (opening quote at `i`); backslash escapes the next character.
absl::StatusOr<size_t> ScanQuoted(std::string_view q, size_t i, std::string* out) {
  const char quote = q[i];
  for (size_t j = i + 1; j < q.size(); ++j) {
    if (q[j] == '\\' && j + 1 < q.size()) {
      out->push_back(q[++j]);
    } else if (q[j] == quote) {
      return j + 1;
    } else {
      out->push_back(q[j]);
    }
  }
  return ErrorAt(i, "unterminated quoted text");
}

absl::StatusOr<std::vector<Tok>> Lex(std::string_view q) {
  std::vector<Tok> out;
  size_t i = 0;
  while (i < q.size()) {
    const char c = q[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Tok t;
    t.pos = i;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < q.size() && IsIdentChar(q[j])) ++j;
      t.kind = Tok::kIdent;
      t.text = std::string(q.substr(i, j - i));
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < q.size() &&
                std::isdigit(static_cast<unsigned char>(q[i + 1])))) {
      size_t j = i;
      while (j < q.size() && (std::isdigit(static_cast<unsigned char>(q[j])) || q[j] == '.')) ++j;
      if (j < q.size() && (q[j] == 'e' || q[j] == 'E') && j + 1 < q.size() &&
          (std::isdigit(static_cast<unsigned char>(q[j + 1])) || q[j + 1] == '-' ||
           q[j + 1] == '+')) {
        j += 2;
        while (j < q.size() && std::isdigit(static_cast<unsigned char>(q[j]))) ++j;
        t.kind = Tok::kNumber;
      } else if (j < q.size() && std::isalpha(static_cast<unsigned char>(q[j]))) {
        while (j < q.size() && std::isalpha(static_cast<unsigned char>(q[j]))) ++j;
        // A duration may chain units: 1h30m.
        while (j < q.size() && std::isdigit(static_cast<unsigned char>(q[j]))) {
          while (j < q.size() && std::isdigit(static_cast<unsigned char>(q[j]))) ++j;
          while (j < q.size() && std::isalpha(static_cast<unsigned char>(q[j]))) ++j;
        }
        t.kind = Tok::kDuration;
      } else {
        t.kind = Tok::kNumber;
      }
      t.text = std::string(q.substr(i, j - i));
      i = j;
    } else if (c == '\'' || c == '"') {
      BASALT_ASSIGN_OR_RETURN(i, ScanQuoted(q, i, &t.text));
      t.kind = c == '\'' ? Tok::kString : Tok::kQuotedIdent;
    } else if (c == '!' || c == '<' || c == '>' || c == '=') {
      size_t n = 1;
      if (i + 1 < q.size() && (q[i + 1] == '=' || (c == '<' && q[i + 1] == '>'))) n = 2;
      if (c == '!' && n == 1) return ErrorAt(i, "unexpected '!'");
      t.kind = Tok::kSymbol;
      t.text = std::string(q.substr(i, n));
      i += n;
    } else if (std::string_view("(),;*-+.").find(c) != std::string_view::npos) {
      t.kind = Tok::kSymbol;
      t.text = std::string(1, c);
      ++i;
    } else {
      return ErrorAt(i, StrCat("unexpected character '", std::string_view(&q[i], 1), "'"));
    }
    out.push_back(std::move(t));
  }
  Tok end;
  end.pos = q.size();
  out.push_back(end);
  return out;
}

class Parser {
 public:
  Parser(std::vector<Tok> toks, int64_t now_us) : toks_(std::move(toks)), now_us_(now_us) {}

  absl::StatusOr<std::vector<InfluxStatement>> Statements() {
    std::vector<InfluxStatement> out;
    while (true) {
      while (Symbol(";")) {
      }
      if (Peek().kind == Tok::kEnd) break;
      BASALT_ASSIGN_OR_RETURN(InfluxStatement s, Statement());
      out.push_back(std::move(s));
      if (Peek().kind != Tok::kEnd && !Symbol(";")) return Expected("';' or the end of the query");
    }
    if (out.empty()) return absl::InvalidArgumentError("empty query");
    return out;
  }

 private:
  const Tok& Peek(size_t ahead = 0) const {
    return toks_[std::min(next_ + ahead, toks_.size() - 1)];
  }
  const Tok& Next() {
    const Tok& t = Peek();
    if (next_ + 1 < toks_.size()) ++next_;
    return t;
  }
  bool IsKeyword(std::string_view kw, size_t ahead = 0) const {
    const Tok& t = Peek(ahead);
    return t.kind == Tok::kIdent && absl::EqualsIgnoreCase(t.text, ToAbsl(kw));
  }
  bool Keyword(std::string_view kw) {
    if (!IsKeyword(kw)) return false;
    Next();
    return true;
  }
  bool Symbol(std::string_view s) {
    if (Peek().kind != Tok::kSymbol || Peek().text != s) return false;
    Next();
    return true;
  }
  absl::Status Expected(std::string_view what) const {
    const Tok& t = Peek();
    return ErrorAt(t.pos, StrCat("expected ", what, ", got ",
                                 t.kind == Tok::kEnd ? std::string("end of query")
                                                     : StrCat("'", t.text, "'")));
  }
  absl::Status ExpectKeyword(std::string_view kw) {
    return Keyword(kw) ? absl::OkStatus() : Expected(kw);
  }
  absl::Status ExpectSymbol(std::string_view s) {
    return Symbol(s) ? absl::OkStatus() : Expected(StrCat("'", s, "'"));
  }
  absl::StatusOr<std::string> Identifier(std::string_view what) {
    if (Peek().kind != Tok::kIdent && Peek().kind != Tok::kQuotedIdent) return Expected(what);
    return Next().text;
  }
  absl::StatusOr<int64_t> Integer(std::string_view what) {
    int64_t v = 0;
    if (Peek().kind != Tok::kNumber || !absl::SimpleAtoi(Peek().text, &v) || v < 0) {
      return Expected(what);
    }
    Next();
    return v;
  }
  absl::StatusOr<int64_t> Duration(std::string_view what) {
    if (Peek().kind != Tok::kDuration) return Expected(what);
    const Tok& t = Next();
    absl::StatusOr<int64_t> d = ParseInfluxDuration(t.text);
    if (!d.ok()) return ErrorAt(t.pos, d.status().message());
    return d;
  }

  absl::StatusOr<InfluxStatement> Statement() {
    InfluxStatement s;
    if (Keyword("SELECT")) {
      s.kind = InfluxStatement::kSelect;
      BASALT_RETURN_IF_ERROR(Select(&s.select));
      return s;
    }
    if (Keyword("SHOW")) {
      if (Keyword("DATABASES")) {
        s.kind = InfluxStatement::kShowDatabases;
      } else if (Keyword("MEASUREMENTS")) {
        s.kind = InfluxStatement::kShowMeasurements;
      } else if (Keyword("TAG")) {
        BASALT_RETURN_IF_ERROR(ExpectKeyword("KEYS"));
        s.kind = InfluxStatement::kShowTagKeys;
      } else if (Keyword("FIELD")) {
        BASALT_RETURN_IF_ERROR(ExpectKeyword("KEYS"));
        s.kind = InfluxStatement::kShowFieldKeys;
      } else {
        return Expected("DATABASES, MEASUREMENTS, TAG KEYS or FIELD KEYS");
      }
      if ((s.kind == InfluxStatement::kShowTagKeys || s.kind == InfluxStatement::kShowFieldKeys) &&
          Keyword("FROM")) {
        BASALT_ASSIGN_OR_RETURN(s.name, MeasurementName());
      }
      return s;
    }
    const bool create = IsKeyword("CREATE");
    if (create || IsKeyword("DROP")) {
      Next();
      BASALT_RETURN_IF_ERROR(ExpectKeyword("DATABASE"));
      s.kind = create ? InfluxStatement::kCreateDatabase : InfluxStatement::kDropDatabase;
      BASALT_ASSIGN_OR_RETURN(s.name, Identifier("a database name"));
      return s;
    }
    return Expected("SELECT, SHOW, CREATE DATABASE or DROP DATABASE");
  }

  // A measurement, possibly qualified as "db"."rp"."m": the last part.
  absl::StatusOr<std::string> MeasurementName() {
    BASALT_ASSIGN_OR_RETURN(std::string name, Identifier("a measurement"));
    while (Symbol(".")) {
      Symbol(".");  // db..m: the default retention policy.
      BASALT_ASSIGN_OR_RETURN(name, Identifier("a measurement"));
    }
    return name;
  }

  absl::Status Select(InfluxSelect* sel) {
    do {
      InfluxSelect::Item item;
      if (Symbol("*")) {
        item.field = "*";
      } else {
        BASALT_ASSIGN_OR_RETURN(std::string name, Identifier("a field or function"));
        if (Symbol("(")) {
          item.function = absl::AsciiStrToLower(name);
          if (Symbol("*")) {
            item.field = "*";
          } else {
            BASALT_ASSIGN_OR_RETURN(item.field, Identifier("a field"));
          }
          BASALT_RETURN_IF_ERROR(ExpectSymbol(")"));
        } else {
          item.field = name;
        }
      }
      if (Keyword("AS")) {
        BASALT_ASSIGN_OR_RETURN(item.alias, Identifier("an alias"));
      }
      sel->items.push_back(std::move(item));
    } while (Symbol(","));
    BASALT_RETURN_IF_ERROR(ExpectKeyword("FROM"));
    BASALT_ASSIGN_OR_RETURN(sel->measurement, MeasurementName());
    if (Keyword("WHERE")) {
      do {
        BASALT_RETURN_IF_ERROR(Condition(&sel->where));
      } while (Keyword("AND"));
    }
    if (Keyword("GROUP")) {
      BASALT_RETURN_IF_ERROR(ExpectKeyword("BY"));
      do {
        if (Symbol("*")) {
          sel->group_all_tags = true;
        } else if (IsKeyword("time") && Peek(1).kind == Tok::kSymbol && Peek(1).text == "(") {
          Next();
          Next();
          BASALT_ASSIGN_OR_RETURN(sel->group_time_us, Duration("an interval such as 1m"));
          if (sel->group_time_us <= 0) return Expected("a positive interval");
          if (Symbol(",")) {
            const bool negative = Symbol("-");
            BASALT_ASSIGN_OR_RETURN(sel->group_time_offset_us, Duration("an offset"));
            if (negative) sel->group_time_offset_us = -sel->group_time_offset_us;
          }
          BASALT_RETURN_IF_ERROR(ExpectSymbol(")"));
        } else {
          BASALT_ASSIGN_OR_RETURN(std::string tag, Identifier("a tag, * or time(...)"));
          sel->group_tags.push_back(std::move(tag));
        }
      } while (Symbol(","));
    }
    if (Keyword("fill")) {
      BASALT_RETURN_IF_ERROR(ExpectSymbol("("));
      if (Keyword("none")) {
        sel->fill_none = true;
      } else if (!Keyword("null")) {
        return Expected("null or none (other fill options are not supported)");
      }
      BASALT_RETURN_IF_ERROR(ExpectSymbol(")"));
    }
    if (Keyword("ORDER")) {
      BASALT_RETURN_IF_ERROR(ExpectKeyword("BY"));
      BASALT_RETURN_IF_ERROR(ExpectKeyword("time"));
      if (Keyword("DESC")) {
        sel->descending = true;
      } else {
        Keyword("ASC");
      }
    }
    if (Keyword("LIMIT")) {
      BASALT_ASSIGN_OR_RETURN(sel->limit, Integer("a limit"));
    }
    if (Keyword("SLIMIT")) {
      BASALT_ASSIGN_OR_RETURN(sel->slimit, Integer("a series limit"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<InfluxCondition::Op> Op() {
    static constexpr std::pair<const char*, InfluxCondition::Op> kOps[] = {
        {"<", InfluxCondition::kLess},     {"<=", InfluxCondition::kLessEqual},
        {"=", InfluxCondition::kEqual},    {">=", InfluxCondition::kGreaterEqual},
        {">", InfluxCondition::kGreater},  {"!=", InfluxCondition::kNotEqual},
        {"<>", InfluxCondition::kNotEqual}};
    for (const auto& [sym, op] : kOps) {
      if (Symbol(sym)) return op;
    }
    return Expected("a comparison (<, <=, =, >=, >, !=)");
  }

  // A time value: '<RFC 3339>', an integer in nanoseconds, a duration since the epoch, or
  // now() [+|- duration].
  absl::StatusOr<int64_t> TimeValue() {
    const Tok& t = Peek();
    if (t.kind == Tok::kString) {
      Next();
      absl::StatusOr<int64_t> v = ParseInfluxTime(t.text);
      if (!v.ok()) return ErrorAt(t.pos, v.status().message());
      return v;
    }
    if (t.kind == Tok::kNumber) {
      Next();
      int64_t ns = 0;
      if (!absl::SimpleAtoi(t.text, &ns)) return ErrorAt(t.pos, "expected an integer time in ns");
      return ns / 1000 - (ns % 1000 < 0 ? 1 : 0);
    }
    if (t.kind == Tok::kDuration) return Duration("a time");
    if (IsKeyword("now")) {
      Next();
      BASALT_RETURN_IF_ERROR(ExpectSymbol("("));
      BASALT_RETURN_IF_ERROR(ExpectSymbol(")"));
      int64_t v = now_us_;
      while (Peek().kind == Tok::kSymbol && (Peek().text == "-" || Peek().text == "+")) {
        const bool minus = Next().text == "-";
        BASALT_ASSIGN_OR_RETURN(int64_t d, Duration("a duration"));
        v = minus ? v - d : v + d;
      }
      return v;
    }
    return Expected("a time ('2016-01-01T00:00:00Z', an integer in ns, or now())");
  }

  absl::Status Condition(std::vector<InfluxCondition>* out) {
    if (Symbol("(")) {
      // (tag = 'a' OR tag = 'b' ...) or a parenthesized AND chain.
      std::vector<InfluxCondition> alts;
      BASALT_RETURN_IF_ERROR(Condition(&alts));
      bool any_or = false;
      while (true) {
        if (Keyword("OR")) {
          any_or = true;
          BASALT_RETURN_IF_ERROR(Condition(&alts));
        } else if (Keyword("AND")) {
          if (any_or) return Expected("OR (AND and OR cannot be mixed)");
          BASALT_RETURN_IF_ERROR(Condition(&alts));
        } else {
          break;
        }
      }
      BASALT_RETURN_IF_ERROR(ExpectSymbol(")"));
      if (!any_or) {
        for (auto& c : alts) out->push_back(std::move(c));
        return absl::OkStatus();
      }
      InfluxCondition in;
      in.kind = InfluxCondition::kTagIn;
      for (const InfluxCondition& c : alts) {
        if (c.kind != InfluxCondition::kTagIn || (!in.name.empty() && c.name != in.name)) {
          return Expected("OR between equalities of one tag only");
        }
        in.name = c.name;
        for (const std::string& v : c.values) in.values.push_back(v);
      }
      out->push_back(std::move(in));
      return absl::OkStatus();
    }
    InfluxCondition c;
    if (IsKeyword("time")) {
      Next();
      c.kind = InfluxCondition::kTime;
      BASALT_ASSIGN_OR_RETURN(c.op, Op());
      if (c.op == InfluxCondition::kNotEqual) return Expected("a time comparison other than !=");
      BASALT_ASSIGN_OR_RETURN(c.time_us, TimeValue());
      out->push_back(std::move(c));
      return absl::OkStatus();
    }
    BASALT_ASSIGN_OR_RETURN(c.name, Identifier("time, a tag or a field"));
    BASALT_ASSIGN_OR_RETURN(c.op, Op());
    const Tok& v = Peek();
    if (v.kind == Tok::kString) {
      Next();
      if (c.op == InfluxCondition::kEqual) {
        c.kind = InfluxCondition::kTagIn;
      } else if (c.op == InfluxCondition::kNotEqual) {
        c.kind = InfluxCondition::kTagNotEqual;
      } else {
        return ErrorAt(v.pos, "a tag is compared with = or != only");
      }
      c.values.push_back(v.text);
    } else {
      const bool negative = Symbol("-");
      const Tok& n = Peek();
      if (n.kind != Tok::kNumber || !absl::SimpleAtod(n.text, &c.number)) {
        return Expected("a 'string' (tags) or a number (fields)");
      }
      int64_t i = 0;
      if (absl::SimpleAtoi(n.text, &i)) c.integer = negative ? -i : i;
      Next();
      if (negative) c.number = -c.number;
      c.kind = InfluxCondition::kField;
    }
    out->push_back(std::move(c));
    return absl::OkStatus();
  }

  std::vector<Tok> toks_;
  size_t next_ = 0;
  const int64_t now_us_;
};

}  // namespace

absl::StatusOr<int64_t> ParseInfluxDuration(std::string_view text) {
  static constexpr std::pair<const char*, int64_t> kUnits[] = {{"ns", 0},
                                                               {"u", 1},
                                                               {"us", 1},
                                                               {"µ", 1},
                                                               {"ms", 1000},
                                                               {"s", 1000000},
                                                               {"m", 60000000},
                                                               {"h", 3600000000LL},
                                                               {"d", 86400000000LL},
                                                               {"w", 604800000000LL}};
  std::string_view s = text;
  int64_t total = 0;
  int64_t nanos = 0;
  if (s.empty()) return absl::InvalidArgumentError("empty duration");
  while (!s.empty()) {
    size_t n = 0;
    while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
    size_t u = n;
    while (u < s.size() && !std::isdigit(static_cast<unsigned char>(s[u]))) ++u;
    int64_t value = 0;
    if (n == 0 || u == n || !absl::SimpleAtoi(ToAbsl(s.substr(0, n)), &value)) {
      return absl::InvalidArgumentError(StrCat("invalid duration '", text, "'"));
    }
    const std::string_view unit = s.substr(n, u - n);
    bool found = false;
    for (const auto& [name, micros] : kUnits) {
      if (unit != name) continue;
      found = true;
      int64_t part = 0;
      if (micros == 0) {
        nanos += value;  // Rounded down to microseconds at the end.
      } else if (__builtin_mul_overflow(value, micros, &part) ||
                 __builtin_add_overflow(total, part, &total)) {
        return absl::InvalidArgumentError(StrCat("duration '", text, "' out of range"));
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(
          StrCat("invalid duration '", text, "' (units ns, u, ms, s, m, h, d, w)"));
    }
    s.remove_prefix(u);
  }
  return total + nanos / 1000;
}

absl::StatusOr<int64_t> ParseInfluxTime(std::string_view text) {
  absl::Time t;
  std::string err;
  const std::string s(text);
  if (absl::ParseTime(absl::RFC3339_full, s, &t, &err) ||
      absl::ParseTime("%Y-%m-%d %H:%M:%E*S", s, absl::UTCTimeZone(), &t, &err) ||
      absl::ParseTime("%Y-%m-%d", s, absl::UTCTimeZone(), &t, &err)) {
    return absl::ToUnixMicros(t);
  }
  return absl::InvalidArgumentError(StrCat("invalid time '", text, "' (RFC 3339 expected)"));
}

absl::StatusOr<std::vector<InfluxStatement>> ParseInfluxQL(std::string_view q, int64_t now_us) {
  BASALT_ASSIGN_OR_RETURN(std::vector<Tok> toks, Lex(q));
  return Parser(std::move(toks), now_us).Statements();
}

}  // namespace basalt::tsdb
