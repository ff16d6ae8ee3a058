// Block GC with real processes (docs/tserver.md "Block GC"): a tablet server killed (SIGKILL, at
// a crash point) in the middle of a flush or a compaction leaves block files that no superblock
// names; after the next start none is left, the rows are all there, and the replica's checksum
// matches its peers'.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/block_files_util.h"
#include "tests/cluster_test_util.h"

namespace basalt::cluster_test {
namespace {
namespace block_gc_crash_test_file {

constexpr absl::Duration kTimeout = absl::Seconds(60);
// Compactions never happen with this improvement threshold (the average rowset height can drop
// by less than the number of rowsets).
constexpr char kNoCompactions[] = "--tablet_compaction_minimum_improvement=1000000";
constexpr char kCompactions[] = "--tablet_compaction_minimum_improvement=0.01";
// Nothing is flushed for an hour (or 1 GiB).
const std::vector<std::string> kNoFlushes = {"--flush_threshold_secs=3600",
                                             "--flush_threshold_mb=1024"};
// The server that crashes.
constexpr int kVictim = 0;

class BlockGcCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ExternalMiniClusterOptions o;
    // Flushes a second after a write; elections in about a second.
    o.extra_tserver_flags = {"--raft_heartbeat_interval_ms=200", "--flush_threshold_secs=1",
                             kNoCompactions};
    cluster_ = std::make_unique<ExternalMiniCluster>(o);
    BASALT_ASSERT_OK(cluster_->Start());
    TestTableSpec spec;
    spec.name = "gc";
    spec.hash_buckets = 0;  // One tablet, on all three servers.
    auto table = TestTable::Create(cluster_.get(), spec, kTimeout);
    BASALT_ASSERT_OK(table);
    table_ = *std::move(table);
    ASSERT_EQ(table_->tablets().size(), 1u);
    tablet_id_ = table_->tablets()[0].tablet_id;
  }

  void TearDown() override {
    if (cluster_ == nullptr) return;
    if (HasFailure()) cluster_->set_keep_root_dir(true);
    cluster_.reset();
  }

  ExternalDaemon* victim() { return cluster_->tablet_server(kVictim); }
  const std::string& victim_dir() { return victim()->data_dir(); }

  // Writes rows with keys first, first + step, ... (count of them).
  void WriteRows(int32_t first, int32_t step, int count) {
    std::vector<TestRow> rows;
    for (int i = 0; i < count; ++i) rows.push_back(MakeRow(first + i * step));
    BASALT_ASSERT_OK(table_->Write(RowOperationType::kInsert, rows, kTimeout));
    written_ += count;
  }

  // Waits until the victim's superblock has `n` rowsets.
  void WaitForRowSets(size_t n) {
    BASALT_ASSERT_OK(WaitFor(kTimeout, StrCat(n, " rowsets on the victim"), [&]() -> absl::Status {
      auto sb = ReadTabletSuperBlock(victim_dir(), tablet_id_);
      if (!sb.ok()) return sb.status();
      if (sb->rowsets.size() == n) return absl::OkStatus();
      return absl::UnavailableError(StrCat(sb->rowsets.size(), " rowsets"));
    }));
  }

  // Restarts the victim armed to die at `point`, then waits until it has.
  void CrashAt(const std::string& point, const std::vector<std::string>& more_flags) {
    std::vector<std::string> flags = more_flags;
    flags.push_back("--fault_crash_at_point=" + point);
    BASALT_ASSERT_OK(victim()->Restart(flags));
  }
  void WaitForCrash() {
    BASALT_ASSERT_OK(WaitFor(kTimeout, "the victim to die at its crash point", [&] {
      return victim()->IsRunning() ? absl::UnavailableError("running") : absl::OkStatus();
    }));
    EXPECT_TRUE(victim()->ExitedUnexpectedly());
    EXPECT_NE(victim()->last_exit().find("signal 9"), std::string::npos) << victim()->last_exit();
  }

  // Block files the superblocks do not name, and temporary files.
  void Leftovers(std::vector<uint64_t>* unnamed, std::vector<std::string>* temp) {
    auto files = ListBlockFiles(victim_dir());
    BASALT_ASSERT_OK(files);
    auto named = BlocksNamedBySuperBlocks(victim_dir());
    BASALT_ASSERT_OK(named);
    unnamed->clear();
    std::set_difference(files->blocks.begin(), files->blocks.end(), named->begin(), named->end(),
                        std::back_inserter(*unnamed));
    *temp = files->temp_files;
  }

  // Restarts the victim unarmed, with neither flushes nor compactions (so that nothing new is
  // written while the directory is checked), and checks that the start left no block behind and
  // that every replica holds the same rows. `leaked` blocks were unnamed before the start.
  void RestartAndCheck(size_t leaked) {
    std::vector<std::string> flags = kNoFlushes;
    flags.push_back("--fault_crash_at_point=");
    flags.push_back(kNoCompactions);
    BASALT_ASSERT_OK(victim()->Restart(flags));
    // The GC ran before the server wrote its info file, i.e. before Restart returned.
    std::vector<uint64_t> unnamed;
    std::vector<std::string> temp;
    ASSERT_NO_FATAL_FAILURE(Leftovers(&unnamed, &temp));
    EXPECT_TRUE(unnamed.empty()) << unnamed.size() << " blocks no superblock names survived";
    EXPECT_TRUE(temp.empty()) << temp.size() << " temporary files survived, e.g. " << temp[0];
    auto deleted = ScrapeCounter(*victim(), "basalt_block_gc_deleted_blocks_total");
    BASALT_ASSERT_OK(deleted);
    EXPECT_EQ(*deleted, static_cast<int64_t>(leaked));
    ASSERT_NO_FATAL_FAILURE(ExpectReplicasAgree());
  }

