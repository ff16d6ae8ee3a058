#include "tserver/block_scrubber.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/metrics.h"
#include "common/status_test_util.h"
#include "tserver/block_test_util.h"
#include "tserver/tserver_test_util.h"

namespace basalt {
namespace {
namespace block_scrubber_test_file {

using block_test::DataDirTest;

struct Report {
  std::string tablet_id;
  BlockId block;
  absl::Status error;
};

class BlockScrubberTest : public DataDirTest {
 protected:
  BlockScrubberOptions Options() {
    BlockScrubberOptions o = DirOptions<BlockScrubberOptions>(&metrics_);
    o.bytes_per_sec = 1 << 30;
    o.clock = &clock_;
    o.pace_for_testing = [this](absl::Duration d) {
      waited_ += d;
      clock_.AdvanceMicros(absl::ToInt64Microseconds(d));
    };
    o.on_corruption = [this](const std::string& tablet, BlockId block, const absl::Status& s) {
      reports_.push_back({tablet, block, s});
    };
    return o;
  }
  // The total size of every block the superblock of `id` names.
  int64_t NamedBytes(const std::string& id) {
    int64_t total = 0;
    for (const RowSetBlock& b : RowSetBlocks(id)) total += (*bm()->OpenBlock(b.id))->size();
    return total;
  }

