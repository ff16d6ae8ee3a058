#include "tablet/delta_file.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "cfile/block_cache.h"
#include "cfile/cfile_test_util.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/env_memory.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/delta_test_util.h"

namespace basalt {
namespace {
namespace delta_file_test_file {

using delta_test::DeleteList;
using delta_test::Model;
using delta_test::ModelRange;
using delta_test::ToPairs;
using delta_test::UpdateInt32;
namespace dfi = delta_file_internal;

class DeltaFileTest : public ::testing::Test {
 protected:
  void SetUp() override { bm_ = BlockManager::Open(&env_, "/data").value(); }

  BlockId WriteFile(const Model& model, DeltaFileWriterOptions options = {},
                    DeltaType type = DeltaType::kRedo) {
    auto block = bm_->CreateBlock().value();
    const BlockId id = block->id();
    DeltaFileWriter w(type, std::move(block), options);
    BASALT_EXPECT_OK(w.Start());
    for (const auto& [k, v] : model) BASALT_EXPECT_OK(w.Append(k, v));
    EXPECT_EQ(w.num_entries(), static_cast<int64_t>(model.size()));
    absl::Status s = w.Finish();
    BASALT_EXPECT_OK(s);
    return id;
  }

  BlockId WriteBytes(std::string_view bytes) {
    return cfile_test::WriteBlockBytes(bm_.get(), bytes);
  }
  std::string ReadBytes(BlockId id) { return cfile_test::ReadBlockBytes(bm_.get(), id); }

  absl::StatusOr<std::unique_ptr<DeltaFileReader>> Open(BlockId id, BlockCache* cache = nullptr) {
    auto block = bm_->OpenBlock(id);
    if (!block.ok()) return block.status();
    return DeltaFileReader::Open(*std::move(block), cache);
  }

  static absl::StatusOr<std::vector<DeltaEntry>> Collect(const DeltaFileReader& r, rowid_t start,
                                                         size_t n, Arena* arena) {
    std::vector<DeltaEntry> out;
    absl::Status s = r.CollectEntries(start, n, arena, &out);
    if (!s.ok()) return s;
    return out;
  }

  // Opens `bytes` as a delta file and reads every entry; the first error, or OK.
  absl::Status OpenAndReadAll(std::string_view bytes) {
    const BlockId id = WriteBytes(bytes);
    auto r = Open(id);
    absl::Status s = r.status();
    if (s.ok()) {
      Arena arena(4096);
      s = Collect(**r, 0, SIZE_MAX, &arena).status();
    }
    BASALT_EXPECT_OK(bm_->DeleteBlock(id));
    if (!s.ok()) {
      EXPECT_NE(s.message().find(id.ToString()), absl::string_view::npos) << s;
    }
    return s;
  }

  static Model RandomModel(Random* rng, int n, rowid_t rows) {
    Model m;
    while (static_cast<int>(m.size()) < n) {
      m[DeltaKey{static_cast<rowid_t>(rng->Uniform(rows)), HybridTime(1 + rng->Uniform(1 << 20))}] =
          delta_test::RandomChangeList(rng);
    }
    return m;
  }

