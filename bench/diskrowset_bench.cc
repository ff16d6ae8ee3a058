// DiskRowSet benchmark (tablet issue, DiskRowSet part): writes one rowset of --rows rows
// (key INT32 = 2 * i, v INT64 uniform random, ts INT64 sorted "timestamps") into an in-memory
// block store and measures, on one core:
//   drs_write: rows/s through DiskRowSetWriter (3 column files, key index, bloom filter);
//   drs_scan: snapshot scans of one INT64 column, cells/s = rowset rows / second, for a full scan
//     and a 1%-selective range predicate, on random data (every page decoded) and on sorted data
//     (zone maps skip pages), with and without a block cache, at several batch sizes; and the
//     same predicate scan after --updates random updates of `v` sit in the DeltaMemStore (the
//     chunks they fall in apply deltas and evaluate the predicate afterwards);
//   drs_lookup: FindRow per second for present keys and for absent keys inside the key range
//     (rejected by the bloom filter), with the block cache.
// Prints one JSON object per line. Each figure is the best of --repeats runs.
//
// Usage: diskrowset_bench [--rows=N] [--updates=N] [--lookups=N] [--repeats=R] [--scans=false]

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
#include "common/column_block.h"
#include "common/column_predicate.h"
#include "common/env_memory.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "tablet/diskrowset.h"
#include "tablet/diskrowset_iterator.h"
#include "tablet/diskrowset_writer.h"
#include "tablet/mvcc.h"
#include "tablet/row_changelist.h"

