// TableCreator and TableAlterer.

#include <utility>

#include "absl/time/clock.h"
#include "client/client.h"
#include "client/client_internal.h"
#include "client/master_proxy.h"
#include "common/row_operations.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/master.pb.h"

namespace basalt::client {

using internal::Access;
using internal::MasterProxy;

namespace {

struct RangeSpec {
  std::unique_ptr<PartialRow> lower;
  std::unique_ptr<PartialRow> upper;
  TableCreator::RangePartitionBound lower_type;
  TableCreator::RangePartitionBound upper_type;
};

// Appends one split row or range bound, encoded against `schema`.
absl::Status EncodeBound(RowOperationType type, const PartialRow* row, const basalt::Schema& schema,
                         std::string_view what, pb::RowOperationsPB* out) {
  if (row == nullptr) return absl::InvalidArgumentError(StrCat(what, " is null"));
  const basalt::Schema& row_schema = Access::Internal(*row->schema());
  if (&row_schema != &schema && !row_schema.Equals(schema)) {
    return absl::InvalidArgumentError(
        StrCat(what, " ", row->ToString(), " was built against another schema"));
  }
  BASALT_RETURN_IF_ERROR_PREPEND(
      CheckRowOperationColumns(type, schema, Access::IsSet(*row), Access::IsNull(*row)),
      StrCat(what, " ", row->ToString()));
  RowOperationsEncoder enc(out);
  enc.Add(type, DecodedRowOperation{type, &schema, Access::IsSet(*row), Access::IsNull(*row),
                                    Access::RowData(*row)});
  return absl::OkStatus();
}

absl::Status EncodeRange(const RangeSpec& r, const basalt::Schema& schema,
                         pb::RowOperationsPB* out) {
  const auto lower = r.lower_type == TableCreator::INCLUSIVE_BOUND
                         ? RowOperationType::kRangeLowerBound
                         : RowOperationType::kExclusiveRangeLowerBound;
  const auto upper = r.upper_type == TableCreator::EXCLUSIVE_BOUND
                         ? RowOperationType::kRangeUpperBound
                         : RowOperationType::kInclusiveRangeUpperBound;
  BASALT_RETURN_IF_ERROR(EncodeBound(lower, r.lower.get(), schema, "range lower bound", out));
  return EncodeBound(upper, r.upper.get(), schema, "range upper bound", out);
}

// Polls `is_done` until it says done or the deadline passes. The polls are cheap master reads
// and a new tablet elects its leader within about one Raft tick (500 ms), so they stay at most
// 100 ms apart: a caller should not wait most of a second after the table is ready.
absl::Status WaitUntilDone(std::string_view what, absl::Time deadline,
                           const std::function<absl::StatusOr<bool>()>& is_done) {
  internal::Backoff backoff(deadline, absl::Milliseconds(100));
  for (;;) {
    BASALT_ASSIGN_OR_RETURN(bool done, is_done());
    if (done) return absl::OkStatus();
    if (!backoff.Sleep()) {
      return absl::DeadlineExceededError(StrCat(what, " did not finish before the timeout"));
    }
  }
}

}  // namespace

// ---- TableCreator
// --------------------------------------------------------------------------------

struct TableCreator::Data {
  Client* client;
  std::string name;
  std::optional<Schema> schema;
  std::vector<PartitionSchema::HashLevelSpec> hash_levels;
  std::optional<std::vector<std::string>> range_columns;
  std::vector<RangeSpec> ranges;
  std::vector<std::unique_ptr<PartialRow>> splits;
  int num_replicas = 0;
  bool wait = true;
  std::optional<std::chrono::milliseconds> timeout;

