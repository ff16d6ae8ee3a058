// Cluster smoke tests with real daemons and raw RPCs (issue 6): a cluster comes up, a replicated
// table is created, written and scanned; leaders fail over after kill -9; a paused follower does
// not disrupt its leader; data survives restarting every process; malformed requests get clear
// errors and the daemons keep serving.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "rpc/rpc_status.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/cluster_test_util.h"

namespace basalt::cluster_test {
namespace {
namespace cluster_smoke_test_file {

// The shared assertion (common/status_test_util.h) under the short name these tests use.
#define ASSERT_OK(expr) BASALT_ASSERT_OK(expr)

constexpr absl::Duration kTimeout = absl::Seconds(60);

std::string RowsDiff(const std::vector<TestRow>& got, const std::vector<TestRow>& want) {
  std::string out = StrCat("got ", got.size(), " rows, want ", want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (!(got[i] == want[i])) {
      StrAppend(&out, "; first difference at ", i, ": ", RowToString(got[i]), " vs ",
                RowToString(want[i]));
      break;
    }
  }
  return out;
}

class ClusterSmokeTest : public ::testing::Test {
 protected:
  void SetUp() override { start_ = absl::Now(); }

  void TearDown() override {
    if (cluster_ != nullptr) {
      BASALT_EXPECT_OK(cluster_->CheckNoDaemonDied()) << cluster_->CheckNoDaemonDied();
      if (HasFailure()) cluster_->set_keep_root_dir(true);
      cluster_.reset();
    }
    LOG(INFO) << ::testing::UnitTest::GetInstance()->current_test_info()->name() << " took "
              << absl::FormatDuration(absl::Now() - start_);
  }

  static ExternalMiniClusterOptions Options() {
    ExternalMiniClusterOptions o;
    // Ticks of 200 ms: elections after 0.6-1.2 s instead of 1.5-3 s (docs/raft.md).
    o.extra_tserver_flags = {"--raft_heartbeat_interval_ms=200"};
    return o;
  }

  void StartCluster(ExternalMiniClusterOptions o = Options()) {
    cluster_ = std::make_unique<ExternalMiniCluster>(std::move(o));
    absl::Status s = cluster_->Start();
    BASALT_ASSERT_OK(s);
  }

  std::unique_ptr<TestTable> CreateTable(const TestTableSpec& spec) {
    auto table = TestTable::Create(cluster_.get(), spec, kTimeout);
    BASALT_EXPECT_OK(table);
    return table.ok() ? *std::move(table) : nullptr;
  }

  // Waits until the replica of every tablet on tablet server `ts` holds exactly the rows of
  // `want` that belong to the tablet.
  void WaitForReplicasToMatch(TestTable* table, int ts, const std::vector<TestRow>& want) {
    for (size_t t = 0; t < table->tablets().size(); ++t) {
      std::vector<TestRow> expected;
      for (const TestRow& r : want) {
        if (table->TabletIndexForKey(r.key) == static_cast<int>(t)) expected.push_back(r);
      }
      absl::Status s = WaitFor(kTimeout, StrCat("ts-", ts, " to catch up on tablet ", t), [&] {
        auto rows = table->ScanTablet(static_cast<int>(t), ts);
        if (!rows.ok()) return rows.status();
        return *rows == expected ? absl::OkStatus()
                                 : absl::UnavailableError(RowsDiff(*rows, expected));
      });
      BASALT_ASSERT_OK(s);
    }
  }

  void ExpectAllRows(TestTable* table, const std::vector<TestRow>& want) {
    auto rows = table->ScanAll(kTimeout);
    BASALT_ASSERT_OK(rows);
    EXPECT_TRUE(*rows == want) << RowsDiff(*rows, want);
  }

