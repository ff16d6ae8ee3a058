// Column file scan benchmark (issue 3): writes column files through CFileWriter into an in-memory
// block store and measures, on one core, full scans (cells/s into column buffers), scans with a
// 1%-selective range predicate (with zone-map skipping on sorted data, and without it on random
// data), key seeks in an INT32 key file, and the bytes per value on disk of each encoding and
// codec. Prints one JSON object per line.
//
// Usage: cfile_scan_bench [--rows=N] [--size_rows=N] [--repeats=R]
// Each figure is the best of R runs (the machine is shared; best-of filters out interference).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench_util.h"
#include "cfile/block_cache.h"
#include "cfile/block_manager.h"
#include "cfile/cfile_reader.h"
#include "cfile/cfile_writer.h"
#include "cfile/encoding.h"
#include "common/bitmap.h"
#include "common/column_block.h"
#include "common/column_predicate.h"
#include "common/env_memory.h"
#include "common/random.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_int64(rows, 10'000'000, "Rows of the scanned INT64 files and of the INT32 key file.");
DEFINE_int64(size_rows, 1'000'000, "Rows per file of the bytes-per-value matrix.");
DEFINE_int32(repeats, 5, "Runs per measurement; the best is reported.");

namespace basalt {
namespace {

constexpr size_t kBatchRows = 64 * 1024;

double BestSeconds(const std::function<void()>& fn) {
  return basalt::BestSeconds(FLAGS_repeats, fn);
}

BlockId WriteFile(BlockManager* bm, DataType type, EncodingType enc, CompressionType codec,
                  bool is_key, const ColumnBlock& data, size_t n) {
  CFileWriterOptions o;
  o.type = type;
  o.storage.encoding = enc;
  o.storage.compression = codec;
  o.is_key = is_key;
  auto block = bm->CreateBlock().value();
  const BlockId id = block->id();
  CFileWriter w(o, std::move(block));
  BENCH_CHECK_OK(w.Start());
  for (size_t i = 0; i < n; i += kBatchRows) {
    BENCH_CHECK_OK(w.AppendValues(data.cell(i), nullptr, std::min(kBatchRows, n - i)));
  }
  BENCH_CHECK_OK(w.Finish());
  return id;
}

std::unique_ptr<CFileReader> Open(BlockManager* bm, BlockId id, BlockCache* cache) {
  CFileReaderOptions opts;
  opts.block_cache = cache;
  return CFileReader::Open(bm->OpenBlock(id).value(), opts).value();
}

// Scans the whole file; with `pred`, evaluates it without materializing values.
void ScanAll(CFileReader* reader, const ColumnPredicate* pred, CFileIteratorStats* stats) {
  auto it = reader->NewIterator();
  ColumnBlockBuffer buf(reader->type(), kBatchRows, reader->nullable());
  std::vector<uint8_t> sel(BitmapSize(kBatchRows));
  size_t got = 0;
  do {
    if (pred == nullptr) {
      BENCH_CHECK_OK(it->Scan(kBatchRows, buf.block(), &got));
    } else {
      std::fill(sel.begin(), sel.end(), 0xff);
      BENCH_CHECK_OK(it->ScanWithPredicate(*pred, kBatchRows, sel.data(), nullptr, &got));
    }
  } while (got > 0);
  *stats = it->stats();
}

void ReportScans(BlockManager* bm, const std::string& name, BlockId id, int64_t lo, int64_t hi) {
  BlockCache cache(2ull << 30);
  auto reader = Open(bm, id, &cache);
  const double rows = static_cast<double>(reader->num_rows());
  ColumnSchema cs("v", DataType::kInt64);
  auto pred = ColumnPredicate::Range(cs, Datum::Int64(lo), Datum::Int64(hi)).value();
  CFileIteratorStats stats;
  for (auto [label, predicate] :
       {std::pair<const char*, const ColumnPredicate*>{"full_scan", nullptr},
        {"predicate_1pct", &pred}}) {
    // A copy for the lambdas below: clang-14 cannot capture a structured binding.
    const ColumnPredicate* p = predicate;
    ScanAll(reader.get(), p, &stats);  // Warms the cache.
    const double warm = BestSeconds([&] { ScanAll(reader.get(), p, &stats); });
    auto cold_reader = Open(bm, id, nullptr);
    const double cold = BestSeconds([&] { ScanAll(cold_reader.get(), p, &stats); });
    std::printf("%s\n",
                absl::StrFormat("{\"bench\": \"cfile_scan\", \"file\": \"%s\", \"case\": \"%s\", "
                                "\"rows\": %.0f, \"pages\": %d, \"pages_decoded\": %d, "
                                "\"pages_skipped\": %d, \"cached_mcells_per_s\": %.1f, "
                                "\"uncached_mcells_per_s\": %.1f, \"bytes_per_value\": %.3f}",
                                name, label, rows, reader->num_pages(), stats.pages_decoded,
                                stats.pages_skipped, rows / warm / 1e6, rows / cold / 1e6,
                                reader->file_size() / rows)
                    .c_str());
    std::fflush(stdout);
  }
}

void ReportKeySeeks(BlockManager* bm, BlockId id, int64_t n) {
  auto reader = Open(bm, id, nullptr);
  BlockCache cache(1ull << 30);
  auto cached = Open(bm, id, &cache);
  Random rng(42);
  constexpr int kSeeks = 20000;
  std::vector<int32_t> keys(kSeeks);
  for (int32_t& k : keys) k = static_cast<int32_t>(rng.Uniform(static_cast<uint64_t>(n)));
  auto it = cached->NewIterator();
  bool exact;
  for (int32_t k : keys) BENCH_CHECK_OK(it->SeekAtOrAfter(&k, &exact));  // Warms the cache.
  const double secs = BestSeconds([&] {
    for (int32_t k : keys) BENCH_CHECK_OK(it->SeekAtOrAfter(&k, &exact));
  });
  std::printf("%s\n", absl::StrFormat("{\"bench\": \"cfile_key_seek\", \"rows\": %d, "
                                      "\"pages\": %d, \"cached_seeks_per_s\": %.0f, "
                                      "\"bytes_per_value\": %.3f}",
                                      n, reader->num_pages(), kSeeks / secs,
                                      static_cast<double>(reader->file_size()) / n)
                          .c_str());
  std::fflush(stdout);
}

// Bytes per value on disk (whole file) of every allowed encoding and codec on `data`.
void ReportSizes(BlockManager* bm, const std::string& name, DataType type, const ColumnBlock& data,
                 size_t n) {
  for (EncodingType enc : {EncodingType::kPlain, EncodingType::kBitPacked,
                           EncodingType::kBitShuffle, EncodingType::kDict, EncodingType::kPrefix}) {
    if (!IsEncodingAllowed(type, enc)) continue;
    for (CompressionType codec :
         {CompressionType::kNone, CompressionType::kSnappy, CompressionType::kLz4,
          CompressionType::kZlib, CompressionType::kZstd}) {
      BlockId id;
      const double write_secs = BestSeconds([&] {
        id = WriteFile(bm, type, enc, codec, false, data, n);
        BENCH_CHECK_OK(bm->DeleteBlock(id));
      });
      id = WriteFile(bm, type, enc, codec, false, data, n);
      auto reader = Open(bm, id, nullptr);
      CFileIteratorStats stats;
      const double secs = BestSeconds([&] { ScanAll(reader.get(), nullptr, &stats); });
      std::printf("%s\n",
                  absl::StrFormat("{\"bench\": \"cfile_size\", \"data\": \"%s\", "
                                  "\"encoding\": \"%s\", \"codec\": \"%s\", \"rows\": %d, "
                                  "\"bytes_per_value\": %.3f, \"uncached_mcells_per_s\": %.1f, "
                                  "\"write_mcells_per_s\": %.1f}",
                                  name, EncodingTypeName(enc), CompressionTypeName(codec), n,
                                  static_cast<double>(reader->file_size()) / n, n / secs / 1e6,
                                  n / write_secs / 1e6)
                      .c_str());
      std::fflush(stdout);
      BENCH_CHECK_OK(bm->DeleteBlock(id));
    }
  }
}

void Run() {
  MemoryEnv env;
  auto bm = BlockManager::Open(&env, "/bench").value();
  const size_t n = static_cast<size_t>(FLAGS_rows);
  Random rng(1);
  // Timestamps at 10 s steps (sorted: zone maps skip) and uniform random int64 (no skipping).
  ColumnBlockBuffer ts(DataType::kInt64, n, false);
  ColumnBlockBuffer rnd(DataType::kInt64, n, false);
  const int64_t base = 1'700'000'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    ts.block()->data<int64_t>()[i] = base + static_cast<int64_t>(i) * 10'000'000;
    rnd.block()->data<int64_t>()[i] = static_cast<int64_t>(rng.Uniform(1'000'000'000'000));
  }
  const int64_t span = static_cast<int64_t>(n) * 10'000'000;
  BlockId id = WriteFile(bm.get(), DataType::kInt64, EncodingType::kAuto, CompressionType::kDefault,
                         false, ts.block_ref(), n);
  ReportScans(bm.get(), "int64_timestamps_sorted", id, base + span / 2,
              base + span / 2 + span / 100);
  BENCH_CHECK_OK(bm->DeleteBlock(id));
  id = WriteFile(bm.get(), DataType::kInt64, EncodingType::kAuto, CompressionType::kDefault, false,
                 rnd.block_ref(), n);
  ReportScans(bm.get(), "int64_random", id, 500'000'000'000, 510'000'000'000);
  BENCH_CHECK_OK(bm->DeleteBlock(id));

