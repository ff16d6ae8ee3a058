#include "tserver/scanner.h"

#include <algorithm>
#include <utility>

#include "common/aggregate_plan.h"
#include "common/clock.h"
#include "common/column_predicate.h"
#include "common/columnar_block_builder.h"
#include "common/group_aggregator.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/types.h"
#include "gflags/gflags.h"
#include "proto/tserver.pb.h"
#include "tserver/tserver_errors.h"

DEFINE_int32(scanner_aggregate_call_ms, 500,
             "An aggregate scan call answers with the partial aggregates of the rows it read once "
             "it has read for this long (or its groups reach the batch size), so that a scan of a "
             "large tablet makes progress within each RPC's deadline; 0: after every block");

namespace basalt {
namespace {

// Rows per iterator block: large enough to amortize per-block work, small enough to bound memory.
constexpr size_t kMaxBlockRows = 4096;
constexpr size_t kMinBlockRows = 16;
constexpr size_t kMaxBlockBytes = 1 << 20;

// Whether `predicates` pin every key column of `schema` to one value, so the scan returns at
// most one row (a point lookup).
bool PinsWholeKey(const Schema& schema, const std::vector<ColumnPredicate>& predicates) {
  for (int k = 0; k < schema.num_key_columns(); ++k) {
    const std::string& name = schema.column(k).name();
    if (std::none_of(predicates.begin(), predicates.end(), [&](const ColumnPredicate& p) {
          return p.kind() == PredicateKind::kEquality && p.column().name() == name;
        })) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::optional<HybridTime>> ReadTimestamp(const TabletReplica& replica,
                                                        const pb::NewScanRequestPB& request) {
  switch (request.read_mode()) {
    case pb::READ_LATEST:
      return std::optional<HybridTime>();
    case pb::READ_AT_SNAPSHOT:
      return std::optional<HybridTime>(request.snap_timestamp() == 0
                                           ? HybridTime::kInvalid
                                           : HybridTime(request.snap_timestamp()));
    case pb::READ_YOUR_WRITES: {
      const uint64_t t =
          std::max(request.propagated_timestamp(), replica.last_applied_timestamp().value());
      return std::optional<HybridTime>(t == 0 ? HybridTime::kInvalid : HybridTime(t));
    }
    default:
      return absl::InvalidArgumentError(
          ToAbsl(StrCat("read_mode: unknown read mode ", static_cast<int>(request.read_mode()))));
  }
}

}  // namespace

Scanner::~Scanner() = default;

void Scanner::Touch() { last_access_micros_.store(Clock::Default()->MonotonicMicros()); }

absl::StatusOr<std::unique_ptr<Scanner>> Scanner::Open(std::shared_ptr<TabletReplica> replica,
                                                       const pb::NewScanRequestPB& request,
                                                       absl::Time deadline) {
  std::unique_ptr<Scanner> s(new Scanner());
  BASALT_RETURN_IF_ERROR(s->Init(std::move(replica), request, deadline));
  return s;
}

absl::StatusOr<std::string> Scanner::CheckProjectedColumn(const Schema& schema,
                                                          const pb::NewScanRequestPB& request,
                                                          int i) {
  // Called for every column of every scan (a point lookup's too): nothing is formatted unless
  // it is an error, and the usual case (the named column has the request's type and
  // nullability) builds no ColumnSchema from the request (a copy of the name, a parsed default).
  const pb::ColumnSchemaPB& pb = request.projected_columns(i);
  if (const int idx = schema.find_column(pb.name()); idx >= 0 && IsValidDataType(pb.type())) {
    const ColumnSchema& actual = schema.column(idx);
    const TypeAttributes attrs{pb.type_attributes().precision(), pb.type_attributes().scale(),
                               pb.type_attributes().length()};
    if (actual.SameType(static_cast<DataType>(pb.type()), attrs) &&
        actual.is_nullable() == pb.is_nullable()) {
      return actual.name();
    }
  }
  // Otherwise the same checks on a ColumnSchema, which say what is wrong.
  auto field = [i] { return StrCat("projected_columns[", i, "]"); };
  absl::StatusOr<ColumnSchema> col = Schema::ColumnFromPB(request.projected_columns(i));
  if (!col.ok()) return FieldError(field(), col.status());
  const int idx = schema.find_column(col->name());
  if (idx < 0) {
    return absl::InvalidArgumentError(ToAbsl(StrCat(field(), ": no column named ", col->name())));
  }
  const ColumnSchema& actual = schema.column(idx);
  if (!actual.SameType(*col) || actual.is_nullable() != col->is_nullable()) {
    return absl::InvalidArgumentError(
        ToAbsl(StrCat(field(), ": column ", col->name(), " is ", actual.ToString(),
                      ", the request says ", col->ToString())));
  }
  return col->name();
}

absl::Status Scanner::BuildProjection(const Schema& schema, const pb::NewScanRequestPB& request) {
  std::vector<std::string> requested;
  for (int i = 0; i < request.projected_columns_size(); ++i) {
    BASALT_ASSIGN_OR_RETURN(std::string name, CheckProjectedColumn(schema, request, i));
    if (std::find(requested.begin(), requested.end(), name) != requested.end()) {
      return absl::InvalidArgumentError(
          ToAbsl(StrCat("projected_columns[", i, "]: ", name, " repeated")));
    }
    requested.push_back(std::move(name));
  }
  // Ordered scans need the key of the last row; a projection without columns reads the key.
  std::vector<std::string> names;
  if (ordered_ || requested.empty()) {
    for (int k = 0; k < schema.num_key_columns(); ++k) names.push_back(schema.column(k).name());
    num_key_columns_ = schema.num_key_columns();
  }
  for (const std::string& n : requested) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  BASALT_ASSIGN_OR_RETURN(projection_, schema.Project(names));
  for (const std::string& n : requested) {
    const int idx = projection_.find_column(n);
    out_inputs_.push_back(idx);
    out_types_.push_back(projection_.column(idx).type());
  }
  return absl::OkStatus();
}

absl::Status Scanner::BuildAggregateProjection(const Schema& schema,
                                               const pb::NewScanRequestPB& request) {
  if (request.aggregates_size() == 0) {
    return absl::InvalidArgumentError("group_by: GROUP BY needs an aggregate");
  }
  if (request.limit() != 0) {
    return absl::InvalidArgumentError("limit: an aggregate scan takes no row limit");
  }
  BASALT_ASSIGN_OR_RETURN(AggregatePlan plan, AggregatePlan::FromPB(schema, request));
  plan_ = std::make_unique<AggregatePlan>(std::move(plan));
  // The input columns as the client saw them: a column dropped and re-added with another type
  // since the client opened the table must not be aggregated as the old one.
  const std::vector<std::string>& inputs = plan_->input_columns();
  if (request.projected_columns_size() != static_cast<int>(inputs.size())) {
    return absl::InvalidArgumentError(
        StrCat("projected_columns: an aggregate scan lists its ", inputs.size(),
               " input column(s) (group and aggregated columns, each once), got ",
               request.projected_columns_size()));
  }
  for (int i = 0; i < request.projected_columns_size(); ++i) {
    BASALT_ASSIGN_OR_RETURN(std::string name, CheckProjectedColumn(schema, request, i));
    if (name != inputs[i]) {
      return absl::InvalidArgumentError(
          StrCat("projected_columns[", i, "]: expected input column ", inputs[i], ", got ", name));
    }
  }
  std::vector<std::string> names;
  // Ordered scans and FIRST/LAST need each row's key; a scan reading nothing else reads the key.
  if (ordered_ || plan_->needs_key() || plan_->input_columns().empty()) {
    for (int k = 0; k < schema.num_key_columns(); ++k) names.push_back(schema.column(k).name());
    num_key_columns_ = schema.num_key_columns();
  }
  for (const std::string& n : plan_->input_columns()) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  BASALT_ASSIGN_OR_RETURN(projection_, schema.Project(names));
  for (const std::string& n : plan_->input_columns()) {
    agg_inputs_.push_back(projection_.find_column(n));
  }
  aggregator_ = std::make_unique<GroupAggregator>(plan_.get());
  return absl::OkStatus();
}

absl::Status Scanner::Init(std::shared_ptr<TabletReplica> replica,
                           const pb::NewScanRequestPB& request, absl::Time deadline) {
  replica_ = std::move(replica);
  ordered_ = request.ordered();
  limit_ = request.limit();
  BASALT_RETURN_IF_ERROR(replica_->CheckRunning());
  const std::shared_ptr<const Schema> schema = replica_->schema();
  if (request.aggregates_size() > 0 || request.group_by_size() > 0) {
    BASALT_RETURN_IF_ERROR(BuildAggregateProjection(*schema, request));
  } else {
    BASALT_RETURN_IF_ERROR(BuildProjection(*schema, request));
  }
  ScanSpec spec;
  for (int i = 0; i < request.predicates_size(); ++i) {
    absl::StatusOr<ColumnPredicate> p = ColumnPredicate::FromPB(*schema, request.predicates(i));
    if (!p.ok()) return FieldError(StrCat("predicates[", i, "]"), p.status());
    spec.predicates.push_back(std::move(*p));
  }
  spec.range.lower = request.start_primary_key();
  spec.range.upper = request.stop_primary_key();
  if (!request.last_primary_key().empty()) {
    spec.range.lower = std::max(spec.range.lower, KeySuccessor(request.last_primary_key()));
    last_key_ = request.last_primary_key();
  }
  BASALT_ASSIGN_OR_RETURN(std::optional<HybridTime> ts, ReadTimestamp(*replica_, request));
  BASALT_ASSIGN_OR_RETURN(MvccSnapshot snap, replica_->SnapshotForRead(&ts, deadline));
  if (ts.has_value()) snap_ts_ = *ts;
  BASALT_ASSIGN_OR_RETURN(iter_,
                          replica_->tablet()->NewIterator(projection_, snap, spec, ordered_));
  // Snapshots older than the ancient history mark are refused (docs/tablet.md "History GC").
  if (request.read_mode() == pb::READ_AT_SNAPSHOT) {
    BASALT_RETURN_IF_ERROR(replica_->tablet()->CheckSnapshotNotTooOld(snap_ts_));
  }
  BASALT_RETURN_IF_ERROR(iter_->Init());
  row_width_ = 1;
  for (int i = 0; i < projection_.num_columns(); ++i) {
    row_width_ += projection_.column(i).type_info().size();
  }
  // Buffers for the rows a batch can hold: a point lookup's or a small LIMIT's need no full-size
  // ones (each is a zeroed allocation per column per scan).
  uint64_t max_rows = kMaxBlockRows;
  if (PinsWholeKey(*schema, spec.predicates)) max_rows = 1;
  if (limit_ > 0) max_rows = std::min(max_rows, limit_);
  capacity_ = std::clamp<size_t>(std::min<uint64_t>(kMaxBlockBytes / row_width_, max_rows),
                                 kMinBlockRows, kMaxBlockRows);
  for (int i = 0; i < projection_.num_columns(); ++i) {
    const ColumnSchema& c = projection_.column(i);
    buffers_.push_back(std::make_unique<ColumnBlockBuffer>(c.type(), capacity_, c.is_nullable()));
    blocks_.push_back(buffers_.back()->block());
  }
  Touch();
  return absl::OkStatus();
}

void Scanner::EncodeRowKey(size_t row, std::string* out) const {
  out->clear();
  for (int k = 0; k < num_key_columns_; ++k) {
    EncodeKeyCell(projection_.column(k).type(), blocks_[k]->cell(row), k == num_key_columns_ - 1,
                  out);
  }
}

void Scanner::RememberLastKey(size_t row) { EncodeRowKey(row, &last_key_); }

absl::Status Scanner::NextAggregateBatch(size_t batch_bytes, pb::ScanResponsePB* response) {
  const int64_t start = Clock::Default()->MonotonicMicros();
  const int64_t budget = int64_t{FLAGS_scanner_aggregate_call_ms} * 1000;
  std::vector<const ColumnBlock*> inputs;
  for (int idx : agg_inputs_) inputs.push_back(blocks_[idx]);
  auto out_of_time = [&] { return Clock::Default()->MonotonicMicros() - start >= budget; };
  while (iter_->HasNext()) {
    BASALT_ASSIGN_OR_RETURN(size_t n, iter_->NextBlock(blocks_, capacity_));
    if (n == 0) {
      // Blocks whose rows were all filtered out count against the budget too.
      if (out_of_time()) break;
      continue;
    }
    const std::string_view* keys = nullptr;
    if (plan_->needs_key()) {
      row_keys_.resize(std::max(row_keys_.size(), n));
      row_key_views_.resize(row_keys_.size());
      for (size_t r = 0; r < n; r++) {
        EncodeRowKey(r, &row_keys_[r]);
        row_key_views_[r] = row_keys_[r];
      }
      keys = row_key_views_.data();
    }
    BASALT_RETURN_IF_ERROR(aggregator_->AddRows(inputs, keys, n));
    if (ordered_) RememberLastKey(n - 1);
    if (out_of_time() || aggregator_->memory_bytes() >= batch_bytes) break;
  }
  BASALT_RETURN_IF_ERROR(aggregator_->EmitPartials(response->mutable_data()));
  has_more_ = iter_->HasNext();
  response->set_has_more_results(has_more_);
  if (snap_ts_.is_valid()) response->set_snap_timestamp(snap_ts_.value());
  if (ordered_) response->set_last_primary_key(last_key_);
  return absl::OkStatus();
}

absl::Status Scanner::NextBatch(size_t batch_bytes, pb::ScanResponsePB* response) {
  if (aggregator_ != nullptr) return NextAggregateBatch(batch_bytes, response);
  ColumnarBlockBuilder builder(out_types_, out_inputs_);
  bool limit_reached = limit_ > 0 && rows_returned_ >= limit_;
  while (!limit_reached && iter_->HasNext() && builder.bytes() < batch_bytes) {
    size_t max_rows =
        std::clamp<size_t>((batch_bytes - builder.bytes()) / row_width_, 1, capacity_);
    if (limit_ > 0) max_rows = std::min<uint64_t>(max_rows, limit_ - rows_returned_);
    BASALT_ASSIGN_OR_RETURN(size_t n, iter_->NextBlock(blocks_, max_rows));
    if (n == 0) continue;
    n = std::min(n, max_rows);
    builder.Append(blocks_, n);
    if (ordered_) RememberLastKey(n - 1);
    rows_returned_ += n;
    limit_reached = limit_ > 0 && rows_returned_ >= limit_;
  }
  builder.Finish(response->mutable_data());
  has_more_ = !limit_reached && iter_->HasNext();
  response->set_has_more_results(has_more_);
  if (snap_ts_.is_valid()) response->set_snap_timestamp(snap_ts_.value());
  if (ordered_) response->set_last_primary_key(last_key_);
  return absl::OkStatus();
}

absl::Status Scanner::Continue(uint32_t call_seq_id, size_t batch_bytes,
                               pb::ScanResponsePB* response) {
  Touch();
  if (call_seq_id + 1 == next_call_seq_ && last_response_ != nullptr) {
    *response = *last_response_;  // A retried call: the same batch again.
    return absl::OkStatus();
  }
  if (call_seq_id != next_call_seq_) {
    return absl::InvalidArgumentError(
        ToAbsl(StrCat("call_seq_id: expected ", next_call_seq_, " (or ", next_call_seq_ - 1,
                      " to repeat the last call), got ", call_seq_id)));
  }
  BASALT_RETURN_IF_ERROR(NextBatch(batch_bytes, response));
  ++next_call_seq_;
  if (last_response_ == nullptr) last_response_ = std::make_unique<pb::ScanResponsePB>();
  *last_response_ = *response;
  return absl::OkStatus();
}

}  // namespace basalt
