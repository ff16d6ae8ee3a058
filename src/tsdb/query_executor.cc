#include "tsdb/query_executor.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "absl/numeric/int128.h"
#include "absl/time/time.h"
#include "common/json_quote.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt::tsdb {

namespace {

using client::ColumnSchema;
using client::Scanner;

// Points a raw query may return (they are sorted in memory), and rows fill(null) may make.
constexpr size_t kMaxPoints = 1000000;
constexpr size_t kMaxFilledRows = 1000000;

// The scanner aggregate of an InfluxQL function.
absl::StatusOr<Scanner::AggregateFunction> FunctionOf(const std::string& f) {
  if (f == "mean") return Scanner::AVG;
  if (f == "max") return Scanner::MAX;
  if (f == "min") return Scanner::MIN;
  if (f == "sum") return Scanner::SUM;
  if (f == "count") return Scanner::COUNT;
  if (f == "first") return Scanner::FIRST;
  if (f == "last") return Scanner::LAST;
  return absl::InvalidArgumentError(
      StrCat("unsupported function ", f, "() (mean, max, min, sum, count, first and last are)"));
}

std::string JsonDouble(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, end);
}

std::string TimeJson(int64_t us, const std::string& epoch) {
  if (epoch.empty()) return JsonQuote(FormatInfluxTime(us));
  if (epoch == "ns" || epoch == "n") {
    int64_t ns;
    if (__builtin_mul_overflow(us, int64_t{1000}, &ns)) ns = us < 0 ? INT64_MIN : INT64_MAX;
    return std::to_string(ns);
  }
  if (epoch == "u" || epoch == "us") return std::to_string(us);
  if (epoch == "ms") return std::to_string(us / 1000);
  if (epoch == "s") return std::to_string(us / 1000000);
  if (epoch == "m") return std::to_string(us / 60000000);
  return std::to_string(us / 3600000000LL);
}

// A result cell as JSON.
std::string CellJson(const client::ScanBatch& batch, int col, int64_t row) {
  const client::ScanBatch::ColumnView v = batch.Column(col);
  if (v.IsNull(row)) return "null";
  const char* cell = static_cast<const char*>(v.data) + row * v.cell_size;
  switch (v.type) {
    case ColumnSchema::DOUBLE: {
      double d;
      std::memcpy(&d, cell, sizeof(d));
      return JsonDouble(d);
    }
    case ColumnSchema::INT64:
    case ColumnSchema::UNIXTIME_MICROS: {
      int64_t i;
      std::memcpy(&i, cell, sizeof(i));
      return std::to_string(i);
    }
    case ColumnSchema::BOOL:
      return *cell != 0 ? "true" : "false";
    case ColumnSchema::STRING:
      return JsonQuote(v.GetString(row));
    default:
      return "null";
  }
}

// An INT64 or UNIXTIME_MICROS cell (a time or a count); 0 for NULL.
int64_t Int64Cell(const client::ScanBatch& batch, int col, int64_t row) {
  const client::ScanBatch::ColumnView v = batch.Column(col);
  int64_t t = 0;
  if (!v.IsNull(row)) std::memcpy(&t, static_cast<const char*>(v.data) + row * 8, 8);
  return t;
}

// Columns named as InfluxDB names them: the alias, else the function (or field); repeats get
// _1, _2, ...
std::vector<std::string> UniqueNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::map<std::string, int> seen;
  for (const std::string& n : names) {
    const int k = seen[n]++;
    out.push_back(k == 0 ? n : StrCat(n, "_", k));
  }
  return out;
}

// One series of the answer.
struct Series {
  std::vector<std::pair<std::string, std::string>> tags;
  std::vector<std::pair<int64_t, std::vector<std::string>>> rows;  // time, cells (JSON)
};

