#pragma once

// Status propagation macros. Prefixed with BASALT_ because protobuf's headers define unprefixed
// RETURN_IF_ERROR-style macros of their own.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/strings.h"

#define BASALT_STATUS_CONCAT_INNER_(a, b) a##b
#define BASALT_STATUS_CONCAT_(a, b) BASALT_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the current function if it is not OK.
#define BASALT_RETURN_IF_ERROR(expr)                                     \
  do {                                                                   \
    ::absl::Status _basalt_status = (expr);                              \
    if (ABSL_PREDICT_FALSE(!_basalt_status.ok())) return _basalt_status; \
  } while (0)

// Like BASALT_RETURN_IF_ERROR, but prepends `msg` and ": " to the message of an error status,
// keeping its code. Use it to add context such as a file name.
#define BASALT_RETURN_IF_ERROR_PREPEND(expr, msg)              \
  do {                                                         \
    ::absl::Status _basalt_status = (expr);                    \
    if (ABSL_PREDICT_FALSE(!_basalt_status.ok())) {            \
      return ::basalt::PrependToStatus(_basalt_status, (msg)); \
    }                                                          \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, otherwise moves the
// value into `lhs`, which may be a declaration (`auto x`) or an existing lvalue.
#define BASALT_ASSIGN_OR_RETURN(lhs, rexpr) \
  BASALT_ASSIGN_OR_RETURN_IMPL_(BASALT_STATUS_CONCAT_(_basalt_statusor_, __LINE__), lhs, rexpr)

#define BASALT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr)         \
  auto statusor = (rexpr);                                          \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) return statusor.status(); \
  lhs = std::move(statusor).value()

namespace basalt {

// Returns a status with the code of `s` and the message "<prefix>: <s.message()>".
inline absl::Status PrependToStatus(const absl::Status& s, std::string_view prefix) {
  return absl::Status(s.code(), StrCat(prefix, ": ", s.message()));
}

}  // namespace basalt
