#pragma once

// Helpers for the harness's own tests (testing_test); header-only so nothing test-only goes into
// basalt_testing.

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "common/env.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "testing/external_mini_cluster.h"

namespace basalt::testing_util {

// The stand-in daemon built beside the real ones (src/testing/test_daemon_main.cc).
inline std::string TestDaemonPath() {
  return JoinPath(ExternalMiniCluster::ResolveBinDir(""), "basalt-test-daemon");
}

// The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), or 'X' if there is no such
// process.
inline char ProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 'X';
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

// A new empty directory under the test temp dir, unique per process and object, removed with
// everything in it when the object goes away.
class ScopedTestDir {
 public:
  explicit ScopedTestDir(const std::string& prefix) {
    static std::atomic<int> counter{0};
    path_ =
        JoinPath(::testing::TempDir(), StrCat(prefix, "-", getpid(), "-", counter.fetch_add(1)));
    Env::Default()->DeleteDirRecursively(path_).IgnoreError();
    BASALT_EXPECT_OK(Env::Default()->CreateDirs(path_)) << path_;
  }
  ~ScopedTestDir() { Env::Default()->DeleteDirRecursively(path_).IgnoreError(); }
  ScopedTestDir(const ScopedTestDir&) = delete;
  ScopedTestDir& operator=(const ScopedTestDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sets (or, with nullptr, unsets) an environment variable for the object's lifetime.
class ScopedEnvVar {
 public:
  ScopedEnvVar(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    if (old != nullptr) old_ = old;
    Set(value);
  }
  ~ScopedEnvVar() { Set(old_ ? old_->c_str() : nullptr); }
  ScopedEnvVar(const ScopedEnvVar&) = delete;
  ScopedEnvVar& operator=(const ScopedEnvVar&) = delete;

 private:
  void Set(const char* value) {
    if (value != nullptr) {
      setenv(name_.c_str(), value, 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace basalt::testing_util
