#include "server/webserver.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/metrics.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace webserver_test_file {

class WebserverTest : public ::testing::Test {
 protected:
  void StartServer() {
    WebserverOptions o;
    o.port = 0;
    o.registry = &registry_;
    o.server_name = "test<server>";
    server_ = std::make_unique<Webserver>(o);
    server_->RegisterPage("/things", "Things",
                          [] { return HtmlTable({"name"}, {{"<script>x</script>"}}); });
    server_->RegisterPage("/block", "Block", [this] {
      in_handler_.Notify();
      release_.WaitForNotification();
      return std::string("released");
    });
    BASALT_ASSERT_OK(server_->Start());
    ASSERT_GT(server_->port(), 0);
  }
  absl::StatusOr<HttpResponse> Get(const std::string& path) {
    return HttpGet("127.0.0.1", server_->port(), path);
  }

  MetricRegistry registry_;
  std::unique_ptr<Webserver> server_;
  absl::Notification in_handler_;
  absl::Notification release_;
};

TEST_F(WebserverTest, HealthzFollowsHealthStatus) {
  StartServer();
  auto r = Get("/healthz");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "starting\n");
  server_->SetHealth(absl::OkStatus());
  r = Get("/healthz");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "OK\n");
}

// The daemons' pattern (docs/web.md): SetHealth(OK) once serving plus a readiness check (tablets
// bootstrapped, catalog loaded); a non-OK SetHealth ("shutting down") wins over the check.
TEST_F(WebserverTest, HealthzConsultsHealthCheck) {
  StartServer();
  std::atomic<int> calls{0};
  std::atomic<bool> ready{false};
  server_->SetHealthCheck([&] {
    calls.fetch_add(1);
    return ready.load() ? absl::OkStatus()
                        : absl::UnavailableError("starting: 2 tablets bootstrapping");
  });
  auto r = Get("/healthz");  // Still "starting" by SetHealth: the check is not consulted.
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "starting\n");
  EXPECT_EQ(calls.load(), 0);

  server_->SetHealth(absl::OkStatus());
  r = Get("/healthz");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "starting: 2 tablets bootstrapping\n");
  EXPECT_EQ(calls.load(), 1);

  ready = true;
  r = Get("/healthz");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "OK\n");

  server_->SetHealth(absl::UnavailableError("shutting down"));
  r = Get("/healthz");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "shutting down\n");
  EXPECT_EQ(calls.load(), 2);

  server_->SetHealth(absl::OkStatus());
  server_->SetHealthCheck(nullptr);  // Removed: OK again without consulting anything.
  r = Get("/healthz");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(calls.load(), 2);
  server_->Shutdown();  // Before `calls` and `ready` go away.
}

TEST_F(WebserverTest, MetricsIndexPagesAnd404) {
  StartServer();
  registry_.GetCounter("basalt_test_total", "Test.")->Increment(42);
  auto r = Get("/metrics");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->content_type.find("text/plain"), std::string::npos);
  EXPECT_NE(r->body.find("\nbasalt_test_total 42\n"), std::string::npos) << r->body;

  r = Get("/");
  BASALT_ASSERT_OK(r);
  EXPECT_NE(r->body.find("href=\"/things\""), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("test&lt;server&gt;"), std::string::npos);

  r = Get("/things");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("&lt;script&gt;x&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(r->body.find("<script>"), std::string::npos);

  r = Get("/no/such/page");
  BASALT_ASSERT_OK(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(WebserverTest, ConcurrentRequests) {
  StartServer();
  registry_.GetCounter("basalt_test_total", "Test.")->Increment();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto r = Get(i % 2 == 0 ? "/metrics" : "/things");
        if (r.ok() && r->status == 200) ok.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 160);
}

TEST_F(WebserverTest, ShutdownWithRequestInFlight) {
  StartServer();
  const int port = server_->port();
  absl::StatusOr<HttpResponse> result;
  std::thread client([&] { result = HttpGet("127.0.0.1", port, "/block"); });
  in_handler_.WaitForNotification();
  std::thread stopper([&] { server_->Shutdown(); });
  release_.Notify();
  stopper.join();
  client.join();
  // The in-flight request completes; afterwards nothing listens.
  BASALT_ASSERT_OK(result);
  EXPECT_NE(result->body.find("released"), std::string::npos);
  EXPECT_FALSE(HttpGet("127.0.0.1", port, "/healthz", absl::Seconds(2)).ok());
  server_->Shutdown();  // Idempotent.
}

TEST(WebserverPortTest, BusyPortIsUnavailable) {
  Webserver a(WebserverOptions{});
  BASALT_ASSERT_OK(a.Start());
  WebserverOptions o;
  o.port = a.port();
  Webserver b(o);
  absl::Status s = b.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}

TEST(HtmlTest, Escape) { EXPECT_EQ(HtmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;"); }

}  // namespace webserver_test_file
}  // namespace
}  // namespace basalt