  absl::Status BuildRequest(pb::CreateTableRequestPB* req) const;
};

TableCreator::TableCreator(Client* client) : data_(std::make_unique<Data>()) {
  data_->client = client;
}
TableCreator::~TableCreator() = default;

TableCreator& TableCreator::table_name(std::string name) {
  data_->name = std::move(name);
  return *this;
}
TableCreator& TableCreator::schema(const Schema* schema) {
  data_->schema = *schema;
  return *this;
}
TableCreator& TableCreator::add_hash_partitions(const std::vector<std::string>& columns,
                                                int32_t num_buckets, int32_t seed) {
  data_->hash_levels.push_back({columns, num_buckets, static_cast<uint32_t>(seed)});
  return *this;
}
TableCreator& TableCreator::set_range_partition_columns(const std::vector<std::string>& columns) {
  data_->range_columns = columns;
  return *this;
}
TableCreator& TableCreator::add_range_partition(std::unique_ptr<PartialRow> lower,
                                                std::unique_ptr<PartialRow> upper,
                                                RangePartitionBound lower_type,
                                                RangePartitionBound upper_type) {
  data_->ranges.push_back({std::move(lower), std::move(upper), lower_type, upper_type});
  return *this;
}
TableCreator& TableCreator::add_range_partition_split(std::unique_ptr<PartialRow> split_row) {
  data_->splits.push_back(std::move(split_row));
  return *this;
}
TableCreator& TableCreator::num_replicas(int n) {
  data_->num_replicas = n;
  return *this;
}
TableCreator& TableCreator::wait(bool wait) {
  data_->wait = wait;
  return *this;
}
TableCreator& TableCreator::timeout(std::chrono::milliseconds timeout) {
  data_->timeout = timeout;
  return *this;
}

absl::Status TableCreator::Data::BuildRequest(pb::CreateTableRequestPB* req) const {
  if (name.empty()) return absl::InvalidArgumentError("no table name given");
  if (!schema.has_value() || schema->num_columns() == 0) {
    return absl::InvalidArgumentError("no schema given");
  }
  if (num_replicas < 0) return absl::InvalidArgumentError("num_replicas must not be negative");
  const basalt::Schema& s = Access::Internal(*schema);
  std::vector<std::string> range_cols;
  if (range_columns.has_value()) {
    range_cols = *range_columns;
  } else {
    for (int i = 0; i < s.num_key_columns(); i++) range_cols.push_back(s.column(i).name());
  }
  // Validates the partitioning here for an early, precise error; the master checks it again.
  BASALT_ASSIGN_OR_RETURN(PartitionSchema ps, PartitionSchema::Create(s, hash_levels, range_cols));
  req->set_name(name);
  s.ToPB(req->mutable_schema());
  ps.ToPB(req->mutable_partition_schema());
  for (const RangeSpec& r : ranges) {
    BASALT_RETURN_IF_ERROR(EncodeRange(r, s, req->mutable_split_rows_range_bounds()));
  }
  for (const auto& split : splits) {
    BASALT_RETURN_IF_ERROR(EncodeBound(RowOperationType::kSplitRow, split.get(), s, "split row",
                                       req->mutable_split_rows_range_bounds()));
  }
  req->set_num_replicas(num_replicas);
  return absl::OkStatus();
}

absl::Status TableCreator::Create() {
  pb::CreateTableRequestPB req;
  BASALT_RETURN_IF_ERROR(data_->BuildRequest(&req));
  internal::ClientData* cd = Access::Data(data_->client);
  const absl::Time deadline =
      absl::Now() + (data_->timeout ? absl::FromChrono(*data_->timeout) : cd->admin_timeout);
  pb::CreateTableResponsePB resp;
  // A retry of a create that took effect answers its table id, not ALREADY_EXISTS.
  BASALT_RETURN_IF_ERROR(cd->master->CallExactlyOnce("CreateTable", &MasterProxy::Stub::CreateTable,
                                                     &req, &resp, deadline, &cd->requests));
  if (!data_->wait) return absl::OkStatus();
  return WaitUntilDone("CreateTable", deadline, [&]() -> absl::StatusOr<bool> {
    pb::IsCreateTableDoneRequestPB q;
    q.mutable_table()->set_table_id(resp.table_id());
    pb::IsCreateTableDoneResponsePB r;
    BASALT_RETURN_IF_ERROR(cd->master->Call(
        "IsCreateTableDone", &MasterProxy::Stub::IsCreateTableDone, q, &r, deadline));
    return r.done();
  });
}

// ---- TableAlterer
// --------------------------------------------------------------------------------

struct TableAlterer::Data {
  struct Step {
    enum Kind { kAddColumn, kAlterColumn, kDropColumn, kAddRange, kDropRange } kind;
    std::unique_ptr<ColumnSpec> spec;
    std::string name;
    RangeSpec range;
  };
  Client* client;
  std::string table_name;
  std::optional<std::string> new_name;
  std::vector<Step> steps;
  bool wait = true;
  std::optional<std::chrono::milliseconds> timeout;

