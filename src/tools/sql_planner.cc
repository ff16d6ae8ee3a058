#include "tools/sql_planner.h"

#include <algorithm>
#include <utility>

#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/lexer.h"
#include "tools/scan_predicates.h"

namespace basalt::tools {

namespace {

using client::Scanner;

bool SameBucket(const SqlItem& a, const SqlPlan::Group& g) {
  return a.kind == SqlItem::kTimeBucket && a.column == g.column &&
         a.width_micros == g.width_micros && a.offset_micros == g.offset_micros;
}

std::string Header(const SqlItem& item) { return item.alias.empty() ? item.text : item.alias; }

std::string OpText(client::Predicate::ComparisonOp op) {
  switch (op) {
    case client::Predicate::LESS:
      return "<";
    case client::Predicate::LESS_EQUAL:
      return "<=";
    case client::Predicate::EQUAL:
      return "=";
    case client::Predicate::GREATER_EQUAL:
      return ">=";
    case client::Predicate::GREATER:
      return ">";
  }
  return "?";
}

std::string LiteralText(const Literal& l) {
  return l.kind == Literal::kString ? StrCat("'", l.text, "'") : l.text;
}

std::string PredicateText(const PredicateDef& p) {
  switch (p.kind) {
    case PredicateDef::kComparison:
      return StrCat(p.column, " ", OpText(p.op), " ", LiteralText(p.values[0]));
    case PredicateDef::kInList: {
      std::string s = StrCat(p.column, " IN (");
      for (size_t i = 0; i < p.values.size(); i++) {
        StrAppend(&s, i ? ", " : "", LiteralText(p.values[i]));
      }
      return s + ")";
    }
    case PredicateDef::kIsNull:
      return StrCat(p.column, " IS NULL");
    case PredicateDef::kIsNotNull:
      return StrCat(p.column, " IS NOT NULL");
  }
  return "?";
}

class Planner {
 public:
  Planner(std::string_view sql, const SelectStmt& stmt, const client::Schema& schema)
      : sql_(sql), stmt_(stmt), schema_(schema) {}

  absl::StatusOr<SqlPlan> Plan() {
    plan_.table = stmt_.table;
    plan_.predicates = stmt_.where;
    plan_.limit = stmt_.limit;
    for (const SqlItem& item : stmt_.items) {
      if (item.kind == SqlItem::kAggregate) plan_.aggregate = true;
    }
    if (!stmt_.group_by.empty()) plan_.aggregate = true;
    BASALT_RETURN_IF_ERROR(plan_.aggregate ? PlanAggregate() : PlanRows());
    BASALT_RETURN_IF_ERROR(PlanOrder());
    plan_.limit_pushed = plan_.limit.has_value() && plan_.sort.empty();
    return plan_;
  }

 private:
  absl::Status Error(size_t pos, std::string_view message) const {
    return SyntaxError(sql_, pos, message);
  }

  absl::Status CheckColumn(const std::string& name, size_t pos) const {
    if (schema_.FindColumn(name) >= 0) return absl::OkStatus();
    return Error(pos, StrCat("table '", stmt_.table, "' has no column '", name, "'"));
  }

  // Row scans: the projection, with ORDER BY columns that are not selected added at its end.
  int ProjectColumn(const std::string& name) {
    auto it = std::find(plan_.projection.begin(), plan_.projection.end(), name);
    if (it != plan_.projection.end()) return static_cast<int>(it - plan_.projection.begin());
    plan_.projection.push_back(name);
    return static_cast<int>(plan_.projection.size()) - 1;
  }

  absl::Status PlanRows() {
    for (const SqlItem& item : stmt_.items) {
      if (item.kind == SqlItem::kStar) {
        for (int i = 0; i < schema_.num_columns(); i++) {
          plan_.outputs.push_back(ProjectColumn(schema_.Column(i).name()));
          plan_.headers.push_back(schema_.Column(i).name());
        }
      } else if (item.kind == SqlItem::kTimeBucket) {
        return Error(item.pos, "time_bucket needs GROUP BY (it groups rows)");
      } else {
        BASALT_RETURN_IF_ERROR(CheckColumn(item.column, item.pos));
        plan_.outputs.push_back(ProjectColumn(item.column));
        plan_.headers.push_back(Header(item));
      }
    }
    return absl::OkStatus();
  }

