#pragma once

// absl::Status across gRPC (DESIGN.md section 3; docs/cluster.md "Errors").
//
// absl::StatusCode and grpc::StatusCode have equal numbers, so a status crosses the wire as
// itself. What a client must act on beyond the code (not the leader and who is, tablet not found,
// overloaded, ...) travels as an ErrorDetailPB: on the server side an absl::Status payload under
// kErrorDetailUrl, on the wire the gRPC status's binary error details.
//
// Only service implementations and RPC clients include this; it pulls in no gRPC header.

#include <optional>

#include "absl/status/status.h"

namespace grpc {
class Status;
}  // namespace grpc

namespace basalt {

namespace pb {
class AppStatusPB;
class ErrorDetailPB;
}  // namespace pb

inline constexpr char kErrorDetailUrl[] = "type.basalt/basalt.pb.ErrorDetailPB";

// `s` with `detail` attached. REQUIRES: !s.ok().
absl::Status WithErrorDetail(absl::Status s, const pb::ErrorDetailPB& detail);
// The detail attached to `s`, if any (and parseable).
std::optional<pb::ErrorDetailPB> GetErrorDetail(const absl::Status& s);

// Server side: the gRPC status for `s`, with its detail as binary error details.
grpc::Status ToGrpcStatus(const absl::Status& s);
// Client side: the status the server returned, detail attached again. A code outside absl's
// range becomes UNKNOWN.
absl::Status FromGrpcStatus(const grpc::Status& s);

// Per-row errors and other statuses embedded in messages.
void StatusToPB(const absl::Status& s, pb::AppStatusPB* pb);
absl::Status StatusFromPB(const pb::AppStatusPB& pb);

}  // namespace basalt
