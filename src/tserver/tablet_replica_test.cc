// TabletReplica's safe time (docs/cluster.md "Scans"): three TabletServers in one process over
// real gRPC on loopback forming one 3-replica tablet, and a single-replica tablet whose follower
// hook is driven by hand.

#include "tserver/tablet_replica.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "rpc/rpc_status.h"
#include "tserver/tablet_server.h"
#include "tserver/ts_tablet_manager.h"
#include "tserver/tserver_test_util.h"

namespace basalt {
namespace {

constexpr char kTablet[] = "tablet-safe-time";

class SafeTimeTest : public ::testing::Test {
 protected:
  void StartCluster(int num_servers) {
    for (int i = 0; i < num_servers; ++i) {
      dirs_.push_back(std::make_unique<TestDir>(StrCat("tablet_replica_test_", i)));
      TabletServerOptions o = TestServerOptions(dirs_.back()->path());
      o.raft_election_ticks = 15;  // 300-600 ms: rare spurious elections on a busy machine.
      servers_.push_back(std::make_unique<TabletServer>(o));
      BASALT_ASSERT_OK(servers_.back()->Start());
      clients_.push_back(
          std::make_unique<TsClient>(servers_.back()->advertised_address().ToString()));
    }
    std::vector<std::pair<std::string, HostPort>> peers;
    for (const auto& s : servers_) peers.push_back({s->uuid(), s->advertised_address()});
    pb::CreateTabletRequestPB req = CreateTabletRequest(kTablet, peers);
    for (int i = 0; i < num_servers; ++i) {
      req.set_dest_uuid(servers_[i]->uuid());
      absl::Status s = clients_[i]->CreateTablet(req);
      BASALT_ASSERT_OK(s);
    }
  }

  std::shared_ptr<TabletReplica> Replica(int i) {
    return *servers_[i]->tablet_manager()->Lookup(kTablet);
  }

  // The index of the server whose replica leads and has applied an entry, or -1.
  int WaitForLeader() {
    int leader = -1;
    WaitFor([&] {
      for (size_t i = 0; i < servers_.size(); ++i) {
        auto r = Replica(static_cast<int>(i));
        if (r->raft() != nullptr && r->raft()->role() == RaftCore::Role::kLeader &&
            r->GetStatus().last_applied_index > 0) {
          leader = static_cast<int>(i);
          return true;
        }
      }
      return false;
    });
    return leader;
  }

  // Inserts keys [from, to) on server `i`; returns the write's timestamp.
  absl::StatusOr<uint64_t> Insert(int i, int32_t from, int32_t to) {
    WriteBuilder w(&schema_);
    for (int32_t k = from; k < to; ++k) w.Insert(k);
    pb::WriteResponsePB resp;
    BASALT_RETURN_IF_ERROR(clients_[i]->Write(w.Build(kTablet), &resp));
    if (resp.per_row_errors_size() > 0) {
      return absl::InternalError(resp.per_row_errors(0).error().message());
    }
    return resp.timestamp();
  }

  absl::StatusOr<pb::ChecksumResponsePB> Checksum(int i, uint64_t snap, int timeout_ms = 10000) {
    pb::ChecksumRequestPB req;
    req.set_tablet_id(kTablet);
    req.set_snap_timestamp(snap);
    pb::ChecksumResponsePB resp;
    BASALT_RETURN_IF_ERROR(
        clients_[i]->Call([&](grpc::ClientContext* c, const auto& rq,
                              auto* rs) { return clients_[i]->ts->Checksum(c, rq, rs); },
                          req, &resp, timeout_ms));
    return resp;
  }

