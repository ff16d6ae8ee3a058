// Tablet benchmarks. Prints one JSON object with the results.
//
// For now these are MemRowSet-only cases (no tablet, no WAL, no flush), named mrs_*:
//   mrs_insert_sequential: insert --rows rows of (key INT32 sequential, int_val INT32,
//       non_null_with_default INT32) in MVCC ops of --batch_rows rows each; rows/s.
//   mrs_insert_random: the same with keys in a random order (a bijection of 0..rows-1); rows/s.
//   mrs_scan: a full scan of the sequential MRS at a READ_LATEST snapshot into columnar blocks
//       of 1024 rows; cells/s (rows * 3 columns).
// The full tablet benchmark of the tablet issue (flushed rowsets, lookups, predicate scans)
// extends this file once the tablet exists.
//
// Usage: tablet_bench [--rows=N] [--batch_rows=N] [--random=0 to skip the random-key case]

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cfile/column_block.h"
#include "common/schema.h"
#include "tablet/memrowset.h"
#include "tablet/mvcc.h"

namespace basalt {
namespace {

Schema BenchSchema() {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("int_val", DataType::kInt32),
       ColumnSchema("non_null_with_default", DataType::kInt32, false, Datum::Int32(12345))},
      1);
  if (!s.ok()) abort();
  return *s;
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Maps i to a unique pseudo-random key in [0, 2^31): an odd multiplier is a bijection modulo
// 2^31, so there are no duplicates.
int32_t RandomKey(int64_t i) {
  return static_cast<int32_t>((static_cast<uint64_t>(i) * 0x9E3779B1u) & 0x7FFFFFFF);
}

// Inserts `rows` rows and returns the elapsed seconds.
double InsertRows(MemRowSet* mrs, MvccManager* mvcc, int64_t rows, int64_t batch, bool random) {
  const Schema& schema = mrs->schema();
  alignas(16) uint8_t row[64] = {};
  uint8_t nulls[1] = {0};
  uint64_t ts = 1;
  auto start = std::chrono::steady_clock::now();
  for (int64_t base = 0; base < rows; base += batch, ++ts) {
    HybridTime ht(ts);
    if (!mvcc->StartOp(ht).ok()) abort();
    int64_t end = std::min(rows, base + batch);
    for (int64_t i = base; i < end; ++i) {
      int32_t key = random ? RandomKey(i) : static_cast<int32_t>(i);
      int32_t val = static_cast<int32_t>(i * 7);
      int32_t def = 12345;
      std::memcpy(row + schema.column_offset(0), &key, 4);
      std::memcpy(row + schema.column_offset(1), &val, 4);
      std::memcpy(row + schema.column_offset(2), &def, 4);
      absl::Status s = mrs->Insert(ht, row, nulls);
      if (!s.ok()) {
        fprintf(stderr, "insert failed: %s\n", s.ToString().c_str());
        abort();
      }
    }
    mvcc->FinishOp(ht);
    mvcc->AdjustSafeTime(ht);
  }
  return Seconds(start);
}

// Scans every row and returns the elapsed seconds; *rows_out gets the row count.
double ScanAll(const MemRowSet& mrs, const MvccSnapshot& snap, int64_t* rows_out) {
  constexpr size_t kBatch = 1024;
  const Schema& schema = mrs.schema();
  std::vector<std::unique_ptr<ColumnBlockBuffer>> bufs;
  std::vector<ColumnBlock*> blocks;
  for (int i = 0; i < schema.num_columns(); ++i) {
    bufs.push_back(std::make_unique<ColumnBlockBuffer>(schema.column(i).type(), kBatch, false));
    blocks.push_back(bufs.back()->block());
  }
  auto start = std::chrono::steady_clock::now();
  auto it = mrs.NewIterator(&schema, snap);
  if (!it->Init().ok()) abort();
  int64_t rows = 0;
  int64_t checksum = 0;
  while (it->HasNext()) {
    auto n = it->NextBlock(blocks, kBatch);
    if (!n.ok()) abort();
    rows += static_cast<int64_t>(*n);
    if (*n > 0) checksum += blocks[1]->data<int32_t>()[*n - 1];
  }
  double secs = Seconds(start);
  if (checksum == 42) fprintf(stderr, "(unlikely checksum)\n");
  *rows_out = rows;
  return secs;
}

int64_t FlagValue(int argc, char** argv, const char* name, int64_t def) {
  std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return strtoll(argv[i] + prefix.size(), nullptr, 10);
    }
  }
  return def;
}

int Main(int argc, char** argv) {
  const int64_t rows = FlagValue(argc, argv, "rows", 10'000'000);
  const int64_t batch = FlagValue(argc, argv, "batch_rows", 1000);
  const bool run_random = FlagValue(argc, argv, "random", 1) != 0;
  Schema schema = BenchSchema();

  auto seq = std::make_unique<MemRowSet>(0, schema);
  MvccManager mvcc_seq;
  double seq_secs = InsertRows(seq.get(), &mvcc_seq, rows, batch, /*random=*/false);
  int64_t scanned = 0;
  double scan_secs = ScanAll(*seq, mvcc_seq.SnapshotForRead(), &scanned);
  if (scanned != rows) abort();
  size_t seq_bytes = seq->memory_footprint();
  int64_t fast_path = seq->tree().fast_path_inserts();
  seq.reset();

  auto rnd = std::make_unique<MemRowSet>(1, schema);
  MvccManager mvcc_rnd;
  double rnd_secs = run_random ? InsertRows(rnd.get(), &mvcc_rnd, rows, batch, /*random=*/true) : 0;
  size_t rnd_bytes = rnd->memory_footprint();

  printf("{\n");
  printf("  \"benchmark\": \"tablet_bench\",\n");
  printf("  \"note\": \"MemRowSet-only cases; no tablet, WAL or flush yet\",\n");
  printf("  \"rows\": %lld,\n  \"batch_rows\": %lld,\n", static_cast<long long>(rows),
         static_cast<long long>(batch));
  printf(
      "  \"mrs_insert_sequential\": {\"seconds\": %.3f, \"rows_per_sec\": %.0f, "
      "\"fast_path_inserts\": %lld, \"memory_bytes\": %zu},\n",
      seq_secs, rows / seq_secs, static_cast<long long>(fast_path), seq_bytes);
  printf(
      "  \"mrs_insert_random\": {\"seconds\": %.3f, \"rows_per_sec\": %.0f, "
      "\"memory_bytes\": %zu},\n",
      rnd_secs, rows / rnd_secs, rnd_bytes);
  printf("  \"mrs_scan\": {\"seconds\": %.3f, \"rows_per_sec\": %.0f, \"cells_per_sec\": %.0f}\n",
         scan_secs, scanned / scan_secs, scanned * 3.0 / scan_secs);
  printf("}\n");
  return 0;
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) { return basalt::Main(argc, argv); }
