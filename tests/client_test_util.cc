#include "tests/client_test_util.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/tserver.pb.h"
#include "server/webserver.h"

namespace basalt::client_test {

using client::ClientBuilder;
using client::ScanBatch;
using client::Scanner;
using client::Session;
using client::Table;
using client::WriteOperation;

absl::StatusOr<int64_t> CounterValue(ExternalDaemon* d, const std::string& series) {
  absl::StatusOr<HttpResponse> r = HttpGet("127.0.0.1", d->info().http_port, "/metrics");
  if (!r.ok()) return r.status();
  for (absl::string_view line : absl::StrSplit(r->body, '\n')) {
    if (!absl::ConsumePrefix(&line, series + " ")) continue;
    double v = 0;
    if (!absl::SimpleAtod(line, &v)) return absl::DataLossError(std::string(line));
    return static_cast<int64_t>(v);
  }
  return 0;
}

Row Expected(int32_t key) {
  Row r;
  r.key = key;
  r.int_val = key * 2;
  if (key % 7 != 0) r.string_val = StrCat("v", key);
  return r;
}

std::string ToString(const Row& r) {
  return StrCat("(", r.key, ", ", r.int_val, ", ", r.string_val ? *r.string_val : "NULL", ")");
}

std::vector<Row> SortedByKey(std::vector<Row> rows) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.key < b.key; });
  return rows;
}

std::string Diff(const std::vector<Row>& got, const std::vector<Row>& want) {
  std::string out = StrCat("got ", got.size(), " rows, want ", want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (!(got[i] == want[i])) {
      StrAppend(&out, "; first difference at ", i, ": ", ToString(got[i]), " vs ",
                ToString(want[i]));
      break;
    }
  }
  return out;
}

absl::Status ApplyOp(Session* session, Table* table, WriteOperation::Type type, const Row& row) {
  std::unique_ptr<WriteOperation> op;
  switch (type) {
    case WriteOperation::INSERT:
      op = table->NewInsert();
      break;
    case WriteOperation::UPDATE:
      op = table->NewUpdate();
      break;
    case WriteOperation::DELETE:
      op = table->NewDelete();
      break;
    case WriteOperation::UPSERT:
      op = table->NewUpsert();
      break;
    case WriteOperation::INSERT_IGNORE:
      op = table->NewInsertIgnore();
      break;
    case WriteOperation::UPDATE_IGNORE:
      op = table->NewUpdateIgnore();
      break;
    case WriteOperation::DELETE_IGNORE:
      op = table->NewDeleteIgnore();
      break;
  }
  client::PartialRow* r = op->mutable_row();
  absl::Status s = r->SetInt32("key", row.key);
  if (s.ok() && type != WriteOperation::DELETE && type != WriteOperation::DELETE_IGNORE) {
    s = r->SetInt32("int_val", row.int_val);
    if (s.ok()) {
      s = row.string_val ? r->SetString("string_val", *row.string_val) : r->SetNull("string_val");
    }
  }
  if (!s.ok()) return s;
  return session->Apply(std::move(op));
}

absl::Status ScanRows(Table* table, const std::function<absl::Status(Scanner*)>& configure,
                      std::vector<Row>* rows, uint64_t* snapshot) {
  Scanner scanner(table);
  if (configure) {
    absl::Status s = configure(&scanner);
    if (!s.ok()) return s;
  }
  absl::Status s = scanner.Open();
  if (!s.ok()) return s;
  ScanBatch batch;
  while (scanner.HasMoreRows()) {
    s = scanner.NextBatch(&batch);
    if (!s.ok()) return s;
    const int n_cols = batch.projection_schema().num_columns();
    int key_idx = batch.projection_schema().FindColumn("key");
    int val_idx = batch.projection_schema().FindColumn("int_val");
    int str_idx = batch.projection_schema().FindColumn("string_val");
    if (n_cols == 0) {
      rows->resize(rows->size() + batch.NumRows());
      continue;
    }
    for (int64_t i = 0; i < batch.NumRows(); ++i) {
      Row r;
      if (key_idx >= 0) r.key = static_cast<const int32_t*>(batch.Column(key_idx).data)[i];
      if (val_idx >= 0) r.int_val = static_cast<const int32_t*>(batch.Column(val_idx).data)[i];
      if (str_idx >= 0) {
        ScanBatch::ColumnView str = batch.Column(str_idx);
        if (!str.IsNull(i)) r.string_val = std::string(str.GetString(i));
      }
      rows->push_back(std::move(r));
    }
  }
  if (snapshot != nullptr) *snapshot = scanner.GetSnapshotRaw();
  return absl::OkStatus();
}

void ClientClusterTestBase::SetUp() {
  start_ = absl::Now();
  cluster_ = std::make_unique<ExternalMiniCluster>(ClusterOptions());
  ASSERT_OK(cluster_->Start());
  ASSERT_OK(ClientBuilder()
                .add_master_server_addr(cluster_->master_addresses())
                .default_rpc_timeout(std::chrono::seconds(60))
                .default_admin_operation_timeout(std::chrono::seconds(60))
                .Build(&client_));
}

ExternalMiniClusterOptions ClientClusterTestBase::ClusterOptions() const {
  ExternalMiniClusterOptions o;
  o.extra_tserver_flags = {"--raft_heartbeat_interval_ms=200"};
  return o;
}

void ClientClusterTestBase::TearDown() {
  client_.reset();
  if (cluster_ != nullptr) {
    absl::Status died = cluster_->CheckNoDaemonDied();
    BASALT_EXPECT_OK(died);
    if (HasFailure()) cluster_->set_keep_root_dir(true);
    cluster_.reset();
  }
  LOG(INFO) << ::testing::UnitTest::GetInstance()->current_test_info()->name() << " took "
            << absl::FormatDuration(absl::Now() - start_);
}

void ClientClusterTestBase::CreateTable(const std::string& name, int hash_buckets,
                                        const std::vector<int32_t>& splits,
                                        std::shared_ptr<Table>* table) {
  client::SchemaBuilder b;
  b.AddColumn("key")->Type(client::ColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("int_val")->Type(client::ColumnSchema::INT32)->NotNull();
  b.AddColumn("string_val")->Type(client::ColumnSchema::STRING)->Nullable();
  client::Schema schema;
  ASSERT_OK(b.Build(&schema));
  auto creator = client_->NewTableCreator();
  creator->table_name(name).schema(&schema).num_replicas(3);
  if (hash_buckets > 0) creator->add_hash_partitions({"key"}, hash_buckets);
  for (int32_t split : splits) {
    auto row = schema.NewRow();
    ASSERT_OK(row->SetInt32("key", split));
    creator->add_range_partition_split(std::move(row));
  }
  ASSERT_OK(creator->Create());
  ASSERT_OK(client_->OpenTable(name, table));
}

std::vector<std::string> ClientClusterTestBase::TabletIds(const std::string& name) {
  std::set<std::string> ids;
  for (int i = 0; i < cluster_->num_tablet_servers(); ++i) {
    if (!cluster_->tablet_server(i)->IsRunning()) continue;
    pb::ListTabletsResponsePB listing;
    absl::Status s = cluster_->ListTablets(i, &listing);
    BASALT_EXPECT_OK(s);
    for (const auto& t : listing.tablets()) {
      if (t.table_name() == name && t.state() != pb::TABLET_DELETED) ids.insert(t.tablet_id());
    }
  }
  return {ids.begin(), ids.end()};
}

}  // namespace basalt::client_test
