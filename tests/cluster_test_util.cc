#include "tests/cluster_test_util.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "absl/time/clock.h"
#include "common/partial_row.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/common.pb.h"
#include "rpc/rpc_status.h"
#include "testing/wait.h"

namespace basalt::cluster_test {
namespace {

bool IsRetriable(const absl::Status& s) {
  return absl::IsUnavailable(s) || ErrorDetailCode(s) == pb::ErrorDetailPB::TABLET_NOT_FOUND;
}

// Reads a little-endian uint32 / int32 at byte `pos` of `data`.
uint32_t LoadU32(const std::string& data, size_t pos) {
  uint32_t v;
  std::memcpy(&v, data.data() + pos, sizeof(v));
  return v;
}

bool IsNullAt(const std::string& bitmap, int64_t row) {
  if (bitmap.empty()) return false;
  return (static_cast<uint8_t>(bitmap[row / 8]) >> (row % 8)) & 1;
}

absl::Status CheckFixed(const pb::ColumnarRowBlockPB::ColumnPB& col, int64_t n, const char* name) {
  if (col.data().size() != static_cast<size_t>(n) * 4) {
    return absl::DataLossError(
        StrCat(name, ": ", col.data().size(), " data bytes for ", n, " INT32 rows"));
  }
  if (!col.null_bitmap().empty() && col.null_bitmap().size() < static_cast<size_t>((n + 7) / 8)) {
    return absl::DataLossError(StrCat(name, ": null bitmap too short"));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (IsNullAt(col.null_bitmap(), i)) {
      return absl::DataLossError(StrCat(name, ": NULL in a NOT NULL column at row ", i));
    }
  }
  return absl::OkStatus();
}

}  // namespace

TestRow MakeRow(int32_t key, int version) {
  TestRow row;
  row.key = key;
  row.int_val = 2 * key + version;
  if (key % 3 != 0) row.string_val = StrCat("row-", key, "-", version);
  return row;
}

std::vector<TestRow> MakeRows(int32_t first_key, int count, int version) {
  std::vector<TestRow> rows;
  rows.reserve(count);
  for (int i = 0; i < count; ++i) rows.push_back(MakeRow(first_key + i, version));
  return rows;
}

std::string RowToString(const TestRow& row) {
  return StrCat("(", row.key, ", ", row.int_val, ", ",
                row.string_val ? "\"" + *row.string_val + "\"" : "NULL", ")");
}

Schema TestSchema() {
  auto schema = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("int_val", DataType::kInt32),
       ColumnSchema("string_val", DataType::kString, true)},
      1);
  CHECK(schema.ok()) << schema.status();
  return *std::move(schema);
}

void BuildCreateTableRequest(const TestTableSpec& spec, pb::CreateTableRequestPB* req) {
  Schema schema = TestSchema();
  req->set_name(spec.name);
  schema.ToPB(req->mutable_schema());
  pb::PartitionSchemaPB* ps = req->mutable_partition_schema();
  if (spec.hash_buckets > 0) {
    auto* hash = ps->add_hash_schema();
    hash->add_columns()->set_name("key");
    hash->set_num_buckets(spec.hash_buckets);
  }
  ps->mutable_range_schema()->add_columns()->set_name("key");
  RowOperationsEncoder enc(req->mutable_split_rows_range_bounds());
  for (int32_t k : spec.split_keys) {
    PartialRow row(&schema);
    CHECK(row.SetInt32("key", k).ok());
    enc.Add(RowOperationType::kSplitRow, row);
  }
  req->set_num_replicas(spec.num_replicas);
}

void SetDeadline(grpc::ClientContext* ctx, absl::Duration timeout) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
}

int ErrorDetailCode(const absl::Status& s) {
  auto detail = GetErrorDetail(s);
  return detail ? static_cast<int>(detail->code()) : -1;
}