  absl::Time start_;
  std::unique_ptr<ExternalMiniCluster> cluster_;
};

TEST_F(ClusterSmokeTest, OneMasterAndThreeTabletServersComeUp) {
  StartCluster();
  pb::ListTabletServersResponsePB resp;
  ASSERT_OK(cluster_->ListTabletServers(&resp));
  ASSERT_EQ(resp.servers_size(), 3);
  std::set<std::string> uuids;
  for (const auto& ts : resp.servers()) {
    EXPECT_TRUE(ts.live()) << ts.ShortDebugString();
    int idx = cluster_->TabletServerIndexByUuid(ts.uuid());
    ASSERT_GE(idx, 0) << ts.ShortDebugString();
    EXPECT_EQ(ts.rpc_address().port(), cluster_->tablet_server(idx)->rpc_port());
    uuids.insert(ts.uuid());
  }
  EXPECT_EQ(uuids.size(), 3u);
}

TEST_F(ClusterSmokeTest, CreateTableWriteAndScan) {
  StartCluster();
  auto table = CreateTable({.name = "smoke", .hash_buckets = 2, .split_keys = {100, 200}});
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->tablets().size(), 6u);
  std::set<std::string> ts_uuids;
  for (int i = 0; i < 3; ++i) ts_uuids.insert(cluster_->tablet_server(i)->uuid());
  // Every tablet has three replicas on three servers, and (once reported) a leader.
  ASSERT_OK(WaitFor(kTimeout, "every tablet to report a leader", [&]() -> absl::Status {
    auto locs = table->LoadLocations();
    if (!locs.ok()) return locs.status();
    if (locs->tablet_locations_size() != 6) return absl::InternalError("tablet count changed");
    for (const auto& loc : locs->tablet_locations()) {
      std::set<std::string> replicas;
      int leaders = 0;
      for (const auto& r : loc.replicas()) {
        if (ts_uuids.count(r.ts_uuid()) == 0) {
          return absl::InternalError(StrCat("unknown replica uuid ", r.ts_uuid()));
        }
        replicas.insert(r.ts_uuid());
        leaders += r.role() == pb::LEADER ? 1 : 0;
      }
      if (replicas.size() != 3) {
        return absl::InternalError(StrCat(loc.tablet_id(), " has ", replicas.size(),
                                          " distinct replicas: ", loc.ShortDebugString()));
      }
      if (leaders != 1) {
        return absl::UnavailableError(StrCat(loc.tablet_id(), ": ", leaders, " leaders"));
      }
    }
    return absl::OkStatus();
  }));

  std::vector<TestRow> rows = MakeRows(0, 300);
  ASSERT_OK(table->Write(RowOperationType::kInsert, rows, kTimeout));
  std::set<int> tablets_written;
  for (const TestRow& r : rows) tablets_written.insert(table->TabletIndexForKey(r.key));
  EXPECT_EQ(tablets_written.size(), 6u);
  ExpectAllRows(table.get(), rows);
  // Every replica applies what the leader committed.
  for (int ts = 0; ts < 3; ++ts) WaitForReplicasToMatch(table.get(), ts, rows);

  // Inserting existing keys fails per row; the other rows of the batch are applied.
  std::vector<TestRow> dup = {MakeRow(5, 1), MakeRow(1000), MakeRow(150, 1)};
  std::vector<RowError> errors;
  ASSERT_OK(table->Write(RowOperationType::kInsert, dup, kTimeout, &errors));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].first, 0);
  EXPECT_EQ(errors[0].second.code(), absl::StatusCode::kAlreadyExists) << errors[0].second;
  EXPECT_EQ(errors[1].first, 2);
  EXPECT_EQ(errors[1].second.code(), absl::StatusCode::kAlreadyExists) << errors[1].second;
  rows.push_back(MakeRow(1000));
  ExpectAllRows(table.get(), rows);

