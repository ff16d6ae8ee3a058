// Tests of the `basalt` CLI's operational actions (docs/cli.md): `table load`, run as the real
// binary against a cluster of real daemons (ExternalMiniCluster).

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "proto/tserver.pb.h"
#include "testing/external_mini_cluster.h"
#include "tests/cli_test_util.h"

namespace basalt {
namespace {
namespace cli_ops_test_file {

// A cluster test with a table to load into.
class CliOpsTest : public CliClusterTest {
 protected:
  void CreateTable() {
    MustRun({"table", "create", master_,
             "CREATE TABLE t (key INT32, s STRING, d DECIMAL(5, 2), n INT32 NOT NULL DEFAULT 7, "
             "PRIMARY KEY (key)) PARTITION BY HASH (key) PARTITIONS 2 REPLICAS 3"});
  }
};

TEST_F(CliOpsTest, LoadGoodFile) {
  ASSERT_NO_FATAL_FAILURE(CreateTable());
  std::string csv = "key,s,d\n1,\"a, \"\"quoted\"\" one\",1.25\n2,,\n3,\"\",3\n";
  for (int k = 4; k <= 500; ++k) StrAppend(&csv, k, ",v", k, ",", k, ".5\n");
  const std::string path = WriteFile("good.csv", csv);
  CliResult r = Basalt({"table", "load", master_, "t", path, "--progress"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Loaded 500 rows into t"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("100%  500/500 rows"), std::string::npos) << r.err;
  EXPECT_EQ(MustRun({"table", "count", master_, "t"}), "500\n");
  const std::string scan =
      MustRun({"table", "scan", master_, "t", "--predicates=key = 1", "--format=csv"});
  EXPECT_NE(scan.find("1,\"a, \"\"quoted\"\" one\",1.25,7"), std::string::npos) << scan;
  EXPECT_EQ(MustRun({"table", "count", master_, "t", "--predicates=s IS NULL"}), "1\n");

  // --columns: no header line. Key 2 exists already: the duplicate is reported, exit code 1.
  const std::string more = WriteFile("more.csv", "1000,x\n2,dup\n1001,y\n");
  CliResult dup = Basalt({"table", "load", master_, "t", more, "--columns=key,s"});
  EXPECT_EQ(dup.rc, 1);
  EXPECT_NE(dup.err.find("1 of 3 row(s) failed to load"), std::string::npos) << dup.err;
  EXPECT_NE(dup.err.find("key=2"), std::string::npos) << dup.err;
  EXPECT_EQ(MustRun({"table", "count", master_, "t"}), "502\n");
}

TEST_F(CliOpsTest, LoadMalformedFileNamesTheLineAndLoadsNothing) {
  ASSERT_NO_FATAL_FAILURE(CreateTable());
  struct Case {
    std::string csv;
    std::string error;  // After "<path>".
  };
  const std::vector<Case> cases = {
      {"key,s\n1,a\n2,b\nthree,c\n4,d\n", ":4: column 'key': value three does not fit type INT32"},
      {"key,s\n1,a\n2\n", ":3: expected 2 field(s), got 1"},
      {"key,s,d\n1,a,1.5\n2,b,1.2.3\n", ":3: column 'd':"},
      {"key,s\n1,a\n2,b\"c\n", ": line 3: quote inside an unquoted field"},
      {"key,nope\n1,a\n", ": header: table has no column 'nope'"},
      {"key,s\n,a\n", ":2: column 'key': empty value for a NOT NULL column"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = WriteFile(StrCat("bad", i, ".csv"), cases[i].csv);
    CliResult r = Basalt({"table", "load", master_, "t", path});
    EXPECT_EQ(r.rc, 1) << cases[i].csv;
    EXPECT_NE(r.err.find(StrCat(path, cases[i].error)), std::string::npos)
        << "want: " << cases[i].error << "\ngot: " << r.err;
  }
  EXPECT_EQ(MustRun({"table", "count", master_, "t"}), "0\n");
}

TEST_F(CliOpsTest, LeaderStepDownMovesLeadership) {
  ASSERT_NO_FATAL_FAILURE(CreateTable());
  pb::ListTabletsResponsePB tablets;
  BASALT_ASSERT_OK(cluster_->ListTablets(0, &tablets));
  ASSERT_GT(tablets.tablets_size(), 0);
  const std::string tablet_id = tablets.tablets(0).tablet_id();
  auto leader = cluster_->WaitForTabletLeader(tablet_id, absl::Seconds(30));
  BASALT_ASSERT_OK(leader);

  const std::string out = MustRun({"tablet", "leader_step_down", master_, tablet_id});
  EXPECT_NE(out.find(StrCat("Leader ", leader->uuid)), std::string::npos) << out;
  EXPECT_NE(out.find("stepped down"), std::string::npos) << out;
  auto next = cluster_->WaitForTabletLeader(tablet_id, absl::Seconds(30), leader->term + 1);
  BASALT_ASSERT_OK(next);
  EXPECT_GT(next->term, leader->term);

  // Transfer to a chosen replica.
  const int target_ts = (next->ts_index + 1) % 3;
  const std::string target = cluster_->tablet_server(target_ts)->uuid();
  MustRun({"tablet", "leader_step_down", master_, tablet_id, "--new_leader_uuid=" + target});
  bool moved = false;
  for (int i = 0; i < 300 && !moved; ++i) {
    auto l = cluster_->WaitForTabletLeader(tablet_id, absl::Seconds(30), next->term + 1);
    BASALT_ASSERT_OK(l);
    moved = l->uuid == target;
    if (!moved) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(moved);

  CliResult bad = Basalt({"tablet", "leader_step_down", master_, "no-such-tablet"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("no tablet server hosts tablet no-such-tablet"), std::string::npos)
      << bad.err;
}

TEST_F(CliOpsTest, KsckHealthyThenKilledTabletServer) {
  ASSERT_NO_FATAL_FAILURE(CreateTable());
  std::string csv = "key,s\n";
  for (int k = 0; k < 200; ++k) StrAppend(&csv, k, ",v", k, "\n");
  MustRun({"table", "load", master_, "t", WriteFile("rows.csv", csv)});
  pb::ListTabletsResponsePB tablets;
  BASALT_ASSERT_OK(cluster_->ListTablets(0, &tablets));
  for (const auto& t : tablets.tablets()) {
    BASALT_ASSERT_OK(cluster_->WaitForTabletLeader(t.tablet_id(), absl::Seconds(30)));
  }
  // (--checksum: tests/cli_ksck_checksum_test.cc.)
  const std::string ok = MustRun({"cluster", "ksck", master_});
  EXPECT_NE(ok.find("OK: 1 table(s), 2 tablet(s), 3 tablet server(s) healthy"), std::string::npos)
      << ok;
  EXPECT_NE(ok.find(StrCat("tablet ", tablets.tablets(0).tablet_id(), ": OK")), std::string::npos)
      << ok;

  const std::string dead = cluster_->tablet_server(1)->uuid();
  cluster_->tablet_server(1)->Kill();
  CliResult r = Basalt({"cluster", "ksck", master_});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find(StrCat("Tablet server ", dead)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(StrCat("replica on ", dead)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tablet server unreachable"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("ksck found problems in 2 of 2 tablet(s)"), std::string::npos) << r.err;
}

}  // namespace cli_ops_test_file
}  // namespace
}  // namespace basalt
