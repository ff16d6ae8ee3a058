// Three TabletServers in one process forming 3-replica tablets over real gRPC on loopback, and a
// tablet server heartbeating to a fake master.

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "proto/master.grpc.pb.h"
#include "proto/master.pb.h"
#include "tablet/tablet.h"
#include "tserver/address_book.h"
#include "tserver/heartbeater.h"
#include "tserver/replicated_tablet_test_util.h"
#include "tserver/tablet_replica.h"
#include "tserver/tablet_server.h"
#include "tserver/ts_tablet_manager.h"
#include "tserver/tserver_test_util.h"

namespace basalt {
namespace {
namespace tserver_cluster_test_file {

class TserverClusterTest : public ReplicatedTabletTest {
 protected:
  static constexpr int kNumServers = 3;
  TserverClusterTest() : ReplicatedTabletTest(kNumServers, kNumServers) {}
};

TEST_F(TserverClusterTest, FollowerWritesGetTheLeaderAndReplicasAgree) {
  // A write to a follower: UNAVAILABLE + NOT_THE_LEADER naming the leader and its address.
  WriteBuilder w(&schema_);
  w.Insert(1);
  absl::Status s;
  int leader = -1;
  ASSERT_TRUE(WaitFor([&] {  // Retried only if leadership moves between the two reads.
    leader = WaitForLeader();
    if (leader < 0) return false;
    pb::WriteResponsePB resp;
    s = clients_[(leader + 1) % kNumServers]->Write(w.Build(kTablet), &resp);
    std::optional<pb::ErrorDetailPB> d = GetErrorDetail(s);
    return d.has_value() && d->leader_uuid() == servers_[leader]->uuid();
  }));
  ASSERT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  std::optional<pb::ErrorDetailPB> detail = GetErrorDetail(s);
  EXPECT_EQ(detail->code(), pb::ErrorDetailPB::NOT_THE_LEADER);
  EXPECT_EQ(detail->leader_address().port(), static_cast<uint32_t>(servers_[leader]->rpc_port()));

  uint64_t ts = 0;
  for (int32_t k = 0; k < 3000; k += 500) BASALT_ASSERT_OK(Insert(k, k + 500, &ts));
  const uint64_t index = LeaderAppliedIndex();
  for (int i = 0; i < kNumServers; ++i) {
    ASSERT_TRUE(WaitForApplied(i, index)) << i;
    absl::StatusOr<int64_t> n = CountRows(i);  // READ_LATEST on every replica.
    BASALT_ASSERT_OK(n);
    EXPECT_EQ(*n, 3000) << i;
  }
  // Flush one replica so the layouts differ; checksums at the last write agree everywhere.
  BASALT_ASSERT_OK(Replica(1)->tablet()->FlushMemRowSet());
  absl::StatusOr<pb::ChecksumResponsePB> expected = Checksum(0, ts);
  BASALT_ASSERT_OK(expected);
  EXPECT_EQ(expected->num_rows(), 3000u);
  for (int i = 1; i < kNumServers; ++i) {
    absl::StatusOr<pb::ChecksumResponsePB> c = Checksum(i, ts);
    BASALT_ASSERT_OK(c) << i << ": " << c.status();
    EXPECT_EQ(c->checksum(), expected->checksum()) << i;
    EXPECT_EQ(c->num_rows(), 3000u) << i;
  }
  // A snapshot a follower has not reached: it sends the client to the leader.
  leader = WaitForLeader();
  absl::StatusOr<pb::ChecksumResponsePB> future =
      Checksum((leader + 1) % kNumServers, ts + (1ULL << 40));
  EXPECT_EQ(DetailCode(future.status()), pb::ErrorDetailPB::NOT_THE_LEADER);
}

TEST_F(TserverClusterTest, AlterSchemaAppliesOnEveryReplica) {
  BASALT_ASSERT_OK(Insert(0, 100));
  absl::StatusOr<Schema> altered = schema_.AddColumn(ColumnSchema("extra", DataType::kInt64, true));
  BASALT_ASSERT_OK(altered);
  pb::AlterSchemaRequestPB req;
  req.set_tablet_id(kTablet);
  altered->ToPB(req.mutable_schema());
  req.set_new_table_name("renamed");
  pb::AlterSchemaResponsePB resp;
  // To a follower: not the leader.
  const int follower = (WaitForLeader() + 1) % kNumServers;
  req.set_dest_uuid(servers_[follower]->uuid());
  EXPECT_EQ(DetailCode(clients_[follower]->AlterSchema(req, &resp)),
            pb::ErrorDetailPB::NOT_THE_LEADER);
  auto alter = [&](int leader) {
    req.set_dest_uuid(servers_[leader]->uuid());
    return clients_[leader]->AlterSchema(req, &resp);
  };
  absl::Status s = OnLeader(alter);
  BASALT_ASSERT_OK(s);
  EXPECT_EQ(resp.schema_version(), altered->version());
  BASALT_ASSERT_OK(OnLeader(alter));  // A retry is a no-op success.
  EXPECT_EQ(resp.schema_version(), altered->version());
  for (int i = 0; i < kNumServers; ++i) {
    ASSERT_TRUE(WaitFor([&] { return Replica(i)->schema()->version() == altered->version(); }))
        << i;
    EXPECT_TRUE(Replica(i)->schema()->Equals(*altered));
    EXPECT_EQ(Replica(i)->meta().table_name, "renamed");
  }
  // Writes with the old schema are refused; with the new one they apply everywhere.
  WriteBuilder old(&schema_);
  old.Insert(500);
  pb::WriteResponsePB wresp;
  EXPECT_EQ(DetailCode(OnLeader(
                [&](int leader) { return clients_[leader]->Write(old.Build(kTablet), &wresp); })),
            pb::ErrorDetailPB::SCHEMA_MISMATCH);
  PartialRow row(&*altered);
  BASALT_ASSERT_OK(row.SetInt32("key", 500));
  BASALT_ASSERT_OK(row.SetInt32("int_val", 1));
  BASALT_ASSERT_OK(row.SetInt64("extra", 77));
  pb::WriteRequestPB wreq;
  wreq.set_tablet_id(kTablet);
  altered->ToPB(wreq.mutable_schema());
  RowOperationsEncoder(wreq.mutable_row_operations()).Add(RowOperationType::kInsert, row);
  BASALT_ASSERT_OK(OnLeader([&](int leader) {
    wresp.Clear();
    return clients_[leader]->Write(wreq, &wresp);
  }));
  EXPECT_EQ(wresp.per_row_errors_size(), 0);
  const uint64_t index = LeaderAppliedIndex();
  for (int i = 0; i < kNumServers; ++i) {
    ASSERT_TRUE(WaitForApplied(i, index));
    pb::ScanRequestPB scan;
    scan.mutable_new_scan_request()->set_tablet_id(kTablet);
    *scan.mutable_new_scan_request()->add_projected_columns() = ProjectedColumn(*altered, "extra");
    pb::ScanResponsePB sresp;
    BASALT_ASSERT_OK(clients_[i]->Scan(scan, &sresp));
    ASSERT_EQ(sresp.data().num_rows(), 101);
    const auto& col = sresp.data().columns(0);
    int non_null = 0;
    for (int r = 0; r < 101; ++r) {
      if ((col.null_bitmap()[r / 8] >> (r % 8)) & 1) continue;
      ++non_null;
      int64_t v;
      std::memcpy(&v, col.data().data() + 8 * r, 8);
      EXPECT_EQ(v, 77);
    }
    EXPECT_EQ(non_null, 1) << i;
  }
}

TEST_F(TserverClusterTest, WritesResumeOnANewLeaderAndTheOldOneCatchesUp) {
  BASALT_ASSERT_OK(Insert(0, 1000));
  const int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  StopServer(leader);
  std::set<int> alive = {0, 1, 2};
  alive.erase(leader);
  uint64_t ts = 0;
  BASALT_ASSERT_OK(Insert(1000, 2000, &ts, alive));
  const uint64_t index = LeaderAppliedIndex(alive);
  StartServer(leader);
  ASSERT_TRUE(WaitForApplied(leader, index));
  ASSERT_TRUE(WaitFor([&] { return Replica(leader)->state() == ReplicaState::kRunning; }));
  const int other = *alive.begin();
  ASSERT_TRUE(WaitForApplied(other, index));
  absl::StatusOr<pb::ChecksumResponsePB> a = Checksum(other, ts);
  absl::StatusOr<pb::ChecksumResponsePB> b = Checksum(leader, ts);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << " " << b.status();
  EXPECT_EQ(a->num_rows(), 2000u);
  EXPECT_EQ(a->checksum(), b->checksum());
}

// A replica whose log ends in entries no majority ever took (written while its followers were
// down) restarts after a new leader overwrote them: it must finish bootstrapping on the new
// leader's first entry, not wait for writes to pass its old last index.
TEST_F(TserverClusterTest, OverwrittenLogTailDoesNotKeepAReplicaBootstrapping) {
  BASALT_ASSERT_OK(Insert(0, 100));
  const int old_leader = WaitForLeader();
  ASSERT_GE(old_leader, 0);
  std::set<int> followers = {0, 1, 2};
  followers.erase(old_leader);
  for (int f : followers) StopServer(f);
  for (int32_t k = 100; k < 110; ++k) {
    WriteBuilder w(&schema_);
    w.Insert(k);
    pb::WriteResponsePB resp;
    // Appended to the leader's log, never committed: the call times out.
    absl::Status s = clients_[old_leader]->Call(
        [&](grpc::ClientContext* c, const auto& rq, auto* rs) {
          return clients_[old_leader]->ts->Write(c, rq, rs);
        },
        w.Build(kTablet), &resp, /*timeout_ms=*/100);
    EXPECT_FALSE(s.ok());
  }
  const uint64_t old_last = Replica(old_leader)->raft()->log().LastIndex();
  StopServer(old_leader);
  for (int f : followers) StartServer(f);
  ASSERT_GE(WaitForLeader(followers), 0);
  ASSERT_LT(LeaderAppliedIndex(followers), old_last);  // The new leader's log is shorter.
  StartServer(old_leader);
  EXPECT_TRUE(WaitFor([&] { return Replica(old_leader)->state() == ReplicaState::kRunning; },
                      absl::Seconds(20)))
      << "still " << static_cast<int>(Replica(old_leader)->state());
  uint64_t ts = 0;
  BASALT_ASSERT_OK(Insert(200, 210, &ts));
  const uint64_t index = LeaderAppliedIndex();
  ASSERT_TRUE(WaitForApplied(old_leader, index));
  absl::StatusOr<pb::ChecksumResponsePB> c = Checksum(old_leader, ts);
  BASALT_ASSERT_OK(c);
  EXPECT_EQ(c->num_rows(), 110u);  // The 10 writes that timed out were never committed.
}

// A request applied by a leader that died before answering: its retry through the new leader gets
// the first answer (the new leader applied the entry, and recorded its answer, before serving).
TEST_F(TserverClusterTest, ARetryThroughANewLeaderGetsTheFirstAnswer) {
  const pb::WriteRequestPB insert =
      WithRequestId(WriteBuilder(&schema_).Insert(10).Insert(11).Build(kTablet), "client-a", 1, 1);
  const pb::WriteRequestPB update = WithRequestId(
      WriteBuilder(&schema_).Add(RowOperationType::kUpdate, 10, 5, std::nullopt).Build(kTablet),
      "client-a", 2, 1);
  const pb::WriteRequestPB later = WithRequestId(
      WriteBuilder(&schema_).Add(RowOperationType::kUpdate, 10, 6, std::nullopt).Build(kTablet),
      "client-a", 3, 1);
  std::map<uint64_t, pb::WriteResponsePB> first;
  for (const pb::WriteRequestPB* req : {&insert, &update, &later}) {
    pb::WriteResponsePB& resp = first[req->request_id().seq_no()];
    BASALT_ASSERT_OK(OnLeader([&](int leader) {
      resp.Clear();
      return clients_[leader]->Write(*req, &resp);
    }));
    EXPECT_EQ(resp.per_row_errors_size(), 0);
  }
  const int old_leader = WaitForLeader();
  ASSERT_GE(old_leader, 0);
  StopServer(old_leader);
  std::set<int> alive = {0, 1, 2};
  alive.erase(old_leader);
  for (const pb::WriteRequestPB* req : {&insert, &update}) {
    pb::WriteResponsePB again;
    BASALT_ASSERT_OK(OnLeader(
        [&](int leader) {
          again.Clear();
          return clients_[leader]->Write(*req, &again);
        },
        alive));
    EXPECT_EQ(again.SerializeAsString(), first[req->request_id().seq_no()].SerializeAsString())
        << "request " << req->request_id().seq_no();
  }
  // The retried update did not undo the later one.
  uint64_t ts = 0;
  BASALT_ASSERT_OK(Insert(100, 101, &ts, alive));
  const int leader = WaitForLeader(alive);
  pb::ScanRequestPB scan;
  scan.mutable_new_scan_request()->set_tablet_id(kTablet);
  for (const char* c : {"key", "int_val", "s"}) {
    *scan.mutable_new_scan_request()->add_projected_columns() = ProjectedColumn(schema_, c);
  }
  pb::ScanResponsePB resp;
  BASALT_ASSERT_OK(clients_[leader]->Scan(scan, &resp));
  bool found = false;
  for (const TestRow& r : DecodeTestRows(resp.data())) {
    if (r.key != 10) continue;
    found = true;
    EXPECT_EQ(r.int_val, 6);
  }
  EXPECT_TRUE(found);
}

TEST_F(TserverClusterTest, LeaderStepDownTransfersLeadership) {
  int target = -1;
  // Retried only if an election moves leadership meanwhile.
  ASSERT_TRUE(WaitFor([&] {
    const int leader = WaitForLeader();
    if (leader < 0) return false;
    target = (leader + 2) % kNumServers;
    pb::LeaderStepDownRequestPB req;
    req.set_dest_uuid(servers_[leader]->uuid());
    req.set_tablet_id(kTablet);
    req.set_new_leader_uuid(servers_[target]->uuid());
    pb::LeaderStepDownResponsePB resp;
    grpc::ClientContext ctx;
    if (!FromGrpcStatus(clients_[leader]->admin->LeaderStepDown(&ctx, req, &resp)).ok()) {
      return false;
    }
    return WaitFor([&] { return WaitForLeader() == target; }, absl::Seconds(3));
  }));
  BASALT_ASSERT_OK(Insert(0, 10));
}

// ---- Heartbeats -------------------------------------------------------------------------------

// Records heartbeats; answers with what the test sets.
class FakeMaster final : public pb::MasterService::Service {
 public:
  grpc::Status TSHeartbeat(grpc::ServerContext*, const pb::TSHeartbeatRequestPB* request,
                           pb::TSHeartbeatResponsePB* response) override {
    absl::MutexLock l(&mu_);
    requests_.push_back(*request);
    *response = next_response_;
    next_response_.set_needs_full_tablet_report(false);
    return grpc::Status::OK;
  }
  std::vector<pb::TSHeartbeatRequestPB> requests() {
    absl::MutexLock l(&mu_);
    return requests_;
  }
  void SetNextResponse(pb::TSHeartbeatResponsePB r) {
    absl::MutexLock l(&mu_);
    next_response_ = std::move(r);
  }

