#include "tserver/tserver_errors.h"

#include "common/strings.h"
#include "proto/common.pb.h"
#include "rpc/rpc_status.h"

namespace basalt {
namespace {

absl::Status WithCode(absl::Status s, pb::ErrorDetailPB::Code code) {
  pb::ErrorDetailPB detail;
  detail.set_code(code);
  return WithErrorDetail(std::move(s), detail);
}

}  // namespace

absl::Status NotTheLeaderError(std::string_view message, const std::string& leader_uuid,
                               const std::optional<HostPort>& leader_address) {
  pb::ErrorDetailPB detail;
  detail.set_code(pb::ErrorDetailPB::NOT_THE_LEADER);
  std::string text(message);
  if (!leader_uuid.empty()) {
    detail.set_leader_uuid(leader_uuid);
    StrAppend(&text, "; the leader is ", leader_uuid);
    if (leader_address.has_value()) {
      leader_address->ToPB(detail.mutable_leader_address());
      StrAppend(&text, " at ", leader_address->ToString());
    }
  }
  return WithErrorDetail(absl::UnavailableError(ToAbsl(text)), detail);
}

absl::Status TabletNotFoundError(std::string_view tablet_id) {
  return WithCode(absl::NotFoundError(ToAbsl(StrCat("tablet ", tablet_id, " not found"))),
                  pb::ErrorDetailPB::TABLET_NOT_FOUND);
}

absl::Status TabletNotRunningError(std::string_view message) {
  return WithCode(absl::UnavailableError(ToAbsl(message)), pb::ErrorDetailPB::TABLET_NOT_RUNNING);
}

absl::Status TabletFailedError(std::string_view message) {
  return WithCode(absl::FailedPreconditionError(ToAbsl(message)), pb::ErrorDetailPB::TABLET_FAILED);
}

absl::Status ServerOverloadedError(std::string_view message) {
  return WithCode(absl::UnavailableError(ToAbsl(message)), pb::ErrorDetailPB::SERVER_OVERLOADED);
}

absl::Status DiskFullError(std::string_view message) {
  return WithCode(absl::ResourceExhaustedError(ToAbsl(message)), pb::ErrorDetailPB::DISK_FULL);
}

absl::Status ScannerExpiredError(std::string_view message) {
  return WithCode(absl::NotFoundError(ToAbsl(message)), pb::ErrorDetailPB::SCANNER_EXPIRED);
}

absl::Status InDoubt(absl::Status s) {
  if (s.ok()) return s;
  pb::ErrorDetailPB detail = GetErrorDetail(s).value_or(pb::ErrorDetailPB());
  detail.set_in_doubt(true);
  return WithErrorDetail(std::move(s), detail);
}

absl::Status SchemaMismatchError(std::string_view message, uint32_t tablet_schema_version) {
  pb::ErrorDetailPB detail;
  detail.set_code(pb::ErrorDetailPB::SCHEMA_MISMATCH);
  detail.set_schema_version(tablet_schema_version);
  return WithErrorDetail(absl::FailedPreconditionError(ToAbsl(message)), detail);
}

absl::Status WrongServerUuidError(std::string_view dest_uuid, std::string_view my_uuid) {
  return WithCode(absl::FailedPreconditionError(ToAbsl(StrCat(
                      "request addressed to server ", dest_uuid, " reached server ", my_uuid))),
                  pb::ErrorDetailPB::WRONG_SERVER_UUID);
}

absl::Status FieldError(std::string_view field, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::InvalidArgumentError(ToAbsl(StrCat(field, ": ", s.message())));
}

}  // namespace basalt