  ColumnBlockBuffer keys(DataType::kInt32, n, false);
  for (size_t i = 0; i < n; ++i) keys.block()->data<int32_t>()[i] = static_cast<int32_t>(i);
  id = WriteFile(bm.get(), DataType::kInt32, EncodingType::kAuto, CompressionType::kDefault, true,
                 keys.block_ref(), n);
  ReportKeySeeks(bm.get(), id, static_cast<int64_t>(n));
  BENCH_CHECK_OK(bm->DeleteBlock(id));

  const size_t m = std::min(n, static_cast<size_t>(FLAGS_size_rows));
  ReportSizes(bm.get(), "int64_timestamps_10s", DataType::kInt64, ts.block_ref(), m);
  ReportSizes(bm.get(), "int64_random", DataType::kInt64, rnd.block_ref(), m);
  ReportSizes(bm.get(), "int32_sequential_keys", DataType::kInt32, keys.block_ref(), m);
  std::vector<std::string> words;
  for (int i = 0; i < 100; ++i) words.push_back(absl::StrFormat("category-%03d-%s", i, "item"));
  ColumnBlockBuffer strs(DataType::kString, m, false);
  for (size_t i = 0; i < m; ++i) {
    strs.block()->data<std::string_view>()[i] = words[rng.Uniform(words.size())];
  }
  ReportSizes(bm.get(), "string_low_cardinality", DataType::kString, strs.block_ref(), m);
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) { return basalt::BenchMain(argc, argv, basalt::Run); }
