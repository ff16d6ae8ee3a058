#include "rpc/frame_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <system_error>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/thread_name.h"
#include "glog/logging.h"
#include "rpc/frame_codec.h"
#include "rpc/net_util.h"
#include "rpc/socket_util.h"

namespace basalt {

namespace {

// A connection's read buffer. A request header and a body that fits arrive in one recv (the
// usual case: point lookups and small writes); a larger body is read directly into a string of
// its size, so it is not copied twice.
constexpr size_t kReadBufferSize = 64 << 10;

// "host:port" of the peer of `fd`, for log lines.
std::string PeerName(int fd) {
  sockaddr_storage addr;
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "unknown peer";
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "unknown peer";
  }
  return StrCat(host, ":", port);
}

// Sends every byte of `iov` on the blocking socket `fd`. A send that makes no progress for the
// socket's SO_SNDTIMEO fails with EAGAIN. Returns false (with `*error`) on any failure.
bool SendAll(int fd, iovec* iov, int iovcnt, std::string* error) {
  while (iovcnt > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = iovcnt;
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);  // MSG_NOSIGNAL: EPIPE, not SIGPIPE.
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = StrCat("sending the reply: ", ErrnoText(errno));
      return false;
    }
    AdvanceIov(&iov, &iovcnt, static_cast<size_t>(n));
  }
  return true;
}

// Reads request frames from one connection, one at a time. Owned by the connection's thread.
class RequestReader {
 public:
  enum class Result {
    kRequest,    // A request was read.
    kClosed,     // EOF, an I/O error or a timeout: `*error` says which.
    kMalformed,  // A frame header the codec rejects: `*error` says why.
  };

  explicit RequestReader(int fd) : fd_(fd), buf_(new char[kReadBufferSize]) {}

  // Reads the next request. On kRequest, `*body` views either this reader's buffer (valid until
  // the next call) or `*large_body` (a body that does not fit the buffer).
  Result Next(FrameRequestHeader* header, std::string_view* body, std::string* large_body,
              std::string* error) {
    // Bytes past the previous frame (a client that sends before reading the reply) move to the
    // front, so a whole frame of up to kReadBufferSize bytes always fits after them.
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    while (end_ < kFrameRequestHeaderSize) {
      if (!Fill(error)) return Result::kClosed;
    }
    absl::StatusOr<FrameRequestHeader> h =
        DecodeFrameRequestHeader(std::string_view(buf_.get(), end_));
    if (!h.ok()) {
      *error = h.status().ToString();
      return Result::kMalformed;
    }
    *header = *h;
    const size_t total = kFrameRequestHeaderSize + h->body_len;
    if (total <= kReadBufferSize) {
      while (end_ < total) {
        if (!Fill(error)) return Result::kClosed;
      }
      *body = std::string_view(buf_.get() + kFrameRequestHeaderSize, h->body_len);
      begin_ = total;
      return Result::kRequest;
    }
    // A large body: the part already buffered, then the rest straight into its string. The
    // buffer holds fewer than `total` bytes, so nothing of the next frame is in it. The string
    // grows with the bytes that arrived (at most doubling), not to the header's body_len at
    // once: a header alone must not make the server allocate up to kMaxRpcMessageBytes.
    const size_t buffered = end_ - kFrameRequestHeaderSize;
    large_body->assign(buf_.get() + kFrameRequestHeaderSize, buffered);
    begin_ = end_ = 0;
    size_t have = buffered;
    while (have < h->body_len) {
      large_body->resize(std::min<size_t>(h->body_len, std::max<size_t>(2 * have, 1 << 20)));
      if (!RecvExactly(large_body->data() + have, large_body->size() - have, error)) {
        return Result::kClosed;
      }
      have = large_body->size();
    }
    *body = *large_body;
    return Result::kRequest;
  }

 private:
  // One recv of whatever is available into the free end of the buffer.
  bool Fill(std::string* error) {
    const ssize_t n = RecvOnce(buf_.get() + end_, kReadBufferSize - end_, end_ > 0, error);
    if (n <= 0) return false;
    end_ += static_cast<size_t>(n);
    return true;
  }

