// TabletReplica's safe time (docs/cluster.md "Scans"): three TabletServers in one process over
// real gRPC on loopback forming one 3-replica tablet, and a single-replica tablet whose follower
// hook is driven by hand.

#include "tserver/tablet_replica.h"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "common/injecting_env.h"
#include "common/metrics.h"
#include "common/status_test_util.h"
#include "rpc/rpc_status.h"
#include "tserver/tablet_server.h"
#include "tserver/ts_tablet_manager.h"
#include "tserver/tserver_test_util.h"

DECLARE_int32(tablet_alter_inject_delay_ms);

namespace basalt {
namespace {
namespace tablet_replica_test_file {

constexpr char kTablet[] = "tablet-safe-time";

class SafeTimeTest : public ::testing::Test {
 protected:
  // Election timeouts are drawn from [election_ticks, 2 x election_ticks) ticks of 20 ms: the
  // default 15 is 300-600 ms, with rare spurious elections on a busy machine.
  void StartCluster(int num_servers, int election_ticks = 15) {
    for (int i = 0; i < num_servers; ++i) {
      dirs_.push_back(std::make_unique<TestDir>(StrCat("tablet_replica_test_", i)));
      TabletServerOptions o = TestServerOptions(dirs_.back()->path());
      o.raft_election_ticks = election_ticks;
      // Each server's file operations can be failed on their own (disk fault tests).
      envs_.push_back(std::make_unique<InjectingEnv>(Env::Default()));
      o.env = envs_.back().get();
      servers_.push_back(std::make_unique<TabletServer>(o));
      BASALT_ASSERT_OK(servers_.back()->Start());
      clients_.push_back(
          std::make_unique<TsClient>(servers_.back()->advertised_address().ToString()));
    }
    std::vector<std::pair<std::string, HostPort>> peers;
    for (const auto& s : servers_) peers.push_back({s->uuid(), s->advertised_address()});
    pb::CreateTabletRequestPB req = CreateTabletRequest(kTablet, peers);
    // The first-listed replica (server 0) campaigns one 20 ms tick after it starts: created
    // last, it finds the others there to vote.
    for (int i = num_servers - 1; i >= 0; --i) {
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
  std::vector<std::unique_ptr<InjectingEnv>> envs_;  // Outlive the servers.
  std::vector<std::unique_ptr<TabletServer>> servers_;
  std::vector<std::unique_ptr<TsClient>> clients_;
};

// A snapshot taken on the leader after the last write: no later op exists for a follower to
// apply, yet every follower serves it once the leader's safe time arrives, with the leader's rows.
// The replica listed first in CreateTablet's configuration campaigns at once and leads, whatever
// its uuid (before, the smallest uuid led every new tablet). The others' election timeouts are
// 20-40 s here, so nobody else can win first.
TEST_F(SafeTimeTest, TheFirstListedReplicaLeadsANewTablet) {
  StartCluster(3, /*election_ticks=*/1000);
  int largest = 0;
  for (int i = 1; i < 3; ++i) {
    if (servers_[i]->uuid() > servers_[largest]->uuid()) largest = i;
  }
  // A second tablet, listing the server with the largest uuid first.
  std::vector<std::pair<std::string, HostPort>> peers;
  for (const auto& s : servers_) peers.push_back({s->uuid(), s->advertised_address()});
  std::rotate(peers.begin(), peers.begin() + largest, peers.end());
  pb::CreateTabletRequestPB req = CreateTabletRequest("tablet-first-listed", peers);
  for (int j = 1; j <= 3; ++j) {  // The first listed last.
    const int i = (largest + j) % 3;
    req.set_dest_uuid(servers_[i]->uuid());
    BASALT_ASSERT_OK(clients_[i]->CreateTablet(req));
  }
  WaitFor([&] {
    auto r = servers_[largest]->tablet_manager()->Lookup("tablet-first-listed");
    return r.ok() && (*r)->raft() != nullptr && (*r)->raft()->role() == RaftCore::Role::kLeader;
  });
  auto r = servers_[largest]->tablet_manager()->Lookup("tablet-first-listed");
  BASALT_ASSERT_OK(r.status());
  EXPECT_EQ((*r)->raft()->role(), RaftCore::Role::kLeader) << "the first-listed replica leads";
  // The first tablet lists the servers in their order: server 0 leads it.
  EXPECT_EQ(WaitForLeader(), 0) << "server 0 is listed first in " << kTablet;
}

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

// Followers write, sync and acknowledge an append on the connection it came on, and the
// acknowledgement rides back in the reply (docs/raft.md "Replies"); /metrics shows the traffic.
// The three servers share this process's registry, so each series is their sum.
TEST_F(SafeTimeTest, AcknowledgementsRideInRepliesAndShowOnMetrics) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  const int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  auto sample = [](const std::string& series) {
    return SampleValue(MetricRegistry::Global()->RenderPrometheus(), series);
  };
  const double replies_before = sample("basalt_consensus_messages_sent_total{via=\"reply\"}");
  ASSERT_GE(replies_before, 0) << "no reply series on /metrics";
  for (int32_t batch = 0; batch < 20; ++batch) {
    BASALT_ASSERT_OK(Insert(leader, batch * 100, batch * 100 + 100));
  }
  const std::string m = MetricRegistry::Global()->RenderPrometheus();
  // Twenty synchronous writes, two followers: most acknowledgements left in replies (some may
  // go in calls of their own when a follower's worker held the round).
  EXPECT_GE(SampleValue(m, "basalt_consensus_messages_sent_total{via=\"reply\"}"),
            replies_before + 20)
      << m;
  EXPECT_GE(SampleValue(m, "basalt_consensus_messages_received_total{via=\"reply\"}"),
            replies_before + 20)
      << m;
  for (const char* series :
       {"basalt_consensus_rpcs_sent_total{transport=\"frame\"}",
        "basalt_consensus_rpcs_sent_total{transport=\"grpc\"}",
        "basalt_consensus_rpcs_failed_total", "basalt_consensus_messages_dropped_total",
        "basalt_consensus_messages_sent_total{via=\"call\"}",
        "basalt_consensus_messages_received_total{via=\"call\"}"}) {
    EXPECT_GE(SampleValue(m, series), 0) << series << " missing";
  }
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
class ReplicaFailureTest : public SafeTimeTest {
 protected:
  // Waits until a replica other than `failed`'s leads in a term above `term` and takes a write of
  // key `key`; returns its server's index (-1 if none did in time).
  int WaitForNewLeaderTakingWrites(int failed, uint64_t term, int32_t key) {
    int next = -1;
    WaitFor([&] {
      for (int i = 0; i < static_cast<int>(servers_.size()); ++i) {
        if (i == failed) continue;
        auto r = Replica(i);
        if (r->raft()->role() == RaftCore::Role::kLeader && r->raft()->term() > term &&
            Insert(i, key, key + 1).ok()) {
          next = i;
          return true;
        }
      }
      return false;
    });
    return next;
  }
};

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
  const int next = WaitForNewLeaderTakingWrites(leader, term, 10);
  ASSERT_GE(next, 0);
  BASALT_ASSERT_OK(Insert(next, 11, 20).status());
  EXPECT_EQ(failed->raft()->role(), RaftCore::Role::kFollower) << "a failed replica leads again";
  EXPECT_EQ(failed->state(), ReplicaState::kFailed);
}

// A schema change flushes every store first (TabletReplica::FlushBeforeAlter), on every replica at
// once. Entries are applied off the Raft thread, so however long that takes, the leader's
// heartbeats go on and nobody starts an election. Measured: the longest silence a follower saw.
TEST_F(ReplicaFailureTest, AlterOnALargeMemRowSetDelaysNoHeartbeat) {
  // Election timeouts of 1-2 s (50 ticks), not the fixture's 300-600 ms: the test asserts that no
  // election happens at all, and the default suite runs several tests per core, where a 3-server
  // process can stall for a few hundred milliseconds (it did, before the alter even began).
  StartCluster(3, /*election_ticks=*/50);
  int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  for (int32_t k = 0; k < 100000; k += 20000)
    BASALT_ASSERT_OK(Insert(leader, k, k + 20000).status());
  // Every replica's alter takes over 3 s: 1.5 to 3 election timeouts.
  FLAGS_tablet_alter_inject_delay_ms = 3000;
  auto replica = Replica(leader);
  const std::string leader_uuid = servers_[leader]->uuid();
  const uint64_t term = replica->raft()->term();
  std::atomic<bool> done{false};
  absl::Duration longest_silence;
  // The longest time since a follower last heard from the leader, sampled every 2 ms until done.
  auto monitor_silence = [&] {
    longest_silence = absl::ZeroDuration();
    while (!done.load()) {
      const absl::Time now = absl::Now();
      for (int i = 0; i < 3; ++i) {
        if (i == leader) continue;
        auto heard = Replica(i)->raft()->peer_last_heard();
        auto it = heard.find(leader_uuid);
        if (it != heard.end()) longest_silence = std::max(longest_silence, now - it->second);
      }
      absl::SleepFor(absl::Milliseconds(2));
    }
  };
  // The baseline: idle, heartbeats every tick, coalesced up to --consensus_heartbeat_coalesce_ms.
  std::thread baseline(monitor_silence);
  absl::SleepFor(absl::Seconds(1));
  done = true;
  baseline.join();
  const absl::Duration idle_silence = longest_silence;
  done = false;
  std::thread monitor(monitor_silence);
  absl::StatusOr<Schema> altered =
      schema_.AddColumn(ColumnSchema("added", DataType::kInt64, /*is_nullable=*/true));
  BASALT_ASSERT_OK(altered);
  pb::SchemaPB pb;
  altered->ToPB(&pb);
  const absl::Time start = absl::Now();
  absl::StatusOr<uint32_t> version = replica->AlterSchema(pb, "", absl::Now() + absl::Seconds(60));
  const absl::Duration took = absl::Now() - start;
  done = true;
  monitor.join();
  FLAGS_tablet_alter_inject_delay_ms = 0;
  BASALT_ASSERT_OK(version);
  EXPECT_EQ(*version, altered->version());
  std::cout << "alter with a 100000-row MemRowSet took " << took
            << "; the longest silence of the leader a follower saw: " << longest_silence
            << " (idle: " << idle_silence
            << "; heartbeat interval 20 ms, coalesced up to 100 ms; election timeout 1-2 s)"
            << std::endl;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Replica(i)->raft()->term(), term) << "server " << i << " saw an election";
  }
  // Far above the 20 ms interval on a loaded 2-core machine, below an election timeout; an apply
  // on the Raft thread would leave the leader silent for the whole flush (over 3 s).
  EXPECT_LT(longest_silence, absl::Seconds(1));
}

// EIO on the leader's disk (docs/tserver.md "Disk faults"): its next WAL write fails, so its Raft
// node stops and the replica goes FAILED naming the error; the other two elect a leader and take
// writes, and no acknowledged row is lost.
TEST_F(ReplicaFailureTest, EioOnTheLeadersDiskFailsItsReplicaAndTheOthersGoOn) {
  StartCluster(3);
  int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  BASALT_ASSERT_OK(Insert(leader, 0, 100).status());
  const uint64_t term = Replica(leader)->raft()->term();
  envs_[leader]->SetEio(dirs_[leader]->path(), 1.0);
  // The next write (or the leader's own no-op heartbeat traffic) hits the WAL.
  absl::StatusOr<uint64_t> w = Insert(leader, 100, 101);
  EXPECT_FALSE(w.ok()) << "a write was acknowledged by a replica whose WAL cannot be written";
  auto failed = Replica(leader);
  ASSERT_TRUE(WaitFor([&] { return failed->state() == ReplicaState::kFailed; }))
      << ReplicaStateName(failed->state());
  const absl::Status error = failed->GetStatus().error;
  EXPECT_NE(error.message().find("Input/output error"), std::string::npos) << error;
  EXPECT_NE(error.message().find(dirs_[leader]->path()), std::string::npos) << error;
  const int next = WaitForNewLeaderTakingWrites(leader, term, 101);
  ASSERT_GE(next, 0);
  BASALT_ASSERT_OK(Insert(next, 102, 200).status());
  // Both healthy replicas hold every acknowledged row (0-99, 101-199; 100 was refused).
  const int other = 3 - leader - next;
  absl::StatusOr<pb::ChecksumResponsePB> a = Checksum(next, 0);
  BASALT_ASSERT_OK(a);
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<pb::ChecksumResponsePB> b = Checksum(other, a->snap_timestamp());
    return b.ok() && b->checksum() == a->checksum() && b->num_rows() == a->num_rows();
  }));
  EXPECT_GE(a->num_rows(), 199u);
  envs_[leader]->SetEio("", 0);
}

