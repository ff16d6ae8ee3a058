// Tests of `basalt cluster rebalance` (docs/cli.md), run as the real binary against a cluster of
// real daemons: four tablet servers hold a table of eight tablets with three replicas each, a
// fifth server joins empty, and rebalance spreads the replicas over all five while a writer runs.
//
// What counts is what the servers say (ListTablets of each): a replica is one that is RUNNING
// (a tombstone, TABLET_DELETED, is not), and each tablet's leader reports its configuration.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "client/client.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/tserver.pb.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/cli_test_util.h"
#include "tests/client_test_util.h"
#include "tests/client_writer_util.h"

namespace basalt::client_test {
namespace {
namespace client_rebalance_test_file {

class RebalanceTest : public ClientClusterTestBase {
 protected:
  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = ClientClusterTestBase::ClusterOptions();
    o.num_tablet_servers = 4;
    for (const std::string& f : extra_tserver_flags_) o.extra_tserver_flags.push_back(f);
    return o;
  }

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ClientClusterTestBase::SetUp());
    scratch_ = ::testing::TempDir() + "rebalance_test.XXXXXX";
    ASSERT_NE(mkdtemp(scratch_.data()), nullptr);
  }
  void TearDown() override {
    ClientClusterTestBase::TearDown();
    std::system(StrCat("rm -rf ", ShellQuote(scratch_)).c_str());
  }

  CliResult Basalt(const std::vector<std::string>& args) { return RunBasalt(args, scratch_); }

  // OK when every tablet of `table` (eight) has exactly one leader whose configuration is three
  // voters, each reporting the tablet RUNNING. *counts gets the RUNNING replicas per tablet server
  // index (ListTablets of each).
  absl::Status Healthy(const std::string& table, std::map<int, int>* counts) {
    counts->clear();
    std::map<std::string, std::map<std::string, pb::TabletStatusPB>> tablets;  // id -> uuid ->.
    for (int i = 0; i < cluster_->num_tablet_servers(); ++i) {
      pb::ListTabletsResponsePB listing;
      absl::Status s = cluster_->ListTablets(i, &listing);
      if (!s.ok()) return s;
      (*counts)[i] = 0;
      for (const auto& t : listing.tablets()) {
        if (t.state() == pb::TABLET_DELETED) continue;
        if (t.state() == pb::TABLET_RUNNING) ++(*counts)[i];
        if (t.table_name() == table) tablets[t.tablet_id()][cluster_->tablet_server(i)->uuid()] = t;
      }
    }
    if (tablets.size() != 8) return absl::UnavailableError(StrCat(tablets.size(), " tablets"));
    for (const auto& [id, replicas] : tablets) {
      const pb::TabletStatusPB* leader = nullptr;
      for (const auto& [uuid, t] : replicas) {
        if (t.role() == pb::LEADER) {
          if (leader != nullptr) return absl::UnavailableError(StrCat(id, ": two leaders"));
          leader = &t;
        }
      }
      if (leader == nullptr) return absl::UnavailableError(StrCat(id, ": no leader"));
      int voters = 0;
      for (const auto& p : leader->config().peers()) {
        if (p.member_type() != pb::RaftPeerPB::VOTER) {
          return absl::UnavailableError(StrCat(id, ": a learner on ", p.uuid()));
        }
        ++voters;
        auto it = replicas.find(p.uuid());
        if (it == replicas.end() || it->second.state() != pb::TABLET_RUNNING) {
          return absl::UnavailableError(StrCat(id, ": voter ", p.uuid(), " not running"));
        }
      }
      if (voters != 3) return absl::UnavailableError(StrCat(id, ": ", voters, " voters"));
    }
    return absl::OkStatus();
  }

  // Healthy, and the replicas per server differ by at most one.
  absl::Status BalancedAndHealthy(const std::string& table, std::map<int, int>* counts) {
    BASALT_RETURN_IF_ERROR(Healthy(table, counts));
    int lo = counts->begin()->second, hi = lo;
    std::string spread;
    for (const auto& [ts, n] : *counts) {
      lo = std::min(lo, n);
      hi = std::max(hi, n);
      StrAppend(&spread, " ts-", ts, ":", n);
    }
    if (hi - lo > 1) return absl::UnavailableError(StrCat("replicas per server:", spread));
    return absl::OkStatus();
  }

  // Creates the table "t" (eight tablets), waits until they are healthy and adds a fifth,
  // empty tablet server (index 4).
  void SetUpUnbalanced(std::shared_ptr<client::Table>* table) {
    ASSERT_NO_FATAL_FAILURE(CreateTable("t", 8, {}, table));
    std::map<int, int> counts;
    ASSERT_OK(
        WaitFor(absl::Seconds(30), "8 healthy tablets", [&] { return Healthy("t", &counts); }));
    absl::StatusOr<int> added = cluster_->AddTabletServer();
    BASALT_ASSERT_OK(added);
    ASSERT_EQ(*added, 4);
  }

  std::vector<std::string> extra_tserver_flags_;
  std::string scratch_;
};

