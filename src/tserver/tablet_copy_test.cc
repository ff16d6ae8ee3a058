// Membership changes and tablet copy between tablet servers in one process
// (docs/tablet_copy.md): ChangeConfig, GetConsensusState, StartTabletCopy and TabletCopyService,
// tombstones, and the copy's cleanup after failures.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "cfile/block_manager.h"
#include "common/crc32c.h"
#include "common/status_test_util.h"
#include "consensus/raft_config.h"
#include "proto/consensus.pb.h"
#include "proto/tablet_copy.pb.h"
#include "tablet/tablet.h"
#include "tablet/tablet_metadata.h"
#include "tserver/replica_file.h"
#include "tserver/replicated_tablet_test_util.h"
#include "tserver/result_tracker.h"

DECLARE_int32(log_segment_size_mb);
DECLARE_int32(log_max_segments_to_retain);
DECLARE_int32(num_tablets_to_copy_simultaneously);
DECLARE_int32(tablet_copy_chunk_bytes);
DECLARE_int32(tablet_copy_fetch_delay_ms);
DECLARE_int32(tablet_copy_max_sessions);
DECLARE_int32(tablet_copy_inject_corrupt_chunks);
DECLARE_int32(tablet_copy_inject_failures);
DECLARE_int32(tablet_copy_retry_base_ms);
DECLARE_int32(tablet_copy_retry_max_ms);

namespace basalt {
namespace {
namespace tablet_copy_test_file {

// Four servers; the tablet starts on the first three.
class TabletCopyTest : public ReplicatedTabletTest {
 protected:
  TabletCopyTest() : ReplicatedTabletTest(4, 3) {}

  void SetUp() override {
    SetFlag(&FLAGS_tablet_copy_chunk_bytes, 64 << 10);  // Many chunks a block.
    SetFlag(&FLAGS_tablet_copy_retry_base_ms, 50);
    SetFlag(&FLAGS_tablet_copy_retry_max_ms, 400);
    ReplicatedTabletTest::SetUp();
  }

  // The leader among every server that hosts a running replica (-1 if none is ready).
  int Leader() {
    std::set<int> hosts;
    for (int i = 0; i < num_servers_; ++i) {
      if (MaybeReplica(i) != nullptr && MaybeReplica(i)->raft() != nullptr) hosts.insert(i);
    }
    return WaitForLeader(hosts);
  }

  pb::ChangeConfigRequestPB Change(pb::ChangeConfigTypePB type, int peer,
                                   pb::RaftPeerPB::MemberType member = pb::RaftPeerPB::VOTER) {
    pb::ChangeConfigRequestPB req;
    req.set_tablet_id(kTablet);
    req.set_type(type);
    req.set_peer_uuid(servers_[peer]->uuid());
    req.set_member_type(member);
    if (type == pb::ADD_PEER) servers_[peer]->advertised_address().ToPB(req.mutable_peer_address());
    return req;
  }

  absl::Status ChangeConfigOn(int server, const pb::ChangeConfigRequestPB& req,
                              pb::ChangeConfigResponsePB* resp = nullptr) {
    pb::ChangeConfigResponsePB ignored;
    return clients_[server]->Call(
        [&](grpc::ClientContext* c, const auto& rq, auto* rs) {
          return clients_[server]->consensus->ChangeConfig(c, rq, rs);
        },
        req, resp != nullptr ? resp : &ignored, 20000);
  }

  // Sends `req` to whoever leads, again while the answer is UNAVAILABLE.
  absl::Status ChangeConfig(const pb::ChangeConfigRequestPB& req,
                            pb::ChangeConfigResponsePB* resp = nullptr) {
    absl::Status s = absl::UnavailableError("no leader");
    WaitFor(
        [&] {
          const int leader = Leader();
          if (leader < 0) return false;
          s = ChangeConfigOn(leader, req, resp);
          return !absl::IsUnavailable(s);
        },
        absl::Seconds(20));
    return s;
  }

  absl::StatusOr<pb::GetConsensusStateResponsePB> ConsensusState(int server) {
    pb::GetConsensusStateRequestPB req;
    req.set_tablet_id(kTablet);
    pb::GetConsensusStateResponsePB resp;
    BASALT_RETURN_IF_ERROR(clients_[server]->Call(
        [&](grpc::ClientContext* c, const auto& rq, auto* rs) {
          return clients_[server]->consensus->GetConsensusState(c, rq, rs);
        },
        req, &resp));
    return resp;
  }

