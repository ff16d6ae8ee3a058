// Tablet benchmark (tablet issue, "Benchmark"). Prints one JSON object with the results.
//
// Every tablet case runs on one Tablet with no WAL, over real files: Env::Default() (POSIX) under
// a temporary directory made in --dir and removed at the end, with the fsyncs the block manager
// and the superblock code do. Writes go through Tablet::ApplyRowOperations with timestamps from a
// HybridClock over the system clock. Row operations are encoded (RowOperationsEncoder) and
// decoded (RowOperationsDecoder) before the timed part; that cost is reported separately as
// `prepare_seconds`.
//
// Cases (--cases, comma-separated):
//   insert_sequential: --rows rows of (key INT32 sequential, int_val INT32,
//       non_null_with_default INT32 NOT NULL DEFAULT, left unset) in INSERT batches of
//       --batch_rows, while a background thread flushes the MemRowSet whenever it passes
//       --insert_flush_threshold_mb (the maintenance manager's --flush_threshold_mb rule, polled
//       every millisecond), writes continuing meanwhile. rows/s over the write phase; the final
//       flush of what is left in the MRS is timed separately. With
//       --insert_background_compactions the same thread also merges rowsets (Tablet::Compact)
//       when no flush is due; by default only flushes run, so rowsets accumulate.
//   insert_random: the same with keys a random permutation of 0..rows-1.
//   lookup: a tablet of --lookup_rowsets DiskRowSets of --lookup_rows_per_rowset rows each (one
//       synchronous flush per rowset; keys 2*j for j in [0, rowsets*rows_per_rowset)), in the
//       layouts of --lookup_layouts: "interleaved" (rowset f holds j = f mod rowsets, so every
//       rowset spans the whole key range: an absent key is tested against every bloom filter, a
//       present one against the rowsets tried before its own) and "disjoint" (rowset f holds a
//       contiguous range of j; the RowSetTree picks one rowset). Timed, in
//       batches of --batch_rows: UPDATE_IGNORE of --lookups random present keys (tree, blooms,
//       key index, then a REDO into the DeltaMemStore); UPDATE_IGNORE of random absent keys
//       2*j+1 (within the rowsets' ranges; the blooms reject them); INSERT_IGNORE of random
//       present keys (the uniqueness check of a duplicate insert). Lookups/s = ops/s. Before
//       those, point_read: --lookups reads of random present keys as a tablet server answers a
//       lookup by key (Tablet::NewIterator over every column with an equality on the key, one
//       read at a time), with this thread's CPU per read. It leaves the block cache warm for
//       the figures after it (before it existed, they started with the pages the flushes left).
//   scan: a tablet of (key INT64 sequential, v INT64 uniform in [0, 10^12)) with --scan_rows
//       rows flushed to DiskRowSets; an unordered Tablet::NewIterator scan projecting only v
//       with the range predicate v < 10^10 (1%), in batches of 1024 and of 8192 rows, best and
//       median of --scan_repeats. cells/s = rows in the tablet / second.
//   mrs: the MemRowSet alone (no tablet, no files) for --mrs_rows rows: sequential and random
//       insert rows/s and a full scan, as earlier versions of this benchmark reported.
//   history_gc: the seed-001 table (the insert cases' schema) with --history_gc_rows rows
//       inserted in key order, the MemRowSet flushed whenever it passes
//       --insert_flush_threshold_mb and at the end (DiskRowSets roll at --rowset_target_size_mb),
//       then a merge compaction (Tablet::Compact). On-disk bytes per row (total, base, REDO,
//       UNDO) are reported before and after history GC (Tablet::GcAncientUndoFiles) with the
//       tablet's clock moved --tablet_history_max_age_sec + 1 s ahead, so the whole history is
//       past the ancient history mark. Not in the default --cases.
// Each figure is printed with its target from the issue ("target", "meets_target"), and the
// headline figures are repeated in a final "summary" object. Wall times include whatever else
// runs on the (shared) machine; "writer_cpu_seconds" is the CPU time of the writing thread alone,
// and "process_cpu_seconds" that of every thread (background flushes included).
//
// Usage: tablet_bench [--rows=N] [--cases=...] [--lookups=N] [--scan_rows=N] [--dir=/tmp] ...

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cfile/block_cache.h"
#include "cfile/block_manager.h"
#include "common/arena.h"
#include "common/clock.h"
#include "common/column_block.h"
#include "common/column_predicate.h"
#include "common/env.h"
#include "common/hybrid_clock.h"
#include "common/partial_row.h"
#include "common/random.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "tablet/memrowset.h"
#include "tablet/mvcc.h"
#include "tablet/tablet.h"

DEFINE_string(cases, "insert_sequential,insert_random,lookup,scan,mrs",
              "Comma-separated cases to run: insert_sequential, insert_random, lookup, scan, mrs, "
              "history_gc.");
DEFINE_int64(rows, 10'000'000, "Rows each insert case writes.");
DEFINE_int64(batch_rows, 1000, "Row operations per write (one ApplyRowOperations call).");
DEFINE_int32(insert_flush_threshold_mb, 64,
             "MemRowSet size at which the insert cases' background thread flushes it, in MiB.");