// A follower whose disk fills up (docs/tserver.md "Disk faults"): its WAL append meets ENOSPC, so
// its Raft node stops, but the replica is paused (STOPPING), not FAILED: the master does not
// replace it at once. The other two go on; once the disk has room the server opens the replica
// again from disk, it catches up, and all three agree.
TEST_F(ReplicaFailureTest, AFullWalDiskPausesAFollowerUntilSpaceIsFreed) {
  StartCluster(3);
  const int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  BASALT_ASSERT_OK(Insert(leader, 0, 100).status());
  const int follower = (leader + 1) % 3;
  envs_[follower]->SetEnospc(dirs_[follower]->path(), 1.0);
  BASALT_ASSERT_OK(Insert(leader, 100, 200).status());  // A majority without the follower.
  auto paused = Replica(follower);
  ASSERT_TRUE(WaitFor([&] { return paused->paused_for_space(); }));
  EXPECT_EQ(paused->state(), ReplicaState::kStopping);
  BASALT_ASSERT_OK(Insert(leader, 200, 300).status());
  envs_[follower]->SetEnospc("", 0);
  // Reopened within a second or two (the space watcher's period, the monitor's refresh).
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = Replica(follower);
        return r != paused && r->state() == ReplicaState::kRunning;
      },
      absl::Seconds(30)));
  absl::StatusOr<pb::ChecksumResponsePB> want = Checksum(leader, 0);
  BASALT_ASSERT_OK(want);
  EXPECT_EQ(want->num_rows(), 300u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(WaitFor([&] {
      absl::StatusOr<pb::ChecksumResponsePB> got = Checksum(i, want->snap_timestamp());
      return got.ok() && got->checksum() == want->checksum() && got->num_rows() == 300u;
    })) << "server "
        << i;
  }
}

}  // namespace tablet_replica_test_file
}  // namespace
}  // namespace basalt