void AppendSeries(const std::string& name, const std::vector<std::string>& columns,
                  std::vector<Series>* series, const InfluxSelect& sel, const QueryOptions& opts,
                  std::string* out) {
  // LIMIT 0 and SLIMIT 0 mean no limit, as in InfluxDB.
  if (sel.slimit && *sel.slimit > 0 && series->size() > static_cast<size_t>(*sel.slimit)) {
    series->resize(*sel.slimit);
  }
  std::string s;
  for (Series& se : *series) {
    if (sel.descending) std::reverse(se.rows.begin(), se.rows.end());
    if (sel.limit && *sel.limit > 0 && se.rows.size() > static_cast<size_t>(*sel.limit)) {
      se.rows.resize(*sel.limit);
    }
    if (se.rows.empty()) continue;
    StrAppend(&s, s.empty() ? "" : ",", "{\"name\":", JsonQuote(name));
    if (!se.tags.empty()) {
      s += ",\"tags\":{";
      for (size_t i = 0; i < se.tags.size(); i++) {
        StrAppend(&s, i ? "," : "", JsonQuote(se.tags[i].first), ":", JsonQuote(se.tags[i].second));
      }
      s += "}";
    }
    s += ",\"columns\":[\"time\"";
    for (const std::string& c : columns) StrAppend(&s, ",", JsonQuote(c));
    s += "],\"values\":[";
    for (size_t r = 0; r < se.rows.size(); r++) {
      StrAppend(&s, r ? "," : "", "[", TimeJson(se.rows[r].first, opts.epoch));
      for (const std::string& c : se.rows[r].second) StrAppend(&s, ",", c);
      s += "]";
    }
    s += "]}";
  }
  if (!s.empty()) StrAppend(out, ",\"series\":[", s, "]");
}

// The time bounds of the WHERE clause: [lo, hi).
void TimeBounds(const InfluxSelect& sel, std::optional<int64_t>* lo, std::optional<int64_t>* hi) {
  for (const InfluxCondition& c : sel.where) {
    if (c.kind != InfluxCondition::kTime) continue;
    int64_t l = INT64_MIN, h = INT64_MAX;
    switch (c.op) {
      case InfluxCondition::kGreater:
        l = c.time_us == INT64_MAX ? INT64_MAX : c.time_us + 1;
        break;
      case InfluxCondition::kGreaterEqual:
        l = c.time_us;
        break;
      case InfluxCondition::kLess:
        h = c.time_us;
        break;
      case InfluxCondition::kLessEqual:
        h = c.time_us == INT64_MAX ? INT64_MAX : c.time_us + 1;
        break;
      case InfluxCondition::kEqual:
        l = c.time_us;
        h = c.time_us == INT64_MAX ? INT64_MAX : c.time_us + 1;
        break;
      default:
        break;
    }
    if (l != INT64_MIN) *lo = lo->has_value() ? std::max(**lo, l) : l;
    if (h != INT64_MAX) *hi = hi->has_value() ? std::min(**hi, h) : h;
  }
}

