#include "tablet/tablet.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "common/env_memory.h"
#include "common/fault_injection_env.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "tablet/tablet_test_util.h"

namespace basalt {
namespace {
namespace tablet_test_file {

using Code = absl::StatusCode;
using Type = RowOperationType;

class TabletTest : public ::testing::Test {
 protected:
  void SetUp() override { TABLET_ASSERT_OK(h_.Create()); }
  Tablet* tablet() { return h_.tablet(); }
  TabletHarness h_;
};

TEST_F(TabletTest, WriteOpsReportPerRowResults) {
  auto r = h_.Apply({{Type::kInsert, 1, 10},
                     {Type::kInsert, 1, 11},
                     {Type::kInsertIgnore, 1, 12},
                     {Type::kUpdate, 2, 5},
                     {Type::kUpdateIgnore, 2, 5},
                     {Type::kDelete, 3},
                     {Type::kDeleteIgnore, 3},
                     {Type::kUpsert, 2, 20, false, std::string("x")},
                     {Type::kUpsert, 1, std::nullopt, false, std::string("y")}});
  std::vector<Code> codes;
  for (const auto& s : r) codes.push_back(s.code());
  EXPECT_EQ(codes,
            (std::vector<Code>{Code::kOk, Code::kAlreadyExists, Code::kOk, Code::kNotFound,
                               Code::kOk, Code::kNotFound, Code::kOk, Code::kOk, Code::kOk}));
  // The UPSERT of key 1 updated only the column it set.
  EXPECT_EQ(h_.Scan(), (std::vector<TestRow>{{1, 10, "y", 7}, {2, 20, "x", 7}}));
}

TEST_F(TabletTest, RowsSurviveFlushAndMutationsFollowThem) {
  for (int k = 0; k < 100; ++k) TABLET_ASSERT_OK(h_.Insert(k, k));
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  EXPECT_EQ(tablet()->GetStats().num_rowsets, 1);
  EXPECT_EQ(tablet()->GetStats().mrs_rows, 0);
  TABLET_ASSERT_OK(h_.Update(5, 500));
  TABLET_ASSERT_OK(h_.Delete(6));
  EXPECT_EQ(h_.Insert(7, 0).code(), Code::kAlreadyExists);
  TABLET_ASSERT_OK(h_.Insert(6, 600, std::string("back")));  // A reinsert into the DRS.
  TABLET_ASSERT_OK(h_.Insert(1000, 1));                      // A new key goes to the MRS.
  std::vector<TestRow> rows = h_.Scan();
  ASSERT_EQ(rows.size(), 101u);
  EXPECT_EQ(rows[5], (TestRow{5, 500, std::nullopt, 7}));
  EXPECT_EQ(rows[6], (TestRow{6, 600, "back", 7}));
  EXPECT_EQ(rows.back(), (TestRow{1000, 1, std::nullopt, 7}));
  EXPECT_EQ(h_.Scan(std::nullopt, /*ordered=*/false), rows);
}

TEST_F(TabletTest, SnapshotReadsSeeThePastAcrossFlushAndCompaction) {
  HybridTime t1, t2;
  BASALT_ASSERT_OK(h_.Apply({{Type::kInsert, 1, 1}}, &t1)[0]);
  BASALT_ASSERT_OK(h_.Apply({{Type::kUpdate, 1, 2}}, &t2)[0]);
  TABLET_ASSERT_OK(h_.Delete(1));
  auto at = [](HybridTime t) { return MvccSnapshot::IncludingAllBefore(t.Next()); };
  auto check = [&] {
    EXPECT_EQ(h_.Scan(at(t1)), (std::vector<TestRow>{{1, 1, std::nullopt, 7}}));
    EXPECT_EQ(h_.Scan(at(t2)), (std::vector<TestRow>{{1, 2, std::nullopt, 7}}));
    EXPECT_TRUE(h_.Scan().empty());
  };
  check();
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  check();
  TABLET_ASSERT_OK(h_.Insert(2, 2));
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  TABLET_ASSERT_OK(tablet()->Compact(/*all=*/true));
  EXPECT_EQ(tablet()->GetStats().num_rowsets, 1);
  EXPECT_EQ(h_.Scan(at(t1)), (std::vector<TestRow>{{1, 1, std::nullopt, 7}}));
  EXPECT_EQ(h_.Scan(at(t2)), (std::vector<TestRow>{{1, 2, std::nullopt, 7}}));
  EXPECT_EQ(h_.Scan(), (std::vector<TestRow>{{2, 2, std::nullopt, 7}}));
}

TEST_F(TabletTest, HistoryGcDropsDeletedRows) {
  gflags::FlagSaver saver;
  FLAGS_tablet_history_max_age_sec = 10;
  for (int k = 0; k < 1000; ++k) TABLET_ASSERT_OK(h_.Insert(k, k));
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  for (int k = 0; k < 1000; k += 2) TABLET_ASSERT_OK(h_.Delete(k));
  TABLET_ASSERT_OK(tablet()->FlushDeltas());
  h_.clock()->SetNowMicros(h_.clock()->NowMicros() + 60 * 1000000);
  TABLET_ASSERT_OK(tablet()->MajorCompactDeltas());
  std::vector<RowSetMetadata> rs = tablet()->RowSetsForTests();
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].num_rows, 500u);
  EXPECT_TRUE(rs[0].redo_blocks.empty());
  std::vector<TestRow> rows = h_.Scan();
  ASSERT_EQ(rows.size(), 500u);
  EXPECT_EQ(rows[0].key, 1);
  // A dropped key can be inserted again.
  TABLET_ASSERT_OK(h_.Insert(0, 42));
  EXPECT_EQ(h_.Scan().size(), 501u);
}

TEST_F(TabletTest, ReopenRestoresFlushedData) {
  for (int k = 0; k < 50; ++k) TABLET_ASSERT_OK(h_.Insert(k, k, "v" + std::to_string(k)));
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  TABLET_ASSERT_OK(h_.Update(3, 33));
  TABLET_ASSERT_OK(tablet()->FlushDeltas());
  std::vector<TestRow> before = h_.Scan();
  TABLET_ASSERT_OK(h_.Reopen());
  EXPECT_EQ(h_.Scan(), before);
  TABLET_ASSERT_OK(h_.Insert(100, 1));  // Timestamps continue above the durable ones.
  EXPECT_EQ(h_.Scan().size(), 51u);
}

TEST_F(TabletTest, ScansPushPredicatesAndKeyRanges) {
  for (int k = 0; k < 300; ++k) TABLET_ASSERT_OK(h_.Insert(k, k % 10));
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  for (int k = 300; k < 400; ++k) TABLET_ASSERT_OK(h_.Insert(k, k % 10));
  Schema schema = tablet()->schema();
  ScanSpec spec;
  auto pred = ColumnPredicate::Equality(schema.column(1), Datum::Int32(3));
  BASALT_ASSERT_OK(pred);
  spec.predicates.push_back(*pred);
  spec.range.lower = EncodeKey(schema, std::vector<Datum>{Datum::Int32(100)});
  spec.range.upper = EncodeKey(schema, std::vector<Datum>{Datum::Int32(350)});
  for (bool ordered : {true, false}) {
    std::vector<TestRow> rows = h_.Scan(std::nullopt, ordered, spec);
    ASSERT_EQ(rows.size(), 25u) << ordered;
    for (const TestRow& r : rows) {
      EXPECT_EQ(r.key % 10, 3);
      EXPECT_GE(r.key, 100);
      EXPECT_LT(r.key, 350);
    }
  }
}

// MemRowSet rows without mutations are filtered before their cells are copied (prefilter);
// rows with mutations are filtered on their state at the snapshot; predicates name the current
// columns, which the MemRowSet holds by id (a column renamed, and a new one given its old name).
TEST_F(TabletTest, PredicatesOverMemRowSetRowsWithAndWithoutMutations) {
  for (int k = 0; k < 100; ++k) TABLET_ASSERT_OK(h_.Insert(k, k % 10));  // All in the MRS.
  TABLET_ASSERT_OK(h_.Update(13, 7));                                    // 3 -> 7: out.
  TABLET_ASSERT_OK(h_.Update(14, 3));                                    // 4 -> 3: in.
  TABLET_ASSERT_OK(h_.Delete(23));                                       // 3, deleted.
  const std::vector<int32_t> want = {3, 14, 33, 43, 53, 63, 73, 83, 93};
  auto keys_where = [&](const std::string& column, int32_t v, bool ordered) {
    Schema schema = tablet()->schema();
    ScanSpec spec;
    auto pred =
        ColumnPredicate::Equality(schema.column(schema.find_column(column)), Datum::Int32(v));
    CHECK(pred.ok()) << pred.status();
    spec.predicates.push_back(*pred);
    std::vector<int32_t> keys;
    for (const TestRow& r : h_.Scan(std::nullopt, ordered, spec)) keys.push_back(r.key);
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  for (bool ordered : {true, false}) EXPECT_EQ(keys_where("val", 3, ordered), want) << ordered;

  Schema s = tablet()->schema();
  auto renamed = s.RenameColumn("val", "value");
  BASALT_ASSERT_OK(renamed);
  TABLET_ASSERT_OK(tablet()->AlterSchema(*renamed));
  auto added = renamed->AddColumn(ColumnSchema("val", DataType::kInt32, false, Datum::Int32(5)));
  BASALT_ASSERT_OK(added);
  TABLET_ASSERT_OK(tablet()->AlterSchema(*added));
  for (bool ordered : {true, false}) {
    EXPECT_EQ(keys_where("value", 3, ordered), want) << ordered;
    // The new "val" is 5 in every row (its default), whatever the MRS's old "val" holds.
    EXPECT_EQ(keys_where("val", 5, ordered).size(), 99u) << ordered;
    EXPECT_TRUE(keys_where("val", 3, ordered).empty()) << ordered;
  }
}

TEST_F(TabletTest, AlterSchemaAddDropRename) {
  for (int k = 0; k < 10; ++k) TABLET_ASSERT_OK(h_.Insert(k, k, "a"));
  TABLET_ASSERT_OK(tablet()->FlushMemRowSet());
  for (int k = 10; k < 20; ++k) TABLET_ASSERT_OK(h_.Insert(k, k, "b"));  // In the MRS.
  Schema s = tablet()->schema();
  auto added = s.AddColumn(ColumnSchema("extra", DataType::kInt64, false, Datum::Int64(99)));
  BASALT_ASSERT_OK(added);
  TABLET_ASSERT_OK(tablet()->AlterSchema(*added));
  auto dropped = added->DropColumn("s");
  BASALT_ASSERT_OK(dropped);
  TABLET_ASSERT_OK(tablet()->AlterSchema(*dropped));
  auto renamed = dropped->RenameColumn("val", "value");
  BASALT_ASSERT_OK(renamed);
  TABLET_ASSERT_OK(tablet()->AlterSchema(*renamed));
  Schema now = tablet()->schema();
  ASSERT_EQ(now.num_columns(), 4);
  // Scan every column of the new schema.
  auto it = tablet()->NewIterator(now, tablet()->mvcc()->SnapshotForRead(), {}, true);
  BASALT_ASSERT_OK(it);
  BASALT_ASSERT_OK((*it)->Init());
  std::vector<std::unique_ptr<ColumnBlockBuffer>> bufs;
  std::vector<ColumnBlock*> blocks;
  for (const ColumnSchema& c : now.columns()) {
    bufs.push_back(std::make_unique<ColumnBlockBuffer>(c.type(), 64, c.is_nullable()));
    blocks.push_back(bufs.back()->block());
  }
  size_t total = 0;
  int extra = now.find_column("extra");
  int value = now.find_column("value");
  while ((*it)->HasNext()) {
    auto n = (*it)->NextBlock(blocks, 64);
    BASALT_ASSERT_OK(n);
    for (size_t i = 0; i < *n; ++i) {
      int32_t key = blocks[0]->data<int32_t>()[i];
      EXPECT_EQ(blocks[value]->data<int32_t>()[i], key);
      EXPECT_EQ(blocks[extra]->data<int64_t>()[i], 99);
    }
    total += *n;
  }
  EXPECT_EQ(total, 20u);
  // The reopened tablet has the new schema and the same rows.
  TABLET_ASSERT_OK(h_.Reopen());
  EXPECT_TRUE(tablet()->schema().Equals(now));
}

// ---- Model-based randomized test ---------------------------------------------------------------

// The reference: key → row, applying the same ops with the documented semantics.
class Model {
 public:
  absl::StatusCode Apply(const TestOp& op) {
    auto it = rows_.find(op.key);
    bool exists = it != rows_.end();
    switch (op.type) {
      case Type::kInsert:
      case Type::kInsertIgnore:
      case Type::kUpsert:
        if (!exists) {
          TestRow r{op.key};
          if (op.val) r.val = op.val;
          if (op.s) r.s = op.s;
          if (op.d) r.d = *op.d;
          rows_[op.key] = r;
          return Code::kOk;
        }
        if (op.type == Type::kInsert) return Code::kAlreadyExists;
        if (op.type == Type::kInsertIgnore) return Code::kOk;
        SetColumns(op, &it->second);
        return Code::kOk;
      case Type::kUpdate:
      case Type::kUpdateIgnore:
        if (!exists) return op.type == Type::kUpdate ? Code::kNotFound : Code::kOk;
        SetColumns(op, &it->second);
        return Code::kOk;
      default:
        if (!exists) return op.type == Type::kDelete ? Code::kNotFound : Code::kOk;
        rows_.erase(it);
        return Code::kOk;
    }
  }
  std::vector<TestRow> Rows() const {
    std::vector<TestRow> out;
    for (const auto& [k, r] : rows_) out.push_back(r);
    return out;
  }

 private:
  static void SetColumns(const TestOp& op, TestRow* r) {
    if (op.val_null) r->val.reset();
    if (op.val) r->val = op.val;
    if (op.s_null) r->s.reset();
    if (op.s) r->s = op.s;
    if (op.d) r->d = *op.d;
  }
  std::map<int32_t, TestRow> rows_;
};

TestOp RandomOp(Random* rng, int32_t key_space) {
  static constexpr Type kTypes[] = {Type::kInsert,       Type::kInsert, Type::kInsertIgnore,
                                    Type::kUpsert,       Type::kUpdate, Type::kUpdate,
                                    Type::kUpdateIgnore, Type::kDelete, Type::kDeleteIgnore};
  TestOp op;
  op.type = kTypes[rng->Uniform(std::size(kTypes))];
  op.key = static_cast<int32_t>(rng->Uniform(key_space));
  if (RowOperationIsDeleteLike(op.type)) return op;
  bool update = RowOperationIsUpdateLike(op.type);
  if (update || rng->OneIn(2)) {
    if (rng->OneIn(8)) {
      op.val_null = true;
    } else {
      op.val = static_cast<int32_t>(rng->Uniform(1000));
    }
  }
  if (rng->OneIn(2)) {
    if (rng->OneIn(6)) {
      op.s_null = true;
    } else {
      op.s = std::string(rng->Uniform(12), static_cast<char>('a' + rng->Uniform(26)));
    }
  }
  if (rng->OneIn(4)) op.d = static_cast<int32_t>(rng->Uniform(100));
  if (update && !op.val && !op.val_null && !op.s && !op.s_null && !op.d) op.val = 1;
  return op;
}

struct PastSnapshot {
  HybridTime ts;
  std::vector<TestRow> rows;
};

void RunModelTest(uint64_t seed, int steps, int32_t key_space) {
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rng(seed);
  TabletHarness h;
  // Small rowsets, so flushes and compactions roll over several outputs.
  if (rng.OneIn(2)) h.set_rowset_target_bytes(4 << 10);
  TABLET_ASSERT_OK(h.Create());
  Model model;
  std::vector<PastSnapshot> past;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    Tablet* t = h.tablet();
    uint32_t dice = rng.Uniform(100);
    if (dice < 80) {
      std::vector<TestOp> ops;
      int n = 1 + static_cast<int>(rng.Uniform(20));
      for (int i = 0; i < n; ++i) ops.push_back(RandomOp(&rng, key_space));
      HybridTime ts;
      std::vector<absl::Status> got = h.Apply(ops, &ts);
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(got[i].code(), model.Apply(ops[i])) << "op " << i << ": " << got[i];
      }
      if (rng.OneIn(10)) past.push_back({ts, model.Rows()});
    } else if (dice < 86) {
      TABLET_ASSERT_OK(t->FlushMemRowSet());
    } else if (dice < 90) {
      TABLET_ASSERT_OK(t->FlushDeltas());
    } else if (dice < 93) {
      TABLET_ASSERT_OK(t->Compact(/*all=*/rng.OneIn(2)));
    } else if (dice < 95) {
      TABLET_ASSERT_OK(t->MajorCompactDeltas());
    } else if (dice < 97) {
      TABLET_ASSERT_OK(t->MinorCompactDeltas());
    } else {
      // A clean restart: without a WAL only flushed data survives, so flush first.
      TABLET_ASSERT_OK(t->FlushMemRowSet());
      TABLET_ASSERT_OK(t->FlushDeltas());
      TABLET_ASSERT_OK(h.Reopen());
    }
    ASSERT_EQ(h.Scan(), model.Rows());
    if (step % 25 == 0) {
      ASSERT_EQ(h.Scan(std::nullopt, /*ordered=*/false), model.Rows());
      for (const PastSnapshot& p : past) {
        ASSERT_EQ(h.Scan(MvccSnapshot::IncludingAllBefore(p.ts.Next())), p.rows)
            << "snapshot at " << p.ts.ToString();
      }
    }
  }
}

