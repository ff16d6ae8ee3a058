#pragma once

// Starting and stopping a cpp-httplib server on its own listener thread, shared by the daemons'
// Webserver and basalt-tsdbd. Callers include <httplib.h> themselves (with the package's compile
// definitions: src/server/CMakeLists.txt).

#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace basalt {

// Binds `server` to host:port (port 0: a free one), runs its listener on *thread and waits until
// it serves, so that a later StopHttpListener cannot be lost. The bound port; UNAVAILABLE when
// the address cannot be bound.
absl::StatusOr<int> StartHttpListener(httplib::Server* server, const std::string& host, int port,
                                      std::thread* thread);
// Stops the listener (requests in flight finish) and joins *thread. Idempotent.
void StopHttpListener(httplib::Server* server, std::thread* thread);

}  // namespace basalt
