// Network partitions between real daemons (docs/testing.md "Network partitions"): every daemon
// runs on a host of its own (a network namespace, src/testing/netns.h), and the tests cut the
// network between hosts while the test process still reaches all of them.
//
// - An isolated tablet leader steps down (check-quorum) within two election timeouts, the
//   majority elects a new leader, and the minority never acknowledges a write.
// - One-way cuts between a leader and its followers (either direction) still end with exactly one
//   leader accepting writes, and lose no acknowledged write.
// - An isolated leader master steps down, the other two elect a new one, and DDL works.
//
// Where network namespaces cannot be made (not root, no `ip`), every test skips with the reason.

#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/master.grpc.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "rpc/rpc_status.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/client_test_util.h"
#include "tests/client_writer_util.h"
#include "tests/cluster_test_util.h"

namespace basalt::client_test {
namespace {
namespace partition_test_file {

using client::Session;
using client::Table;
using client::WriteOperation;

// Raft timing of the test clusters' tablets: one tick is --raft_heartbeat_interval_ms (200 ms,
// ClientClusterTestBase), the election timeout RaftOptions::election_ticks (3) ticks, randomized
// up to twice that (0.6-1.2 s). A leader checks its quorum once per base election timeout, so an
// isolated leader steps down at most two base timeouts (1.2 s) after the cut. The tests allow two
// maximal election timeouts (2.4 s): room for a loaded machine, and still far below the time a
// leader without check-quorum would keep leading (until it hears of a higher term: forever).
constexpr absl::Duration kRaftTick = absl::Milliseconds(200);
const absl::Duration kMaxElectionTimeout = 2 * 3 * kRaftTick;
// Masters with several peers: 100 ms ticks (--master_catalog_tick_interval_ms), an election
// timeout of 10 ticks (SysCatalog), randomized up to twice that (1-2 s).
const absl::Duration kMasterMaxElectionTimeout = 2 * 10 * absl::Milliseconds(100);
// How often the step-down polls ask: fine enough to measure the step-down time.
constexpr absl::Duration kPollInterval = absl::Milliseconds(20);

class PartitionTest : public ClientClusterTestBase {
 protected:
  void SetUp() override {
    absl::Status available = ExternalMiniCluster::NetworkNamespacesAvailable();
    if (!available.ok()) {
      GTEST_SKIP() << "partition tests need network namespaces: " << available;
    }
    ClientClusterTestBase::SetUp();
  }

  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = ClientClusterTestBase::ClusterOptions();
    o.network_namespaces = true;
    return o;
  }

  // Inserts Expected(k) for k in [begin, end) through the client; every row must be acknowledged.
  void WriteRows(Table* table, int32_t begin, int32_t end) {
    auto session = client_->NewSession();
    ASSERT_OK(session->SetFlushMode(Session::AUTO_FLUSH_BACKGROUND));
    session->SetTimeoutMillis(30000);
    for (int32_t k = begin; k < end; ++k) {
      ASSERT_OK(ApplyOp(session.get(), table, WriteOperation::INSERT, Expected(k)));
    }
    ASSERT_OK(session->Flush());
  }

  // The role of tablet server `ts`'s replica of `tablet_id`, as ListTablets reports it.
  // Waits until tablet server `ts`'s replica of `tablet_id` follows at `term`.
  absl::Status WaitForFollower(int ts, const std::string& tablet_id, uint64_t term) {
    return WaitFor(absl::Seconds(30), "the old leader to follow the new one", [&] {
      auto replica = Replica(ts, tablet_id);
      if (!replica.ok()) return replica.status();
      if (replica->role() == pb::FOLLOWER && replica->term() == term) return absl::OkStatus();
      return absl::UnavailableError(
          StrCat(pb::RaftRolePB_Name(replica->role()), " at term ", replica->term()));
    });
  }

  absl::StatusOr<pb::TabletStatusPB> Replica(int ts, const std::string& tablet_id) {
    pb::ListTabletsResponsePB resp;
    BASALT_RETURN_IF_ERROR(cluster_->ListTablets(ts, &resp));
    for (const auto& t : resp.tablets()) {
      if (t.tablet_id() == tablet_id) return t;
    }
    return absl::NotFoundError(StrCat("ts-", ts, " has no replica of ", tablet_id));
  }

