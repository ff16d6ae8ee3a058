#include "consensus/grpc_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <glog/logging.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "consensus/loopback_raft_cluster.h"
#include "consensus/raft_message_pb.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/consensus.pb.h"
#include "rpc/frame_server.h"

namespace basalt {
namespace {
namespace grpc_transport_test_file {

constexpr absl::Duration kTimeout = absl::Seconds(20);

// A temporary directory on the real file system, deleted at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "grpc_transport_test.XXXXXX";
    CHECK(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() { CHECK(Env::Default()->DeleteDirRecursively(path_).ok()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Collects the messages a handler receives.
class Inbox {
 public:
  RaftMessageHandler handler() {
    return [this](RaftMessage m) {
      absl::MutexLock l(&mu_);
      messages_.push_back(std::move(m));
    };
  }
  // Waits until `n` messages arrived; returns them.
  std::vector<RaftMessage> WaitFor(size_t n) {
    absl::MutexLock l(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return messages_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), kTimeout);
    return messages_;
  }

 private:
  absl::Mutex mu_;
  std::vector<RaftMessage> messages_ ABSL_GUARDED_BY(mu_);
};

GrpcTransportOptions Options(const PeerId& id, int coalesce_ms) {
  GrpcTransportOptions o;
  o.server_id = id;
  o.heartbeat_coalesce_ms = coalesce_ms;
  o.rpc_timeout_ms = 1000;
  return o;
}

RaftMessage Message(MessageType type, const PeerId& from, const PeerId& to, uint64_t term) {
  RaftMessage m;
  m.type = type;
  m.from = from;
  m.to = to;
  m.term = term;
  return m;
}

// ---- The transport alone ----------------------------------------------------------------------

TEST(GrpcTransportTest, DeliversMessagesOfManyGroupsToTheirHandlers) {
  GrpcTransport a(Options("a", 5));
  GrpcTransport b(Options("b", 5));
  BASALT_ASSERT_OK(a.Start());
  BASALT_ASSERT_OK(b.Start());
  BASALT_ASSERT_OK(a.AddPeer("b", StrCat("127.0.0.1:", b.port())));
  Inbox g1, g2;
  BASALT_ASSERT_OK(b.Register("g1", "b", g1.handler()));
  BASALT_ASSERT_OK(b.Register("g2", "b", g2.handler()));
  EXPECT_TRUE(absl::IsAlreadyExists(b.Register("g1", "b", g1.handler())));
  EXPECT_TRUE(absl::IsInvalidArgument(b.Register("g3", "a", g1.handler())));

  RaftMessage append = Message(MessageType::kAppend, "a", "b", 3);
  append.index = 7;
  append.log_term = 2;
  append.commit = 6;
  LogEntry e;
  e.term = 3;
  e.index = 8;
  e.data = "payload";
  append.entries.push_back(e);
  a.Send("g1", append);
  a.Send("g2", Message(MessageType::kVote, "a", "b", 4));
  a.Send("g3", Message(MessageType::kVote, "a", "b", 4));  // Unknown group: dropped.
  std::vector<RaftMessage> got1 = g1.WaitFor(1);
  std::vector<RaftMessage> got2 = g2.WaitFor(1);
  ASSERT_EQ(got1.size(), 1u);
  ASSERT_EQ(got2.size(), 1u);
  EXPECT_EQ(MessageToString(got1[0]), MessageToString(append));
  EXPECT_EQ(got1[0].entries[0].data, "payload");
  EXPECT_EQ(got2[0].type, MessageType::kVote);
  EXPECT_EQ(got2[0].from, "a");
}

// Starts `a` and `b` with `b` serving frame RPC on `frame` (started here; its port named in b's
// answers) and delivering group "g" to `inbox`; `a` knows `b`.
void StartWithFramePort(GrpcTransport* a, GrpcTransport* b, FrameServer* frame, Inbox* inbox) {
  b->RegisterFrameMethods(frame);
  BASALT_ASSERT_OK(frame->Start());
  b->SetFrameRpcPort(frame->port());
  BASALT_ASSERT_OK(a->Start());
  BASALT_ASSERT_OK(b->Start());
  BASALT_ASSERT_OK(a->AddPeer("b", StrCat("127.0.0.1:", b->port())));
  BASALT_ASSERT_OK(b->Register("g", "b", inbox->handler()));
}

// Sends votes of terms [first, last] from "a" to "b" in group "g", each after the one before
// arrived; the inbox held first - 1 messages.
void SendVotesOneByOne(GrpcTransport* a, Inbox* inbox, uint64_t first, uint64_t last) {
  for (uint64_t term = first; term <= last; term++) {
    a->Send("g", Message(MessageType::kVote, "a", "b", term));
    ASSERT_EQ(inbox->WaitFor(term).size(), term);
  }
}

// A peer that names a frame RPC port in its answers gets the next batches over it; when that
// port stops answering, gRPC carries them again, and a new port named later is used.
TEST(GrpcTransportTest, SwitchesToThePeersFramePortAndBackToGrpc) {
  GrpcTransportOptions ao = Options("a", 5);
  ao.frame_retry_after = absl::Milliseconds(300);
  GrpcTransport a(ao);
  GrpcTransport b(Options("b", 5));
  auto frame = std::make_unique<FrameServer>(FrameServerOptions{});
  Inbox inbox;
  ASSERT_NO_FATAL_FAILURE(StartWithFramePort(&a, &b, frame.get(), &inbox));

  // Each batch is counted once its RPC returned, which is after the delivery.
  auto sent = [&a](int64_t n) {
    const absl::Time end = absl::Now() + kTimeout;
    while (a.stats().rpcs_sent < n && absl::Now() < end) absl::SleepFor(absl::Milliseconds(1));
    return a.stats();
  };
  // The first batch goes over gRPC; its answer names the frame port; the rest go there.
  ASSERT_NO_FATAL_FAILURE(SendVotesOneByOne(&a, &inbox, 1, 5));
  GrpcTransport::Stats st = sent(5);
  EXPECT_EQ(st.rpcs_sent, 5);
  EXPECT_EQ(st.frame_rpcs_sent, 4);
  EXPECT_EQ(st.rpcs_failed, 0);

  // The frame port goes away: the batch in flight may be lost (as on any broken connection);
  // the next go over gRPC.
  frame->Shutdown();
  b.SetFrameRpcPort(0);
  for (uint64_t term = 6; term <= 8; term++) {
    a.Send("g", Message(MessageType::kVote, "a", "b", term));
    st = sent(static_cast<int64_t>(term));  // Each RPC done (delivered or failed) before the next.
  }
  EXPECT_LE(st.rpcs_failed, 1);
  size_t delivered = inbox.WaitFor(7).size();
  EXPECT_GE(delivered, 7u);
  const int64_t frame_sent = st.frame_rpcs_sent;

  // A new frame port, named in the gRPC answers: not used while the failure is recent, used
  // once frame_retry_after has passed.
  frame = std::make_unique<FrameServer>(FrameServerOptions{});
  b.RegisterFrameMethods(frame.get());
  BASALT_ASSERT_OK(frame->Start());
  b.SetFrameRpcPort(frame->port());
  a.Send("g", Message(MessageType::kVote, "a", "b", 9));
  st = sent(9);
  delivered = inbox.WaitFor(delivered + 1).size();
  EXPECT_EQ(st.frame_rpcs_sent, frame_sent) << "a failed frame port was tried again at once";
  absl::SleepFor(absl::Milliseconds(400));
  for (uint64_t term = 10; term <= 12; term++) {
    a.Send("g", Message(MessageType::kVote, "a", "b", term));
    st = sent(static_cast<int64_t>(term));
  }
  delivered = inbox.WaitFor(12 - st.rpcs_failed).size();
  EXPECT_GE(st.frame_rpcs_sent, frame_sent + 1);
  EXPECT_GE(delivered, 12u - st.rpcs_failed);
  a.Shutdown();
  b.Shutdown();
}

// A peer's frame port taken over by another server (both restarted with free ports): the batches
// it refuses (addressed to another server) make the sender go back to gRPC, which reaches the
// peer, instead of sending to the wrong server for good.
TEST(GrpcTransportTest, FramePortTakenByAnotherServerFallsBackToGrpc) {
  GrpcTransport a(Options("a", 5));
  GrpcTransport b(Options("b", 5));
  GrpcTransport c(Options("c", 5));
  auto frame = std::make_unique<FrameServer>(FrameServerOptions{});
  Inbox inbox;
  ASSERT_NO_FATAL_FAILURE(StartWithFramePort(&a, &b, frame.get(), &inbox));
  const int port = frame->port();
  ASSERT_NO_FATAL_FAILURE(SendVotesOneByOne(&a, &inbox, 1, 3));
  // b's frame port now belongs to c.
  frame->Shutdown();
  FrameServerOptions o;
  o.bind_address = StrCat("127.0.0.1:", port);
  frame = std::make_unique<FrameServer>(o);
  c.RegisterFrameMethods(frame.get());
  BASALT_ASSERT_OK(frame->Start());
  // One batch at a time (each RPC done before the next is sent); the refused ones are lost.
  for (uint64_t term = 4; term <= 10; term++) {
    a.Send("g", Message(MessageType::kVote, "a", "b", term));
    const absl::Time end = absl::Now() + kTimeout;
    while (a.stats().rpcs_sent < static_cast<int64_t>(term) && absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
  const GrpcTransport::Stats st = a.stats();
  EXPECT_EQ(st.rpcs_sent, 10);
  EXPECT_LE(st.rpcs_failed, 2);
  // 3 before the switch, and at least 5 of the 7 after it (a batch refused by c is lost).
  EXPECT_GE(inbox.WaitFor(8).size(), 8u) << "b stopped receiving once its frame port went to c";
  a.Shutdown();
  b.Shutdown();
  c.Shutdown();
}

// A transport built without frame RPC stays on gRPC whatever its peers answer.
TEST(GrpcTransportTest, WithoutFrameRpcStaysOnGrpc) {
  GrpcTransportOptions ao = Options("a", 5);
  ao.use_frame_rpc = 0;
  GrpcTransport a(ao);
  GrpcTransport b(Options("b", 5));
  FrameServer frame{FrameServerOptions{}};
  Inbox inbox;
  ASSERT_NO_FATAL_FAILURE(StartWithFramePort(&a, &b, &frame, &inbox));
  ASSERT_NO_FATAL_FAILURE(SendVotesOneByOne(&a, &inbox, 1, 3));
  EXPECT_EQ(a.stats().frame_rpcs_sent, 0);
  EXPECT_EQ(frame.connections_accepted(), 0);
  a.Shutdown();
  b.Shutdown();
}

// Heartbeats held back for coalescing and sent together keep each group's safe time pair.
TEST(GrpcTransportTest, CoalescedHeartbeatsCarryTheirSafeTimes) {
  GrpcTransport a(Options("a", 50));
  GrpcTransport b(Options("b", 50));
  BASALT_ASSERT_OK(a.Start());
  BASALT_ASSERT_OK(b.Start());
  BASALT_ASSERT_OK(a.AddPeer("b", StrCat("127.0.0.1:", b.port())));
  constexpr int kGroups = 5;
  std::vector<std::unique_ptr<Inbox>> inboxes;
  for (int g = 0; g < kGroups; ++g) {
    inboxes.push_back(std::make_unique<Inbox>());
    BASALT_ASSERT_OK(b.Register(StrCat("g", g), "b", inboxes.back()->handler()));
  }
  for (int g = 0; g < kGroups; ++g) {
    RaftMessage hb = Message(MessageType::kHeartbeat, "a", "b", 2);
    hb.commit = 9;
    hb.safe_time = 1000 + g;
    hb.safe_time_index = 10 + g;
    a.Send(StrCat("g", g), hb);
  }
  for (int g = 0; g < kGroups; ++g) {
    std::vector<RaftMessage> got = inboxes[g]->WaitFor(1);
    ASSERT_EQ(got.size(), 1u) << g;
    EXPECT_EQ(got[0].safe_time, 1000u + g);
    EXPECT_EQ(got[0].safe_time_index, 10u + g);
  }
}

// A TCP listener that never accepts: connections complete in the kernel's backlog and then hang,
// like a server that is stopped (SIGSTOP) or partitioned away.
class BlackHole {
 public:
  BlackHole() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(fd_, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    CHECK_EQ(listen(fd_, 16), 0);
    socklen_t len = sizeof(addr);
    CHECK_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~BlackHole() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_;
};

TEST(GrpcTransportTest, HungPeerDoesNotBlockOthers) {
  GrpcTransportOptions oa = Options("a", 5);
  oa.rpc_timeout_ms = 2000;
  GrpcTransport a(oa);
  GrpcTransport b(Options("b", 5));
  BASALT_ASSERT_OK(a.Start());
  BASALT_ASSERT_OK(b.Start());
  BASALT_ASSERT_OK(a.AddPeer("b", StrCat("127.0.0.1:", b.port())));
  BlackHole hole;
  BASALT_ASSERT_OK(a.AddPeer("hung", StrCat("127.0.0.1:", hole.port())));
  Inbox inbox;
  BASALT_ASSERT_OK(b.Register("g", "b", inbox.handler()));
  const absl::Time start = absl::Now();
  for (int i = 0; i < 100; ++i) {
    a.Send("g", Message(MessageType::kVote, "a", "hung", i + 1));
    a.Send("g", Message(MessageType::kVote, "a", "b", i + 1));
  }
  // All of b's messages arrive well before the hung peer's RPC reaches its deadline.
  EXPECT_EQ(inbox.WaitFor(100).size(), 100u);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1500));
  EXPECT_EQ(a.stats().rpcs_failed, 0);
  // The hung peer's RPC fails at its deadline, and its messages count as dropped.
  const absl::Time deadline = absl::Now() + kTimeout;
  while (a.stats().rpcs_failed == 0 && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // Bounded poll of a counter.
  }
  EXPECT_GT(a.stats().rpcs_failed, 0);
  EXPECT_GT(a.stats().messages_dropped, 0);
  // Shutdown cancels an RPC in flight instead of waiting for its deadline.
  a.Send("g", Message(MessageType::kVote, "a", "hung", 1000));
  const absl::Time shutdown_start = absl::Now();
  a.Shutdown();
  EXPECT_LT(absl::Now() - shutdown_start, absl::Milliseconds(1500));
}

TEST(GrpcTransportTest, RejectsMalformedAndMisaddressedBatches) {
  GrpcTransport b(Options("b", 5));
  BASALT_ASSERT_OK(b.Start());
  Inbox inbox;
  BASALT_ASSERT_OK(b.Register("g", "b", inbox.handler()));
  auto stub = pb::ConsensusService::NewStub(
      grpc::CreateChannel(StrCat("127.0.0.1:", b.port()), grpc::InsecureChannelCredentials()));
  auto call = [&](const pb::UpdateConsensusRequestPB& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::UpdateConsensusResponsePB resp;
    return stub->UpdateConsensus(&ctx, req, &resp).error_code();
  };
  pb::UpdateConsensusRequestPB req;
  BatchToPB("a", "b", {GroupMessage{"g", Message(MessageType::kVote, "a", "b", 1)}}, &req);
  pb::UpdateConsensusRequestPB bad = req;
  bad.mutable_messages(0)->set_type(static_cast<pb::RaftMessageTypePB>(42));
  EXPECT_EQ(call(bad), grpc::StatusCode::INVALID_ARGUMENT);
  pb::UpdateConsensusRequestPB other = req;
  other.set_to_server("c");
  EXPECT_EQ(call(other), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(call(req), grpc::StatusCode::OK);
  std::vector<RaftMessage> got = inbox.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);  // Only the valid batch was delivered.
  EXPECT_EQ(got[0].term, 1u);
}

// ---- Replies -----------------------------------------------------------------------------------

// Starts `a` and `b`, each knowing the other as a peer.
void StartPair(GrpcTransport* a, GrpcTransport* b) {
  BASALT_ASSERT_OK(a->Start());
  BASALT_ASSERT_OK(b->Start());
  BASALT_ASSERT_OK(a->AddPeer("b", StrCat("127.0.0.1:", b->port())));
  BASALT_ASSERT_OK(b->AddPeer("a", StrCat("127.0.0.1:", a->port())));
}

// Registers group "g" on `t` (server `self`) with a receiver that answers every vote request with
// a vote response, queued from inside the handler as a replica's round would, batched or not.
void RegisterVoteAnswerer(GrpcTransport* t, const PeerId& self) {
  auto answer = [t, self](const RaftMessage& m) {
    if (m.type == MessageType::kVote) {
      t->Send("g", Message(MessageType::kVoteResponse, self, m.from, m.term));
    }
  };
  BASALT_ASSERT_OK(t->Register(
      "g", self, [answer](RaftMessage m) { answer(m); },
      [answer](std::vector<RaftMessage> batch) {
        for (const RaftMessage& m : batch) answer(m);
      }));
}

TEST(GrpcTransportTest, AnswersWithWhatTheBatchHandlerQueued) {
  for (const bool replies : {true, false}) {
    SCOPED_TRACE(replies ? "replies" : "no replies");
    GrpcTransportOptions ob = Options("b", 5);
    ob.use_replies = replies ? 1 : 0;
    GrpcTransport a(Options("a", 5));
    GrpcTransport b(ob);
    StartPair(&a, &b);
    Inbox inbox;
    BASALT_ASSERT_OK(a.Register("g", "a", inbox.handler()));
    RegisterVoteAnswerer(&b, "b");
    constexpr uint64_t kVotes = 20;
    for (uint64_t term = 1; term <= kVotes; ++term) {
      a.Send("g", Message(MessageType::kVote, "a", "b", term));
      std::vector<RaftMessage> got = inbox.WaitFor(term);
      ASSERT_EQ(got.size(), term);
      EXPECT_EQ(got.back().type, MessageType::kVoteResponse);
      EXPECT_EQ(got.back().term, term);
      EXPECT_EQ(got.back().from, "b");
    }
    // The counters are bumped after the delivery: give them a moment.
    const absl::Time deadline = absl::Now() + kTimeout;
    auto settled = [&] {
      return replies ? a.stats().reply_messages_received >= static_cast<int64_t>(kVotes)
                     : b.stats().messages_sent >= static_cast<int64_t>(kVotes);
    };
    while (!settled() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
    const GrpcTransport::Stats sa = a.stats();
    const GrpcTransport::Stats sb = b.stats();
    if (replies) {
      // Each answer rode back on the call that brought the vote: b's sender never sent.
      EXPECT_EQ(sb.reply_messages_sent, static_cast<int64_t>(kVotes));
      EXPECT_EQ(sa.reply_messages_received, static_cast<int64_t>(kVotes));
      EXPECT_EQ(sb.rpcs_sent, 0);
    } else {
      EXPECT_EQ(sb.reply_messages_sent, 0);
      EXPECT_EQ(sb.messages_sent, static_cast<int64_t>(kVotes));
    }
  }
}

// While a batch handler runs (a round stuck on a slow disk), only its own group's messages wait
// for the reply: another group's message to the same peer wakes the sender and goes out at once.
TEST(GrpcTransportTest, AReplyHoldsOnlyItsOwnGroupsMessages) {
  GrpcTransport a(Options("a", 5));
  GrpcTransport b(Options("b", 5));
  StartPair(&a, &b);
  Inbox slow_answers, other;
  BASALT_ASSERT_OK(a.Register("slow", "a", slow_answers.handler()));
  BASALT_ASSERT_OK(a.Register("other", "a", other.handler()));
  absl::Notification entered, release;
  BASALT_ASSERT_OK(b.Register(
      "slow", "b", [](RaftMessage) {},
      [&](std::vector<RaftMessage> batch) {
        b.Send("slow", Message(MessageType::kVoteResponse, "b", "a", batch.front().term));
        entered.Notify();
        release.WaitForNotification();
      }));
  a.Send("slow", Message(MessageType::kVote, "a", "b", 7));
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(kTimeout));
  b.Send("other", Message(MessageType::kVote, "b", "a", 9));
  std::vector<RaftMessage> got = other.WaitFor(1);
  ASSERT_EQ(got.size(), 1u) << "another group's message waited for the stuck handler";
  EXPECT_EQ(got[0].term, 9u);
  // The held answer may have left with that batch (whichever takes the queue first sends it), or
  // leaves in the reply.
  release.Notify();
  got = slow_answers.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].term, 7u);
}

TEST(GrpcTransportTest, RepliesOnlyToASenderThatAcceptsThem) {
  GrpcTransport a(Options("a", 5));
  GrpcTransport b(Options("b", 5));
  StartPair(&a, &b);
  Inbox inbox;
  BASALT_ASSERT_OK(a.Register("g", "a", inbox.handler()));
  RegisterVoteAnswerer(&b, "b");
  // A sender of an earlier version sets no accepts_reply: the answer goes in a call of b's own.
  pb::UpdateConsensusRequestPB old;
  BatchToPB("a", "b", {GroupMessage{"g", Message(MessageType::kVote, "a", "b", 1)}}, &old);
  pb::UpdateConsensusResponsePB response;
  BASALT_ASSERT_OK(b.HandleUpdate(&old, &response));
  EXPECT_FALSE(response.has_reply());
  ASSERT_EQ(inbox.WaitFor(1).size(), 1u);
  pb::UpdateConsensusRequestPB accepting;
  BatchToPB("a", "b", {GroupMessage{"g", Message(MessageType::kVote, "a", "b", 2)}}, &accepting);
  accepting.set_accepts_reply(true);
  response.Clear();
  BASALT_ASSERT_OK(b.HandleUpdate(&accepting, &response));
  ASSERT_TRUE(response.has_reply());
  EXPECT_EQ(response.reply().from_server(), "b");
  EXPECT_EQ(response.reply().to_server(), "a");
  ASSERT_EQ(response.reply().messages_size(), 1);
  EXPECT_EQ(response.reply().messages(0).term(), 2u);
}

// A ConsensusService that answers each call with the next of the replies given to it.
class ScriptedReplies final : public pb::ConsensusService::Service {
 public:
  void Add(pb::UpdateConsensusRequestPB reply) {
    absl::MutexLock l(&mu_);
    replies_.push_back(std::move(reply));
  }
  grpc::Status UpdateConsensus(grpc::ServerContext*, const pb::UpdateConsensusRequestPB*,
                               pb::UpdateConsensusResponsePB* response) override {
    absl::MutexLock l(&mu_);
    if (!replies_.empty()) {
      *response->mutable_reply() = std::move(replies_.front());
      replies_.erase(replies_.begin());
    }
    return grpc::Status::OK;
  }

 private:
  absl::Mutex mu_;
  std::vector<pb::UpdateConsensusRequestPB> replies_ ABSL_GUARDED_BY(mu_);
};

TEST(GrpcTransportTest, RejectsMalformedAndMisaddressedReplies) {
  ScriptedReplies service;
  pb::UpdateConsensusRequestPB from_other;  // Not from the server called.
  BatchToPB("c", "a", {GroupMessage{"g", Message(MessageType::kVoteResponse, "c", "a", 1)}},
            &from_other);
  service.Add(from_other);
  pb::UpdateConsensusRequestPB to_other;  // Not for this server.
  BatchToPB("b", "x", {GroupMessage{"g", Message(MessageType::kVoteResponse, "b", "x", 2)}},
            &to_other);
  service.Add(to_other);
  pb::UpdateConsensusRequestPB malformed;
  BatchToPB("b", "a", {GroupMessage{"g", Message(MessageType::kVoteResponse, "b", "a", 3)}},
            &malformed);
  malformed.mutable_messages(0)->set_type(static_cast<pb::RaftMessageTypePB>(42));
  service.Add(malformed);
  pb::UpdateConsensusRequestPB valid;
  BatchToPB("b", "a", {GroupMessage{"g", Message(MessageType::kVoteResponse, "b", "a", 4)}},
            &valid);
  service.Add(valid);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);

  GrpcTransport a(Options("a", 5));
  BASALT_ASSERT_OK(a.Start());
  BASALT_ASSERT_OK(a.AddPeer("b", StrCat("127.0.0.1:", port)));
  Inbox inbox;
  BASALT_ASSERT_OK(a.Register("g", "a", inbox.handler()));
  for (int64_t i = 1; i <= 4; ++i) {
    a.Send("g", Message(MessageType::kVote, "a", "b", i));
    // One call at a time, so that the replies answer them in order.
    const absl::Time deadline = absl::Now() + kTimeout;
    while (a.stats().rpcs_sent < i && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
    ASSERT_EQ(a.stats().rpcs_sent, i);
  }
  std::vector<RaftMessage> got = inbox.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);  // Only the valid reply was delivered.
  EXPECT_EQ(got[0].term, 4u);
  EXPECT_EQ(got[0].from, "b");
  const absl::Time deadline = absl::Now() + kTimeout;
  while (a.stats().reply_messages_received < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(a.stats().reply_messages_received, 1);
  EXPECT_EQ(a.stats().rpcs_failed, 0);  // A bad reply fails nothing but itself.
  server->Shutdown();
}

// ---- Raft groups over the transport ------------------------------------------------------------

// Checks that every acknowledged entry is applied, with the same data, on server `server`.
void ExpectHasAll(const LoopbackRaftCluster& c, int server,
                  const std::map<uint64_t, uint32_t>& acked) {
  RecordingStateMachine* sm = c.state_machine(server, 0);
  ASSERT_TRUE(sm->WaitForApplied(acked.empty() ? 0 : acked.rbegin()->first, kTimeout));
  for (const auto& [index, crc] : acked) {
    ASSERT_EQ(sm->crc_at(index), crc) << "server " << server << " index " << index;
  }
  EXPECT_EQ(sm->error(), "");
}

// Writes `n` entries through the current leader with many in flight (retrying on a new leader if
// the old one is deposed) and returns the acknowledged ones.
std::map<uint64_t, uint32_t> WriteEntries(LoopbackRaftCluster* c, int64_t n, int concurrency) {
  std::map<uint64_t, uint32_t> acked;
  while (static_cast<int64_t>(acked.size()) < n) {
    const int leader = c->WaitForLeader(0, kTimeout);
    if (leader < 0) break;
    ProposalLoad load(c->node(leader, 0), concurrency, 100, n - acked.size());
    load.Start();
    EXPECT_TRUE(load.Wait(kTimeout));
    std::map<uint64_t, uint32_t> got = load.acked();
    acked.insert(got.begin(), got.end());
    if (load.num_failed() > 0) LOG(INFO) << load.num_failed() << " proposals failed; retrying";
  }
  return acked;
}

TEST(GrpcTransportRaftTest, ReplicatesSurvivesLeaderKillAndRestarts) {
  TempDir dir;
  LoopbackRaftClusterOptions o;
  o.root_dir = dir.path();
  o.tick_interval_ms = 20;
  o.election_ticks = 10;  // 200-400 ms.
  o.heartbeat_coalesce_ms = 5;
  o.seed = SeedFromEnvOrTime();
  auto c = LoopbackRaftCluster::Start(o);
  BASALT_ASSERT_OK(c);
  LoopbackRaftCluster& cluster = **c;

  const absl::Time start = absl::Now();
  std::map<uint64_t, uint32_t> acked = WriteEntries(&cluster, 100000, 1000);
  ASSERT_EQ(acked.size(), 100000u);
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  LOG(INFO) << "replicated 100000 entries in " << secs << " s (" << 100000 / secs << "/s)";

  const int old_leader = cluster.WaitForLeader(0, kTimeout);
  ASSERT_GE(old_leader, 0);
  const uint64_t old_term = cluster.node(old_leader, 0)->term();
  // Everything the old leader applied is committed; remember it before killing it.
  RecordingStateMachine* old_sm = cluster.state_machine(old_leader, 0);
  const uint64_t old_applied = old_sm->applied_index();
  std::map<uint64_t, uint32_t> committed;
  for (uint64_t i = 1; i <= old_applied; ++i) committed[i] = *old_sm->crc_at(i);
  cluster.KillServer(old_leader);

  const int new_leader = cluster.WaitForLeader(0, kTimeout, old_term + 1);
  ASSERT_GE(new_leader, 0);
  ASSERT_NE(new_leader, old_leader);
  std::map<uint64_t, uint32_t> more = WriteEntries(&cluster, 1000, 100);
  ASSERT_EQ(more.size(), 1000u);
  EXPECT_GT(more.begin()->first, old_applied);
  committed.insert(more.begin(), more.end());
  for (const auto& [index, crc] : acked) {
    auto it = committed.find(index);
    ASSERT_TRUE(it != committed.end() && it->second == crc) << "acknowledged entry " << index;
  }
  for (int i = 0; i < cluster.num_servers(); ++i) {
    if (cluster.alive(i)) ExpectHasAll(cluster, i, committed);
  }
  // The old leader comes back on its port, replays its WAL and catches up over gRPC.
  BASALT_ASSERT_OK(cluster.RestartServer(old_leader));
  ExpectHasAll(cluster, old_leader, committed);
}

TEST(GrpcTransportRaftTest, CoalescesHeartbeatsOfIdleGroups) {
  TempDir dir;
  LoopbackRaftClusterOptions o;
  o.root_dir = dir.path();
  o.num_groups = 12;
  o.tick_interval_ms = 10;  // A heartbeat every 10 ms per group and follower.
  o.election_ticks = 30;    // 300-600 ms.
  o.heartbeat_coalesce_ms = 20;
  o.force_fsync = false;
  o.seed = SeedFromEnvOrTime();
  auto c = LoopbackRaftCluster::Start(o);
  BASALT_ASSERT_OK(c);
  LoopbackRaftCluster& cluster = **c;
  std::vector<uint64_t> terms;
  for (int g = 0; g < o.num_groups; ++g) {
    const int leader = cluster.WaitForLeader(g, kTimeout);
    ASSERT_GE(leader, 0);
    terms.push_back(cluster.node(leader, g)->term());
  }
  auto totals = [&] {
    GrpcTransport::Stats sum;
    for (int i = 0; i < cluster.num_servers(); ++i) {
      GrpcTransport::Stats s = cluster.transport(i)->stats();
      sum.rpcs_sent += s.rpcs_sent;
      // Heartbeat responses may ride back in the replies to the heartbeats' calls.
      sum.messages_sent += s.messages_sent + s.reply_messages_sent;
    }
    return sum;
  };
  const GrpcTransport::Stats before = totals();
  const absl::Time t0 = absl::Now();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // The idle period being measured.
  const GrpcTransport::Stats after = totals();
  const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
  const int64_t rpcs = after.rpcs_sent - before.rpcs_sent;
  const int64_t messages = after.messages_sent - before.messages_sent;
  LOG(INFO) << "idle " << secs << " s: " << rpcs << " RPCs carried " << messages << " messages";
  // Uncoalesced, each group's leader would send 2 heartbeats per tick and get 2 responses: about
  // 12 * 4 * 100 = 4,800 RPCs per second. Coalesced: at most one RPC per window per direction
  // between two servers (6 directions), plus slack for a busy machine.
  const int directions = 6;
  EXPECT_LE(rpcs, directions * (secs * 1000 / o.heartbeat_coalesce_ms + 5));
  EXPECT_GE(messages, 12 * 4 * 100 * secs / 4);  // Ticks may run late, but not 4x late.
  EXPECT_GE(messages, 10 * rpcs);
  for (int g = 0; g < o.num_groups; ++g) {
    const int leader = cluster.WaitForLeader(g, kTimeout);
    ASSERT_GE(leader, 0);
    EXPECT_EQ(cluster.node(leader, g)->term(), terms[g]) << "group " << g << " re-elected";
  }
}

}  // namespace grpc_transport_test_file
}  // namespace
}  // namespace basalt