  bool RecvExactly(char* dst, size_t n, std::string* error) {
    while (n > 0) {
      const ssize_t got = RecvOnce(dst, n, /*mid_request=*/true, error);
      if (got <= 0) return false;
      dst += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }

  // recv(2) retried on EINTR; <= 0 with `*error` set on EOF, error or SO_RCVTIMEO timeout.
  // `mid_request`: part of a request was read (for the message).
  ssize_t RecvOnce(char* dst, size_t n, bool mid_request, std::string* error) {
    for (;;) {
      const ssize_t got = recv(fd_, dst, n, 0);
      if (got > 0) return got;
      if (got < 0 && errno == EINTR) continue;
      if (got == 0) {
        *error = "closed by the client";
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *error = "idle timeout";
      } else {
        *error = ErrnoText(errno);
      }
      if (mid_request) *error += " in the middle of a request";
      return got;
    }
  }

  const int fd_;
  std::unique_ptr<char[]> buf_;  // kReadBufferSize bytes; [begin_, end_) is unread.
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace

FrameServer::FrameServer(FrameServerOptions options) : options_(std::move(options)) {}

FrameServer::~FrameServer() { Shutdown(); }

void FrameServer::Register(uint8_t method, Handler handler) {
  absl::MutexLock l(&mu_);
  CHECK(state_ == State::kNew) << "FrameServer::Register() after Start()";
  handlers_[method] = std::move(handler);
}

absl::Status FrameServer::Start() {
  BASALT_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(options_.bind_address, 0));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addrs = nullptr;
  const std::string port = std::to_string(hp.port);
  if (int rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &addrs); rc != 0) {
    return absl::UnavailableError(StrCat(options_.name, ": cannot resolve bind address '",
                                         options_.bind_address, "': ", gai_strerror(rc)));
  }
  // The first address that binds and listens.
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* ai = addrs; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = ErrnoText(errno);
      continue;
    }
    const int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      error = ErrnoText(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(addrs);
  if (fd < 0) {
    return absl::UnavailableError(
        StrCat(options_.name, ": cannot listen on ", options_.bind_address, ": ", error));
  }
  sockaddr_storage bound;
  socklen_t len = sizeof(bound);
  CHECK_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len), 0) << ErrnoText(errno);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;
  {
    absl::MutexLock l(&mu_);
    CHECK(state_ == State::kNew) << "FrameServer::Start() called twice or after Shutdown()";
    state_ = State::kRunning;
  }
  acceptor_ = std::thread(&FrameServer::AcceptLoop, this);
  LOG(INFO) << options_.name << ": serving frame RPCs on port " << port_;
  return absl::OkStatus();
}

void FrameServer::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    const bool running = state_ == State::kRunning;
    state_ = State::kShutDown;
    if (!running) return;  // Never started, or another call shuts down.
    // Wakes the acceptor: accept(2) on a listening socket that is shut down fails (EINVAL).
    shutdown(listen_fd_, SHUT_RDWR);
    // Wakes connection threads blocked in recv (they see EOF) or send (EPIPE). A thread running
    // a handler finds out when it sends the reply. The fds stay open (see the class comment).
    for (auto& [id, conn] : conns_) shutdown(conn.fd, SHUT_RDWR);
  }
  acceptor_.join();  // After this nothing adds to conns_.
  std::vector<std::thread> finished;
  {
    absl::MutexLock l(&mu_);
    auto all_ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return conns_.empty(); };
    mu_.Await(absl::Condition(&all_ended));
    finished = TakeFinishedLocked();
  }
  for (std::thread& t : finished) t.join();
  close(listen_fd_);
}

int FrameServer::num_connections() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(conns_.size());
}

int64_t FrameServer::connections_accepted() const {
  absl::MutexLock l(&mu_);
  return accepted_;
}

std::vector<std::thread> FrameServer::TakeFinishedLocked() {
  std::vector<std::thread> out;
  out.swap(finished_);
  return out;
}

void FrameServer::AcceptLoop() {
  SetCurrentThreadName(options_.name + "-accept");
  LogThrottle error_log;
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      if (!Admit(fd)) return;
      continue;
    }
    const int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;  // A client gave up before we took it.
    {
      absl::MutexLock l(&mu_);
      if (state_ != State::kRunning) return;  // Shutdown() shut the listening socket down.
    }
    // Out of file descriptors or memory: retry after a pause (not in a tight loop), waking at
    // once for Shutdown().
    if (int64_t n = error_log.Record(absl::Now()); n > 0) {
      LOG(WARNING) << options_.name << ": accept failed" << LogThrottle::Times(n) << ": "
                   << ErrnoText(err);
    }
    absl::MutexLock l(&mu_);
    auto stopping = [this]()
                        ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return state_ != State::kRunning; };
    mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Milliseconds(100));
  }
}