DEFINE_bool(insert_background_compactions, false,
            "Whether the insert cases' background thread also runs rowset compactions when no "
            "flush is due.");
DEFINE_int32(lookup_rowsets, 10, "DiskRowSets of the lookup case's tablet.");
DEFINE_int64(lookup_rows_per_rowset, 1'000'000, "Rows of each DiskRowSet of the lookup case.");
DEFINE_int64(lookups, 300'000, "Operations of each timed lookup measurement.");
DEFINE_string(lookup_layouts, "interleaved,disjoint",
              "Key layouts of the lookup case's rowsets: interleaved, disjoint.");
DEFINE_int64(scan_rows, 10'000'000, "Rows of the scan case's tablet.");
DEFINE_int32(scan_repeats, 5, "Scans per batch size in the scan case.");
DEFINE_int64(mrs_rows, 2'000'000, "Rows of the MemRowSet-only case.");
DEFINE_bool(memrowset_huge_pages, false,
            "Advise huge pages for MemRowSet memory, as the tablet server's flag of that name.");
DEFINE_int64(history_gc_rows, 10'000'000, "Rows of the history_gc case's tablet.");
DEFINE_string(dir, "/tmp", "Directory in which the temporary tablet directory is created.");
DEFINE_uint64(seed, 42, "Seed of the random keys and values.");
DECLARE_int64(block_cache_capacity_mb);

#define BENCH_CHECK_OK(expr)                          \
  do {                                                \
    const auto& _s = (expr);                          \
    CHECK(_s.ok()) << #expr << ": " << _s.ToString(); \
  } while (0)

namespace basalt {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr double kSeqInsertTarget = 3e6;
constexpr double kRandomInsertTarget = 1e6;
constexpr double kLookupTarget = 1e6;
constexpr double kScanTarget = 500e6;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

// The headline figures, in the order measured, for the "summary" object printed last.
std::vector<std::string>* Summary() {
  static auto* summary = new std::vector<std::string>();
  return summary;
}

void AddToSummary(const std::string& name, const char* unit, double value, double target) {
  Summary()->push_back(
      absl::StrFormat("\"%s\": {\"%s\": %.0f, \"target\": %.0f, \"meets_target\": %s}", name, unit,
                      value, target, value >= target ? "true" : "false"));
}

// A figure with its target, as the JSON fields every case prints for it.
std::string Figure(const char* unit, double value, double target) {
  return absl::StrFormat("\"%s\": %.0f, \"target\": %.0f, \"meets_target\": %s", unit, value,
                         target, value >= target ? "true" : "false");
}

std::string Percentiles(std::vector<double> v) {
  if (v.empty()) return "{}";
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return absl::StrFormat("{\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f}", at(0.5) * 1e3,
                         at(0.99) * 1e3, v.back() * 1e3);
}

Schema InsertSchema() {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("int_val", DataType::kInt32),
       ColumnSchema("non_null_with_default", DataType::kInt32, false, Datum::Int32(12345))},
      1);
  CHECK(s.ok()) << s.status();
  return *s;
}

Schema ScanSchema() {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt64), ColumnSchema("v", DataType::kInt64)}, 1);
  CHECK(s.ok()) << s.status();
  return *s;
}

// ---- Tablet over real files ---------------------------------------------------------------------

// The system clock shifted by an offset the benchmark sets (to move a tablet past its ancient
// history mark without waiting). Thread-safe.
class OffsetClock : public Clock {
 public:
  int64_t NowMicros() override { return Clock::Default()->NowMicros() + offset_micros_.load(); }
  int64_t MonotonicMicros() override { return Clock::Default()->MonotonicMicros(); }
  void SleepForMicros(int64_t micros) override { Clock::Default()->SleepForMicros(micros); }
  void Advance(int64_t micros) { offset_micros_ += micros; }

 private:
  std::atomic<int64_t> offset_micros_{0};
};

// A tablet in a fresh subdirectory of the run's temporary directory, with its own block manager
// and block cache (--block_cache_capacity_mb); the destructor closes it and deletes its files.
// Its hybrid clock reads `clock` (borrowed; the system clock by default).
class BenchTablet {
 public:
  BenchTablet(const std::string& dir, const Schema& schema, uint64_t rowset_target_bytes,
              Clock* clock = Clock::Default())
      : env_(Env::Default()),
        dir_(dir),
        hybrid_(clock),
        cache_(static_cast<size_t>(FLAGS_block_cache_capacity_mb) << 20) {
    BENCH_CHECK_OK(env_->CreateDirs(dir_));
    auto bm = BlockManager::Open(env_, JoinPath(dir_, "data"));
    BENCH_CHECK_OK(bm.status());
    bm_ = std::move(*bm);
    TabletOptions o;
    o.env = env_;
    o.block_manager = bm_.get();
    o.block_cache = &cache_;
    o.superblock_path = JoinPath(dir_, "superblock");
    o.clock = &hybrid_;
    o.rowset_target_bytes = rowset_target_bytes;
    auto t = Tablet::Create(o, "bench", schema);
    BENCH_CHECK_OK(t.status());
    tablet_ = std::move(*t);
  }
  ~BenchTablet() {
    tablet_.reset();
    bm_.reset();
    BENCH_CHECK_OK(env_->DeleteDirRecursively(dir_));
  }
  Tablet* tablet() { return tablet_.get(); }
  HybridClock* clock() { return &hybrid_; }

