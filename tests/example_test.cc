// The example program of examples/ (issue 6 item 5) run as a user would: the real binary against
// a real local cluster. It checks its own results (596 rows in key order) and exits non-zero on
// any failure.

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "common/env.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "testing/external_mini_cluster.h"

namespace basalt::cluster_test {
namespace {
namespace example_test_file {

TEST(ExampleTest, BasicExampleRunsAgainstALocalCluster) {
  ExternalMiniCluster cluster;
  absl::Status s = cluster.Start();
  BASALT_ASSERT_OK(s);

  const std::string exe = JoinPath(ExternalMiniCluster::ResolveBinDir(""), "basic_example");
  const std::string log = JoinPath(cluster.root_dir(), "basic_example.log");
  const std::string cmd =
      StrCat(exe, " --master_addresses=", cluster.master_addresses(), " > ", log, " 2>&1");
  int rc = std::system(cmd.c_str());
  std::string output;
  ReadFileToString(Env::Default(), log, &output).IgnoreError();
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd << " failed:\n" << output;
  EXPECT_NE(output.find("596 rows"), std::string::npos) << output;
  BASALT_EXPECT_OK(cluster.CheckNoDaemonDied());
}

}  // namespace example_test_file
}  // namespace
}  // namespace basalt::cluster_test
