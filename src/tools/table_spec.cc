#include "tools/table_spec.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/lexer.h"

namespace basalt::tools {

namespace {

using client::ColumnSchema;
using client::ColumnStorageAttributes;

struct NamedType {
  const char* name;
  ColumnSchema::DataType type;
};
constexpr NamedType kTypes[] = {
    {"BOOL", ColumnSchema::BOOL},
    {"BOOLEAN", ColumnSchema::BOOL},
    {"INT8", ColumnSchema::INT8},
    {"INT16", ColumnSchema::INT16},
    {"INT32", ColumnSchema::INT32},
    {"INT64", ColumnSchema::INT64},
    {"FLOAT", ColumnSchema::FLOAT},
    {"DOUBLE", ColumnSchema::DOUBLE},
    {"STRING", ColumnSchema::STRING},
    {"BINARY", ColumnSchema::BINARY},
    {"UNIXTIME_MICROS", ColumnSchema::UNIXTIME_MICROS},
    {"TIMESTAMP", ColumnSchema::UNIXTIME_MICROS},
    {"DATE", ColumnSchema::DATE},
    {"DECIMAL", ColumnSchema::DECIMAL},
    {"VARCHAR", ColumnSchema::VARCHAR},
};

template <typename E>
struct NamedEnum {
  const char* name;
  E value;
};
constexpr NamedEnum<ColumnStorageAttributes::EncodingType> kEncodings[] = {
    {"AUTO", ColumnStorageAttributes::AUTO_ENCODING},
    {"AUTO_ENCODING", ColumnStorageAttributes::AUTO_ENCODING},
    {"PLAIN", ColumnStorageAttributes::PLAIN_ENCODING},
    {"PLAIN_ENCODING", ColumnStorageAttributes::PLAIN_ENCODING},
    {"BIT_PACKED", ColumnStorageAttributes::BIT_PACKED},
    {"BIT_SHUFFLE", ColumnStorageAttributes::BIT_SHUFFLE},
    {"RLE", ColumnStorageAttributes::RLE},
    {"DICT", ColumnStorageAttributes::DICT_ENCODING},
    {"DICT_ENCODING", ColumnStorageAttributes::DICT_ENCODING},
    {"PREFIX", ColumnStorageAttributes::PREFIX_ENCODING},
    {"PREFIX_ENCODING", ColumnStorageAttributes::PREFIX_ENCODING},
};
constexpr NamedEnum<ColumnStorageAttributes::CompressionType> kCompressions[] = {
    {"DEFAULT", ColumnStorageAttributes::DEFAULT_COMPRESSION},
    {"DEFAULT_COMPRESSION", ColumnStorageAttributes::DEFAULT_COMPRESSION},
    {"NONE", ColumnStorageAttributes::NO_COMPRESSION},
    {"NO_COMPRESSION", ColumnStorageAttributes::NO_COMPRESSION},
    {"SNAPPY", ColumnStorageAttributes::SNAPPY},
    {"LZ4", ColumnStorageAttributes::LZ4},
    {"ZLIB", ColumnStorageAttributes::ZLIB},
    {"ZSTD", ColumnStorageAttributes::ZSTD},
};

template <typename E, size_t N>
absl::StatusOr<E> ParseNamed(TokenStream* ts, const NamedEnum<E> (&table)[N],
                             std::string_view what) {
  for (const auto& e : table) {
    if (ts->PeekKeyword(e.name)) {
      ts->Next();
      return e.value;
    }
  }
  return ts->ErrorAtNext(StrCat("expected ", what));
}

absl::StatusOr<std::vector<std::string>> ParseNameList(TokenStream* ts, std::string_view what) {
  BASALT_RETURN_IF_ERROR(ts->ExpectSymbol("("));
  std::vector<std::string> names;
  do {
    BASALT_ASSIGN_OR_RETURN(std::string name, ts->ExpectIdentifier(what));
    names.push_back(std::move(name));
  } while (ts->ConsumeSymbol(","));
  BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(")"));
  return names;
}

// A bound or split row: one literal, or a parenthesized list of them.
absl::StatusOr<std::vector<Literal>> ParseTuple(TokenStream* ts) {
  std::vector<Literal> values;
  if (!ts->ConsumeSymbol("(")) {
    BASALT_ASSIGN_OR_RETURN(Literal l, ParseLiteral(ts));
    values.push_back(std::move(l));
    return values;
  }
  do {
    BASALT_ASSIGN_OR_RETURN(Literal l, ParseLiteral(ts));
    values.push_back(std::move(l));
  } while (ts->ConsumeSymbol(","));
  BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(")"));
  return values;
}

