// The master's web endpoints (docs/web.md) against an in-process master with a fake tablet
// server admin client: /healthz, /metrics moving after heartbeats and a CreateTable, and the
// /tables and /tablet-servers pages (with HTML escaping of a table name).

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "common/strings.h"
#include "master/master.h"
#include "master/master_test_util.h"
#include "proto/master.grpc.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "server/webserver.h"

namespace basalt {
namespace {
namespace webserver_integration_test_file {

using master_test::CreateTableRequest;
using master_test::FakeTsAdminClient;
using master_test::Heartbeat;

double SampleValue(const std::string& body, const std::string& series) {
  const std::string needle = "\n" + series + " ";
  const size_t pos = body.find(needle);
  if (pos == std::string::npos) return -1;
  return std::strtod(body.c_str() + pos + needle.size(), nullptr);
}

class MasterWebTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterOptions o;
    o.fs_data_dir = tmp_.path();
    o.rpc_bind_address = "127.0.0.1:0";
    o.ts_admin_client = &admin_;
    o.catalog_tick_interval_ms = 10;
    o.webserver_port = 0;
    auto m = Master::Start(o);
    BASALT_ASSERT_OK(m);
    master_ = *std::move(m);
    ASSERT_GT(master_->webserver_port(), 0);
    stub_ = pb::MasterService::NewStub(NewChannel(StrCat("127.0.0.1:", master_->rpc_port())));
  }

  template <typename Req, typename Resp, typename Method>
  absl::Status Call(Method method, const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return FromGrpcStatus((stub_.get()->*method)(&ctx, req, resp));
  }

  HttpResponse Get(const std::string& path) {
    absl::StatusOr<HttpResponse> r = HttpGet("127.0.0.1", master_->webserver_port(), path);
    BASALT_EXPECT_OK(r);
    return r.ok() ? *r : HttpResponse{};
  }

  master_test::TempDir tmp_{"master_web_test"};
  FakeTsAdminClient admin_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<pb::MasterService::Stub> stub_;
};

TEST_F(MasterWebTest, HealthzMetricsAndPages) {
  HttpResponse health = Get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "OK\n");

  const std::string before = Get("/metrics").body;
  EXPECT_EQ(SampleValue(before, "basalt_master_tables"), 0) << before;
  EXPECT_EQ(SampleValue(before, "basalt_master_live_tablet_servers"), 0) << before;
  EXPECT_EQ(SampleValue(before, "basalt_master_is_leader"), 1) << before;
  const std::string hb_series =
      "basalt_rpc_requests_total{method=\"/basalt.pb.MasterService/TSHeartbeat\"}";
  const std::string create_series =
      "basalt_rpc_requests_total{method=\"/basalt.pb.MasterService/CreateTable\"}";
  const double hb_before = std::max(0.0, SampleValue(before, hb_series));
  const double create_before = std::max(0.0, SampleValue(before, create_series));

  for (int i = 0; i < 3; ++i) {
    pb::TSHeartbeatResponsePB resp;
    BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::TSHeartbeat, Heartbeat(i), &resp));
  }
  pb::CreateTableResponsePB cresp;
  BASALT_ASSERT_OK(Call(&pb::MasterService::Stub::CreateTable,
                        CreateTableRequest("web<table>&", {10, 20}), &cresp));

  const std::string m = Get("/metrics").body;
  EXPECT_EQ(SampleValue(m, "basalt_master_tables"), 1) << m;
  EXPECT_EQ(SampleValue(m, "basalt_master_tablets"), 3) << m;
  EXPECT_EQ(SampleValue(m, "basalt_master_live_tablet_servers"), 3) << m;
  EXPECT_EQ(SampleValue(m, "basalt_master_tablet_servers"), 3) << m;
  EXPECT_GE(SampleValue(m, hb_series), hb_before + 3) << m;
  EXPECT_GE(SampleValue(m, create_series), create_before + 1) << m;

  const HttpResponse tables = Get("/tables");
  EXPECT_EQ(tables.status, 200);
  EXPECT_NE(tables.body.find("<td>web&lt;table&gt;&amp;</td>"), std::string::npos) << tables.body;
  EXPECT_EQ(tables.body.find("web<table>"), std::string::npos);
  EXPECT_NE(tables.body.find(cresp.table_id()), std::string::npos);

  const HttpResponse servers = Get("/tablet-servers");
  EXPECT_EQ(servers.status, 200);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(servers.body.find(StrCat("<td>ts-", i, "</td>")), std::string::npos) << servers.body;
    EXPECT_NE(servers.body.find(StrCat("127.0.0.1:", 10000 + i)), std::string::npos);
  }
  const std::string index = Get("/").body;
  EXPECT_NE(index.find("href=\"/tables\""), std::string::npos);
  EXPECT_NE(index.find("href=\"/tablet-servers\""), std::string::npos);
  EXPECT_EQ(Get("/nope").status, 404);
}

TEST_F(MasterWebTest, ShutdownStopsTheWebServer) {
  const int port = master_->webserver_port();
  master_->Shutdown();
  EXPECT_FALSE(HttpGet("127.0.0.1", port, "/healthz", absl::Seconds(2)).ok());
}

}  // namespace webserver_integration_test_file
}  // namespace
}  // namespace basalt
