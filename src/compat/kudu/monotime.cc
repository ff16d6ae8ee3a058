// MonoDelta, MonoTime, SleepFor.

#include "kudu/util/monotime.h"

#include <sys/time.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <limits>
#include <ostream>
#include <string>

namespace kudu {
namespace {

// An uninitialized delta or time.
constexpr int64_t kUninitialized = std::numeric_limits<int64_t>::min();

std::string SecondsString(double s) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3fs", s);
  return buf;
}

}  // namespace

MonoDelta MonoDelta::FromSeconds(double seconds) {
  return MonoDelta(static_cast<int64_t>(seconds * MonoTime::kNanosecondsPerSecond));
}
MonoDelta MonoDelta::FromMilliseconds(int64_t ms) {
  return MonoDelta(ms * MonoTime::kNanosecondsPerMillisecond);
}
MonoDelta MonoDelta::FromMicroseconds(int64_t us) {
  return MonoDelta(us * MonoTime::kNanosecondsPerMicrosecond);
}
MonoDelta MonoDelta::FromNanoseconds(int64_t ns) { return MonoDelta(ns); }

MonoDelta::MonoDelta() : nano_delta_(kUninitialized) {}
bool MonoDelta::Initialized() const { return nano_delta_ != kUninitialized; }
bool MonoDelta::LessThan(const MonoDelta& rhs) const { return nano_delta_ < rhs.nano_delta_; }
bool MonoDelta::MoreThan(const MonoDelta& rhs) const { return nano_delta_ > rhs.nano_delta_; }
bool MonoDelta::Equals(const MonoDelta& rhs) const { return nano_delta_ == rhs.nano_delta_; }
std::string MonoDelta::ToString() const { return SecondsString(ToSeconds()); }
double MonoDelta::ToSeconds() const {
  return static_cast<double>(nano_delta_) / MonoTime::kNanosecondsPerSecond;
}
int64_t MonoDelta::ToMilliseconds() const {
  return nano_delta_ / MonoTime::kNanosecondsPerMillisecond;
}
int64_t MonoDelta::ToMicroseconds() const {
  return nano_delta_ / MonoTime::kNanosecondsPerMicrosecond;
}
int64_t MonoDelta::ToNanoseconds() const { return nano_delta_; }

void MonoDelta::ToTimeVal(struct timeval* tv) const {
  tv->tv_sec = nano_delta_ / MonoTime::kNanosecondsPerSecond;
  tv->tv_usec = (nano_delta_ % MonoTime::kNanosecondsPerSecond) / 1000;
  if (tv->tv_usec < 0) {  // Keep tv_usec in [0, 1e6) for negative deltas.
    tv->tv_sec--;
    tv->tv_usec += 1000000;
  }
}

void MonoDelta::NanosToTimeSpec(int64_t nanos, struct timespec* ts) {
  ts->tv_sec = nanos / MonoTime::kNanosecondsPerSecond;
  ts->tv_nsec = nanos % MonoTime::kNanosecondsPerSecond;
  if (ts->tv_nsec < 0) {
    ts->tv_sec--;
    ts->tv_nsec += MonoTime::kNanosecondsPerSecond;
  }
}

void MonoDelta::ToTimeSpec(struct timespec* ts) const { NanosToTimeSpec(nano_delta_, ts); }

MonoDelta& MonoDelta::operator+=(const MonoDelta& delta) {
  nano_delta_ += delta.nano_delta_;
  return *this;
}
MonoDelta& MonoDelta::operator-=(const MonoDelta& delta) {
  nano_delta_ -= delta.nano_delta_;
  return *this;
}

MonoTime MonoTime::Now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return MonoTime(static_cast<int64_t>(ts.tv_sec) * kNanosecondsPerSecond + ts.tv_nsec);
}
MonoTime MonoTime::Max() { return MonoTime(std::numeric_limits<int64_t>::max()); }
MonoTime MonoTime::Min() { return MonoTime(1); }
const MonoTime& MonoTime::Earliest(const MonoTime& a, const MonoTime& b) {
  return b.nanos_ < a.nanos_ ? b : a;
}

