#pragma once

// MonoDelta (a signed duration in nanoseconds, possibly "uninitialized") and MonoTime (a point on
// the monotonic clock, CLOCK_MONOTONIC). Used for client timeouts. Value types; thread-safe.

#include <cstdint>
#include <iosfwd>
#include <string>

#include "kudu/client/stubs.h"
#include "kudu/util/kudu_export.h"

struct timespec;
struct timeval;

namespace kudu {

class MonoTime;

class KUDU_EXPORT MonoDelta {
 public:
  static MonoDelta FromSeconds(double seconds);
  static MonoDelta FromMilliseconds(int64_t ms);
  static MonoDelta FromMicroseconds(int64_t us);
  static MonoDelta FromNanoseconds(int64_t ns);

  // An uninitialized delta (Initialized() is false).
  MonoDelta();
  bool Initialized() const;
  bool LessThan(const MonoDelta& rhs) const ATTRIBUTE_DEPRECATED("use operator<");
  bool MoreThan(const MonoDelta& rhs) const ATTRIBUTE_DEPRECATED("use operator>");
  bool Equals(const MonoDelta& rhs) const ATTRIBUTE_DEPRECATED("use operator==");
  // "1.500s".
  std::string ToString() const;
  double ToSeconds() const;
  int64_t ToMilliseconds() const;
  int64_t ToMicroseconds() const;
  int64_t ToNanoseconds() const;
  void ToTimeVal(struct timeval* tv) const;
  void ToTimeSpec(struct timespec* ts) const;
  static void NanosToTimeSpec(int64_t nanos, struct timespec* ts);
  MonoDelta& operator+=(const MonoDelta& delta);
  MonoDelta& operator-=(const MonoDelta& delta);

 private:
  friend class MonoTime;
  explicit MonoDelta(int64_t nanos) : nano_delta_(nanos) {}
  int64_t nano_delta_;
};

class KUDU_EXPORT MonoTime {
 public:
  static const int64_t kNanosecondsPerSecond = 1000000000L;
  static const int64_t kNanosecondsPerMillisecond = 1000000L;
  static const int64_t kNanosecondsPerMicrosecond = 1000L;
  static const int64_t kMicrosecondsPerSecond = 1000000L;

  static MonoTime Now();
  static MonoTime Max();
  static MonoTime Min();
  static const MonoTime& Earliest(const MonoTime& a, const MonoTime& b)
      ATTRIBUTE_DEPRECATED("use std::min()");

  // An uninitialized time (Initialized() is false).
  MonoTime() noexcept;
  bool Initialized() const;
  MonoDelta GetDeltaSince(const MonoTime& rhs) const ATTRIBUTE_DEPRECATED("use operator-");
  void AddDelta(const MonoDelta& delta) ATTRIBUTE_DEPRECATED("use operator+=");
  bool ComesBefore(const MonoTime& rhs) const ATTRIBUTE_DEPRECATED("use operator<");
  // Seconds since an arbitrary epoch, "12345.678s".
  std::string ToString() const;
  void ToTimeSpec(struct timespec* ts) const;
  bool Equals(const MonoTime& other) const ATTRIBUTE_DEPRECATED("use operator==");
  MonoTime& operator+=(const MonoDelta& delta);
  MonoTime& operator-=(const MonoDelta& delta);

 private:
  friend KUDU_EXPORT MonoDelta operator-(const MonoTime& t_end, const MonoTime& t_begin);
  friend KUDU_EXPORT bool operator==(const MonoTime& lhs, const MonoTime& rhs);
  friend KUDU_EXPORT bool operator<(const MonoTime& lhs, const MonoTime& rhs);
  explicit MonoTime(int64_t nanos) noexcept : nanos_(nanos) {}
  int64_t nanos_;
};

// Sleeps for `delta` (resuming after signals until it has passed).
KUDU_EXPORT void SleepFor(const MonoDelta& delta);

KUDU_EXPORT bool operator==(const MonoDelta& lhs, const MonoDelta& rhs);
KUDU_EXPORT bool operator!=(const MonoDelta& lhs, const MonoDelta& rhs);
KUDU_EXPORT bool operator<(const MonoDelta& lhs, const MonoDelta& rhs);
KUDU_EXPORT bool operator<=(const MonoDelta& lhs, const MonoDelta& rhs);
KUDU_EXPORT bool operator>(const MonoDelta& lhs, const MonoDelta& rhs);
KUDU_EXPORT bool operator>=(const MonoDelta& lhs, const MonoDelta& rhs);
KUDU_EXPORT MonoDelta operator-(const MonoDelta& lhs, const MonoDelta& rhs);
KUDU_EXPORT MonoDelta operator+(const MonoDelta& lhs, const MonoDelta& rhs);

KUDU_EXPORT bool operator==(const MonoTime& lhs, const MonoTime& rhs);
KUDU_EXPORT bool operator!=(const MonoTime& lhs, const MonoTime& rhs);
KUDU_EXPORT bool operator<(const MonoTime& lhs, const MonoTime& rhs);
KUDU_EXPORT bool operator<=(const MonoTime& lhs, const MonoTime& rhs);
KUDU_EXPORT bool operator>(const MonoTime& lhs, const MonoTime& rhs);
KUDU_EXPORT bool operator>=(const MonoTime& lhs, const MonoTime& rhs);
KUDU_EXPORT MonoTime operator+(const MonoTime& t, const MonoDelta& delta);
KUDU_EXPORT MonoTime operator-(const MonoTime& t, const MonoDelta& delta);
KUDU_EXPORT MonoDelta operator-(const MonoTime& t_end, const MonoTime& t_begin);
KUDU_EXPORT std::ostream& operator<<(std::ostream& os, const MonoTime& time);

}  // namespace kudu
