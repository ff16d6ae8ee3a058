#include "rpc/frame_channel.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "rpc/frame_codec.h"
#include "rpc/net_util.h"
#include "rpc/socket_util.h"

namespace basalt {

namespace {

// The first read of a response takes up to this many bytes: the header, and a small body or
// error status with it, in one recv. The rest of a larger reply is read straight into its
// string. Never more than the response (the server sends nothing else), so nothing of it is lost.
constexpr size_t kFirstReadSize = 8 << 10;

// The errors a stale connection (closed by the server while it sat in the pool) produces.
bool IsPeerClosed(int err) { return err == ECONNRESET || err == EPIPE; }

absl::Status ConnectFailed(absl::StatusCode code, const std::string& address,
                           std::string_view message) {
  absl::Status s(code, ToAbsl(message));
  s.SetPayload(kFrameConnectFailedUrl, absl::Cord(address));
  return s;
}

// `s` with "<context>: " before its message, payloads kept (PrependToStatus drops them).
absl::Status WithContext(const absl::Status& s, std::string_view context) {
  absl::Status out(s.code(), StrCat(context, ": ", s.message()));
  s.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// Waits until `fd` is ready for `events` (POLLIN / POLLOUT), or reports DEADLINE_EXCEEDED once
// `deadline` has passed. Readiness includes errors and hangups: the next recv/send reports them.
absl::Status WaitFor(int fd, short events, absl::Time deadline) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("deadline exceeded");
      // Rounded up: poll must not return before the deadline and leave a busy loop.
      timeout_ms = static_cast<int>(std::min<int64_t>(
          absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), INT_MAX));
    }
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, timeout_ms);
    if (rc > 0) return absl::OkStatus();
    if (rc < 0 && errno != EINTR) {
      return absl::UnavailableError(StrCat("poll: ", ErrnoText(errno)));
    }
    // Timed out or interrupted: the loop checks the deadline again.
  }
}

// A connected socket is blocking, its sends and receives bounded by SO_SNDTIMEO/SO_RCVTIMEO:
// kIoTick normally (a send or recv that times out checks the deadline and waits again), the time
// left during a call whose deadline is nearer (CallOn). Why not poll before recv: a second
// sleeping syscall per call was a fifth of a point lookup's client CPU.
constexpr absl::Duration kIoTick = absl::Seconds(1);

// Sets both timeouts of `fd`; false if setsockopt failed.
bool SetIoTimeout(int fd, absl::Duration timeout) {
  const timeval tv = absl::ToTimeval(absl::Ceil(timeout, absl::Milliseconds(1)));
  return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
         setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0;
}