// Steps per seed; BASALT_TABLET_MODEL_STEPS raises it for soak runs.
int ModelSteps(int default_steps) {
  const char* env = std::getenv("BASALT_TABLET_MODEL_STEPS");
  return env != nullptr ? std::atoi(env) : default_steps;
}

// The apply contract (row_outcome.h): an error of the storage while applying is no row's
// outcome. It fails the whole call and the tablet, which then applies and persists nothing more.
TEST(TabletApplyContractTest, StorageErrorFailsTheCallAndTheTablet) {
  MemoryEnv mem;
  FaultInjectionEnv env(&mem);
  TabletHarness h(&env);
  TABLET_ASSERT_OK(h.Create());
  for (int k = 0; k < 100; ++k) TABLET_ASSERT_OK(h.Insert(k, k));
  TABLET_ASSERT_OK(h.tablet()->FlushMemRowSet());
  TABLET_ASSERT_OK(h.Reopen());         // Nothing of the rowset's index read yet.
  TABLET_ASSERT_OK(h.Insert(1000, 1));  // In the MemRowSet only.
  const Schema schema = h.tablet()->schema();
  Arena arena;
  RowOperationsDecoder dec(&schema, &arena);
  std::vector<DecodedRowOperation> ops;
  auto payload = h.Encode({{Type::kUpdate, 5, 500}, {Type::kUpdate, 6, 600}});
  TABLET_ASSERT_OK(dec.Decode(payload.first, payload.second, &ops));
  env.FailAfter(0, FaultInjectionEnv::OpKind::kRead);  // The disk stops answering reads.
  std::vector<RowOutcome> outcomes;
  absl::Status s = h.tablet()->Write(ops, &outcomes);
  env.ClearFailures();
  ASSERT_FALSE(s.ok()) << "a read error became a row outcome";
  EXPECT_TRUE(IsStorageError(s)) << s;
  EXPECT_NE(s.message().find("tablet t1"), std::string::npos) << s;
  EXPECT_FALSE(h.tablet()->health().ok());
  // Failed for good: no more writes, nothing more durable (the disk works again).
  absl::Status again = h.tablet()->Write(ops, &outcomes);
  EXPECT_FALSE(again.ok()) << "a failed tablet applied a write";
  absl::Status flush = h.tablet()->FlushMemRowSet();
  EXPECT_FALSE(flush.ok()) << "a failed tablet persisted a flush";
  EXPECT_NE(flush.message().find("not persisting"), std::string::npos) << flush;
  // Reopened from disk, the tablet holds what was durable before the failure.
  TABLET_ASSERT_OK(h.Reopen());
  std::vector<TestRow> rows = h.Scan();
  ASSERT_EQ(rows.size(), 100u);  // Key 1000 was never durable (no WAL here).
  EXPECT_EQ(rows[5], (TestRow{5, 5, std::nullopt, 7}));
}