 private:
  absl::Mutex mu_;
  std::vector<pb::TSHeartbeatRequestPB> requests_ ABSL_GUARDED_BY(mu_);
  pb::TSHeartbeatResponsePB next_response_ ABSL_GUARDED_BY(mu_);
};

// Serves `service` on an ephemeral loopback port (*port; 0 if it could not bind), without
// SO_REUSEPORT so that no other process's test can share the port.
std::unique_ptr<grpc::Server> ServeOnLoopback(grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

TEST(HeartbeatTest, FullThenIncrementalReportsAndLearnedAddresses) {
  FakeMaster master;
  int port = 0;
  std::unique_ptr<grpc::Server> grpc_server = ServeOnLoopback(&master, &port);
  ASSERT_NE(port, 0);
  pb::TSHeartbeatResponsePB learn;
  pb::RaftPeerPB* peer = learn.add_tablet_servers();
  peer->set_uuid("peer-x");
  HostPort{"127.0.0.1", 9999}.ToPB(peer->mutable_address());
  master.SetNextResponse(learn);

  TestDir dir("heartbeat_test");
  TabletServerOptions o = TestServerOptions(dir.path());
  o.master_addresses = {HostPort{"127.0.0.1", static_cast<uint16_t>(port)}};
  o.heartbeat_interval_ms = 20;
  TabletServer server(o);
  BASALT_ASSERT_OK(server.Start());
  ASSERT_TRUE(WaitFor([&] { return master.requests().size() >= 2; }));
  std::vector<pb::TSHeartbeatRequestPB> reqs = master.requests();
  EXPECT_FALSE(reqs[0].is_incremental());
  EXPECT_EQ(reqs[0].ts_uuid(), server.uuid());
  EXPECT_EQ(reqs[0].rpc_address().port(), static_cast<uint32_t>(server.rpc_port()));
  EXPECT_TRUE(reqs[1].is_incremental());
  ASSERT_TRUE(server.address_book()->Get("peer-x").has_value());
  EXPECT_EQ(server.address_book()->Get("peer-x")->port, 9999);

  // A new tablet shows up in an incremental report, running as leader.
  TsClient client(server.advertised_address().ToString());
  BASALT_ASSERT_OK(client.CreateTablet(
      CreateTabletRequest("hb", {{server.uuid(), server.advertised_address()}})));
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& r : master.requests()) {
      for (const auto& t : r.updated_tablets()) {
        if (r.is_incremental() && t.tablet_id() == "hb" && t.state() == pb::TABLET_RUNNING &&
            t.role() == pb::LEADER && t.leader_uuid() == server.uuid()) {
          return true;
        }
      }
    }
    return false;
  }));
  // Unchanged: later incremental reports carry nothing.
  size_t seen = master.requests().size();
  ASSERT_TRUE(WaitFor([&] { return master.requests().size() >= seen + 3; }));
  EXPECT_EQ(master.requests().back().updated_tablets_size(), 0);
  EXPECT_EQ(master.requests().back().num_live_tablets(), 1);
  // Asked for a full report: the next one lists every tablet.
  pb::TSHeartbeatResponsePB full;
  full.set_needs_full_tablet_report(true);
  master.SetNextResponse(full);
  seen = master.requests().size();
  ASSERT_TRUE(WaitFor([&] {
    std::vector<pb::TSHeartbeatRequestPB> r = master.requests();
    for (size_t i = seen; i < r.size(); ++i) {
      if (!r[i].is_incremental() && r[i].updated_tablets_size() == 1) return true;
    }
    return false;
  }));
  // Deleted: reported as removed.
  pb::DeleteTabletRequestPB del;
  del.set_tablet_id("hb");
  BASALT_ASSERT_OK(client.DeleteTablet(del));
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& r : master.requests()) {
      if (r.removed_tablet_ids_size() == 1 && r.removed_tablet_ids(0) == "hb") return true;
    }
    return false;
  }));
  server.Shutdown();
  grpc_server->Shutdown();
}

