// The whole Master over gRPC (MasterService), with a fake tablet server admin client.

#include "master/master.h"

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "common/status_test_util.h"
#include "master/catalog_manager.h"
#include "master/master_test_util.h"
#include "proto/master.grpc.pb.h"
#include "proto/master.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"

namespace basalt {
namespace {
namespace master_test_file {

using master_test::AddReport;
using master_test::CreateTableRequest;
using master_test::FakeTsAdminClient;
using master_test::Heartbeat;

class MasterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    ASSERT_NO_FATAL_FAILURE(StartMaster());
  }

  void StartMaster() {
    MasterOptions o;
    o.fs_data_dir = tmp_.path();
    o.rpc_bind_address = "127.0.0.1:0";
    o.ts_admin_client = &admin_;
    o.catalog_tick_interval_ms = 10;
    auto m = Master::Start(o);
    BASALT_ASSERT_OK(m);
    master_ = *std::move(m);
    stub_ =
        pb::MasterService::NewStub(NewChannel("127.0.0.1:" + std::to_string(master_->rpc_port())));
  }

  template <typename Req, typename Resp, typename Method>
  absl::Status Call(Method method, const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return FromGrpcStatus((stub_.get()->*method)(&ctx, req, resp));
  }

  absl::Status Heartbeat3() {
    for (int i = 0; i < 3; ++i) {
      pb::TSHeartbeatResponsePB resp;
      absl::Status s = Call(&pb::MasterService::Stub::TSHeartbeat, Heartbeat(i), &resp);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  master_test::TempDir tmp_{"master_test"};
  FakeTsAdminClient admin_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<pb::MasterService::Stub> stub_;
};

TEST_F(MasterTest, CreateLocateAndRestart) {
  pb::ListMastersResponsePB masters;
  BASALT_ASSERT_OK(
      Call(&pb::MasterService::Stub::ListMasters, pb::ListMastersRequestPB(), &masters));
  ASSERT_EQ(masters.masters_size(), 1);
  EXPECT_EQ(masters.masters(0).uuid(), master_->uuid());
  EXPECT_EQ(masters.masters(0).role(), pb::LEADER);
  EXPECT_EQ(masters.masters(0).rpc_address().port(), static_cast<uint32_t>(master_->rpc_port()));

  pb::TSHeartbeatResponsePB hb_resp;
  BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::TSHeartbeat, Heartbeat(0), &hb_resp));
  EXPECT_EQ(hb_resp.master_uuid(), master_->uuid());
  EXPECT_TRUE(hb_resp.leader_master());
  BASALT_ASSERT_OK(Heartbeat3());

  pb::CreateTableResponsePB created;
  BASALT_ASSERT_OK(
      Call(&pb::MasterService::Stub::CreateTable, CreateTableRequest("t", {10}), &created));
  // The reconciliation thread sends CreateTablet to all six replicas.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (admin_.calls("create").size() < 6 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));  // Polling the fake, bounded by the deadline.
  }
  EXPECT_EQ(admin_.calls("create").size(), 6u);

  pb::GetTableLocationsRequestPB lreq;
  lreq.mutable_table()->set_table_name("t");
  pb::GetTableLocationsResponsePB locs;
  BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::GetTableLocations, lreq, &locs));
  ASSERT_EQ(locs.tablet_locations_size(), 2);

  // Report every replica, with the first peer leading: create is done.
  for (int i = 0; i < 3; ++i) {
    pb::TSHeartbeatRequestPB hb = Heartbeat(i);
    for (const auto& loc : locs.tablet_locations()) {
      for (int p = 0; p < loc.replicas_size(); ++p) {
        if (loc.replicas(p).ts_uuid() == hb.ts_uuid()) AddReport(&hb, loc.tablet_id(), p == 0);
      }
    }
    BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::TSHeartbeat, hb, &hb_resp));
  }
  pb::IsCreateTableDoneRequestPB dreq;
  dreq.mutable_table()->set_table_id(created.table_id());
  pb::IsCreateTableDoneResponsePB done;
  BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::IsCreateTableDone, dreq, &done));
  EXPECT_TRUE(done.done());

  pb::ListTabletServersResponsePB servers;
  BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::ListTabletServers,
                        pb::ListTabletServersRequestPB(), &servers));
  EXPECT_EQ(servers.servers_size(), 3);

  // Restart from the directory: same uuid, same table.
  const std::string uuid = master_->uuid();
  master_->Shutdown();
  master_.reset();
  ASSERT_NO_FATAL_FAILURE(StartMaster());
  EXPECT_EQ(master_->uuid(), uuid);
  pb::GetTableSchemaRequestPB sreq;
  sreq.mutable_table()->set_table_name("t");
  pb::GetTableSchemaResponsePB schema;
  BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::GetTableSchema, sreq, &schema));
  EXPECT_EQ(schema.table_id(), created.table_id());
  EXPECT_EQ(schema.schema().columns_size(), 3);
  EXPECT_EQ(schema.num_replicas(), 3);
  BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::GetTableLocations, lreq, &locs));
  EXPECT_EQ(locs.tablet_locations_size(), 2);
  // The restarted master does not know the servers' replicas: it asks for full reports.
  BASALT_ASSERT_OK(
      Call(&pb::MasterService::Stub::TSHeartbeat, Heartbeat(0, /*incremental=*/true), &hb_resp));
  EXPECT_TRUE(hb_resp.needs_full_tablet_report());
}