// Adds the WHERE clause to the scanner: time bounds, tag IN lists, field comparisons.
// NOT_FOUND when a tag or field is not in the table (nothing can match).
absl::Status AddConditions(const InfluxSelect& sel, client::Table* table, Scanner* scanner) {
  std::optional<int64_t> lo, hi;
  TimeBounds(sel, &lo, &hi);
  if (lo) {
    BASALT_RETURN_IF_ERROR(scanner->AddConjunctPredicate(table->NewComparisonPredicate(
        kTimeColumn, client::Predicate::GREATER_EQUAL, client::Value::FromInt(*lo))));
  }
  if (hi) {
    BASALT_RETURN_IF_ERROR(scanner->AddConjunctPredicate(table->NewComparisonPredicate(
        kTimeColumn, client::Predicate::LESS, client::Value::FromInt(*hi))));
  }
  const client::Schema& schema = table->schema();
  for (const InfluxCondition& c : sel.where) {
    if (c.kind == InfluxCondition::kTime) continue;
    const int idx = schema.FindColumn(c.name);
    if (idx < 0) return absl::NotFoundError(c.name);
    if (c.kind == InfluxCondition::kTagNotEqual) {
      return absl::InvalidArgumentError(StrCat("!= on tag ", c.name, " is not supported"));
    }
    if (c.kind == InfluxCondition::kTagIn) {
      if (schema.Column(idx).type() != ColumnSchema::STRING) {
        return absl::InvalidArgumentError(StrCat(c.name, " is not a tag or string field"));
      }
      std::vector<client::Value> values;
      for (const std::string& v : c.values) values.push_back(client::Value::FromString(v));
      BASALT_RETURN_IF_ERROR(
          scanner->AddConjunctPredicate(table->NewInListPredicate(c.name, values)));
      continue;
    }
    client::Predicate::ComparisonOp op;
    switch (c.op) {
      case InfluxCondition::kLess:
        op = client::Predicate::LESS;
        break;
      case InfluxCondition::kLessEqual:
        op = client::Predicate::LESS_EQUAL;
        break;
      case InfluxCondition::kEqual:
        op = client::Predicate::EQUAL;
        break;
      case InfluxCondition::kGreaterEqual:
        op = client::Predicate::GREATER_EQUAL;
        break;
      case InfluxCondition::kGreater:
        op = client::Predicate::GREATER;
        break;
      default:
        return absl::InvalidArgumentError(StrCat("!= on field ", c.name, " is not supported"));
    }
    const ColumnSchema::DataType t = schema.Column(idx).type();
    client::Value value = client::Value::FromDouble(c.number);
    if (t == ColumnSchema::INT64) {
      // An integer field against a fractional or out-of-range bound: decide or round it so that
      // the comparison keeps its meaning (x > 2.5 is x >= 3, x < 2.5 is x <= 2, x > 1e19 is
      // nothing, x < 1e19 everything).
      int64_t bound = 0;
      if (c.integer.has_value()) {
        bound = *c.integer;
      } else {
        double b = c.number;
        const bool up = op == client::Predicate::GREATER || op == client::Predicate::GREATER_EQUAL;
        if (b != std::floor(b)) {
          if (op == client::Predicate::EQUAL) return absl::NotFoundError(c.name);
          b = up ? std::ceil(b) : std::floor(b);
          op = up ? client::Predicate::GREATER_EQUAL : client::Predicate::LESS_EQUAL;
        }
        if (b >= 9223372036854775808.0 || b < -9223372036854775808.0) {
          const bool above = b > 0;
          // Above every value: > and = match nothing, < matches everything; below: the reverse.
          if (op == client::Predicate::EQUAL || up == above) return absl::NotFoundError(c.name);
          continue;
        }
        bound = static_cast<int64_t>(b);
      }
      value = client::Value::FromInt(bound);
    } else if (t != ColumnSchema::DOUBLE) {
      return absl::InvalidArgumentError(StrCat(c.name, " is not a numeric field"));
    }
    BASALT_RETURN_IF_ERROR(
        scanner->AddConjunctPredicate(table->NewComparisonPredicate(c.name, op, value)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string FormatInfluxTime(int64_t time_us) {
  const absl::Time t = absl::FromUnixMicros(time_us);
  std::string s = absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone());
  return s;
}

absl::Status QueryExecutor::SelectPoints(const InfluxSelect& sel, const QueryOptions& opts,
                                         client::Table* table,
                                         const std::vector<std::string>& all_tags,
                                         const std::vector<std::string>& fields,
                                         const std::vector<std::string>& group_tags,
                                         std::string* out) {
  const client::Schema& schema = table->schema();
  // Columns: the fields and tags asked; * is every field and every tag not grouped by, by name.
  std::vector<std::string> columns;
  bool star = false;
  for (const InfluxSelect::Item& item : sel.items) {
    if (item.field == "*") {
      star = true;
      columns.insert(columns.end(), fields.begin(), fields.end());
      for (const std::string& t : all_tags) {
        if (std::find(group_tags.begin(), group_tags.end(), t) == group_tags.end()) {
          columns.push_back(t);
        }
      }
    } else if (item.field != kTimeColumn && schema.FindColumn(item.field) >= 0) {
      columns.push_back(item.field);
    }
    // An unknown field matches nothing (as in InfluxDB): no column.
  }
  if (star) std::sort(columns.begin(), columns.end());
  if (columns.empty()) return absl::OkStatus();
  std::vector<std::string> projection = group_tags;
  projection.push_back(kTimeColumn);
  std::vector<int> column_index;
  for (const std::string& c : columns) {
    auto it = std::find(projection.begin(), projection.end(), c);
    if (it == projection.end()) {
      projection.push_back(c);
      it = projection.end() - 1;
    }
    column_index.push_back(static_cast<int>(it - projection.begin()));
  }
  Scanner scanner(table);
  BASALT_RETURN_IF_ERROR(scanner.SetProjectedColumnNames(projection));
  absl::Status cond = AddConditions(sel, table, &scanner);
  if (absl::IsNotFound(cond)) return absl::OkStatus();  // An unknown tag or field: no series.
  BASALT_RETURN_IF_ERROR(cond);
  BASALT_RETURN_IF_ERROR(scanner.Open());
  const int ng = static_cast<int>(group_tags.size());
  std::map<std::vector<std::string>, std::vector<std::pair<int64_t, std::vector<std::string>>>>
      by_series;
  size_t points = 0;
  client::ScanBatch batch;
  while (scanner.HasMoreRows()) {
    BASALT_RETURN_IF_ERROR(scanner.NextBatch(&batch));
    points += static_cast<size_t>(batch.NumRows());
    if (points > kMaxPoints) {
      return absl::ResourceExhaustedError(
          StrCat("more than ", kMaxPoints, " points; narrow the time range or use an aggregate"));
    }
    for (int64_t r = 0; r < batch.NumRows(); r++) {
      std::vector<std::string> tags;
      for (int g = 0; g < ng; g++) tags.emplace_back(batch.Column(g).GetString(r));
      std::vector<std::string> cells;
      for (int c : column_index) cells.push_back(CellJson(batch, c, r));
      by_series[std::move(tags)].emplace_back(Int64Cell(batch, ng, r), std::move(cells));
    }
  }
  std::vector<Series> series;
  for (auto& [tags, rows] : by_series) {
    series.emplace_back();
    for (int g = 0; g < ng; g++) series.back().tags.emplace_back(group_tags[g], tags[g]);
    // By time; points of several series at one time (no GROUP BY) by their values, so that the
    // answer does not depend on the order tablets answered in.
    std::sort(rows.begin(), rows.end());
    series.back().rows = std::move(rows);
  }
  AppendSeries(sel.measurement, columns, &series, sel, opts, out);
  return absl::OkStatus();
}

absl::Status QueryExecutor::Select(const InfluxSelect& sel, const QueryOptions& opts,
                                   std::string* out) {
  absl::StatusOr<std::shared_ptr<client::Table>> t =
      catalog_->TableForRead(opts.db, sel.measurement);
  if (absl::IsNotFound(t.status())) return absl::OkStatus();  // No series.
  if (!t.ok()) return t.status();
  client::Table* table = t->get();
  const client::Schema& schema = table->schema();
  const std::vector<std::string> all_tags = Catalog::TagColumns(schema);
  std::vector<std::string> fields;
  for (int i = schema.num_key_columns(); i < schema.num_columns(); i++) {
    fields.push_back(schema.Column(i).name());
  }
  std::sort(fields.begin(), fields.end());
  std::vector<std::string> group_tags = sel.group_all_tags ? all_tags : sel.group_tags;
  for (const std::string& g : group_tags) {
    if (std::find(all_tags.begin(), all_tags.end(), g) == all_tags.end()) {
      return absl::InvalidArgumentError(StrCat("GROUP BY ", g, ": not a tag of ", sel.measurement));
    }
  }
  bool any_aggregate = false, any_raw = false;
  for (const InfluxSelect::Item& item : sel.items) {
    (item.function.empty() ? any_raw : any_aggregate) = true;
  }
  if (any_aggregate && any_raw) {
    return absl::InvalidArgumentError(
        "mixing aggregate and non-aggregate queries is not supported");
  }
  std::optional<int64_t> lo, hi;
  TimeBounds(sel, &lo, &hi);
  // The last point of each series (SELECT * ... ORDER BY time DESC LIMIT 1, TSBS's lastpoint)
  // is LAST of every field: an aggregate, not a read of every row.
  const bool lastpoint = any_raw && sel.descending && sel.limit == 1 && sel.group_time_us == 0;
  if (any_raw && !lastpoint) {
    if (sel.group_time_us > 0) {
      return absl::InvalidArgumentError("GROUP BY time() needs an aggregate function");
    }
    return SelectPoints(sel, opts, table, all_tags, fields, group_tags, out);
  }
  // The aggregates asked: function, field, column name.
  struct Agg {
    Scanner::AggregateFunction f;
    std::string field;
    std::string name;
  };
  std::vector<Agg> aggs;
  bool selectors_only = true;  // FIRST/LAST only: their time is the point's.
  for (const InfluxSelect::Item& item : sel.items) {
    Scanner::AggregateFunction f = Scanner::LAST;
    std::string fname = "last";
    if (!lastpoint) {
      BASALT_ASSIGN_OR_RETURN(f, FunctionOf(item.function));
      fname = item.function;
    }
    if (f != Scanner::FIRST && f != Scanner::LAST) selectors_only = false;
    if (item.field == "*") {
      for (const std::string& field : fields) {
        // mean(*) and sum(*) take the numeric fields only, as InfluxDB does.
        const ColumnSchema::DataType t = schema.Column(schema.FindColumn(field)).type();
        if ((f == Scanner::AVG || f == Scanner::SUM) && t != ColumnSchema::DOUBLE &&
            t != ColumnSchema::INT64) {
          continue;
        }
        aggs.push_back({f, field, lastpoint ? field : StrCat(fname, "_", field)});
      }
    } else if (schema.FindColumn(item.field) >= schema.num_key_columns()) {
      aggs.push_back({f, item.field,
                      !item.alias.empty() ? item.alias
                      : lastpoint         ? item.field
                                          : fname});
    } else if (schema.FindColumn(item.field) >= 0) {
      return absl::InvalidArgumentError(StrCat(item.field, " is a tag or time, not a field"));
    }
    // An unknown field matches nothing (as in InfluxDB): no column.
  }
  if (aggs.empty()) return absl::OkStatus();
  bool any_selector = false;
  for (const Agg& a : aggs) any_selector |= a.f == Scanner::FIRST || a.f == Scanner::LAST;
  // Tags the WHERE clause pins to one value are one series' as good as grouped.
  size_t covered = group_tags.size();
  for (const std::string& t : all_tags) {
    if (std::find(group_tags.begin(), group_tags.end(), t) != group_tags.end()) continue;
    for (const InfluxCondition& c : sel.where) {
      if (c.kind == InfluxCondition::kTagIn && c.name == t && c.values.size() == 1) {
        covered++;
        break;
      }
    }
  }
  if (any_selector && !selectors_only && covered != all_tags.size()) {
    // Per series they would be right, but the other functions would then need merging across
    // series: refused rather than answered by key order.
    return absl::InvalidArgumentError(
        "first() and last() with other functions need GROUP BY every tag (or *)");
  }
  std::vector<std::string> names;
  for (const Agg& a : aggs) names.push_back(a.name);
  names = UniqueNames(names);

  // FIRST and LAST are by time in InfluxQL, by primary key in an aggregate scan: the same within
  // one series (the key is the tags, then time), not across series. So selectors are computed
  // per series (grouped by every tag), and of the series of one requested group the client keeps
  // the value of the one whose point came first (last).
  std::vector<std::string> scan_tags = group_tags;
  if (selectors_only) {
    for (const std::string& t : all_tags) {
      if (std::find(scan_tags.begin(), scan_tags.end(), t) == scan_tags.end()) {
        scan_tags.push_back(t);
      }
    }
  }
  Scanner scanner(table);
  // Every result column is named here ("#g0", "#a0", ...), so no tag name can clash with them.
  for (size_t i = 0; i < scan_tags.size(); i++) {
    BASALT_RETURN_IF_ERROR(scanner.AddGroupBy(scan_tags[i], StrCat("#g", i)));
  }
  if (sel.group_time_us > 0) {
    BASALT_RETURN_IF_ERROR(scanner.AddGroupByTimeBucket(kTimeColumn, sel.group_time_us,
                                                        sel.group_time_offset_us, "#time"));
  }
  for (size_t i = 0; i < aggs.size(); i++) {
    absl::Status s = scanner.AddAggregate(aggs[i].f, aggs[i].field, StrCat("#a", i));
    if (!s.ok()) {
      return absl::InvalidArgumentError(StrCat(names[i], "(", aggs[i].field, "): ", s.message()));
    }
  }
  // Each series' first and last point times: which series a selector takes, and (without time
  // buckets) the time reported.
  if (selectors_only) {
    BASALT_RETURN_IF_ERROR(scanner.AddAggregate(Scanner::FIRST, kTimeColumn, "#t0"));
    BASALT_RETURN_IF_ERROR(scanner.AddAggregate(Scanner::LAST, kTimeColumn, "#t1"));
  }
  // Without any group an aggregate has one row even over no rows; InfluxDB has no series then:
  // a hidden COUNT(*) tells.
  const bool count_rows = scan_tags.empty() && sel.group_time_us == 0;
  if (count_rows) BASALT_RETURN_IF_ERROR(scanner.AddAggregate(Scanner::COUNT_ALL, "", "#n"));
  absl::Status cond = AddConditions(sel, table, &scanner);
  if (absl::IsNotFound(cond)) return absl::OkStatus();  // An unknown tag or field: no series.
  BASALT_RETURN_IF_ERROR(cond);
  BASALT_RETURN_IF_ERROR(scanner.Open());

  const int ng = static_cast<int>(group_tags.size());
  const int nscan = static_cast<int>(scan_tags.size());
  const int time_col = sel.group_time_us > 0 ? nscan : -1;
  const int first_agg = nscan + (time_col >= 0 ? 1 : 0);
  const int hidden = first_agg + static_cast<int>(aggs.size());
  // Rows by (requested tag values, time bucket): the map's order is the answer's.
  struct Reduced {
    int64_t time = 0;
    std::vector<std::string> cells;
    std::vector<int64_t> chosen;  // The series time each selector's value came with.
    bool any = false;
  };
  std::map<std::pair<std::vector<std::string>, int64_t>, Reduced> rows;
  client::ScanBatch batch;
  while (scanner.HasMoreRows()) {
    BASALT_RETURN_IF_ERROR(scanner.NextBatch(&batch));
    for (int64_t r = 0; r < batch.NumRows(); r++) {
      // The hidden count comes after the selectors' times.
      if (count_rows && Int64Cell(batch, hidden + (selectors_only ? 2 : 0), r) == 0) continue;
      std::vector<std::string> tag_values;
      for (int g = 0; g < ng; g++) tag_values.emplace_back(batch.Column(g).GetString(r));
      const int64_t bucket = time_col >= 0 ? Int64Cell(batch, time_col, r) : 0;
      Reduced& red = rows[{std::move(tag_values), bucket}];
      if (!red.any) {
        red.cells.assign(aggs.size(), "null");
        red.chosen.assign(aggs.size(), 0);
        red.time = time_col >= 0 ? bucket : lo.value_or(0);
      }
      const int64_t first_time = selectors_only ? Int64Cell(batch, hidden, r) : 0;
      const int64_t last_time = selectors_only ? Int64Cell(batch, hidden + 1, r) : 0;
      for (size_t a = 0; a < aggs.size(); a++) {
        std::string cell = CellJson(batch, first_agg + static_cast<int>(a), r);
        if (red.any && selectors_only) {
          if (cell == "null") continue;
          const bool last = aggs[a].f == Scanner::LAST;
          const int64_t t = last ? last_time : first_time;
          if (red.cells[a] != "null" && (last ? t <= red.chosen[a] : t >= red.chosen[a])) continue;
          red.chosen[a] = t;
          red.cells[a] = std::move(cell);
        } else {
          red.chosen[a] = aggs[a].f == Scanner::LAST ? last_time : first_time;
          red.cells[a] = std::move(cell);
        }
      }
      red.any = true;
      // Selectors without time buckets report the time of the first selector's point.
      if (selectors_only && time_col < 0) red.time = red.chosen[0];
    }
  }
  std::vector<Series> series;
  const std::vector<std::string>* current = nullptr;
  for (auto& [key, red] : rows) {
    if (current == nullptr || key.first != *current) {
      series.emplace_back();
      for (int g = 0; g < ng; g++) series.back().tags.emplace_back(group_tags[g], key.first[g]);
      current = &key.first;
    }
    series.back().rows.emplace_back(red.time, std::move(red.cells));
  }
  // fill(null): every interval of [lo, hi) has a row (count() has 0 there, as in InfluxDB).
  if (time_col >= 0 && !sel.fill_none && lo.has_value()) {
    const int64_t end = hi.value_or(opts.now_us);
    const int64_t w = sel.group_time_us, off = sel.group_time_offset_us;
    // In 128 bits: bounds may be anywhere in int64.
    const absl::int128 d = absl::int128(*lo) - off;
    absl::int128 first = (d / w - (d % w < 0 ? 1 : 0)) * w + off;
    const absl::int128 buckets = end > first ? (absl::int128(end) - first + w - 1) / w : 0;
    if (buckets * std::max<size_t>(series.size(), 1) > absl::int128(kMaxFilledRows)) {
      return absl::ResourceExhaustedError(
          StrCat("GROUP BY time(", w, "us) over that time range makes more than ", kMaxFilledRows,
                 " rows; narrow the range, widen the interval or use fill(none)"));
    }
    std::vector<std::string> empty;
    for (const Agg& a : aggs) empty.push_back(a.f == Scanner::COUNT ? "0" : "null");
    for (Series& se : series) {
      std::map<int64_t, std::vector<std::string>> by_time;
      for (auto& row : se.rows) by_time[row.first] = std::move(row.second);
      se.rows.clear();
      for (absl::int128 b = first; b < end; b += w) {
        auto it = by_time.find(static_cast<int64_t>(b));
        se.rows.emplace_back(static_cast<int64_t>(b),
                             it != by_time.end() ? std::move(it->second) : empty);
      }
    }
  }
  AppendSeries(sel.measurement, names, &series, sel, opts, out);
  return absl::OkStatus();
}

absl::Status QueryExecutor::Show(const InfluxStatement& s, const QueryOptions& opts,
                                 std::string* out) {
  auto values_json = [](const std::vector<std::vector<std::string>>& rows) {
    std::string v;
    for (size_t i = 0; i < rows.size(); i++) {
      v += i ? ",[" : "[";
      for (size_t j = 0; j < rows[i].size(); j++)
        StrAppend(&v, j ? "," : "", JsonQuote(rows[i][j]));
      v += "]";
    }
    return v;
  };
  auto one_series = [&](const std::string& name, const std::vector<std::string>& columns,
                        const std::vector<std::vector<std::string>>& rows) {
    std::string cols;
    for (size_t i = 0; i < columns.size(); i++)
      StrAppend(&cols, i ? "," : "", JsonQuote(columns[i]));
    return StrCat("{\"name\":", JsonQuote(name), ",\"columns\":[", cols, "],\"values\":[",
                  values_json(rows), "]}");
  };
  if (s.kind == InfluxStatement::kShowDatabases) {
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> dbs, catalog_->Databases());
    std::vector<std::vector<std::string>> rows;
    for (const std::string& d : dbs) rows.push_back({d});
    StrAppend(out, ",\"series\":[", one_series("databases", {"name"}, rows), "]");
    return absl::OkStatus();
  }
  if (opts.db.empty()) return absl::InvalidArgumentError("database name required");
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> ms, catalog_->Measurements(opts.db));
  if (s.kind == InfluxStatement::kShowMeasurements) {
    if (ms.empty()) return absl::OkStatus();
    std::vector<std::vector<std::string>> rows;
    for (const std::string& m : ms) rows.push_back({m});
    StrAppend(out, ",\"series\":[", one_series("measurements", {"name"}, rows), "]");
    return absl::OkStatus();
  }
  std::string all;
  for (const std::string& m : ms) {
    if (!s.name.empty() && m != s.name) continue;
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<client::Table> table,
                            catalog_->TableForRead(opts.db, m));
    const client::Schema& schema = table->schema();
    std::vector<std::vector<std::string>> rows;
    if (s.kind == InfluxStatement::kShowTagKeys) {
      for (const std::string& t : Catalog::TagColumns(schema)) rows.push_back({t});
    } else {
      for (int i = schema.num_key_columns(); i < schema.num_columns(); i++) {
        const ColumnSchema c = schema.Column(i);
        const char* type = c.type() == ColumnSchema::DOUBLE   ? "float"
                           : c.type() == ColumnSchema::INT64  ? "integer"
                           : c.type() == ColumnSchema::STRING ? "string"
                                                              : "boolean";
        rows.push_back({c.name(), type});
      }
      std::sort(rows.begin(), rows.end());
    }
    if (rows.empty()) continue;
    StrAppend(&all, all.empty() ? "" : ",",
              one_series(m,
                         s.kind == InfluxStatement::kShowTagKeys
                             ? std::vector<std::string>{"tagKey"}
                             : std::vector<std::string>{"fieldKey", "fieldType"},
                         rows));
  }
  if (!all.empty()) StrAppend(out, ",\"series\":[", all, "]");
  return absl::OkStatus();
}

std::string QueryExecutor::Execute(const std::vector<InfluxStatement>& statements,
                                   const QueryOptions& opts) {
  std::string out = "{\"results\":[";
  for (size_t i = 0; i < statements.size(); i++) {
    const InfluxStatement& s = statements[i];
    std::string body;
    absl::Status st;
    switch (s.kind) {
      case InfluxStatement::kSelect:
        if (opts.db.empty()) {
          st = absl::InvalidArgumentError("database name required");
        } else {
          st = Select(s.select, opts, &body);
        }
        break;
      case InfluxStatement::kCreateDatabase:
        st = catalog_->CreateDatabase(s.name);
        break;
      case InfluxStatement::kDropDatabase:
        st = catalog_->DropDatabase(s.name);
        break;
      default:
        st = Show(s, opts, &body);
        break;
    }
    StrAppend(&out, i ? "," : "", "{\"statement_id\":", i);
    if (st.ok()) {
      out += body;
    } else {
      StrAppend(&out, ",\"error\":", JsonQuote(std::string(st.message())));
    }
    out += "}";
  }
  return out + "]}";
}

}  // namespace basalt::tsdb