  absl::Status BuildStep(const Step& step, pb::AlterTableRequestPB::StepPB* out) const;
};

TableAlterer::TableAlterer(Client* client, std::string table_name)
    : data_(std::make_unique<Data>()) {
  data_->client = client;
  data_->table_name = std::move(table_name);
}
TableAlterer::~TableAlterer() = default;

TableAlterer* TableAlterer::RenameTo(std::string new_name) {
  data_->new_name = std::move(new_name);
  return this;
}
ColumnSpec* TableAlterer::AddColumn(std::string name) {
  data_->steps.push_back(
      {Data::Step::kAddColumn, std::unique_ptr<ColumnSpec>(new ColumnSpec(name)), name, {}});
  return data_->steps.back().spec.get();
}
ColumnSpec* TableAlterer::AlterColumn(std::string name) {
  data_->steps.push_back(
      {Data::Step::kAlterColumn, std::unique_ptr<ColumnSpec>(new ColumnSpec(name)), name, {}});
  return data_->steps.back().spec.get();
}
TableAlterer* TableAlterer::DropColumn(std::string name) {
  data_->steps.push_back({Data::Step::kDropColumn, nullptr, std::move(name), {}});
  return this;
}
TableAlterer* TableAlterer::AddRangePartition(std::unique_ptr<PartialRow> lower,
                                              std::unique_ptr<PartialRow> upper,
                                              TableCreator::RangePartitionBound lower_type,
                                              TableCreator::RangePartitionBound upper_type) {
  data_->steps.push_back({Data::Step::kAddRange,
                          nullptr,
                          "",
                          {std::move(lower), std::move(upper), lower_type, upper_type}});
  return this;
}
TableAlterer* TableAlterer::DropRangePartition(std::unique_ptr<PartialRow> lower,
                                               std::unique_ptr<PartialRow> upper,
                                               TableCreator::RangePartitionBound lower_type,
                                               TableCreator::RangePartitionBound upper_type) {
  data_->steps.push_back({Data::Step::kDropRange,
                          nullptr,
                          "",
                          {std::move(lower), std::move(upper), lower_type, upper_type}});
  return this;
}
TableAlterer* TableAlterer::wait(bool wait) {
  data_->wait = wait;
  return this;
}
TableAlterer* TableAlterer::timeout(std::chrono::milliseconds timeout) {
  data_->timeout = timeout;
  return this;
}

absl::Status TableAlterer::Data::BuildStep(const Step& step,
                                           pb::AlterTableRequestPB::StepPB* out) const {
  switch (step.kind) {
    case Step::kAddColumn: {
      BASALT_ASSIGN_OR_RETURN(basalt::ColumnSchema col, Access::ColumnFromSpec(*step.spec));
      if (!col.is_nullable() && !col.default_value().has_value()) {
        return absl::InvalidArgumentError(StrCat(
            "column '", col.name(), "': a NOT NULL column added to a table needs a default"));
      }
      basalt::Schema::ColumnToPB(col, 0, false, out->mutable_add_column()->mutable_column());
      return absl::OkStatus();
    }
    case Step::kAlterColumn: {
      const auto& rename = Access::RenameTo(*step.spec);
      if (!rename.has_value() || rename->empty() || Access::HasNonRenameChanges(*step.spec)) {
        return absl::InvalidArgumentError(
            StrCat("column '", step.name, "': AlterColumn supports only RenameTo"));
      }
      auto* r = out->mutable_rename_column();
      r->set_old_name(step.name);
      r->set_new_name(*rename);
      return absl::OkStatus();
    }
    case Step::kDropColumn:
      out->mutable_drop_column()->set_name(step.name);
      return absl::OkStatus();
    case Step::kAddRange:
    case Step::kDropRange: {
      if (step.range.lower == nullptr || step.range.upper == nullptr) {
        return absl::InvalidArgumentError("a range partition needs a lower and an upper bound");
      }
      const basalt::Schema& s = Access::Internal(*step.range.lower->schema());
      auto* rp = step.kind == Step::kAddRange ? out->mutable_add_range_partition()
                                              : out->mutable_drop_range_partition();
      return EncodeRange(step.range, s, rp->mutable_range_bounds());
    }
  }
  return absl::InternalError("unknown alter step");
}

absl::Status TableAlterer::Alter() {
  if (data_->steps.empty() && !data_->new_name.has_value()) {
    return absl::InvalidArgumentError("nothing to alter");
  }
  pb::AlterTableRequestPB req;
  req.mutable_table()->set_table_name(data_->table_name);
  if (data_->new_name.has_value()) {
    if (data_->new_name->empty()) return absl::InvalidArgumentError("empty new table name");
    req.set_new_table_name(*data_->new_name);
  }
  for (size_t i = 0; i < data_->steps.size(); i++) {
    BASALT_RETURN_IF_ERROR_PREPEND(data_->BuildStep(data_->steps[i], req.add_steps()),
                                   StrCat("alter step ", i));
  }
  internal::ClientData* cd = Access::Data(data_->client);
  const absl::Time deadline =
      absl::Now() + (data_->timeout ? absl::FromChrono(*data_->timeout) : cd->admin_timeout);
  pb::AlterTableResponsePB resp;
  // A retry of an alter that took effect answers its first answer instead of applying it twice.
  BASALT_RETURN_IF_ERROR(cd->master->CallExactlyOnce("AlterTable", &MasterProxy::Stub::AlterTable,
                                                     &req, &resp, deadline, &cd->requests));
  if (!data_->wait) return absl::OkStatus();
  return WaitUntilDone("AlterTable", deadline, [&]() -> absl::StatusOr<bool> {
    pb::IsAlterTableDoneRequestPB q;
    q.mutable_table()->set_table_id(resp.table_id());
    pb::IsAlterTableDoneResponsePB r;
    BASALT_RETURN_IF_ERROR(cd->master->Call("IsAlterTableDone",
                                            &MasterProxy::Stub::IsAlterTableDone, q, &r, deadline));
    return r.done();
  });
}

}  // namespace basalt::client
