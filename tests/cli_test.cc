// Tests of the `basalt` CLI (src/tools, docs/cli.md): the real binary run against a cluster of
// real daemons (ExternalMiniCluster), checking its exit codes and exact output.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "testing/external_mini_cluster.h"
#include "tests/cli_test_util.h"

namespace basalt {
namespace {
namespace cli_test_file {

// A cluster test that can also write rows through the client.
class CliTest : public CliClusterTest {
 protected:
  // Inserts key 1..5 into table `name` (key INT32, s STRING NULL, d DECIMAL(5, 2) NULL) with
  // s NULL for key 3 and d = key + 0.25.
  void InsertRows(const std::string& name) {
    std::shared_ptr<client::Client> c;
    BASALT_ASSERT_OK(client::ClientBuilder().add_master_server_addr(master_).Build(&c));
    std::shared_ptr<client::Table> t;
    BASALT_ASSERT_OK(c->OpenTable(name, &t));
    auto session = c->NewSession();
    for (int k = 1; k <= 5; ++k) {
      auto op = t->NewInsert();
      BASALT_ASSERT_OK(op->mutable_row()->SetInt32("key", k));
      if (k != 3) {
        BASALT_ASSERT_OK(op->mutable_row()->SetString("s", StrCat("v", k)));
      }
      BASALT_ASSERT_OK(op->mutable_row()->SetUnscaledDecimal("d", k * 100 + 25));
      const absl::Status s = session->Apply(std::move(op));
      BASALT_ASSERT_OK(s);
    }
    BASALT_ASSERT_OK(session->Flush());
  }
};

std::vector<std::string> SortedLines(const std::string& s) {
  std::vector<std::string> lines = absl::StrSplit(s, '\n', absl::SkipEmpty());
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The "Checked by" path (against a harness cluster instead of `local start`).
TEST_F(CliTest, CreateLoadgenCountCheckedByPath) {
  EXPECT_EQ(MustRun({"table", "create", master_,
                     "CREATE TABLE t (key INT32, int_val INT32, non_null_with_default INT32 NOT "
                     "NULL DEFAULT 12345, PRIMARY KEY (key)) PARTITION BY HASH (key) PARTITIONS 4 "
                     "REPLICAS 3"}),
            "Created table t\n");
  const std::string out = MustRun({"perf", "loadgen", master_, "--table_name=t",
                                   "--num_rows_per_thread=100000", "--num_threads=1"});
  EXPECT_NE(out.find("Inserted 100000 rows in "), std::string::npos) << out;
  EXPECT_NE(out.find(" rows/s)"), std::string::npos) << out;
  EXPECT_EQ(MustRun({"table", "count", master_, "t"}), "100000\n");
  // More threads with disjoint keys, and the verifying scan.
  const std::string out2 =
      MustRun({"perf", "loadgen", master_, "--table_name=t", "--num_rows_per_thread=500",
               "--num_threads=3", "--key_start=100000", "--run_scan"});
  EXPECT_NE(out2.find("Scan counted 101500 rows"), std::string::npos) << out2;
  EXPECT_EQ(MustRun({"table", "count", master_, "t", "--predicates=key >= 100000"}), "1500\n");
  // Keys already there: the inserts fail and loadgen says so.
  CliResult dup = Basalt({"perf", "loadgen", master_, "--table_name=t", "--num_rows_per_thread=10",
                          "--num_threads=1"});
  EXPECT_EQ(dup.rc, 1);
  EXPECT_NE(dup.err.find("10 insert(s) failed"), std::string::npos) << dup.err;
}

// The workloads of `make perf` (docs/performance.md): loadgen's flush modes, lookups and scans,
// with their human and JSON outputs.
TEST_F(CliTest, PerfFlushModesLookupAndScan) {
  MustRun({"table", "create", master_,
           "CREATE TABLE w (key INT32, integer_val INT32 NOT NULL, non_null_with_default INT32 "
           "NOT NULL DEFAULT 12345, PRIMARY KEY (key)) PARTITION BY HASH (key) PARTITIONS 4"});
  // MANUAL_FLUSH: a Flush() after every 100 rows, each one timed.
  const std::string manual =
      MustRun({"perf", "loadgen", master_, "--table_name=w", "--num_threads=1",
               "--num_rows_per_thread=1000", "--flush_mode=manual", "--flush_every=100"});
  EXPECT_NE(manual.find("Inserted 1000 rows in "), std::string::npos) << manual;
  EXPECT_NE(manual.find("Flush: 10 calls waited, p50 "), std::string::npos) << manual;
  // AUTO_FLUSH_SYNC: every insert waits; JSON output is one object.
  const std::string sync = MustRun({"perf", "loadgen", master_, "--table_name=w", "--num_threads=1",
                                    "--num_rows_per_thread=50", "--key_start=1000",
                                    "--flush_mode=sync", "--format=json"});
  EXPECT_TRUE(absl::StartsWith(sync,
                               "{\"workload\": \"loadgen\", \"table\": \"w\", "
                               "\"flush_mode\": \"sync\", \"threads\": 1, \"rows\": 50,"))
      << sync;
  EXPECT_NE(sync.find("\"waits\": 50,"), std::string::npos) << sync;
  // A sync insert of a key already there fails that row; the run goes on and reports them all.
  CliResult dup_sync = Basalt({"perf", "loadgen", master_, "--table_name=w", "--num_threads=1",
                               "--num_rows_per_thread=5", "--key_start=1048", "--flush_mode=sync"});
  EXPECT_EQ(dup_sync.rc, 1);
  EXPECT_NE(dup_sync.err.find("2 insert(s) failed"), std::string::npos) << dup_sync.err;
  CliResult bad = Basalt({"perf", "loadgen", master_, "--table_name=w", "--flush_mode=eventually"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("--flush_mode: 'eventually' is not one of background, manual, sync"),
            std::string::npos)
      << bad.err;

  // Lookups: every key of [0, 1053) is there; none of [5000, 5100).
  const std::string found = MustRun(
      {"perf", "lookup", master_, "w", "--num_lookups=100", "--num_threads=2", "--perf_seed=7"});
  EXPECT_NE(found.find("Looked up 100 keys (100 found) in "), std::string::npos) << found;
  EXPECT_NE(found.find(" with 2 threads: "), std::string::npos) << found;
  const std::string missing = MustRun({"perf", "lookup", master_, "w", "--num_lookups=20",
                                       "--key_start=5000", "--key_range=100", "--format=json"});
  EXPECT_NE(missing.find("\"lookups\": 20, \"found\": 0,"), std::string::npos) << missing;
  MustRun({"table", "create", master_, "CREATE TABLE s (k STRING PRIMARY KEY, v INT32)"});
  CliResult string_key = Basalt({"perf", "lookup", master_, "s"});
  EXPECT_EQ(string_key.rc, 1);
  EXPECT_NE(string_key.err.find("needs an integer primary key; k is not one"), std::string::npos)
      << string_key.err;
  CliResult no_table = Basalt({"perf", "lookup", master_, "nope"});
  EXPECT_EQ(no_table.rc, 1);

  // Scan: integer_val of row i is i, so the sum over rows 0..1052 is 1052 * 1053 / 2.
  const std::string scan = MustRun({"perf", "scan", master_, "w", "--columns=integer_val"});
  EXPECT_NE(scan.find("Scanned 1053 rows (0.0 MB) of integer_val in "), std::string::npos) << scan;
  EXPECT_NE(scan.find("; integer sum 553878\n"), std::string::npos) << scan;
  const std::string scan_json = MustRun(
      {"perf", "scan", master_, "w", "--columns=key", "--predicates=key >= 1000", "--format=json"});
  EXPECT_NE(scan_json.find("\"rows\": 53, \"bytes\": 212,"), std::string::npos) << scan_json;
  CliResult bad_column = Basalt({"perf", "scan", master_, "w", "--columns=nope"});
  EXPECT_EQ(bad_column.rc, 1);
  EXPECT_NE(bad_column.err.find("nope"), std::string::npos) << bad_column.err;
}

TEST_F(CliTest, LoadgenCreatesATableWhenNoneIsNamed) {
  const std::string out = MustRun(
      {"perf", "loadgen", master_, "--num_rows_per_thread=200", "--num_threads=2", "--run_scan"});
  EXPECT_NE(out.find("Created table loadgen_auto_"), std::string::npos) << out;
  EXPECT_NE(out.find("Scan counted 400 rows"), std::string::npos) << out;
  EXPECT_NE(MustRun({"table", "list", master_}).find("loadgen_auto_"), std::string::npos);
}

TEST_F(CliTest, CreateDescribeScanDelete) {
  // A bad spec: exit code 1 and the caret under the bad token; nothing is created.
  CliResult bad = Basalt(
      {"table", "create", master_, "CREATE TABLE m (key INT32, s STRNG, PRIMARY KEY (key))"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(bad.err,
            "Error: unknown type 'STRNG' at position 30:\n"
            "  CREATE TABLE m (key INT32, s STRNG, PRIMARY KEY (key))\n"
            "                               ^\n");
  EXPECT_EQ(MustRun({"table", "list", master_, "--format=csv"}), "name,id,tablets,replicas\n");

  MustRun({"table", "create", master_,
           "create table m (key int32, s string, d decimal(5, 2), primary key (key)) partition "
           "by hash (key) partitions 2, range (key) (partition values < 3, partition values >= "
           "3) replicas 3"});
  const std::string desc = MustRun({"table", "describe", master_, "m"});
  EXPECT_NE(desc.find("TABLE m (\n    key INT32,\n    s STRING NULL,\n    d DECIMAL(5, 2) NULL,\n"
                      "    PRIMARY KEY (key)\n)\n"),
            std::string::npos)
      << desc;
  EXPECT_NE(desc.find("PARTITION BY HASH (key) PARTITIONS 2, RANGE (key)"), std::string::npos)
      << desc;
  EXPECT_NE(desc.find("TABLETS (4):"), std::string::npos) << desc;
  EXPECT_NE(desc.find("LEADER"), std::string::npos) << desc;

  ASSERT_NO_FATAL_FAILURE(InsertRows("m"));
  const std::string preds = "--predicates=key >= 2 AND key <= 4 AND s IS NOT NULL";
  EXPECT_EQ(SortedLines(MustRun({"table", "scan", master_, "m", preds, "--format=csv"})),
            (std::vector<std::string>{"2,v2,2.25", "4,v4,4.25", "key,s,d"}));
  const std::string json =
      MustRun({"table", "scan", master_, "m", "--predicates=key IN (1, 3)", "--format=json"});
  EXPECT_NE(json.find("{\"key\": 3, \"s\": null, \"d\": 3.25}"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"key\": 1, \"s\": \"v1\", \"d\": 1.25}"), std::string::npos) << json;
  EXPECT_EQ(json.front(), '[');
  const std::string table =
      MustRun({"table", "scan", master_, "m", "--predicates=s IS NULL", "--columns=key,s"});
  EXPECT_EQ(table, "key | s\n----+-----\n  3 | NULL\n");
  // A header and two rows.
  EXPECT_EQ(
      SortedLines(MustRun({"table", "scan", master_, "m", "--limit=2", "--format=csv"})).size(),
      3u);
  EXPECT_EQ(MustRun({"table", "count", master_, "m"}), "5\n");
  EXPECT_EQ(MustRun({"table", "count", master_, "m", "--predicates=d > 2.5"}), "3\n");

  CliResult badpred = Basalt({"table", "scan", master_, "m", "--predicates=key >> 3"});
  EXPECT_EQ(badpred.rc, 1);
  EXPECT_NE(badpred.err.find("at position 6"), std::string::npos) << badpred.err;
  CliResult nocol = Basalt({"table", "scan", master_, "m", "--predicates=nope = 3"});
  EXPECT_EQ(nocol.rc, 1);
  EXPECT_NE(nocol.err.find("no column 'nope'"), std::string::npos) << nocol.err;

  EXPECT_EQ(MustRun({"table", "delete", master_, "m"}), "Deleted table m\n");
  CliResult gone = Basalt({"table", "count", master_, "m"});
  EXPECT_EQ(gone.rc, 1);
  EXPECT_NE(gone.err.find("Error: "), std::string::npos);
}

TEST_F(CliTest, ServersMastersAndHelp) {
  const std::string ts = MustRun({"tserver", "list", master_, "--format=json"});
  size_t n = 0;
  for (size_t p = ts.find("\"live\": true"); p != std::string::npos;
       p = ts.find("\"live\": true", p + 1)) {
    ++n;
  }
  EXPECT_EQ(n, 3u) << ts;
  const std::string masters = MustRun({"master", "list", master_});
  EXPECT_NE(masters.find(master_), std::string::npos) << masters;
  EXPECT_NE(masters.find("LEADER"), std::string::npos) << masters;

  EXPECT_NE(MustRun({"--help"}).find("Commands:\n"), std::string::npos);
  EXPECT_NE(MustRun({"table", "--help"}).find("Actions:\n"), std::string::npos);
  EXPECT_NE(MustRun({"table", "create", "--help"})
                .find("Usage: basalt table create <master_addresses> <spec>"),
            std::string::npos);
  EXPECT_EQ(Basalt({"tabel"}).rc, 1);
  EXPECT_EQ(Basalt({"table", "scan", master_}).rc, 1);
  EXPECT_EQ(Basalt({"table", "list", master_, "--format=xml"}).rc, 1);
}

// `local start` prints the master address alone on stdout; the cluster serves the CLI; `local
// stop` stops every daemon and `local destroy` removes the directory.
TEST_F(CliRunnerTest, LocalStartStopRoundTrip) {
  const std::string dir = tmp_ + "/local";
  CliResult started = Basalt({"local", "start", "--dir", dir, "--num_tablet_servers=1"});
  ASSERT_EQ(started.rc, 0) << started.err;
  ASSERT_TRUE(absl::StartsWith(started.out, "127.0.0.1:")) << started.out;
  ASSERT_EQ(started.out.back(), '\n');
  const std::string master = started.out.substr(0, started.out.size() - 1);
  EXPECT_EQ(master.find('\n'), std::string::npos) << started.out;
  MustRun({"table", "create", master,
           "CREATE TABLE t (key INT64, PRIMARY KEY (key)) PARTITION BY HASH (key) PARTITIONS 2 "
           "REPLICAS 1"});
  MustRun({"perf", "loadgen", master, "--table_name=t", "--num_rows_per_thread=50"});
  EXPECT_EQ(MustRun({"table", "count", master, "t"}), "100\n");
  const std::string status = MustRun({"local", "status", "--dir", dir, "--format=csv"});
  EXPECT_NE(status.find("master addresses: " + master), std::string::npos) << status;
  EXPECT_NE(status.find(",true,"), std::string::npos) << status;
  MustRun({"local", "stop", "--dir", dir});
  const std::string stopped = MustRun({"local", "status", "--dir", dir, "--format=csv"});
  EXPECT_EQ(stopped.find(",true,"), std::string::npos) << stopped;
  MustRun({"local", "destroy", "--dir", dir});
  EXPECT_NE(std::system(StrCat("test -e ", ShellQuote(dir)).c_str()), 0);
  EXPECT_EQ(Basalt({"local", "start"}).rc, 1);  // --dir is required.
}

}  // namespace cli_test_file
}  // namespace
}  // namespace basalt
