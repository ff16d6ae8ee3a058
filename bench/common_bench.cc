// Benchmarks of src/common: row-operation encoding and decoding, and key encoding.
//
// Each benchmark processes batches of kBatchRows rows and reports rows/second as
// items_per_second (and payload bytes/second where that is meaningful).
//   ./build/bench/common_bench --benchmark_min_time=0.1
//   ./build/bench/common_bench --benchmark_format=json

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "common/arena.h"
#include "common/key_encoder.h"
#include "common/partial_row.h"
#include "common/random.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "glog/logging.h"

namespace basalt {
namespace {

constexpr int kBatchRows = 1000;

// (key INT32, int_val INT32, non_null_with_default INT32 NOT NULL DEFAULT 0).
Schema IntSchema() {
  return Schema::Create(
             {ColumnSchema("key", DataType::kInt32),
              ColumnSchema("int_val", DataType::kInt32, true),
              ColumnSchema("non_null_with_default", DataType::kInt32, false, Datum::Int32(0))},
             1)
      .value();
}

// A metrics-like table: a compound key with a string in the non-last position (so key encoding
// escapes it), and string values of 8-64 bytes.
Schema StringSchema() {
  return Schema::Create({ColumnSchema("host", DataType::kString),
                         ColumnSchema("ts", DataType::kUnixtimeMicros),
                         ColumnSchema("metric", DataType::kString),
                         ColumnSchema("value", DataType::kDouble, true),
                         ColumnSchema("tags", DataType::kString, true),
                         ColumnSchema("note", DataType::kBinary, true)},
                        2)
      .value();
}

enum class Kind { kInt, kString };

const Schema& GetSchema(Kind kind) {
  static const Schema* const int_schema = new Schema(IntSchema());
  static const Schema* const string_schema = new Schema(StringSchema());
  return kind == Kind::kInt ? *int_schema : *string_schema;
}

// kBatchRows full rows (every column set, one in ten nullable cells NULL) with ascending keys.
std::vector<PartialRow> MakeRows(Kind kind) {
  const Schema& schema = GetSchema(kind);
  Random rng(42);
  std::vector<PartialRow> rows;
  for (int i = 0; i < kBatchRows; ++i) {
    PartialRow row(&schema);
    absl::Status s;
    if (kind == Kind::kInt) {
      s.Update(row.SetInt32("key", i));
      s.Update(rng.OneIn(10) ? row.SetNull("int_val") : row.SetInt32("int_val", rng.Next32()));
      s.Update(row.SetInt32("non_null_with_default", i * 7));
    } else {
      s.Update(row.SetString("host", "host-" + std::to_string(i % 50) + ".example.com"));
      s.Update(row.Set("ts", Datum::UnixtimeMicros(1'700'000'000'000'000 + i)));
      s.Update(row.SetString("metric", rng.RandomString(8 + rng.Uniform(24))));
      s.Update(row.Set("value", Datum::Double(rng.NextDouble())));
      s.Update(rng.OneIn(10) ? row.SetNull("tags") : row.SetString("tags", rng.RandomString(40)));
      s.Update(row.Set("note", Datum::Binary(rng.Bytes(8 + rng.Uniform(56)))));
    }
    CHECK(s.ok()) << s;
    rows.push_back(std::move(row));
  }
  return rows;
}

void BM_RowOperationsEncode(benchmark::State& state, Kind kind) {
  std::vector<PartialRow> rows = MakeRows(kind);
  std::string data, indirect;
  for (auto _ : state) {
    data.clear();
    indirect.clear();
    RowOperationsEncoder encoder(&data, &indirect);
    for (const PartialRow& row : rows) encoder.Add(RowOperationType::kInsert, row);
    benchmark::DoNotOptimize(data.data());
    benchmark::DoNotOptimize(indirect.data());
  }
  state.SetItemsProcessed(state.iterations() * kBatchRows);
  state.SetBytesProcessed(state.iterations() * (data.size() + indirect.size()));
}

void BM_RowOperationsDecode(benchmark::State& state, Kind kind) {
  const Schema& schema = GetSchema(kind);
  std::string data, indirect;
  RowOperationsEncoder encoder(&data, &indirect);
  for (const PartialRow& row : MakeRows(kind)) encoder.Add(RowOperationType::kInsert, row);
  Arena arena;
  std::vector<DecodedRowOperation> ops;
  for (auto _ : state) {
    arena.Reset();
    RowOperationsDecoder decoder(&schema, &arena);
    absl::Status s = decoder.Decode(data, indirect, &ops);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(ops.data());
  }
  state.SetItemsProcessed(state.iterations() * kBatchRows);
  state.SetBytesProcessed(state.iterations() * (data.size() + indirect.size()));
}

void BM_EncodeKey(benchmark::State& state, Kind kind) {
  const Schema& schema = GetSchema(kind);
  std::vector<PartialRow> rows = MakeRows(kind);
  std::vector<std::string> keys(rows.size());
  for (auto _ : state) {
    for (size_t i = 0; i < rows.size(); ++i) keys[i] = EncodeKey(schema, rows[i].row_data());
    benchmark::DoNotOptimize(keys.data());
  }
  state.SetItemsProcessed(state.iterations() * kBatchRows);
}

BENCHMARK_CAPTURE(BM_RowOperationsEncode, int_schema, Kind::kInt);
BENCHMARK_CAPTURE(BM_RowOperationsEncode, string_schema, Kind::kString);
BENCHMARK_CAPTURE(BM_RowOperationsDecode, int_schema, Kind::kInt);
BENCHMARK_CAPTURE(BM_RowOperationsDecode, string_schema, Kind::kString);
BENCHMARK_CAPTURE(BM_EncodeKey, int_schema, Kind::kInt);
BENCHMARK_CAPTURE(BM_EncodeKey, string_schema, Kind::kString);

}  // namespace
}  // namespace basalt

BENCHMARK_MAIN();
