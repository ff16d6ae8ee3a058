#include "master/catalog_manager.h"

#include <map>
#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "consensus/in_memory_transport.h"
#include "master/master_test_util.h"
#include "proto/master.pb.h"
#include "rpc/rpc_status.h"

namespace basalt {
namespace {
namespace catalog_manager_test_file {

using master_test::AddReport;
using master_test::CreateTableRequest;
using master_test::FakeTsAdminClient;
using master_test::Heartbeat;
using master_test::RangeBoundsOps;
using master_test::TestSchema;

constexpr int kNumServers = 3;

class CatalogManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    seed_ = SeedFromEnvOrTime();
    ts_ = std::make_unique<TsManager>(&clock_, /*unresponsive_timeout_ms=*/600000);
    ASSERT_NO_FATAL_FAILURE(OpenCatalog());
    for (int i = 0; i < kNumServers; ++i) BASALT_ASSERT_OK(SendHeartbeat(Heartbeat(i)));
  }

  void TearDown() override { CloseCatalog(); }

  void OpenCatalog() {
    CatalogManagerOptions o;
    o.clock = &clock_;
    o.placement_seed = seed_;
    cm_ = std::make_unique<CatalogManager>(ts_.get(), &admin_, o);
    SysCatalogOptions so;
    so.data_dir = tmp_.path();
    so.wal_dir = tmp_.path();
    so.uuid = "master";
    so.tick_interval_ms = 10;
    auto c = SysCatalog::Open(Env::Default(), so, &transport_, cm_.get());
    BASALT_ASSERT_OK(c);
    catalog_ = *std::move(c);
    cm_->set_sys_catalog(catalog_.get());
    BASALT_ASSERT_OK(catalog_->Start());
    BASALT_ASSERT_OK(catalog_->WaitUntilLeader(absl::Seconds(10)));
    cm_->SetReady(true);
  }

  void CloseCatalog() {
    if (cm_ != nullptr) cm_->Shutdown();
    if (catalog_ != nullptr) catalog_->Shutdown();
    catalog_.reset();
    cm_.reset();
  }

  absl::Status SendHeartbeat(const pb::TSHeartbeatRequestPB& hb,
                             pb::TSHeartbeatResponsePB* resp = nullptr) {
    pb::TSHeartbeatResponsePB r;
    return cm_->ProcessHeartbeat(hb, resp != nullptr ? resp : &r);
  }

  absl::StatusOr<std::string> Create(const pb::CreateTableRequestPB& req) {
    pb::CreateTableResponsePB resp;
    absl::Status s = cm_->CreateTable(req, &resp);
    if (!s.ok()) return s;
    return resp.table_id();
  }

  std::string CreateOk(const std::string& name, const std::vector<int32_t>& splits) {
    auto id = Create(CreateTableRequest(name, splits));
    BASALT_EXPECT_OK(id);
    return id.ok() ? *id : "";
  }

  // Full reports from every server: each replica running, the first peer of each config
  // leading, at the given schema version.
  void ReportAll(const std::string& table_id, uint32_t schema_version = 0) {
    for (int i = 0; i < kNumServers; ++i) {
      pb::TSHeartbeatRequestPB hb = Heartbeat(i);
      for (const auto& tablet : cm_->GetTablets(table_id)) {
        const auto& peers = tablet->pb.config().peers();
        for (int p = 0; p < peers.size(); ++p) {
          if (peers[p].uuid() == hb.ts_uuid()) {
            AddReport(&hb, tablet->id(), p == 0, schema_version);
          }
        }
      }
      BASALT_ASSERT_OK(SendHeartbeat(hb));
    }
  }

  bool CreateDone(const std::string& name) {
    pb::IsCreateTableDoneRequestPB req;
    req.mutable_table()->set_table_name(name);
    pb::IsCreateTableDoneResponsePB resp;
    BASALT_EXPECT_OK(cm_->IsCreateTableDone(req, &resp));
    return resp.done();
  }

  void AdvanceMs(int64_t ms) { clock_.AdvanceMicros(ms * 1000); }

