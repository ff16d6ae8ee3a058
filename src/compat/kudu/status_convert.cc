#include "compat/kudu/status_convert.h"

#include <string>

namespace kudu {
namespace client {

Status FromAbslError(const absl::Status& s) {
  const std::string msg(s.message());
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return Status::OK();
    case absl::StatusCode::kNotFound:
      return Status::NotFound(msg);
    case absl::StatusCode::kAlreadyExists:
      return Status::AlreadyPresent(msg);
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return Status::InvalidArgument(msg);
    case absl::StatusCode::kDeadlineExceeded:
      return Status::TimedOut(msg);
    case absl::StatusCode::kUnavailable:
      return Status::ServiceUnavailable(msg);
    case absl::StatusCode::kFailedPrecondition:
      return Status::IllegalState(msg);
    case absl::StatusCode::kResourceExhausted:
      // Basalt's client returns it for a full MANUAL_FLUSH buffer, which Kudu reports so.
      return Status::Incomplete(msg);
    case absl::StatusCode::kDataLoss:
      return Status::Corruption(msg);
    case absl::StatusCode::kUnimplemented:
      return Status::NotSupported(msg);
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
      return Status::Aborted(msg);
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return Status::NotAuthorized(msg);
    case absl::StatusCode::kUnknown:
      // "Some operations failed": Kudu's flush reports row failures as an IOError.
      return Status::IOError(msg);
    default:
      return Status::RuntimeError(msg);
  }
}

}  // namespace client
}  // namespace kudu
