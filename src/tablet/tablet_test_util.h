#pragma once

// Test harness for Tablet tests and benchmarks: a tablet over an Env (in-memory by default) with
// a manual clock, helpers that build row operations, and a full-scan helper returning rows of the
// harness schema (key INT32, val INT32 NULL, s STRING NULL, d INT32 NOT NULL DEFAULT 7).

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "cfile/block_manager.h"
#include "common/arena.h"
#include "common/clock.h"
#include "common/column_block.h"
#include "common/env.h"
#include "common/env_memory.h"
#include "common/hybrid_clock.h"
#include "common/partial_row.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "tablet/tablet.h"

// CHECKs that an absl::Status (or StatusOr) is OK, printing it otherwise.
#define TABLET_CHECK_OK(expr)                \
  do {                                       \
    const auto& _st = (expr);                \
    CHECK(_st.ok()) << #expr << ": " << _st; \
  } while (0)

// gtest assertions on an absl::Status that print it on failure.
#define TABLET_ASSERT_OK(expr)                     \
  do {                                             \
    const absl::Status _st = (expr);               \
    BASALT_ASSERT_OK(_st) << #expr << ": " << _st; \
  } while (0)

namespace basalt {

// One row of the harness schema.
struct TestRow {
  int32_t key = 0;
  std::optional<int32_t> val;
  std::optional<std::string> s;
  int32_t d = 7;
  friend bool operator==(const TestRow&, const TestRow&) = default;
  friend bool operator<(const TestRow& a, const TestRow& b) { return a.key < b.key; }
};

inline std::ostream& operator<<(std::ostream& os, const TestRow& r) {
  return os << "(" << r.key << ", " << (r.val ? std::to_string(*r.val) : "NULL") << ", "
            << (r.s ? "\"" + *r.s + "\"" : "NULL") << ", " << r.d << ")";
}

inline Schema TestTabletSchema() {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("val", DataType::kInt32, true),
       ColumnSchema("s", DataType::kString, true),
       ColumnSchema("d", DataType::kInt32, false, Datum::Int32(7))},
      1);
  CHECK(s.ok()) << s.status();
  return *s;
}

// One planned write: op type and the columns it sets (nullopt = leave unset; a set NULL is
// expressed with `val_null` / `s_null`).
struct TestOp {
  RowOperationType type = RowOperationType::kInsert;
  int32_t key = 0;
  std::optional<int32_t> val;
  bool val_null = false;
  std::optional<std::string> s;
  bool s_null = false;
  std::optional<int32_t> d;
};

class TabletHarness {
 public:
  // `env` may be nullptr for a fresh MemoryEnv (owned).
  explicit TabletHarness(Env* env = nullptr, std::string dir = "/tablet")
      : owned_env_(env == nullptr ? std::make_unique<MemoryEnv>() : nullptr),
        env_(env == nullptr ? owned_env_.get() : env),
        dir_(std::move(dir)),
        clock_(ManualClock::kDefaultStartMicros),
        hybrid_(&clock_) {}

  Env* env() const { return env_; }
  ManualClock* clock() { return &clock_; }
  HybridClock* hybrid_clock() { return &hybrid_; }
  Tablet* tablet() const { return tablet_.get(); }
  // Applies from the next Create/Reopen on.
  void set_rowset_target_bytes(uint64_t bytes) { rowset_target_bytes_ = bytes; }
  void set_memory_budget(MemoryBudget* budget) { memory_budget_ = budget; }
  BlockManager* block_manager() const { return bm_.get(); }

  absl::Status Create(const Schema& schema = TestTabletSchema()) {
    BASALT_RETURN_IF_ERROR(OpenBlockManager());
    BASALT_ASSIGN_OR_RETURN(tablet_, Tablet::Create(Options(), "t1", schema));
    return absl::OkStatus();
  }
  // Drops the tablet and block manager (as a process exit would) and opens them again.
  absl::Status Reopen() {
    tablet_.reset();
    bm_.reset();
    BASALT_RETURN_IF_ERROR(OpenBlockManager());
    BASALT_ASSIGN_OR_RETURN(tablet_, Tablet::Open(Options()));
    return absl::OkStatus();
  }
  void Close() {
    tablet_.reset();
    bm_.reset();
  }

  // Encodes ops as a row-operations payload of the tablet's schema.
  std::pair<std::string, std::string> Encode(const std::vector<TestOp>& ops) const {
    Schema schema = tablet_->schema();
    std::string rows, indirect;
    RowOperationsEncoder enc(&rows, &indirect);
    for (const TestOp& op : ops) {
      PartialRow row(&schema);
      TABLET_CHECK_OK(row.SetInt32("key", op.key));
      if (op.val_null) TABLET_CHECK_OK(row.SetNull("val"));
      if (op.val) TABLET_CHECK_OK(row.SetInt32("val", *op.val));
      if (op.s_null) TABLET_CHECK_OK(row.SetNull("s"));
      if (op.s) TABLET_CHECK_OK(row.SetString("s", *op.s));
      if (op.d) TABLET_CHECK_OK(row.SetInt32("d", *op.d));
      enc.Add(op.type, row);
    }
    return {std::move(rows), std::move(indirect)};
  }

