#include "tools/host_probe.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "rpc/socket_util.h"

namespace basalt::tools {

namespace {

using Clock = std::chrono::steady_clock;

double MicrosBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Runs `step` until `period` has passed; returns how many times it ran and, in *elapsed_us, how
// long that took. The clock is read every `batch` steps (at least one batch runs), so that
// reading it does not weigh on cheap steps.
template <typename Step>
int64_t RunFor(absl::Duration period, int batch, double* elapsed_us, Step step) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + absl::ToChronoNanoseconds(period);
  int64_t n = 0;
  Clock::time_point now = start;
  do {
    for (int i = 0; i < batch; ++i, ++n) step();
    now = Clock::now();
  } while (now < end);
  *elapsed_us = MicrosBetween(start, now);
  return n;
}

double ProbeSyscall(absl::Duration period) {
  double us = 0;
  const int64_t n = RunFor(period, /*batch=*/64, &us, [] { syscall(SYS_getppid); });
  return us / static_cast<double>(n);
}

// Two threads hand a token back and forth; each hand-off wakes the other one.
double ProbeThreadRoundTrip(absl::Duration period) {
  std::mutex mu;
  std::condition_variable cv;
  bool ball_at_peer = false;  // Guarded by mu.
  bool done = false;          // Guarded by mu.
  std::thread peer([&] {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [&] { return ball_at_peer || done; });
      if (done) return;
      ball_at_peer = false;
      cv.notify_all();
    }
  });
  double us = 0;
  const int64_t n = RunFor(period, /*batch=*/16, &us, [&] {
    std::unique_lock<std::mutex> l(mu);
    ball_at_peer = true;
    cv.notify_all();
    cv.wait(l, [&] { return !ball_at_peer; });
  });
  {
    std::lock_guard<std::mutex> l(mu);
    done = true;
  }
  cv.notify_all();
  peer.join();
  return us / static_cast<double>(n);
}

absl::Status SocketError(const char* what) {
  return absl::UnavailableError(StrCat("host probe: ", what, ": ", ErrnoText(errno)));
}

// Round trips per second of 16 bytes over a loopback TCP connection to an echoing thread; the
// client polls for each reply with non-blocking recvs when `poll`, else sleeps in recv.
absl::StatusOr<double> ProbeLoopback(absl::Duration period, bool poll) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return SocketError("socket");
  absl::Cleanup close_listener = [listener] { close(listener); };
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return SocketError("listening on 127.0.0.1");
  }
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0) return SocketError("socket");
  absl::Cleanup close_client = [client] { close(client); };
  if (connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return SocketError("connecting to 127.0.0.1");
  }
  const int server = accept(listener, nullptr, nullptr);
  if (server < 0) return SocketError("accept");
  const int one = 1;
  setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // The echo thread ends when the client closes its end (recv returns 0) or on an error.
  std::thread echo([server] {
    char buf[16];
    for (;;) {
      const ssize_t n = recv(server, buf, sizeof(buf), 0);
      if (n <= 0 || send(server, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
    }
    close(server);
  });
  char msg[16] = {};
  bool failed = false;
  auto round_trip = [&] {
    if (failed) return;
    if (send(client, msg, sizeof(msg), MSG_NOSIGNAL) != sizeof(msg)) {
      failed = true;
      return;
    }
    size_t have = 0;
    while (have < sizeof(msg)) {
      const ssize_t n = recv(client, msg + have, sizeof(msg) - have, poll ? MSG_DONTWAIT : 0);
      if (n > 0) {
        have += static_cast<size_t>(n);
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        failed = true;
        return;
      }
    }
  };
  double us = 0;
  const int64_t n = RunFor(period, /*batch=*/16, &us, round_trip);
  const int saved = errno;
  shutdown(client, SHUT_RDWR);  // Ends the echo thread.
  echo.join();
  if (failed) {
    errno = saved;
    return SocketError("loopback round trip");
  }
  return static_cast<double>(n) / (us / 1e6);
}

// 4 KiB pwrite + fdatasync into a 1 MiB file written and synced first (so that no sync also
// writes the file's size), cycling through it.
absl::Status ProbeFdatasync(const std::string& dir, absl::Duration period,
                            HostProbeResult* result) {
  const std::string path = StrCat(dir, "/.basalt-host-probe-", getpid());
  auto fail = [&](const char* what) {
    return absl::Status(errno == ENOENT || errno == ENOTDIR ? absl::StatusCode::kNotFound
                                                            : absl::StatusCode::kUnavailable,
                        StrCat("host probe: ", what, " ", path, ": ", ErrnoText(errno)));
  };
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("creating");
  absl::Cleanup remove = [fd, &path] {
    close(fd);
    unlink(path.c_str());
  };
  constexpr size_t kFileBytes = 1 << 20;
  constexpr size_t kWriteBytes = 4096;
  const std::string zeros(kFileBytes, '\0');
  if (pwrite(fd, zeros.data(), zeros.size(), 0) != static_cast<ssize_t>(zeros.size()) ||
      fsync(fd) != 0) {
    return fail("writing");
  }
  std::vector<double> latencies;
  bool failed = false;
  size_t offset = 0;
  double us = 0;
  const std::string block(kWriteBytes, 'x');
  RunFor(period, /*batch=*/1, &us, [&] {
    if (failed) return;
    const Clock::time_point start = Clock::now();
    if (pwrite(fd, block.data(), block.size(), static_cast<off_t>(offset)) !=
            static_cast<ssize_t>(block.size()) ||
        fdatasync(fd) != 0) {
      failed = true;
      return;
    }
    latencies.push_back(MicrosBetween(start, Clock::now()));
    offset = (offset + kWriteBytes) % kFileBytes;
  });
  if (failed) return fail("syncing");
  std::sort(latencies.begin(), latencies.end());
  result->fdatasync_p50_us = latencies[latencies.size() / 2];
  result->fdatasyncs_per_sec = static_cast<double>(latencies.size()) / (us / 1e6);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HostProbeResult> ProbeHost(const std::string& dir, absl::Duration per_probe) {
  HostProbeResult r;
  r.syscall_us = ProbeSyscall(per_probe);
  r.thread_round_trip_us = ProbeThreadRoundTrip(per_probe);
  BASALT_ASSIGN_OR_RETURN(r.loopback_round_trips_per_sec_blocking,
                          ProbeLoopback(per_probe, /*poll=*/false));
  BASALT_ASSIGN_OR_RETURN(r.loopback_round_trips_per_sec_polling,
                          ProbeLoopback(per_probe, /*poll=*/true));
  BASALT_RETURN_IF_ERROR(ProbeFdatasync(dir, per_probe, &r));
  return r;
}

}  // namespace basalt::tools