 private:
  Env* const env_;
  const std::string dir_;
  HybridClock hybrid_;
  BlockCache cache_;
  std::unique_ptr<BlockManager> bm_;
  std::unique_ptr<Tablet> tablet_;
};

// Pre-decoded write batches: what a tablet server holds after decoding a client's requests.
struct Workload {
  explicit Workload(const Schema& s) : schema(s), arena(1 << 20, 16 << 20) {}
  Schema schema;
  Arena arena;
  std::vector<std::string> payloads;  // The decoded ops point into these.
  std::vector<std::vector<DecodedRowOperation>> batches;
  double prepare_seconds = 0;
  int64_t rows() const {
    int64_t n = 0;
    for (const auto& b : batches) n += static_cast<int64_t>(b.size());
    return n;
  }
};

// Builds `n` ops of `type` in batches of --batch_rows; fill(i, row) sets op i's columns.
std::unique_ptr<Workload> BuildWorkload(const Schema& schema, int64_t n, RowOperationType type,
                                        const std::function<void(int64_t, PartialRow*)>& fill) {
  auto start = SteadyClock::now();
  auto w = std::make_unique<Workload>(schema);
  PartialRow row(&w->schema);
  RowOperationsDecoder dec(&w->schema, &w->arena);
  const int64_t batch = std::max<int64_t>(1, FLAGS_batch_rows);
  w->payloads.reserve(static_cast<size_t>((n + batch - 1) / batch));
  for (int64_t base = 0; base < n; base += batch) {
    std::string& rows = w->payloads.emplace_back();
    std::string indirect;
    RowOperationsEncoder enc(&rows, &indirect);
    for (int64_t i = base; i < std::min(n, base + batch); ++i) {
      fill(i, &row);
      enc.Add(type, row);
    }
    BENCH_CHECK_OK(dec.Decode(rows, indirect, &w->batches.emplace_back()));
  }
  w->prepare_seconds = SecondsSince(start);
  return w;
}

// Sets a row of InsertSchema(): `key`, int_val = `val`, non_null_with_default left unset.
void FillInsertRow(PartialRow* row, int32_t key, int32_t val) {
  BENCH_CHECK_OK(row->Set(0, Datum::Int32(key)));
  BENCH_CHECK_OK(row->Set(1, Datum::Int32(val)));
}

struct WriteResult {
  double seconds = 0;
  double writer_cpu_seconds = 0;
  double process_cpu_seconds = 0;
  std::vector<double> batch_seconds;
};

// Applies every batch of `w` in order, each at a fresh clock timestamp; CHECKs every op is OK.
WriteResult ApplyWorkload(BenchTablet* bt, const Workload& w) {
  WriteResult r;
  r.batch_seconds.reserve(w.batches.size());
  std::vector<RowOutcome> results;
  const double cpu0 = ThreadCpuSeconds();
  const double proc0 = ProcessCpuSeconds();
  auto start = SteadyClock::now();
  for (const auto& batch : w.batches) {
    auto t0 = SteadyClock::now();
    BENCH_CHECK_OK(bt->tablet()->ApplyRowOperations(bt->clock()->Now(), 0, batch, &results));
    r.batch_seconds.push_back(SecondsSince(t0));
    for (RowOutcome o : results) BENCH_CHECK_OK(RowOutcomeToStatus(o));
  }
  r.seconds = SecondsSince(start);
  r.writer_cpu_seconds = ThreadCpuSeconds() - cpu0;
  r.process_cpu_seconds = ProcessCpuSeconds() - proc0;
  return r;
}

// Flushes the tablet's MemRowSet whenever it passes `threshold_bytes`, on its own thread, as the
// maintenance manager would (polled every millisecond rather than every 250 ms, so the MRS size
// stays near the threshold at millions of rows per second). With `compact`, when no flush is due
// it also runs Tablet::Compact() (the budgeted policy's pick) once per new rowset count.
class BackgroundFlusher {
 public:
  BackgroundFlusher(Tablet* tablet, size_t threshold_bytes, bool compact)
      : tablet_(tablet),
        threshold_(threshold_bytes),
        compact_(compact),
        thread_([this] { Run(); }) {}
  ~BackgroundFlusher() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  // JSON fields describing the background work (valid after Stop()).
  std::string ToJson() const {
    return absl::StrFormat(
        "\"background_flushes\": %d, \"background_flush_seconds\": %.3f, "
        "\"max_flush_seconds\": %.3f, \"background_compactions\": %d, "
        "\"background_compaction_seconds\": %.3f, \"background_cpu_seconds\": %.3f",
        flushes_, flush_seconds_, max_flush_seconds_, compactions_, compaction_seconds_,
        cpu_seconds_);
  }