TEST_F(MasterTest, MalformedRequestsGetClearErrors) {
  BASALT_ASSERT_OK(Heartbeat3());
  auto req = CreateTableRequest("t", {});
  req.mutable_split_rows_range_bounds()->set_rows(std::string(1000, '\xee'));
  pb::CreateTableResponsePB created;
  absl::Status s = Call(&pb::MasterService::Stub::CreateTable, req, &created);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("split_rows_range_bounds"), std::string_view::npos) << s;

  req = CreateTableRequest("t", {});
  req.mutable_schema()->mutable_columns(0)->set_default_value("\x01");  // Wrong size for INT32.
  EXPECT_EQ(Call(&pb::MasterService::Stub::CreateTable, req, &created).code(),
            absl::StatusCode::kInvalidArgument);

  pb::GetTableSchemaResponsePB schema;
  s = Call(&pb::MasterService::Stub::GetTableSchema, pb::GetTableSchemaRequestPB(), &schema);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  pb::GetTableSchemaRequestPB sreq;
  sreq.mutable_table()->set_table_name("missing");
  s = Call(&pb::MasterService::Stub::GetTableSchema, sreq, &schema);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  auto detail = GetErrorDetail(s);
  ASSERT_TRUE(detail.has_value());
  EXPECT_EQ(detail->code(), pb::ErrorDetailPB::TABLE_NOT_FOUND);

  pb::AlterTableRequestPB areq;
  areq.mutable_table()->set_table_name("missing");
  areq.add_steps();
  pb::AlterTableResponsePB aresp;
  EXPECT_EQ(Call(&pb::MasterService::Stub::AlterTable, areq, &aresp).code(),
            absl::StatusCode::kNotFound);
  pb::TSHeartbeatResponsePB hb_resp;
  EXPECT_EQ(
      Call(&pb::MasterService::Stub::TSHeartbeat, pb::TSHeartbeatRequestPB(), &hb_resp).code(),
      absl::StatusCode::kInvalidArgument);

  // Still serving.
  BASALT_ASSERT_OK(
      Call(&pb::MasterService::Stub::CreateTable, CreateTableRequest("t", {}), &created));
  pb::ListTablesResponsePB tables;
  BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::ListTables, pb::ListTablesRequestPB(), &tables));
  EXPECT_EQ(tables.tables_size(), 1);
}

TEST_F(MasterTest, GarbledCatalogFailsStartCleanly) {
  BASALT_ASSERT_OK(Heartbeat3());
  pb::CreateTableResponsePB created;
  BASALT_ASSERT_OK(
      Call(&pb::MasterService::Stub::CreateTable, CreateTableRequest("t", {}), &created));
  master_->Shutdown();
  master_.reset();
  {
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), tmp_.path() + "/catalog", &db).ok());
    std::unique_ptr<rocksdb::DB> owner(db);
    const std::string key = "table/" + created.table_id();
    std::string value;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), key, &value).ok());
    value[value.size() - 1] ^= 0x40;
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, value).ok());
  }
  MasterOptions o;
  o.fs_data_dir = tmp_.path();
  o.ts_admin_client = &admin_;
  auto m = Master::Start(o);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss) << m.status();
  EXPECT_NE(m.status().message().find(created.table_id()), std::string_view::npos) << m.status();
}

TEST(MasterStartTest, RefusesBadMasterAddresses) {
  master_test::TempDir tmp("master_start_test");
  MasterOptions o;
  o.fs_data_dir = tmp.path();
  o.catalog_tick_interval_ms = 10;
  FakeTsAdminClient admin;
  o.ts_admin_client = &admin;
  // This master is not among the masters listed.
  o.master_addresses = "127.0.0.1:7051,127.0.0.1:7052";
  auto m = Master::Start(o);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("is not in --master_addresses"), std::string_view::npos)
      << m.status();
  // A catalog formed by a single master does not silently become one of several.
  o.master_addresses = "";
  BASALT_ASSERT_OK(Master::Start(o));
  o.rpc_advertised_address = "127.0.0.1:7051";
  o.master_addresses = "127.0.0.1:7051,127.0.0.1:7052";
  m = Master::Start(o);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("single master"), std::string_view::npos) << m.status();
  o.master_addresses = "";
  o.fs_data_dir = "";
  EXPECT_EQ(Master::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MasterStartTest, SecondMasterOnSameDirectoryFails) {
  master_test::TempDir tmp("master_lock_test");
  MasterOptions o;
  o.fs_data_dir = tmp.path();
  o.catalog_tick_interval_ms = 10;
  FakeTsAdminClient admin;
  o.ts_admin_client = &admin;
  auto m = Master::Start(o);
  BASALT_ASSERT_OK(m);
  auto second = Master::Start(o);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
}

}  // namespace master_test_file
}  // namespace
}  // namespace basalt