absl::StatusOr<std::unique_ptr<TestTable>> TestTable::Create(ExternalMiniCluster* cluster,
                                                             const TestTableSpec& spec,
                                                             absl::Duration timeout) {
  auto table = std::unique_ptr<TestTable>(new TestTable(cluster));
  auto stub = pb::MasterService::NewStub(cluster->master_channel());
  pb::CreateTableRequestPB req;
  BuildCreateTableRequest(spec, &req);
  pb::CreateTableResponsePB resp;
  {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    BASALT_RETURN_IF_ERROR_PREPEND(FromGrpcStatus(stub->CreateTable(&ctx, req, &resp)),
                                   "CreateTable");
  }
  table->id_ = resp.table_id();
  table->name_ = spec.name;
  BASALT_RETURN_IF_ERROR(WaitFor(timeout, StrCat("table ", spec.name, " to be created"), [&] {
    pb::IsCreateTableDoneRequestPB done_req;
    done_req.mutable_table()->set_table_id(table->id_);
    pb::IsCreateTableDoneResponsePB done_resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    BASALT_RETURN_IF_ERROR(FromGrpcStatus(stub->IsCreateTableDone(&ctx, done_req, &done_resp)));
    return done_resp.done() ? absl::OkStatus() : absl::UnavailableError("not done");
  }));
  BASALT_RETURN_IF_ERROR(table->LoadSchema());
  BASALT_RETURN_IF_ERROR(table->LoadLocations().status());
  return table;
}

absl::Status TestTable::LoadSchema() {
  auto stub = pb::MasterService::NewStub(cluster_->master_channel());
  pb::GetTableSchemaRequestPB req;
  req.mutable_table()->set_table_id(id_);
  pb::GetTableSchemaResponsePB resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  BASALT_RETURN_IF_ERROR_PREPEND(FromGrpcStatus(stub->GetTableSchema(&ctx, req, &resp)),
                                 "GetTableSchema");
  BASALT_ASSIGN_OR_RETURN(schema_, Schema::FromPB(resp.schema()));
  BASALT_ASSIGN_OR_RETURN(partition_schema_,
                          PartitionSchema::FromPB(resp.partition_schema(), schema_));
  return absl::OkStatus();
}

absl::StatusOr<pb::GetTableLocationsResponsePB> TestTable::LoadLocations() {
  auto stub = pb::MasterService::NewStub(cluster_->master_channel());
  pb::GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_id(id_);
  req.set_max_returned_locations(1000);
  pb::GetTableLocationsResponsePB resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  BASALT_RETURN_IF_ERROR_PREPEND(FromGrpcStatus(stub->GetTableLocations(&ctx, req, &resp)),
                                 "GetTableLocations");
  tablets_.clear();
  for (const auto& loc : resp.tablet_locations()) {
    TabletInfo info;
    info.tablet_id = loc.tablet_id();
    BASALT_ASSIGN_OR_RETURN(info.partition, Partition::FromPB(loc.partition()));
    for (const auto& r : loc.replicas()) info.replica_uuids.push_back(r.ts_uuid());
    tablets_.push_back(std::move(info));
  }
  leaders_.assign(tablets_.size(), -1);
  return resp;
}

int TestTable::TabletIndexForKey(int32_t key) const {
  PartialRow row(&schema_);
  CHECK(row.SetInt32("key", key).ok());
  std::string pk = partition_schema_.PartitionKey(row);
  for (size_t i = 0; i < tablets_.size(); ++i) {
    if (tablets_[i].partition.Contains(pk)) return static_cast<int>(i);
  }
  LOG(FATAL) << "no tablet holds key " << key;
}

void TestTable::BuildWrite(int tablet_idx, RowOperationType type, const std::vector<TestRow>& rows,
                           pb::WriteRequestPB* req) const {
  req->set_tablet_id(tablets_[tablet_idx].tablet_id);
  schema_.ToPB(req->mutable_schema());
  RowOperationsEncoder enc(req->mutable_row_operations());
  for (const TestRow& r : rows) {
    PartialRow row(&schema_);
    CHECK(row.SetInt32("key", r.key).ok());
    if (!RowOperationIsDeleteLike(type)) {
      CHECK(row.SetInt32("int_val", r.int_val).ok());
      CHECK((r.string_val ? row.SetString("string_val", *r.string_val) : row.SetNull("string_val"))
                .ok());
    }
    enc.Add(type, row);
  }
}

