#include "server/server_instance.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/synchronization/mutex.h"
#include "common/strings.h"

namespace basalt {

std::string GenerateUuid() {
  std::random_device rd;
  std::string out;
  out.reserve(32);
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    uint32_t v = rd();
    for (int j = 0; j < 4; ++j) {
      out.push_back(kHex[(v >> (j * 8)) & 0xf]);
      out.push_back(kHex[(v >> (j * 8 + 4)) & 0xf]);
    }
  }
  return out;
}

ServerInstance::ServerInstance(Env* env, std::string dir, std::string uuid,
                               std::unique_ptr<FileLock> lock)
    : env_(env), dir_(std::move(dir)), uuid_(std::move(uuid)), lock_(std::move(lock)) {}

ServerInstance::~ServerInstance() {
  if (lock_ != nullptr) env_->UnlockFile(std::move(lock_)).IgnoreError();
}

absl::StatusOr<std::unique_ptr<ServerInstance>> ServerInstance::Open(Env* env,
                                                                     const std::string& dir,
                                                                     std::string_view kind) {
  if (dir.empty()) return absl::InvalidArgumentError("no data directory given");
  if (absl::Status s = env->CreateDirs(dir); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<FileLock>> lock = env->LockFile(JoinPath(dir, "LOCK"));
  if (!lock.ok()) {
    return absl::FailedPreconditionError(
        StrCat("cannot lock data directory ", dir,
               " (is another daemon using it?): ", lock.status().message()));
  }
  const std::string path = JoinPath(dir, "instance");
  std::string uuid;
  if (env->FileExists(path)) {
    std::string data;
    if (absl::Status s = ReadFileToString(env, path, &data); !s.ok()) return s;
    // Format: "<kind> <uuid>\n".
    size_t space = data.find(' ');
    if (space == std::string::npos || data.empty() || data.back() != '\n') {
      return absl::DataLossError(StrCat("malformed instance file ", path));
    }
    std::string file_kind = data.substr(0, space);
    uuid = data.substr(space + 1, data.size() - space - 2);
    if (uuid.size() != 32 || uuid.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return absl::DataLossError(StrCat("malformed uuid in instance file ", path));
    }
    if (file_kind != kind) {
      return absl::FailedPreconditionError(
          StrCat("data directory ", dir, " belongs to a ", file_kind, ", not a ", kind));
    }
  } else {
    uuid = GenerateUuid();
    if (absl::Status s = WriteFileAtomically(env, path, StrCat(kind, " ", uuid, "\n")); !s.ok()) {
      return s;
    }
  }
  return std::unique_ptr<ServerInstance>(
      new ServerInstance(env, dir, std::move(uuid), *std::move(lock)));
}

absl::Status WriteServerInfo(Env* env, const std::string& path, const std::string& uuid,
                             int rpc_port, int http_port) {
  return WriteFileAtomically(
      env, path,
      StrCat("{\"uuid\": \"", uuid, "\", \"rpc_port\": ", rpc_port, ", \"http_port\": ", http_port,
             ", \"pid\": ", getpid(), "}\n"));
}

void InitDaemon(int* argc, char*** argv, const char* usage) {
  gflags::SetUsageMessage(usage);
  gflags::ParseCommandLineFlags(argc, argv, true);
  if (FLAGS_log_dir.empty()) FLAGS_logtostderr = true;
  google::InitGoogleLogging((*argv)[0]);
  google::InstallFailureSignalHandler();
  // Debian's Abseil is built without NDEBUG, so every Mutex operation would also update a
  // deadlock-detection graph: a large share of a busy server's CPU. Lock order is checked by the
  // clang thread-safety build instead.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A peer closing a socket must not kill the process.
  signal(SIGPIPE, SIG_IGN);
}

int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

}  // namespace basalt