  master_test::TempDir tmp_{"catalog_manager_test"};
  uint64_t seed_ = 0;
  ManualClock clock_;
  FakeTsAdminClient admin_;
  InMemoryTransport transport_;
  std::unique_ptr<TsManager> ts_;
  std::unique_ptr<CatalogManager> cm_;
  std::unique_ptr<SysCatalog> catalog_;
};

absl::StatusCode CodeOf(const absl::Status& s) { return s.code(); }

TEST_F(CatalogManagerTest, CreateTableValidation) {
  ASSERT_NE(CreateOk("t", {10}), "");
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  // Names.
  EXPECT_EQ(CodeOf(Create(CreateTableRequest("", {})).status()), kInvalid);
  EXPECT_EQ(CodeOf(Create(CreateTableRequest("a\x01", {})).status()), kInvalid);
  EXPECT_EQ(CodeOf(Create(CreateTableRequest(std::string(300, 'x'), {})).status()), kInvalid);
  EXPECT_EQ(CodeOf(Create(CreateTableRequest("\xff\xfe", {})).status()), kInvalid);
  EXPECT_EQ(CodeOf(Create(CreateTableRequest("t", {})).status()), absl::StatusCode::kAlreadyExists);
  // Schemas.
  auto req = CreateTableRequest("s", {});
  req.mutable_schema()->mutable_columns(0)->set_is_key(false);
  EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
  req = CreateTableRequest("s", {});
  req.mutable_schema()->mutable_columns(1)->set_is_key(true);
  auto s = Create(req).status();
  EXPECT_EQ(CodeOf(s), kInvalid);
  req = CreateTableRequest("s", {});
  req.mutable_schema()->mutable_columns(0)->set_is_nullable(true);
  EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
  req = CreateTableRequest("s", {});
  req.mutable_schema()->mutable_columns(2)->set_type(static_cast<pb::DataType>(99));
  EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
  req = CreateTableRequest("s", {});
  req.mutable_schema()->clear_columns();
  EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
  // Partitioning.
  req = CreateTableRequest("p", {});
  auto* hash = req.mutable_partition_schema()->add_hash_schema();
  hash->add_columns()->set_name("name");  // Not a key column.
  hash->set_num_buckets(4);
  s = Create(req).status();
  EXPECT_EQ(CodeOf(s), kInvalid);
  EXPECT_NE(s.message().find("partition_schema"), std::string_view::npos) << s;
  req = CreateTableRequest("p", {});
  req.mutable_partition_schema()->add_hash_schema()->add_columns()->set_name("nope");
  EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
  // Split rows and bounds.
  req = CreateTableRequest("r", {5, 5});
  EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
  req = CreateTableRequest("r", {});
  req.mutable_split_rows_range_bounds()->set_rows("\x08\xff\xff");
  s = Create(req).status();
  EXPECT_EQ(CodeOf(s), kInvalid);
  EXPECT_NE(s.message().find("split_rows_range_bounds"), std::string_view::npos) << s;
  {
    Schema schema = TestSchema();
    req = CreateTableRequest("r", {});
    RowOperationsEncoder enc(req.mutable_split_rows_range_bounds());
    PartialRow row(&schema);
    BASALT_ASSERT_OK(row.SetInt32("key", 1));
    enc.Add(RowOperationType::kInsert, row);
    EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
    req = CreateTableRequest("r", {});
    RowOperationsEncoder enc2(req.mutable_split_rows_range_bounds());
    enc2.Add(RowOperationType::kRangeLowerBound, row);  // No upper bound.
    EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
    req = CreateTableRequest("r", {50});
    *req.mutable_split_rows_range_bounds() = RangeBoundsOps(schema, 0, 10);  // Split outside.
    RowOperationsEncoder enc3(req.mutable_split_rows_range_bounds());
    PartialRow split(&schema);
    BASALT_ASSERT_OK(split.SetInt32("key", 50));
    enc3.Add(RowOperationType::kSplitRow, split);
    EXPECT_EQ(CodeOf(Create(req).status()), kInvalid);
  }
  // Replication factors (too few live servers is definite once the leadership is older than the
  // servers' unresponsive timeout: TooFewLiveServersIsRetriableWhileTheLeadershipIsYoung).
  AdvanceMs(600001);
  for (int i = 0; i < kNumServers; ++i) BASALT_ASSERT_OK(SendHeartbeat(Heartbeat(i)));
  s = Create(CreateTableRequest("n", {}, 5)).status();
  EXPECT_EQ(CodeOf(s), kInvalid);
  EXPECT_NE(s.message().find("live"), std::string_view::npos) << s;
  s = Create(CreateTableRequest("n", {}, 2)).status();
  EXPECT_EQ(CodeOf(s), kInvalid);
  EXPECT_NE(s.message().find("odd"), std::string_view::npos) << s;
  EXPECT_EQ(CodeOf(Create(CreateTableRequest("n", {}, -1)).status()), kInvalid);
  EXPECT_EQ(CodeOf(Create(CreateTableRequest("n", {}, 9)).status()), kInvalid);
  // Nothing of the failed requests exists; 0 replicas means the default (3).
  BASALT_ASSERT_OK(Create(CreateTableRequest("n", {}, 0)));
  pb::ListTablesResponsePB list;
  BASALT_ASSERT_OK(cm_->ListTables({}, &list));
  ASSERT_EQ(list.tables_size(), 2);
  EXPECT_EQ(list.tables(0).name(), "n");
  EXPECT_EQ(list.tables(0).num_replicas(), 3);
  EXPECT_EQ(list.tables(1).name(), "t");
  EXPECT_EQ(list.tables(1).num_tablets(), 2);
}

TEST_F(CatalogManagerTest, AssignsColumnIdsAndPlacesDistinctReplicas) {
  auto req = CreateTableRequest("t", {10, 20});
  for (auto& c : *req.mutable_schema()->mutable_columns()) c.set_id(77);  // Ignored.
  auto id = Create(req);
  BASALT_ASSERT_OK(id);
  auto table = cm_->GetTableByName("t");
  ASSERT_NE(table, nullptr);
  for (int i = 0; i < table->schema.num_columns(); ++i) EXPECT_EQ(table->schema.column_id(i), i);
  EXPECT_EQ(table->schema.next_column_id(), 3u);
  auto tablets = cm_->GetTablets(*id);
  ASSERT_EQ(tablets.size(), 3u);
  for (const auto& t : tablets) {
    std::set<std::string> uuids;
    for (const auto& p : t->pb.config().peers()) uuids.insert(p.uuid());
    EXPECT_EQ(uuids.size(), 3u);
  }
}

TEST_F(CatalogManagerTest, ReconcileSendsCreateTabletToEveryReplica) {
  const std::string id = CreateOk("t", {10, 20});
  cm_->ReconcileOnce();
  auto calls = admin_.calls("create");
  ASSERT_EQ(calls.size(), 9u);
  std::set<std::pair<std::string, std::string>> sent;
  for (const auto& c : calls) {
    sent.insert({c.tablet_id, c.dest_uuid});
    EXPECT_EQ(c.address, "127.0.0.1:" + std::to_string(10000 + (c.dest_uuid.back() - '0')));
    EXPECT_EQ(c.num_peers, 3);
    EXPECT_EQ(c.table_name, "t");
  }
  for (const auto& tablet : cm_->GetTablets(id)) {
    for (const auto& p : tablet->pb.config().peers()) {
      EXPECT_TRUE(sent.count({tablet->id(), p.uuid()})) << tablet->id() << " " << p.uuid();
    }
  }
  // Sent once; not again while the reports are awaited...
  cm_->ReconcileOnce();
  EXPECT_EQ(admin_.calls("create").size(), 9u);
  // ... but again if they never come.
  AdvanceMs(11000);
  cm_->ReconcileOnce();
  EXPECT_EQ(admin_.calls("create").size(), 18u);
  // Once reported, never again.
  ReportAll(id);
  AdvanceMs(11000);
  cm_->ReconcileOnce();
  EXPECT_EQ(admin_.calls("create").size(), 18u);
}

TEST_F(CatalogManagerTest, RetriesFailedRequestsWithBackoff) {
  admin_.set_fail_first(2);
  CreateOk("t", {});
  cm_->ReconcileOnce();
  EXPECT_EQ(admin_.attempts(), 3);
  EXPECT_EQ(admin_.calls().size(), 0u);
  cm_->ReconcileOnce();  // Backing off: nothing sent.
  EXPECT_EQ(admin_.attempts(), 3);
  AdvanceMs(100);
  cm_->ReconcileOnce();  // Second attempt fails; the next waits 200 ms.
  EXPECT_EQ(admin_.attempts(), 6);
  AdvanceMs(150);
  cm_->ReconcileOnce();
  EXPECT_EQ(admin_.attempts(), 6);
  AdvanceMs(50);
  cm_->ReconcileOnce();
  EXPECT_EQ(admin_.attempts(), 9);
  EXPECT_EQ(admin_.calls("create").size(), 3u);
}

TEST_F(CatalogManagerTest, HeartbeatsMakeCreateTableDone) {
  const std::string id = CreateOk("t", {10});
  EXPECT_FALSE(CreateDone("t"));
  // Followers only: not done.
  for (int i = 0; i < kNumServers; ++i) {
    pb::TSHeartbeatRequestPB hb = Heartbeat(i);
    for (const auto& tablet : cm_->GetTablets(id)) AddReport(&hb, tablet->id(), false);
    BASALT_ASSERT_OK(SendHeartbeat(hb));
  }
  EXPECT_FALSE(CreateDone("t"));
  ReportAll(id);
  EXPECT_TRUE(CreateDone("t"));
  cm_->ReconcileOnce();
  EXPECT_EQ(cm_->GetTableByName("t")->pb.state(), pb::SysTableEntryPB::RUNNING);
  for (const auto& tablet : cm_->GetTablets(id)) {
    EXPECT_EQ(tablet->pb.state(), pb::SysTabletEntryPB::RUNNING);
  }
  // The state is durable: after a restart (no reports yet) the table is still done.
  CloseCatalog();
  ASSERT_NO_FATAL_FAILURE(OpenCatalog());
  EXPECT_TRUE(CreateDone("t"));
  EXPECT_EQ(cm_->GetTablets(id).size(), 2u);
}

TEST_F(CatalogManagerTest, HeartbeatResponses) {
  pb::TSHeartbeatResponsePB resp;
  // An unknown server's incremental report: ask for a full one.
  BASALT_ASSERT_OK(SendHeartbeat(Heartbeat(7, /*incremental=*/true), &resp));
  EXPECT_TRUE(resp.needs_full_tablet_report());
  EXPECT_EQ(resp.tablet_servers_size(), kNumServers);
  resp.Clear();
  BASALT_ASSERT_OK(SendHeartbeat(Heartbeat(7), &resp));
  EXPECT_FALSE(resp.needs_full_tablet_report());
  resp.Clear();
  BASALT_ASSERT_OK(SendHeartbeat(Heartbeat(7, true), &resp));
  EXPECT_FALSE(resp.needs_full_tablet_report());
  // Malformed heartbeats.
  auto hb = Heartbeat(1);
  hb.clear_ts_uuid();
  EXPECT_EQ(CodeOf(SendHeartbeat(hb)), absl::StatusCode::kInvalidArgument);
  hb = Heartbeat(1);
  hb.mutable_rpc_address()->set_port(70000);
  EXPECT_EQ(CodeOf(SendHeartbeat(hb)), absl::StatusCode::kInvalidArgument);
  hb = Heartbeat(1);
  hb.mutable_frame_rpc_address()->set_host("127.0.0.1");  // No port.
  EXPECT_EQ(CodeOf(SendHeartbeat(hb)), absl::StatusCode::kInvalidArgument);
  hb.mutable_frame_rpc_address()->set_port(70000);
  EXPECT_EQ(CodeOf(SendHeartbeat(hb)), absl::StatusCode::kInvalidArgument);
  hb.mutable_frame_rpc_address()->clear_host();
  hb.mutable_frame_rpc_address()->set_port(7060);
  EXPECT_EQ(CodeOf(SendHeartbeat(hb)), absl::StatusCode::kInvalidArgument);
  hb = Heartbeat(1);
  hb.add_updated_tablets()->set_state(pb::TABLET_RUNNING);  // No tablet id.
  EXPECT_EQ(CodeOf(SendHeartbeat(hb)), absl::StatusCode::kInvalidArgument);
  hb = Heartbeat(1);
  AddReport(&hb, "x", true);
  hb.mutable_updated_tablets(0)->set_role(static_cast<pb::RaftRolePB>(42));
  EXPECT_EQ(CodeOf(SendHeartbeat(hb)), absl::StatusCode::kInvalidArgument);
}

TEST_F(CatalogManagerTest, DeleteTableSendsDeleteTablet) {
  const std::string id = CreateOk("t", {10});
  ReportAll(id);
  pb::DeleteTableRequestPB req;
  req.mutable_table()->set_table_name("t");
  pb::DeleteTableResponsePB resp;
  BASALT_ASSERT_OK(cm_->DeleteTable(req, &resp));
  pb::GetTableSchemaRequestPB sreq;
  sreq.mutable_table()->set_table_id(id);
  pb::GetTableSchemaResponsePB sresp;
  absl::Status s = cm_->GetTableSchema(sreq, &sresp);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  auto detail = GetErrorDetail(s);
  ASSERT_TRUE(detail.has_value());
  EXPECT_EQ(detail->code(), pb::ErrorDetailPB::TABLE_NOT_FOUND);
  EXPECT_EQ(cm_->DeleteTable(req, &resp).code(), absl::StatusCode::kNotFound);

  cm_->ReconcileOnce();
  auto calls = admin_.calls("delete");
  EXPECT_EQ(calls.size(), 6u);  // 2 tablets x 3 reported replicas.
  cm_->ReconcileOnce();
  EXPECT_EQ(admin_.calls("delete").size(), 6u);
  // The name is free again.
  EXPECT_NE(CreateOk("t", {}), id);
}

TEST_F(CatalogManagerTest, AlterTableSendsAlterSchemaToTheLeader) {
  const std::string id = CreateOk("t", {});
  ReportAll(id);
  cm_->ReconcileOnce();
  pb::AlterTableRequestPB req;
  req.mutable_table()->set_table_name("t");
  auto* add = req.add_steps()->mutable_add_column()->mutable_column();
  add->set_name("extra");
  add->set_type(pb::INT32);
  add->set_is_nullable(true);
  auto* ren = req.add_steps()->mutable_rename_column();
  ren->set_old_name("val");
  ren->set_new_name("value");
  req.add_steps()->mutable_drop_column()->set_name("name");
  pb::AlterTableResponsePB resp;
  BASALT_ASSERT_OK(cm_->AlterTable(req, &resp));
  EXPECT_EQ(resp.schema_version(), 1u);
  pb::IsAlterTableDoneRequestPB dreq;
  dreq.mutable_table()->set_table_id(id);
  pb::IsAlterTableDoneResponsePB dresp;
  BASALT_ASSERT_OK(cm_->IsAlterTableDone(dreq, &dresp));
  EXPECT_FALSE(dresp.done());

  cm_->ReconcileOnce();
  auto calls = admin_.calls("alter");
  ASSERT_EQ(calls.size(), 1u);
  const auto tablet = cm_->GetTablets(id)[0];
  EXPECT_EQ(calls[0].dest_uuid, tablet->pb.config().peers(0).uuid());  // The reported leader.
  EXPECT_EQ(calls[0].schema_version, 1u);
  BASALT_ASSERT_OK(cm_->IsAlterTableDone(dreq, &dresp));
  EXPECT_TRUE(dresp.done());
  cm_->ReconcileOnce();
  EXPECT_EQ(cm_->GetTableByName("t")->pb.state(), pb::SysTableEntryPB::RUNNING);

  pb::GetTableSchemaRequestPB sreq;
  sreq.mutable_table()->set_table_name("t");
  pb::GetTableSchemaResponsePB sresp;
  BASALT_ASSERT_OK(cm_->GetTableSchema(sreq, &sresp));
  ASSERT_EQ(sresp.schema().columns_size(), 3);
  EXPECT_EQ(sresp.schema().columns(1).name(), "value");
  EXPECT_EQ(sresp.schema().columns(2).name(), "extra");
  EXPECT_EQ(sresp.schema().columns(2).id(), 3u);
  EXPECT_EQ(sresp.schema().version(), 1u);

  // Renaming the table alone bumps the version and reaches the tablets too.
  pb::AlterTableRequestPB rename;
  rename.mutable_table()->set_table_id(id);
  rename.set_new_table_name("t2");
  BASALT_ASSERT_OK(cm_->AlterTable(rename, &resp));
  EXPECT_EQ(resp.schema_version(), 2u);
  EXPECT_EQ(cm_->GetTableByName("t"), nullptr);
  cm_->ReconcileOnce();
  calls = admin_.calls("alter");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].table_name, "t2");
}

