#pragma once

// RowOutcome: what one row operation of a write did (docs/tablet.md "Writes"). Outcomes are
// results, the same on every replica that applies the same op to the same state; errors of the
// storage itself (an I/O error, a corrupt block) are not outcomes: they fail the whole call
// (Tablet::ApplyRowOperations) and, on a replica, the replica.
//
// StorageError() keeps the two apart where statuses travel: a storage error never carries a code
// an outcome maps to, so a missing file (NOT_FOUND from the file system) can never pass for a
// missing key.

#include <cstdint>

#include "absl/status/status.h"

namespace basalt {

enum class RowOutcome : uint8_t {
  kApplied,      // Includes the *_IGNORE forms that found nothing to do.
  kKeyExists,    // INSERT of a live key.
  kKeyNotFound,  // UPDATE or DELETE of an absent or deleted key.
  kInvalidRow,   // The row violates the schema (a NULL in a NOT NULL column).
};

// OK for kApplied; ALREADY_EXISTS, NOT_FOUND or INVALID_ARGUMENT with a fixed message otherwise
// (what the client sees per row).
absl::Status RowOutcomeToStatus(RowOutcome outcome);

// `s` (not OK) as an error of the storage: the codes outcomes use (NOT_FOUND, ALREADY_EXISTS,
// INVALID_ARGUMENT, FAILED_PRECONDITION) become DATA_LOSS for NOT_FOUND (a file that should
// exist) and INTERNAL for the others; the message is kept. Other codes stay.
absl::Status StorageError(const absl::Status& s);

// Whether `s` could be a StorageError: not OK and none of the outcome codes.
bool IsStorageError(const absl::Status& s);

}  // namespace basalt