absl::Status ParseColumnOptions(TokenStream* ts, ColumnSpecDef* col, bool* primary_key) {
  while (true) {
    if (ts->ConsumeKeyword("NULL")) {
      col->nullable = true;
    } else if (ts->PeekKeyword("NOT")) {
      ts->Next();
      BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("NULL"));
      col->nullable = false;
    } else if (ts->ConsumeKeyword("DEFAULT")) {
      BASALT_ASSIGN_OR_RETURN(Literal l, ParseLiteral(ts));
      col->default_value = std::move(l);
    } else if (ts->ConsumeKeyword("ENCODING")) {
      BASALT_ASSIGN_OR_RETURN(col->encoding, ParseNamed(ts, kEncodings, "an encoding"));
    } else if (ts->ConsumeKeyword("COMPRESSION")) {
      BASALT_ASSIGN_OR_RETURN(col->compression, ParseNamed(ts, kCompressions, "a compression"));
    } else if (ts->ConsumeKeyword("PRIMARY")) {
      BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("KEY"));
      *primary_key = true;
    } else {
      return absl::OkStatus();
    }
  }
}

absl::Status ParseRange(TokenStream* ts, TableSpec* spec) {
  if (spec->range_columns) return ts->ErrorAtNext("a table has at most one RANGE partitioning");
  BASALT_ASSIGN_OR_RETURN(spec->range_columns, ParseNameList(ts, "a range column name"));
  if (ts->ConsumeSymbol("(")) {
    do {
      BASALT_ASSIGN_OR_RETURN(RangePartitionDef r, ParseRangePartition(ts));
      spec->range_partitions.push_back(std::move(r));
    } while (ts->ConsumeSymbol(","));
    BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(")"));
  }
  if (ts->ConsumeKeyword("SPLIT")) {
    BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("ROWS"));
    BASALT_RETURN_IF_ERROR(ts->ExpectSymbol("("));
    do {
      BASALT_ASSIGN_OR_RETURN(std::vector<Literal> row, ParseTuple(ts));
      spec->split_rows.push_back(std::move(row));
    } while (ts->ConsumeSymbol(","));
    BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(")"));
  }
  return absl::OkStatus();
}

absl::Status ParsePartitioning(TokenStream* ts, TableSpec* spec) {
  do {
    if (ts->ConsumeKeyword("HASH")) {
      HashPartitionDef h;
      BASALT_ASSIGN_OR_RETURN(h.columns, ParseNameList(ts, "a hash column name"));
      BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("PARTITIONS"));
      const size_t pos = ts->Peek().pos;
      BASALT_ASSIGN_OR_RETURN(int64_t n, ts->ExpectInteger("the number of hash partitions"));
      if (n < 2 || n > 1024) return ts->ErrorAt(pos, "PARTITIONS must be in [2, 1024]");
      h.num_buckets = static_cast<int32_t>(n);
      if (ts->ConsumeKeyword("SEED")) {
        const size_t seed_pos = ts->Peek().pos;
        BASALT_ASSIGN_OR_RETURN(int64_t seed, ts->ExpectInteger("the hash seed"));
        if (seed < 0 || seed > std::numeric_limits<int32_t>::max()) {
          return ts->ErrorAt(seed_pos, "SEED must be in [0, 2147483647]");
        }
        h.seed = static_cast<int32_t>(seed);
      }
      spec->hash_partitions.push_back(std::move(h));
    } else if (ts->ConsumeKeyword("RANGE")) {
      BASALT_RETURN_IF_ERROR(ParseRange(ts, spec));
    } else {
      return ts->ErrorAtNext("expected HASH or RANGE");
    }
  } while (ts->ConsumeSymbol(","));
  return absl::OkStatus();
}