TEST_F(CatalogManagerTest, AlterTableIsAllOrNothing) {
  CreateOk("t", {});
  CreateOk("other", {});
  auto alter = [&](const pb::AlterTableRequestPB& req) {
    pb::AlterTableResponsePB resp;
    return cm_->AlterTable(req, &resp);
  };
  pb::AlterTableRequestPB req;
  req.mutable_table()->set_table_name("t");
  EXPECT_EQ(alter(req).code(), absl::StatusCode::kInvalidArgument);  // Nothing to do.
  auto* add = req.add_steps()->mutable_add_column()->mutable_column();
  add->set_name("extra");
  add->set_type(pb::INT32);
  add->set_is_nullable(true);
  req.add_steps()->mutable_drop_column()->set_name("nope");
  EXPECT_FALSE(alter(req).ok());
  req.mutable_steps()->RemoveLast();
  req.add_steps()->mutable_drop_column()->set_name("key");  // A key column.
  EXPECT_FALSE(alter(req).ok());
  req.mutable_steps()->RemoveLast();
  req.add_steps();  // No step set.
  EXPECT_EQ(alter(req).code(), absl::StatusCode::kInvalidArgument);
  req.mutable_steps()->RemoveLast();
  req.set_new_table_name("other");
  EXPECT_EQ(alter(req).code(), absl::StatusCode::kAlreadyExists);
  auto table = cm_->GetTableByName("t");
  EXPECT_EQ(table->schema.num_columns(), 3);
  EXPECT_EQ(table->schema.version(), 0u);
  EXPECT_EQ(table->pb.state(), pb::SysTableEntryPB::CREATING);
  pb::AlterTableRequestPB unknown;
  unknown.mutable_table()->set_table_name("nope");
  unknown.set_new_table_name("x");
  EXPECT_EQ(alter(unknown).code(), absl::StatusCode::kNotFound);
}

