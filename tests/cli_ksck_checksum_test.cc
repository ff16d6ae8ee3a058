// `basalt cluster ksck --checksum` against a cluster of real daemons (ExternalMiniCluster): every
// replica of every tablet, idle ones and an empty one included, agrees at the snapshot the leader
// picks, which followers serve once the leader's safe time reaches them (docs/cluster.md "Scans").

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "proto/tserver.pb.h"
#include "testing/external_mini_cluster.h"
#include "tests/cli_test_util.h"

namespace basalt {
namespace {
namespace cli_ksck_checksum_test_file {

class CliKsckChecksumTest : public CliClusterTest {};

TEST_F(CliKsckChecksumTest, IdleAndEmptyTabletsAgreeAtTheLeadersSnapshot) {
  // Three range tablets: keys [0, 100) and [100, 1000) get rows, [1000, ...) none.
  MustRun({"table", "create", master_,
           "CREATE TABLE t (key INT32, s STRING, PRIMARY KEY (key)) "
           "PARTITION BY RANGE (key) SPLIT ROWS (100, 1000) REPLICAS 3"});
  std::string csv = "key,s\n";
  for (int k = 0; k < 300; ++k) StrAppend(&csv, k, ",v", k, "\n");
  MustRun({"table", "load", master_, "t", WriteFile("rows.csv", csv)});
  pb::ListTabletsResponsePB tablets;
  BASALT_ASSERT_OK(cluster_->ListTablets(0, &tablets));
  ASSERT_EQ(tablets.tablets_size(), 3);
  for (const auto& t : tablets.tablets()) {
    BASALT_ASSERT_OK(cluster_->WaitForTabletLeader(t.tablet_id(), absl::Seconds(30)));
  }

  // Twice: the tablets are idle (no write after the load), and stay comparable.
  for (int run = 0; run < 2; ++run) {
    CliResult r = Basalt({"cluster", "ksck", master_, "--checksum"});
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("OK: 1 table(s), 3 tablet(s), 3 tablet server(s) healthy, replica "
                         "checksums match"),
              std::string::npos)
        << r.out;
    // One line per tablet with the rows its three replicas agree on.
    std::vector<uint64_t> rows;
    const std::regex line(R"(tablet \S+: OK \((\d+) rows, checksum (\d+)\))");
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), line), end; it != end; ++it) {
      rows.push_back(std::stoull((*it)[1].str()));
      if (rows.back() == 0) {
        EXPECT_EQ((*it)[2].str(), "0") << r.out;
      }
    }
    std::sort(rows.begin(), rows.end());
    EXPECT_EQ(rows, (std::vector<uint64_t>{0, 100, 200})) << r.out;
  }
}

}  // namespace cli_ksck_checksum_test_file
}  // namespace
}  // namespace basalt