absl::StatusOr<int> TestTable::LeaderOf(int tablet_idx, absl::Duration timeout) {
  if (leaders_[tablet_idx] >= 0) return leaders_[tablet_idx];
  BASALT_ASSIGN_OR_RETURN(TabletLeader leader,
                          cluster_->WaitForTabletLeader(tablets_[tablet_idx].tablet_id, timeout));
  leaders_[tablet_idx] = leader.ts_index;
  return leader.ts_index;
}

absl::Status TestTable::WriteToLeader(int tablet_idx, const pb::WriteRequestPB& req,
                                      pb::WriteResponsePB* resp, absl::Duration timeout) {
  BASALT_ASSIGN_OR_RETURN(int ts, LeaderOf(tablet_idx, timeout));
  auto stub = pb::TabletServerService::NewStub(cluster_->tserver_channel(ts));
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  resp->Clear();
  absl::Status s = FromGrpcStatus(stub->Write(&ctx, req, resp));
  if (!s.ok()) {
    ForgetLeader(tablet_idx);
    auto detail = GetErrorDetail(s);
    if (detail && detail->code() == pb::ErrorDetailPB::NOT_THE_LEADER) {
      int hinted = cluster_->TabletServerIndexByUuid(detail->leader_uuid());
      if (hinted >= 0) leaders_[tablet_idx] = hinted;
    }
  }
  return s;
}

