#pragma once

// Running the real `basalt` binary in tests (tests/cli_*_test.cc): a fixture with a per-test temp
// dir, and one with a running cluster of real daemons (ExternalMiniCluster).

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/external_mini_cluster.h"

namespace basalt {

// What one run of the binary did.
struct CliResult {
  int rc = -1;  // The exit code; -1 if it did not exit normally.
  std::string out;
  std::string err;
};

// `s` quoted for /bin/sh.
std::string ShellQuote(const std::string& s);
// The whole file, or "" if it cannot be read.
std::string ReadAll(const std::string& path);

// Runs `basalt args...` with `stdin_path` as its standard input, its output captured through
// files in `scratch_dir`.
CliResult RunBasalt(const std::vector<std::string>& args, const std::string& scratch_dir,
                    const std::string& stdin_path = "/dev/null");

// Runs the `basalt` binary in a per-test temp dir (removed at the end).
class CliRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Runs `basalt args...` (stdin: `stdin_path`) and captures its exit code, stdout and stderr.
  CliResult Basalt(const std::vector<std::string>& args,
                   const std::string& stdin_path = "/dev/null");
  // Runs and expects success; returns stdout.
  std::string MustRun(const std::vector<std::string>& args);
  // Writes `data` to the file `name` in the temp dir; returns its path.
  std::string WriteFile(const std::string& name, const std::string& data);

  std::string tmp_;
};

// A CliRunnerTest with a running cluster (1 master, 3 tablet servers, 200 ms Raft heartbeats).
class CliClusterTest : public CliRunnerTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::unique_ptr<ExternalMiniCluster> cluster_;
  std::string master_;
};

}  // namespace basalt
