#include "rpc/rpc_status.h"

#include <string>

#include <grpcpp/support/status.h>

#include "absl/strings/cord.h"
#include "proto/common.pb.h"

namespace basalt {

namespace {

absl::StatusCode ToAbslCode(int code) {
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCode::kUnknown;
  }
  return static_cast<absl::StatusCode>(code);
}

}  // namespace

absl::Status WithErrorDetail(absl::Status s, const pb::ErrorDetailPB& detail) {
  s.SetPayload(kErrorDetailUrl, absl::Cord(detail.SerializeAsString()));
  return s;
}

std::optional<pb::ErrorDetailPB> GetErrorDetail(const absl::Status& s) {
  auto payload = s.GetPayload(kErrorDetailUrl);
  if (!payload.has_value()) return std::nullopt;
  pb::ErrorDetailPB detail;
  if (!detail.ParseFromString(std::string(*payload))) return std::nullopt;
  return detail;
}

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  auto payload = s.GetPayload(kErrorDetailUrl);
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()),
                      payload.has_value() ? std::string(*payload) : std::string());
}

absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  absl::Status out(ToAbslCode(s.error_code()), s.error_message());
  if (out.ok()) out = absl::UnknownError(s.error_message());  // Never turn an error into OK.
  if (!s.error_details().empty()) {
    pb::ErrorDetailPB detail;
    if (detail.ParseFromString(s.error_details())) out = WithErrorDetail(std::move(out), detail);
  }
  return out;
}

void StatusToPB(const absl::Status& s, pb::AppStatusPB* pb) {
  pb->set_code(static_cast<int>(s.code()));
  pb->set_message(std::string(s.message()));
}

absl::Status StatusFromPB(const pb::AppStatusPB& pb) {
  if (pb.code() == 0) return absl::OkStatus();
  absl::StatusCode code = ToAbslCode(pb.code());
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  return absl::Status(code, pb.message());
}

}  // namespace basalt