  // Waits until the leader's committed configuration has exactly these voters and no learner.
  bool WaitForVoters(const std::set<int>& voters, absl::Duration timeout = absl::Seconds(30)) {
    RaftConfig want;
    for (int i : voters) want.voters.push_back(servers_[i]->uuid());
    want = NormalizeConfig(want);
    return WaitFor(
        [&] {
          const int leader = Leader();
          if (leader < 0) return false;
          const auto [config, index] = MaybeReplica(leader)->raft()->committed_config();
          return config == want;
        },
        timeout);
  }

  // Every replica in `servers` applied what the leader applied, and their checksums at the last
  // write agree with `rows` rows.
  void ExpectReplicasAgree(const std::set<int>& servers, uint64_t ts, uint64_t rows) {
    uint64_t index = 0;
    ASSERT_TRUE(WaitFor([&] {
      index = LeaderAppliedIndex(LiveHosts());
      return index > 0;
    }));
    std::optional<uint64_t> checksum;
    for (int i : servers) {
      ASSERT_TRUE(WaitFor(
          [&] {
            auto r = MaybeReplica(i);
            return r != nullptr && r->state() == ReplicaState::kRunning &&
                   r->GetStatus().last_applied_index >= index;
          },
          absl::Seconds(30)))
          << "server " << i;
      absl::StatusOr<pb::ChecksumResponsePB> c = Checksum(i, ts);
      BASALT_ASSERT_OK(c) << i << ": " << c.status();
      EXPECT_EQ(c->num_rows(), rows) << i;
      if (!checksum) checksum = c->checksum();
      EXPECT_EQ(c->checksum(), *checksum) << i;
    }
  }

  // Writes `batches` batches of 500 rows from key `from`; returns the last write's timestamp.
  uint64_t WriteRows(int32_t from, int batches) {
    uint64_t ts = 0;
    for (int b = 0; b < batches; ++b) {
      const int32_t k = from + b * 500;
      absl::Status s = Insert(k, k + 500, &ts, LiveHosts());
      BASALT_EXPECT_OK(s);
    }
    return ts;
  }

  std::set<int> LiveHosts() {
    std::set<int> hosts;
    for (int i = 0; i < num_servers_; ++i) {
      auto r = MaybeReplica(i);
      if (r != nullptr && r->raft() != nullptr && r->state() != ReplicaState::kFailed) {
        hosts.insert(i);
      }
    }
    return hosts;
  }

  // Whether every block of server `i` is named by a live replica's superblock, once flushes and
  // compactions in progress (which write blocks before their superblock) are done.
  bool NoLeakedBlocks(int i) {
    std::vector<BlockId> leaked;
    const bool ok = WaitFor(
        [&] {
          leaked = UnreferencedBlocks(i);
          return leaked.empty();
        },
        absl::Seconds(5));
    for (BlockId id : leaked) ADD_FAILURE() << "server " << i << ": leaked block " << id.ToString();
    return ok;
  }

  // Blocks of server `i` that no superblock of a live replica names.
  std::vector<BlockId> UnreferencedBlocks(int i) {
    std::set<BlockId> named;
    for (const auto& r : servers_[i]->tablet_manager()->List()) {
      absl::StatusOr<TabletSuperBlock> sb = ReadSuperBlock(
          Env::Default(), ReplicaFiles::SuperBlockPath(r->context(), r->tablet_id()));
      if (!sb.ok()) continue;
      for (const RowSetMetadata& rs : sb->rowsets) {
        for (BlockId id : rs.AllBlocks()) named.insert(id);
      }
      for (BlockId id : sb->orphaned_blocks) named.insert(id);
    }
    std::vector<BlockId> out;
    absl::StatusOr<std::vector<BlockId>> all = servers_[i]->block_manager()->ListBlocks();
    BASALT_EXPECT_OK(all);
    if (!all.ok()) return out;
    for (BlockId id : *all) {
      if (!named.contains(id)) out.push_back(id);
    }
    return out;
  }

  // Sets a flag for the rest of the test; the value before the test's first set comes back at
  // its end.
  void SetFlag(int32_t* flag, int32_t value) {
    for (const auto& s : saved_) {
      if (s->flag == flag) {
        *flag = value;
        return;
      }
    }
    saved_.push_back(std::make_unique<FlagSaver>(flag, value));
  }

