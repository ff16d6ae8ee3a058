#pragma once

// kudu::Status: the outcome of an operation, OK or an error code with a message (and optionally
// a POSIX errno). An OK Status holds no allocation. Copyable and movable; const methods are
// thread-safe.
//
// Basalt reports errors as absl::Status; the Kudu-compatible layer maps them to these codes as
// docs/kudu_compat.md lists (NOT_FOUND -> NotFound, ALREADY_EXISTS -> AlreadyPresent, ...).

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#ifdef KUDU_HEADERS_USE_SHORT_STATUS_MACROS
#include <glog/logging.h>
#endif

#include "kudu/client/stubs.h"
#include "kudu/util/kudu_export.h"
#include "kudu/util/slice.h"

// Returns `s` from the current function unless it is OK.
#define KUDU_RETURN_NOT_OK(s)               \
  do {                                      \
    const ::kudu::Status& _s = (s);         \
    if (PREDICT_FALSE(!_s.ok())) return _s; \
  } while (0)

// Same, with `msg` put in front of the message.
#define KUDU_RETURN_NOT_OK_PREPEND(s, msg)                       \
  do {                                                           \
    const ::kudu::Status& _s = (s);                              \
    if (PREDICT_FALSE(!_s.ok())) return _s.CloneAndPrepend(msg); \
  } while (0)

// Returns `to_return` unless `to_call` is OK.
#define KUDU_RETURN_NOT_OK_RET(to_call, to_return)   \
  do {                                               \
    const ::kudu::Status& _s = (to_call);            \
    if (PREDICT_FALSE(!_s.ok())) return (to_return); \
  } while (0)

// Evaluates `on_error`, then returns `s`, unless `s` is OK.
#define KUDU_RETURN_NOT_OK_EVAL(s, on_error) \
  do {                                       \
    const ::kudu::Status& _s = (s);          \
    if (PREDICT_FALSE(!_s.ok())) {           \
      (on_error);                            \
      return _s;                             \
    }                                        \
  } while (0)

// Logs a warning unless `to_call` is OK.
#define KUDU_WARN_NOT_OK(to_call, warning_prefix)                     \
  do {                                                                \
    const ::kudu::Status& _s = (to_call);                             \
    if (PREDICT_FALSE(!_s.ok())) {                                    \
      KUDU_LOG(WARNING) << (warning_prefix) << ": " << _s.ToString(); \
    }                                                                 \
  } while (0)

// Logs `status` at `level` and returns it.
#define KUDU_LOG_AND_RETURN(level, status) \
  do {                                     \
    const ::kudu::Status& _s = (status);   \
    KUDU_LOG(level) << _s.ToString();      \
    return _s;                             \
  } while (0)

// Logs and returns `s` unless it is OK.
#define KUDU_RETURN_NOT_OK_LOG(s, level, msg)                         \
  do {                                                                \
    const ::kudu::Status& _s = (s);                                   \
    if (PREDICT_FALSE(!_s.ok())) {                                    \
      KUDU_LOG(level) << "Status: " << _s.ToString() << " " << (msg); \
      return _s;                                                      \
    }                                                                 \
  } while (0)

// Aborts the process with `msg` and the status unless `to_call` is OK.
#define KUDU_CHECK_OK_PREPEND(to_call, msg)                \
  do {                                                     \
    const ::kudu::Status& _s = (to_call);                  \
    KUDU_CHECK(_s.ok()) << (msg) << ": " << _s.ToString(); \
  } while (0)
#define KUDU_CHECK_OK(s) KUDU_CHECK_OK_PREPEND(s, "Bad status")

// Debug-only checks: compiled out, as in Kudu's client headers.
#define KUDU_DCHECK_OK_PREPEND(to_call, msg) \
  do {                                       \
    const ::kudu::Status& _s = (to_call);    \
    (void)_s;                                \
  } while (0)
#define KUDU_DCHECK_OK(s) KUDU_DCHECK_OK_PREPEND(s, "Bad status")

// In main(): logs the status with `msg` in front and returns `ret_code` unless it is OK.
#define KUDU_RETURN_MAIN_NOT_OK(to_call, msg, ret_code)        \
  do {                                                         \
    const ::kudu::Status& _s = (to_call);                      \
    if (!_s.ok()) {                                            \
      KUDU_LOG(ERROR) << _s.CloneAndPrepend((msg)).ToString(); \
      return (ret_code);                                       \
    }                                                          \
  } while (0)

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 13)
#define KUDU_ATTR_NODISCARD [[nodiscard]]
#else
#define KUDU_ATTR_NODISCARD
#endif