  // The GROUP BY entry `g` as a group: an alias or position names a select item.
  absl::StatusOr<SqlPlan::Group> ResolveGroup(const SqlItem& g) const {
    const SqlItem* target = &g;
    if (g.kind == SqlItem::kPosition) {
      if (g.position < 1 || g.position > static_cast<int64_t>(stmt_.items.size())) {
        return Error(g.pos, StrCat("GROUP BY position ", g.position, " is not in the select list"));
      }
      target = &stmt_.items[g.position - 1];
    } else if (g.kind == SqlItem::kColumn && schema_.FindColumn(g.column) < 0) {
      for (const SqlItem& item : stmt_.items) {
        if (!item.alias.empty() && item.alias == g.column) target = &item;
      }
    }
    if (target->kind == SqlItem::kAggregate || target->kind == SqlItem::kStar) {
      return Error(g.pos, StrCat("cannot GROUP BY ", target->text));
    }
    BASALT_RETURN_IF_ERROR(CheckColumn(target->column, g.pos));
    return SqlPlan::Group{target->column, target->width_micros, target->offset_micros,
                          target->text};
  }

  absl::Status PlanAggregate() {
    for (const SqlItem& g : stmt_.group_by) {
      BASALT_ASSIGN_OR_RETURN(SqlPlan::Group group, ResolveGroup(g));
      plan_.groups.push_back(std::move(group));
    }
    const int num_groups = static_cast<int>(plan_.groups.size());
    for (const SqlItem& item : stmt_.items) {
      if (item.kind == SqlItem::kStar) {
        return Error(item.pos, "* cannot be selected with aggregates or GROUP BY");
      }
      if (item.kind == SqlItem::kAggregate) {
        if (!item.column.empty()) BASALT_RETURN_IF_ERROR(CheckColumn(item.column, item.pos));
        plan_.outputs.push_back(num_groups + static_cast<int>(plan_.aggregates.size()));
        plan_.aggregates.push_back({item.function, item.column, item.text});
        plan_.headers.push_back(Header(item));
        continue;
      }
      // A column or a time bucket: one of the groups.
      int found = -1;
      for (int i = 0; i < num_groups; i++) {
        const SqlPlan::Group& g = plan_.groups[i];
        if (item.kind == SqlItem::kColumn ? g.width_micros == 0 && g.column == item.column
                                          : SameBucket(item, g)) {
          found = i;
        }
      }
      if (found < 0) {
        if (item.kind == SqlItem::kColumn)
          BASALT_RETURN_IF_ERROR(CheckColumn(item.column, item.pos));
        return Error(item.pos,
                     StrCat(item.text, " must appear in GROUP BY or be used in an aggregate"));
      }
      plan_.outputs.push_back(found);
      plan_.headers.push_back(Header(item));
    }
    // GROUP BY without an aggregate lists the groups: count them, print nothing of it.
    if (plan_.aggregates.empty()) plan_.aggregates.push_back({Scanner::COUNT_ALL, "", "count(*)"});
    return absl::OkStatus();
  }

  // The scanner result column an ORDER BY entry names.
  absl::StatusOr<int> ResolveOrder(const SqlItem& o) {
    if (o.kind == SqlItem::kPosition) {
      if (o.position < 1 || o.position > static_cast<int64_t>(plan_.outputs.size())) {
        return Error(o.pos, StrCat("ORDER BY position ", o.position, " is not in the select list"));
      }
      return plan_.outputs[o.position - 1];
    }
    // A header (alias or item text), then an item's text. Only a plain name may match a
    // header by its column: count(host) is not host.
    for (size_t i = 0; i < plan_.headers.size(); i++) {
      if (plan_.headers[i] == o.text ||
          (o.kind == SqlItem::kColumn && plan_.headers[i] == o.column)) {
        return plan_.outputs[i];
      }
    }
    for (size_t i = 0; i < stmt_.items.size() && i < plan_.outputs.size(); i++) {
      if (stmt_.items[i].text == o.text) return plan_.outputs[i];
    }
    if (plan_.aggregate) {
      for (size_t i = 0; i < plan_.groups.size(); i++) {
        if (plan_.groups[i].text == o.text) return static_cast<int>(i);
      }
      for (size_t i = 0; i < plan_.aggregates.size(); i++) {
        if (plan_.aggregates[i].text == o.text) {
          return static_cast<int>(plan_.groups.size() + i);
        }
      }
      return Error(o.pos, StrCat("ORDER BY ", o.text, ": not a group or aggregate of the query"));
    }
    if (o.kind != SqlItem::kColumn) {
      return Error(o.pos, StrCat("ORDER BY ", o.text, ": aggregates need GROUP BY or no columns"));
    }
    BASALT_RETURN_IF_ERROR(CheckColumn(o.column, o.pos));
    return ProjectColumn(o.column);
  }

