#pragma once

// Test fixture for the block GC, scrubber, verifier and block reference tests: a tablet server's
// data directory in memory (behind a FaultInjectionEnv), its block manager, and real tablets
// under tablets/<id>/ (replica file + superblock) whose rowsets are written by real flushes,
// delta flushes and compactions, so every kind of block exists with its real bytes.
// Test-only; included by *_test.cc.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cfile/block_manager.h"
#include "common/arena.h"
#include "common/clock.h"
#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/hybrid_clock.h"
#include "common/metrics.h"
#include "common/partial_row.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "tablet/tablet.h"
#include "tablet/tablet_metadata.h"
#include "tserver/block_references.h"
#include "tserver/replica_file.h"

namespace basalt::block_test {

inline constexpr char kDataDir[] = "/data";
inline constexpr char kTabletsDir[] = "/data/tablets";

// (key INT32, part INT32, val INT32 NULL, s STRING NULL), primary key (key, part): a key of two
// columns, so rowsets have a key index block and a bloom filter. With `integer_key`, (key INT32,
// val INT32 NULL, s STRING NULL), primary key (key): no key index block (the key column's file
// is the index) and a key bitmap as the filter.
inline Schema BlockTestSchema(bool integer_key = false) {
  if (integer_key) {
    return *Schema::Create({ColumnSchema("key", DataType::kInt32),
                            ColumnSchema("val", DataType::kInt32, /*is_nullable=*/true),
                            ColumnSchema("s", DataType::kString, /*is_nullable=*/true)},
                           1);
  }
  return *Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("part", DataType::kInt32),
       ColumnSchema("val", DataType::kInt32, /*is_nullable=*/true),
       ColumnSchema("s", DataType::kString, /*is_nullable=*/true)},
      2);
}

class DataDirTest : public ::testing::Test {
 protected:
  DataDirTest() : env_(&mem_), clock_(ManualClock::kDefaultStartMicros), hybrid_(&clock_) {}

  void SetUp() override { BASALT_ASSERT_OK(OpenBlockManager()); }

  Env* env() { return &env_; }
  BlockManager* bm() const { return bm_.get(); }
  Tablet* tablet(const std::string& id) { return tablets_.at(id).get(); }
  static std::string TabletDir(const std::string& id) { return JoinPath(kTabletsDir, id); }

  // Closes the tablets and the block manager and opens them again, as a restart would: the
  // block manager's epoch moves on. Tablets whose directory is gone or not READY stay closed, and
  // all of them without `reopen_tablets`.
  void Restart(bool reopen_tablets = true) {
    tablets_.clear();
    bm_.reset();
    BASALT_ASSERT_OK(OpenBlockManager());
    if (!reopen_tablets) return;
    auto ids = env_.GetChildren(kTabletsDir);
    if (!ids.ok()) return;
    for (const std::string& id : *ids) {
      const TabletBlockRefs refs = ReadTabletBlockRefs(&env_, kTabletsDir, id);
      if (!refs.status.ok() || refs.state != ReplicaDataState::kReady) continue;
      auto t = Tablet::Open(Options(id));
      BASALT_ASSERT_OK(t);
      tablets_[id] = *std::move(t);
    }
  }

  // Creates tablets/<id>/ with a replica file in `state` and an empty tablet's superblock.
  Tablet* AddTablet(const std::string& id, ReplicaDataState state = ReplicaDataState::kReady,
                    bool integer_key = false) {
    EXPECT_TRUE(env_.CreateDirs(TabletDir(id)).ok());
    auto t = Tablet::Create(Options(id), id, BlockTestSchema(integer_key));
    EXPECT_TRUE(t.ok()) << t.status();
    SetReplicaState(id, state);
    tablets_[id] = *std::move(t);
    return tablets_[id].get();
  }

  void SetReplicaState(const std::string& id, ReplicaDataState state) {
    TabletReplicaMeta meta;
    meta.tablet_id = id;
    meta.table_id = "table";
    meta.table_name = "table";
    BASALT_EXPECT_OK(WriteFileAtomically(&env_, JoinPath(TabletDir(id), kReplicaFileName),
                                         EncodeReplicaFile(meta, state)));
  }

  // Applies one op of `type` per key of [first, first + n) (val = key * mult, s = "row<key>").
  void Write(Tablet* t, RowOperationType type, int first, int n, int mult = 1) {
    const Schema schema = t->schema();
    std::string rows, indirect;
    RowOperationsEncoder enc(&rows, &indirect);
    for (int k = first; k < first + n; ++k) {
      PartialRow row(&schema);
      BASALT_ASSERT_OK(row.SetInt32("key", k));
      if (schema.find_column("part") >= 0) {
        BASALT_ASSERT_OK(row.SetInt32("part", 0));
      }
      BASALT_ASSERT_OK(row.SetInt32("val", k * mult));
      if (type == RowOperationType::kInsert) {
        BASALT_ASSERT_OK(row.SetString("s", "row" + std::to_string(k)));
      }
      enc.Add(type, row);
    }
    Arena arena;
    RowOperationsDecoder dec(&schema, &arena);
    std::vector<DecodedRowOperation> ops;
    BASALT_ASSERT_OK(dec.Decode(rows, indirect, &ops));
    std::vector<RowOutcome> results;
    BASALT_ASSERT_OK(t->Write(ops, &results));
    for (RowOutcome o : results) BASALT_ASSERT_OK(RowOutcomeToStatus(o));
  }

