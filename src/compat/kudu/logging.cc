// Process-wide functions of the client API: the logging callback (a glog sink that forwards the
// Basalt client's log messages), the verbose level, version strings, and the initialization
// switches Basalt has no use for.

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "compat/kudu/internal.h"
#include "glog/logging.h"

#ifndef BASALT_VERSION_STRING
#define BASALT_VERSION_STRING "unknown"
#endif

namespace kudu {
namespace client {
namespace {

// Forwards every glog message to a KuduLoggingCallback.
class CallbackSink : public google::LogSink {
 public:
  explicit CallbackSink(KuduLoggingCallback* cb) : cb_(cb) {}
  void send(google::LogSeverity severity, const char* full_filename, const char* base_filename,
            int line, const struct ::tm* tm_time, const char* message,
            size_t message_len) override {
    KuduLogSeverity s = SEVERITY_INFO;
    switch (severity) {
      case google::GLOG_WARNING:
        s = SEVERITY_WARNING;
        break;
      case google::GLOG_ERROR:
        s = SEVERITY_ERROR;
        break;
      case google::GLOG_FATAL:
        s = SEVERITY_FATAL;
        break;
      default:
        break;
    }
    cb_->Run(s, full_filename, line, tm_time, message, message_len);
  }

 private:
  KuduLoggingCallback* const cb_;
};

absl::Mutex sink_mu(absl::kConstInit);
// The installed sink. glog's RemoveLogSink waits for sends in progress, so a callback does not
// run after UninstallLoggingCallback returns.
CallbackSink* installed_sink ABSL_GUARDED_BY(sink_mu) = nullptr;

void RemoveSinkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sink_mu) {
  if (installed_sink == nullptr) return;
  google::RemoveLogSink(installed_sink);
  delete installed_sink;
  installed_sink = nullptr;
}

}  // namespace

void InstallLoggingCallback(KuduLoggingCallback* cb) {
  absl::MutexLock l(&sink_mu);
  RemoveSinkLocked();
  if (cb == nullptr) return;
  installed_sink = new CallbackSink(cb);
  google::AddLogSink(installed_sink);
}

void UninstallLoggingCallback() {
  absl::MutexLock l(&sink_mu);
  RemoveSinkLocked();
}

void SetVerboseLogLevel(int level) { FLAGS_v = level; }

Status SetInternalSignalNumber(int signum) { return Status::OK(); }
Status DisableSaslInitialization() { return Status::OK(); }
Status DisableOpenSSLInitialization() { return Status::OK(); }

std::string GetShortVersionString() { return "1.18.0-basalt-" BASALT_VERSION_STRING; }

std::string GetAllVersionInfo() {
  return GetShortVersionString() +
         "\nKudu C++ client API 1.18 on the Basalt client (libbasalt_kudu_compat)";
}

}  // namespace client
}  // namespace kudu