// Answers no heartbeat until released: a master that hangs (SIGSTOPped, or a partition that
// drops packets).
class HungMaster final : public pb::MasterService::Service {
 public:
  grpc::Status TSHeartbeat(grpc::ServerContext*, const pb::TSHeartbeatRequestPB*,
                           pb::TSHeartbeatResponsePB*) override {
    absl::MutexLock l(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&released_), absl::Seconds(30));
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "hung");
  }
  void Release() {
    absl::MutexLock l(&mu_);
    released_ = true;
  }

 private:
  absl::Mutex mu_;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

// Each master has its own heartbeat thread: a hung master (whose calls each take the 1 s
// heartbeat deadline) does not slow the heartbeats to the others.
TEST(HeartbeatTest, AHungMasterDoesNotDelayTheOthers) {
  HungMaster hung;
  FakeMaster good;
  int hung_port = 0, good_port = 0;
  std::unique_ptr<grpc::Server> hung_server = ServeOnLoopback(&hung, &hung_port);
  std::unique_ptr<grpc::Server> good_server = ServeOnLoopback(&good, &good_port);
  ASSERT_NE(hung_port, 0);
  ASSERT_NE(good_port, 0);
  TestDir dir("heartbeat_hung_test");
  TabletServerOptions o = TestServerOptions(dir.path());
  o.master_addresses = {HostPort{"127.0.0.1", static_cast<uint16_t>(hung_port)},
                        HostPort{"127.0.0.1", static_cast<uint16_t>(good_port)}};
  o.heartbeat_interval_ms = 20;
  TabletServer server(o);
  BASALT_ASSERT_OK(server.Start());
  const absl::Time start = absl::Now();
  ASSERT_TRUE(WaitFor([&] { return good.requests().size() >= 10; }));
  // Ten beats at a 20 ms interval; behind a hung master's 1 s deadline they would take 10 s.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  hung.Release();
  server.Shutdown();
  hung_server->Shutdown();
  good_server->Shutdown();
}