// The number N of "Moved N replicas" in `out`, or -1.
int MovedCount(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("Moved ([0-9]+) replicas? in"))) return -1;
  return std::stoi(m[1]);
}

TEST_F(RebalanceTest, NewServerGetsItsShareWhileAWriterRuns) {
  std::shared_ptr<client::Table> table;
  ASSERT_NO_FATAL_FAILURE(SetUpUnbalanced(&table));
  BackgroundWriter writer(client_, table);
  writer.Start();
  ASSERT_OK(writer.WaitForAcked(1000));

  const std::string masters = cluster_->master_addresses();
  const absl::Time start = absl::Now();
  const CliResult r = Basalt({"cluster", "rebalance", masters,
                              "--output_replica_distribution_details", "--timeout_ms=60000"});
  LOG(INFO) << "rebalance took " << absl::Now() - start << "; stdout:\n"
            << r.out << "stderr:\n"
            << r.err;
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  // 24 replicas on five servers: the new one needs four at least.
  EXPECT_GE(MovedCount(r.out), 4) << r.out;
  EXPECT_NE(r.out.find("the cluster is balanced (24 replicas on 5 tablet servers, 4 to 5 each)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("before"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Replicas of table t per tablet server:"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[move 1] tablet "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[move 1] done in "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("failed"), std::string::npos) << r.err;

  // Writes go on through the new configurations.
  const size_t acked = writer.acked_count();
  ASSERT_OK(writer.WaitForAcked(acked + 1000));
  ASSERT_OK(writer.Stop());

  // The evicted replicas are tombstoned once the master hears of the new configurations.
  std::map<int, int> counts;
  ASSERT_OK(WaitFor(absl::Seconds(30), "balanced replicas, three voters each",
                    [&] { return BalancedAndHealthy("t", &counts); }));
  EXPECT_GE(counts[4], 4);
  ASSERT_NO_FATAL_FAILURE(writer.Verify());
  const CliResult ksck = Basalt({"cluster", "ksck", masters, "--checksum"});
  EXPECT_EQ(ksck.rc, 0) << ksck.out << ksck.err;

  // Balanced now: a second run says so and moves nothing.
  const CliResult again = Basalt({"cluster", "rebalance", masters});
  ASSERT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("The cluster is balanced (24 replicas on 5 tablet servers, 4 to 5 "
                           "each); nothing to move"),
            std::string::npos)
      << again.out;
  EXPECT_EQ(again.err.find("[move"), std::string::npos) << again.err;
  std::map<int, int> counts_again;
  ASSERT_OK(BalancedAndHealthy("t", &counts_again));
  EXPECT_EQ(counts_again, counts);
}

// Tablet copies that take longer than --timeout_ms: each FetchData waits 4 s.
class RebalanceSlowCopyTest : public RebalanceTest {
 protected:
  RebalanceSlowCopyTest() { extra_tserver_flags_ = {"--tablet_copy_fetch_delay_ms=4000"}; }
};

// The new replicas do not become voters in time: rebalance stops with exit code 1, and the error
// names the move, its tablet and both servers, says how to finish or undo it, and shows the
// tablet's replicas as the move left them.
TEST_F(RebalanceSlowCopyTest, FailedMoveStopsWithTheTabletAndItsState) {
  std::shared_ptr<client::Table> table;
  ASSERT_NO_FATAL_FAILURE(SetUpUnbalanced(&table));
  const std::string added = cluster_->tablet_server(4)->uuid();
  const CliResult r =
      Basalt({"cluster", "rebalance", cluster_->master_addresses(), "--timeout_ms=1500"});
  LOG(INFO) << "stdout:\n" << r.out << "stderr:\n" << r.err;
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("Moved 0 replicas in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the cluster is not balanced"), std::string::npos) << r.out;
  const std::string server = "[0-9a-f]+ \\([0-9.:]+\\)";
  const std::regex error(StrCat(
      "Error: move [0-9]+ of tablet ([0-9a-f]+) \\(table t\\) from ", server, " to ", added,
      " \\([0-9.:]+\\) failed: tablet server ", added,
      " did not become a VOTER of tablet ([0-9a-f]+)", " within --timeout_ms=1500 .*Tablet server ",
      added, " was added to tablet .* is still a ",
      "member: finish the move with `basalt tablet change_config remove_replica .*`.*",
      "Tablet [0-9a-f]+: its replicas now: .*", added, " \\(NON_VOTER"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, error)) << r.err;
  EXPECT_EQ(m[1], m[2]);
}

// The flag is checked before anything is asked of the cluster.
using RebalanceFlagsTest = CliRunnerTest;

TEST_F(RebalanceFlagsTest, MaxMovesPerServerBelowOneIsRefused) {
  for (const char* flag : {"--max_moves_per_server=0", "--max_moves_per_server=-3"}) {
    const CliResult r = Basalt({"cluster", "rebalance", "127.0.0.1:1", flag});
    EXPECT_EQ(r.rc, 1) << flag;
    EXPECT_NE(r.err.find("Error: --max_moves_per_server must be at least 1 (got "),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace client_rebalance_test_file
}  // namespace
}  // namespace basalt::client_test