DEFINE_int64(rows, 10'000'000, "Rows of the rowset.");
DEFINE_int64(updates, 10'000, "Random updates of column v applied through the DeltaMemStore.");
DEFINE_int64(lookups, 1'000'000, "FindRow calls per lookup measurement.");
DEFINE_int32(repeats, 5, "Runs per measurement; the best is reported.");
DEFINE_bool(scans, true, "Whether to run the scan measurements.");

namespace basalt {
namespace {

constexpr int64_t kValueRange = 1'000'000'000'000;

double BestSeconds(const std::function<void()>& fn) {
  return basalt::BestSeconds(FLAGS_repeats, fn);
}

Schema BenchSchema() {
  auto s =
      Schema::Create({ColumnSchema("key", DataType::kInt32), ColumnSchema("v", DataType::kInt64),
                      ColumnSchema("ts", DataType::kInt64)},
                     1);
  CHECK(s.ok());
  return *s;
}

std::string KeyOf(const Schema& schema, int64_t i) {
  return EncodeKey(schema, {Datum::Int32(static_cast<int32_t>(2 * i))});
}

// Writes the rowset and prints drs_write; returns its metadata.
RowSetMetadata WriteRowSet(BlockManager* bm, const Schema& schema, int64_t n) {
  constexpr int64_t kChunk = 64 * 1024;
  Random rng(42);
  ColumnBlockBuffer keys(DataType::kInt32, kChunk, false);
  ColumnBlockBuffer v(DataType::kInt64, kChunk, false);
  ColumnBlockBuffer ts(DataType::kInt64, kChunk, false);
  std::vector<std::string> encoded(kChunk);
  std::vector<std::string_view> views(kChunk);
  const std::vector<const ColumnBlock*> cols = {keys.block(), v.block(), ts.block()};
  auto start = std::chrono::steady_clock::now();
  DiskRowSetWriter writer(bm, &schema, 1, static_cast<uint64_t>(n));
  BENCH_CHECK_OK(writer.Open());
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t m = std::min(kChunk, n - base);
    for (int64_t j = 0; j < m; ++j) {
      const int64_t i = base + j;
      keys.block()->data<int32_t>()[j] = static_cast<int32_t>(2 * i);
      v.block()->data<int64_t>()[j] = static_cast<int64_t>(rng.Uniform(kValueRange));
      ts.block()->data<int64_t>()[j] = 1'700'000'000'000'000 + i * 10'000'000;
      encoded[j] = KeyOf(schema, i);
      views[j] = encoded[j];
    }
    BENCH_CHECK_OK(writer.AppendBlock(cols, views, static_cast<size_t>(m)));
  }
  std::vector<std::unique_ptr<WritableBlock>> blocks;
  auto meta = writer.FinishWithoutFinalize(&blocks);
  BENCH_CHECK_OK(meta.status());
  std::vector<WritableBlock*> ptrs;
  for (auto& b : blocks) ptrs.push_back(b.get());
  BENCH_CHECK_OK(bm->FinalizeBlocks(ptrs));
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("{\"bench\": \"drs_write\", \"rows\": %lld, \"rows_per_sec\": %.0f, \"bytes\": %llu}\n",
         static_cast<long long>(n), static_cast<double>(n) / secs,
         static_cast<unsigned long long>(writer.bytes_written()));
  return *meta;
}

// Scans column `col` of `rs` with `preds` in batches of `batch` rows and prints one drs_scan line.
void ReportScan(const DiskRowSet& rs, const Schema& schema, const char* data, int col,
                const std::vector<ColumnPredicate>& preds, size_t batch, bool cached) {
  auto proj = schema.Project({schema.column(col).name()});
  CHECK(proj.ok());
  ColumnBlockBuffer out(DataType::kInt64, batch, false);
  ColumnBlock* blocks[] = {out.block()};
  int64_t selected = 0;
  DiskRowSetIteratorStats stats;
  CFileIteratorStats fstats;
  const double secs = BestSeconds([&] {
    auto it = rs.NewIterator(&*proj, MvccSnapshot::IncludingAll(), {{}, preds});
    BENCH_CHECK_OK(it.status());
    selected = 0;
    while ((*it)->HasNext()) {
      auto n = (*it)->NextBlock(blocks, batch);
      BENCH_CHECK_OK(n.status());
      selected += static_cast<int64_t>(*n);
    }
    auto* drs_it = static_cast<DiskRowSetIterator*>(it->get());
    stats = drs_it->stats();
    fstats = drs_it->file_stats();
  });
  printf(
      "{\"bench\": \"drs_scan\", \"data\": \"%s\", \"predicate\": \"%s\", \"batch_rows\": %zu, "
      "\"cached\": %s, \"rows\": %u, \"selected\": %lld, \"chunks\": %lld, "
      "\"chunks_with_deltas\": %lld, \"pages_skipped\": %lld, \"m_cells_per_sec\": %.0f}\n",
      data, preds.empty() ? "none" : "1%", batch, cached ? "true" : "false", rs.num_rows(),
      static_cast<long long>(selected), static_cast<long long>(stats.chunks),
      static_cast<long long>(stats.chunks_with_deltas),
      static_cast<long long>(fstats.pages_skipped), rs.num_rows() / secs / 1e6);
}

void ReportScans(const DiskRowSet& rs, const Schema& schema, bool cached) {
  const int64_t n = rs.num_rows();
  auto v1 =
      *ColumnPredicate::Range(schema.column(1), Datum::Int64(0), Datum::Int64(kValueRange / 100));
  const int64_t ts0 = 1'700'000'000'000'000 + n / 2 * 10'000'000;
  auto ts1 = *ColumnPredicate::Range(schema.column(2), Datum::Int64(ts0),
                                     Datum::Int64(ts0 + n / 100 * 10'000'000));
  for (size_t batch : {1024, 8192, 65536}) {
    ReportScan(rs, schema, "int64_random", 1, {}, batch, cached);
    ReportScan(rs, schema, "int64_random", 1, {v1}, batch, cached);
    ReportScan(rs, schema, "int64_sorted", 2, {ts1}, batch, cached);
  }
}

void ReportLookups(const DiskRowSet& rs, const Schema& schema, bool present) {
  const int64_t n = rs.num_rows();
  Random rng(7);
  std::vector<std::string> keys;
  for (int i = 0; i < 4096; ++i) {
    const int64_t k = static_cast<int64_t>(rng.Uniform(n - 1));
    keys.push_back(EncodeKey(schema, {Datum::Int32(static_cast<int32_t>(2 * k + !present))}));
  }
  int64_t found = 0;
  const double secs = BestSeconds([&] {
    found = 0;
    for (int64_t i = 0; i < FLAGS_lookups; ++i) {
      auto row = rs.FindRow(keys[i % keys.size()]);
      BENCH_CHECK_OK(row.status());
      found += row->has_value();
    }
  });
  CHECK_EQ(found, present ? FLAGS_lookups : found);
  printf(
      "{\"bench\": \"drs_lookup\", \"keys\": \"%s\", \"lookups_per_sec\": %.0f, "
      "\"bloom_false_positives\": %lld}\n",
      present ? "present" : "absent", static_cast<double>(FLAGS_lookups) / secs,
      static_cast<long long>(rs.lookup_stats().bloom_false_positives));
}

void ApplyUpdates(DiskRowSet* rs, int64_t updates) {
  Random rng(11);
  const Schema schema = BenchSchema();
  std::string changes;
  for (int64_t u = 0; u < updates; ++u) {
    RowChangeListEncoder enc(&changes);
    enc.SetToUpdate();
    const int64_t v = static_cast<int64_t>(rng.Uniform(kValueRange));
    enc.AddColumnUpdate(1, DataType::kInt64, &v);
    const int64_t row = static_cast<int64_t>(rng.Uniform(rs->num_rows()));
    BENCH_CHECK_OK(
        rs->MutateRow(HybridTime(static_cast<uint64_t>(u + 1)), KeyOf(schema, row), changes, 0));
  }
}

void Run() {
  MemoryEnv env;
  auto bm = BlockManager::Open(&env, "/data");
  BENCH_CHECK_OK(bm.status());
  const Schema schema = BenchSchema();
  const RowSetMetadata meta = WriteRowSet(bm->get(), schema, FLAGS_rows);
  BlockCache cache(1 << 30);
  for (bool cached : {true, false}) {
    DiskRowSetOptions opts;
    opts.block_manager = bm->get();
    opts.block_cache = cached ? &cache : nullptr;
    auto rs = DiskRowSet::Open(meta, opts);
    BENCH_CHECK_OK(rs.status());
    if (FLAGS_scans) ReportScans(**rs, schema, cached);
    if (cached) {
      ReportLookups(**rs, schema, true);
      ReportLookups(**rs, schema, false);
      ApplyUpdates(rs->get(), FLAGS_updates);
      auto v1 = *ColumnPredicate::Range(schema.column(1), Datum::Int64(0),
                                        Datum::Int64(kValueRange / 100));
      ReportScan(**rs, schema, "int64_random_with_dms_updates", 1, {v1}, 8192, cached);
    }
  }
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) { return basalt::BenchMain(argc, argv, basalt::Run); }