TEST_F(CatalogManagerTest, AlterTableRangePartitions) {
  Schema schema = TestSchema();
  auto req = CreateTableRequest("t", {});
  *req.mutable_split_rows_range_bounds() = RangeBoundsOps(schema, 0, 100);
  auto id = Create(req);
  BASALT_ASSERT_OK(id);
  ASSERT_EQ(cm_->GetTablets(*id).size(), 1u);
  auto alter_range = [&](bool add, int32_t lo, int32_t hi) {
    pb::AlterTableRequestPB a;
    a.mutable_table()->set_table_id(*id);
    auto* step = a.add_steps();
    auto* r = add ? step->mutable_add_range_partition() : step->mutable_drop_range_partition();
    *r->mutable_range_bounds() = RangeBoundsOps(schema, lo, hi);
    pb::AlterTableResponsePB resp;
    return cm_->AlterTable(a, &resp);
  };
  BASALT_ASSERT_OK(alter_range(true, 100, 200));
  EXPECT_EQ(cm_->GetTablets(*id).size(), 2u);
  EXPECT_EQ(alter_range(true, 150, 250).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(alter_range(false, 0, 50).code(), absl::StatusCode::kNotFound);
  const std::string first = cm_->GetTablets(*id)[0]->id();
  ReportAll(*id);
  BASALT_ASSERT_OK(alter_range(false, 0, 100));
  auto tablets = cm_->GetTablets(*id);
  ASSERT_EQ(tablets.size(), 1u);
  EXPECT_NE(tablets[0]->id(), first);
  EXPECT_EQ(cm_->GetTableByName("t")->schema.version(), 0u);  // No schema change.
  // The dropped range's replicas are deleted; the other tablet's are not.
  cm_->ReconcileOnce();
  auto deletes = admin_.calls("delete");
  ASSERT_EQ(deletes.size(), 3u);
  for (const auto& d : deletes) EXPECT_EQ(d.tablet_id, first);
  EXPECT_TRUE(admin_.calls("alter").empty());
}

TEST_F(CatalogManagerTest, GetTableLocationsByPartitionKeyRange) {
  const std::string id = CreateOk("t", {10, 20, 30});
  auto table = cm_->GetTableByName("t");
  auto key_of = [&](int32_t k) {
    PartialRow row(&table->schema);
    BASALT_EXPECT_OK(row.SetInt32("key", k));
    return table->partition_schema.PartitionKey(row);
  };
  auto locate = [&](const std::string& start, const std::string& end, uint32_t max) {
    pb::GetTableLocationsRequestPB req;
    req.mutable_table()->set_table_name("t");
    req.set_partition_key_start(start);
    req.set_partition_key_end(end);
    req.set_max_returned_locations(max);
    pb::GetTableLocationsResponsePB resp;
    BASALT_EXPECT_OK(cm_->GetTableLocations(req, &resp));
    return resp;
  };
  auto all = locate("", "", 0);
  ASSERT_EQ(all.tablet_locations_size(), 4);
  EXPECT_GT(all.ttl_millis(), 0u);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(all.tablet_locations(i).partition().partition_key_start(),
              all.tablet_locations(i - 1).partition().partition_key_end());
  }
  EXPECT_EQ(locate("", "", 2).tablet_locations_size(), 2);
  auto mid = locate(key_of(15), "", 0);
  ASSERT_EQ(mid.tablet_locations_size(), 3);
  EXPECT_EQ(mid.tablet_locations(0).partition().partition_key_start(), key_of(10));
  auto bounded = locate(key_of(10), key_of(20), 0);
  ASSERT_EQ(bounded.tablet_locations_size(), 1);
  EXPECT_EQ(bounded.tablet_locations(0).tablet_id(), all.tablet_locations(1).tablet_id());
  EXPECT_EQ(locate(key_of(35), key_of(36), 0).tablet_locations_size(), 1);

  // Roles come from the reports.
  for (const auto& r : all.tablet_locations(0).replicas()) EXPECT_EQ(r.role(), pb::UNKNOWN_ROLE);
  ReportAll(id);
  auto reported = locate("", "", 1);
  const auto& loc = reported.tablet_locations(0);
  ASSERT_EQ(loc.replicas_size(), 3);
  int leaders = 0;
  for (const auto& r : loc.replicas()) {
    leaders += r.role() == pb::LEADER;
    EXPECT_EQ(r.rpc_address().host(), "127.0.0.1");
    EXPECT_FALSE(r.has_frame_rpc_address()) << r.ts_uuid() << " advertised no frame RPC port";
  }
  EXPECT_EQ(leaders, 1);

  // A server that advertises a frame RPC port: its replicas carry the address, the others not.
  const std::string framed = loc.replicas(0).ts_uuid();
  pb::TSHeartbeatRequestPB hb = Heartbeat(std::stoi(framed.substr(3)), /*incremental=*/true);
  ASSERT_EQ(hb.ts_uuid(), framed);
  hb.mutable_frame_rpc_address()->set_host("127.0.0.1");
  hb.mutable_frame_rpc_address()->set_port(20000);
  BASALT_ASSERT_OK(SendHeartbeat(hb));
  const pb::GetTableLocationsResponsePB with_frame = locate("", "", 1);
  for (const auto& r : with_frame.tablet_locations(0).replicas()) {
    if (r.ts_uuid() == framed) {
      EXPECT_EQ(r.frame_rpc_address().host(), "127.0.0.1");
      EXPECT_EQ(r.frame_rpc_address().port(), 20000u);
    } else {
      EXPECT_FALSE(r.has_frame_rpc_address()) << r.ts_uuid();
    }
  }

  pb::GetTableLocationsRequestPB bad;
  bad.mutable_table()->set_table_name("t");
  bad.set_partition_key_start(key_of(20));
  bad.set_partition_key_end(key_of(10));
  pb::GetTableLocationsResponsePB resp;
  EXPECT_EQ(cm_->GetTableLocations(bad, &resp).code(), absl::StatusCode::kInvalidArgument);
  bad.clear_table();
  EXPECT_EQ(cm_->GetTableLocations(bad, &resp).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CatalogManagerTest, NewestLeaderWinsOverStaleLeaderReports) {
  const std::string id = CreateOk("t", {});
  const auto tablet = cm_->GetTablets(id)[0];
  const std::string old_leader = tablet->pb.config().peers(0).uuid();
  const std::string new_leader = tablet->pb.config().peers(1).uuid();
  // The old leader's last report (term 1) still says LEADER; the new one reports term 2.
  for (int i = 0; i < kNumServers; ++i) {
    pb::TSHeartbeatRequestPB hb = Heartbeat(i);
    if (hb.ts_uuid() == old_leader) AddReport(&hb, tablet->id(), true, 0, /*term=*/1);
    if (hb.ts_uuid() == new_leader) AddReport(&hb, tablet->id(), true, 0, /*term=*/2);
    BASALT_ASSERT_OK(SendHeartbeat(hb));
  }
  pb::GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_id(id);
  pb::GetTableLocationsResponsePB resp;
  BASALT_ASSERT_OK(cm_->GetTableLocations(req, &resp));
  ASSERT_EQ(resp.tablet_locations_size(), 1);
  std::map<std::string, pb::RaftRolePB> roles;
  for (const auto& r : resp.tablet_locations(0).replicas()) roles[r.ts_uuid()] = r.role();
  EXPECT_EQ(roles[new_leader], pb::LEADER);
  EXPECT_EQ(roles[old_leader], pb::FOLLOWER);
  EXPECT_EQ(roles[tablet->pb.config().peers(2).uuid()], pb::UNKNOWN_ROLE);

  // An alter goes to the newest leader only.
  pb::AlterTableRequestPB alter;
  alter.mutable_table()->set_table_id(id);
  auto* ren = alter.add_steps()->mutable_rename_column();
  ren->set_old_name("val");
  ren->set_new_name("v");
  pb::AlterTableResponsePB aresp;
  BASALT_ASSERT_OK(cm_->AlterTable(alter, &aresp));
  cm_->ReconcileOnce();
  auto calls = admin_.calls("alter");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].dest_uuid, new_leader);
  // The replica that never reported still gets its CreateTablet.
  auto creates = admin_.calls("create");
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].dest_uuid, tablet->pb.config().peers(2).uuid());
}

