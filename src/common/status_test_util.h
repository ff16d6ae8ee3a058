#pragma once

// Test assertions on absl::Status and absl::StatusOr that print the status when they fail
// (ASSERT_TRUE(s.ok()) prints nothing useful). Test-only: includes gtest.

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt::test_internal {

inline absl::Status StatusOf(const absl::Status& s) { return s; }
template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace basalt::test_internal

// Evaluates `expr` (an absl::Status or absl::StatusOr) once; fails the test with the expression
// and the status unless it is OK.
#define BASALT_ASSERT_OK(expr)                                                \
  do {                                                                        \
    const absl::Status _basalt_s = ::basalt::test_internal::StatusOf((expr)); \
    ASSERT_TRUE(_basalt_s.ok()) << #expr << ": " << _basalt_s;                \
  } while (0)
#define BASALT_EXPECT_OK(expr)                                                \
  do {                                                                        \
    const absl::Status _basalt_s = ::basalt::test_internal::StatusOf((expr)); \
    EXPECT_TRUE(_basalt_s.ok()) << #expr << ": " << _basalt_s;                \
  } while (0)
