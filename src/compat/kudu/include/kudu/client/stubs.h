#pragma once

// Small macros and a stderr logger that the Kudu client headers use and that Kudu programs
// commonly use too (KUDU_LOG, KUDU_CHECK, PREDICT_FALSE, DISALLOW_COPY_AND_ASSIGN, ...), so that
// they need neither glog nor Kudu's internal headers. Each is defined only when not already
// defined (a program that includes glog first keeps glog's).
//
// KUDU_LOG(severity) writes one line to std::cerr; KUDU_LOG(FATAL) and a failed KUDU_CHECK abort
// the process after writing. KUDU_DCHECK* compile to nothing. The logger is thread-compatible:
// each statement builds its line and writes it in one call.

#include <cstdlib>
#include <iostream>
#include <sstream>

#ifndef PREDICT_FALSE
#define PREDICT_FALSE(x) (__builtin_expect(!!(x), 0))
#endif
#ifndef PREDICT_TRUE
#define PREDICT_TRUE(x) (__builtin_expect(!!(x), 1))
#endif
#ifndef WARN_UNUSED_RESULT
#define WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#endif
#ifndef ATTRIBUTE_UNUSED
#define ATTRIBUTE_UNUSED __attribute__((unused))
#endif
#ifndef ATTRIBUTE_DEPRECATED
#define ATTRIBUTE_DEPRECATED(msg) __attribute__((deprecated(msg)))
#endif
#ifndef OVERRIDE
#define OVERRIDE override
#endif
#ifndef COMPILE_ASSERT
#define COMPILE_ASSERT(expr, msg) static_assert(expr, #msg)
#endif
#ifndef DISALLOW_COPY_AND_ASSIGN
#define DISALLOW_COPY_AND_ASSIGN(TypeName) \
  TypeName(const TypeName&) = delete;      \
  void operator=(const TypeName&) = delete
#endif
#ifndef FRIEND_TEST
#define FRIEND_TEST(test_case_name, test_name) friend class test_case_name##_##test_name##_Test
#endif

#define KUDU_INFO 0
#define KUDU_WARNING 1
#define KUDU_ERROR 2
#define KUDU_FATAL 3
#ifdef NDEBUG
#define KUDU_DFATAL KUDU_WARNING
#else
#define KUDU_DFATAL KUDU_FATAL
#endif

#define KUDU_LOG_INTERNAL(level) ::kudu::internal_logging::CerrLog(level)
#define KUDU_LOG(level) KUDU_LOG_INTERNAL(KUDU_##level)
#define KUDU_CHECK(condition) \
  (condition)                 \
      ? (void)0               \
      : ::kudu::internal_logging::Voidify() & KUDU_LOG(FATAL) << "Check failed: " #condition " "

#define KUDU_DCHECK(condition) \
  while (false) ::kudu::internal_logging::NullLog()
#define KUDU_DCHECK_EQ(val1, val2) KUDU_DCHECK(true)
#define KUDU_DCHECK_NE(val1, val2) KUDU_DCHECK(true)
#define KUDU_DCHECK_LE(val1, val2) KUDU_DCHECK(true)
#define KUDU_DCHECK_LT(val1, val2) KUDU_DCHECK(true)
#define KUDU_DCHECK_GE(val1, val2) KUDU_DCHECK(true)
#define KUDU_DCHECK_GT(val1, val2) KUDU_DCHECK(true)
#define KUDU_DCHECK_NOTNULL(val) (val)
#define KUDU_DCHECK_STREQ(str1, str2) KUDU_DCHECK(true)
#define KUDU_DCHECK_STRCASEEQ(str1, str2) KUDU_DCHECK(true)
#define KUDU_DCHECK_STRNE(str1, str2) KUDU_DCHECK(true)
#define KUDU_DCHECK_STRCASENE(str1, str2) KUDU_DCHECK(true)

namespace kudu {
namespace internal_logging {

// Swallows everything streamed into it (the body of a disabled KUDU_DCHECK).
class NullLog {
 public:
  template <class T>
  NullLog& operator<<(const T&) {
    return *this;
  }
};

// One log line to std::cerr, written when the statement ends; FATAL aborts afterwards.
class CerrLog {
 public:
  CerrLog(int severity) : severity_(severity) {}  // NOLINT(runtime/explicit)
  ~CerrLog() {
    if (!line_.str().empty() || severity_ == KUDU_FATAL) {
      line_ << '\n';
      std::cerr << line_.str() << std::flush;
    }
    if (severity_ == KUDU_FATAL) std::abort();
  }
  CerrLog(const CerrLog&) = delete;
  CerrLog& operator=(const CerrLog&) = delete;

  template <class T>
  CerrLog& operator<<(const T& t) {
    line_ << t;
    return *this;
  }

 private:
  const int severity_;
  std::ostringstream line_;
};

// Turns "cond ? (void)0 : Voidify() & log << ..." into a void expression (KUDU_CHECK).
struct Voidify {
  void operator&(const CerrLog&) {}
};

}  // namespace internal_logging
}  // namespace kudu