  Schema schema_ = TestSchema();
  std::vector<std::unique_ptr<TestDir>> dirs_;
  std::vector<std::unique_ptr<TabletServer>> servers_;
  std::vector<std::unique_ptr<TsClient>> clients_;
};

// A snapshot taken on the leader after the last write: no later op exists for a follower to
// apply, yet every follower serves it once the leader's safe time arrives, with the leader's rows.
TEST_F(SafeTimeTest, FollowerServesASnapshotAfterTheLastWrite) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  const int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  absl::StatusOr<uint64_t> write_ts = Insert(leader, 0, 500);
  BASALT_ASSERT_OK(write_ts);
  absl::StatusOr<pb::ChecksumResponsePB> ref = Checksum(leader, 0);
  BASALT_ASSERT_OK(ref);
  ASSERT_EQ(ref->num_rows(), 500u);
  ASSERT_GT(ref->snap_timestamp(), *write_ts);
  for (int i = 0; i < 3; ++i) {
    if (i == leader) continue;
    EXPECT_LT(Replica(i)->last_applied_timestamp().value(), ref->snap_timestamp());
    absl::StatusOr<pb::ChecksumResponsePB> c = Checksum(i, ref->snap_timestamp());
    BASALT_ASSERT_OK(c) << i << ": " << c.status();
    EXPECT_EQ(c->checksum(), ref->checksum()) << i;
    EXPECT_EQ(c->num_rows(), 500u) << i;
    EXPECT_GE(Replica(i)->safe_time().value(), ref->snap_timestamp()) << i;
  }
  // A time far beyond any clock: the follower sends the client to the leader at once.
  const int follower = (leader + 1) % 3;
  const absl::Time start = absl::Now();
  absl::StatusOr<pb::ChecksumResponsePB> future =
      Checksum(follower, ref->snap_timestamp() + (uint64_t{3600} * 1000000 << 12));
  EXPECT_EQ(DetailCode(future.status()), pb::ErrorDetailPB::NOT_THE_LEADER) << future.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(SafeTimeTest, FollowerSafeTimeKeepsRisingOnAnIdleTablet) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  const int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  BASALT_ASSERT_OK(Insert(leader, 0, 10));
  const int follower = (leader + 1) % 3;
  std::shared_ptr<TabletReplica> r = Replica(follower);
  HybridTime prev = r->safe_time();
  int rises = 0;
  ASSERT_TRUE(WaitFor([&] {
    const HybridTime now = r->safe_time();
    EXPECT_GE(now, prev) << "safe time went backwards";
    if (now > prev) ++rises;
    prev = now;
    return rises >= 5;
  }));
  EXPECT_GE(r->safe_time(), r->last_applied_timestamp());
}

// The follower hook, driven by hand on a single-replica tablet (its own leader, so nothing else
// calls the hook): a pair is adopted only once its index is applied, never lowers the safe time,
// and pairs of an older term are ignored.
TEST_F(SafeTimeTest, SafeTimeWaitsForItsIndexAndIsMonotonic) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(1));
  ASSERT_EQ(WaitForLeader(), 0);
  std::shared_ptr<TabletReplica> r = Replica(0);
  BASALT_ASSERT_OK(Insert(0, 0, 1));
  const uint64_t term = r->raft()->term();
  const uint64_t applied = r->GetStatus().last_applied_index;
  HybridClock* clock = servers_[0]->clock();
  const uint64_t t1 = clock->Now().value();
  r->OnLeaderSafeTime(term, t1, applied + 3);
  EXPECT_EQ(r->safe_time(), HybridTime::kMin);
  const uint64_t t2 = clock->Now().value();
  r->OnLeaderSafeTime(term, t2, applied + 4);
  BASALT_ASSERT_OK(Insert(0, 1, 2));
  BASALT_ASSERT_OK(Insert(0, 2, 3));
  EXPECT_EQ(r->safe_time(), HybridTime::kMin) << "adopted before index " << applied + 3;
  BASALT_ASSERT_OK(Insert(0, 3, 4));
  EXPECT_EQ(r->safe_time().value(), t1);
  BASALT_ASSERT_OK(Insert(0, 4, 5));
  EXPECT_EQ(r->safe_time().value(), t2);
  // Already applied: adopted at once; an older time never lowers it; an older term is ignored.
  r->OnLeaderSafeTime(term, t1, applied);
  EXPECT_EQ(r->safe_time().value(), t2);
  const uint64_t t3 = clock->Now().value();
  r->OnLeaderSafeTime(term, t3, applied + 4);
  EXPECT_EQ(r->safe_time().value(), t3);
  r->OnLeaderSafeTime(term - 1, clock->Now().value(), 1);
  EXPECT_EQ(r->safe_time().value(), t3);
  // A time the clock refuses (far ahead of it) is not adopted.
  r->OnLeaderSafeTime(term, t3 + (uint64_t{3600} * 1000000 << 12), 1);
  EXPECT_EQ(r->safe_time().value(), t3);
}