absl::Status TestTable::Write(RowOperationType type, const std::vector<TestRow>& rows,
                              absl::Duration timeout, std::vector<RowError>* row_errors) {
  const absl::Time deadline = absl::Now() + timeout;
  std::map<int, std::vector<int>> by_tablet;  // tablet index → indexes into rows
  for (size_t i = 0; i < rows.size(); ++i) {
    by_tablet[TabletIndexForKey(rows[i].key)].push_back(static_cast<int>(i));
  }
  std::vector<RowError> errors;
  for (const auto& [tablet_idx, indexes] : by_tablet) {
    std::vector<TestRow> group;
    for (int i : indexes) group.push_back(rows[i]);
    pb::WriteRequestPB req;
    BuildWrite(tablet_idx, type, group, &req);
    pb::WriteResponsePB resp;
    absl::Status s;
    while (true) {
      s = WriteToLeader(tablet_idx, req, &resp,
                        std::max(deadline - absl::Now(), absl::ZeroDuration()));
      if (s.ok() || !IsRetriable(s) || absl::Now() >= deadline) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    BASALT_RETURN_IF_ERROR_PREPEND(s, StrCat("write to tablet ", tablets_[tablet_idx].tablet_id));
    for (const auto& e : resp.per_row_errors()) {
      if (e.row_index() < 0 || e.row_index() >= static_cast<int>(indexes.size())) {
        return absl::DataLossError(
            StrCat("per-row error for row ", e.row_index(), " of ", indexes.size()));
      }
      errors.emplace_back(indexes[e.row_index()], StatusFromPB(e.error()));
    }
  }
  std::sort(errors.begin(), errors.end(),
            [](const RowError& a, const RowError& b) { return a.first < b.first; });
  if (row_errors != nullptr) {
    *row_errors = std::move(errors);
  } else if (!errors.empty()) {
    return absl::InternalError(StrCat(errors.size(), " rows failed; first: row ", errors[0].first,
                                      ": ", errors[0].second.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TestRow>> TestTable::ScanTablet(int tablet_idx, int ts_idx,
                                                           pb::ReadModePB mode,
                                                           uint32_t batch_size_bytes) {
  auto stub = pb::TabletServerService::NewStub(cluster_->tserver_channel(ts_idx));
  pb::ScanRequestPB req;
  pb::NewScanRequestPB* scan = req.mutable_new_scan_request();
  scan->set_tablet_id(tablets_[tablet_idx].tablet_id);
  for (int i = 0; i < schema_.num_columns(); ++i) {
    Schema::ColumnToPB(schema_.column(i), schema_.column_id(i), schema_.is_key_column(i),
                       scan->add_projected_columns());
  }
  scan->set_read_mode(mode);
  scan->set_ordered(true);
  req.set_batch_size_bytes(batch_size_bytes);
  std::vector<TestRow> rows;
  for (uint32_t seq = 0;; ++seq) {
    pb::ScanResponsePB resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    BASALT_RETURN_IF_ERROR(FromGrpcStatus(stub->Scan(&ctx, req, &resp)));
    BASALT_RETURN_IF_ERROR(DecodeTestRows(resp.data(), &rows));
    if (!resp.has_more_results()) break;
    req.Clear();
    req.set_scanner_id(resp.scanner_id());
    req.set_call_seq_id(seq);
    req.set_batch_size_bytes(batch_size_bytes);
  }
  return rows;
}

absl::StatusOr<std::vector<TestRow>> TestTable::ScanAll(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<TestRow> all;
  for (size_t t = 0; t < tablets_.size(); ++t) {
    while (true) {
      auto ts =
          LeaderOf(static_cast<int>(t), std::max(deadline - absl::Now(), absl::ZeroDuration()));
      BASALT_RETURN_IF_ERROR(ts.status());
      auto rows = ScanTablet(static_cast<int>(t), *ts);
      if (rows.ok()) {
        all.insert(all.end(), rows->begin(), rows->end());
        break;
      }
      ForgetLeader(static_cast<int>(t));
      if (!IsRetriable(rows.status()) || absl::Now() >= deadline) return rows.status();
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  std::sort(all.begin(), all.end(),
            [](const TestRow& a, const TestRow& b) { return a.key < b.key; });
  return all;
}

absl::StatusOr<pb::ChecksumResponsePB> ChecksumReplica(ExternalMiniCluster* cluster, int ts_idx,
                                                       const std::string& tablet_id,
                                                       uint64_t snap_timestamp) {
  auto stub = pb::TabletServerService::NewStub(cluster->tserver_channel(ts_idx));
  pb::ChecksumRequestPB req;
  req.set_tablet_id(tablet_id);
  req.set_snap_timestamp(snap_timestamp);
  pb::ChecksumResponsePB resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  BASALT_RETURN_IF_ERROR(FromGrpcStatus(stub->Checksum(&ctx, req, &resp)));
  return resp;
}

absl::Status DecodeTestRows(const pb::ColumnarRowBlockPB& block, std::vector<TestRow>* rows) {
  const int64_t n = block.num_rows();
  if (n == 0 && block.columns_size() == 0) return absl::OkStatus();
  if (block.columns_size() != 3 || n < 0) {
    return absl::DataLossError(
        StrCat("expected 3 columns, got ", block.columns_size(), " for ", n, " rows"));
  }
  const auto& key = block.columns(0);
  const auto& val = block.columns(1);
  const auto& str = block.columns(2);
  BASALT_RETURN_IF_ERROR(CheckFixed(key, n, "key"));
  BASALT_RETURN_IF_ERROR(CheckFixed(val, n, "int_val"));
  if (str.offsets().size() != static_cast<size_t>(n + 1) * 4) {
    return absl::DataLossError(
        StrCat("string_val: ", str.offsets().size(), " offset bytes for ", n, " rows"));
  }
  if (!str.null_bitmap().empty() && str.null_bitmap().size() < static_cast<size_t>((n + 7) / 8)) {
    return absl::DataLossError("string_val: null bitmap too short");
  }
  for (int64_t i = 0; i < n; ++i) {
    TestRow row;
    row.key = static_cast<int32_t>(LoadU32(key.data(), i * 4));
    row.int_val = static_cast<int32_t>(LoadU32(val.data(), i * 4));
    uint32_t begin = LoadU32(str.offsets(), i * 4);
    uint32_t end = LoadU32(str.offsets(), (i + 1) * 4);
    if (begin > end || end > str.data().size()) {
      return absl::DataLossError(StrCat("string_val: bad offsets at row ", i));
    }
    if (!IsNullAt(str.null_bitmap(), i)) row.string_val = str.data().substr(begin, end - begin);
    rows->push_back(std::move(row));
  }
  return absl::OkStatus();
}

}  // namespace basalt::cluster_test