  // Replicas agree on a checksum at the leader's snapshot. A follower serves a snapshot once it
  // has applied an op at or after it, so later upserts (invisible at the snapshot) are written
  // first.
  std::vector<std::pair<uint64_t, pb::ChecksumResponsePB>> at_leader;
  for (size_t t = 0; t < table->tablets().size(); ++t) {
    auto leader = table->LeaderOf(static_cast<int>(t), kTimeout);
    BASALT_ASSERT_OK(leader);
    auto sum = ChecksumReplica(cluster_.get(), *leader, table->tablets()[t].tablet_id, 0);
    BASALT_ASSERT_OK(sum);
    at_leader.emplace_back(sum->snap_timestamp(), *sum);
  }
  ASSERT_OK(table->Write(RowOperationType::kUpsert, MakeRows(0, 300, /*version=*/1), kTimeout));
  uint64_t total_rows = 0;
  for (size_t t = 0; t < table->tablets().size(); ++t) {
    const uint64_t snap = at_leader[t].first;
    const pb::ChecksumResponsePB& want = at_leader[t].second;
    total_rows += want.num_rows();
    for (int ts = 0; ts < 3; ++ts) {
      pb::ChecksumResponsePB got;
      ASSERT_OK(WaitFor(kTimeout, "a replica checksum", [&]() -> absl::Status {
        auto sum = ChecksumReplica(cluster_.get(), ts, table->tablets()[t].tablet_id, snap);
        if (sum.ok()) got = *sum;
        return sum.status();
      }));
      EXPECT_EQ(got.checksum(), want.checksum()) << "tablet " << t << " on ts-" << ts;
      EXPECT_EQ(got.num_rows(), want.num_rows()) << "tablet " << t << " on ts-" << ts;
    }
  }
  EXPECT_EQ(total_rows, rows.size());
}

TEST_F(ClusterSmokeTest, KilledLeaderIsReplacedAndRejoinsAfterRestart) {
  StartCluster();
  auto table = CreateTable({.name = "failover", .hash_buckets = 3});
  ASSERT_NE(table, nullptr);
  std::vector<TestRow> rows = MakeRows(0, 100);
  ASSERT_OK(table->Write(RowOperationType::kInsert, rows, kTimeout));

  auto first = cluster_->WaitForTabletLeader(table->tablets()[0].tablet_id, kTimeout);
  BASALT_ASSERT_OK(first);
  const int victim = first->ts_index;
  // Every tablet the victim leads, with its term.
  std::vector<std::pair<std::string, uint64_t>> led;
  for (const auto& t : table->tablets()) {
    auto leader = cluster_->WaitForTabletLeader(t.tablet_id, kTimeout);
    BASALT_ASSERT_OK(leader);
    if (leader->ts_index == victim) led.emplace_back(t.tablet_id, leader->term);
  }
  ASSERT_FALSE(led.empty());

  const absl::Time kill_time = absl::Now();
  cluster_->tablet_server(victim)->Kill();
  for (const auto& [tablet_id, term] : led) {
    auto leader = cluster_->WaitForTabletLeader(tablet_id, kTimeout, term + 1, victim);
    BASALT_ASSERT_OK(leader);
  }
  LOG(INFO) << "new leaders elected " << absl::FormatDuration(absl::Now() - kill_time)
            << " after kill -9";
  for (size_t t = 0; t < table->tablets().size(); ++t) table->ForgetLeader(static_cast<int>(t));
  std::vector<TestRow> more = MakeRows(100, 100);
  ASSERT_OK(table->Write(RowOperationType::kInsert, more, kTimeout));
  rows.insert(rows.end(), more.begin(), more.end());
  ExpectAllRows(table.get(), rows);

  ASSERT_OK(cluster_->tablet_server(victim)->Restart());
  ASSERT_OK(cluster_->WaitForTabletServerCount(3, kTimeout));
  std::vector<int> victim_only = {victim};
  for (const auto& t : table->tablets()) {
    ASSERT_OK(cluster_->WaitForTabletRunning(t.tablet_id, victim_only, kTimeout));
  }
  WaitForReplicasToMatch(table.get(), victim, rows);
}