// A pending pair whose leader was replaced before its index was applied is dropped: the entry
// of the new term shows that the old leader's entries may have been overwritten.
TEST_F(SafeTimeTest, PendingSafeTimeOfAnOldTermIsDroppedOnANewTerm) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(1));
  ASSERT_EQ(WaitForLeader(), 0);
  std::shared_ptr<TabletReplica> r = Replica(0);
  BASALT_ASSERT_OK(Insert(0, 0, 1));
  const uint64_t term = r->raft()->term();
  const uint64_t applied = r->GetStatus().last_applied_index;
  r->OnLeaderSafeTime(term, servers_[0]->clock()->Now().value(), applied + 2);
  BASALT_ASSERT_OK(r->StepDown(""));  // The single voter wins the next term at once.
  ASSERT_TRUE(WaitFor(
      [&] { return r->raft()->term() > term && r->GetStatus().last_applied_index > applied; }));
  ASSERT_TRUE(WaitFor([&] { return Insert(0, 1, 2).ok(); }));
  BASALT_ASSERT_OK(Insert(0, 2, 3));
  EXPECT_GE(r->GetStatus().last_applied_index, applied + 2);
  EXPECT_EQ(r->safe_time(), HybridTime::kMin);
}

// TabletReplica::Fail (a corrupt block, a failed disk): the replica stops serving and voting,
// leads nothing, and the other two elect a leader and take writes.
using ReplicaFailureTest = SafeTimeTest;

TEST_F(ReplicaFailureTest, FailedReplicaStopsServingAndVotingAndTheOthersGoOn) {
  StartCluster(3);
  int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  BASALT_ASSERT_OK(Insert(leader, 0, 10).status());
  auto failed = Replica(leader);
  const uint64_t term = failed->raft()->term();
  failed->Fail(absl::DataLossError("checksum mismatch in block 0000000100000007"));
  EXPECT_EQ(failed->state(), ReplicaState::kFailed);
  EXPECT_TRUE(absl::IsDataLoss(failed->GetStatus().error)) << failed->GetStatus().error;
  EXPECT_TRUE(absl::IsDataLoss(failed->raft()->health())) << failed->raft()->health();
  EXPECT_EQ(failed->raft()->role(), RaftCore::Role::kFollower);
  // Writes and scans to it fail with TABLET_FAILED (the client tries another replica).
  absl::StatusOr<uint64_t> w = Insert(leader, 10, 11);
  ASSERT_FALSE(w.ok());
  auto detail = GetErrorDetail(w.status());
  ASSERT_TRUE(detail.has_value()) << w.status();
  EXPECT_EQ(detail->code(), pb::ErrorDetailPB::TABLET_FAILED) << w.status();
  // One of the others leads in a newer term and takes writes.
  int next = -1;
  ASSERT_TRUE(WaitFor([&] {
    for (int i = 0; i < 3; ++i) {
      if (i == leader) continue;
      auto r = Replica(i);
      if (r->raft()->role() == RaftCore::Role::kLeader && r->raft()->term() > term &&
          Insert(i, 10, 11).ok()) {
        next = i;
        return true;
      }
    }
    return false;
  }));
  BASALT_ASSERT_OK(Insert(next, 11, 20).status());
  EXPECT_EQ(failed->raft()->role(), RaftCore::Role::kFollower) << "a failed replica leads again";
  EXPECT_EQ(failed->state(), ReplicaState::kFailed);
}

}  // namespace
}  // namespace basalt
