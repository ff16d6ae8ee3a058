#include "common/aggregate_plan.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/tserver.pb.h"

namespace basalt {
namespace {

// Group-by columns a plan may have (as many as a primary key).
constexpr int kMaxGroups = kMaxKeyColumns;

bool IsNumeric(const TypeInfo& t) {
  return t.is_integer() || t.is_floating_point() || t.is_decimal();
}

// The partial sum of a numeric column (AVG sums the same way): exact integers and decimals in
// int128 (a DECIMAL(38) cell), floating point in DOUBLE.
DataType SumType(const TypeInfo& t) {
  return t.is_floating_point() ? DataType::kDouble : DataType::kDecimal128;
}

std::string DefaultName(const AggregateSpec& a) {
  return StrCat(AggregateFunctionName(a.function), "(",
                a.function == AggregateFunction::kCountAll ? "*" : a.column, ")");
}

std::string GroupText(const GroupBySpec& g) {
  if (g.bucket_width_micros <= 0) return g.column;
  std::string s = StrCat("time_bucket(", g.column, ", ", g.bucket_width_micros);
  if (g.bucket_offset_micros != 0) StrAppend(&s, ", ", g.bucket_offset_micros);
  return s + ")";
}

}  // namespace

std::string_view AggregateFunctionName(AggregateFunction f) {
  switch (f) {
    case AggregateFunction::kCountAll:
    case AggregateFunction::kCount:
      return "count";
    case AggregateFunction::kSum:
      return "sum";
    case AggregateFunction::kMin:
      return "min";
    case AggregateFunction::kMax:
      return "max";
    case AggregateFunction::kAvg:
      return "avg";
    case AggregateFunction::kFirst:
      return "first";
    case AggregateFunction::kLast:
      return "last";
  }
  return "unknown";
}

absl::StatusOr<AggregatePlan> AggregatePlan::Create(const Schema& table,
                                                    std::vector<GroupBySpec> groups,
                                                    std::vector<AggregateSpec> aggregates) {
  if (aggregates.empty()) return absl::InvalidArgumentError("an aggregate scan needs an aggregate");
  if (groups.size() > static_cast<size_t>(kMaxGroups)) {
    return absl::InvalidArgumentError(
        StrCat("too many GROUP BY columns: ", groups.size(), " (the limit is ", kMaxGroups, ")"));
  }
  AggregatePlan plan;
  auto input_of = [&](const std::string& name, int table_idx) {
    auto it = std::find(plan.input_columns_.begin(), plan.input_columns_.end(), name);
    if (it != plan.input_columns_.end()) return static_cast<int>(it - plan.input_columns_.begin());
    plan.input_columns_.push_back(name);
    plan.input_types_.push_back(table.column(table_idx).type());
    return static_cast<int>(plan.input_columns_.size()) - 1;
  };
  std::vector<ColumnSchema> partial;
  std::vector<ColumnSchema> result;
  for (size_t i = 0; i < groups.size(); i++) {
    GroupBySpec& g = groups[i];
    const std::string what = g.alias.empty() ? StrCat("GROUP BY ", GroupText(g))
                                             : StrCat(g.alias, " (GROUP BY ", GroupText(g), ")");
    const int idx = table.find_column(g.column);
    if (idx < 0)
      return absl::InvalidArgumentError(StrCat(what, ": no column named '", g.column, "'"));
    const ColumnSchema& col = table.column(idx);
    if (g.bucket_width_micros < 0 || (g.bucket_width_micros == 0 && g.bucket_offset_micros != 0)) {
      return absl::InvalidArgumentError(StrCat(what, ": the bucket width must be positive"));
    }
    if (g.bucket_width_micros > 0 && col.type() != DataType::kUnixtimeMicros) {
      return absl::InvalidArgumentError(StrCat(what,
                                               ": time_bucket needs a UNIXTIME_MICROS column, '",
                                               col.name(), "' is ", col.TypeToString()));
    }
    Group group;
    group.input = input_of(g.column, idx);
    group.type = col.type();
    partial.emplace_back(StrCat("g", i), col.type(), col.is_nullable(), std::nullopt,
                         col.attributes());
    result.emplace_back(g.alias.empty() ? g.column : g.alias, col.type(), col.is_nullable(),
                        std::nullopt, col.attributes());
    group.spec = std::move(g);
    plan.groups_.push_back(std::move(group));
  }
  for (size_t i = 0; i < aggregates.size(); i++) {
    AggregateSpec& a = aggregates[i];
    if (a.function < AggregateFunction::kCountAll || a.function > AggregateFunction::kLast) {
      return absl::InvalidArgumentError(
          StrCat("aggregate ", i, ": unknown function ", static_cast<int>(a.function)));
    }
    if (a.function == AggregateFunction::kCount && a.column.empty()) {
      a.function = AggregateFunction::kCountAll;
    }
    Aggregate agg;
    const std::string name = a.alias.empty() ? DefaultName(a) : a.alias;
    const std::string p = StrCat("a", i);
    agg.partial = static_cast<int>(partial.size());
    if (a.function == AggregateFunction::kCountAll) {
      if (!a.column.empty()) {
        return absl::InvalidArgumentError(StrCat(name, ": COUNT(*) takes no column"));
      }
      partial.emplace_back(p, DataType::kInt64, false);
      result.emplace_back(name, DataType::kInt64, false);
    } else {
      const int idx = table.find_column(a.column);
      if (idx < 0) {
        return absl::InvalidArgumentError(StrCat(name, ": no column named '", a.column, "'"));
      }
      const ColumnSchema& col = table.column(idx);
      const TypeInfo& t = col.type_info();
      agg.input = input_of(a.column, idx);
      agg.input_type = col.type();
      switch (a.function) {
        case AggregateFunction::kCount:
          partial.emplace_back(p, DataType::kInt64, false);
          result.emplace_back(name, DataType::kInt64, false);
          break;
        case AggregateFunction::kSum:
        case AggregateFunction::kAvg: {
          if (!IsNumeric(t)) {
            return absl::InvalidArgumentError(StrCat(name, ": ", AggregateFunctionName(a.function),
                                                     " needs a numeric column, '", col.name(),
                                                     "' is ", col.TypeToString()));
          }
          agg.sum_type = SumType(t);
          TypeAttributes attrs;
          if (agg.sum_type == DataType::kDecimal128) {
            attrs = {kMaxDecimal128Precision, t.is_decimal() ? col.attributes().scale : 0, 0};
          }
          partial.emplace_back(p + ".sum", agg.sum_type, true, std::nullopt, attrs);
          if (a.function == AggregateFunction::kSum) {
            // Integers: INT64 (checked when the result is written); decimals: DECIMAL(38, s).
            if (t.is_integer()) {
              result.emplace_back(name, DataType::kInt64, true);
            } else {
              result.emplace_back(name, agg.sum_type, true, std::nullopt, attrs);
            }
          } else {
            partial.emplace_back(p + ".count", DataType::kInt64, false);
            result.emplace_back(name, DataType::kDouble, true);
          }
          break;
        }
        case AggregateFunction::kFirst:
        case AggregateFunction::kLast:
          plan.needs_key_ = true;
          partial.emplace_back(p + ".key", DataType::kBinary, true);
          [[fallthrough]];
        default:  // MIN, MAX and FIRST/LAST's value.
          partial.emplace_back(p + ".value", col.type(), true, std::nullopt, col.attributes());
          result.emplace_back(name, col.type(), true, std::nullopt, col.attributes());
          break;
      }
    }
    agg.num_partial = static_cast<int>(partial.size()) - agg.partial;
    agg.spec = std::move(a);
    plan.aggregates_.push_back(std::move(agg));
  }
  BASALT_ASSIGN_OR_RETURN(plan.partial_schema_, Schema::CreateUnkeyed(std::move(partial)));
  absl::StatusOr<Schema> r = Schema::CreateUnkeyed(std::move(result));
  if (!r.ok()) {
    const bool duplicate = absl::StrContains(r.status().message(), "duplicate");
    return absl::InvalidArgumentError(StrCat(
        r.status().message(), duplicate ? " (give the result columns distinct aliases)" : ""));
  }
  plan.result_schema_ = std::move(*r);
  return plan;
}

absl::StatusOr<AggregatePlan> AggregatePlan::FromPB(const Schema& table,
                                                    const pb::NewScanRequestPB& request) {
  std::vector<GroupBySpec> groups;
  for (const pb::GroupByPB& g : request.group_by()) {
    groups.push_back({g.column(), g.bucket_width_micros(), g.bucket_offset_micros(), ""});
  }
  std::vector<AggregateSpec> aggregates;
  for (int i = 0; i < request.aggregates_size(); i++) {
    const pb::AggregatePB& a = request.aggregates(i);
    const int f = static_cast<int>(a.function());
    if (f < static_cast<int>(AggregateFunction::kCountAll) ||
        f > static_cast<int>(AggregateFunction::kLast)) {
      return absl::InvalidArgumentError(StrCat("aggregates[", i, "]: unknown function ", f));
    }
    aggregates.push_back({static_cast<AggregateFunction>(f), a.column(), ""});
  }
  // Aliases are the client's own; these name the fields in errors and keep equal aggregates
  // apart in the result schema the server has no use for (short, whatever the column names).
  for (size_t i = 0; i < aggregates.size(); i++) {
    aggregates[i].alias = StrCat("aggregates[", i, "]");
  }
  for (size_t i = 0; i < groups.size(); i++) groups[i].alias = StrCat("group_by[", i, "]");
  return Create(table, std::move(groups), std::move(aggregates));
}

void AggregatePlan::ToPB(pb::NewScanRequestPB* request) const {
  request->clear_group_by();
  request->clear_aggregates();
  for (const Group& g : groups_) {
    pb::GroupByPB* out = request->add_group_by();
    out->set_column(g.spec.column);
    out->set_bucket_width_micros(g.spec.bucket_width_micros);
    out->set_bucket_offset_micros(g.spec.bucket_offset_micros);
  }
  for (const Aggregate& a : aggregates_) {
    pb::AggregatePB* out = request->add_aggregates();
    out->set_function(static_cast<pb::AggregatePB::Function>(a.spec.function));
    out->set_column(a.spec.column);
  }
}

std::string AggregatePlan::ToString() const {
  std::string s;
  for (const Aggregate& a : aggregates_) {
    if (!s.empty()) s += ", ";
    s += DefaultName(a.spec);
  }
  for (size_t i = 0; i < groups_.size(); i++) {
    StrAppend(&s, i == 0 ? " GROUP BY " : ", ", GroupText(groups_[i].spec));
  }
  return s;
}

}  // namespace basalt