  // Polls every kPollInterval until tablet server `ts`'s replica no longer reports LEADER;
  // returns how long after `since` that was seen.
  absl::StatusOr<absl::Duration> WaitUntilNotLeader(int ts, const std::string& tablet_id,
                                                    absl::Time since, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    std::string last;
    while (true) {
      auto replica = Replica(ts, tablet_id);
      const absl::Time seen = absl::Now();
      if (replica.ok() && replica->role() != pb::LEADER) {
        LOG(INFO) << "ts-" << ts << " reports " << pb::RaftRolePB_Name(replica->role())
                  << " at term " << replica->term() << ", " << absl::FormatDuration(seen - since)
                  << " after the cut";
        return seen - since;
      }
      last =
          replica.ok() ? StrCat("LEADER at term ", replica->term()) : replica.status().ToString();
      if (seen >= deadline) {
        return absl::DeadlineExceededError(StrCat(
            "ts-", ts, " still leads tablet ", tablet_id, " ", absl::FormatDuration(seen - since),
            " after the cut; last: ", last, "\n", cluster_->tablet_server(ts)->LogTail(30)));
      }
      absl::SleepFor(kPollInterval);
    }
  }

  // The tablet servers whose replicas of `tablet_id` report LEADER.
  std::vector<int> Leaders(const std::string& tablet_id) {
    std::vector<int> leaders;
    for (int ts = 0; ts < cluster_->num_tablet_servers(); ++ts) {
      auto replica = Replica(ts, tablet_id);
      if (replica.ok() && replica->role() == pb::LEADER) leaders.push_back(ts);
    }
    return leaders;
  }

