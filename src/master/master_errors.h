#pragma once

// Error helpers shared by the master's files (private to src/master).

#include <string>

#include "absl/status/status.h"
#include "proto/common.pb.h"
#include "rpc/rpc_status.h"

namespace basalt {

// `s` with an ErrorDetailPB of `code` attached.
inline absl::Status MasterError(absl::Status s, pb::ErrorDetailPB::Code code) {
  pb::ErrorDetailPB detail;
  detail.set_code(code);
  return WithErrorDetail(std::move(s), detail);
}

// NOT_FOUND + TABLE_NOT_FOUND.
inline absl::Status TableNotFound(const std::string& message) {
  return MasterError(absl::NotFoundError(message), pb::ErrorDetailPB::TABLE_NOT_FOUND);
}

}  // namespace basalt