#ifdef KUDU_HEADERS_USE_SHORT_STATUS_MACROS
#define RETURN_NOT_OK KUDU_RETURN_NOT_OK
#define RETURN_NOT_OK_PREPEND KUDU_RETURN_NOT_OK_PREPEND
#define RETURN_NOT_OK_RET KUDU_RETURN_NOT_OK_RET
#define RETURN_NOT_OK_EVAL KUDU_RETURN_NOT_OK_EVAL
#define WARN_NOT_OK KUDU_WARN_NOT_OK
#define LOG_AND_RETURN KUDU_LOG_AND_RETURN
#define RETURN_NOT_OK_LOG KUDU_RETURN_NOT_OK_LOG
#define CHECK_OK_PREPEND KUDU_CHECK_OK_PREPEND
#define CHECK_OK KUDU_CHECK_OK
#define DCHECK_OK_PREPEND KUDU_DCHECK_OK_PREPEND
#define DCHECK_OK KUDU_DCHECK_OK
#define RETURN_MAIN_NOT_OK KUDU_RETURN_MAIN_NOT_OK
#endif

namespace kudu {

class KUDU_EXPORT KUDU_ATTR_NODISCARD Status {
 public:
  Status() : state_(nullptr) {}
  ~Status() {
    if (state_ != nullptr) FreeState(state_);
  }
  Status(const Status& s);
  Status& operator=(const Status& s);
  Status(Status&& s) noexcept : state_(s.state_) { s.state_ = nullptr; }
  Status& operator=(Status&& s) noexcept;

  // Runs `op` (returning Status) only if this is OK; otherwise returns this.
  template <typename F>
  Status AndThen(F op) {
    if (ok()) return op();
    return *this;
  }

  static Status OK() { return Status(); }
  // Each error constructor: the message is msg, or "msg: msg2" when msg2 is not empty;
  // posix_code -1 means none.
  static Status NotFound(const Slice& msg, const Slice& msg2 = Slice(), int16_t posix_code = -1) {
    return Status(kNotFound, msg, msg2, posix_code);
  }
  static Status Corruption(const Slice& msg, const Slice& msg2 = Slice(), int16_t posix_code = -1) {
    return Status(kCorruption, msg, msg2, posix_code);
  }
  static Status NotSupported(const Slice& msg, const Slice& msg2 = Slice(),
                             int16_t posix_code = -1) {
    return Status(kNotSupported, msg, msg2, posix_code);
  }
  static Status InvalidArgument(const Slice& msg, const Slice& msg2 = Slice(),
                                int16_t posix_code = -1) {
    return Status(kInvalidArgument, msg, msg2, posix_code);
  }
  static Status IOError(const Slice& msg, const Slice& msg2 = Slice(), int16_t posix_code = -1) {
    return Status(kIOError, msg, msg2, posix_code);
  }
  static Status AlreadyPresent(const Slice& msg, const Slice& msg2 = Slice(),
                               int16_t posix_code = -1) {
    return Status(kAlreadyPresent, msg, msg2, posix_code);
  }
  static Status RuntimeError(const Slice& msg, const Slice& msg2 = Slice(),
                             int16_t posix_code = -1) {
    return Status(kRuntimeError, msg, msg2, posix_code);
  }
  static Status NetworkError(const Slice& msg, const Slice& msg2 = Slice(),
                             int16_t posix_code = -1) {
    return Status(kNetworkError, msg, msg2, posix_code);
  }
  static Status IllegalState(const Slice& msg, const Slice& msg2 = Slice(),
                             int16_t posix_code = -1) {
    return Status(kIllegalState, msg, msg2, posix_code);
  }
  static Status NotAuthorized(const Slice& msg, const Slice& msg2 = Slice(),
                              int16_t posix_code = -1) {
    return Status(kNotAuthorized, msg, msg2, posix_code);
  }
  static Status Aborted(const Slice& msg, const Slice& msg2 = Slice(), int16_t posix_code = -1) {
    return Status(kAborted, msg, msg2, posix_code);
  }
  static Status RemoteError(const Slice& msg, const Slice& msg2 = Slice(),
                            int16_t posix_code = -1) {
    return Status(kRemoteError, msg, msg2, posix_code);
  }
  static Status ServiceUnavailable(const Slice& msg, const Slice& msg2 = Slice(),
                                   int16_t posix_code = -1) {
    return Status(kServiceUnavailable, msg, msg2, posix_code);
  }
  static Status TimedOut(const Slice& msg, const Slice& msg2 = Slice(), int16_t posix_code = -1) {
    return Status(kTimedOut, msg, msg2, posix_code);
  }
  static Status Uninitialized(const Slice& msg, const Slice& msg2 = Slice(),
                              int16_t posix_code = -1) {
    return Status(kUninitialized, msg, msg2, posix_code);
  }
  static Status ConfigurationError(const Slice& msg, const Slice& msg2 = Slice(),
                                   int16_t posix_code = -1) {
    return Status(kConfigurationError, msg, msg2, posix_code);
  }
  static Status Incomplete(const Slice& msg, const Slice& msg2 = Slice(), int64_t posix_code = -1) {
    return Status(kIncomplete, msg, msg2, static_cast<int16_t>(posix_code));
  }
  static Status EndOfFile(const Slice& msg, const Slice& msg2 = Slice(), int64_t posix_code = -1) {
    return Status(kEndOfFile, msg, msg2, static_cast<int16_t>(posix_code));
  }
  static Status Immutable(const Slice& msg, const Slice& msg2 = Slice(), int64_t posix_code = -1) {
    return Status(kImmutable, msg, msg2, static_cast<int16_t>(posix_code));
  }