 private:
  struct FlagSaver {
    FlagSaver(int32_t* flag, int32_t value) : flag(flag), old(*flag) { *flag = value; }
    ~FlagSaver() { *flag = old; }
    int32_t* const flag;
    const int32_t old;
  };
  std::vector<std::unique_ptr<FlagSaver>> saved_;
};

TEST_F(TabletCopyTest, AddedVoterIsCopiedPromotedAndRemoved) {
  uint64_t ts = WriteRows(0, 4);
  // A client request with an id, applied before the flush: the copy does not replay its entry,
  // so its answer travels with the copy (exactly-once writes).
  const pb::WriteRequestPB tracked =
      WithRequestId(WriteBuilder(&schema_).Insert(900000).Build(kTablet), "client-x", 1, 1);
  pb::WriteResponsePB tracked_resp;
  BASALT_ASSERT_OK(clients_[Leader()]->Write(tracked, &tracked_resp));
  // Blocks on the leader, so that the copy carries rowsets and the log above them.
  BASALT_ASSERT_OK(MaybeReplica(Leader())->tablet()->FlushMemRowSet());
  ts = WriteRows(2000, 2);
  absl::StatusOr<pb::GetConsensusStateResponsePB> before = ConsensusState(Leader());
  BASALT_ASSERT_OK(before);
  EXPECT_EQ(before->role(), pb::LEADER);
  EXPECT_EQ(before->cstate().committed_config().peers_size(), 3);

  pb::ChangeConfigResponsePB resp;
  pb::ChangeConfigRequestPB add = Change(pb::ADD_PEER, 3);
  add.set_cas_config_index(before->cstate().committed_config_index());
  absl::Status s = ChangeConfig(add, &resp);
  BASALT_ASSERT_OK(s);
  EXPECT_GT(resp.config_index(), 0u);
  // The learner gets a copy from the leader, catches up and is promoted.
  ASSERT_TRUE(WaitForVoters({0, 1, 2, 3}));
  ExpectReplicasAgree({0, 1, 2, 3}, ts, 3001);
  EXPECT_TRUE(NoLeakedBlocks(3));
  {
    std::shared_ptr<TabletReplica> copied = MaybeReplica(3);
    ASSERT_NE(copied, nullptr);
    ResultTracker answers;
    BASALT_ASSERT_OK(answers.Load(
        Env::Default(),
        JoinPath(ReplicaFiles::TabletDir(copied->context(), kTablet), kAnswersFileName)));
    ResultTracker::Answer got;
    ASSERT_EQ(answers.Admit(tracked.request_id(), absl::Now(), &got),
              ResultTracker::Admission::kAnswered);
    EXPECT_EQ(got.response.timestamp(), tracked_resp.timestamp());
  }
  ts = WriteRows(3000, 1);
  ExpectReplicasAgree({0, 1, 2, 3}, ts, 3501);

  // Remove a follower; it keeps running (the master tombstones it) but is not a member.
  int leader = Leader();
  const int removed = leader == 0 ? 1 : 0;
  BASALT_ASSERT_OK(ChangeConfig(Change(pb::REMOVE_PEER, removed)));
  std::set<int> members = {0, 1, 2, 3};
  members.erase(removed);
  ASSERT_TRUE(WaitForVoters(members));
  ts = WriteRows(4000, 1);
  ExpectReplicasAgree(members, ts, 4001);
}

TEST_F(TabletCopyTest, BadChangesAreRefusedAndChangeNothing) {
  WriteRows(0, 1);
  const int leader = Leader();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % 3;
  auto config_now = [&] { return MaybeReplica(leader)->raft()->committed_config(); };
  const auto before = config_now();

  auto expect = [&](pb::ChangeConfigRequestPB req, absl::StatusCode code, const std::string& what,
                    int server) {
    absl::Status s = ChangeConfigOn(server, req);
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_NE(s.message().find(what), std::string::npos) << s;
  };
  pb::ChangeConfigRequestPB req = Change(pb::ADD_PEER, 3);
  req.clear_peer_address();
  expect(req, absl::StatusCode::kInvalidArgument, "peer_address", leader);
  req = Change(pb::ADD_PEER, 3, pb::RaftPeerPB::MemberType(7));
  expect(req, absl::StatusCode::kInvalidArgument, "member_type", leader);
  req = Change(pb::ChangeConfigTypePB(9), 3);
  expect(req, absl::StatusCode::kInvalidArgument, "type", leader);
  req = Change(pb::REMOVE_PEER, 3);
  req.clear_peer_uuid();
  expect(req, absl::StatusCode::kInvalidArgument, "peer_uuid", leader);
  req = Change(pb::REMOVE_PEER, 3);
  req.set_tablet_id("no-such-tablet");
  expect(req, absl::StatusCode::kNotFound, "no-such-tablet", leader);
  req = Change(pb::REMOVE_PEER, 3);
  req.set_dest_uuid("someone-else");
  expect(req, absl::StatusCode::kFailedPrecondition, "someone-else", leader);
  // Not a member; the leader itself; the last voter's demotion is covered by Raft's own tests.
  expect(Change(pb::REMOVE_PEER, 3), absl::StatusCode::kFailedPrecondition, "", leader);
  expect(Change(pb::REMOVE_PEER, leader), absl::StatusCode::kFailedPrecondition, "leader", leader);
  expect(Change(pb::MODIFY_PEER, leader, pb::RaftPeerPB::NON_VOTER),
         absl::StatusCode::kFailedPrecondition, "leader", leader);
  expect(Change(pb::MODIFY_PEER, follower, pb::RaftPeerPB::VOTER),
         absl::StatusCode::kFailedPrecondition, "", leader);  // Not a learner.
  req = Change(pb::ADD_PEER, 3);
  req.set_cas_config_index(before.second + 5);
  expect(req, absl::StatusCode::kFailedPrecondition, "cas_config_index", leader);
  // A follower sends the caller to the leader.
  absl::Status s = ChangeConfigOn(follower, Change(pb::ADD_PEER, 3));
  EXPECT_EQ(DetailCode(s), pb::ErrorDetailPB::NOT_THE_LEADER) << s;
  EXPECT_EQ(config_now(), before);
  EXPECT_EQ(MaybeReplica(3), nullptr);
}

// Logs of 1 MB segments, of which a leader keeps at most one for lagging followers (the flags are
// read when the replicas open).
class TabletCopySmallLogTest : public TabletCopyTest {
 protected:
  void SetUp() override {
    SetFlag(&FLAGS_log_segment_size_mb, 1);
    SetFlag(&FLAGS_log_max_segments_to_retain, 1);
    TabletCopyTest::SetUp();
  }
};

TEST_F(TabletCopySmallLogTest, FollowerBehindTheLeadersLogIsReplacedByACopy) {
  WriteRows(0, 1);
  const int leader = Leader();
  const int lagging = (leader + 1) % 3;
  std::set<int> alive = {0, 1, 2};
  alive.erase(lagging);
  StopServer(lagging);
  // About 2.5 MB of log in 1 MB segments, flushed each round, so that the leader collects the
  // entries the stopped follower still needs (it retains at most one segment for it).
  constexpr int kRounds = 5;
  constexpr int kBatches = 40;  // Of 500 rows.
  uint64_t ts = 0;
  for (int round = 0; round < kRounds; ++round) {
    ts = WriteRows(500 + round * kBatches * 500, kBatches);
    const int l = WaitForLeader(alive);
    ASSERT_GE(l, 0);
    BASALT_ASSERT_OK(MaybeReplica(l)->tablet()->FlushMemRowSet());
  }
  const int l = WaitForLeader(alive);
  ASSERT_TRUE(
      WaitFor([&] { return MaybeReplica(l)->raft()->log().FirstIndex() > 30; }, absl::Seconds(20)))
      << "first index " << MaybeReplica(l)->raft()->log().FirstIndex();
  StartServer(lagging);
  ExpectReplicasAgree({0, 1, 2}, ts, 500 + kRounds * kBatches * 500);
}

TEST_F(TabletCopyTest, TombstonedFollowerIsCopiedBackKeepingItsTerm) {
  const uint64_t ts = WriteRows(0, 2);
  const int leader = Leader();
  const int follower = (leader + 1) % 3;
  const uint64_t term = MaybeReplica(follower)->raft()->term();
  pb::DeleteTabletRequestPB del;
  del.set_tablet_id(kTablet);
  del.set_delete_type(pb::TABLET_DATA_TOMBSTONED);
  del.set_cas_config_index(0);
  absl::Status s = clients_[follower]->DeleteTablet(del);
  BASALT_ASSERT_OK(s);
  // Still a member: the leader finds its server without the replica and copies it back.
  ExpectReplicasAgree({0, 1, 2}, ts, 1000);
  EXPECT_GE(MaybeReplica(follower)->raft()->term(), term);
  EXPECT_TRUE(servers_[follower]->tablet_manager()->Tombstones().empty());
  EXPECT_TRUE(NoLeakedBlocks(follower));
}

TEST_F(TabletCopyTest, TombstonesAreListedAndSurviveRestarts) {
  WriteRows(0, 1);
  const int leader = Leader();
  const int removed = (leader + 1) % 3;
  BASALT_ASSERT_OK(ChangeConfig(Change(pb::REMOVE_PEER, removed)));
  pb::DeleteTabletRequestPB del;
  del.set_tablet_id(kTablet);
  del.set_delete_type(pb::TABLET_DATA_TOMBSTONED);
  del.set_cas_config_index(0);
  // The leader's committed configuration is newer than index 0: refused, nothing deleted.
  EXPECT_EQ(clients_[leader]->DeleteTablet(del).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(MaybeReplica(leader)->state(), ReplicaState::kRunning);
  // The removed replica need not learn that its removal committed: its own index is what counts.
  del.set_cas_config_index(MaybeReplica(removed)->raft()->config_index());
  absl::Status s = clients_[removed]->DeleteTablet(del);
  BASALT_ASSERT_OK(s);
  BASALT_EXPECT_OK(clients_[removed]->DeleteTablet(del));  // Tombstoning a tombstone.
  auto listed_deleted = [&] {
    pb::ListTabletsResponsePB list;
    BASALT_EXPECT_OK(clients_[removed]->ListTablets(&list));
    return list.tablets_size() == 1 && list.tablets(0).state() == pb::TABLET_DELETED &&
           list.tablets(0).table_name() == "test_table";
  };
  EXPECT_TRUE(listed_deleted());
  EXPECT_TRUE(NoLeakedBlocks(removed));
  const std::string dir = JoinPath(JoinPath(dirs_[removed]->path(), "tablets"), kTablet);
  absl::StatusOr<std::vector<std::string>> files = Env::Default()->GetChildren(dir);
  BASALT_ASSERT_OK(files);
  std::set<std::string> names(files->begin(), files->end());
  names.erase(".");
  names.erase("..");
  EXPECT_EQ(names, (std::set<std::string>{"cmeta", "replica"}));
  StopServer(removed);
  StartServer(removed);
  EXPECT_TRUE(listed_deleted());
  // CreateTablet does not bring a tombstone back; a full delete removes it.
  pb::CreateTabletRequestPB create = CreateTabletRequest(kTablet, Peers());
  EXPECT_EQ(clients_[removed]->CreateTablet(create).code(), absl::StatusCode::kAlreadyExists);
  del.clear_cas_config_index();
  del.set_delete_type(pb::TABLET_DATA_DELETED);
  BASALT_ASSERT_OK(clients_[removed]->DeleteTablet(del));
  pb::ListTabletsResponsePB list;
  BASALT_ASSERT_OK(clients_[removed]->ListTablets(&list));
  EXPECT_EQ(list.tablets_size(), 0);
  EXPECT_FALSE(Env::Default()->FileExists(dir));
}

TEST_F(TabletCopyTest, CorruptChunksFailTheCopyCleanlyAndItIsRetried) {
  const uint64_t ts = WriteRows(0, 4);
  BASALT_ASSERT_OK(MaybeReplica(Leader())->tablet()->FlushMemRowSet());
  SetFlag(&FLAGS_tablet_copy_inject_corrupt_chunks, 3);
  BASALT_ASSERT_OK(ChangeConfig(Change(pb::ADD_PEER, 3)));
  ASSERT_TRUE(WaitForVoters({0, 1, 2, 3}));
  ExpectReplicasAgree({0, 1, 2, 3}, ts, 2000);
  EXPECT_TRUE(NoLeakedBlocks(3));
}

TEST_F(TabletCopyTest, CopiesThatKeepFailingBackOff) {
  const uint64_t ts = WriteRows(0, 2);
  BASALT_ASSERT_OK(MaybeReplica(Leader())->tablet()->FlushMemRowSet());
  constexpr int kLots = 1000000;
  SetFlag(&FLAGS_tablet_copy_inject_failures, kLots);
  BASALT_ASSERT_OK(ChangeConfig(Change(pb::ADD_PEER, 3)));
  // Retries start at 50 ms and double (with +-25% jitter) up to 400 ms: about 10 attempts in
  // 3 s. Without the backoff the leader would retry as fast as the copies fail (hundreds).
  absl::SleepFor(absl::Seconds(3));
  const int attempts = kLots - FLAGS_tablet_copy_inject_failures;
  EXPECT_GE(attempts, 2);
  EXPECT_LE(attempts, 16);
  // Each failed copy left a tombstone, never a half-installed replica or a leaked block.
  EXPECT_EQ(MaybeReplica(3), nullptr);
  EXPECT_EQ(servers_[3]->tablet_manager()->Tombstones().size(), 1u);
  EXPECT_TRUE(NoLeakedBlocks(3));
  FLAGS_tablet_copy_inject_failures = 0;
  ASSERT_TRUE(WaitForVoters({0, 1, 2, 3}));
  ExpectReplicasAgree({0, 1, 2, 3}, ts, 1000);
}

TEST_F(TabletCopyTest, SessionRequestsAreValidated) {
  WriteRows(0, 2);
  const int leader = Leader();
  BASALT_ASSERT_OK(MaybeReplica(leader)->tablet()->FlushMemRowSet());
  TsClient& c = *clients_[leader];
  auto begin = [&](const std::string& tablet, pb::BeginTabletCopySessionResponsePB* resp) {
    pb::BeginTabletCopySessionRequestPB req;
    req.set_tablet_id(tablet);
    req.set_requestor_uuid("tester");
    return c.Call([&](grpc::ClientContext* ctx, const auto& rq,
                      auto* rs) { return c.copy->BeginTabletCopySession(ctx, rq, rs); },
                  req, resp);
  };
  auto fetch = [&](const pb::FetchDataRequestPB& req, pb::FetchDataResponsePB* resp) {
    return c.Call([&](grpc::ClientContext* ctx, const auto& rq,
                      auto* rs) { return c.copy->FetchData(ctx, rq, rs); },
                  req, resp);
  };
  pb::BeginTabletCopySessionResponsePB session;
  EXPECT_EQ(DetailCode(begin("no-such-tablet", &session)), pb::ErrorDetailPB::TABLET_NOT_FOUND);
  absl::Status s = begin(kTablet, &session);
  BASALT_ASSERT_OK(s);
  ASSERT_GT(session.blocks_size(), 0);

  pb::FetchDataRequestPB req;
  pb::FetchDataResponsePB resp;
  req.set_session_id(session.session_id());
  req.set_type(pb::BLOCK);
  req.set_block_id(session.blocks(0).block_id());
  BASALT_ASSERT_OK(fetch(req, &resp));
  EXPECT_EQ(resp.chunk().crc32c(), crc32c::Value(resp.chunk().data()));
  EXPECT_EQ(resp.chunk().total_length(), session.blocks(0).size());
  struct Bad {
    std::function<void(pb::FetchDataRequestPB*)> mutate;
    absl::StatusCode code;
    std::string field;
  };
  const std::vector<Bad> bad = {
      {[](auto* r) { r->set_session_id("nope"); }, absl::StatusCode::kNotFound, "session_id"},
      {[](auto* r) { r->set_block_id(12345); }, absl::StatusCode::kInvalidArgument, "block_id"},
      {[&](auto* r) { r->set_offset(session.blocks(0).size() + 1); },
       absl::StatusCode::kInvalidArgument, "offset"},
      {[](auto* r) { r->set_type(pb::TabletCopyDataTypePB(5)); },
       absl::StatusCode::kInvalidArgument, "type"},
      {[&](auto* r) {
         r->set_type(pb::LOG_ENTRIES);
         r->set_offset(session.log_last_index() + 1);
       },
       absl::StatusCode::kInvalidArgument, "offset"},
  };
  for (const Bad& b : bad) {
    pb::FetchDataRequestPB r = req;
    b.mutate(&r);
    s = fetch(r, &resp);
    EXPECT_EQ(s.code(), b.code) << s;
    EXPECT_NE(s.message().find(b.field), std::string::npos) << s;
  }
  if (session.log_last_index() > session.log_prev_index()) {
    req.set_type(pb::LOG_ENTRIES);
    req.set_offset(session.log_prev_index() + 1);
    BASALT_ASSERT_OK(fetch(req, &resp));
    pb::LogEntryBatchPB batch;
    ASSERT_TRUE(batch.ParseFromString(resp.chunk().data()));
    EXPECT_GT(batch.entries_size(), 0);
  }
  pb::EndTabletCopySessionRequestPB end;
  end.set_session_id(session.session_id());
  pb::EndTabletCopySessionResponsePB end_resp;
  auto end_call = [&] {
    return c.Call([&](grpc::ClientContext* ctx, const auto& rq,
                      auto* rs) { return c.copy->EndTabletCopySession(ctx, rq, rs); },
                  end, &end_resp);
  };
  BASALT_EXPECT_OK(end_call());
  EXPECT_EQ(end_call().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fetch(req, &resp).code(), absl::StatusCode::kNotFound);

  // At most --tablet_copy_max_sessions sessions at once; a refused one is UNAVAILABLE (retried).
  SetFlag(&FLAGS_tablet_copy_max_sessions, 1);
  pb::BeginTabletCopySessionResponsePB first;
  pb::BeginTabletCopySessionResponsePB second;
  BASALT_ASSERT_OK(begin(kTablet, &first));
  absl::Status busy = begin(kTablet, &second);
  EXPECT_EQ(busy.code(), absl::StatusCode::kUnavailable) << busy;
  EXPECT_NE(std::string(busy.message()).find("--tablet_copy_max_sessions"), std::string::npos)
      << busy;
  end.set_session_id(first.session_id());
  BASALT_EXPECT_OK(end_call());
  BASALT_EXPECT_OK(begin(kTablet, &second));
}

// At most --num_tablets_to_copy_simultaneously copies run on a receiver; another one is refused
// with UNAVAILABLE (its leader retries with backoff) and accepted again once they end.
TEST_F(TabletCopyTest, ConcurrentCopiesOnAReceiverAreCapped) {
  SetFlag(&FLAGS_num_tablets_to_copy_simultaneously, 1);
  WriteRows(0, 2);
  const int leader = Leader();
  BASALT_ASSERT_OK(MaybeReplica(leader)->tablet()->FlushMemRowSet());
  SetFlag(&FLAGS_tablet_copy_fetch_delay_ms, 500);  // A copy of several chunks takes seconds.
  const std::string source = servers_[leader]->uuid();
  const std::string address = servers_[leader]->advertised_address().ToString();
  const uint64_t term = MaybeReplica(leader)->raft()->term();
  TsTabletManager* receiver = servers_[3]->tablet_manager();
  absl::StatusOr<uint64_t> copied = absl::UnknownError("not run");
  std::thread copier(
      [&] { copied = receiver->StartTabletCopy(kTablet, source, address, term, 1); });
  // Until the copy runs: its replica file says COPYING (it holds its slot from before that).
  const std::string replica_file =
      JoinPath(JoinPath(JoinPath(dirs_[3]->path(), "tablets"), kTablet), kReplicaFileName);
  ASSERT_TRUE(WaitFor([&] {
    std::string data;
    if (!ReadFileToString(Env::Default(), replica_file, &data).ok()) return false;
    absl::StatusOr<ReplicaFileHeader> h = PeekReplicaFile(data, replica_file);
    return h.ok() && h->state == ReplicaDataState::kCopying;
  }));
  absl::Status refused =
      receiver->StartTabletCopy("other-tablet", source, address, term, 1).status();
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_NE(std::string(refused.message()).find("--num_tablets_to_copy_simultaneously"),
            std::string::npos)
      << refused;
  copier.join();
  BASALT_EXPECT_OK(copied.status());
  // Free again: the other copy gets past the cap (and fails on the source, which has no such
  // tablet).
  refused = receiver->StartTabletCopy("other-tablet", source, address, term, 1).status();
  EXPECT_FALSE(absl::IsUnavailable(refused) &&
               std::string(refused.message()).find("simultaneously") != std::string::npos)
      << refused;
}

TEST_F(TabletCopyTest, StartTabletCopyKeepsAReplicaThatCanCatchUp) {
  WriteRows(0, 1);
  const int leader = Leader();
  const int follower = (leader + 1) % 3;
  pb::StartTabletCopyRequestPB req;
  req.set_tablet_id(kTablet);
  req.set_copy_peer_uuid(servers_[leader]->uuid());
  servers_[leader]->advertised_address().ToPB(req.mutable_copy_peer_address());
  req.set_caller_term(MaybeReplica(leader)->raft()->term());
  req.set_leader_log_first_index(1);
  pb::StartTabletCopyResponsePB resp;
  auto start = [&](const pb::StartTabletCopyRequestPB& r) {
    return clients_[follower]->Call(
        [&](grpc::ClientContext* c, const auto& rq, auto* rs) {
          return clients_[follower]->consensus->StartTabletCopy(c, rq, rs);
        },
        r, &resp);
  };
  EXPECT_EQ(start(req).code(), absl::StatusCode::kAlreadyExists);
  pb::StartTabletCopyRequestPB stale = req;
  stale.set_caller_term(0);
  EXPECT_EQ(start(stale).code(), absl::StatusCode::kFailedPrecondition);
  pb::StartTabletCopyRequestPB bad = req;
  bad.clear_copy_peer_address();
  EXPECT_EQ(start(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = req;
  bad.set_copy_peer_uuid(servers_[follower]->uuid());
  EXPECT_EQ(start(bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MaybeReplica(follower)->state(), ReplicaState::kRunning);

  // The entry before the leader's first one, with the term both logs agree on: kept.
  RaftNode* node = MaybeReplica(follower)->raft();
  ASSERT_TRUE(WaitFor([&] { return node->log().LastIndex() >= 2; }));  // It may lag the write.
  absl::StatusOr<uint64_t> term1 = node->log().Term(1);
  BASALT_ASSERT_OK(term1.status());
  pb::StartTabletCopyRequestPB agreed = req;
  agreed.set_leader_log_first_index(2);
  agreed.set_leader_log_first_prev_term(*term1);
  EXPECT_EQ(start(agreed).code(), absl::StatusCode::kAlreadyExists);
  // With another term there, the local log diverged from the leader's: it is replaced by a copy.
  pb::StartTabletCopyRequestPB diverged = agreed;
  diverged.set_leader_log_first_prev_term(*term1 + 7);
  BASALT_EXPECT_OK(start(diverged));
  ASSERT_TRUE(WaitFor([&] {
    auto r = MaybeReplica(follower);
    return r != nullptr && r->state() == ReplicaState::kRunning;
  }));
}

// A tombstone that is still a voter votes (docs/tablet_copy.md "Tombstones vote"): with the
// leader gone, the last running replica wins an election with the tombstone's vote and, as leader,
// copies the tombstone back. Without that vote the group could elect nobody and never repair.
TEST_F(TabletCopyTest, TombstonedVoterLetsTheGroupElectAndRepair) {
  SetFlag(&FLAGS_tablet_copy_inject_failures, 1000000);  // No copy succeeds for now.
  BASALT_ASSERT_OK(Insert(0, 100));
  const int leader = Leader();
  ASSERT_GE(leader, 0);
  const int t = (leader + 1) % 3;
  const int f = (leader + 2) % 3;
  const uint64_t applied = LeaderAppliedIndex();
  ASSERT_TRUE(WaitForApplied(t, applied));
  // f must hold the entries too, or the tombstone rightly refuses it its vote (a follower held
  // back early, e.g. by a copy attempt while the group formed, may still be catching up).
  ASSERT_TRUE(WaitForApplied(f, applied));
  BASALT_ASSERT_OK(servers_[t]->tablet_manager()->DeleteTablet(
      kTablet, TsTabletManager::DeleteMode::kTombstone));
  std::map<std::string, ReplicaFileHeader> tombstones = servers_[t]->tablet_manager()->Tombstones();
  ASSERT_EQ(tombstones.count(kTablet), 1u);
  ASSERT_TRUE(tombstones[kTablet].tombstone_last_logged.has_value());
  EXPECT_GE(tombstones[kTablet].tombstone_last_logged->index, applied);

  StopServer(leader);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = MaybeReplica(f);
        return r != nullptr && r->raft() != nullptr && r->raft()->role() == RaftCore::Role::kLeader;
      },
      absl::Seconds(30)))
      << "the last replica was not elected: the tombstone did not vote";

  SetFlag(&FLAGS_tablet_copy_inject_failures, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = MaybeReplica(t);
        return r != nullptr && r->state() == ReplicaState::kRunning;
      },
      absl::Seconds(30)))
      << "the new leader did not copy the tombstone back";
  BASALT_ASSERT_OK(Insert(100, 200, nullptr, {std::min(f, t), std::max(f, t)}));
  ASSERT_TRUE(WaitForApplied(t, LeaderAppliedIndex({std::min(f, t), std::max(f, t)})));
  auto rows = CountRows(t);
  BASALT_ASSERT_OK(rows.status());
  EXPECT_EQ(*rows, 200);
}

}  // namespace tablet_copy_test_file
}  // namespace
}  // namespace basalt
