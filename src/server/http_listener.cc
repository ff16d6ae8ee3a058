#include "server/http_listener.h"

#include <httplib.h>

#include "absl/time/clock.h"
#include "common/strings.h"

namespace basalt {

absl::StatusOr<int> StartHttpListener(httplib::Server* server, const std::string& host, int port,
                                      std::thread* thread) {
  int bound = -1;
  if (port == 0) {
    bound = server->bind_to_any_port(host);
  } else if (server->bind_to_port(host, port)) {
    bound = port;
  }
  if (bound <= 0) return absl::UnavailableError(StrCat("cannot serve HTTP on ", host, ":", port));
  *thread = std::thread([server] { server->listen_after_bind(); });
  // stop() is a no-op until the listener runs: wait for it so a stop cannot be lost.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!server->is_running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  if (!server->is_running()) return absl::InternalError("the HTTP listener did not start");
  return bound;
}

void StopHttpListener(httplib::Server* server, std::thread* thread) {
  if (!thread->joinable()) return;
  server->stop();  // Closes the listener; listen_after_bind drains the worker pool.
  thread->join();
}

}  // namespace basalt
