#pragma once

// FrameServer: the server side of the frame transport (docs/frame_rpc.md), length-framed
// request/response bytes over plain TCP, one call at a time per connection.
//
// Why: a gRPC unary call costs ~100 us of CPU on each side, several times a loopback TCP round
// trip (~29 us); point lookups are capped by it. Here a call is one recv and one sendmsg on a
// thread that owns its connection and runs the handler inline: no queue, no thread hand-off.
//
// Threads: one acceptor; one thread per connection that loops read request -> run handler ->
// write response. A connection thread ends when its peer closes, on a malformed frame, after
// `idle_timeout` without a request (or without progress reading one or writing a reply), or at
// Shutdown(). Ended threads are joined by the acceptor (at its next accept) or by Shutdown();
// nothing is detached.
//
// Lifecycle: construct -> Register()* -> Start() -> ... -> Shutdown() (or the destructor).
// Handlers are constant from Start() on, so connection threads read them without a lock.
//
// What must stay true:
// - A socket is shut down (by Shutdown()) only while it is in `conns_` under mu_, and its thread
//   closes it only after removing it from `conns_` under mu_: Shutdown() never touches a file
//   descriptor number that was closed and reused.
// - A malformed request frame gets no reply (the peer is not speaking this protocol, and the
//   stream cannot be resynchronized): the connection is closed and a rate-limited warning logged.
//
// Thread-safe; handlers run concurrently on connection threads and must be thread-safe.

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/log_throttle.h"

namespace basalt {

struct FrameServerOptions {
  // "host:port"; port 0 picks a free port (see FrameServer::port()).
  std::string bind_address = "127.0.0.1:0";
  // Open connections beyond which a new connection is closed at once (logged once per minute).
  int max_connections = 4096;
  // A connection that sends no request for this long is closed; also the longest a connection
  // may stall in the middle of a request or of reading its reply. absl::InfiniteDuration(): never.
  absl::Duration idle_timeout = absl::Minutes(10);
  // For thread names and log lines.
  std::string name = "frame";
};

class FrameServer {
 public:
  // Runs one call: `request` is the request body (valid until the handler returns); on OK the
  // handler has filled `response`, which is sent as the body. On an error the status (code,
  // message, payload at kErrorDetailUrl) is sent and `response` ignored. `deadline` is the
  // client's (receipt time + its timeout), absl::InfiniteFuture() when it sent none; the handler
  // may give up after it (the client has), nothing enforces it.
  using Handler = std::function<absl::Status(std::string_view request, absl::Time deadline,
                                             std::string* response)>;

  explicit FrameServer(FrameServerOptions options);
  ~FrameServer();  // Shutdown().
  FrameServer(const FrameServer&) = delete;
  FrameServer& operator=(const FrameServer&) = delete;

  // Serves method `method` with `handler`, replacing an earlier one. A method without a handler
  // is answered UNIMPLEMENTED. REQUIRES: before Start().
  void Register(uint8_t method, Handler handler) ABSL_LOCKS_EXCLUDED(mu_);

  // Binds bind_address (SO_REUSEADDR, so a restarted server gets its port back at once; not
  // SO_REUSEPORT, so two servers never share one), listens and starts the acceptor thread.
  // INVALID_ARGUMENT for an unparsable bind_address; UNAVAILABLE if it cannot be resolved or
  // bound (port in use, ...). REQUIRES: called once.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);

  // The bound port. REQUIRES: Start() returned OK.
  int port() const { return port_; }

  // Stops accepting, shuts down every connection's socket (waking threads blocked on it) and
  // joins every thread. A handler still running keeps running until it returns (Shutdown() waits
  // for it); its reply is dropped. Idempotent; a concurrent second call returns at once.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Connections being served now, and connections admitted since Start() (not those closed at
  // once for max_connections). For tests and metrics.
  int num_connections() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t connections_accepted() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class State { kNew, kRunning, kShutDown };
  struct Connection {
    int fd;
    std::thread thread;
  };

  void AcceptLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Admits `fd` (starts its thread) or closes it. Returns false if shutting down (fd closed).
  bool Admit(int fd) ABSL_LOCKS_EXCLUDED(mu_);
  // The body of a connection thread; closes `fd` before returning.
  void Serve(uint64_t id, int fd) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the handler of a request and builds the reply. Returns false if the reply could not be
  // sent (the connection must be closed).
  bool HandleRequest(int fd, uint8_t method, std::string_view body, absl::Time deadline);
  // Takes the threads that ended, for the caller to join outside mu_.
  std::vector<std::thread> TakeFinishedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const FrameServerOptions options_;
  // Written by Register() before Start(), read-only after it (thread creation orders the writes
  // before every read), so connection threads read them without a lock.
  std::array<Handler, 256> handlers_;
  // Written by Start() before any thread starts; constant after.
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;  // Started by Start(), joined by Shutdown().

  // LogThrottle is thread-safe itself.
  LogThrottle reject_log_;     // Connections refused for max_connections.
  LogThrottle malformed_log_;  // Malformed request frames.

  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kNew;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t accepted_ ABSL_GUARDED_BY(mu_) = 0;
  // The connections being served, by id. An entry's thread moves it to finished_ when it ends.
  absl::flat_hash_map<uint64_t, Connection> conns_ ABSL_GUARDED_BY(mu_);
  // Threads that left Serve() (or are leaving it), not yet joined.
  std::vector<std::thread> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