  // Waits until every replica of `tablet_id` has the leader's checksum (and row count) at the
  // leader's snapshot; returns the row count.
  absl::StatusOr<uint64_t> WaitForReplicasToConverge(const std::string& tablet_id) {
    BASALT_ASSIGN_OR_RETURN(TabletLeader leader,
                            cluster_->WaitForTabletLeader(tablet_id, absl::Seconds(30)));
    BASALT_ASSIGN_OR_RETURN(
        pb::ChecksumResponsePB want,
        cluster_test::ChecksumReplica(cluster_.get(), leader.ts_index, tablet_id, 0));
    for (int ts = 0; ts < cluster_->num_tablet_servers(); ++ts) {
      BASALT_RETURN_IF_ERROR(WaitFor(
          absl::Seconds(30), StrCat("ts-", ts, "'s replica to match the leader's checksum"),
          [&]() -> absl::Status {
            BASALT_ASSIGN_OR_RETURN(pb::ChecksumResponsePB got,
                                    cluster_test::ChecksumReplica(cluster_.get(), ts, tablet_id,
                                                                  want.snap_timestamp()));
            if (got.checksum() == want.checksum() && got.num_rows() == want.num_rows()) {
              return absl::OkStatus();
            }
            return absl::UnavailableError(StrCat(got.num_rows(), " rows, checksum ", got.checksum(),
                                                 "; the leader's: ", want.num_rows(), " rows, ",
                                                 want.checksum()));
          }));
    }
    return want.num_rows();
  }
};

// A one-row insert sent straight to tablet server `ts` (no retry, no redirect): OK only if that
// server acknowledged it (replicated to a majority).
absl::Status WriteDirectly(ExternalMiniCluster* cluster, int ts,
                           const cluster_test::TestTable& table, int32_t key,
                           absl::Duration timeout) {
  pb::WriteRequestPB req;
  table.BuildWrite(0, RowOperationType::kInsert, {cluster_test::MakeRow(key)}, &req);
  auto stub = pb::TabletServerService::NewStub(cluster->tserver_channel(ts));
  grpc::ClientContext ctx;
  cluster_test::SetDeadline(&ctx, timeout);
  pb::WriteResponsePB resp;
  BASALT_RETURN_IF_ERROR(FromGrpcStatus(stub->Write(&ctx, req, &resp)));
  if (resp.per_row_errors_size() > 0) {
    return absl::InternalError(StrCat("row error: ", resp.per_row_errors(0).DebugString()));
  }
  return absl::OkStatus();
}

// The leader's host is cut off from the other tablet servers and the master (both ways); the test
// process still reaches it, so it can watch its role and send it writes.
TEST_F(PartitionTest, IsolatedLeaderStepsDownAndTheMinorityNeverAcknowledgesAWrite) {
  auto raw = cluster_test::TestTable::Create(
      cluster_.get(), {.name = "isolated", .hash_buckets = 0, .split_keys = {}, .num_replicas = 3},
      absl::Seconds(30));
  BASALT_ASSERT_OK(raw);
  const cluster_test::TestTable& raw_table = **raw;
  ASSERT_EQ(raw_table.tablets().size(), 1u);
  const std::string tablet_id = raw_table.tablets()[0].tablet_id;
  std::shared_ptr<Table> table;
  ASSERT_OK(client_->OpenTable("isolated", &table));
  ASSERT_OK(cluster_->WaitForTabletRunning(tablet_id, {0, 1, 2}, absl::Seconds(30)));
  ASSERT_NO_FATAL_FAILURE(WriteRows(table.get(), 0, 100));

  auto old = cluster_->WaitForTabletLeader(tablet_id, absl::Seconds(30));
  ASSERT_OK(old);
  const int old_ts = old->ts_index;
  LOG(INFO) << "isolating ts-" << old_ts << ", leader at term " << old->term;
  const absl::Time cut = absl::Now();
  ASSERT_OK(cluster_->Isolate(cluster_->tablet_server(old_ts)));

  // A write the old leader receives right away, while it still believes it leads: it can only
  // append it. Its deadline outlasts the partition, so what decides its fate is Raft, not the
  // deadline.
  constexpr int32_t kMinorityKey = 1000000;
  absl::Status early = absl::UnknownError("not sent");
  absl::Time early_returned;
  std::thread early_writer([&] {
    early = WriteDirectly(cluster_.get(), old_ts, raw_table, kMinorityKey, absl::Seconds(30));
    early_returned = absl::Now();
  });
  // Joined on every path (a failed assertion returns early).
  absl::Cleanup join_early_writer = [&] {
    if (early_writer.joinable()) early_writer.join();
  };

  // Check-quorum: the old leader steps down within two election timeouts of the cut.
  auto stepped_down = WaitUntilNotLeader(old_ts, tablet_id, cut, absl::Seconds(20));
  ASSERT_OK(stepped_down);
  EXPECT_LE(*stepped_down, 2 * kMaxElectionTimeout)
      << "the isolated leader kept leading for " << absl::FormatDuration(*stepped_down);

  // The majority elects a new leader, and writes through the client go there.
  auto next = cluster_->WaitForTabletLeader(tablet_id, absl::Seconds(30), old->term + 1, old_ts);
  ASSERT_OK(next);
  LOG(INFO) << "new leader ts-" << next->ts_index << " at term " << next->term << ", "
            << absl::FormatDuration(absl::Now() - cut) << " after the cut";
  ASSERT_NO_FATAL_FAILURE(WriteRows(table.get(), 100, 200));

  // The old leader, now a follower, refuses writes outright.
  absl::Status late =
      WriteDirectly(cluster_.get(), old_ts, raw_table, kMinorityKey + 1, absl::Seconds(10));
  EXPECT_TRUE(absl::IsUnavailable(late)) << late;
  EXPECT_EQ(cluster_test::ErrorDetailCode(late), pb::ErrorDetailPB::NOT_THE_LEADER) << late;
  // Still exactly one leader: on the majority side.
  EXPECT_EQ(Leaders(tablet_id), std::vector<int>{next->ts_index});

  ASSERT_OK(cluster_->Heal());
  const absl::Time healed = absl::Now();
  // The old leader rejoins as a follower of the new leader, which keeps leading (pre-vote: the
  // old leader's failed elections never raised its term).
  ASSERT_OK(WaitForFollower(old_ts, tablet_id, next->term));
  auto after = cluster_->FindTabletLeader(tablet_id);
  ASSERT_OK(after);
  EXPECT_EQ(after->ts_index, next->ts_index);
  EXPECT_EQ(after->term, next->term);

  ASSERT_NO_FATAL_FAILURE(WriteRows(table.get(), 200, 210));
  early_writer.join();
  LOG(INFO) << "the write sent to the isolated leader returned "
            << absl::FormatDuration(early_returned - cut) << " after the cut ("
            << absl::FormatDuration(early_returned - healed) << " after healing): " << early;
  EXPECT_FALSE(early.ok()) << "the isolated leader acknowledged a write";

  // Every replica converges on exactly the acknowledged rows.
  auto rows_per_replica = WaitForReplicasToConverge(tablet_id);
  ASSERT_OK(rows_per_replica);
  EXPECT_EQ(*rows_per_replica, 210u);
  std::vector<Row> rows;
  ASSERT_OK(ScanRows(table.get(), nullptr, &rows));
  std::vector<Row> want;
  for (int32_t k = 0; k < 210; ++k) want.push_back(Expected(k));
  EXPECT_EQ(SortedByKey(rows), want) << Diff(SortedByKey(rows), want);
}

// One-way cuts between the leader and both followers, under a writer: the followers elect a new
// leader, the old one steps down, writes continue, and after healing exactly one leader remains
// and no acknowledged row is lost.
class OneWayPartitionTest : public PartitionTest {
 protected:
  // from_leader: the leader's packets to the followers are dropped (they still reach it);
  // otherwise the followers' packets to the leader are.
  void Run(bool from_leader) {
    std::shared_ptr<Table> table;
    ASSERT_NO_FATAL_FAILURE(CreateTable("oneway", 0, {}, &table));
    const std::vector<std::string> ids = TabletIds("oneway");
    ASSERT_EQ(ids.size(), 1u);
    const std::string tablet_id = ids[0];
    BackgroundWriter writer(client_, table);
    writer.Start();
    ASSERT_OK(writer.WaitForAcked(1000));

    auto old = cluster_->WaitForTabletLeader(tablet_id, absl::Seconds(30));
    ASSERT_OK(old);
    const int old_ts = old->ts_index;
    ExternalDaemon* leader = cluster_->tablet_server(old_ts);
    const absl::Time cut = absl::Now();
    for (int ts = 0; ts < 3; ++ts) {
      if (ts == old_ts) continue;
      ExternalDaemon* follower = cluster_->tablet_server(ts);
      ASSERT_OK(from_leader ? cluster_->CutOneWay(leader, follower)
                            : cluster_->CutOneWay(follower, leader));
    }
    const size_t at_cut = writer.acked_count();
    LOG(INFO) << "cut "
              << (from_leader ? "ts-" + std::to_string(old_ts) + " -> followers"
                              : "followers -> ts-" + std::to_string(old_ts))
              << " at term " << old->term << " after " << at_cut << " acknowledged rows";

    // The old leader hears from no majority (none of its messages arrive, or no answer does).
    auto stepped_down = WaitUntilNotLeader(old_ts, tablet_id, cut, absl::Seconds(20));
    ASSERT_OK(stepped_down);
    EXPECT_LE(*stepped_down, 2 * kMaxElectionTimeout);
    auto next = cluster_->WaitForTabletLeader(tablet_id, absl::Seconds(30), old->term + 1, old_ts);
    ASSERT_OK(next);
    EXPECT_EQ(Leaders(tablet_id), std::vector<int>{next->ts_index});
    // Writes go on through the new leader. (A batch the old leader took before it stepped down
    // stays pending there until the new leader's log overwrites it, so the writer can wait out
    // one attempt timeout, 20 s of its 60 s session timeout, before retrying elsewhere.)
    ASSERT_OK(writer.WaitForAcked(at_cut + 1000));
    LOG(INFO) << "new leader ts-" << next->ts_index << " at term " << next->term << "; "
              << writer.acked_count() - at_cut << " rows acknowledged "
              << absl::FormatDuration(absl::Now() - cut) << " after the cut";

    ASSERT_OK(cluster_->Heal());
    const size_t at_heal = writer.acked_count();
    ASSERT_OK(writer.WaitForAcked(at_heal + 1000));
    ASSERT_OK(writer.Stop());
    // Exactly one leader, the one the majority elected, and the old one follows it.
    ASSERT_OK(WaitForFollower(old_ts, tablet_id, next->term));
    EXPECT_EQ(Leaders(tablet_id), std::vector<int>{next->ts_index});
    ASSERT_NO_FATAL_FAILURE(writer.Verify());
    auto rows = WaitForReplicasToConverge(tablet_id);
    ASSERT_OK(rows);
    EXPECT_GE(*rows, writer.acked_count());
  }
};

TEST_F(OneWayPartitionTest, LeaderCannotReachFollowers) { Run(/*from_leader=*/true); }

TEST_F(OneWayPartitionTest, FollowersCannotReachLeader) { Run(/*from_leader=*/false); }

// Three masters; the leader's host is cut off from the other masters and every tablet server.
class MasterPartitionTest : public PartitionTest {
 protected:
  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = PartitionTest::ClusterOptions();
    o.num_masters = 3;
    return o;
  }