// After a send or recv on `fd` failed with `err` (`doing` names it): OK to try again (EINTR, or
// a wait that timed out with time left, the next wait then shortened to the time left if that is
// under kIoTick, so a call never outlasts its deadline; CallOn restores the usual timeout
// afterwards), DEADLINE_EXCEEDED once `deadline` has passed, else UNAVAILABLE with
// `*peer_closed` set if the server closed the connection.
absl::Status RetryOrFail(int fd, int err, absl::Time deadline, const char* doing,
                         bool* peer_closed) {
  if (err == EINTR) return absl::OkStatus();
  if (err != EAGAIN && err != EWOULDBLOCK) {
    *peer_closed = IsPeerClosed(err);
    return absl::UnavailableError(StrCat(doing, ": ", ErrnoText(err)));
  }
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("deadline exceeded");
  if (left < kIoTick && !SetIoTimeout(fd, left)) {
    return absl::UnavailableError(StrCat("setting the socket timeout: ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

// Sends every byte of `iov` on the connected socket `fd` before `deadline` (a request usually
// fits the socket buffer: one syscall). `*peer_closed` is set when it fails because the server
// closed the connection.
absl::Status SendAll(int fd, iovec* iov, int iovcnt, absl::Time deadline, bool* peer_closed) {
  while (iovcnt > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = iovcnt;
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);  // MSG_NOSIGNAL: EPIPE, not SIGPIPE.
    if (n >= 0) {
      AdvanceIov(&iov, &iovcnt, static_cast<size_t>(n));
      continue;
    }
    BASALT_RETURN_IF_ERROR(RetryOrFail(fd, errno, deadline, "sending the request", peer_closed));
  }
  return absl::OkStatus();
}

// Calls of this process waiting for their reply (FrameChannel::Call), for the polling rule in
// frame_channel.h.
std::atomic<int> g_calls_in_flight{0};

// One recv of up to `n` bytes (at least 1) before `deadline`. EOF is an error: the caller always
// expects more bytes. `*peer_closed` as for SendAll. Until `poll_until` (InfinitePast(): not at
// all) the socket is polled with non-blocking recvs instead of a blocking one.
// `*polled` (may be null) is set when the bytes came from polling.
absl::StatusOr<size_t> RecvSome(int fd, char* dst, size_t n, absl::Time deadline, bool* peer_closed,
                                absl::Time poll_until = absl::InfinitePast(),
                                bool* polled = nullptr) {
  if (poll_until > absl::InfinitePast()) {
    const int64_t until_ns = absl::ToUnixNanos(poll_until);
    do {
      const ssize_t got = recv(fd, dst, n, MSG_DONTWAIT);
      if (got > 0) {
        if (polled != nullptr) *polled = true;
        return static_cast<size_t>(got);
      }
      // EOF and errors other than "nothing yet" are reported by the blocking recv below.
      if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
    } while (absl::GetCurrentTimeNanos() < until_ns);
  }
  for (;;) {
    const ssize_t got = recv(fd, dst, n, 0);
    if (got > 0) return static_cast<size_t>(got);
    if (got == 0) {
      *peer_closed = true;
      return absl::UnavailableError("connection closed by the server");
    }
    BASALT_RETURN_IF_ERROR(RetryOrFail(fd, errno, deadline, "receiving the reply", peer_closed));
  }
}

}  // namespace

// The outcome of one call on one connection.
struct FrameChannel::Attempt {
  absl::Status status;        // The server's status, or why the call failed.
  bool from_server = false;   // `status` is the server's (a complete, well-formed response).
  bool reusable = false;      // The connection can serve another call.
  bool closed_early = false;  // EOF/ECONNRESET/EPIPE before any byte of the response.
  bool poll_tried = false;    // The reply was polled for.
  bool polled = false;        // The reply's first bytes were caught by polling.
};

namespace {

// Reads the response to the request just sent on `fd` into `*a`: the server's status, with the
// body in `*response` for OK. The first read polls until `poll_until` (RecvSome).
void ReadResponse(int fd, absl::Time deadline, absl::Time poll_until, std::string* response,
                  FrameChannel::Attempt* a) {
  // The header (and usually the whole reply) in one blocking recv.
  char buf[kFirstReadSize];
  size_t have = 0;
  bool peer_closed = false;
  a->status = absl::OkStatus();
  while (a->status.ok() && have < kFrameResponseHeaderSize) {
    absl::StatusOr<size_t> got =
        RecvSome(fd, buf + have, sizeof(buf) - have, deadline, &peer_closed,
                 have == 0 ? poll_until : absl::InfinitePast(), &a->polled);
    a->status = got.status();
    if (got.ok()) have += *got;
  }
  if (!a->status.ok()) {
    a->closed_early = peer_closed && have == 0;
    return;
  }
  absl::StatusOr<FrameResponseHeader> h = DecodeFrameResponseHeader(std::string_view(buf, have));
  if (!h.ok()) {
    a->status = h.status();
    return;
  }
  const size_t payload_have = have - kFrameResponseHeaderSize;
  if (payload_have > h->payload_len) {
    a->status = absl::DataLossError(
        absl::StrFormat("the server sent %d bytes after a response of %d",
                        payload_have - h->payload_len, h->payload_len + kFrameResponseHeaderSize));
    return;
  }
  // The codec guarantees an OK reply is all body and an error reply all message and detail: the
  // payload goes into one string, received in place. Its size was checked by the decoder.
  std::string status_bytes;
  std::string* payload = h->code == absl::StatusCode::kOk ? response : &status_bytes;
  payload->resize(h->payload_len);
  std::memcpy(payload->data(), buf + kFrameResponseHeaderSize, payload_have);
  for (size_t done = payload_have; done < h->payload_len;) {
    absl::StatusOr<size_t> got =
        RecvSome(fd, payload->data() + done, h->payload_len - done, deadline, &peer_closed);
    if (!got.ok()) {
      a->status = got.status();
      return;
    }
    done += *got;
  }
  a->from_server = true;
  a->reusable = true;
  if (h->code == absl::StatusCode::kOk) {
    a->status = absl::OkStatus();
  } else {
    const std::string_view bytes(status_bytes);
    a->status = FrameErrorStatus(h->code, bytes.substr(0, h->message_len),
                                 bytes.substr(h->message_len, h->detail_len));
  }
}

// One call on connection `fd`; the reply is polled for during `poll_for` (RecvSome).
FrameChannel::Attempt CallOn(int fd, uint8_t method, std::string_view request, absl::Time deadline,
                             absl::Duration poll_for, std::string* response) {
  FrameChannel::Attempt a;
  const absl::Time now = absl::Now();
  if (now >= deadline) {
    a.status = absl::DeadlineExceededError("deadline exceeded before the request was sent");
    a.reusable = true;  // Nothing was sent: the connection is as good as before.
    return a;
  }
  // A deadline nearer than the usual I/O timeout bounds this call's waits, and the usual timeout
  // is restored for the connection's next call.
  const bool near = deadline - now < kIoTick;
  if (near && !SetIoTimeout(fd, deadline - now)) {
    a.status = absl::UnavailableError(StrCat("setting the socket timeout: ", ErrnoText(errno)));
    return a;
  }
  char header[kFrameRequestHeaderSize];
  EncodeFrameRequestHeader(
      {static_cast<uint32_t>(request.size()), method, FrameTimeoutMs(deadline, now)}, header);
  iovec iov[2] = {{header, sizeof(header)}, {const_cast<char*>(request.data()), request.size()}};
  a.status = SendAll(fd, iov, 2, deadline, &a.closed_early);
  if (a.status.ok()) {
    // Polling only when the deadline is over a socket timeout beyond it: the blocking wait that
    // follows may take a whole kIoTick and must still end by the deadline.
    a.poll_tried =
        poll_for > absl::ZeroDuration() && !near && deadline - absl::Now() >= kIoTick + poll_for;
    const absl::Time poll_until = a.poll_tried ? absl::Now() + poll_for : absl::InfinitePast();
    ReadResponse(fd, deadline, poll_until, response, &a);
  }
  // Shortened for a near deadline, here or by a wait that timed out (which took a full tick).
  const bool shortened = near || absl::Now() - now >= kIoTick;
  if (shortened && a.reusable && !SetIoTimeout(fd, kIoTick)) a.reusable = false;
  return a;
}

}  // namespace

FrameChannel::FrameChannel(std::string address, int max_idle, absl::Duration reply_spin)
    : address_(std::move(address)), max_idle_(max_idle), reply_spin_(reply_spin) {
  absl::StatusOr<HostPort> hp = ParseHostPort(address_, 0);
  if (!hp.ok()) {
    address_status_ = hp.status();
    return;
  }
  host_ = hp->host;
  port_ = std::to_string(hp->port);
}

FrameChannel::~FrameChannel() {
  absl::MutexLock l(&mu_);
  for (int fd : idle_) close(fd);
  idle_.clear();
}

absl::Duration FrameChannel::PollFor() {
  if (reply_spin_ <= absl::ZeroDuration()) return absl::ZeroDuration();
  const int64_t average = average_call_ns_.load(std::memory_order_relaxed);
  if (average < 0 || average > 2 * absl::ToInt64Nanoseconds(reply_spin_) ||
      g_calls_in_flight.load(std::memory_order_relaxed) != 1) {
    return absl::ZeroDuration();
  }
  if (poll_misses_in_a_row_.load(std::memory_order_relaxed) >= kMaxPollMissesInARow &&
      (skipped_polls_.fetch_add(1, std::memory_order_relaxed) + 1) % kPollProbeEvery != 0) {
    return absl::ZeroDuration();
  }
  return reply_spin_;
}

void FrameChannel::RecordCallTime(absl::Duration took) {
  const int64_t sample = absl::ToInt64Nanoseconds(took);
  const int64_t old = average_call_ns_.load(std::memory_order_relaxed);
  // A weight of 1/8: a few slow calls do not stop the polling, a change of regime does.
  average_call_ns_.store(old < 0 ? sample : old + (sample - old) / 8, std::memory_order_relaxed);
}

int FrameChannel::num_idle() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(idle_.size());
}

int FrameChannel::TakeIdle() {
  absl::MutexLock l(&mu_);
  if (idle_.empty()) return -1;
  // The most recently used: the least likely to have been closed by the server's idle timeout.
  const int fd = idle_.back();
  idle_.pop_back();
  return fd;
}

void FrameChannel::Release(int fd, bool reusable) {
  if (reusable) {
    absl::MutexLock l(&mu_);
    if (static_cast<int>(idle_.size()) < max_idle_) {
      idle_.push_back(fd);
      return;
    }
  }
  close(fd);
}

void FrameCancel::Cancel() {
  absl::MutexLock l(&mu_);
  cancelled_ = true;
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

bool FrameCancel::cancelled() const {
  absl::MutexLock l(&mu_);
  return cancelled_;
}

bool FrameCancel::Attach(int fd) {
  absl::MutexLock l(&mu_);
  if (cancelled_) return false;
  fd_ = fd;
  return true;
}

void FrameCancel::Detach() {
  absl::MutexLock l(&mu_);
  fd_ = -1;
}

FrameChannel::Attempt FrameChannel::CallOnce(int fd, uint8_t method, std::string_view request,
                                             absl::Time deadline, std::string* response,
                                             FrameCancel* cancel) {
  Attempt a;
  if (cancel != nullptr && !cancel->Attach(fd)) {
    a.status = absl::CancelledError("cancelled");
    Release(fd, /*reusable=*/true);  // Nothing was sent on it.
    return a;
  }
  a = CallOn(fd, method, request, deadline, PollFor(), response);
  if (a.poll_tried && a.from_server) {
    if (a.polled) {
      polled_replies_.fetch_add(1, std::memory_order_relaxed);
      poll_misses_in_a_row_.store(0, std::memory_order_relaxed);
    } else {
      missed_polls_.fetch_add(1, std::memory_order_relaxed);
      poll_misses_in_a_row_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (cancel != nullptr) {
    cancel->Detach();
    if (cancel->cancelled()) {
      // Its socket may have been shut down under it: whatever the call saw, it was cancelled.
      a.status = absl::CancelledError("cancelled");
      a.from_server = a.reusable = a.closed_early = false;
    }
  }
  Release(fd, a.reusable);
  return a;
}

absl::Status FrameChannel::Call(uint8_t method, std::string_view request, absl::Time deadline,
                                std::string* response, FrameCancel* cancel) {
  auto context = [&] {
    return StrCat("frame call to ", address_, " (method ", static_cast<int>(method), ")");
  };
  BASALT_RETURN_IF_ERROR(address_status_);
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError(StrCat(context(), ": deadline passed before the call"));
  }
  if (request.size() > static_cast<size_t>(kMaxRpcMessageBytes)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: request of %d bytes exceeds the frame limit of %d", context(),
                        request.size(), kMaxRpcMessageBytes));
  }
  g_calls_in_flight.fetch_add(1, std::memory_order_relaxed);
  absl::Cleanup done = [] { g_calls_in_flight.fetch_sub(1, std::memory_order_relaxed); };
  // Call times feed only the polling rule: a channel that never polls (the servers' Raft
  // traffic) reads no clock for them.
  const bool polls = reply_spin_ > absl::ZeroDuration();
  const absl::Time start = polls ? absl::Now() : absl::InfinitePast();
  int fd = TakeIdle();
  const bool pooled = fd >= 0;
  if (!pooled) {
    absl::StatusOr<int> fresh = Connect(deadline, cancel);
    if (!fresh.ok()) return WithContext(fresh.status(), context());  // Keeps the payload.
    fd = *fresh;
  }
  Attempt a = CallOnce(fd, method, request, deadline, response, cancel);
  if (pooled && a.closed_early) {
    // The pooled connection was stale (see the class comment): once more, on a fresh one. If
    // that cannot connect, the request may still have been sent on the stale one, so the
    // result is a plain UNAVAILABLE (or DEADLINE_EXCEEDED), not "connect failed".
    VLOG(1) << context() << ": pooled connection closed by the server (" << a.status.message()
            << "); retrying on a new connection";
    absl::StatusOr<int> fresh = Connect(deadline, cancel);
    if (!fresh.ok()) {
      return absl::Status(
          fresh.status().code(),
          StrCat(context(), ": the pooled connection was closed (", a.status.message(),
                 ") and reconnecting failed: ", fresh.status().message()));
    }
    a = CallOnce(*fresh, method, request, deadline, response, cancel);
  }
  // The server's own statuses arrive as sent; only transport errors get the call's context.
  if (a.from_server) {
    if (polls) RecordCallTime(absl::Now() - start);
    return a.status;
  }
  return WithContext(a.status, context());
}

absl::StatusOr<int> FrameChannel::Connect(absl::Time deadline, FrameCancel* cancel) {
  // At most kConnectTimeout, and half the time left: a caller that falls back to another
  // transport when the port cannot be connected still has time for it.
  const absl::Time now = absl::Now();
  deadline = std::min({deadline, now + kConnectTimeout, now + (deadline - now) / 2});
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;  // IPv4 and IPv6.
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* addrs = nullptr;
  if (int rc = getaddrinfo(host_.c_str(), port_.c_str(), &hints, &addrs); rc != 0) {
    return ConnectFailed(absl::StatusCode::kUnavailable, address_,
                         StrCat("cannot resolve '", host_, "': ", gai_strerror(rc)));
  }
  // Each address in turn (e.g. ::1 then 127.0.0.1 for "localhost") until one connects.
  std::string errors;
  for (addrinfo* ai = addrs; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      StrAppend(&errors, errors.empty() ? "" : "; ", "socket: ", ErrnoText(errno));
      continue;
    }
    // A cancel shuts the connecting socket down, which aborts the connect and wakes the poll.
    if (cancel != nullptr && !cancel->Attach(fd)) {
      close(fd);
      freeaddrinfo(addrs);
      return absl::CancelledError("cancelled");
    }
    // Non-blocking: connect returns EINPROGRESS (EINTR: it goes on in the background) and poll
    // bounds the wait by the deadline; SO_ERROR then tells how it ended.
    int err = 0;
    absl::Status waited;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        waited = WaitFor(fd, POLLOUT, deadline);
        socklen_t len = sizeof(err);
        if (waited.ok() && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (cancel != nullptr) {
      cancel->Detach();
      if (cancel->cancelled()) {
        close(fd);
        freeaddrinfo(addrs);
        return absl::CancelledError("cancelled while connecting");
      }
    }
    if (!waited.ok()) {
      close(fd);
      freeaddrinfo(addrs);
      return ConnectFailed(waited.code(), address_, StrCat("connecting: ", waited.message()));
    }
    if (err == 0) {
      freeaddrinfo(addrs);
      // Requests are small and latency-bound: send them at once, not after an ACK (Nagle).
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      // Blocking from now on, each wait bounded by kIoTick (see SetIoTimeout).
      const int flags = fcntl(fd, F_GETFL);
      if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || !SetIoTimeout(fd, kIoTick)) {
        err = errno;
        close(fd);  // `addrs` was freed above.
        return ConnectFailed(absl::StatusCode::kUnavailable, address_,
                             StrCat("configuring the socket: ", ErrnoText(err)));
      }
      return fd;
    }
    close(fd);
    StrAppend(&errors, errors.empty() ? "" : "; ", ErrnoText(err));
  }
  freeaddrinfo(addrs);
  return ConnectFailed(absl::StatusCode::kUnavailable, address_,
                       StrCat("cannot connect: ", errors.empty() ? "no address" : errors));
}

}  // namespace basalt