  bool ok() const { return state_ == nullptr; }
  bool IsNotFound() const { return code() == kNotFound; }
  bool IsCorruption() const { return code() == kCorruption; }
  bool IsNotSupported() const { return code() == kNotSupported; }
  bool IsIOError() const { return code() == kIOError; }
  bool IsInvalidArgument() const { return code() == kInvalidArgument; }
  bool IsAlreadyPresent() const { return code() == kAlreadyPresent; }
  bool IsRuntimeError() const { return code() == kRuntimeError; }
  bool IsNetworkError() const { return code() == kNetworkError; }
  bool IsIllegalState() const { return code() == kIllegalState; }
  bool IsNotAuthorized() const { return code() == kNotAuthorized; }
  bool IsAborted() const { return code() == kAborted; }
  bool IsRemoteError() const { return code() == kRemoteError; }
  bool IsServiceUnavailable() const { return code() == kServiceUnavailable; }
  bool IsTimedOut() const { return code() == kTimedOut; }
  bool IsUninitialized() const { return code() == kUninitialized; }
  bool IsConfigurationError() const { return code() == kConfigurationError; }
  bool IsIncomplete() const { return code() == kIncomplete; }
  bool IsEndOfFile() const { return code() == kEndOfFile; }
  bool IsImmutable() const { return code() == kImmutable; }
  // The POSIX code is one a failing disk gives.
  bool IsDiskFailure() const {
    const int16_t c = posix_code();
    return c == EIO || c == ENODEV || c == ENXIO || c == EROFS;
  }

  // "OK", or "<code>: <message>" with " (error <posix>)" when there is a POSIX code.
  std::string ToString() const;
  // "OK", "Not found", "Invalid argument", ...
  std::string CodeAsString() const;
  // The message without the code; empty for OK. Valid while this Status is unchanged.
  Slice message() const;
  // -1 when none (and for OK).
  int16_t posix_code() const;
  // This status with "msg: " in front of its message (OK stays OK).
  Status CloneAndPrepend(const Slice& msg) const;
  // This status with ": msg" after its message (OK stays OK).
  Status CloneAndAppend(const Slice& msg) const;
  size_t memory_footprint_excluding_this() const;
  size_t memory_footprint_including_this() const;

 private:
  // Numbering as in Kudu (part of its wire and ABI contract).
  enum Code {
    kOk = 0,
    kNotFound = 1,
    kCorruption = 2,
    kNotSupported = 3,
    kInvalidArgument = 4,
    kIOError = 5,
    kAlreadyPresent = 6,
    kRuntimeError = 7,
    kNetworkError = 8,
    kIllegalState = 9,
    kNotAuthorized = 10,
    kAborted = 11,
    kRemoteError = 12,
    kServiceUnavailable = 13,
    kTimedOut = 14,
    kUninitialized = 15,
    kConfigurationError = 16,
    kIncomplete = 17,
    kEndOfFile = 18,
    kImmutable = 20,
  };
  struct State;  // Code, POSIX code, message; defined in status.cc.

  Status(Code code, const Slice& msg, const Slice& msg2, int16_t posix_code);
  Code code() const;
  static void FreeState(State* state);

  State* state_;  // nullptr for OK; owned.
};

}  // namespace kudu
