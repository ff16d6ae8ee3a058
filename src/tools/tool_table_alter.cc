// `basalt table alter <master_addresses> "<ALTER TABLE spec>"` (grammar: docs/cli.md): the steps
// of the spec go into one client::TableAlterer, so they are applied all or nothing, and the action
// waits until every tablet runs the new schema (within --timeout_ms).

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/partition.h"
#include "common/schema.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/master.pb.h"
#include "tools/alter_spec.h"
#include "tools/lexer.h"
#include "tools/master_rpc.h"
#include "tools/table_spec.h"
#include "tools/tool_common.h"

namespace basalt::tools {

namespace {

using client::TableCreator;

// The table's range partition columns, by name (empty: no range partitioning).
absl::StatusOr<std::vector<std::string>> RangeColumns(const std::string& masters,
                                                      const std::string& table) {
  BASALT_ASSIGN_OR_RETURN(MasterTableSchema t, GetMasterTableSchema(masters, table));
  std::vector<std::string> names;
  for (int idx : t.partition_schema.range_column_indexes()) {
    names.push_back(t.schema.column(idx).name());
  }
  return names;
}

// Binds range-partition bounds written in a spec to the table's range columns. Errors point into
// the spec like its syntax errors. Not thread-safe.
class RangeBinder {
 public:
  RangeBinder(std::string_view spec, const client::Schema* schema,
              std::vector<std::string> range_columns)
      : spec_(spec), schema_(schema), columns_(std::move(range_columns)) {}

  // A row with the range columns set to `values` (unset: an unbounded bound).
  absl::StatusOr<std::unique_ptr<client::PartialRow>> Row(
      const std::optional<std::vector<Literal>>& values, size_t step_pos) const {
    auto row = schema_->NewRow();
    if (!values) return row;
    if (columns_.empty())
      return SyntaxError(spec_, step_pos, "the table has no range partitioning");
    if (values->size() != columns_.size()) {
      return SyntaxError(spec_, values->empty() ? step_pos : (*values)[0].pos,
                         StrCat("expected ", columns_.size(), " value(s), one per range column (",
                                absl::StrJoin(columns_, ", "), "), got ", values->size()));
    }
    for (size_t i = 0; i < columns_.size(); ++i) {
      const Literal& l = (*values)[i];
      if (l.kind == Literal::kNull) return SyntaxError(spec_, l.pos, "NULL is not allowed here");
      const client::ColumnSchema col = schema_->Column(schema_->FindColumn(columns_[i]));
      absl::StatusOr<client::Value> v = LiteralToValue(l, col.type(), col.scale());
      absl::Status s = v.ok() ? row->Set(columns_[i], *v) : v.status();
      if (!s.ok()) {
        return SyntaxError(spec_, l.pos, StrCat(s.message(), " (column ", columns_[i], ")"));
      }
    }
    return row;
  }

 private:
  const std::string_view spec_;
  const client::Schema* const schema_;
  const std::vector<std::string> columns_;
};

absl::Status AddStep(const AlterStep& step, const RangeBinder* ranges,
                     client::TableAlterer* alterer) {
  switch (step.kind) {
    case AlterStep::kRenameTable:
      alterer->RenameTo(step.new_name);
      return absl::OkStatus();
    case AlterStep::kAddColumn:
      return ToColumnSpec(step.column, alterer->AddColumn(step.name));
    case AlterStep::kDropColumn:
      alterer->DropColumn(step.name);
      return absl::OkStatus();
    case AlterStep::kRenameColumn:
      alterer->AlterColumn(step.name)->RenameTo(step.new_name);
      return absl::OkStatus();
    case AlterStep::kAddRangePartition:
    case AlterStep::kDropRangePartition: {
      BASALT_ASSIGN_OR_RETURN(auto lower, ranges->Row(step.range.lower, step.pos));
      BASALT_ASSIGN_OR_RETURN(auto upper, ranges->Row(step.range.upper, step.pos));
      const auto lower_type = step.range.lower_inclusive ? TableCreator::INCLUSIVE_BOUND
                                                         : TableCreator::EXCLUSIVE_BOUND;
      const auto upper_type = step.range.upper_inclusive ? TableCreator::INCLUSIVE_BOUND
                                                         : TableCreator::EXCLUSIVE_BOUND;
      if (step.kind == AlterStep::kAddRangePartition) {
        alterer->AddRangePartition(std::move(lower), std::move(upper), lower_type, upper_type);
      } else {
        alterer->DropRangePartition(std::move(lower), std::move(upper), lower_type, upper_type);
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown alter step");
}

bool HasRangeStep(const AlterSpec& spec) {
  for (const AlterStep& s : spec.steps) {
    if (s.kind == AlterStep::kAddRangePartition || s.kind == AlterStep::kDropRangePartition) {
      return true;
    }
  }
  return false;
}

absl::Status AlterTable(const ActionContext& ctx) {
  const std::string& masters = ctx.args[0];
  const std::string& text = ctx.args[1];
  BASALT_ASSIGN_OR_RETURN(AlterSpec spec, ParseAlterSpec(text));
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(ConnectToCluster(masters, &client));
  // Range bounds are rows of the table's schema: the table (and its schema) must outlive the
  // alterer that holds them.
  std::shared_ptr<client::Table> table;
  std::optional<RangeBinder> ranges;
  if (HasRangeStep(spec)) {
    BASALT_RETURN_IF_ERROR(client->OpenTable(spec.table_name, &table));
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> range_columns,
                            RangeColumns(masters, spec.table_name));
    ranges.emplace(text, &table->schema(), std::move(range_columns));
  }
  std::unique_ptr<client::TableAlterer> alterer = client->NewTableAlterer(spec.table_name);
  std::vector<std::string> done;
  for (const AlterStep& step : spec.steps) {
    BASALT_RETURN_IF_ERROR(AddStep(step, ranges ? &*ranges : nullptr, alterer.get()));
    done.push_back(AlterStepSummary(step));
  }
  BASALT_RETURN_IF_ERROR_PREPEND(alterer->Alter(),
                                 StrCat("altering table '", spec.table_name, "'"));
  *ctx.out << "Altered table " << spec.table_name << ": " << absl::StrJoin(done, ", ") << "\n";
  return absl::OkStatus();
}

}  // namespace

Action TableAlterAction() {
  return {"alter",
          "Change a table's name, columns or range partitions",
          "Example:\n  basalt table alter 127.0.0.1:7051 \"ALTER TABLE t ADD COLUMN c INT32 NOT "
          "NULL DEFAULT 0, DROP COLUMN old, RENAME COLUMN a TO b, ADD RANGE PARTITION VALUES >= "
          "100 AND < 200\"\n"
          "The steps are applied all or nothing; the command waits until every tablet runs the "
          "new schema. The grammar is in docs/cli.md.",
          {MasterAddressesArg(), {"spec", "ALTER TABLE spec (quote it)"}},
          {},
          AlterTable};
}

}  // namespace basalt::tools