  absl::Status PlanOrder() {
    for (const SqlOrder& o : stmt_.order_by) {
      BASALT_ASSIGN_OR_RETURN(int column, ResolveOrder(o.item));
      plan_.sort.push_back({column, o.descending, o.item.text});
    }
    return absl::OkStatus();
  }

  std::string_view sql_;
  const SelectStmt& stmt_;
  const client::Schema& schema_;
  SqlPlan plan_;
};

}  // namespace

absl::StatusOr<SqlPlan> PlanSelect(std::string_view sql, const SelectStmt& stmt,
                                   const client::Schema& schema) {
  return Planner(sql, stmt, schema).Plan();
}

absl::Status ConfigureScanner(const SqlPlan& plan, client::Table* table, client::Scanner* scanner) {
  if (plan.aggregate) {
    // Internal names keep equal aggregates apart; headers come from the plan.
    for (size_t i = 0; i < plan.groups.size(); i++) {
      const SqlPlan::Group& g = plan.groups[i];
      BASALT_RETURN_IF_ERROR(
          scanner->AddGroupByTimeBucket(g.column, g.width_micros, g.offset_micros, StrCat("g", i)));
    }
    for (size_t i = 0; i < plan.aggregates.size(); i++) {
      const SqlPlan::Aggregate& a = plan.aggregates[i];
      absl::Status s = scanner->AddAggregate(a.function, a.column, StrCat("a", i));
      if (!s.ok()) return absl::InvalidArgumentError(StrCat(a.text, ": ", s.message()));
    }
  } else {
    BASALT_RETURN_IF_ERROR(scanner->SetProjectedColumnNames(plan.projection));
  }
  BASALT_RETURN_IF_ERROR(AddPredicateDefs(plan.predicates, "WHERE", table, scanner));
  if (plan.limit_pushed) BASALT_RETURN_IF_ERROR(scanner->SetLimit(*plan.limit));
  return absl::OkStatus();
}

std::string ExplainPlan(const SqlPlan& plan) {
  std::string out = StrCat("Scan of table ", plan.table, "\n");
  StrAppend(&out, "  pushed to every tablet the predicates do not rule out:\n");
  if (!plan.predicates.empty()) {
    std::string preds;
    for (const PredicateDef& p : plan.predicates) {
      StrAppend(&preds, preds.empty() ? "" : " AND ", PredicateText(p));
    }
    StrAppend(&out, "    predicates: ", preds, "\n");
  }
  if (plan.aggregate) {
    std::string aggs;
    for (const SqlPlan::Aggregate& a : plan.aggregates) {
      StrAppend(&aggs, aggs.empty() ? "" : ", ", a.text);
    }
    StrAppend(&out, "    aggregates: ", aggs.empty() ? "(none)" : aggs, "\n");
    if (!plan.groups.empty()) {
      std::string groups;
      for (const SqlPlan::Group& g : plan.groups) {
        StrAppend(&groups, groups.empty() ? "" : ", ", g.text);
      }
      StrAppend(&out, "    group by: ", groups, "\n");
    }
    StrAppend(&out, "    answer: partial aggregates, one row per group\n");
  } else {
    std::string cols;
    for (const std::string& c : plan.projection) StrAppend(&cols, cols.empty() ? "" : ", ", c);
    StrAppend(&out, "    columns: ", cols, "\n");
  }
  if (plan.limit_pushed) {
    StrAppend(&out, "    limit: ", *plan.limit, plan.aggregate ? " groups" : " rows", "\n");
  }
  StrAppend(&out, "  in the client:\n");
  if (plan.aggregate) {
    StrAppend(&out, "    merge the partial aggregates of every tablet, groups in order\n");
  }
  if (!plan.sort.empty()) {
    std::string keys;
    for (const SqlPlan::SortKey& k : plan.sort) {
      StrAppend(&keys, keys.empty() ? "" : ", ", k.text, k.descending ? " DESC" : "");
    }
    StrAppend(&out, "    sort by ", keys, "\n");
    if (plan.limit) StrAppend(&out, "    limit ", *plan.limit, "\n");
  }
  std::string headers;
  for (const std::string& h : plan.headers) StrAppend(&headers, headers.empty() ? "" : ", ", h);
  StrAppend(&out, "    print ", headers, "\n");
  return out;
}

}  // namespace basalt::tools
