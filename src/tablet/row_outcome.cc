#include "tablet/row_outcome.h"

#include <string>

namespace basalt {

absl::Status RowOutcomeToStatus(RowOutcome outcome) {
  switch (outcome) {
    case RowOutcome::kApplied:
      return absl::OkStatus();
    case RowOutcome::kKeyExists:
      return absl::AlreadyExistsError("key already present");
    case RowOutcome::kKeyNotFound:
      return absl::NotFoundError("key not found");
    case RowOutcome::kInvalidRow:
      return absl::InvalidArgumentError("the row violates the schema (NULL in a NOT NULL column)");
  }
  return absl::InternalError("unknown row outcome");
}

absl::Status StorageError(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      return absl::DataLossError(s.message());
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return absl::InternalError(s.message());
    default:
      return s;
  }
}

bool IsStorageError(const absl::Status& s) { return !s.ok() && StorageError(s) == s; }

}  // namespace basalt
