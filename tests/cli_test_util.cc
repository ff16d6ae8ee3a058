#include "tests/cli_test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/status_test_util.h"
#include "common/strings.h"

namespace basalt {

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q.push_back(c);
    }
  }
  return q + "'";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void CliRunnerTest::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  tmp_ = StrCat(::testing::TempDir(), "/cli_test-", info->name(), "-", getpid());
  ASSERT_EQ(std::system(StrCat("mkdir -p ", ShellQuote(tmp_)).c_str()), 0);
}

void CliRunnerTest::TearDown() { std::system(StrCat("rm -rf ", ShellQuote(tmp_)).c_str()); }

CliResult CliRunnerTest::Basalt(const std::vector<std::string>& args,
                                const std::string& stdin_path) {
  return RunBasalt(args, tmp_, stdin_path);
}

CliResult RunBasalt(const std::vector<std::string>& args, const std::string& scratch_dir,
                    const std::string& stdin_path) {
  std::string cmd = ShellQuote(ExternalMiniCluster::ResolveBinDir("") + "/basalt");
  for (const auto& a : args) StrAppend(&cmd, " ", ShellQuote(a));
  const std::string out = scratch_dir + "/stdout", err = scratch_dir + "/stderr";
  StrAppend(&cmd, " >", ShellQuote(out), " 2>", ShellQuote(err), " <", ShellQuote(stdin_path));
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadAll(out);
  r.err = ReadAll(err);
  return r;
}

std::string CliRunnerTest::MustRun(const std::vector<std::string>& args) {
  CliResult r = Basalt(args);
  EXPECT_EQ(r.rc, 0) << "basalt " << args[0] << " " << (args.size() > 1 ? args[1] : "")
                     << "\nstdout: " << r.out << "\nstderr: " << r.err;
  return r.out;
}

std::string CliRunnerTest::WriteFile(const std::string& name, const std::string& data) {
  const std::string path = StrCat(tmp_, "/", name);
  std::ofstream(path) << data;
  return path;
}

void CliClusterTest::SetUp() {
  ASSERT_NO_FATAL_FAILURE(CliRunnerTest::SetUp());
  ExternalMiniClusterOptions o;
  o.extra_tserver_flags = {"--raft_heartbeat_interval_ms=200"};
  cluster_ = std::make_unique<ExternalMiniCluster>(o);
  const absl::Status s = cluster_->Start();
  BASALT_ASSERT_OK(s);
  master_ = cluster_->master_addresses();
}

void CliClusterTest::TearDown() {
  if (cluster_ != nullptr) {
    const absl::Status died = cluster_->CheckNoDaemonDied();
    BASALT_EXPECT_OK(died);
    if (HasFailure()) cluster_->set_keep_root_dir(true);
    cluster_.reset();
  }
  CliRunnerTest::TearDown();
}

}  // namespace basalt
