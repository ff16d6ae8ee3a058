#pragma once

// absl::Status (Basalt) to kudu::Status. The map (docs/kudu_compat.md):
//   OK -> OK; NOT_FOUND -> NotFound; ALREADY_EXISTS -> AlreadyPresent; INVALID_ARGUMENT and
//   OUT_OF_RANGE -> InvalidArgument; DEADLINE_EXCEEDED -> TimedOut; UNAVAILABLE ->
//   ServiceUnavailable; FAILED_PRECONDITION -> IllegalState; RESOURCE_EXHAUSTED -> Incomplete (a
//   full mutation buffer, as Kudu reports it); DATA_LOSS -> Corruption; UNIMPLEMENTED ->
//   NotSupported; ABORTED and CANCELLED -> Aborted; PERMISSION_DENIED and UNAUTHENTICATED ->
//   NotAuthorized; UNKNOWN ("some operations failed", a flush with row errors) -> IOError;
//   INTERNAL -> RuntimeError.
// The message is Basalt's. Thread-safe.

#include "absl/status/status.h"
#include "kudu/util/status.h"

namespace kudu {
namespace client {

Status FromAbslError(const absl::Status& s);

inline Status FromAbsl(const absl::Status& s) {
  if (PREDICT_TRUE(s.ok())) return Status::OK();
  return FromAbslError(s);
}

}  // namespace client
}  // namespace kudu