bool FrameServer::Admit(int fd) {
  std::vector<std::thread> finished;
  bool admitted = false;
  {
    absl::MutexLock l(&mu_);
    if (state_ != State::kRunning) {
      close(fd);
      return false;
    }
    finished = TakeFinishedLocked();
    if (conns_.size() < static_cast<size_t>(options_.max_connections)) {
      // The thread is created under mu_, so its entry exists before it can look for it. No
      // thread to be had (the process's limit): the connection is refused like one too many.
      const uint64_t id = next_id_++;
      try {
        conns_.emplace(id, Connection{fd, std::thread(&FrameServer::Serve, this, id, fd)});
        ++accepted_;
        admitted = true;
      } catch (const std::system_error& e) {
        LOG(WARNING) << options_.name << ": cannot start a connection thread: " << e.what();
      }
    }
  }
  if (!admitted) {
    // The client sees EOF (or a reset) on its first call and reports UNAVAILABLE.
    if (int64_t n = reject_log_.Record(absl::Now()); n > 0) {
      LOG(WARNING) << options_.name << ": refused a connection from " << PeerName(fd) << ": "
                   << options_.max_connections << " connections open" << LogThrottle::Times(n);
    }
    close(fd);
  }
  for (std::thread& t : finished) t.join();  // Reaped outside mu_: join waits for close().
  return true;
}

void FrameServer::Serve(uint64_t id, int fd) {
  SetCurrentThreadName(options_.name + "-conn");
  // Replies are small and latency-bound: send them at once, not after the next ACK (Nagle).
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // The idle timeout as blocking-socket timeouts: a recv waiting that long for a request (or a
  // send waiting that long for the client to read) fails with EAGAIN, and no poll(2) is needed
  // before each call. 0 (no timeout) for an infinite idle_timeout.
  if (options_.idle_timeout < absl::InfiniteDuration() &&
      options_.idle_timeout > absl::ZeroDuration()) {
    const timeval tv = absl::ToTimeval(options_.idle_timeout);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  RequestReader reader(fd);
  for (;;) {
    FrameRequestHeader header;
    std::string_view body;
    std::string large_body;  // Freed after each call: an idle connection holds 64 KiB only.
    std::string error;
    const RequestReader::Result r = reader.Next(&header, &body, &large_body, &error);
    if (r == RequestReader::Result::kMalformed) {
      if (int64_t n = malformed_log_.Record(absl::Now()); n > 0) {
        LOG(WARNING) << options_.name << ": closing the connection from " << PeerName(fd)
                     << " after a malformed request frame" << LogThrottle::Times(n) << ": "
                     << error;
      }
      break;
    }
    if (r == RequestReader::Result::kClosed) {
      VLOG(1) << options_.name << ": connection " << id << " ended: " << error;
      break;
    }
    // The deadline counts from now, so time the request spent in flight is not charged to the
    // handler (client and server clocks need not agree).
    const absl::Time deadline = FrameDeadline(header.timeout_ms, absl::Now());
    if (!HandleRequest(fd, header.method, body, deadline)) break;
  }
  // Leave conns_ first (Shutdown() no longer shuts this fd down), then close: the fd number is
  // never used by Shutdown() after it may have been reused.
  {
    absl::MutexLock l(&mu_);
    auto it = conns_.find(id);
    finished_.push_back(std::move(it->second.thread));
    conns_.erase(it);
  }
  close(fd);
}

bool FrameServer::HandleRequest(int fd, uint8_t method, std::string_view body,
                                absl::Time deadline) {
  std::string response;
  absl::Status s;
  if (const Handler& handler = handlers_[method]; handler) {
    s = handler(body, deadline, &response);
  } else {
    s = absl::UnimplementedError(
        StrCat(options_.name, ": no handler for frame method ", static_cast<int>(method)));
  }
  if (s.ok() && response.size() > static_cast<size_t>(kMaxRpcMessageBytes)) {
    s = absl::ResourceExhaustedError(
        absl::StrFormat("%s: the reply to method %d is %d bytes, over the frame limit of %d",
                        options_.name, method, response.size(), kMaxRpcMessageBytes));
  }
  std::string message;
  std::string detail;
  const FrameResponseHeader h = FrameResponseHeaderFor(s, response.size(), &message, &detail);
  char header[kFrameResponseHeaderSize];
  EncodeFrameResponseHeader(h, header);
  // One sendmsg for header, status and body (empty parts are skipped by the kernel).
  iovec iov[4] = {
      {header, sizeof(header)},
      {message.data(), message.size()},
      {detail.data(), detail.size()},
      {response.data(), s.ok() ? response.size() : 0},
  };
  std::string error;
  if (!SendAll(fd, iov, 4, &error)) {
    VLOG(1) << options_.name << ": reply to method " << static_cast<int>(method)
            << " dropped: " << error;
    return false;
  }
  return true;
}

}  // namespace basalt