TEST_F(ClusterSmokeTest, PausedFollowerDoesNotDisruptTheLeader) {
  StartCluster();
  auto table = CreateTable({.name = "pause", .hash_buckets = 2});
  ASSERT_NE(table, nullptr);
  std::vector<TestRow> rows = MakeRows(0, 50);
  ASSERT_OK(table->Write(RowOperationType::kInsert, rows, kTimeout));
  const std::string tablet_id = table->tablets()[0].tablet_id;
  auto leader = cluster_->WaitForTabletLeader(tablet_id, kTimeout);
  BASALT_ASSERT_OK(leader);
  int follower = -1;
  for (const std::string& uuid : table->tablets()[0].replica_uuids) {
    int idx = cluster_->TabletServerIndexByUuid(uuid);
    if (idx != leader->ts_index) follower = idx;
  }
  ASSERT_GE(follower, 0);

  // Paused for 3 s: well past the election timeout (0.6-1.2 s with 200 ms ticks). The leader
  // keeps a majority and keeps taking writes meanwhile.
  ASSERT_OK(cluster_->tablet_server(follower)->Pause());
  const absl::Time resume_at = absl::Now() + absl::Seconds(3);
  int32_t next_key = 1000;
  while (absl::Now() < resume_at) {
    // Rows of tablet 0 only: the paused server may lead the other tablet, and a write sent to a
    // stopped process just hangs until its deadline.
    std::vector<TestRow> batch;
    for (; batch.size() < 10; ++next_key) {
      if (table->TabletIndexForKey(next_key) == 0) batch.push_back(MakeRow(next_key));
    }
    ASSERT_OK(table->Write(RowOperationType::kInsert, batch, kTimeout));
    rows.insert(rows.end(), batch.begin(), batch.end());
  }
  ASSERT_OK(cluster_->tablet_server(follower)->Resume());

  WaitForReplicasToMatch(table.get(), follower, rows);
  auto after = cluster_->FindTabletLeader(tablet_id);
  BASALT_ASSERT_OK(after);
  EXPECT_EQ(after->ts_index, leader->ts_index);
  EXPECT_EQ(after->term, leader->term) << "the resumed follower disrupted the leader";
  std::vector<TestRow> last = MakeRows(next_key, 10);  // Both tablets again.
  ASSERT_OK(table->Write(RowOperationType::kInsert, last, kTimeout));
  rows.insert(rows.end(), last.begin(), last.end());
  ExpectAllRows(table.get(), rows);
}

TEST_F(ClusterSmokeTest, RowsSurviveRestartingEveryProcess) {
  StartCluster();
  auto table = CreateTable({.name = "restart", .hash_buckets = 2, .split_keys = {250}});
  ASSERT_NE(table, nullptr);
  std::vector<TestRow> rows = MakeRows(0, 500);
  ASSERT_OK(table->Write(RowOperationType::kInsert, rows, kTimeout));

  const absl::Time t0 = absl::Now();
  ASSERT_OK(cluster_->Restart());  // SIGTERM and start again.
  for (size_t t = 0; t < table->tablets().size(); ++t) table->ForgetLeader(static_cast<int>(t));
  ExpectAllRows(table.get(), rows);
  LOG(INFO) << "graceful restart to full scan: " << absl::FormatDuration(absl::Now() - t0);

  // kill -9 everything: acknowledged writes are in a majority's fsynced WAL.
  std::vector<TestRow> more = MakeRows(500, 100);
  ASSERT_OK(table->Write(RowOperationType::kInsert, more, kTimeout));
  rows.insert(rows.end(), more.begin(), more.end());
  cluster_->KillAll();
  ASSERT_OK(cluster_->Start());
  for (size_t t = 0; t < table->tablets().size(); ++t) table->ForgetLeader(static_cast<int>(t));
  ExpectAllRows(table.get(), rows);
  // The catalog survived too: the master still knows the table and its tablets.
  auto locs = table->LoadLocations();
  BASALT_ASSERT_OK(locs);
  EXPECT_EQ(locs->tablet_locations_size(), 4);
}

// Sends `req` to the leader of tablet 0 of `table` and returns the status.
absl::Status WriteRaw(ExternalMiniCluster* cluster, TestTable* table, const pb::WriteRequestPB& req,
                      pb::WriteResponsePB* resp) {
  auto ts = table->LeaderOf(0, kTimeout);
  if (!ts.ok()) return ts.status();
  auto stub = pb::TabletServerService::NewStub(cluster->tserver_channel(*ts));
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  return FromGrpcStatus(stub->Write(&ctx, req, resp));
}

