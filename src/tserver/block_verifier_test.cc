#include "tserver/block_verifier.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cfile/bloom_filter.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "tserver/block_test_util.h"

namespace basalt {
namespace {
namespace block_verifier_test_file {

using block_test::DataDirTest;

class BlockVerifierTest : public DataDirTest {
 protected:
  absl::Status Verify(BlockId id, RowSetBlockKind kind) {
    auto block = bm()->OpenBlock(id);
    if (!block.ok()) return block.status();
    return VerifyRowSetBlock(*std::move(block), kind);
  }
};

TEST_F(BlockVerifierTest, EveryBlockOfARealTabletVerifies) {
  AddTabletWithEveryKindOfBlock("t1");
  std::set<RowSetBlockKind> kinds;
  for (const RowSetBlock& b : RowSetBlocks("t1")) {
    BASALT_EXPECT_OK(Verify(b.id, b.kind)) << RowSetBlockKindName(b.kind);
    kinds.insert(b.kind);
  }
  // The fixture makes every kind, so the corruption test below covers every kind.
  EXPECT_EQ(kinds.size(), 5u);
}

// Flipped, zeroed and truncated bytes anywhere in a block of each kind: DATA_LOSS naming the
// block, never OK, never a crash.
TEST_F(BlockVerifierTest, EveryCorruptedByteOfEveryKindIsDataLossNamingTheBlock) {
  AddTabletWithEveryKindOfBlock("t1");
  Random rng(SeedFromEnvOrTime());
  std::set<RowSetBlockKind> done;
  for (const RowSetBlock& b : RowSetBlocks("t1")) {
    if (!done.insert(b.kind).second) continue;  // One block of each kind.
    const std::string bytes = ReadBlockFile(b.id);
    SCOPED_TRACE(StrCat(RowSetBlockKindName(b.kind), " of ", bytes.size(), " bytes"));
    // Every byte of the last 200 (trailers, footers, indexes), a stride through the rest.
    const size_t tail = std::min<size_t>(bytes.size(), 200);
    std::vector<size_t> positions;
    for (size_t p = 0; p < bytes.size() - tail; p += 1 + rng.Uniform(16)) positions.push_back(p);
    for (size_t p = bytes.size() - tail; p < bytes.size(); ++p) positions.push_back(p);
    for (size_t p : positions) {
      for (int mode = 0; mode < 3; ++mode) {
        std::string bad = bytes;
        if (mode == 0) bad[p] ^= static_cast<char>(1 << rng.Uniform(8));
        if (mode == 1) bad[p] = 0;
        if (mode == 2) bad.resize(p);
        if (bad == bytes) continue;
        const BlockId id = WriteUnnamedBlock(bad);
        const absl::Status s = Verify(id, b.kind);
        EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss)
            << "mode " << mode << " at " << p << ": " << s;
        EXPECT_NE(s.message().find(id.ToString()), std::string::npos) << s;
        BASALT_ASSERT_OK(bm()->DeleteBlock(id));
        if (HasFailure()) return;
      }
    }
  }
}

// A tablet keyed by one integer column: its key column file is the key index and its filter a
// key bitmap. Both verify, and a flipped byte in the bitmap's pages is DATA_LOSS.
TEST_F(BlockVerifierTest, AnIntegerKeyTabletsBlocksVerify) {
  AddTabletWithEveryKindOfBlock("t1", 200, /*integer_key=*/true);
  std::set<RowSetBlockKind> kinds;
  for (const RowSetBlock& b : RowSetBlocks("t1")) {
    BASALT_EXPECT_OK(Verify(b.id, b.kind)) << RowSetBlockKindName(b.kind);
    kinds.insert(b.kind);
  }
  EXPECT_FALSE(kinds.contains(RowSetBlockKind::kKeyIndex));
  const BlockId filter = FirstBlockOf("t1", RowSetBlockKind::kBloom);
  const std::string bytes = ReadBlockFile(filter);
  auto parsed = BloomFilter::Parse(bytes, "filter");
  BASALT_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->kind(), KeyFilterKind::kKeyBitmap);
  std::string bad = bytes;
  bad[10] ^= 1;  // Inside page 0: keys 0..199 set bits 0..199.
  const BlockId id = WriteUnnamedBlock(bad);
  const absl::Status s = Verify(id, RowSetBlockKind::kBloom);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
}

TEST_F(BlockVerifierTest, ABlockOfAnotherKindIsDataLoss) {
  AddTabletWithEveryKindOfBlock("t1");
  const BlockId column = FirstBlockOf("t1", RowSetBlockKind::kColumn);
  const BlockId bloom = FirstBlockOf("t1", RowSetBlockKind::kBloom);
  const BlockId redo = FirstBlockOf("t1", RowSetBlockKind::kRedo);
  const BlockId undo = FirstBlockOf("t1", RowSetBlockKind::kUndo);
  for (auto [id, kind] :
       std::vector<std::pair<BlockId, RowSetBlockKind>>{{column, RowSetBlockKind::kBloom},
                                                        {bloom, RowSetBlockKind::kColumn},
                                                        {redo, RowSetBlockKind::kUndo},
                                                        {undo, RowSetBlockKind::kRedo},
                                                        {column, RowSetBlockKind::kRedo}}) {
    EXPECT_EQ(Verify(id, kind).code(), absl::StatusCode::kDataLoss)
        << id.ToString() << " as " << RowSetBlockKindName(kind);
  }
}

// An I/O error or a read hook's refusal is not corruption: it comes back as it is.
TEST_F(BlockVerifierTest, ReadErrorsAreNotDataLoss) {
  AddTabletWithEveryKindOfBlock("t1");
  for (const RowSetBlock& b : RowSetBlocks("t1")) {
    auto block = bm()->OpenBlock(b.id, [](size_t) { return absl::CancelledError("stop"); });
    BASALT_ASSERT_OK(block);
    EXPECT_EQ(VerifyRowSetBlock(*std::move(block), b.kind).code(), absl::StatusCode::kCancelled)
        << RowSetBlockKindName(b.kind);
    block = bm()->OpenBlock(b.id);
    BASALT_ASSERT_OK(block);
    // Not EIO (INTERNAL), which would fail the data directory for good (block_manager.h).
    env_.FailAfter(0, FaultInjectionEnv::OpKind::kRead, /*one_shot=*/false,
                   absl::StatusCode::kUnavailable);
    const absl::Status s = VerifyRowSetBlock(*std::move(block), b.kind);
    env_.ClearFailures();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << RowSetBlockKindName(b.kind) << ": " << s;
  }
}

}  // namespace block_verifier_test_file
}  // namespace
}  // namespace basalt
