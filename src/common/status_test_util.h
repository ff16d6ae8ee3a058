#pragma once

// Test assertions on absl::Status and absl::StatusOr that print the status when they fail
// (BASALT_ASSERT_OK(s) prints nothing useful). Test-only: includes gtest.

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/status_test_util.h"

namespace basalt::test_internal {

inline absl::Status StatusOf(const absl::Status& s) { return s; }
template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace basalt::test_internal

// Evaluates `expr` (an absl::Status or absl::StatusOr) once; fails the test with the expression
// and the status unless it is OK. More context streams after it, as after ASSERT_TRUE:
//   BASALT_ASSERT_OK(session->Flush()) << "round " << i;
#define BASALT_STATUS_CHECK_(expr, fail)                                                          \
  GTEST_AMBIGUOUS_ELSE_BLOCKER_                                                                   \
  if (const ::absl::Status _basalt_s = ::basalt::test_internal::StatusOf((expr)); _basalt_s.ok()) \
    ;                                                                                             \
  else                                                                                            \
    fail(#expr " is not OK") << _basalt_s << " "
#define BASALT_ASSERT_OK(expr) BASALT_STATUS_CHECK_(expr, GTEST_FATAL_FAILURE_)
#define BASALT_EXPECT_OK(expr) BASALT_STATUS_CHECK_(expr, GTEST_NONFATAL_FAILURE_)