MonoTime::MonoTime() noexcept : nanos_(0) {}
bool MonoTime::Initialized() const { return nanos_ != 0; }
MonoDelta MonoTime::GetDeltaSince(const MonoTime& rhs) const { return *this - rhs; }
void MonoTime::AddDelta(const MonoDelta& delta) { *this += delta; }
bool MonoTime::ComesBefore(const MonoTime& rhs) const { return nanos_ < rhs.nanos_; }
std::string MonoTime::ToString() const {
  return SecondsString(static_cast<double>(nanos_) / kNanosecondsPerSecond);
}
void MonoTime::ToTimeSpec(struct timespec* ts) const { MonoDelta::NanosToTimeSpec(nanos_, ts); }
bool MonoTime::Equals(const MonoTime& other) const { return nanos_ == other.nanos_; }
MonoTime& MonoTime::operator+=(const MonoDelta& delta) {
  nanos_ += delta.nano_delta_;
  return *this;
}
MonoTime& MonoTime::operator-=(const MonoDelta& delta) {
  nanos_ -= delta.nano_delta_;
  return *this;
}

void SleepFor(const MonoDelta& delta) {
  struct timespec left;
  delta.ToTimeSpec(&left);
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

bool operator==(const MonoDelta& lhs, const MonoDelta& rhs) {
  return lhs.ToNanoseconds() == rhs.ToNanoseconds();
}
bool operator!=(const MonoDelta& lhs, const MonoDelta& rhs) { return !(lhs == rhs); }
bool operator<(const MonoDelta& lhs, const MonoDelta& rhs) {
  return lhs.ToNanoseconds() < rhs.ToNanoseconds();
}
bool operator<=(const MonoDelta& lhs, const MonoDelta& rhs) { return !(rhs < lhs); }
bool operator>(const MonoDelta& lhs, const MonoDelta& rhs) { return rhs < lhs; }
bool operator>=(const MonoDelta& lhs, const MonoDelta& rhs) { return !(lhs < rhs); }
MonoDelta operator-(const MonoDelta& lhs, const MonoDelta& rhs) {
  return MonoDelta::FromNanoseconds(lhs.ToNanoseconds() - rhs.ToNanoseconds());
}
MonoDelta operator+(const MonoDelta& lhs, const MonoDelta& rhs) {
  return MonoDelta::FromNanoseconds(lhs.ToNanoseconds() + rhs.ToNanoseconds());
}

bool operator==(const MonoTime& lhs, const MonoTime& rhs) { return lhs.nanos_ == rhs.nanos_; }
bool operator!=(const MonoTime& lhs, const MonoTime& rhs) { return !(lhs == rhs); }
bool operator<(const MonoTime& lhs, const MonoTime& rhs) { return lhs.nanos_ < rhs.nanos_; }
bool operator<=(const MonoTime& lhs, const MonoTime& rhs) { return !(rhs < lhs); }
bool operator>(const MonoTime& lhs, const MonoTime& rhs) { return rhs < lhs; }
bool operator>=(const MonoTime& lhs, const MonoTime& rhs) { return !(lhs < rhs); }
MonoTime operator+(const MonoTime& t, const MonoDelta& delta) {
  MonoTime out = t;
  out += delta;
  return out;
}
MonoTime operator-(const MonoTime& t, const MonoDelta& delta) {
  MonoTime out = t;
  out -= delta;
  return out;
}
MonoDelta operator-(const MonoTime& t_end, const MonoTime& t_begin) {
  return MonoDelta::FromNanoseconds(t_end.nanos_ - t_begin.nanos_);
}
std::ostream& operator<<(std::ostream& os, const MonoTime& time) { return os << time.ToString(); }

}  // namespace kudu
