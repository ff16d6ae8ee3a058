#include "tserver/request_checks.h"

#include <algorithm>

#include <grpcpp/grpcpp.h>

#include "absl/time/clock.h"
#include "tserver/tserver_errors.h"

namespace basalt {
namespace {

constexpr size_t kMaxTabletIdBytes = 128;

}  // namespace

absl::Status CheckTabletId(const std::string& id) {
  if (id.empty()) return absl::InvalidArgumentError("tablet_id: empty");
  if (id.size() > kMaxTabletIdBytes) return absl::InvalidArgumentError("tablet_id: too long");
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return absl::InvalidArgumentError("tablet_id: only [A-Za-z0-9._-] are allowed");
  }
  if (id == "." || id == "..") return absl::InvalidArgumentError("tablet_id: not a valid id");
  return absl::OkStatus();
}

absl::Status CheckDestUuid(const std::string& dest, const std::string& mine) {
  if (!dest.empty() && dest != mine) return WrongServerUuidError(dest, mine);
  return absl::OkStatus();
}

absl::Time RpcDeadline(const grpc::ServerContext* context, absl::Duration default_timeout) {
  const absl::Time limit = absl::Now() + default_timeout;
  return std::min(absl::FromChrono(context->deadline()), limit);
}

}  // namespace basalt