// New tablets' first-listed replicas (their first leaders) avoid the servers that lead the most
// tablets as the heartbeats report them, not as the tablets were first listed.
TEST_F(CatalogManagerTest, NewTabletsFirstLeadersAvoidTheServersThatLeadNow) {
  const std::string a = CreateOk("a", {10, 20});
  const auto tablets = cm_->GetTablets(a);
  ASSERT_EQ(tablets.size(), 3u);
  // Every tablet of `a` is now led by one server (term 2), whichever was listed first.
  const std::string busy = tablets[0]->pb.config().peers(0).uuid();
  for (int i = 0; i < kNumServers; ++i) {
    pb::TSHeartbeatRequestPB hb = Heartbeat(i);
    for (const auto& t : tablets) AddReport(&hb, t->id(), hb.ts_uuid() == busy, 0, /*term=*/2);
    BASALT_ASSERT_OK(SendHeartbeat(hb));
  }
  const std::string b = CreateOk("b", {10, 20});
  std::map<std::string, int> first;
  for (const auto& t : cm_->GetTablets(b)) ++first[t->pb.config().peers(0).uuid()];
  EXPECT_EQ(first.count(busy), 0u) << busy << " leads all of a's tablets";
  EXPECT_EQ(first.size(), 2u);  // The other two servers share b's first leaders.
}

