#pragma once

// Checks shared by the tablet server's gRPC services (tablet_service.cc, consensus_service.cc,
// tablet_copy_service.cc): the fields every request about one replica carries, and the deadline
// a call runs under.

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace grpc {
class ServerContext;
}  // namespace grpc

namespace basalt {

// INVALID_ARGUMENT naming tablet_id unless `id` is 1-128 characters of [A-Za-z0-9._-] (it names a
// directory) and not "." or "..".
absl::Status CheckTabletId(const std::string& id);

// FAILED_PRECONDITION + WRONG_SERVER_UUID when `dest` names another server. An empty `dest` is
// accepted (a caller that does not know the uuid yet).
absl::Status CheckDestUuid(const std::string& dest, const std::string& mine);

// The call's gRPC deadline, but at most `default_timeout` from now.
absl::Time RpcDeadline(const grpc::ServerContext* context, absl::Duration default_timeout);

}  // namespace basalt