// Row outcomes are results: a missing key is kKeyNotFound, never an error of the call.
TEST(TabletApplyContractTest, RowOutcomesAreNotErrors) {
  TabletHarness h;
  TABLET_ASSERT_OK(h.Create());
  TABLET_ASSERT_OK(h.Insert(1, 1));
  const Schema schema = h.tablet()->schema();
  Arena arena;
  RowOperationsDecoder dec(&schema, &arena);
  std::vector<DecodedRowOperation> ops;
  auto payload = h.Encode({{Type::kInsert, 1, 2}, {Type::kUpdate, 9, 9}, {Type::kDelete, 1}});
  TABLET_ASSERT_OK(dec.Decode(payload.first, payload.second, &ops));
  std::vector<RowOutcome> outcomes;
  TABLET_ASSERT_OK(h.tablet()->Write(ops, &outcomes));
  EXPECT_EQ(outcomes, (std::vector<RowOutcome>{RowOutcome::kKeyExists, RowOutcome::kKeyNotFound,
                                               RowOutcome::kApplied}));
  TABLET_ASSERT_OK(h.tablet()->health());
}

TEST(TabletModelTest, RandomOpsMatchModel) {
  uint64_t base = SeedFromEnvOrTime();
  for (uint64_t i = 0; i < 3; ++i) RunModelTest(base + i, ModelSteps(2000), i == 1 ? 2000 : 64);
}

}  // namespace tablet_test_file
}  // namespace
}  // namespace basalt

