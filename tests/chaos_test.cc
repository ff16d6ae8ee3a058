// The chaos suite (issue 15 item 4): writers insert and update rows while a nemesis kills,
// pauses, restarts and cuts off tablet servers and masters, loses quorums, alters the table and
// moves replicas; then everything is healed, and a verifier checks with a fault-tolerant snapshot
// scan that no acknowledged write was lost, nothing was written that was not sent, no row is
// there twice, every acknowledged update is visible (or a later one), the replicas' checksums
// agree (`basalt cluster ksck --checksum`), and no daemon died by itself.
//
// ChaosTest.ShortRun (default suite, about 70 seconds) and ChaosTest.LongRun (`make chaos`:
// 30 minutes, 3 masters; skipped unless BASALT_CHAOS_LONG=1). Replaying a run and the knobs:
// docs/testing.md "Chaos runs". Each run prints its seed, the nemesis' action log and one JSON
// line beginning "chaos summary:".

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/chaos_nemesis_util.h"
#include "tests/chaos_verifier_util.h"
#include "tests/chaos_writer_util.h"
#include "tests/cli_test_util.h"

namespace basalt::chaos {
namespace {
namespace chaos_test_file {

struct ChaosConfig {
  absl::Duration duration;  // Of the nemesis.
  int masters = 1;
  int tservers = 4;
  int writers = 2;
  bool partitions = true;  // When network namespaces can be made here.
  uint64_t seed = 0;
};

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t out;
  if (v == nullptr || *v == '\0') return fallback;
  CHECK(absl::SimpleAtoi(v, &out)) << name << "='" << v << "' is not an integer";
  return out;
}

// The defaults, overridden by BASALT_CHAOS_{SECONDS,MASTERS,TSERVERS,WRITERS,PARTITIONS,SEED}.
ChaosConfig ConfigFromEnv(absl::Duration duration, int masters, int tservers) {
  ChaosConfig c;
  c.duration = absl::Seconds(EnvInt("BASALT_CHAOS_SECONDS", absl::ToInt64Seconds(duration)));
  c.masters = static_cast<int>(EnvInt("BASALT_CHAOS_MASTERS", masters));
  c.tservers = static_cast<int>(EnvInt("BASALT_CHAOS_TSERVERS", tservers));
  c.writers = static_cast<int>(EnvInt("BASALT_CHAOS_WRITERS", c.writers));
  c.partitions = EnvInt("BASALT_CHAOS_PARTITIONS", 1) != 0;
  c.seed = SeedFromEnvOrTime("BASALT_CHAOS_SEED");
  return c;
}

class ChaosTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (cluster_ != nullptr && HasFailure()) {
      cluster_->set_keep_root_dir(true);
      LOG(ERROR) << "the cluster's directory is kept: " << cluster_->root_dir();
    }
  }

  void Run(const ChaosConfig& c);

  std::unique_ptr<ExternalMiniCluster> cluster_;
};

