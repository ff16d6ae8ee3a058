#pragma once

// Callback interfaces of the client API: KuduLoggingCallback (client log messages, see
// InstallLoggingCallback) and KuduStatusCallback (KuduSession::FlushAsync), each with adapters
// for a member function and for a free function with an argument. The caller owns a callback and
// keeps it alive until it has run (or, for logging, until UninstallLoggingCallback returns).
// Callbacks run on client-internal threads and must be thread-safe.

#include <cstddef>
#include <ctime>

#include "kudu/client/stubs.h"
#include "kudu/util/kudu_export.h"

namespace kudu {

class Status;

namespace client {

enum KuduLogSeverity { SEVERITY_INFO, SEVERITY_WARNING, SEVERITY_ERROR, SEVERITY_FATAL };

class KUDU_EXPORT KuduLoggingCallback {
 public:
  KuduLoggingCallback() {}
  virtual ~KuduLoggingCallback() {}
  // One log message; `message` is not NUL-terminated and is valid during the call only.
  virtual void Run(KuduLogSeverity severity, const char* filename, int line_number,
                   const struct ::tm* time, const char* message, size_t message_len) = 0;

 private:
  DISALLOW_COPY_AND_ASSIGN(KuduLoggingCallback);
};

// Calls object->*member. The object must outlive the callback.
template <typename T>
class KUDU_EXPORT KuduLoggingMemberCallback : public KuduLoggingCallback {
 public:
  typedef void (T::*MemberType)(KuduLogSeverity severity, const char* filename, int line_number,
                                const struct ::tm* time, const char* message, size_t message_len);
  KuduLoggingMemberCallback(T* object, MemberType member) : object_(object), member_(member) {}
  void Run(KuduLogSeverity severity, const char* filename, int line_number, const struct ::tm* time,
           const char* message, size_t message_len) override {
    (object_->*member_)(severity, filename, line_number, time, message, message_len);
  }

 private:
  T* object_;
  MemberType member_;
};

// Calls function(arg, ...).
template <typename T>
class KUDU_EXPORT KuduLoggingFunctionCallback : public KuduLoggingCallback {
 public:
  typedef void (*FunctionType)(T arg, KuduLogSeverity severity, const char* filename,
                               int line_number, const struct ::tm* time, const char* message,
                               size_t message_len);
  KuduLoggingFunctionCallback(FunctionType function, T arg) : function_(function), arg_(arg) {}
  void Run(KuduLogSeverity severity, const char* filename, int line_number, const struct ::tm* time,
           const char* message, size_t message_len) override {
    function_(arg_, severity, filename, line_number, time, message, message_len);
  }

 private:
  FunctionType function_;
  T arg_;
};

class KUDU_EXPORT KuduStatusCallback {
 public:
  KuduStatusCallback() {}
  virtual ~KuduStatusCallback() {}
  virtual void Run(const Status& s) = 0;

 private:
  DISALLOW_COPY_AND_ASSIGN(KuduStatusCallback);
};

// Calls object->*member(s). The object must outlive the callback.
template <typename T>
class KUDU_EXPORT KuduStatusMemberCallback : public KuduStatusCallback {
 public:
  typedef void (T::*MemberType)(const Status& s);
  KuduStatusMemberCallback(T* object, MemberType member) : object_(object), member_(member) {}
  void Run(const Status& s) override { (object_->*member_)(s); }

 private:
  T* object_;
  MemberType member_;
};

// Calls function(arg, s).
template <typename T>
class KUDU_EXPORT KuduStatusFunctionCallback : public KuduStatusCallback {
 public:
  typedef void (*FunctionType)(T arg, const Status& s);
  KuduStatusFunctionCallback(FunctionType function, T arg) : function_(function), arg_(arg) {}
  void Run(const Status& s) override { function_(arg_, s); }

 private:
  FunctionType function_;
  T arg_;
};

}  // namespace client
}  // namespace kudu