  // A tablet with blocks of every kind: two overlapping rowsets compacted into one (base data,
  // key index, bloom filter, UNDO files), then updates flushed to a REDO file.
  Tablet* AddTabletWithEveryKindOfBlock(const std::string& id, int rows = 200,
                                        bool integer_key = false) {
    Tablet* t = AddTablet(id, ReplicaDataState::kReady, integer_key);
    Write(t, RowOperationType::kInsert, 0, rows / 2);
    BASALT_EXPECT_OK(t->FlushMemRowSet());
    Write(t, RowOperationType::kInsert, rows / 2, rows - rows / 2);
    Write(t, RowOperationType::kUpdate, 0, rows / 4, 3);  // Into the first rowset's deltas.
    BASALT_EXPECT_OK(t->FlushMemRowSet());
    BASALT_EXPECT_OK(t->FlushDeltas());
    BASALT_EXPECT_OK(t->Compact(/*all=*/true));
    Write(t, RowOperationType::kUpdate, 0, rows / 4, 5);
    BASALT_EXPECT_OK(t->FlushDeltas());
    return t;
  }

  // The rowset blocks tablets/<id>/superblock names, as the scrubber sees them.
  std::vector<RowSetBlock> RowSetBlocks(const std::string& id) {
    const TabletBlockRefs refs = ReadTabletBlockRefs(&env_, kTabletsDir, id);
    EXPECT_TRUE(refs.status.ok()) << refs.status;
    return refs.rowset_blocks;
  }
  // The first block of `kind` tablet `id` names.
  BlockId FirstBlockOf(const std::string& id, RowSetBlockKind kind) {
    for (const RowSetBlock& b : RowSetBlocks(id)) {
      if (b.kind == kind) return b.id;
    }
    ADD_FAILURE() << "tablet " << id << " has no " << RowSetBlockKindName(kind);
    return BlockId();
  }

  // Options of the GC or the scrubber (`O`) over this directory, with their metrics in `metrics`.
  template <typename O>
  O DirOptions(MetricRegistry* metrics) {
    O o;
    o.env = &env_;
    o.block_manager = bm_.get();
    o.tablets_dir = kTabletsDir;
    o.metrics = metrics;
    return o;
  }

  // A finalized block no metadata names.
  BlockId WriteUnnamedBlock(std::string_view bytes = "orphan") {
    auto block = bm_->CreateBlock();
    EXPECT_TRUE(block.ok()) << block.status();
    BASALT_EXPECT_OK((*block)->Append(bytes));
    BASALT_EXPECT_OK((*block)->Finalize());
    return (*block)->id();
  }

  std::string ReadBlockFile(BlockId id) {
    std::string data;
    BASALT_EXPECT_OK(ReadFileToString(&env_, bm_->BlockPath(id), &data));
    return data;
  }
  // Rewrites block `id`'s file in place (what a disk that rots does).
  void OverwriteBlockFile(BlockId id, std::string_view bytes) {
    BASALT_EXPECT_OK(WriteStringToFile(&env_, bm_->BlockPath(id), bytes, /*sync=*/true));
  }
  void FlipByte(BlockId id, size_t offset) {
    std::string data = ReadBlockFile(id);
    ASSERT_LT(offset, data.size());
    data[offset] ^= 0x20;
    OverwriteBlockFile(id, data);
  }

  MemoryEnv mem_;
  FaultInjectionEnv env_;
  ManualClock clock_;
  HybridClock hybrid_;
  std::unique_ptr<BlockManager> bm_;
  std::map<std::string, std::unique_ptr<Tablet>> tablets_;

 private:
  absl::Status OpenBlockManager() {
    BASALT_RETURN_IF_ERROR(env_.CreateDirs(kTabletsDir));
    BASALT_ASSIGN_OR_RETURN(bm_, BlockManager::Open(&env_, kDataDir));
    return absl::OkStatus();
  }
  TabletOptions Options(const std::string& id) {
    TabletOptions o;
    o.env = &env_;
    o.block_manager = bm_.get();
    o.superblock_path = JoinPath(TabletDir(id), kSuperBlockFileName);
    o.clock = &hybrid_;
    return o;
  }
};

}  // namespace basalt::block_test
