#pragma once

// FrameChannel: the client side of the frame transport (docs/frame_rpc.md): calls to one
// FrameServer address over a small pool of TCP connections, one call at a time per connection.
//
// A call takes an idle connection from the pool (or connects a new one), sends the request
// frame, waits for the response frame until the deadline, and gives the connection back to the
// pool only after a complete, well-formed response. Any error closes the connection: a late
// answer to an abandoned call must never be read as the answer to the next one.
//
// Stale connections: the server closes connections that stay idle (FrameServerOptions::
// idle_timeout) and all of them when it restarts. A pooled connection that fails with EOF,
// ECONNRESET or EPIPE before any byte of the response arrived is retried once on a fresh
// connection, because a server closes only connections that are not running a call... except
// at its Shutdown(), which drops the replies of running handlers: a call caught there is run
// again if a new server already listens at the address. Methods that must not run twice need
// their own protection (request ids), as with any RPC that may be retried.
//
// Lifecycle: construct (never blocks, never fails; a bad address fails each Call) -> Call()* ->
// destroy (closes idle connections). REQUIRES: no Call() running at destruction.
//
// Waiting for the reply: a thread that blocks in recv(2) and is woken by the reply pays for
// going to sleep and waking up, which on a virtual machine costs more than a loopback round
// trip (a ping-pong here: 8.5 k round trips/s blocking, 25 k/s polling). With `reply_spin` set,
// a call first polls its socket (non-blocking recv) for up to that long, and blocks only if the
// reply has not come by then. Polling burns a core, so it is done only when it can pay off:
//  - this channel's replies come fast: the moving average of its calls' durations is at most
//    twice `reply_spin` (a new channel's first call blocks and sets it);
//  - no other call of the process is waiting for a reply: one poller never takes a core that a
//    concurrent call's server or caller needs (with many calls in flight, replies arrive while
//    the others are served anyway);
//  - polling has been catching the replies: after kMaxPollMissesInARow replies in a row that
//    came only after the polling ended (a busy machine, where the poller takes the core the
//    server needs), only every kPollProbeEvery-th call polls, until one catches its reply.
// What must stay true: polling reads exactly what the blocking first read would (the header and
// what came with it), so the frame logic after it is the same either way.
//
// Thread-safe: concurrent calls use different connections; the lock guards only the pool.

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace basalt {

// The payload (at this type URL) of a status that means "no connection could be made, nothing
// was sent": the caller may safely try another transport or server. Its value is the address.
inline constexpr char kFrameConnectFailedUrl[] = "type.basalt/frame.connect_failed";

// Lets another thread abort one FrameChannel::Call, as grpc::ClientContext::TryCancel does: the
// call's socket is shut down (connecting or connected), which wakes it at once, and the call
// returns CANCELLED (a request already sent may still run on the server). Cancel() before the
// call starts makes it return CANCELLED without sending. One call per object. Thread-safe.
class FrameCancel {
 public:
  FrameCancel() = default;
  FrameCancel(const FrameCancel&) = delete;
  FrameCancel& operator=(const FrameCancel&) = delete;

  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);
  bool cancelled() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class FrameChannel;
  // The call uses `fd` from now on; false (nothing attached) if already cancelled.
  bool Attach(int fd) ABSL_LOCKS_EXCLUDED(mu_);
  // The call is done with its socket; after this Cancel() no longer touches it (the descriptor
  // may be closed and its number reused).
  void Detach() ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

class FrameChannel {
 public:
  // The longest a new connection may take, whatever the call's deadline: a port behind a
  // firewall that drops SYNs fails the call (DEADLINE_EXCEEDED with kFrameConnectFailedUrl) in
  // this time, so that its caller can still use another transport within the deadline.
  static constexpr absl::Duration kConnectTimeout = absl::Seconds(2);

  // `address`: "host:port", "[v6]:port"; a host name is resolved (getaddrinfo, IPv4 and IPv6)
  // at each new connection. `max_idle`: idle connections kept for reuse; more are closed.
  // `reply_spin`: see "Waiting for the reply" below; zero never spins.
  explicit FrameChannel(std::string address, int max_idle = 16,
                        absl::Duration reply_spin = absl::ZeroDuration());
  ~FrameChannel();
  FrameChannel(const FrameChannel&) = delete;
  FrameChannel& operator=(const FrameChannel&) = delete;

  // Sends `request` as method `method` and waits for the reply until `deadline`
  // (absl::InfiniteFuture(): no limit). On OK, `*response` is the reply body; on an error it is
  // unspecified. Returns the server's status (code, message, and the detail payload reattached at
  // kErrorDetailUrl) or:
  //  - INVALID_ARGUMENT: an unparsable address, or a request over kMaxRpcMessageBytes;
  //  - UNAVAILABLE with a kFrameConnectFailedUrl payload: no connection could be made (resolve
  //    or connect failed or was refused); nothing was sent;
  //  - UNAVAILABLE without it: the connection broke after the request was (maybe) sent (EOF,
  //    reset), including a failed reconnect after a stale pooled connection;
  //  - DEADLINE_EXCEEDED: the deadline passed before the reply arrived (while connecting, with
  //    the kFrameConnectFailedUrl payload since nothing was sent; or sending or receiving), or a
  //    connection took over kConnectTimeout (with the payload);
  //  - DATA_LOSS: a malformed response frame;
  //  - CANCELLED: `cancel` (optional, may be null) was cancelled before or during the call.
  // The I/O never waits past `deadline`; name resolution (getaddrinfo) is not bounded by it.
  // REQUIRES: response != nullptr.
  absl::Status Call(uint8_t method, std::string_view request, absl::Time deadline,
                    std::string* response, FrameCancel* cancel = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& address() const { return address_; }
  // The outcome of one attempt (defined and used in frame_channel.cc only).
  struct Attempt;
  // Idle connections in the pool, for tests.
  int num_idle() const ABSL_LOCKS_EXCLUDED(mu_);
  // Replies caught by polling, and replies polled for that came later ("Waiting for the
  // reply"), for tests.
  int64_t polled_replies() const { return polled_replies_.load(std::memory_order_relaxed); }
  int64_t missed_polls() const { return missed_polls_.load(std::memory_order_relaxed); }

  static constexpr int kMaxPollMissesInARow = 4;
  static constexpr int kPollProbeEvery = 32;

 private:
  // A new connected socket (blocking, TCP_NODELAY, I/O timeouts set), connected within
  // kConnectTimeout.
  // `cancel` (may be null) aborts the connect (CANCELLED).
  absl::StatusOr<int> Connect(absl::Time deadline, FrameCancel* cancel);
  // Returns `fd` to the pool if `reusable` (else, or if the pool is full, closes it).
  void Release(int fd, bool reusable) ABSL_LOCKS_EXCLUDED(mu_);
  // One attempt on `fd`, cancellable through `cancel` (may be null); releases `fd`.
  Attempt CallOnce(int fd, uint8_t method, std::string_view request, absl::Time deadline,
                   std::string* response, FrameCancel* cancel);
  // An idle connection, or -1.
  int TakeIdle() ABSL_LOCKS_EXCLUDED(mu_);
  // How long the next call polls for its reply (the rule of "Waiting for the reply"); zero: not.
  absl::Duration PollFor();
  // Adds a call's duration (to a complete reply) to average_call_ns_.
  void RecordCallTime(absl::Duration took);

  // Constant after construction.
  const std::string address_;
  const int max_idle_;
  const absl::Duration reply_spin_;
  absl::Status address_status_;  // Why `address_` does not parse, or OK.
  std::string host_;             // Parsed from `address_` (brackets removed).
  std::string port_;

  // Moving average of the durations of the calls that got a reply, in nanoseconds (-1: none yet).
  // Racy updates may lose a sample; it only decides whether to poll.
  std::atomic<int64_t> average_call_ns_{-1};
  std::atomic<int64_t> polled_replies_{0};
  std::atomic<int64_t> missed_polls_{0};
  std::atomic<int> poll_misses_in_a_row_{0};
  std::atomic<uint64_t> skipped_polls_{0};  // Calls not polled for misses, counting to a probe.

  mutable absl::Mutex mu_;
  std::vector<int> idle_ ABSL_GUARDED_BY(mu_);  // Most recently used last.
};

}  // namespace basalt
