// Tests of the frame transport: the codec (round trips, golden bytes, every malformed field, a
// randomized corruption test) and FrameServer + FrameChannel over loopback TCP.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/cord.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/coding.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "proto/common.pb.h"
#include "rpc/frame_channel.h"
#include "rpc/frame_codec.h"
#include "rpc/frame_server.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"

namespace basalt {
namespace {
namespace frame_rpc_test_file {

constexpr uint32_t kMax = kMaxRpcMessageBytes;

std::string EncodeRequest(const FrameRequestHeader& h) {
  std::string out(kFrameRequestHeaderSize, '\0');
  EncodeFrameRequestHeader(h, out.data());
  return out;
}

std::string EncodeResponse(const FrameResponseHeader& h) {
  std::string out(kFrameResponseHeaderSize, '\0');
  EncodeFrameResponseHeader(h, out.data());
  return out;
}

// A response header with arbitrary field values (the encoder's REQUIRES do not hold).
std::string RawResponse(uint32_t payload_len, uint8_t code, uint32_t message_len,
                        uint32_t detail_len) {
  std::string out(kFrameResponseHeaderSize, '\0');
  EncodeFixed32(out.data(), kFrameMagic);
  EncodeFixed32(out.data() + 4, payload_len);
  out[8] = static_cast<char>(code);
  EncodeFixed32(out.data() + 12, message_len);
  EncodeFixed32(out.data() + 16, detail_len);
  return out;
}

void ExpectDataLoss(const absl::Status& s, std::string_view fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(std::string(s.message()).find(fragment), std::string::npos) << s;
}

// ---- Codec ----

TEST(FrameCodecTest, RequestHeaderRoundTrips) {
  for (const FrameRequestHeader& h : {FrameRequestHeader{0, 0, 0}, FrameRequestHeader{1, 7, 50},
                                      FrameRequestHeader{kMax, 255, 0xffffffff}}) {
    absl::StatusOr<FrameRequestHeader> got = DecodeFrameRequestHeader(EncodeRequest(h));
    BASALT_ASSERT_OK(got);
    EXPECT_EQ(*got, h);
  }
}

TEST(FrameCodecTest, ResponseHeaderRoundTrips) {
  const FrameResponseHeader headers[] = {
      {0, absl::StatusCode::kOk, 0, 0},
      {kMax, absl::StatusCode::kOk, 0, 0},
      {10, absl::StatusCode::kNotFound, 10, 0},
      {30, absl::StatusCode::kUnavailable, 12, 18},
      {kMax, absl::StatusCode::kUnauthenticated, kMax - 1, 1},
  };
  for (const FrameResponseHeader& h : headers) {
    absl::StatusOr<FrameResponseHeader> got = DecodeFrameResponseHeader(EncodeResponse(h));
    BASALT_ASSERT_OK(got);
    EXPECT_EQ(*got, h);
  }
}

// The byte tables of docs/frame_rpc.md, byte for byte.
TEST(FrameCodecTest, GoldenBytes) {
  EXPECT_EQ(EncodeRequest({5, 7, 1000}), std::string("BFP1"
                                                     "\x05\x00\x00\x00"
                                                     "\x07\x00\x00\x00"
                                                     "\xe8\x03\x00\x00",
                                                     16));
  EXPECT_EQ(EncodeResponse({9, absl::StatusCode::kNotFound, 6, 3}), std::string("BFP1"
                                                                                "\x09\x00\x00\x00"
                                                                                "\x05\x00\x00\x00"
                                                                                "\x06\x00\x00\x00"
                                                                                "\x03\x00\x00\x00",
                                                                                20));
}

TEST(FrameCodecTest, MalformedRequestHeaders) {
  const std::string good = EncodeRequest({kMax, 3, 10});
  BASALT_EXPECT_OK(DecodeFrameRequestHeader(good));
  ExpectDataLoss(DecodeFrameRequestHeader(good.substr(0, 15)).status(), "truncated");
  ExpectDataLoss(DecodeFrameRequestHeader("").status(), "truncated");
  std::string bad = good;
  bad[3] = '2';  // "BFP2"
  ExpectDataLoss(DecodeFrameRequestHeader(bad).status(), "bad magic");
  for (int i = 9; i < 12; ++i) {
    bad = good;
    bad[i] = 1;
    ExpectDataLoss(DecodeFrameRequestHeader(bad).status(), "reserved byte");
  }
  ExpectDataLoss(DecodeFrameRequestHeader(EncodeRequest({kMax + 1, 3, 10})).status(), "body_len");
  ExpectDataLoss(DecodeFrameRequestHeader(EncodeRequest({0xffffffff, 3, 10})).status(), "body_len");
}

TEST(FrameCodecTest, MalformedResponseHeaders) {
  const std::string good = RawResponse(30, 14, 10, 20);
  BASALT_EXPECT_OK(DecodeFrameResponseHeader(good));
  ExpectDataLoss(DecodeFrameResponseHeader(good.substr(0, 19)).status(), "truncated");
  std::string bad = good;
  bad[0] = 'b';
  ExpectDataLoss(DecodeFrameResponseHeader(bad).status(), "bad magic");
  for (int i = 9; i < 12; ++i) {
    bad = good;
    bad[i] = static_cast<char>(0x80);
    ExpectDataLoss(DecodeFrameResponseHeader(bad).status(), "reserved byte");
  }
  ExpectDataLoss(DecodeFrameResponseHeader(RawResponse(kMax + 1, 0, 0, 0)).status(), "payload_len");
  ExpectDataLoss(DecodeFrameResponseHeader(RawResponse(30, 14, 20, 11)).status(),
                 "exceed payload_len");
  // Lengths whose sum overflows 32 bits.
  ExpectDataLoss(DecodeFrameResponseHeader(RawResponse(30, 14, 0xffffffff, 31)).status(),
                 "exceed payload_len");
  ExpectDataLoss(DecodeFrameResponseHeader(RawResponse(30, 0, 10, 0)).status(), "an OK response");
  ExpectDataLoss(DecodeFrameResponseHeader(RawResponse(30, 0, 0, 1)).status(), "an OK response");
  ExpectDataLoss(DecodeFrameResponseHeader(RawResponse(30, 14, 10, 10)).status(),
                 "an error response");
}

TEST(FrameCodecTest, UnknownStatusCodeDecodesAsUnknown) {
  for (int code : {17, 100, 255}) {
    absl::StatusOr<FrameResponseHeader> h = DecodeFrameResponseHeader(RawResponse(3, code, 3, 0));
    BASALT_ASSERT_OK(h);
    EXPECT_EQ(h->code, absl::StatusCode::kUnknown) << code;
  }
  // An unknown code with a body is an error response with a body: rejected, never OK.
  ExpectDataLoss(DecodeFrameResponseHeader(RawResponse(3, 200, 0, 0)).status(),
                 "an error response");
  EXPECT_EQ(FrameErrorStatus(absl::StatusCode::kOk, "x", "").code(), absl::StatusCode::kUnknown);
}

TEST(FrameCodecTest, StatusRoundTripsThroughResponseFields) {
  pb::ErrorDetailPB detail;
  detail.set_code(pb::ErrorDetailPB::NOT_THE_LEADER);
  detail.set_leader_uuid("ts-2");
  const absl::Status s = WithErrorDetail(absl::UnavailableError("not the leader"), detail);
  std::string message;
  std::string detail_bytes;
  const FrameResponseHeader h = FrameResponseHeaderFor(s, 123, &message, &detail_bytes);
  BASALT_EXPECT_OK(ValidateFrameResponseHeader(h));
  EXPECT_EQ(h.code, absl::StatusCode::kUnavailable);
  EXPECT_EQ(message, "not the leader");
  EXPECT_EQ(detail_bytes, detail.SerializeAsString());
  EXPECT_EQ(h.payload_len, message.size() + detail_bytes.size());  // The body is not sent.

  const absl::Status back = FrameErrorStatus(h.code, message, detail_bytes);
  EXPECT_EQ(back, s);  // Code, message and payloads.

  const FrameResponseHeader ok =
      FrameResponseHeaderFor(absl::OkStatus(), 123, &message, &detail_bytes);
  EXPECT_EQ(ok, (FrameResponseHeader{123, absl::StatusCode::kOk, 0, 0}));
  EXPECT_TRUE(message.empty() && detail_bytes.empty());
}

TEST(FrameCodecTest, TimeoutAndDeadline) {
  const absl::Time now = absl::FromUnixSeconds(1000000);
  EXPECT_EQ(FrameTimeoutMs(absl::InfiniteFuture(), now), 0u);
  EXPECT_EQ(FrameTimeoutMs(now - absl::Seconds(1), now), 1u);  // Never 0 (= none).
  EXPECT_EQ(FrameTimeoutMs(now, now), 1u);
  EXPECT_EQ(FrameTimeoutMs(now + absl::Microseconds(1200), now), 2u);  // Rounded up.
  EXPECT_EQ(FrameTimeoutMs(now + absl::Seconds(5), now), 5000u);
  EXPECT_EQ(FrameTimeoutMs(now + absl::Hours(24 * 100), now), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(FrameDeadline(0, now), absl::InfiniteFuture());
  EXPECT_EQ(FrameDeadline(250, now), now + absl::Milliseconds(250));
}

// Valid frames with flipped, zeroed, randomized bytes and truncations: decoding never crashes,
// and whatever it accepts satisfies every invariant the callers rely on.
TEST(FrameCodecTest, RandomCorruption) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rng(seed);
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const bool request = rng.OneIn(2);
    std::string bytes;
    if (request) {
      bytes = EncodeRequest({static_cast<uint32_t>(rng.Skewed(28)),
                             static_cast<uint8_t>(rng.Uniform(256)), rng.Next32()});
    } else {
      const uint32_t message_len = static_cast<uint32_t>(rng.Skewed(10));
      const uint32_t detail_len = static_cast<uint32_t>(rng.Skewed(10));
      const auto code = static_cast<absl::StatusCode>(rng.Uniform(17));
      bytes = code == absl::StatusCode::kOk
                  ? EncodeResponse({static_cast<uint32_t>(rng.Skewed(28)), code, 0, 0})
                  : EncodeResponse({message_len + detail_len, code, message_len, detail_len});
    }
    switch (rng.Uniform(4)) {
      case 0:  // Flip 1..3 bits.
        for (int n = static_cast<int>(rng.UniformRange(1, 3)); n > 0; --n) {
          bytes[rng.Uniform(bytes.size())] ^= static_cast<char>(1 << rng.Uniform(8));
        }
        break;
      case 1:  // Random bytes.
        for (int n = static_cast<int>(rng.UniformRange(1, 4)); n > 0; --n) {
          bytes[rng.Uniform(bytes.size())] = static_cast<char>(rng.Uniform(256));
        }
        break;
      case 2:  // Zero a byte.
        bytes[rng.Uniform(bytes.size())] = 0;
        break;
      case 3:  // Truncate.
        bytes.resize(rng.Uniform(bytes.size()));
        break;
    }
    if (request) {
      absl::StatusOr<FrameRequestHeader> h = DecodeFrameRequestHeader(bytes);
      if (!h.ok()) {
        EXPECT_EQ(h.status().code(), absl::StatusCode::kDataLoss) << h.status();
        continue;
      }
      ++accepted;
      EXPECT_LE(h->body_len, kMax);
      EXPECT_EQ(EncodeRequest(*h), bytes);  // Nothing in an accepted header is ignored.
    } else {
      absl::StatusOr<FrameResponseHeader> h = DecodeFrameResponseHeader(bytes);
      if (!h.ok()) {
        EXPECT_EQ(h.status().code(), absl::StatusCode::kDataLoss) << h.status();
        continue;
      }
      ++accepted;
      BASALT_EXPECT_OK(ValidateFrameResponseHeader(*h));
      EXPECT_LE(h->payload_len, kMax);
      EXPECT_LE(uint64_t{h->message_len} + h->detail_len, h->payload_len);
      EXPECT_LE(static_cast<int>(h->code), 16);
      if (static_cast<uint8_t>(bytes[8]) <= 16) {
        EXPECT_EQ(EncodeResponse(*h), bytes);
      }
    }
  }
  EXPECT_GT(accepted, 0);  // Corruption of the length fields is often still a valid header.
}

// ---- Server and channel ----

constexpr uint8_t kEcho = 1;      // Replies with the request.
constexpr uint8_t kFail = 2;      // UNAVAILABLE with an ErrorDetailPB.
constexpr uint8_t kBlock = 3;     // Waits for release_, then echoes.
constexpr uint8_t kDeadline = 4;  // Records the deadline it was given.
constexpr uint8_t kSlow = 5;      // Sleeps the request's decimal number of µs, then echoes.

std::string Address(int port) { return StrCat("127.0.0.1:", port); }
absl::Time In(absl::Duration d) { return absl::Now() + d; }

pb::ErrorDetailPB LeaderDetail() {
  pb::ErrorDetailPB detail;
  detail.set_code(pb::ErrorDetailPB::NOT_THE_LEADER);
  detail.set_leader_uuid("ts-2");
  detail.mutable_leader_address()->set_host("10.0.0.2");
  detail.mutable_leader_address()->set_port(7050);
  return detail;
}

// Waits until `cond` holds, checking every few milliseconds, for at most `timeout`.
bool WaitUntil(const std::function<bool()>& cond, absl::Duration timeout = absl::Seconds(5)) {
  const absl::Time deadline = In(timeout);
  while (!cond()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

sockaddr_in LoopbackAddr(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A TCP socket bound to a free port of 127.0.0.1 (*port), neither listening nor connected: until
// it is closed no one else can take the port. -1 if socket() or bind() failed.
int BindLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = LoopbackAddr(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// A plain blocking TCP socket connected to 127.0.0.1:port, with a 5 s receive timeout.
int ConnectRaw(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = LoopbackAddr(port);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
      << std::strerror(errno);
  const timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// True if the server closes `fd` (EOF or reset) without sending anything, within 5 s.
bool ClosedWithoutReply(int fd) {
  char buf[64];
  const ssize_t n = recv(fd, buf, sizeof(buf), 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

// Every test runs twice: with channels that block for their replies, and with channels that
// poll for them (FrameChannel's `reply_spin`, long enough that any reply in time is polled for
// when the rule allows), so that both ways of reading a reply see every case.
class FrameRpcTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { StartServer(FrameServerOptions{}); }

  void TearDown() override {
    Release();
    server_.reset();
  }

  void StartServer(FrameServerOptions options) {
    server_ = std::make_unique<FrameServer>(std::move(options));
    RegisterHandlers(server_.get());
    BASALT_ASSERT_OK(server_->Start());
    channel_ = NewChannel(Address(server_->port()));
    // A channel polls only once a reply has shown how fast the server answers.
    if (GetParam()) {
      BASALT_ASSERT_OK(Echo(channel_.get(), "warm up"));
    }
  }

  static std::unique_ptr<FrameChannel> NewChannel(const std::string& address) {
    return std::make_unique<FrameChannel>(address, /*max_idle=*/16,
                                          GetParam() ? absl::Seconds(2) : absl::ZeroDuration());
  }

  void RegisterHandlers(FrameServer* server) {
    server->Register(kSlow, [](std::string_view request, absl::Time, std::string* response) {
      absl::SleepFor(absl::Microseconds(std::stoi(std::string(request))));
      response->assign(request);
      return absl::OkStatus();
    });
    server->Register(kEcho, [](std::string_view request, absl::Time, std::string* response) {
      response->assign(request);
      return absl::OkStatus();
    });
    server->Register(kFail, [](std::string_view, absl::Time, std::string* response) {
      response->assign("never sent");
      return WithErrorDetail(absl::UnavailableError("not the leader"), LeaderDetail());
    });
    server->Register(kBlock, [this](std::string_view request, absl::Time, std::string* response) {
      {
        absl::MutexLock l(&mu_);
        ++blocked_;
      }
      release_.WaitForNotificationWithTimeout(absl::Seconds(10));
      response->assign(request);
      return absl::OkStatus();
    });
    server->Register(kDeadline, [this](std::string_view, absl::Time deadline, std::string*) {
      absl::MutexLock l(&mu_);
      seen_deadline_ = deadline;
      return absl::OkStatus();
    });
  }

  // Waits until `n` calls entered the kBlock handler.
  void AwaitBlocked(int n) {
    absl::MutexLock l(&mu_);
    auto entered = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return blocked_ >= n; };
    ASSERT_TRUE(mu_.AwaitWithTimeout(absl::Condition(&entered), absl::Seconds(5)));
  }

  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }

  // A kBlock call (which waits for Release()) with a deadline `timeout` from now: its status and,
  // in *took, how long it waited.
  absl::Status BlockedCall(absl::Duration timeout, absl::Duration* took) {
    std::string response;
    const absl::Time start = absl::Now();
    absl::Status s = channel_->Call(kBlock, "slow", start + timeout, &response);
    *took = absl::Now() - start;
    return s;
  }

  absl::Status Echo(FrameChannel* channel, const std::string& request) {
    std::string response;
    absl::Status s = channel->Call(kEcho, request, In(absl::Seconds(5)), &response);
    if (s.ok() && response != request) return absl::InternalError("echo mismatch");
    return s;
  }

  absl::Mutex mu_;
  int blocked_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time seen_deadline_ ABSL_GUARDED_BY(mu_);
  absl::Notification release_;
  std::unique_ptr<FrameServer> server_;
  std::unique_ptr<FrameChannel> channel_;
};

TEST_P(FrameRpcTest, EchoRoundTripsAndReusesTheConnection) {
  Random rng(1);
  for (const std::string& body : {std::string(), std::string("x"), rng.Bytes(5 << 20)}) {
    std::string response = "stale contents";
    absl::Status s = channel_->Call(kEcho, body, In(absl::Seconds(5)), &response);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(response.size(), body.size());
    EXPECT_TRUE(response == body);
  }
  EXPECT_EQ(server_->connections_accepted(), 1);  // One connection, reused from the pool.
  EXPECT_EQ(channel_->num_idle(), 1);
  EXPECT_EQ(channel_->polled_replies(), GetParam() ? 3 : 0);
}

TEST_P(FrameRpcTest, ErrorStatusWithDetailArrivesIntact) {
  std::string response;
  absl::Status s = channel_->Call(kFail, "req", In(absl::Seconds(5)), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(s.message(), "not the leader");
  auto payload = s.GetPayload(kErrorDetailUrl);
  ASSERT_TRUE(payload.has_value()) << s;
  EXPECT_EQ(std::string(*payload), LeaderDetail().SerializeAsString());
  std::optional<pb::ErrorDetailPB> detail = GetErrorDetail(s);
  ASSERT_TRUE(detail.has_value());
  EXPECT_EQ(detail->leader_uuid(), "ts-2");
  EXPECT_EQ(detail->leader_address().port(), 7050u);
  // An error reply is a complete response: the connection goes back to the pool.
  EXPECT_EQ(channel_->num_idle(), 1);
  s = Echo(channel_.get(), "after");
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(server_->connections_accepted(), 1);
}

TEST_P(FrameRpcTest, UnknownMethodIsUnimplemented) {
  std::string response;
  absl::Status s = channel_->Call(99, "req", In(absl::Seconds(5)), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_NE(std::string(s.message()).find("99"), std::string::npos) << s;
  s = Echo(channel_.get(), "after");
  EXPECT_TRUE(s.ok()) << s;
}

TEST_P(FrameRpcTest, DeadlineExceededThenNextCallUsesANewConnection) {
  std::string response;
  absl::Duration took;
  absl::Status s = BlockedCall(absl::Milliseconds(50), &took);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_GE(took, absl::Milliseconds(50));
  EXPECT_LT(took, absl::Seconds(3));
  EXPECT_EQ(channel_->num_idle(), 0);  // Closed: its late reply must not reach the next call.
  Release();  // The handler returns; its reply goes to a closed connection.
  s = Echo(channel_.get(), "next");
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(server_->connections_accepted(), 2);

  // A deadline already passed fails at once.
  s = channel_->Call(kEcho, "x", absl::Now() - absl::Seconds(1), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST_P(FrameRpcTest, CancelWakesACallInFlightAndTheChannelGoesOn) {
  FrameCancel cancel;
  absl::Status s;
  std::thread caller([&] {
    std::string response;
    s = channel_->Call(kBlock, "slow", In(absl::Seconds(30)), &response, &cancel);
  });
  AwaitBlocked(1);
  const absl::Time start = absl::Now();
  cancel.Cancel();
  caller.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "the call waited for the handler";
  EXPECT_EQ(channel_->num_idle(), 0);  // Its connection was shut down, never reused.
  Release();
  s = Echo(channel_.get(), "next");
  EXPECT_TRUE(s.ok()) << s;
}

TEST_P(FrameRpcTest, AWaitNeverOutlastsTheDeadline) {
  // Over a second left: the first wait is the usual 1 s socket timeout, the next one must be
  // shortened to what is left.
  absl::Duration took;
  absl::Status s = BlockedCall(absl::Milliseconds(1300), &took);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_GE(took, absl::Milliseconds(1300));
  EXPECT_LT(took, absl::Milliseconds(1800)) << "the call outlasted its deadline";
  Release();
}

TEST_P(FrameRpcTest, AHugeBodyAnnouncedButNotSentIsNotAllocated) {
  // The header announces 200 MiB; a few bytes follow, then the client goes away. The server
  // must neither allocate the announced size up front nor stop serving.
  const int fd = ConnectRaw(server_->port());
  ASSERT_GE(fd, 0);
  FrameRequestHeader h;
  h.body_len = 200 << 20;
  h.method = kEcho;
  std::string bytes = EncodeRequest(h) + std::string(1000, 'x');
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  close(fd);
  BASALT_EXPECT_OK(Echo(channel_.get(), "still serving"));
}

TEST_P(FrameRpcTest, CancelAbortsAConnectThatHangs) {
  // A listener whose accept queue (backlog 0: one connection) is full and never accepted: the
  // kernel drops further SYNs, so a new connection hangs as behind a firewall.
  int port = 0;
  const int listener = BindLoopback(&port);
  ASSERT_GE(listener, 0) << std::strerror(errno);
  ASSERT_EQ(listen(listener, 0), 0);
  std::vector<int> fillers;
  fillers.push_back(ConnectRaw(port));  // Fills the queue; a second would hang.
  std::unique_ptr<FrameChannel> channel = NewChannel(Address(port));
  FrameCancel cancel;
  absl::Status s;
  std::thread caller([&] {
    std::string response;
    s = channel->Call(kEcho, "x", In(absl::Seconds(30)), &response, &cancel);
  });
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time start = absl::Now();
  cancel.Cancel();
  caller.join();
  // Either the connect hung and was aborted, or (a kernel that let it through) the call
  // waited for an answer and was aborted: CANCELLED either way, at once, not a fallback.
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_FALSE(s.GetPayload(kFrameConnectFailedUrl).has_value()) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  for (int fd : fillers) close(fd);
  close(listener);
}

TEST_P(FrameRpcTest, CancelBeforeTheCallSendsNothing) {
  BASALT_ASSERT_OK(Echo(channel_.get(), "warm"));  // One pooled connection.
  FrameCancel cancel;
  cancel.Cancel();
  std::string response;
  absl::Status s = channel_->Call(kBlock, "never", In(absl::Seconds(5)), &response, &cancel);
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  {
    absl::MutexLock l(&mu_);
    EXPECT_EQ(blocked_, 0) << "the request reached the server";
  }
  EXPECT_EQ(channel_->num_idle(), 1) << "an unused connection goes back to the pool";
  BASALT_EXPECT_OK(Echo(channel_.get(), "after"));
  EXPECT_EQ(server_->connections_accepted(), 1);
}

TEST_P(FrameRpcTest, HandlerSeesTheClientDeadline) {
  std::string response;
  const absl::Time deadline = In(absl::Seconds(2));
  absl::Status s = channel_->Call(kDeadline, "", deadline, &response);
  ASSERT_TRUE(s.ok()) << s;
  {
    absl::MutexLock l(&mu_);
    // receipt + ceil(deadline - send time) >= deadline, same clock on both ends.
    EXPECT_GE(seen_deadline_, deadline);
    EXPECT_LT(seen_deadline_, deadline + absl::Milliseconds(500));
  }
  s = channel_->Call(kDeadline, "", absl::InfiniteFuture(), &response);
  ASSERT_TRUE(s.ok()) << s;
  absl::MutexLock l(&mu_);
  EXPECT_EQ(seen_deadline_, absl::InfiniteFuture());
}

TEST_P(FrameRpcTest, ConcurrentCallsFromEightThreads) {
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([this, t, &failures] {
      for (int i = 0; i < 500; ++i) {
        const std::string request = StrCat("thread ", t, " call ", i, std::string(i % 37, 'z'));
        absl::Status s = Echo(channel_.get(), request);
        if (!s.ok()) {
          ++failures[t];
          ADD_FAILURE() << s;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  // Never more connections than calls at once: each goes back to the pool after its call.
  EXPECT_LE(server_->connections_accepted(), 8);
}

TEST_P(FrameRpcTest, ConnectRefusedIsUnavailableWithConnectFailedPayload) {
  // A port bound but not listening refuses connections, and no one else can take it meanwhile.
  int port = 0;
  const int fd = BindLoopback(&port);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  const std::string address = Address(port);

  std::unique_ptr<FrameChannel> channel = NewChannel(address);
  std::string response;
  absl::Status s = channel->Call(kEcho, "x", In(absl::Seconds(5)), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  auto payload = s.GetPayload(kFrameConnectFailedUrl);
  ASSERT_TRUE(payload.has_value()) << s;
  EXPECT_EQ(std::string(*payload), address);
  close(fd);

  std::unique_ptr<FrameChannel> bad = NewChannel("127.0.0.1:port");
  s = bad->Call(kEcho, "x", In(absl::Seconds(5)), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST_P(FrameRpcTest, StaleConnectionRetriedAfterServerRestart) {
  absl::Status s = Echo(channel_.get(), "before");
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(channel_->num_idle(), 1);
  const int port = server_->port();
  server_.reset();  // Shuts down: the pooled connection is now closed by the server.

  FrameServerOptions options;
  options.bind_address = Address(port);
  server_ = std::make_unique<FrameServer>(options);
  RegisterHandlers(server_.get());
  s = server_->Start();
  ASSERT_TRUE(s.ok()) << s;
  s = Echo(channel_.get(), "after");
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(server_->connections_accepted(), 1);
  EXPECT_EQ(channel_->num_idle(), 1);
}

TEST_P(FrameRpcTest, ShutdownDropsTheReplyOfARunningHandler) {
  absl::Status s;
  std::thread call([&] {
    std::string response;
    s = channel_->Call(kBlock, "x", In(absl::Seconds(10)), &response);
  });
  AwaitBlocked(1);
  std::thread shutdown([this] { server_->Shutdown(); });
  call.join();  // Ends while the handler still runs: Shutdown() shut the socket down.
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_FALSE(s.GetPayload(kFrameConnectFailedUrl).has_value()) << s;  // It was sent.
  Release();
  shutdown.join();
}

TEST_P(FrameRpcTest, GarbageClientIsDisconnectedOthersServed) {
  int fd = ConnectRaw(server_->port());
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(fd, http.data(), http.size(), MSG_NOSIGNAL), static_cast<ssize_t>(http.size()));
  EXPECT_TRUE(ClosedWithoutReply(fd));
  close(fd);

  // A well-formed header that announces a body over the limit: closed before any allocation.
  fd = ConnectRaw(server_->port());
  std::string header(kFrameRequestHeaderSize, '\0');
  EncodeFixed32(header.data(), kFrameMagic);
  EncodeFixed32(header.data() + 4, 0xffffffff);
  ASSERT_EQ(send(fd, header.data(), header.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(header.size()));
  EXPECT_TRUE(ClosedWithoutReply(fd));
  close(fd);

  absl::Status s = Echo(channel_.get(), "still serving");
  EXPECT_TRUE(s.ok()) << s;
}

TEST_P(FrameRpcTest, MaxConnectionsClosesTheConnectionBeyond) {
  FrameServerOptions options;
  options.max_connections = 1;
  server_.reset();
  StartServer(options);
  absl::Status s = Echo(channel_.get(), "first");
  ASSERT_TRUE(s.ok()) << s;  // Its connection stays open, idle in channel_'s pool.

  std::unique_ptr<FrameChannel> second = NewChannel(Address(server_->port()));
  s = Echo(second.get(), "second");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_FALSE(s.GetPayload(kFrameConnectFailedUrl).has_value()) << s;  // Connect worked.

  s = Echo(channel_.get(), "first again");
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(server_->connections_accepted(), 1);
  EXPECT_EQ(server_->num_connections(), 1);
}

TEST_P(FrameRpcTest, IdleTimeoutClosesConnectionsChannelRecovers) {
  FrameServerOptions options;
  options.idle_timeout = absl::Milliseconds(200);
  server_.reset();
  StartServer(options);
  absl::Status s = Echo(channel_.get(), "first");
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(channel_->num_idle(), 1);
  ASSERT_TRUE(WaitUntil([this] { return server_->num_connections() == 0; }));
  s = Echo(channel_.get(), "after idle close");  // The pooled connection is stale: retried.
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(server_->connections_accepted(), 2);
}

TEST_P(FrameRpcTest, PollingCatchesFastRepliesOnly) {
  if (!GetParam()) GTEST_SKIP() << "runs once, in the polling instance";
  FrameChannel fast(Address(server_->port()), /*max_idle=*/16, absl::Seconds(1));
  BASALT_ASSERT_OK(Echo(&fast, "first"));
  EXPECT_EQ(fast.polled_replies(), 0);  // No reply yet said how fast this server answers.
  Random rng(2);
  for (int i = 0; i < 20; ++i) {
    // Small replies, and ones larger than the first read (the rest is read blocking).
    BASALT_ASSERT_OK(Echo(&fast, i % 2 == 0 ? "x" : rng.Bytes(100 << 10)));
  }
  EXPECT_EQ(fast.polled_replies(), 20);
  std::string response;
  absl::Status s = fast.Call(kFail, "req", In(absl::Seconds(5)), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;  // An error reply polled intact.
  EXPECT_EQ(s.message(), "not the leader");
  EXPECT_EQ(fast.polled_replies(), 21);

  // Replies slower than twice the polling time: the caller sleeps instead.
  FrameChannel slow(Address(server_->port()), /*max_idle=*/16, absl::Milliseconds(1));
  for (int i = 0; i < 4; ++i) {
    s = slow.Call(kSlow, "20000", In(absl::Seconds(5)), &response);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(response, "20000");
  }
  EXPECT_EQ(slow.polled_replies(), 0);
  EXPECT_EQ(slow.missed_polls(), 0);
}

TEST_P(FrameRpcTest, PollingStopsWhileItMissesAndAProbeResumesIt) {
  if (!GetParam()) GTEST_SKIP() << "runs once, in the polling instance";
  // Replies within twice the polling time but after it: each poll misses. The margins are wide
  // (a reply 20 ms after the polling ends, 80 ms short of stopping it) for a loaded machine.
  FrameChannel channel(Address(server_->port()), /*max_idle=*/16, absl::Milliseconds(100));
  std::string response;
  for (int i = 0; i < 10; ++i) {
    absl::Status s = channel.Call(kSlow, "120000", In(absl::Seconds(5)), &response);
    ASSERT_TRUE(s.ok()) << s;
  }
  // The first call had no average yet; the next kMaxPollMissesInARow polled and missed; the
  // others did not poll (no probe yet: a probe comes every kPollProbeEvery-th skipped call).
  EXPECT_EQ(channel.missed_polls(), FrameChannel::kMaxPollMissesInARow);
  EXPECT_EQ(channel.polled_replies(), 0);
  // Fast replies now: the next probe catches one, and polling resumes.
  for (int i = 0; i < FrameChannel::kPollProbeEvery + 10; ++i) {
    BASALT_ASSERT_OK(Echo(&channel, "fast"));
  }
  EXPECT_GE(channel.polled_replies(), 1);
}

TEST_P(FrameRpcTest, NoPollingWhileAnotherCallWaits) {
  if (!GetParam()) GTEST_SKIP() << "runs once, in the polling instance";
  FrameChannel fast(Address(server_->port()), /*max_idle=*/16, absl::Seconds(1));
  BASALT_ASSERT_OK(Echo(&fast, "first"));
  BASALT_ASSERT_OK(Echo(&fast, "polled"));
  ASSERT_EQ(fast.polled_replies(), 1);
  absl::Status blocked;
  std::thread other([&] {
    absl::Duration took;
    blocked = BlockedCall(absl::Seconds(10), &took);
  });
  AwaitBlocked(1);
  BASALT_EXPECT_OK(Echo(&fast, "while another call waits"));
  EXPECT_EQ(fast.polled_replies(), 1);
  Release();
  other.join();
  BASALT_EXPECT_OK(blocked);
  BASALT_EXPECT_OK(Echo(&fast, "alone again"));
  EXPECT_EQ(fast.polled_replies(), 2);
}

INSTANTIATE_TEST_SUITE_P(BlockingAndPolling, FrameRpcTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Polling" : "Blocking";
                         });

}  // namespace frame_rpc_test_file
}  // namespace
}  // namespace basalt