void ExpectCode(const absl::Status& s, absl::StatusCode code, int detail = -1) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_FALSE(s.message().empty()) << s;
  if (detail >= 0) {
    EXPECT_EQ(ErrorDetailCode(s), detail) << s;
  }
}

TEST_F(ClusterSmokeTest, MalformedRequestsGetClearErrorsAndDaemonsKeepServing) {
  StartCluster();
  auto master = pb::MasterService::NewStub(cluster_->master_channel());
  auto create = [&](const pb::CreateTableRequestPB& req) {
    pb::CreateTableResponsePB resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    return FromGrpcStatus(master->CreateTable(&ctx, req, &resp));
  };
  pb::CreateTableRequestPB good;
  BuildCreateTableRequest({.name = "bad"}, &good);
  {
    pb::CreateTableRequestPB req = good;  // No columns.
    req.mutable_schema()->clear_columns();
    ExpectCode(create(req), absl::StatusCode::kInvalidArgument);
    req = good;  // A nullable key column.
    req.mutable_schema()->mutable_columns(0)->set_is_nullable(true);
    ExpectCode(create(req), absl::StatusCode::kInvalidArgument);
    req = good;  // Duplicate column names.
    req.mutable_schema()->mutable_columns(2)->set_name("int_val");
    ExpectCode(create(req), absl::StatusCode::kInvalidArgument);
    req = good;  // Unknown type.
    req.mutable_schema()->mutable_columns(1)->set_type(static_cast<pb::DataType>(99));
    ExpectCode(create(req), absl::StatusCode::kInvalidArgument);
    req = good;  // Hash on a column that does not exist.
    req.mutable_partition_schema()->mutable_hash_schema(0)->mutable_columns(0)->set_name("nope");
    ExpectCode(create(req), absl::StatusCode::kInvalidArgument);
    req = good;  // Garbage split rows.
    req.mutable_split_rows_range_bounds()->set_rows("\x08\xff\xff\xff");
    ExpectCode(create(req), absl::StatusCode::kInvalidArgument);
    req = good;  // An even replication factor.
    req.set_num_replicas(2);
    ExpectCode(create(req), absl::StatusCode::kInvalidArgument);
  }
  {
    pb::GetTableLocationsRequestPB req;
    req.mutable_table()->set_table_name("no-such-table");
    pb::GetTableLocationsResponsePB resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    ExpectCode(FromGrpcStatus(master->GetTableLocations(&ctx, req, &resp)),
               absl::StatusCode::kNotFound, pb::ErrorDetailPB::TABLE_NOT_FOUND);
  }

  auto table = CreateTable({.name = "target", .hash_buckets = 2});
  ASSERT_NE(table, nullptr);
  pb::WriteRequestPB valid;
  table->BuildWrite(0, RowOperationType::kInsert, {MakeRow(1)}, &valid);
  pb::WriteResponsePB resp;
  {
    pb::WriteRequestPB req = valid;  // Bad row bytes.
    req.mutable_row_operations()->set_rows("\x01\xff");
    ExpectCode(WriteRaw(cluster_.get(), table.get(), req, &resp),
               absl::StatusCode::kInvalidArgument);
    req = valid;  // Truncated row.
    req.mutable_row_operations()->mutable_rows()->pop_back();
    ExpectCode(WriteRaw(cluster_.get(), table.get(), req, &resp),
               absl::StatusCode::kInvalidArgument);
    req = valid;  // Unknown tablet.
    req.set_tablet_id("0123456789abcdef0123456789abcdef");
    ExpectCode(WriteRaw(cluster_.get(), table.get(), req, &resp), absl::StatusCode::kNotFound,
               pb::ErrorDetailPB::TABLET_NOT_FOUND);
  }
  // The schema of another table.
  {
    pb::CreateTableRequestPB other = good;
    other.set_name("other");
    other.mutable_schema()->mutable_columns(2)->set_type(pb::INT64);
    ASSERT_OK(create(other));
    pb::GetTableSchemaRequestPB sreq;
    sreq.mutable_table()->set_table_name("other");
    pb::GetTableSchemaResponsePB sresp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    ASSERT_OK(FromGrpcStatus(master->GetTableSchema(&ctx, sreq, &sresp)));
    pb::WriteRequestPB req = valid;
    *req.mutable_schema() = sresp.schema();
    ExpectCode(WriteRaw(cluster_.get(), table.get(), req, &resp),
               absl::StatusCode::kFailedPrecondition, pb::ErrorDetailPB::SCHEMA_MISMATCH);
  }
  // Random row bytes: a clean error (or, rarely, a valid operation), never a crash.
  Random rnd(SeedFromEnvOrTime());
  for (int i = 0; i < 100; ++i) {
    pb::WriteRequestPB req = valid;
    std::string* bytes = req.mutable_row_operations()->mutable_rows();
    if (rnd.OneIn(2)) {
      (*bytes)[rnd.Uniform(bytes->size())] = static_cast<char>(rnd.Next32());
    } else {
      *bytes = rnd.Bytes(rnd.Uniform(64));
    }
    absl::Status s = WriteRaw(cluster_.get(), table.get(), req, &resp);
    if (!s.ok()) ExpectCode(s, absl::StatusCode::kInvalidArgument);
  }
  // Scans: unknown tablet, unknown scanner, unknown column.
  {
    auto ts = pb::TabletServerService::NewStub(cluster_->tserver_channel(0));
    auto scan = [&](const pb::ScanRequestPB& req) {
      pb::ScanResponsePB sresp;
      grpc::ClientContext ctx;
      SetDeadline(&ctx);
      return FromGrpcStatus(ts->Scan(&ctx, req, &sresp));
    };
    pb::ScanRequestPB req;
    req.mutable_new_scan_request()->set_tablet_id("no-such-tablet");
    ExpectCode(scan(req), absl::StatusCode::kNotFound, pb::ErrorDetailPB::TABLET_NOT_FOUND);
    req.Clear();
    req.set_scanner_id("no-such-scanner");
    ExpectCode(scan(req), absl::StatusCode::kNotFound, pb::ErrorDetailPB::SCANNER_EXPIRED);
    req.Clear();
    req.mutable_new_scan_request()->set_tablet_id(table->tablets()[0].tablet_id);
    auto* col = req.mutable_new_scan_request()->add_projected_columns();
    col->set_name("no_such_column");
    col->set_type(pb::INT32);
    ExpectCode(scan(req), absl::StatusCode::kInvalidArgument);
  }
  // A CreateTablet addressed to another server.
  {
    auto admin = pb::TabletServerAdminService::NewStub(cluster_->tserver_channel(0));
    pb::CreateTabletRequestPB req;
    req.set_dest_uuid("someone-else");
    req.set_tablet_id("t");
    pb::CreateTabletResponsePB cresp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    ExpectCode(FromGrpcStatus(admin->CreateTablet(&ctx, req, &cresp)),
               absl::StatusCode::kFailedPrecondition, pb::ErrorDetailPB::WRONG_SERVER_UUID);
  }
  // Everything still serves.
  ASSERT_OK(cluster_->CheckNoDaemonDied());
  std::vector<TestRow> rows = MakeRows(0, 20);
  ASSERT_OK(table->Write(RowOperationType::kUpsert, rows, kTimeout));
  auto all = table->ScanAll(kTimeout);
  BASALT_ASSERT_OK(all);
  // The fuzzed writes may have inserted a few other keys; the upserted ones must be exact.
  std::vector<TestRow> upserted;
  for (const TestRow& r : *all) {
    if (r.key >= 0 && r.key < 20) upserted.push_back(r);
  }
  EXPECT_TRUE(upserted == rows) << RowsDiff(upserted, rows);
}

}  // namespace cluster_smoke_test_file
}  // namespace
}  // namespace basalt::cluster_test