TEST_F(CatalogManagerTest, CatalogSurvivesRestart) {
  const std::string id = CreateOk("t", {10});
  pb::AlterTableRequestPB req;
  req.mutable_table()->set_table_id(id);
  req.set_new_table_name("renamed");
  pb::AlterTableResponsePB resp;
  BASALT_ASSERT_OK(cm_->AlterTable(req, &resp));
  std::vector<std::string> tablet_ids;
  for (const auto& t : cm_->GetTablets(id)) tablet_ids.push_back(t->id());
  CloseCatalog();
  ASSERT_NO_FATAL_FAILURE(OpenCatalog());
  auto table = cm_->GetTableByName("renamed");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->id(), id);
  EXPECT_EQ(table->schema.version(), 1u);
  EXPECT_EQ(cm_->GetTableByName("t"), nullptr);
  std::vector<std::string> after;
  for (const auto& t : cm_->GetTablets(id)) after.push_back(t->id());
  EXPECT_EQ(after, tablet_ids);
}

// Too few live tablet servers: retriable while the leadership is young (they may not have
// reported to this master yet), a definite INVALID_ARGUMENT once it is older than their
// unresponsive timeout.
TEST_F(CatalogManagerTest, TooFewLiveServersIsRetriableWhileTheLeadershipIsYoung) {
  pb::CreateTableRequestPB req = CreateTableRequest("five", {});
  req.set_num_replicas(5);
  absl::StatusOr<std::string> early = Create(req);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().code(), absl::StatusCode::kUnavailable) << early.status();
  auto detail = GetErrorDetail(early.status());
  ASSERT_TRUE(detail.has_value()) << early.status();
  EXPECT_EQ(detail->code(), pb::ErrorDetailPB::CATALOG_NOT_READY);
  AdvanceMs(600001);  // Past the fixture's 600 s unresponsive timeout.
  for (int i = 0; i < kNumServers; ++i) BASALT_ASSERT_OK(SendHeartbeat(Heartbeat(i)));
  absl::StatusOr<std::string> late = Create(req);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kInvalidArgument) << late.status();
  EXPECT_NE(late.status().message().find("3 live"), std::string::npos) << late.status();
}

TEST_F(CatalogManagerTest, NotReadyRefusesWithDetail) {
  cm_->SetReady(false);
  absl::Status s = cm_->CheckReady();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  auto detail = GetErrorDetail(s);
  ASSERT_TRUE(detail.has_value());
  EXPECT_EQ(detail->code(), pb::ErrorDetailPB::CATALOG_NOT_READY);
}

}  // namespace catalog_manager_test_file
}  // namespace
}  // namespace basalt