 private:
  void Run() {
    const double cpu0 = ThreadCpuSeconds();
    int last_idle_rowsets = -1;
    while (!stop_.load()) {
      const TabletStats st = tablet_->GetStats();
      auto start = SteadyClock::now();
      if (st.mrs_bytes >= threshold_) {
        BENCH_CHECK_OK(tablet_->FlushMemRowSet());
        const double secs = SecondsSince(start);
        flushes_++;
        flush_seconds_ += secs;
        max_flush_seconds_ = std::max(max_flush_seconds_, secs);
      } else if (compact_ && st.num_rowsets > 1 && st.num_rowsets != last_idle_rowsets) {
        BENCH_CHECK_OK(tablet_->Compact());
        if (tablet_->GetStats().compactions > st.compactions) {
          compactions_++;
          compaction_seconds_ += SecondsSince(start);
        } else {
          last_idle_rowsets = st.num_rowsets;  // Nothing worth merging until the set changes.
        }
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    cpu_seconds_ = ThreadCpuSeconds() - cpu0;
  }

  Tablet* const tablet_;
  const size_t threshold_;
  const bool compact_;
  std::atomic<bool> stop_{false};
  // Written by the thread, read after Stop().
  int64_t flushes_ = 0;
  double flush_seconds_ = 0;
  double max_flush_seconds_ = 0;
  int64_t compactions_ = 0;
  double compaction_seconds_ = 0;
  double cpu_seconds_ = 0;
  std::thread thread_;  // Last: starts after the fields above are initialized.
};

// Rows visible in an unordered scan of the key column (checks that nothing was lost).
int64_t CountRows(Tablet* tablet) {
  Schema schema = tablet->schema();
  auto proj = schema.Project({schema.column(0).name()});
  BENCH_CHECK_OK(proj.status());
  auto it = tablet->NewIterator(*proj, tablet->mvcc()->SnapshotForRead(), {}, false);
  BENCH_CHECK_OK(it.status());
  BENCH_CHECK_OK((*it)->Init());
  ColumnBlockBuffer buf(schema.column(0).type(), 8192, false);
  ColumnBlock* blocks[] = {buf.block()};
  int64_t n = 0;
  while ((*it)->HasNext()) {
    auto got = (*it)->NextBlock(blocks, 8192);
    BENCH_CHECK_OK(got.status());
    n += static_cast<int64_t>(*got);
  }
  return n;
}

// ---- Insert cases -------------------------------------------------------------------------------

std::string RunInsert(const std::string& dir, bool random) {
  Schema schema = InsertSchema();
  const int64_t n = FLAGS_rows;
  std::vector<int32_t> keys(static_cast<size_t>(n));
  std::iota(keys.begin(), keys.end(), 0);
  if (random) {
    Random rng(FLAGS_seed);
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(keys[static_cast<size_t>(i)], keys[rng.Uniform(static_cast<uint64_t>(i) + 1)]);
    }
  }
  auto w = BuildWorkload(schema, n, RowOperationType::kInsert, [&](int64_t i, PartialRow* row) {
    FillInsertRow(row, keys[static_cast<size_t>(i)], static_cast<int32_t>(i * 7));
  });
  keys = {};

  BenchTablet bt(dir, schema, 0);
  WriteResult r;
  BackgroundFlusher flusher(bt.tablet(), static_cast<size_t>(FLAGS_insert_flush_threshold_mb) << 20,
                            FLAGS_insert_background_compactions);
  r = ApplyWorkload(&bt, *w);
  flusher.Stop();
  const TabletStats before_final = bt.tablet()->GetStats();
  auto final_start = SteadyClock::now();
  BENCH_CHECK_OK(bt.tablet()->FlushMemRowSet());
  const double final_secs = SecondsSince(final_start);
  const TabletStats st = bt.tablet()->GetStats();
  const int64_t counted = CountRows(bt.tablet());
  CHECK_EQ(counted, n) << "rows lost";
  const double prepare_secs = w->prepare_seconds;
  w.reset();

  const double rate = static_cast<double>(n) / r.seconds;
  const double target = random ? kRandomInsertTarget : kSeqInsertTarget;
  const std::string name = random ? "insert_random" : "insert_sequential";
  AddToSummary(name, "rows_per_sec", rate, target);
  AddToSummary(name + "_writer_cpu", "rows_per_sec", static_cast<double>(n) / r.writer_cpu_seconds,
               target);
  return absl::StrFormat(
      "{%s, \"rows\": %d, \"batch_rows\": %d, \"seconds\": %.3f, \"writer_cpu_seconds\": %.3f, "
      "\"writer_cpu_rows_per_sec\": %.0f, \"process_cpu_seconds\": %.3f, "
      "\"batch_latency\": %s, \"prepare_seconds\": %.3f, %s, "
      "\"mrs_rows_at_end\": %d, \"mrs_bytes_at_end\": %d, \"final_flush_seconds\": %.3f, "
      "\"rows_per_sec_including_final_flush\": %.0f, \"rowsets\": %d, \"on_disk_bytes\": %d}",
      Figure("rows_per_sec", rate, target), n, FLAGS_batch_rows, r.seconds, r.writer_cpu_seconds,
      static_cast<double>(n) / r.writer_cpu_seconds, r.process_cpu_seconds,
      Percentiles(r.batch_seconds), prepare_secs, flusher.ToJson(), before_final.mrs_rows,
      before_final.mrs_bytes, final_secs, static_cast<double>(n) / (r.seconds + final_secs),
      st.num_rowsets, st.on_disk_bytes);
}

// ---- Lookup case --------------------------------------------------------------------------------

// One timed lookup measurement: `w` applied to the tablet, reported as ops/s.
std::string LookupFigure(BenchTablet* bt, const Workload& w, const char* layout, const char* what) {
  WriteResult r = ApplyWorkload(bt, w);
  const double n = static_cast<double>(w.rows());
  AddToSummary(absl::StrCat("lookup_", layout, "_", what), "ops_per_sec", n / r.seconds,
               kLookupTarget);
  return absl::StrFormat(
      "\"%s\": {%s, \"ops\": %.0f, \"seconds\": %.3f, \"writer_cpu_seconds\": %.3f, "
      "\"writer_cpu_ops_per_sec\": %.0f, \"batch_latency\": %s, \"prepare_seconds\": %.3f}",
      what, Figure("ops_per_sec", n / r.seconds, kLookupTarget), n, r.seconds, r.writer_cpu_seconds,
      n / r.writer_cpu_seconds, Percentiles(r.batch_seconds), w.prepare_seconds);
}

// Point reads as a tablet server answers a lookup by the whole key (W4 of docs/performance.md,
// without the RPC and the scanner): an unordered Tablet::NewIterator over every column with an
// equality on the key, of --lookups random present keys, one at a time on this thread.
std::string PointReadFigure(BenchTablet* bt, int64_t total) {
  const Schema schema = bt->tablet()->schema();
  Random rng(FLAGS_seed + 1);
  std::vector<std::unique_ptr<ColumnBlockBuffer>> bufs;
  std::vector<ColumnBlock*> blocks;
  for (int c = 0; c < schema.num_columns(); ++c) {
    bufs.push_back(std::make_unique<ColumnBlockBuffer>(schema.column(c).type(), 1,
                                                       schema.column(c).is_nullable()));
    blocks.push_back(bufs.back()->block());
  }
  const int64_t n = FLAGS_lookups;
  int64_t found = 0;
  const auto start = SteadyClock::now();
  const double cpu0 = ThreadCpuSeconds();
  for (int64_t i = 0; i < n; ++i) {
    const auto key = static_cast<int32_t>(2 * rng.Uniform(static_cast<uint64_t>(total)));
    ScanSpec spec;
    auto eq = ColumnPredicate::Comparison(schema.column(0), ColumnPredicate::Op::kEqual,
                                          Datum::Int32(key));
    BENCH_CHECK_OK(eq.status());
    spec.predicates.push_back(*std::move(eq));
    auto it =
        bt->tablet()->NewIterator(schema, bt->tablet()->mvcc()->SnapshotForRead(), spec, false);
    BENCH_CHECK_OK(it.status());
    BENCH_CHECK_OK((*it)->Init());
    while ((*it)->HasNext()) {
      auto got = (*it)->NextBlock(blocks, 1);
      BENCH_CHECK_OK(got.status());
      found += static_cast<int64_t>(*got);
    }
  }
  const double cpu = ThreadCpuSeconds() - cpu0;
  const double secs = SecondsSince(start);
  CHECK_EQ(found, n) << "point reads missed present keys";
  // No target: the tablet issue's 1 M lookups/s is for the write path's lookups above.
  return absl::StrFormat(
      "\"point_read\": {\"ops_per_sec\": %.0f, \"ops\": %d, \"seconds\": %.3f, "
      "\"cpu_seconds\": %.3f, \"cpu_us_per_op\": %.2f}",
      static_cast<double>(n) / secs, n, secs, cpu, cpu * 1e6 / static_cast<double>(n));
}

std::string RunLookup(const std::string& dir, bool interleaved) {
  Schema schema = InsertSchema();
  const int64_t sets = FLAGS_lookup_rowsets;
  const int64_t per_set = FLAGS_lookup_rows_per_rowset;
  const int64_t total = sets * per_set;
  // One rowset per flush: roll far above the rowset size.
  BenchTablet bt(dir, schema, uint64_t{1} << 40);
  auto build_start = SteadyClock::now();
  for (int64_t f = 0; f < sets; ++f) {
    auto w =
        BuildWorkload(schema, per_set, RowOperationType::kInsert, [&](int64_t i, PartialRow* row) {
          const int64_t j = interleaved ? i * sets + f : f * per_set + i;
          FillInsertRow(row, static_cast<int32_t>(2 * j), static_cast<int32_t>(i));
        });
    ApplyWorkload(&bt, *w);
    BENCH_CHECK_OK(bt.tablet()->FlushMemRowSet());
  }
  const double build_secs = SecondsSince(build_start);
  const TabletStats st = bt.tablet()->GetStats();
  CHECK_EQ(st.num_rowsets, sets);
  CHECK_EQ(st.mrs_rows, 0);

  Random rng(FLAGS_seed);
  auto random_j = [&] { return static_cast<int64_t>(rng.Uniform(static_cast<uint64_t>(total))); };
  auto present_update = BuildWorkload(
      schema, FLAGS_lookups, RowOperationType::kUpdateIgnore, [&](int64_t i, PartialRow* row) {
        FillInsertRow(row, static_cast<int32_t>(2 * random_j()), static_cast<int32_t>(-i));
      });
  auto absent_update = BuildWorkload(
      schema, FLAGS_lookups, RowOperationType::kUpdateIgnore, [&](int64_t i, PartialRow* row) {
        FillInsertRow(row, static_cast<int32_t>(2 * random_j() + 1), static_cast<int32_t>(-i));
      });
  auto present_insert = BuildWorkload(
      schema, FLAGS_lookups, RowOperationType::kInsertIgnore, [&](int64_t i, PartialRow* row) {
        FillInsertRow(row, static_cast<int32_t>(2 * random_j()), static_cast<int32_t>(-i));
      });
  const char* layout = interleaved ? "interleaved" : "disjoint";
  std::string out = absl::StrFormat(
      "{\"layout\": \"%s\", \"rowsets\": %d, \"rows\": %d, \"build_seconds\": %.3f, ", layout, sets,
      total, build_secs);
  // Reads first: W4's table has no updates (the update figures below leave a delta per row).
  out += PointReadFigure(&bt, total) + ", ";
  out += LookupFigure(&bt, *present_update, layout, "update_ignore_present") + ", ";
  out += LookupFigure(&bt, *absent_update, layout, "update_ignore_absent") + ", ";
  out += LookupFigure(&bt, *present_insert, layout, "insert_ignore_present");
  // Every present-key update landed in a DeltaMemStore; nothing went to the MRS.
  const TabletStats after = bt.tablet()->GetStats();
  CHECK_EQ(after.mrs_rows, 0);
  out += absl::StrFormat(", \"dms_bytes_after\": %d}", after.dms_bytes);
  return out;
}

// ---- Scan case ----------------------------------------------------------------------------------

constexpr int64_t kScanValueRange = 1'000'000'000'000;
constexpr int64_t kScanPredicateUpper = kScanValueRange / 100;  // v < this: 1%.

// Loads --scan_rows rows in chunks, flushing after each chunk (rolling at --rowset_target_size_mb).
void LoadScanTablet(BenchTablet* bt, const Schema& schema, double* load_secs) {
  constexpr int64_t kChunk = 2'000'000;
  Random rng(FLAGS_seed + 1);
  auto start = SteadyClock::now();
  for (int64_t base = 0; base < FLAGS_scan_rows; base += kChunk) {
    auto w =
        BuildWorkload(schema, std::min(kChunk, FLAGS_scan_rows - base), RowOperationType::kInsert,
                      [&](int64_t i, PartialRow* row) {
                        BENCH_CHECK_OK(row->Set(0, Datum::Int64(base + i)));
                        BENCH_CHECK_OK(row->Set(
                            1, Datum::Int64(static_cast<int64_t>(rng.Uniform(kScanValueRange)))));
                      });
    ApplyWorkload(bt, *w);
    BENCH_CHECK_OK(bt->tablet()->FlushMemRowSet());
  }
  *load_secs = SecondsSince(start);
}

// One scan of `v` with the 1% predicate in batches of `batch`; returns seconds, *selected the
// rows returned.
double ScanOnce(Tablet* tablet, const Schema& proj, const ScanSpec& spec, size_t batch,
                int64_t* selected) {
  ColumnBlockBuffer buf(DataType::kInt64, batch, false);
  ColumnBlock* blocks[] = {buf.block()};
  auto start = SteadyClock::now();
  auto it = tablet->NewIterator(proj, tablet->mvcc()->SnapshotForRead(), spec, /*ordered=*/false);
  BENCH_CHECK_OK(it.status());
  BENCH_CHECK_OK((*it)->Init());
  int64_t n = 0;
  int64_t checksum = 0;
  while ((*it)->HasNext()) {
    auto got = (*it)->NextBlock(blocks, batch);
    BENCH_CHECK_OK(got.status());
    n += static_cast<int64_t>(*got);
    if (*got > 0) checksum += buf.block()->data<int64_t>()[0];
  }
  const double secs = SecondsSince(start);
  CHECK_GE(checksum, 0);
  *selected = n;
  return secs;
}

std::string RunScan(const std::string& dir) {
  Schema schema = ScanSchema();
  BenchTablet bt(dir, schema, 0);
  double load_secs = 0;
  LoadScanTablet(&bt, schema, &load_secs);
  const TabletStats st = bt.tablet()->GetStats();
  auto proj = schema.Project({"v"});
  BENCH_CHECK_OK(proj.status());
  auto pred =
      ColumnPredicate::Range(schema.column(1), std::nullopt, Datum::Int64(kScanPredicateUpper));
  BENCH_CHECK_OK(pred.status());
  ScanSpec spec;
  spec.predicates.push_back(*pred);
  const double cells = static_cast<double>(FLAGS_scan_rows);
  std::string out = absl::StrFormat(
      "{\"rows\": %d, \"rowsets\": %d, \"on_disk_bytes\": %d, \"load_seconds\": %.3f, "
      "\"predicate\": \"v < %d, v uniform in [0, %d)\"",
      FLAGS_scan_rows, st.num_rowsets, st.on_disk_bytes, load_secs, kScanPredicateUpper,
      kScanValueRange);
  for (size_t batch : {size_t{1024}, size_t{8192}}) {
    std::vector<double> secs;
    int64_t selected = 0;
    for (int i = 0; i < std::max(1, FLAGS_scan_repeats); ++i) {
      secs.push_back(ScanOnce(bt.tablet(), *proj, spec, batch, &selected));
    }
    const double expected = cells / 100;
    CHECK(selected > expected * 0.9 && selected < expected * 1.1) << selected;
    std::sort(secs.begin(), secs.end());
    AddToSummary(absl::StrCat("scan_batch_", batch), "cells_per_sec", cells / secs.front(),
                 kScanTarget);
    out += absl::StrFormat(
        ", \"batch_%d\": {%s, \"median_cells_per_sec\": %.0f, \"worst_cells_per_sec\": %.0f, "
        "\"scans\": %d, \"rows_selected\": %d}",
        batch, Figure("cells_per_sec", cells / secs.front(), kScanTarget),
        cells / secs[secs.size() / 2], cells / secs.back(), secs.size(), selected);
  }
  return out + "}";
}

// ---- MemRowSet-only case ------------------------------------------------------------------------

// Maps i to a unique pseudo-random key in [0, 2^31): an odd multiplier is a bijection modulo
// 2^31, so there are no duplicates.
int32_t MrsRandomKey(int64_t i) {
  return static_cast<int32_t>((static_cast<uint64_t>(i) * 0x9E3779B1u) & 0x7FFFFFFF);
}

// Inserts `rows` rows straight into `mrs` in MVCC ops of --batch_rows; returns the seconds.
double MrsInsertRows(MemRowSet* mrs, MvccManager* mvcc, int64_t rows, bool random) {
  const Schema& schema = mrs->schema();
  alignas(16) uint8_t row[64] = {};
  uint8_t nulls[1] = {0};
  uint64_t ts = 1;
  auto start = SteadyClock::now();
  for (int64_t base = 0; base < rows; base += FLAGS_batch_rows, ++ts) {
    HybridTime ht(ts);
    BENCH_CHECK_OK(mvcc->StartOp(ht));
    for (int64_t i = base; i < std::min(rows, base + FLAGS_batch_rows); ++i) {
      int32_t cells[3] = {random ? MrsRandomKey(i) : static_cast<int32_t>(i),
                          static_cast<int32_t>(i * 7), 12345};
      for (int c = 0; c < 3; ++c) std::memcpy(row + schema.column_offset(c), &cells[c], 4);
      BENCH_CHECK_OK(mrs->Insert(ht, row, nulls));
    }
    mvcc->FinishOp(ht);
    mvcc->AdjustSafeTime(ht);
  }
  return SecondsSince(start);
}

// A full scan of every column; returns the seconds, *rows_out the rows.
double MrsScanAll(const MemRowSet& mrs, const MvccSnapshot& snap, int64_t* rows_out) {
  constexpr size_t kBatch = 1024;
  const Schema& schema = mrs.schema();
  std::vector<std::unique_ptr<ColumnBlockBuffer>> bufs;
  std::vector<ColumnBlock*> blocks;
  for (int i = 0; i < schema.num_columns(); ++i) {
    bufs.push_back(std::make_unique<ColumnBlockBuffer>(schema.column(i).type(), kBatch, false));
    blocks.push_back(bufs.back()->block());
  }
  auto start = SteadyClock::now();
  auto it = mrs.NewIterator(&schema, snap);
  BENCH_CHECK_OK(it->Init());
  int64_t rows = 0;
  while (it->HasNext()) {
    auto n = it->NextBlock(blocks, kBatch);
    BENCH_CHECK_OK(n.status());
    rows += static_cast<int64_t>(*n);
  }
  *rows_out = rows;
  return SecondsSince(start);
}

std::string RunMrs() {
  Schema schema = InsertSchema();
  const int64_t rows = FLAGS_mrs_rows;
  auto seq = std::make_unique<MemRowSet>(0, schema);
  MvccManager mvcc_seq;
  const double seq_secs = MrsInsertRows(seq.get(), &mvcc_seq, rows, false);
  int64_t scanned = 0;
  const double scan_secs = MrsScanAll(*seq, mvcc_seq.SnapshotForRead(), &scanned);
  CHECK_EQ(scanned, rows);
  const size_t seq_bytes = seq->memory_footprint();
  seq.reset();
  auto rnd = std::make_unique<MemRowSet>(1, schema);
  MvccManager mvcc_rnd;
  const double rnd_secs = MrsInsertRows(rnd.get(), &mvcc_rnd, rows, true);
  return absl::StrFormat(
      "{\"rows\": %d, \"insert_sequential_rows_per_sec\": %.0f, \"bytes_per_row\": %.1f, "
      "\"insert_random_rows_per_sec\": %.0f, \"scan_cells_per_sec\": %.0f}",
      rows, static_cast<double>(rows) / seq_secs,
      static_cast<double>(seq_bytes) / static_cast<double>(rows),
      static_cast<double>(rows) / rnd_secs, static_cast<double>(scanned) * 3 / scan_secs);
}

// ---- History GC case ----------------------------------------------------------------------------

// On-disk bytes per row of the tablet, by kind, as JSON fields.
std::string BytesPerRow(const TabletStats& st, int64_t rows) {
  const double n = static_cast<double>(rows);
  const uint64_t base = st.on_disk_bytes - st.redo_bytes - st.undo_bytes;
  return absl::StrFormat(
      "{\"rowsets\": %d, \"on_disk_bytes\": %d, \"bytes_per_row\": %.3f, "
      "\"base_bytes_per_row\": %.3f, \"redo_bytes_per_row\": %.3f, "
      "\"undo_bytes_per_row\": %.3f}",
      st.num_rowsets, st.on_disk_bytes, static_cast<double>(st.on_disk_bytes) / n,
      static_cast<double>(base) / n, static_cast<double>(st.redo_bytes) / n,
      static_cast<double>(st.undo_bytes) / n);
}

std::string RunHistoryGc(const std::string& dir) {
  Schema schema = InsertSchema();
  const int64_t n = FLAGS_history_gc_rows;
  OffsetClock clock;
  BenchTablet bt(dir, schema, 0, &clock);
  Tablet* tablet = bt.tablet();
  const size_t flush_bytes = static_cast<size_t>(FLAGS_insert_flush_threshold_mb) << 20;
  // Chunks of pre-decoded batches bound the workload's memory; flushes run between batches.
  constexpr int64_t kChunk = 1'000'000;
  auto start = SteadyClock::now();
  std::vector<RowOutcome> results;
  for (int64_t base = 0; base < n; base += kChunk) {
    auto w = BuildWorkload(schema, std::min(kChunk, n - base), RowOperationType::kInsert,
                           [&](int64_t i, PartialRow* row) {
                             FillInsertRow(row, static_cast<int32_t>(base + i),
                                           static_cast<int32_t>((base + i) * 7));
                           });
    for (const auto& batch : w->batches) {
      BENCH_CHECK_OK(tablet->ApplyRowOperations(bt.clock()->Now(), 0, batch, &results));
      for (RowOutcome o : results) BENCH_CHECK_OK(RowOutcomeToStatus(o));
      if (tablet->GetStats().mrs_bytes >= flush_bytes) BENCH_CHECK_OK(tablet->FlushMemRowSet());
    }
  }
  BENCH_CHECK_OK(tablet->FlushMemRowSet());
  BENCH_CHECK_OK(tablet->Compact());
  const double load_secs = SecondsSince(start);
  const TabletStats before = tablet->GetStats();

  clock.Advance((int64_t{FLAGS_tablet_history_max_age_sec} + 1) * 1'000'000);
  const uint64_t ancient = tablet->AncientUndoBytes();
  auto gc_start = SteadyClock::now();
  BENCH_CHECK_OK(tablet->GcAncientUndoFiles());
  const double gc_secs = SecondsSince(gc_start);
  const TabletStats after = tablet->GetStats();
  CHECK_EQ(CountRows(tablet), n) << "rows lost";
  return absl::StrFormat(
      "{\"rows\": %d, \"load_seconds\": %.3f, \"before_gc\": %s, "
      "\"ancient_undo_bytes\": %d, \"gc_seconds\": %.3f, \"after_gc\": %s}",
      n, load_secs, BytesPerRow(before, n), ancient, gc_secs, BytesPerRow(after, n));
}

// ---- Main ---------------------------------------------------------------------------------------

int Main() {
  std::string tmpl = JoinPath(FLAGS_dir, "tablet_bench.XXXXXX");
  CHECK(mkdtemp(tmpl.data()) != nullptr) << "mkdtemp " << tmpl << ": " << strerror(errno);
  const std::string root = tmpl;
  std::vector<std::string> cases = absl::StrSplit(FLAGS_cases, ',', absl::SkipEmpty());
  std::vector<std::string> layouts = absl::StrSplit(FLAGS_lookup_layouts, ',', absl::SkipEmpty());
  printf("{\"benchmark\": \"tablet_bench\", \"seed\": %llu, \"dir\": \"%s\"",
         static_cast<unsigned long long>(FLAGS_seed), root.c_str());
  fflush(stdout);
  for (const std::string& c : cases) {
    std::string sub = JoinPath(root, c);
    std::string json;
    if (c == "insert_sequential" || c == "insert_random") {
      json = RunInsert(sub, c == "insert_random");
    } else if (c == "lookup") {
      json = "{";
      for (size_t i = 0; i < layouts.size(); ++i) {
        CHECK(layouts[i] == "interleaved" || layouts[i] == "disjoint") << layouts[i];
        json += absl::StrFormat("%s\"%s\": %s", i > 0 ? ", " : "", layouts[i],
                                RunLookup(JoinPath(root, layouts[i]), layouts[i] == "interleaved"));
      }
      json += "}";
    } else if (c == "scan") {
      json = RunScan(sub);
    } else if (c == "mrs") {
      json = RunMrs();
    } else if (c == "history_gc") {
      json = RunHistoryGc(sub);
    } else {
      LOG(FATAL) << "unknown case " << c;
    }
    printf(",\n \"%s\": %s", c.c_str(), json.c_str());
    fflush(stdout);
  }
  printf(",\n \"summary\": {%s}\n}\n", absl::StrJoin(*Summary(), ", ").c_str());
  BENCH_CHECK_OK(Env::Default()->DeleteDirRecursively(root));
  return 0;
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) {
  gflags::SetUsageMessage("Tablet benchmark; prints one JSON object (see the file comment).");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  basalt::Arena::SetAdviseHugePages(FLAGS_memrowset_huge_pages);
  return basalt::Main();
}