  // Applies ops as one write; returns the per-row results (RowOutcomeToStatus). *ts gets the op
  // timestamp.
  std::vector<absl::Status> Apply(const std::vector<TestOp>& ops, HybridTime* ts = nullptr) {
    return ApplyPayload(Encode(ops), [&](absl::Span<const DecodedRowOperation> decoded,
                                         std::vector<RowOutcome>* results) {
      return tablet_->Write(decoded, results, ts);
    });
  }
  // Applies an encoded payload as a replicated op (ts, op_index), optionally as WAL replay.
  std::vector<absl::Status> ApplyAt(const std::pair<std::string, std::string>& payload,
                                    HybridTime ts, int64_t op_index, bool replay) {
    return ApplyPayload(payload, [&](absl::Span<const DecodedRowOperation> decoded,
                                     std::vector<RowOutcome>* results) {
      return tablet_->ApplyRowOperations(ts, op_index, decoded, results, replay);
    });
  }
  absl::Status Insert(int32_t key, std::optional<int32_t> val, std::optional<std::string> s = {}) {
    return Apply({{RowOperationType::kInsert, key, val, !val.has_value(), s, !s.has_value()}})[0];
  }
  absl::Status Update(int32_t key, std::optional<int32_t> val) {
    return Apply({{RowOperationType::kUpdate, key, val, !val.has_value()}})[0];
  }
  absl::Status Delete(int32_t key) { return Apply({{RowOperationType::kDelete, key}})[0]; }

  // Every row visible at `snap` (latest when nullopt), in key order.
  std::vector<TestRow> Scan(std::optional<MvccSnapshot> snap = std::nullopt, bool ordered = true,
                            ScanSpec spec = {}) const {
    Schema schema = tablet_->schema();
    MvccSnapshot s = snap.value_or(tablet_->mvcc()->SnapshotForRead());
    auto it = tablet_->NewIterator(schema, s, spec, ordered);
    TABLET_CHECK_OK(it.status());
    std::vector<TestRow> out = ReadAll(it->get(), schema);
    if (!ordered) std::sort(out.begin(), out.end());
    return out;
  }

  // Every row `it` (a scan projecting `schema`, a harness-shaped schema) returns from now on.
  static std::vector<TestRow> ReadAll(RowBlockIterator* it, const Schema& schema) {
    TABLET_CHECK_OK(it->Init());
    constexpr size_t kBatch = 100;
    std::vector<std::unique_ptr<ColumnBlockBuffer>> bufs;
    std::vector<ColumnBlock*> blocks;
    for (const ColumnSchema& c : schema.columns()) {
      bufs.push_back(std::make_unique<ColumnBlockBuffer>(c.type(), kBatch, c.is_nullable()));
      blocks.push_back(bufs.back()->block());
    }
    int val_idx = schema.find_column("val");
    int s_idx = schema.find_column("s");
    int d_idx = schema.find_column("d");
    std::vector<TestRow> out;
    while (it->HasNext()) {
      auto n = it->NextBlock(blocks, kBatch);
      TABLET_CHECK_OK(n.status());
      for (size_t i = 0; i < *n; ++i) {
        TestRow r;
        r.key = blocks[0]->data<int32_t>()[i];
        if (val_idx >= 0 && !blocks[val_idx]->is_null(i)) {
          r.val = blocks[val_idx]->data<int32_t>()[i];
        }
        if (s_idx >= 0 && !blocks[s_idx]->is_null(i)) {
          r.s = std::string(blocks[s_idx]->data<std::string_view>()[i]);
        }
        if (d_idx >= 0) r.d = blocks[d_idx]->data<int32_t>()[i];
        out.push_back(std::move(r));
      }
    }
    return out;
  }

 private:
  template <typename Fn>
  std::vector<absl::Status> ApplyPayload(const std::pair<std::string, std::string>& payload,
                                         Fn apply) {
    Schema schema = tablet_->schema();
    Arena arena;
    RowOperationsDecoder dec(&schema, &arena);
    std::vector<DecodedRowOperation> decoded;
    TABLET_CHECK_OK(dec.Decode(payload.first, payload.second, &decoded));
    std::vector<RowOutcome> outcomes;
    TABLET_CHECK_OK(apply(decoded, &outcomes));
    std::vector<absl::Status> results;
    for (RowOutcome o : outcomes) results.push_back(RowOutcomeToStatus(o));
    return results;
  }

  absl::Status OpenBlockManager() {
    // Created durably, as a server creating its data directories would.
    BASALT_RETURN_IF_ERROR(env_->CreateDirs(dir_));
    BASALT_RETURN_IF_ERROR(env_->SyncDir("/"));
    BASALT_RETURN_IF_ERROR(env_->SyncDir(dir_));
    BASALT_ASSIGN_OR_RETURN(bm_, BlockManager::Open(env_, JoinPath(dir_, "data")));
    return absl::OkStatus();
  }
  TabletOptions Options() {
    TabletOptions o;
    o.env = env_;
    o.block_manager = bm_.get();
    o.superblock_path = JoinPath(dir_, "superblock");
    o.clock = &hybrid_;
    o.rowset_target_bytes = rowset_target_bytes_;
    o.memory_budget = memory_budget_;
    return o;
  }

  std::unique_ptr<Env> owned_env_;
  Env* env_;
  std::string dir_;
  ManualClock clock_;
  HybridClock hybrid_;
  std::unique_ptr<BlockManager> bm_;
  std::unique_ptr<Tablet> tablet_;
  uint64_t rowset_target_bytes_ = 0;
  MemoryBudget* memory_budget_ = nullptr;
};

}  // namespace basalt
