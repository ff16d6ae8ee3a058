// The tablet server's web endpoints (docs/web.md) against an in-process server: /healthz,
// /metrics moving after a write and a scan, and the /tablets page.

#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "common/strings.h"
#include "server/webserver.h"
#include "tserver/tablet_server.h"
#include "tserver/ts_tablet_manager.h"
#include "tserver/tserver_test_util.h"

namespace basalt {
namespace {
namespace webserver_integration_test_file {

constexpr char kTablet[] = "web-tablet-1";

class TserverWebTest : public ::testing::Test {
 protected:
  TserverWebTest() : dir_("tserver_web_test") {}

  void SetUp() override {
    TabletServerOptions o = TestServerOptions(dir_.path());
    o.webserver_port = 0;
    server_ = std::make_unique<TabletServer>(o);
    BASALT_ASSERT_OK(server_->Start());
    ASSERT_GT(server_->webserver_port(), 0);
    client_ = std::make_unique<TsClient>(server_->advertised_address().ToString());
  }

  HttpResponse Get(const std::string& path) {
    absl::StatusOr<HttpResponse> r = HttpGet("127.0.0.1", server_->webserver_port(), path);
    BASALT_EXPECT_OK(r);
    return r.ok() ? *r : HttpResponse{};
  }

  TestDir dir_;
  std::unique_ptr<TabletServer> server_;
  std::unique_ptr<TsClient> client_;
};

TEST_F(TserverWebTest, HealthzMetricsAndTabletsPage) {
  HttpResponse health = Get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "OK\n");

  BASALT_ASSERT_OK(client_->CreateTablet(
      CreateTabletRequest(kTablet, {{server_->uuid(), server_->advertised_address()}})));
  auto replica = server_->tablet_manager()->Lookup(kTablet);
  BASALT_ASSERT_OK(replica);
  ASSERT_TRUE(WaitFor([&] {
    return (*replica)->raft() != nullptr && (*replica)->raft()->role() == RaftCore::Role::kLeader &&
           (*replica)->GetStatus().last_applied_index > 0;
  }));

  const std::string before = Get("/metrics").body;
  const double written_before = SampleValue(before, "basalt_tserver_rows_written_total");
  const double scanned_before = SampleValue(before, "basalt_tserver_rows_scanned_total");
  const std::string write_series =
      "basalt_rpc_requests_total{method=\"/basalt.pb.TabletServerService/Write\"}";
  const double writes_before = std::max(0.0, SampleValue(before, write_series));

  Schema schema = TestSchema();
  WriteBuilder w(&schema);
  for (int32_t k = 0; k < 10; ++k) w.Insert(k);
  pb::WriteResponsePB wresp;
  absl::Status s;
  ASSERT_TRUE(WaitFor([&] {
    wresp.Clear();
    s = client_->Write(w.Build(kTablet), &wresp);
    return !absl::IsUnavailable(s);
  }));
  BASALT_ASSERT_OK(s);
  pb::ScanRequestPB scan;
  scan.mutable_new_scan_request()->set_tablet_id(kTablet);
  *scan.mutable_new_scan_request()->add_projected_columns() = ProjectedColumn(schema, "key");
  pb::ScanResponsePB sresp;
  BASALT_ASSERT_OK(client_->Scan(scan, &sresp));
  ASSERT_EQ(sresp.data().num_rows(), 10);

  const HttpResponse metrics = Get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  const std::string& m = metrics.body;
  EXPECT_GE(SampleValue(m, "basalt_tserver_rows_written_total"), written_before + 10) << m;
  EXPECT_GE(SampleValue(m, "basalt_tserver_rows_scanned_total"), scanned_before + 10) << m;
  EXPECT_GE(SampleValue(m, write_series), writes_before + 1) << m;
  const std::string tablet_label = StrCat("{tablet_id=\"", kTablet, "\"}");
  EXPECT_GT(SampleValue(m, "basalt_tablet_mrs_memory_bytes" + tablet_label), 0) << m;
  EXPECT_GE(SampleValue(m, "basalt_tablet_raft_term" + tablet_label), 1) << m;
  EXPECT_EQ(SampleValue(m, "basalt_tablet_is_leader" + tablet_label), 1) << m;
  EXPECT_GE(SampleValue(m, "basalt_raft_leader_changes_total" + tablet_label), 1) << m;
  EXPECT_EQ(SampleValue(m, "basalt_tserver_tablets{state=\"RUNNING\"}"), 1) << m;
  EXPECT_NE(m.find("# TYPE basalt_wal_fsync_seconds histogram"), std::string::npos);
  EXPECT_NE(m.find("# TYPE basalt_rpc_duration_seconds histogram"), std::string::npos);

  const HttpResponse tablets = Get("/tablets");
  EXPECT_EQ(tablets.status, 200);
  EXPECT_NE(tablets.body.find(kTablet), std::string::npos) << tablets.body;
  EXPECT_NE(tablets.body.find("test_table"), std::string::npos);
  EXPECT_NE(tablets.body.find("<td>leader</td>"), std::string::npos) << tablets.body;
  EXPECT_NE(Get("/").body.find("href=\"/tablets\""), std::string::npos);
}

// A failed data directory shows on /metrics and on the storage page (docs/tserver.md "Data
// directories").
TEST(TserverWebDataDirsTest, AFailedDataDirShowsOnMetricsAndTheStoragePage) {
  TestDir dir("tserver_web_dirs_test");
  const std::string dir2 = dir.path() + "/second";
  TabletServerOptions o = TestServerOptions(dir.path() + "/first");
  o.fs_data_dirs = {o.fs_data_dir, dir2};
  o.webserver_port = 0;
  TabletServer server(o);
  BASALT_ASSERT_OK(server.Start());
  auto get = [&](const std::string& path) {
    absl::StatusOr<HttpResponse> r = HttpGet("127.0.0.1", server.webserver_port(), path);
    BASALT_EXPECT_OK(r);
    return r.ok() ? r->body : std::string();
  };
  const std::string series = StrCat("basalt_tserver_data_dir_failed{dir=\"", dir2, "\"}");
  EXPECT_EQ(SampleValue(get("/metrics"), series), 0);
  EXPECT_NE(get("/storage").find(dir2), std::string::npos);
  server.block_manager()->MarkDirFailed(1, absl::InternalError("write: Input/output error"));
  EXPECT_EQ(SampleValue(get("/metrics"), series), 1);
  const std::string first = StrCat("basalt_tserver_data_dir_failed{dir=\"", o.fs_data_dir, "\"}");
  EXPECT_EQ(SampleValue(get("/metrics"), first), 0);
  const std::string storage = get("/storage");
  EXPECT_NE(storage.find("FAILED: INTERNAL: write: Input/output error"), std::string::npos)
      << storage;
  EXPECT_NE(get("/").find("href=\"/storage\""), std::string::npos);
  server.Shutdown();
}

TEST_F(TserverWebTest, ShutdownStopsTheWebServer) {
  const int port = server_->webserver_port();
  server_->Shutdown();
  EXPECT_FALSE(HttpGet("127.0.0.1", port, "/healthz", absl::Seconds(2)).ok());
}

TEST(TserverWebDisabledTest, NegativePortDisables) {
  TestDir dir("tserver_web_disabled_test");
  TabletServer server(TestServerOptions(dir.path()));  // webserver_port defaults to -1.
  BASALT_ASSERT_OK(server.Start());
  EXPECT_EQ(server.webserver_port(), 0);
}

}  // namespace webserver_integration_test_file
}  // namespace
}  // namespace basalt