// Column list: column definitions and an optional PRIMARY KEY (...) clause.
absl::Status ParseColumns(TokenStream* ts, TableSpec* spec, size_t* key_pos) {
  BASALT_RETURN_IF_ERROR(ts->ExpectSymbol("("));
  do {
    if (ts->PeekKeyword("PRIMARY") && ts->PeekKeyword("KEY", 1)) {
      *key_pos = ts->Peek().pos;
      if (!spec->key_columns.empty()) return ts->ErrorAtNext("the primary key is given twice");
      ts->Next();
      ts->Next();
      BASALT_ASSIGN_OR_RETURN(spec->key_columns, ParseNameList(ts, "a key column name"));
      continue;
    }
    ColumnSpecDef col;
    bool pk = false;
    BASALT_RETURN_IF_ERROR(ParseColumnDef(ts, &col, &pk));
    if (pk) {
      if (!spec->key_columns.empty()) return ts->ErrorAt(col.pos, "the primary key is given twice");
      spec->key_columns.push_back(col.name);
      *key_pos = col.pos;
    }
    spec->columns.push_back(std::move(col));
  } while (ts->ConsumeSymbol(","));
  return ts->ExpectSymbol(")");
}

const ColumnSpecDef* FindColumn(const TableSpec& spec, std::string_view name) {
  for (const auto& c : spec.columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

absl::Status CheckValue(const TokenStream& ts, const Literal& l, const ColumnSpecDef& col) {
  if (l.kind == Literal::kNull) return ts.ErrorAt(l.pos, "NULL is not allowed here");
  auto v = LiteralToValue(l, col.type, col.scale);
  if (!v.ok()) return ts.ErrorAt(l.pos, StrCat(v.status().message(), " (column ", col.name, ")"));
  return absl::OkStatus();
}

absl::Status CheckTuple(const TokenStream& ts, const std::vector<Literal>& values,
                        const std::vector<const ColumnSpecDef*>& cols, size_t pos) {
  if (values.size() != cols.size()) {
    return ts.ErrorAt(
        values.empty() ? pos : values[0].pos,
        StrCat("expected ", cols.size(), " value(s), one per range column, got ", values.size()));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    BASALT_RETURN_IF_ERROR(CheckValue(ts, values[i], *cols[i]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<const ColumnSpecDef*>> ResolveColumns(
    const TokenStream& ts, const TableSpec& spec, const std::vector<std::string>& names, size_t pos,
    std::string_view what) {
  std::vector<const ColumnSpecDef*> cols;
  for (const auto& n : names) {
    const ColumnSpecDef* c = FindColumn(spec, n);
    if (c == nullptr) return ts.ErrorAt(pos, StrCat(what, " column '", n, "' is not a column"));
    cols.push_back(c);
  }
  return cols;
}

// The checks that need the whole spec: names resolve, defaults and bounds fit their columns.
absl::Status Validate(const TokenStream& ts, TableSpec* spec, size_t key_pos, size_t part_pos) {
  for (size_t i = 0; i < spec->columns.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (EqualsIgnoreCase(spec->columns[i].name, spec->columns[j].name)) {
        return ts.ErrorAt(spec->columns[i].pos,
                          StrCat("duplicate column '", spec->columns[i].name, "'"));
      }
    }
  }
  if (spec->key_columns.empty()) return ts.ErrorAt(key_pos, "the table has no PRIMARY KEY");
  BASALT_ASSIGN_OR_RETURN(auto keys, ResolveColumns(ts, *spec, spec->key_columns, key_pos, "key"));
  for (const ColumnSpecDef* k : keys) {
    if (k->nullable.value_or(false)) {
      return ts.ErrorAt(k->pos, StrCat("key column '", k->name, "' cannot be NULL"));
    }
  }
  for (const auto& c : spec->columns) BASALT_RETURN_IF_ERROR(ValidateColumnDefault(ts, c));
  for (const auto& h : spec->hash_partitions) {
    BASALT_RETURN_IF_ERROR(ResolveColumns(ts, *spec, h.columns, part_pos, "hash").status());
  }
  if (!spec->range_columns) {
    return absl::OkStatus();
  }
  BASALT_ASSIGN_OR_RETURN(auto range,
                          ResolveColumns(ts, *spec, *spec->range_columns, part_pos, "range"));
  for (const auto& r : spec->range_partitions) {
    if (r.lower) BASALT_RETURN_IF_ERROR(CheckTuple(ts, *r.lower, range, part_pos));
    if (r.upper) BASALT_RETURN_IF_ERROR(CheckTuple(ts, *r.upper, range, part_pos));
  }
  for (const auto& s : spec->split_rows) BASALT_RETURN_IF_ERROR(CheckTuple(ts, s, range, part_pos));
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseColumnDef(TokenStream* ts, ColumnSpecDef* col, bool* primary_key) {
  col->pos = ts->Peek().pos;
  BASALT_ASSIGN_OR_RETURN(col->name, ts->ExpectIdentifier("a column name or PRIMARY KEY"));
  BASALT_RETURN_IF_ERROR(ParseColumnType(ts, col));
  *primary_key = false;
  return ParseColumnOptions(ts, col, primary_key);
}

absl::Status ValidateColumnDefault(const TokenStream& ts, const ColumnSpecDef& col) {
  if (!col.default_value) return absl::OkStatus();
  if (col.default_value->kind == Literal::kNull) {
    if (col.nullable == false) {
      return ts.ErrorAt(col.default_value->pos, "NOT NULL column with DEFAULT NULL");
    }
    return absl::OkStatus();
  }
  return CheckValue(ts, *col.default_value, col);
}

absl::Status ToColumnSpec(const ColumnSpecDef& c, client::ColumnSpec* cs) {
  cs->Type(c.type);
  if (c.type == ColumnSchema::DECIMAL) cs->Precision(c.precision)->Scale(c.scale);
  if (c.type == ColumnSchema::VARCHAR) cs->Length(c.length);
  if (c.nullable) {
    *c.nullable ? cs->Nullable() : cs->NotNull();
  }
  if (c.encoding) cs->Encoding(*c.encoding);
  if (c.compression) cs->Compression(*c.compression);
  if (c.default_value && c.default_value->kind != Literal::kNull) {
    BASALT_ASSIGN_OR_RETURN(client::Value v, LiteralToValue(*c.default_value, c.type, c.scale));
    cs->Default(v);
  }
  return absl::OkStatus();
}

// Range partitions: PARTITION VALUES [>= | >] lower [AND (< | <=) upper] | PARTITION VALUES <[=]
// upper | PARTITION VALUE = v.
absl::StatusOr<RangePartitionDef> ParseRangePartition(TokenStream* ts) {
  BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("PARTITION"));
  RangePartitionDef r;
  if (ts->ConsumeKeyword("VALUE")) {
    BASALT_RETURN_IF_ERROR(ts->ExpectSymbol("="));
    BASALT_ASSIGN_OR_RETURN(r.lower, ParseTuple(ts));
    r.upper = r.lower;
    r.upper_inclusive = true;
    return r;
  }
  BASALT_RETURN_IF_ERROR(ts->ExpectKeyword("VALUES"));
  if (ts->PeekSymbol(">=") || ts->PeekSymbol(">")) {
    r.lower_inclusive = ts->Next().text == ">=";
    BASALT_ASSIGN_OR_RETURN(r.lower, ParseTuple(ts));
    if (!ts->ConsumeKeyword("AND")) return r;
  }
  if (!ts->PeekSymbol("<") && !ts->PeekSymbol("<=")) {
    return ts->ErrorAtNext(r.lower ? "expected '<' or '<='" : "expected '>=', '>', '<' or '<='");
  }
  r.upper_inclusive = ts->Next().text == "<=";
  BASALT_ASSIGN_OR_RETURN(r.upper, ParseTuple(ts));
  return r;
}

absl::Status ParseColumnType(TokenStream* ts, ColumnSpecDef* col) {
  const Token& t = ts->Peek();
  for (const auto& nt : kTypes) {
    if (!ts->PeekKeyword(nt.name)) continue;
    ts->Next();
    col->type = nt.type;
    if (nt.type == ColumnSchema::DECIMAL) {
      BASALT_RETURN_IF_ERROR(ts->ExpectSymbol("("));
      const size_t pos = ts->Peek().pos;
      BASALT_ASSIGN_OR_RETURN(int64_t p, ts->ExpectInteger("the DECIMAL precision"));
      if (p < 1 || p > 38) return ts->ErrorAt(pos, "DECIMAL precision must be in [1, 38]");
      int64_t s = 0;
      if (ts->ConsumeSymbol(",")) {
        const size_t spos = ts->Peek().pos;
        BASALT_ASSIGN_OR_RETURN(s, ts->ExpectInteger("the DECIMAL scale"));
        if (s < 0 || s > p) return ts->ErrorAt(spos, "DECIMAL scale must be in [0, precision]");
      }
      BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(")"));
      col->precision = static_cast<int>(p);
      col->scale = static_cast<int>(s);
    } else if (nt.type == ColumnSchema::VARCHAR) {
      BASALT_RETURN_IF_ERROR(ts->ExpectSymbol("("));
      const size_t pos = ts->Peek().pos;
      BASALT_ASSIGN_OR_RETURN(int64_t n, ts->ExpectInteger("the VARCHAR length"));
      if (n < 1 || n > 65535) return ts->ErrorAt(pos, "VARCHAR length must be in [1, 65535]");
      BASALT_RETURN_IF_ERROR(ts->ExpectSymbol(")"));
      col->length = static_cast<int>(n);
    }
    return absl::OkStatus();
  }
  if (t.kind == Token::kIdent) {
    return ts->ErrorAt(t.pos, StrCat("unknown type '", t.text, "'"));
  }
  return ts->ErrorAtNext("expected a column type");
}

absl::StatusOr<Literal> ParseLiteral(TokenStream* ts) {
  const Token& t = ts->Peek();
  Literal l;
  l.pos = t.pos;
  if (t.kind == Token::kNumber) {
    l.kind = t.text.find_first_of(".eE") == std::string::npos ? Literal::kInteger : Literal::kFloat;
    l.text = t.text;
  } else if (t.kind == Token::kString) {
    l.kind = Literal::kString;
    l.text = t.text;
  } else if (ts->PeekKeyword("TRUE") || ts->PeekKeyword("FALSE")) {
    l.kind = Literal::kBool;
    l.text = ts->PeekKeyword("TRUE") ? "true" : "false";
  } else if (ts->PeekKeyword("NULL")) {
    l.kind = Literal::kNull;
  } else {
    return ts->ErrorAtNext("expected a value (a number, 'string', TRUE, FALSE or NULL)");
  }
  ts->Next();
  return l;
}

absl::StatusOr<TableSpec> ParseTableSpec(std::string_view input) {
  BASALT_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(input));
  TokenStream ts(input, std::move(tokens));
  TableSpec spec;
  BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("CREATE"));
  BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("TABLE"));
  BASALT_ASSIGN_OR_RETURN(spec.table_name, ts.ExpectIdentifier("a table name"));
  size_t key_pos = ts.Peek().pos;
  BASALT_RETURN_IF_ERROR(ParseColumns(&ts, &spec, &key_pos));
  size_t part_pos = ts.Peek().pos;
  if (ts.ConsumeKeyword("PARTITION")) {
    BASALT_RETURN_IF_ERROR(ts.ExpectKeyword("BY"));
    part_pos = ts.Peek().pos;
    BASALT_RETURN_IF_ERROR(ParsePartitioning(&ts, &spec));
  }
  if (ts.ConsumeKeyword("REPLICAS")) {
    const size_t pos = ts.Peek().pos;
    BASALT_ASSIGN_OR_RETURN(int64_t n, ts.ExpectInteger("the number of replicas"));
    if (n < 1 || n > 7 || n % 2 == 0) return ts.ErrorAt(pos, "REPLICAS must be 1, 3, 5 or 7");
    spec.num_replicas = static_cast<int>(n);
  }
  if (!ts.AtEnd()) return ts.ErrorAtNext("expected PARTITION BY, REPLICAS or the end of the spec");
  BASALT_RETURN_IF_ERROR(Validate(ts, &spec, key_pos, part_pos));
  return spec;
}

std::string TypeToSpecString(ColumnSchema::DataType type, int precision, int scale, int length) {
  if (type == ColumnSchema::DECIMAL) return StrCat("DECIMAL(", precision, ", ", scale, ")");
  if (type == ColumnSchema::VARCHAR) return StrCat("VARCHAR(", length, ")");
  for (const auto& nt : kTypes) {
    if (nt.type == type) return nt.name;
  }
  return "UNKNOWN";
}

namespace {

// "12.5" at scale 2 → 1250. Rejects more fractional digits than the scale.
absl::StatusOr<int64_t> ParseDecimal(const std::string& text, int scale) {
  std::string digits;
  size_t dot = text.find('.');
  std::string frac = dot == std::string::npos ? "" : text.substr(dot + 1);
  if (text.find_first_of("eE") != std::string::npos || static_cast<int>(frac.size()) > scale) {
    return absl::InvalidArgumentError(
        StrCat("'", text, "' is not a DECIMAL with at most ", scale, " fractional digits"));
  }
  digits = text.substr(0, dot) + frac + std::string(scale - frac.size(), '0');
  int64_t v = 0;
  if (!absl::SimpleAtoi(digits, &v)) {
    return absl::InvalidArgumentError(StrCat("'", text, "' is out of range for DECIMAL"));
  }
  return v;
}

absl::StatusOr<absl::Time> ParseTimeText(const std::string& text) {
  for (const char* fmt : {"%Y-%m-%d %H:%M:%E*S", "%Y-%m-%dT%H:%M:%E*S", "%Y-%m-%d"}) {
    absl::Time t;
    std::string err;
    if (absl::ParseTime(fmt, text, absl::UTCTimeZone(), &t, &err)) return t;
  }
  return absl::InvalidArgumentError(
      StrCat("'", text, "' is not a time (YYYY-MM-DD[ HH:MM:SS[.ffffff]], UTC)"));
}

std::string TypeName(ColumnSchema::DataType type) { return TypeToSpecString(type, 0, 0, 0); }

}  // namespace

absl::StatusOr<client::Value> LiteralToValue(const Literal& l, ColumnSchema::DataType type,
                                             int scale) {
  auto mismatch = [&]() {
    const std::string shown = l.kind == Literal::kString ? StrCat("'", l.text, "'") : l.text;
    return absl::InvalidArgumentError(
        StrCat("value ", shown, " does not fit type ", TypeName(type)));
  };
  switch (type) {
    case ColumnSchema::BOOL:
      if (l.kind != Literal::kBool) return mismatch();
      return client::Value::FromBool(l.text == "true");
    case ColumnSchema::INT8:
    case ColumnSchema::INT16:
    case ColumnSchema::INT32:
    case ColumnSchema::INT64: {
      int64_t v = 0;
      if (l.kind != Literal::kInteger || !absl::SimpleAtoi(l.text, &v)) return mismatch();
      const int bits = type == ColumnSchema::INT8    ? 8
                       : type == ColumnSchema::INT16 ? 16
                       : type == ColumnSchema::INT32 ? 32
                                                     : 64;
      if (bits < 64 && (v < -(int64_t{1} << (bits - 1)) || v >= (int64_t{1} << (bits - 1)))) {
        return absl::InvalidArgumentError(
            StrCat("value ", l.text, " is out of range for ", TypeName(type)));
      }
      return client::Value::FromInt(v);
    }
    case ColumnSchema::FLOAT:
    case ColumnSchema::DOUBLE: {
      double d = 0;
      if ((l.kind != Literal::kInteger && l.kind != Literal::kFloat) ||
          !absl::SimpleAtod(l.text, &d)) {
        return mismatch();
      }
      return type == ColumnSchema::FLOAT ? client::Value::FromFloat(static_cast<float>(d))
                                         : client::Value::FromDouble(d);
    }
    case ColumnSchema::STRING:
    case ColumnSchema::BINARY:
    case ColumnSchema::VARCHAR:
      if (l.kind != Literal::kString) return mismatch();
      return client::Value::FromString(l.text);
    case ColumnSchema::UNIXTIME_MICROS:
    case ColumnSchema::DATE: {
      int64_t v = 0;
      if (l.kind == Literal::kInteger && absl::SimpleAtoi(l.text, &v)) {
        return client::Value::FromInt(v);
      }
      if (l.kind != Literal::kString) return mismatch();
      BASALT_ASSIGN_OR_RETURN(absl::Time t, ParseTimeText(l.text));
      if (type == ColumnSchema::DATE) {
        return client::Value::FromInt(
            absl::ToInt64Seconds(t - absl::UnixEpoch()) / 86400 -
            ((t < absl::UnixEpoch() && absl::ToInt64Seconds(t - absl::UnixEpoch()) % 86400 != 0)
                 ? 1
                 : 0));
      }
      return client::Value::FromInt(absl::ToUnixMicros(t));
    }
    case ColumnSchema::DECIMAL: {
      if (l.kind != Literal::kInteger && l.kind != Literal::kFloat) return mismatch();
      BASALT_ASSIGN_OR_RETURN(int64_t v, ParseDecimal(l.text, scale));
      return client::Value::FromInt(v);
    }
  }
  return mismatch();
}

}  // namespace basalt::tools