namespace basalt {
namespace {
namespace tablet_test_file {

// WAL replay: every op is logged with its index and timestamp, as the Raft log holds it. At random
// points the tablet "crashes" (reopens without flushing: the MRS and DMSs are lost) and the logged
// ops above DurableOpIndex() are replayed; the tablet must then match the model exactly.
void RunReplayTest(uint64_t seed, int steps, int32_t key_space) {
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  struct LoggedOp {
    HybridTime ts;
    int64_t index;
    std::pair<std::string, std::string> payload;
  };
  Random rng(seed);
  TabletHarness h;
  if (rng.OneIn(2)) h.set_rowset_target_bytes(4 << 10);
  TABLET_ASSERT_OK(h.Create());
  Model model;
  std::vector<LoggedOp> wal;
  int crashes = 0;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    Tablet* t = h.tablet();
    uint32_t dice = rng.Uniform(100);
    if (dice < 75) {
      std::vector<TestOp> ops;
      int n = 1 + static_cast<int>(rng.Uniform(10));
      for (int i = 0; i < n; ++i) ops.push_back(RandomOp(&rng, key_space));
      LoggedOp op{h.hybrid_clock()->Now(), static_cast<int64_t>(wal.size()) + 1, h.Encode(ops)};
      std::vector<absl::Status> got = h.ApplyAt(op.payload, op.ts, op.index, false);
      for (int i = 0; i < n; ++i) ASSERT_EQ(got[i].code(), model.Apply(ops[i])) << got[i];
      wal.push_back(std::move(op));
    } else if (dice < 83) {
      TABLET_ASSERT_OK(t->FlushMemRowSet());
    } else if (dice < 88) {
      TABLET_ASSERT_OK(t->FlushDeltas());
    } else if (dice < 92) {
      TABLET_ASSERT_OK(t->Compact(/*all=*/rng.OneIn(2)));
    } else if (dice < 95) {
      TABLET_ASSERT_OK(t->MajorCompactDeltas());
    } else if (dice < 96) {
      TABLET_ASSERT_OK(t->MinorCompactDeltas());
    } else {
      ++crashes;
      TABLET_ASSERT_OK(h.Reopen());
      int64_t durable = h.tablet()->DurableOpIndex();
      ASSERT_LE(durable, static_cast<int64_t>(wal.size()));
      for (int64_t i = durable; i < static_cast<int64_t>(wal.size()); ++i) {
        h.ApplyAt(wal[i].payload, wal[i].ts, wal[i].index, /*replay=*/true);
      }
    }
    ASSERT_EQ(h.Scan(), model.Rows());
  }
  EXPECT_GT(crashes, 0);
}

// Replay decides once per (op, key) whether the rowsets already reflect the op. Key 14: an op
// whose UPDATE of the deleted key failed and whose later INSERT reinserted it, its REINSERT then
// flushed; replaying the UPDATE over the flushed row used to overwrite the INSERT's values (found
// with BASALT_TEST_SEED=11137771740805316720). Key 15: an op's INSERT and UPDATE, not durable;
// both are replayed although the replayed INSERT already changed the row at the op's timestamp.
TEST(TabletReplayTest, ReplayDecidesOncePerOpAndKey) {
  TabletHarness h;
  TABLET_ASSERT_OK(h.Create());
  std::vector<std::pair<HybridTime, std::pair<std::string, std::string>>> wal;
  auto apply = [&](const std::vector<TestOp>& ops) {
    wal.push_back({h.hybrid_clock()->Now(), h.Encode(ops)});
    return h.ApplyAt(wal.back().second, wal.back().first, static_cast<int64_t>(wal.size()), false);
  };
  TestOp update14{Type::kUpdate, 14, 302};
  update14.d = 22;
  BASALT_ASSERT_OK(apply({{Type::kInsert, 14, 1}, {Type::kInsert, 15, 1}})[0]);
  TABLET_ASSERT_OK(h.tablet()->FlushMemRowSet());
  BASALT_ASSERT_OK(apply({{Type::kDelete, 14}, {Type::kDelete, 15}})[0]);
  TABLET_ASSERT_OK(h.tablet()->FlushDeltas());
  BASALT_ASSERT_OK(apply({{Type::kInsert, 99, 9}})[0]);  // Holds the durable index at 2.
  std::vector<absl::Status> got =
      apply({update14, {Type::kInsert, 14, 37, false, std::string("qqqqqqqqqq")}});
  EXPECT_EQ(got[0].code(), Code::kNotFound);
  TABLET_ASSERT_OK(got[1]);
  TABLET_ASSERT_OK(h.tablet()->FlushDeltas());  // The REINSERT of 14 is durable.
  BASALT_ASSERT_OK(apply({{Type::kInsert, 15, 5}, {Type::kUpdate, 15, 6}})[1]);
  const std::vector<TestRow> want = {
      {14, 37, "qqqqqqqqqq", 7}, {15, 6, std::nullopt, 7}, {99, 9, std::nullopt, 7}};
  ASSERT_EQ(h.Scan(), want);
  TABLET_ASSERT_OK(h.Reopen());
  ASSERT_EQ(h.tablet()->DurableOpIndex(), 2);
  for (size_t i = 2; i < wal.size(); ++i) {
    h.ApplyAt(wal[i].second, wal[i].first, static_cast<int64_t>(i) + 1, /*replay=*/true);
  }
  EXPECT_EQ(h.Scan(), want);
}

TEST(TabletReplayTest, ReplayAboveDurableIndexRestoresEveryOp) {
  uint64_t base = SeedFromEnvOrTime();
  for (uint64_t i = 0; i < 3; ++i) RunReplayTest(base + i, ModelSteps(800), i == 1 ? 1000 : 48);
}

}  // namespace tablet_test_file
}  // namespace
}  // namespace basalt
