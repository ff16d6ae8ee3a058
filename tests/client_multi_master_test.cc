// Several masters (docs/master.md "Several masters"): three basalt-master processes form one
// catalog group; the leader serves, followers redirect, and killing the leader loses nothing.

#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/client.h"
#include "common/env.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "proto/master.grpc.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "testing/external_mini_cluster.h"
#include "tests/cli_test_util.h"
#include "tests/client_test_util.h"

namespace basalt::client_test {
namespace {
namespace client_multi_master_test_file {

using client::Client;
using client::ClientBuilder;
using client::Table;

class MultiMasterTest : public ClientClusterTestBase {
 protected:
  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = ClientClusterTestBase::ClusterOptions();
    o.num_masters = 3;
    return o;
  }

  // Writes keys [begin, end) of the test table.
  void Write(Table* table, int32_t begin, int32_t end) {
    auto session = client_->NewSession();
    ASSERT_OK(session->SetFlushMode(client::Session::AUTO_FLUSH_BACKGROUND));
    for (int32_t k = begin; k < end; ++k) {
      ASSERT_OK(ApplyOp(session.get(), table, client::WriteOperation::INSERT, Expected(k)));
    }
    ASSERT_OK(session->Flush());
  }

  void ExpectRows(Table* table, int32_t n) {
    std::vector<Row> rows;
    ASSERT_OK(ScanRows(table, nullptr, &rows));
    std::vector<Row> want;
    for (int32_t k = 0; k < n; ++k) want.push_back(Expected(k));
    EXPECT_EQ(SortedByKey(rows), want) << Diff(SortedByKey(rows), want);
  }

