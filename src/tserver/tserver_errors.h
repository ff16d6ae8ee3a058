#pragma once

// The errors of the tablet server's services that carry an ErrorDetailPB (docs/cluster.md
// "Errors"): the status code and the detail code a client acts on, built in one place so every
// service answers the same way.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "rpc/net_util.h"

namespace basalt {

// UNAVAILABLE + NOT_THE_LEADER, with the leader's uuid and address when known.
absl::Status NotTheLeaderError(std::string_view message, const std::string& leader_uuid,
                               const std::optional<HostPort>& leader_address);
// NOT_FOUND + TABLET_NOT_FOUND.
absl::Status TabletNotFoundError(std::string_view tablet_id);
// UNAVAILABLE + TABLET_NOT_RUNNING.
absl::Status TabletNotRunningError(std::string_view message);
// FAILED_PRECONDITION + TABLET_FAILED.
absl::Status TabletFailedError(std::string_view message);
// UNAVAILABLE + SERVER_OVERLOADED.
absl::Status ServerOverloadedError(std::string_view message);
// RESOURCE_EXHAUSTED + DISK_FULL.
absl::Status DiskFullError(std::string_view message);
// NOT_FOUND + SCANNER_EXPIRED.
absl::Status ScannerExpiredError(std::string_view message);
// FAILED_PRECONDITION + SCHEMA_MISMATCH, with the tablet's schema version.
absl::Status SchemaMismatchError(std::string_view message, uint32_t tablet_schema_version);
// FAILED_PRECONDITION + WRONG_SERVER_UUID.
absl::Status WrongServerUuidError(std::string_view dest_uuid, std::string_view my_uuid);

// `s` with ErrorDetailPB.in_doubt set (the write may still be applied); its detail code is kept
// (UNKNOWN_ERROR if it had none). OK stays OK.
absl::Status InDoubt(absl::Status s);

// INVALID_ARGUMENT "<field>: <message of s>" for a request field that failed to parse or
// validate, whatever code `s` had (a bad request is the caller's error). OK stays OK.
absl::Status FieldError(std::string_view field, const absl::Status& s);

}  // namespace basalt