  MetricRegistry metrics_;
  std::vector<Report> reports_;
  absl::Duration waited_;
};

TEST_F(BlockScrubberTest, ACleanPassReadsEveryByteOfEveryBlockAndReportsNothing) {
  AddTabletWithEveryKindOfBlock("t1");
  AddTabletWithEveryKindOfBlock("t2", 60);
  BlockScrubber scrubber(Options());
  BASALT_ASSERT_OK(scrubber.RunPass());
  const BlockScrubberStats st = scrubber.stats();
  EXPECT_EQ(st.passes, 1);
  EXPECT_EQ(st.blocks, static_cast<int64_t>(RowSetBlocks("t1").size() + RowSetBlocks("t2").size()));
  EXPECT_GE(st.bytes, NamedBytes("t1") + NamedBytes("t2"));
  EXPECT_EQ(st.corruptions, 0);
  EXPECT_TRUE(reports_.empty());
  const std::string text = metrics_.RenderPrometheus();
  EXPECT_NE(text.find("basalt_scrub_bytes_total " + std::to_string(st.bytes)), std::string::npos)
      << text;
  EXPECT_NE(text.find("basalt_scrub_passes_total 1"), std::string::npos) << text;
}

// A byte that rots in any kind of block is found, and reported once with its tablet and block.
TEST_F(BlockScrubberTest, AFlippedByteInABlockOfEachKindIsReportedWithItsTablet) {
  AddTabletWithEveryKindOfBlock("t1");
  AddTabletWithEveryKindOfBlock("t2", 60);
  for (RowSetBlockKind kind :
       {RowSetBlockKind::kColumn, RowSetBlockKind::kKeyIndex, RowSetBlockKind::kBloom,
        RowSetBlockKind::kRedo, RowSetBlockKind::kUndo}) {
    SCOPED_TRACE(RowSetBlockKindName(kind));
    const BlockId bad = FirstBlockOf("t2", kind);
    const std::string good = ReadBlockFile(bad);
    FlipByte(bad, good.size() / 3);  // In the data, not the trailer.
    reports_.clear();
    BlockScrubber scrubber(Options());
    BASALT_ASSERT_OK(scrubber.RunPass());
    ASSERT_EQ(reports_.size(), 1u);
    EXPECT_EQ(reports_[0].tablet_id, "t2");
    EXPECT_EQ(reports_[0].block, bad);
    EXPECT_EQ(reports_[0].error.code(), absl::StatusCode::kDataLoss) << reports_[0].error;
    EXPECT_NE(reports_[0].error.message().find(bad.ToString()), std::string::npos);
    // The next pass does not report it again.
    BASALT_ASSERT_OK(scrubber.RunPass());
    EXPECT_EQ(reports_.size(), 1u);
    EXPECT_EQ(scrubber.stats().corruptions, 1);
    OverwriteBlockFile(bad, good);
  }
}

// A compaction that retires blocks while a pass runs is not corruption; a block the current
// superblock still names that is missing is.
TEST_F(BlockScrubberTest, RetiredBlocksAreSkippedAndLostBlocksReported) {
  Tablet* t = AddTabletWithEveryKindOfBlock("t1");
  // Two rowsets: the compaction below retires both.
  Write(t, RowOperationType::kInsert, 1000, 50);
  BASALT_ASSERT_OK(t->FlushMemRowSet());
  const size_t before = RowSetBlocks("t1").size();
  BlockScrubberOptions o = Options();
  o.bytes_per_sec = 1;  // Every read waits, so the compaction happens in the first read.
  BlockScrubber* scrubber_ptr = nullptr;
  int64_t done_before_compaction = -1;
  o.pace_for_testing = [&](absl::Duration) {
    if (done_before_compaction >= 0) return;
    done_before_compaction = scrubber_ptr->stats().blocks;
    BASALT_EXPECT_OK(t->Compact(/*all=*/true));
  };
  BlockScrubber scrubber(o);
  scrubber_ptr = &scrubber;
  BASALT_ASSERT_OK(scrubber.RunPass());
  ASSERT_GE(done_before_compaction, 0);
  EXPECT_TRUE(reports_.empty()) << reports_[0].error;
  // Every block after the one being read when the compaction ran (its open handle still reads).
  EXPECT_EQ(scrubber.stats().skipped, static_cast<int64_t>(before) - done_before_compaction - 1);
  EXPECT_EQ(scrubber.stats().blocks, static_cast<int64_t>(before));

  const BlockId lost = FirstBlockOf("t1", RowSetBlockKind::kBloom);
  BASALT_ASSERT_OK(env()->DeleteFile(bm()->BlockPath(lost)));
  BlockScrubber again(Options());
  BASALT_ASSERT_OK(again.RunPass());
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_EQ(reports_[0].block, lost);
  EXPECT_EQ(reports_[0].error.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reports_[0].error.message().find("missing"), std::string::npos) << reports_[0].error;
}

TEST_F(BlockScrubberTest, OnlyReadyReplicasAreScrubbedAndACorruptSuperBlockIsReported) {
  AddTabletWithEveryKindOfBlock("ready");
  AddTabletWithEveryKindOfBlock("copying");
  SetReplicaState("copying", ReplicaDataState::kCopying);
  FlipByte(FirstBlockOf("copying", RowSetBlockKind::kColumn), 10);  // Not looked at.
  BlockScrubber scrubber(Options());
  BASALT_ASSERT_OK(scrubber.RunPass());
  EXPECT_TRUE(reports_.empty());
  EXPECT_EQ(scrubber.stats().blocks, static_cast<int64_t>(RowSetBlocks("ready").size()));

  const std::string path = JoinPath(TabletDir("ready"), kSuperBlockFileName);
  std::string sb;
  BASALT_ASSERT_OK(ReadFileToString(env(), path, &sb));
  sb[sb.size() / 2] ^= 1;
  BASALT_ASSERT_OK(WriteStringToFile(env(), path, sb, false));
  BASALT_ASSERT_OK(scrubber.RunPass());
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_EQ(reports_[0].tablet_id, "ready");
  EXPECT_FALSE(reports_[0].block.valid());
  EXPECT_EQ(reports_[0].error.code(), absl::StatusCode::kDataLoss);
}

// An I/O error is not corruption: counted, not reported, tried again by the next pass.
TEST_F(BlockScrubberTest, ReadErrorsAreNotReported) {
  AddTabletWithEveryKindOfBlock("t1");
  const int64_t n = static_cast<int64_t>(RowSetBlocks("t1").size());
  BlockScrubber scrubber(Options());
  env_.FailAfter(0, FaultInjectionEnv::OpKind::kRead);
  // The superblocks cannot be read either: the tablet is skipped.
  BASALT_ASSERT_OK(scrubber.RunPass());
  EXPECT_EQ(scrubber.stats().blocks, 0);
  env_.ClearFailures();
  // Let the superblock be read, fail the blocks' reads (from the first read that waits on) with
  // an error that passes (EIO would fail the data directory for good: the last pass below).
  BlockScrubberOptions o = Options();
  o.bytes_per_sec = 1;
  o.pace_for_testing = [&](absl::Duration) {
    env_.FailAfter(0, FaultInjectionEnv::OpKind::kRead, /*one_shot=*/false,
                   absl::StatusCode::kUnavailable);
  };
  BlockScrubber failing(o);
  BASALT_ASSERT_OK(failing.RunPass());
  env_.ClearFailures();
  EXPECT_EQ(failing.stats().blocks, n);
  EXPECT_GT(failing.stats().read_errors, 0);
  EXPECT_EQ(failing.stats().corruptions, 0);
  EXPECT_TRUE(reports_.empty());
  // The next pass verifies them.
  BASALT_ASSERT_OK(scrubber.RunPass());
  EXPECT_EQ(scrubber.stats().blocks, n);
  EXPECT_EQ(scrubber.stats().read_errors, 0);
  // EIO fails the data directory (the server then fails its tablets); still no corruption.
  o.pace_for_testing = [&](absl::Duration) { env_.FailAfter(0, FaultInjectionEnv::OpKind::kRead); };
  BlockScrubber eio(o);
  BASALT_ASSERT_OK(eio.RunPass());
  env_.ClearFailures();
  EXPECT_GT(eio.stats().read_errors, 0);
  EXPECT_TRUE(bm()->DirFailed(0));
  EXPECT_TRUE(reports_.empty());
}

// Every read is charged to the rate: a pass of B bytes at rate R waits about (B - burst) / R in
// all (the clock is manual: no timing, and so no flakiness).
TEST_F(BlockScrubberTest, ReadsArePacedToTheRate) {
  AddTabletWithEveryKindOfBlock("t1", 2000);
  BlockScrubberOptions o = Options();
  constexpr int64_t kRate = 4 << 10;
  o.bytes_per_sec = kRate;
  BlockScrubber scrubber(o);
  BASALT_ASSERT_OK(scrubber.RunPass());
  const int64_t bytes = scrubber.stats().bytes;
  ASSERT_GT(bytes, 4 * kRate);  // Several seconds' worth.
  const double waited = absl::ToDoubleSeconds(waited_);
  const double burst = std::max<int64_t>(kRate / 10, 4096);
  EXPECT_GE(waited, (static_cast<double>(bytes) - burst) / kRate - 0.001);
  EXPECT_LE(waited, static_cast<double>(bytes) / kRate + 0.001);
}

TEST_F(BlockScrubberTest, TheThreadScrubsInPassesAndShutdownInterruptsAPass) {
  AddTabletWithEveryKindOfBlock("t1");
  FlipByte(FirstBlockOf("t1", RowSetBlockKind::kColumn), 3);
  BlockScrubberOptions o = Options();
  o.clock = Clock::Default();
  o.pace_for_testing = nullptr;
  o.pass_interval = absl::Milliseconds(1);
  absl::Mutex mu;
  int reports = 0;
  o.on_corruption = [&](const std::string&, BlockId, const absl::Status&) {
    absl::MutexLock l(&mu);
    ++reports;
  };
  {
    BlockScrubber scrubber(o);
    scrubber.Start();
    ASSERT_TRUE(WaitFor([&] { return scrubber.stats().passes >= 3; }, absl::Seconds(60)));
    scrubber.Shutdown();
    absl::MutexLock l(&mu);
    EXPECT_EQ(reports, 1);
  }
  // At one byte a second a pass would take hours: Shutdown stops it in its first wait.
  o.bytes_per_sec = 1;
  BlockScrubber slow(o);
  slow.Start();
  ASSERT_TRUE(WaitFor([&] { return slow.stats().bytes > 0; }, absl::Seconds(60)));
  slow.Shutdown();
  EXPECT_EQ(slow.stats().passes, 0);
}

}  // namespace block_scrubber_test_file
}  // namespace
}  // namespace basalt