  MemoryEnv env_;
  std::unique_ptr<BlockManager> bm_;
};

TEST_F(DeltaFileTest, RoundTripsWithEveryCodecAndPageSize) {
  Random rng(SeedFromEnvOrTime());
  for (CompressionType codec : {CompressionType::kNone, CompressionType::kLz4,
                                CompressionType::kSnappy, CompressionType::kZstd}) {
    for (size_t page_size : {size_t{256}, size_t{4096}, size_t{64 * 1024}}) {
      SCOPED_TRACE(testing::Message()
                   << "codec " << static_cast<int>(codec) << " page " << page_size);
      const Model model = RandomModel(&rng, 3000, 5000);
      const BlockId id = WriteFile(model, {page_size, codec});
      auto r = Open(id);
      BASALT_ASSERT_OK(r);
      const DeltaFileReader& reader = **r;
      EXPECT_EQ(reader.type(), DeltaType::kRedo);
      EXPECT_EQ(reader.ToString(), "REDO file " + id.ToString());
      EXPECT_EQ(reader.num_entries(), 3000);
      EXPECT_EQ(reader.min_row(), model.begin()->first.row);
      EXPECT_EQ(reader.max_row(), model.rbegin()->first.row);
      HybridTime min_ts = HybridTime::kMax, max_ts = HybridTime::kMin;
      for (const auto& [k, v] : model) {
        min_ts = std::min(min_ts, k.ts);
        max_ts = std::max(max_ts, k.ts);
      }
      EXPECT_EQ(reader.min_timestamp(), min_ts);
      EXPECT_EQ(reader.max_timestamp(), max_ts);
      EXPECT_EQ(reader.size_bytes(), ReadBytes(id).size());
      if (page_size == 256) {
        EXPECT_GT(reader.num_pages(), 10u);
      }
      Arena arena(4096);
      EXPECT_EQ(ToPairs(Collect(reader, 0, SIZE_MAX, &arena).value()), ModelRange(model, 0, 5000));
      for (int i = 0; i < 200; ++i) {
        const auto start = static_cast<rowid_t>(rng.Uniform(5100));
        const size_t n = rng.Skewed(12);
        ASSERT_EQ(ToPairs(Collect(reader, start, n, &arena).value()), ModelRange(model, start, n))
            << "start " << start << " n " << n;
      }
    }
  }
}

TEST_F(DeltaFileTest, EmptyAndUndoFiles) {
  const BlockId id = WriteFile({}, {}, DeltaType::kUndo);
  auto r = Open(id);
  BASALT_ASSERT_OK(r);
  EXPECT_EQ((*r)->type(), DeltaType::kUndo);
  EXPECT_EQ((*r)->num_entries(), 0);
  EXPECT_EQ((*r)->num_pages(), 0u);
  EXPECT_EQ((*r)->min_timestamp(), HybridTime::kInvalid);
  EXPECT_EQ((*r)->max_timestamp(), HybridTime::kInvalid);
  Arena arena(256);
  EXPECT_TRUE(Collect(**r, 0, SIZE_MAX, &arena)->empty());
  EXPECT_EQ(ReadBytes(id).size(), 4 + dfi::kTailSize);
}

TEST_F(DeltaFileTest, WriterRejectsBadInput) {
  {
    DeltaFileWriter w(DeltaType::kRedo, bm_->CreateBlock().value());
    EXPECT_EQ(w.Append(DeltaKey{1, HybridTime(1)}, DeleteList()).code(),
              absl::StatusCode::kFailedPrecondition);
    BASALT_ASSERT_OK(w.Start());
    EXPECT_EQ(w.Start().code(), absl::StatusCode::kFailedPrecondition);
    BASALT_ASSERT_OK(w.Append(DeltaKey{5, HybridTime(10)}, DeleteList()));
    EXPECT_EQ(w.Append(DeltaKey{5, HybridTime(10)}, DeleteList()).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(w.Append(DeltaKey{5, HybridTime(9)}, DeleteList()).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(w.Append(DeltaKey{4, HybridTime(20)}, DeleteList()).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(w.Append(DeltaKey{6, HybridTime::kInvalid}, DeleteList()).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(w.Append(DeltaKey{6, HybridTime(1)}, "\x07").code(),
              absl::StatusCode::kInvalidArgument);
    BASALT_ASSERT_OK(w.Append(DeltaKey{5, HybridTime(11)}, DeleteList()));
    EXPECT_EQ(w.num_entries(), 2);
    // Destroyed unfinished: the block is aborted.
  }
  EXPECT_TRUE(bm_->ListBlocks()->empty());
  for (size_t page : {size_t{1}, size_t{100}, size_t{64} << 20}) {
    DeltaFileWriter w(DeltaType::kRedo, bm_->CreateBlock().value(), {page});
    EXPECT_EQ(w.Start().code(), absl::StatusCode::kInvalidArgument) << page;
  }
  DeltaFileWriter w(DeltaType::kRedo, bm_->CreateBlock().value(), {0, CompressionType::kDefault});
  EXPECT_EQ(w.Start().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DeltaFileTest, FinishWithoutFinalizeReturnsTheBlock) {
  auto block = bm_->CreateBlock().value();
  const BlockId id = block->id();
  DeltaFileWriter w(DeltaType::kRedo, std::move(block));
  BASALT_ASSERT_OK(w.Start());
  BASALT_ASSERT_OK(w.Append(DeltaKey{1, HybridTime(3)}, DeleteList()));
  auto unfinalized = w.FinishWithoutFinalize();
  BASALT_ASSERT_OK(unfinalized);
  EXPECT_EQ((*unfinalized)->id(), id);
  EXPECT_FALSE(bm_->BlockExists(id));
  WritableBlock* ptr = unfinalized->get();
  BASALT_ASSERT_OK(bm_->FinalizeBlocks(std::span<WritableBlock* const>(&ptr, 1)));
  auto r = Open(id);
  BASALT_ASSERT_OK(r);
  EXPECT_EQ((*r)->num_entries(), 1);
}

// The layout of docs/tablet.md "Delta file format", byte for byte.
TEST_F(DeltaFileTest, GoldenBytes) {
  Model model;
  model[DeltaKey{1, HybridTime(0x10)}] = DeleteList();
  model[DeltaKey{3, HybridTime(0x20)}] = UpdateInt32({{1, 5}});
  const BlockId id = WriteFile(model, {0, CompressionType::kNone});
  const std::string golden = absl::HexStringToBytes(
      "01021c01100000000000000001020320000000000000000701020405000000e3"
      "7973f3010223020dcbbfb2000000000100000002000000000000000800000001"
      "0000000300000010000000000000002000000000000000343b6d1c0100000042"
      "534c54444c5441");
  EXPECT_EQ(absl::BytesToHexString(ReadBytes(id)), absl::BytesToHexString(golden));
  // And the reader accepts the golden bytes as written by hand.
  auto r = Open(WriteBytes(golden));
  BASALT_ASSERT_OK(r);
  Arena arena(256);
  EXPECT_EQ(ToPairs(Collect(**r, 0, 10, &arena).value()), ModelRange(model, 0, 10));
}

TEST_F(DeltaFileTest, ReadsOnlyThePagesCoveringTheRows) {
  Model model;
  // Rows 0..999 with ten entries each, then a gap, then rows 5000..5099.
  for (rowid_t row = 0; row < 1000; ++row) {
    for (uint64_t ts = 1; ts <= 10; ++ts) model[DeltaKey{row, HybridTime(ts)}] = DeleteList();
  }
  for (rowid_t row = 5000; row < 5100; ++row) model[DeltaKey{row, HybridTime(1)}] = DeleteList();
  const BlockId id = WriteFile(model, {512, CompressionType::kNone});
  BlockCache cache(1 << 20);
  auto r = Open(id, &cache);
  BASALT_ASSERT_OK(r);
  ASSERT_GT((*r)->num_pages(), 100u);
  Arena arena(4096);
  auto misses = [&] { return cache.GetStats().misses; };
  int64_t before = misses();
  EXPECT_EQ(Collect(**r, 500, 1, &arena)->size(), 10u);
  EXPECT_LE(misses() - before, 2);  // A row may straddle two pages.
  before = misses();
  // The gap: at most the one page that spans it (its first row is before the gap, its last row
  // after) is read.
  EXPECT_TRUE(Collect(**r, 1000, 4000, &arena)->empty());
  EXPECT_LE(misses() - before, 1);
  before = misses();
  EXPECT_TRUE(Collect(**r, 6000, 100, &arena)->empty());  // Past the last row: nothing read.
  EXPECT_EQ(misses() - before, 0);
  const int64_t hits = cache.GetStats().hits;
  EXPECT_EQ(Collect(**r, 500, 1, &arena)->size(), 10u);  // Cached now.
  EXPECT_GT(cache.GetStats().hits, hits);
  EXPECT_EQ(ToPairs(Collect(**r, 0, SIZE_MAX, &arena).value()), ModelRange(model, 0, 6000));
}

// Every single-byte change anywhere in a file is caught: DATA_LOSS naming the block.
TEST_F(DeltaFileTest, EveryFlippedByteIsDataLoss) {
  Random rng(SeedFromEnvOrTime());
  for (CompressionType codec : {CompressionType::kNone, CompressionType::kLz4}) {
    const std::string good = ReadBytes(WriteFile(RandomModel(&rng, 60, 100), {256, codec}));
    BASALT_ASSERT_OK(OpenAndReadAll(good));
    for (size_t i = 0; i < good.size(); ++i) {
      std::string bad = good;
      bad[i] ^= static_cast<char>(1 << rng.Uniform(8));
      absl::Status s = OpenAndReadAll(bad);
      ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << "byte " << i << ": " << s;
    }
  }
}

TEST_F(DeltaFileTest, EveryTruncationAndZeroedRegionIsDataLoss) {
  Random rng(SeedFromEnvOrTime());
  const std::string good =
      ReadBytes(WriteFile(RandomModel(&rng, 40, 100), {256, CompressionType::kLz4}));
  for (size_t len = 0; len < good.size(); ++len) {
    absl::Status s = OpenAndReadAll(std::string_view(good).substr(0, len));
    ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << "length " << len << ": " << s;
  }
  // Zero runs of every length class at every 7th offset (pages, index, footer, tail).
  for (size_t off = 0; off < good.size(); off += 7) {
    for (size_t len : {size_t{1}, size_t{4}, size_t{16}, size_t{300}}) {
      std::string bad = good;
      const size_t end = std::min(bad.size(), off + len);
      bool changed = false;
      for (size_t i = off; i < end; ++i) {
        changed |= bad[i] != 0;
        bad[i] = 0;
      }
      if (!changed) continue;
      absl::Status s = OpenAndReadAll(bad);
      ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << off << "+" << len << ": " << s;
    }
  }
}

// Re-checksummed but inconsistent metadata is caught by the semantic checks.
TEST_F(DeltaFileTest, InconsistentMetadataWithValidChecksumsIsDataLoss) {
  Model model;
  model[DeltaKey{1, HybridTime(0x10)}] = DeleteList();
  model[DeltaKey{3, HybridTime(0x20)}] = UpdateInt32({{1, 5}});
  const std::string good = ReadBytes(WriteFile(model, {0, CompressionType::kNone}));
  const size_t footer = good.size() - dfi::kTailSize;
  auto refooter = [&](size_t field, std::string_view bytes) {
    std::string bad = good;
    bad.replace(footer + field, bytes.size(), bytes);
    EncodeFixed32(&bad[footer + dfi::kFooterSize],
                  crc32c::Mask(crc32c::Value(bad.data() + footer, dfi::kFooterSize)));
    return bad;
  };
  std::string buf(8, '\0');
  EncodeFixed64(buf.data(), 3);
  EXPECT_EQ(OpenAndReadAll(refooter(8, buf)).code(), absl::StatusCode::kDataLoss);  // Entries.
  EncodeFixed32(buf.data(), 2);
  EXPECT_EQ(OpenAndReadAll(refooter(24, buf.substr(0, 4))).code(),
            absl::StatusCode::kDataLoss);  // Max row below the last entry.
  EncodeFixed64(buf.data(), 0x18);
  EXPECT_EQ(OpenAndReadAll(refooter(36, buf)).code(),
            absl::StatusCode::kDataLoss);  // Max ts below an entry's.
  EXPECT_EQ(OpenAndReadAll(refooter(0, "\x02")).code(), absl::StatusCode::kDataLoss);  // Type.
  EncodeFixed32(buf.data(), 0xFFFFFFFF);
  EXPECT_EQ(OpenAndReadAll(refooter(4, buf.substr(0, 4))).code(),
            absl::StatusCode::kDataLoss);  // Pages.
  EXPECT_EQ(OpenAndReadAll(refooter(16, buf.substr(0, 4))).code(),
            absl::StatusCode::kDataLoss);  // Index size.
}

TEST_F(DeltaFileTest, RandomGarbageNeverCrashes) {
  Random rng(SeedFromEnvOrTime());
  const std::string good =
      ReadBytes(WriteFile(RandomModel(&rng, 30, 50), {256, CompressionType::kLz4}));
  for (int i = 0; i < 300; ++i) {
    std::string bad = i % 2 ? rng.Bytes(rng.Skewed(12)) : good;
    for (int j = 0, flips = 1 + rng.Uniform(8); j < flips && !bad.empty(); ++j) {
      bad[rng.Uniform(bad.size())] = static_cast<char>(rng.Next32());
    }
    if (bad == good) continue;
    EXPECT_EQ(OpenAndReadAll(bad).code(), absl::StatusCode::kDataLoss);
  }
}

}  // namespace delta_file_test_file
}  // namespace
}  // namespace basalt