  // Every replica holds `written_` rows, with the leader's checksum at the leader's snapshot.
  void ExpectReplicasAgree() {
    BASALT_ASSERT_OK(cluster_->WaitForTabletRunning(tablet_id_, {0, 1, 2}, kTimeout));
    auto leader = cluster_->WaitForTabletLeader(tablet_id_, kTimeout);
    BASALT_ASSERT_OK(leader);
    auto ref = ChecksumReplica(cluster_.get(), leader->ts_index, tablet_id_, 0);
    BASALT_ASSERT_OK(ref);
    EXPECT_EQ(ref->num_rows(), static_cast<uint64_t>(written_));
    for (int ts = 0; ts < 3; ++ts) {
      // A follower answers once its safe time reaches the snapshot (the victim is catching up).
      absl::StatusOr<pb::ChecksumResponsePB> c;
      BASALT_ASSERT_OK(WaitFor(kTimeout, StrCat("the checksum of ts ", ts), [&] {
        c = ChecksumReplica(cluster_.get(), ts, tablet_id_, ref->snap_timestamp());
        return c.status();
      }));
      EXPECT_EQ(c->num_rows(), ref->num_rows()) << "ts " << ts;
      EXPECT_EQ(c->checksum(), ref->checksum()) << "ts " << ts;
    }
  }

  // A flush killed at `point`: the rows are in the WAL, the flush's blocks on disk unnamed.
  void FlushCrash(const std::string& point, bool expect_finalized) {
    ASSERT_NO_FATAL_FAILURE(CrashAt(point, {}));
    ASSERT_NO_FATAL_FAILURE(WriteRows(0, 1, 2000));
    ASSERT_NO_FATAL_FAILURE(WaitForCrash());
    std::vector<uint64_t> unnamed;
    std::vector<std::string> temp;
    ASSERT_NO_FATAL_FAILURE(Leftovers(&unnamed, &temp));
    // The crash left something behind, or the test would prove nothing.
    if (expect_finalized) {
      EXPECT_FALSE(unnamed.empty());
    } else {
      EXPECT_FALSE(temp.empty());
    }
    auto sb = ReadTabletSuperBlock(victim_dir(), tablet_id_);
    BASALT_ASSERT_OK(sb);
    EXPECT_TRUE(sb->rowsets.empty());  // The flush never committed.
    LOG(INFO) << "after the crash: " << unnamed.size() << " unnamed blocks, " << temp.size()
              << " temporary files";
    ASSERT_NO_FATAL_FAILURE(RestartAndCheck(unnamed.size()));
  }

  std::unique_ptr<ExternalMiniCluster> cluster_;
  std::unique_ptr<TestTable> table_;
  std::string tablet_id_;
  int written_ = 0;
};

TEST_F(BlockGcCrashTest, KilledAfterAFlushFinalizedItsBlocks) {
  FlushCrash("block_manager_after_finalize", /*expect_finalized=*/true);
}

TEST_F(BlockGcCrashTest, KilledBeforeAFlushFinalizedItsBlocks) {
  FlushCrash("block_manager_before_finalize", /*expect_finalized=*/false);
}

TEST_F(BlockGcCrashTest, KilledAfterACompactionFinalizedItsBlocks) {
  // Two overlapping rowsets on every replica: even keys, then odd keys.
  ASSERT_NO_FATAL_FAILURE(WriteRows(0, 2, 1000));
  ASSERT_NO_FATAL_FAILURE(WaitForRowSets(1));
  ASSERT_NO_FATAL_FAILURE(WriteRows(1, 2, 1000));
  ASSERT_NO_FATAL_FAILURE(WaitForRowSets(2));
  // Compactions allowed: merging the two is the first thing that finalizes blocks (the rows are
  // all flushed, nothing else is due).
  ASSERT_NO_FATAL_FAILURE(CrashAt("block_manager_after_finalize", {kCompactions}));
  ASSERT_NO_FATAL_FAILURE(WaitForCrash());
  std::vector<uint64_t> unnamed;
  std::vector<std::string> temp;
  ASSERT_NO_FATAL_FAILURE(Leftovers(&unnamed, &temp));
  EXPECT_FALSE(unnamed.empty());
  auto sb = ReadTabletSuperBlock(victim_dir(), tablet_id_);
  BASALT_ASSERT_OK(sb);
  EXPECT_EQ(sb->rowsets.size(), 2u);  // The compaction never committed.
  LOG(INFO) << "after the crash: " << unnamed.size() << " unnamed blocks";
  ASSERT_NO_FATAL_FAILURE(RestartAndCheck(unnamed.size()));
  // The inputs are still there and whole: both rowsets' blocks are named and present.
  sb = ReadTabletSuperBlock(victim_dir(), tablet_id_);
  BASALT_ASSERT_OK(sb);
  EXPECT_EQ(sb->rowsets.size(), 2u);
}

}  // namespace block_gc_crash_test_file
}  // namespace
}  // namespace basalt::cluster_test