void CreateTable(const std::string& masters, const std::string& name) {
  std::shared_ptr<client::Client> client;
  BASALT_ASSERT_OK(client::ClientBuilder().add_master_server_addr(masters).Build(&client));
  client::SchemaBuilder b;
  b.AddColumn("key")->Type(client::ColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("int_val")->Type(client::ColumnSchema::INT32)->NotNull();
  b.AddColumn("string_val")->Type(client::ColumnSchema::STRING)->Nullable();
  client::Schema schema;
  BASALT_ASSERT_OK(b.Build(&schema));
  auto creator = client->NewTableCreator();
  creator->table_name(name).schema(&schema).num_replicas(3).add_hash_partitions({"key"}, 4);
  BASALT_ASSERT_OK(creator->Create());
}

// Every row, by a fault-tolerant snapshot scan.
absl::Status ScanAll(const std::string& masters, const std::string& table_name,
                     std::vector<ScannedRow>* rows) {
  std::shared_ptr<client::Client> client;
  BASALT_RETURN_IF_ERROR(client::ClientBuilder().add_master_server_addr(masters).Build(&client));
  std::shared_ptr<client::Table> table;
  BASALT_RETURN_IF_ERROR(client->OpenTable(table_name, &table));
  client::Scanner scanner(table.get());
  BASALT_RETURN_IF_ERROR(scanner.SetProjectedColumnNames({"key", "int_val", "string_val"}));
  BASALT_RETURN_IF_ERROR(scanner.SetFaultTolerant());
  BASALT_RETURN_IF_ERROR(scanner.SetTimeoutMillis(60000));
  BASALT_RETURN_IF_ERROR(scanner.Open());
  client::ScanBatch batch;
  while (scanner.HasMoreRows()) {
    BASALT_RETURN_IF_ERROR(scanner.NextBatch(&batch));
    const auto* keys = static_cast<const int32_t*>(batch.Column(0).data);
    const auto* values = static_cast<const int32_t*>(batch.Column(1).data);
    client::ScanBatch::ColumnView labels = batch.Column(2);
    for (int64_t i = 0; i < batch.NumRows(); ++i) {
      ScannedRow r{keys[i], values[i], std::nullopt};
      if (!labels.IsNull(i)) r.label = std::string(labels.GetString(i));
      rows->push_back(std::move(r));
    }
  }
  return absl::OkStatus();
}

// Runs `basalt cluster ksck` (with `extra` flags) until it passes.
absl::Status WaitForKsck(const std::string& masters, const std::string& scratch,
                         const std::vector<std::string>& extra, absl::Duration timeout) {
  std::vector<std::string> args = {"cluster", "ksck", masters};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult last;
  absl::Status s = WaitFor(timeout, StrCat("basalt ", absl::StrJoin(args, " ")), [&] {
    last = RunBasalt(args, scratch);
    return last.rc == 0 ? absl::OkStatus()
                        : absl::UnavailableError(StrCat("rc ", last.rc, ": ", last.out, last.err));
  });
  return s;
}

void ChaosTest::Run(const ChaosConfig& c) {
  LOG(INFO) << "chaos: seed " << c.seed << " (replay: BASALT_CHAOS_SEED=" << c.seed << "), "
            << absl::FormatDuration(c.duration) << ", " << c.masters << " master(s), " << c.tservers
            << " tablet servers, " << c.writers << " writers";
  ExternalMiniClusterOptions o;
  o.num_masters = c.masters;
  o.num_tablet_servers = c.tservers;
  // Fast elections; a server down for more than 6 s is replaced (tablet copies under chaos);
  // small flushes and log segments, so flushes, compactions and log GC run throughout.
  o.extra_tserver_flags = {
      "--raft_heartbeat_interval_ms=200", "--follower_unavailable_considered_failed_sec=6",
      "--tablet_copy_retry_max_ms=2000", "--flush_threshold_mb=1", "--log_segment_size_mb=1"};
  bool partitions = false;
  if (c.partitions) {
    absl::Status can = ExternalMiniCluster::NetworkNamespacesAvailable();
    partitions = can.ok();
    if (!can.ok()) LOG(WARNING) << "chaos: no network partitions: " << can;
  }
  o.network_namespaces = partitions;
  cluster_ = std::make_unique<ExternalMiniCluster>(o);
  BASALT_ASSERT_OK(cluster_->Start());
  const std::string masters = cluster_->master_addresses();
  const std::string scratch = cluster_->root_dir();
  ASSERT_NO_FATAL_FAILURE(CreateTable(masters, "chaos"));

  std::vector<std::unique_ptr<ChaosWriter>> writers;
  for (int w = 0; w < c.writers; ++w) {
    writers.push_back(
        std::make_unique<ChaosWriter>(masters, "chaos", w, c.writers, c.seed + w + 1));
    BASALT_ASSERT_OK(writers.back()->Start());
  }
  for (auto& w : writers) BASALT_ASSERT_OK(w->WaitForMoreAcks(100, absl::Seconds(60)));

  NemesisOptions no;
  no.seed = c.seed;
  no.table_name = "chaos";
  no.scratch_dir = scratch;
  no.partitions = partitions;
  Nemesis nemesis(cluster_.get(), no);
  const absl::Status healed = nemesis.Run(c.duration);
  const std::vector<std::string> actions = nemesis.action_log();
  LOG(INFO) << "chaos: the nemesis' " << actions.size() << " actions:\n"
            << absl::StrJoin(actions, "\n");
  BASALT_ASSERT_OK(healed);

  // Healed, the cluster takes writes again.
  for (auto& w : writers) BASALT_ASSERT_OK(w->WaitForMoreAcks(50, absl::Seconds(120)));
  std::vector<WriterLog> logs;
  for (auto& w : writers) {
    BASALT_ASSERT_OK(w->Stop());
    logs.push_back(w->log());
    for (const auto& [code, n] : w->log().errors) {
      LOG(INFO) << "chaos: writer " << w->log().writer << ": " << n << " failed ops " << code;
    }
  }
  // Every tablet has its replicas back, running and agreeing.
  BASALT_ASSERT_OK(WaitForKsck(masters, scratch, {}, absl::Seconds(180)));
  BASALT_ASSERT_OK(WaitForKsck(masters, scratch, {"--checksum"}, absl::Seconds(120)));

  std::vector<ScannedRow> rows;
  BASALT_ASSERT_OK(ScanAll(masters, nemesis.table_name(), &rows));
  const Verdict v = Verify(logs, rows);
  LOG(INFO) << "chaos summary: " << v.ToJson(c.seed);
  std::cout << "chaos summary: " << v.ToJson(c.seed) << std::endl;
  for (const std::string& e : v.examples) LOG(ERROR) << "chaos: " << e;
  EXPECT_TRUE(v.ok()) << v.ToJson(c.seed) << "\n" << absl::StrJoin(v.examples, "\n");
  // Each batch's deadline is the session timeout from when it was cut (docs/client.md
  // "Deadlines"); the slack is for a loaded machine.
  EXPECT_LE(v.longest_flush_s, ChaosWriter::kSessionTimeoutMs / 1000.0 + 2) << v.ToJson(c.seed);
  BASALT_EXPECT_OK(cluster_->CheckNoDaemonDied());
}

TEST_F(ChaosTest, ShortRun) {
  ASSERT_NO_FATAL_FAILURE(Run(ConfigFromEnv(absl::Seconds(60), 1, 4)));
}

TEST_F(ChaosTest, LongRun) {
  if (EnvInt("BASALT_CHAOS_LONG", 0) == 0) {
    GTEST_SKIP() << "the 30-minute chaos run: set BASALT_CHAOS_LONG=1 (make chaos)";
  }
  ASSERT_NO_FATAL_FAILURE(Run(ConfigFromEnv(absl::Minutes(30), 3, 5)));
}

// The verifier itself: each anomaly is counted.
TEST(ChaosVerifierTest, CountsEachKindOfAnomaly) {
  WriterLog log;
  log.writer = 0;
  log.num_writers = 1;
  log.attempted_inserts = 7;         // Keys 0..6.
  log.acked_inserts = {0, 1, 2, 3};  // 3 is lost.
  log.uncertain_inserts = {4, 6};    // May be there.
  log.failed_inserts = {5};          // Must not be.
  log.acked_updates = 2;
  log.acked_value = {{1, 7}, {2, 9}};  // 2 has an older value.
  log.max_sent_value = {{1, 8}, {2, 9}};
  log.longest_gap = absl::Milliseconds(2500);
  auto row = [](int32_t key, int32_t value) {
    return ScannedRow{key, value, StrCat("w0-", value)};
  };
  std::vector<ScannedRow> rows = {row(0, 0), row(1, 8), row(2, 3), row(4, 0),
                                  row(5, 0), row(9, 0), row(0, 0), row(6, 0)};
  rows.back().label = "w0-1";  // 6: another update's string_val.
  const Verdict v = Verify({log}, rows);
  EXPECT_EQ(v.acknowledged, 6);
  EXPECT_EQ(v.lost, 1);          // 3
  EXPECT_EQ(v.phantom, 2);       // 5 (refused), 9 (never sent)
  EXPECT_EQ(v.duplicated, 1);    // 0
  EXPECT_EQ(v.lost_updates, 1);  // 2
  EXPECT_EQ(v.corrupt, 1);       // 6
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.ToJson(7),
            "{\"seed\":7,\"acknowledged\":6,\"rows\":8,\"lost\":1,\"phantom\":2,\"duplicated\":1,"
            "\"lost_updates\":1,\"corrupt\":1,\"own_already_exists\":0,"
            "\"longest_write_unavailability_s\":2.5,\"longest_flush_s\":0.0}");
  const Verdict clean = Verify({log}, {row(0, 0), row(1, 7), row(2, 9), row(3, 0)});
  EXPECT_TRUE(clean.ok()) << clean.ToJson(7) << absl::StrJoin(clean.examples, "\n");
}

}  // namespace chaos_test_file
}  // namespace
}  // namespace basalt::chaos