TEST(HeartbeatTest, ReplicaChangesAreReportedBeforeTheInterval) {
  FakeMaster master;
  int port = 0;
  std::unique_ptr<grpc::Server> grpc_server = ServeOnLoopback(&master, &port);
  ASSERT_NE(port, 0);
  TestDir dir("heartbeat_trigger_test");
  TabletServerOptions o = TestServerOptions(dir.path());
  o.master_addresses = {HostPort{"127.0.0.1", static_cast<uint16_t>(port)}};
  o.heartbeat_interval_ms = 600000;  // Only the first report and triggered ones come.
  TabletServer server(o);
  BASALT_ASSERT_OK(server.Start());
  ASSERT_TRUE(WaitFor([&] { return master.requests().size() == 1; }));
  TsClient client(server.advertised_address().ToString());
  BASALT_ASSERT_OK(client.CreateTablet(
      CreateTabletRequest("hb", {{server.uuid(), server.advertised_address()}})));
  // Becoming leader (its first entry of a new term) wakes the heartbeater.
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& r : master.requests()) {
      for (const auto& t : r.updated_tablets()) {
        if (t.tablet_id() == "hb" && t.role() == pb::LEADER) return true;
      }
    }
    return false;
  }));
  server.Shutdown();
  grpc_server->Shutdown();
}

}  // namespace tserver_cluster_test_file
}  // namespace
}  // namespace basalt
