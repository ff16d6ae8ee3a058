#include "tablet/row_outcome.h"

#include <gtest/gtest.h>

#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace row_outcome_test_file {

TEST(RowOutcomeTest, OutcomesMapToTheirClientStatuses) {
  BASALT_EXPECT_OK(RowOutcomeToStatus(RowOutcome::kApplied));
  EXPECT_TRUE(absl::IsAlreadyExists(RowOutcomeToStatus(RowOutcome::kKeyExists)));
  EXPECT_TRUE(absl::IsNotFound(RowOutcomeToStatus(RowOutcome::kKeyNotFound)));
  EXPECT_TRUE(absl::IsInvalidArgument(RowOutcomeToStatus(RowOutcome::kInvalidRow)));
}

// A file system's NOT_FOUND (a block file gone) must never read as a missing key.
TEST(RowOutcomeTest, StorageErrorsNeverCarryAnOutcomeCode) {
  const absl::Status gone = StorageError(absl::NotFoundError("blocks/07/0000000100000007"));
  EXPECT_TRUE(absl::IsDataLoss(gone)) << gone;
  EXPECT_EQ(gone.message(), "blocks/07/0000000100000007");
  for (const absl::Status& s : {absl::AlreadyExistsError("x"), absl::InvalidArgumentError("x"),
                                absl::FailedPreconditionError("x")}) {
    EXPECT_TRUE(absl::IsInternal(StorageError(s))) << s;
  }
  const absl::Status eio = absl::UnavailableError("EIO");
  EXPECT_EQ(StorageError(eio), eio);
  EXPECT_TRUE(IsStorageError(eio));
  EXPECT_TRUE(IsStorageError(gone));
  EXPECT_FALSE(IsStorageError(absl::NotFoundError("key not found")));
  EXPECT_FALSE(IsStorageError(absl::OkStatus()));
}

}  // namespace row_outcome_test_file
}  // namespace
}  // namespace basalt