  pb::ListMastersResponsePB ListMasters(int idx) {
    auto stub = pb::MasterService::NewStub(cluster_->master_channel(idx));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::ListMastersResponsePB resp;
    absl::Status s = FromGrpcStatus(stub->ListMasters(&ctx, pb::ListMastersRequestPB(), &resp));
    BASALT_EXPECT_OK(s);
    return resp;
  }
};

TEST_F(MultiMasterTest, OneLeaderFollowersRedirect) {
  auto leader = cluster_->WaitForLeaderMaster(absl::Seconds(30));
  BASALT_ASSERT_OK(leader);
  // Every master lists all three, with exactly one leader.
  for (int i = 0; i < 3; ++i) {
    pb::ListMastersResponsePB resp = ListMasters(i);
    ASSERT_EQ(resp.masters_size(), 3);
    int leaders = 0;
    for (const auto& m : resp.masters()) leaders += m.role() == pb::LEADER ? 1 : 0;
    EXPECT_EQ(leaders, 1) << resp.DebugString();
  }
  // A follower refuses catalog requests, naming the leader's address.
  const int follower = (*leader + 1) % 3;
  auto stub = pb::MasterService::NewStub(cluster_->master_channel(follower));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pb::ListTablesResponsePB resp;
  absl::Status s = FromGrpcStatus(stub->ListTables(&ctx, pb::ListTablesRequestPB(), &resp));
  ASSERT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  auto detail = GetErrorDetail(s);
  ASSERT_TRUE(detail.has_value()) << s;
  EXPECT_EQ(detail->code(), pb::ErrorDetailPB::NOT_THE_LEADER_MASTER);
  EXPECT_EQ(HostPort::FromPB(detail->leader_address()).ToString(),
            cluster_->master(*leader)->rpc_address());
}

TEST_F(MultiMasterTest, LeaderKillLosesNothing) {
  std::shared_ptr<Table> t1;
  ASSERT_NO_FATAL_FAILURE(CreateTable("t1", 3, {}, &t1));
  ASSERT_NO_FATAL_FAILURE(Write(t1.get(), 0, 500));

  // kill -9 the leader: another master takes over with the whole catalog.
  auto leader = cluster_->WaitForLeaderMaster(absl::Seconds(30));
  BASALT_ASSERT_OK(leader);
  cluster_->master(*leader)->Kill();
  std::shared_ptr<Table> t2;
  ASSERT_NO_FATAL_FAILURE(CreateTable("t2", 2, {}, &t2));  // Through the new leader.
  auto next = cluster_->WaitForLeaderMaster(absl::Seconds(30));
  BASALT_ASSERT_OK(next);
  EXPECT_NE(*next, *leader);
  ASSERT_NO_FATAL_FAILURE(Write(t1.get(), 500, 1000));
  ASSERT_NO_FATAL_FAILURE(ExpectRows(t1.get(), 1000));
  // A new client finds the tablets through the new leader.
  std::shared_ptr<Client> fresh;
  ASSERT_OK(ClientBuilder().add_master_server_addr(cluster_->master_addresses()).Build(&fresh));
  std::shared_ptr<Table> t1_again;
  ASSERT_OK(fresh->OpenTable("t1", &t1_again));
  ASSERT_NO_FATAL_FAILURE(ExpectRows(t1_again.get(), 1000));
  // ksck reports the dead master (and only that).
  CliResult ksck =
      RunBasalt({"cluster", "ksck", cluster_->master_addresses()}, cluster_->root_dir());
  EXPECT_EQ(ksck.rc, 1) << ksck.out << ksck.err;
  EXPECT_NE(ksck.out.find(
                StrCat("master ", cluster_->master(*leader)->rpc_address(), " does not answer")),
            std::string::npos)
      << ksck.out;
  EXPECT_NE(ksck.err.find("0 of 5 tablet(s) and 1 problem(s) with the masters"), std::string::npos)
      << ksck.err;
  // The dead master is listed with why its role is unknown.
  pb::ListMastersResponsePB listing = ListMasters(*next);
  int unknown = 0;
  for (const auto& m : listing.masters()) {
    if (m.role() == pb::UNKNOWN_ROLE) {
      ++unknown;
      EXPECT_FALSE(m.error().empty());
    }
  }
  EXPECT_EQ(unknown, 1) << listing.DebugString();

  // The killed master comes back and catches up: with the other survivor it is a majority.
  ASSERT_OK(cluster_->master(*leader)->Restart());
  const int other = 3 - *leader - *next;
  cluster_->master(other)->Kill();
  std::shared_ptr<Table> t3;
  ASSERT_NO_FATAL_FAILURE(CreateTable("t3", 0, {}, &t3));
  std::vector<std::string> tables;
  ASSERT_OK(client_->ListTables(&tables));
  std::sort(tables.begin(), tables.end());
  EXPECT_EQ(tables, (std::vector<std::string>{"t1", "t2", "t3"}));
  ASSERT_OK(cluster_->master(other)->Restart());
}

// Rounds of: kill -9 a master (the leader, or a random one), DDL through whoever leads now
// (create a table, alter one), then the killed master comes back. After every round the master
// that serves lists exactly the tables created so far, with every column added: each new leader
// has the whole catalog, including what was written while it was down. Seeded (BASALT_TEST_SEED).
TEST_F(MultiMasterTest, RandomMasterKillsUnderDdl) {
  Random rng(SeedFromEnvOrTime());
  std::vector<std::string> expected;
  std::map<std::string, int> extra_columns;
  for (int round = 0; round < 6; ++round) {
    auto leader = cluster_->WaitForLeaderMaster(absl::Seconds(30));
    BASALT_ASSERT_OK(leader);
    const int victim = rng.Uniform(2) == 0 ? *leader : static_cast<int>(rng.Uniform(3));
    cluster_->master(victim)->Kill();
    const std::string name = StrCat("r", round);
    std::shared_ptr<Table> table;
    // A new leader may be the master restarted last round, which tablet servers heartbeat again
    // only after their backoff (up to --heartbeat_max_failure_backoff_ms): placing 3 replicas
    // needs it to see all three live.
    BASALT_ASSERT_OK(cluster_->WaitForTabletServerCount(3, absl::Seconds(60)));
    ASSERT_NO_FATAL_FAILURE(CreateTable(name, 0, {}, &table));
    expected.push_back(name);
    const std::string altered = expected[rng.Uniform(expected.size())];
    auto alterer = client_->NewTableAlterer(altered);
    alterer->AddColumn(StrCat("c", round))->Type(client::ColumnSchema::INT32)->Nullable();
    ASSERT_OK(alterer->Alter());
    ++extra_columns[altered];
    ASSERT_OK(cluster_->master(victim)->Restart());

    std::vector<std::string> tables;
    ASSERT_OK(client_->ListTables(&tables));
    std::sort(tables.begin(), tables.end());
    std::vector<std::string> want = expected;
    std::sort(want.begin(), want.end());
    ASSERT_EQ(tables, want) << "round " << round << ", killed master " << victim;
    for (const auto& [t, n] : extra_columns) {
      client::Schema schema;
      ASSERT_OK(client_->GetTableSchema(t, &schema));
      EXPECT_EQ(schema.num_columns(), 3 + n) << t << " after round " << round;
    }
  }
}

TEST_F(MultiMasterTest, RefusesADifferentSetOfMasters) {
  // Restarted with only two of the three addresses: it refuses to start rather than split the
  // catalog group.
  ExternalDaemon* m = cluster_->master(2);
  const std::vector<std::string> flags = m->flags();
  std::vector<std::string> parts = absl::StrSplit(cluster_->master_addresses(), ',');
  ASSERT_EQ(parts.size(), 3u);
  absl::Status s = m->Restart({StrCat("--master_addresses=", parts[0], ",", parts[2])});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("differs from the masters"), std::string::npos) << s;
  // With the right flags it starts again and the group has its three masters.
  m->set_flags(flags);
  ASSERT_OK(m->Start());
  std::vector<std::string> tables;
  ASSERT_OK(client_->ListTables(&tables));

  // A master whose data directory was wiped does not quietly form a group of its own: the others
  // formed one without its new uuid.
  m->Kill();
  const std::string saved = m->data_dir() + ".saved";
  std::filesystem::rename(m->data_dir(), saved);
  s = m->Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("already belongs to a catalog group without this master"),
            std::string::npos)
      << s;
  ASSERT_OK(client_->ListTables(&tables));  // The two others still serve.
  // Restored, it rejoins.
  ASSERT_OK(Env::Default()->DeleteDirRecursively(m->data_dir()));
  std::filesystem::rename(saved, m->data_dir());
  ASSERT_OK(m->Start());
}

}  // namespace client_multi_master_test_file
}  // namespace
}  // namespace basalt::client_test