  // MasterService.ListTables on master `idx`.
  absl::Status ListTablesOn(int idx) {
    auto stub = pb::MasterService::NewStub(cluster_->master_channel(idx));
    grpc::ClientContext ctx;
    cluster_test::SetDeadline(&ctx, absl::Seconds(5));
    pb::ListTablesResponsePB resp;
    return FromGrpcStatus(stub->ListTables(&ctx, pb::ListTablesRequestPB(), &resp));
  }
};

TEST_F(MasterPartitionTest, IsolatedLeaderMasterStepsDownAndTheOthersServeDdl) {
  std::shared_ptr<Table> before;
  ASSERT_NO_FATAL_FAILURE(CreateTable("before", 0, {}, &before));
  ASSERT_NO_FATAL_FAILURE(WriteRows(before.get(), 0, 100));
  auto old = cluster_->WaitForLeaderMaster(absl::Seconds(30));
  ASSERT_OK(old);
  LOG(INFO) << "isolating master-" << *old << ", the leader";
  const absl::Time cut = absl::Now();
  ASSERT_OK(cluster_->Isolate(cluster_->master(*old)));

  // It steps down (check-quorum) and says so to the clients that still reach it.
  absl::Status s;
  absl::Time stepped_down;
  ASSERT_OK(WaitFor(absl::Seconds(20), "the isolated master to step down", [&] {
    s = ListTablesOn(*old);
    stepped_down = absl::Now();
    if (cluster_test::ErrorDetailCode(s) == pb::ErrorDetailPB::NOT_THE_LEADER_MASTER) {
      return absl::OkStatus();
    }
    return absl::UnavailableError(StrCat("ListTables: ", s.ToString()));
  }));
  LOG(INFO) << "master-" << *old << " stepped down " << absl::FormatDuration(stepped_down - cut)
            << " after the cut: " << s;
  // WaitFor polls at up to 200 ms intervals: allow one.
  EXPECT_LE(stepped_down - cut, 2 * kMasterMaxElectionTimeout + absl::Milliseconds(200));

  // The other two elect a leader, which serves DDL and the tablets' locations.
  auto next = cluster_->WaitForLeaderMaster(absl::Seconds(30));
  ASSERT_OK(next);
  EXPECT_NE(*next, *old);
  std::shared_ptr<Table> during;
  ASSERT_NO_FATAL_FAILURE(CreateTable("during", 0, {}, &during));
  ASSERT_NO_FATAL_FAILURE(WriteRows(during.get(), 0, 100));
  ASSERT_NO_FATAL_FAILURE(WriteRows(before.get(), 100, 200));

  ASSERT_OK(cluster_->Heal());
  // The old leader rejoins as a follower that points clients to the leader.
  ASSERT_OK(WaitFor(absl::Seconds(30), "the old master to follow", [&] {
    absl::Status st = ListTablesOn(*old);
    if (cluster_test::ErrorDetailCode(st) != pb::ErrorDetailPB::NOT_THE_LEADER_MASTER) {
      return absl::UnavailableError(StrCat("ListTables: ", st.ToString()));
    }
    auto detail = GetErrorDetail(st);
    if (!detail.has_value() || !detail->has_leader_address()) {
      return absl::UnavailableError(StrCat("no leader hint yet: ", st.ToString()));
    }
    return absl::OkStatus();
  }));
  auto final_leader = cluster_->LeaderMasterIndex();
  ASSERT_OK(final_leader);
  EXPECT_EQ(*final_leader, *next);
  for (const auto& [table, n] : {std::pair{before.get(), 200}, std::pair{during.get(), 100}}) {
    std::vector<Row> rows;
    ASSERT_OK(ScanRows(table, nullptr, &rows));
    std::vector<Row> want;
    for (int32_t k = 0; k < n; ++k) want.push_back(Expected(k));
    EXPECT_EQ(SortedByKey(rows), want) << Diff(SortedByKey(rows), want);
  }
}

}  // namespace partition_test_file
}  // namespace
}  // namespace basalt::client_test
