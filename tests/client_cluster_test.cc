// Cluster tests through the client library (issue 6): a large AUTO_FLUSH_BACKGROUND load and
// scans with projections and every predicate kind; the write operation kinds and their per-row
// errors; restarting every process under a repeated READ_AT_SNAPSHOT scan.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "client/client.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "testing/external_mini_cluster.h"
#include "tests/client_test_util.h"

namespace basalt::client_test {
namespace {
namespace client_cluster_test_file {

using client::Predicate;
using client::ScanBatch;
using client::Scanner;
using client::Session;
using client::Table;
using client::Value;
using client::WriteOperation;

using ClientClusterTest = ClientClusterTestBase;

// One scan case: predicates (built from the table), a projection, and the keys expected.
struct ScanCase {
  std::string what;
  std::function<std::vector<std::unique_ptr<Predicate>>(Table*)> predicates;
  std::vector<std::string> projection;
  std::vector<int32_t> keys;
};

TEST_F(ClientClusterTest, MillionRowsThenProjectionsAndEveryPredicateKind) {
  constexpr int32_t kRows = 1000000;
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("load", 4, {kRows / 3, 2 * (kRows / 3)}, &table));
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::AUTO_FLUSH_BACKGROUND));
  const absl::Time t0 = absl::Now();
  for (int32_t k = 0; k < kRows; ++k) {
    absl::Status s = ApplyOp(session.get(), table.get(), WriteOperation::INSERT, Expected(k));
    BASALT_ASSERT_OK(s) << "row " << k << ": " << s;
  }
  ASSERT_OK(session->Flush());
  ASSERT_EQ(session->CountPendingErrors(), 0);
  const absl::Duration load = absl::Now() - t0;
  LOG(INFO) << "inserted " << kRows << " rows in " << absl::FormatDuration(load) << " ("
            << static_cast<int64_t>(kRows / absl::ToDoubleSeconds(load)) << " rows/s)";

  // READ_YOUR_WRITES: a READ_LATEST scan may reach a replica the client still takes for the
  // leader but which is a follower that has not applied everything yet (seen once under a
  // loaded suite: 952,560 of 1,000,000 rows counted).
  std::vector<Row> rows;
  ASSERT_OK(ScanRows(
      table.get(),
      [](Scanner* sc) {
        BASALT_RETURN_IF_ERROR(sc->SetReadMode(Scanner::READ_YOUR_WRITES));
        return sc->SetProjectedColumnNames({});
      },
      &rows));
  EXPECT_EQ(rows.size(), static_cast<size_t>(kRows)) << "count scan";
  rows.clear();
  const absl::Time t1 = absl::Now();
  ASSERT_OK(ScanRows(
      table.get(), [](Scanner* sc) { return sc->SetReadMode(Scanner::READ_YOUR_WRITES); }, &rows));
  LOG(INFO) << "full scan of " << rows.size() << " rows in "
            << absl::FormatDuration(absl::Now() - t1);
  rows = SortedByKey(std::move(rows));
  ASSERT_EQ(rows.size(), static_cast<size_t>(kRows));
  for (int32_t k = 0; k < kRows; ++k) {
    ASSERT_EQ(rows[k], Expected(k)) << ToString(rows[k]);
  }

  auto cmp = [](Table* t, const char* col, Predicate::ComparisonOp op, int64_t v) {
    return t->NewComparisonPredicate(col, op, Value::FromInt(v));
  };
  auto range_keys = [](int32_t lo, int32_t hi) {  // [lo, hi]
    std::vector<int32_t> keys;
    for (int32_t k = lo; k <= hi; ++k) keys.push_back(k);
    return keys;
  };
  std::vector<int32_t> null_keys, not_null_keys;
  for (int32_t k = 0; k < 50; ++k) (k % 7 == 0 ? null_keys : not_null_keys).push_back(k);
  std::vector<ScanCase> cases;
  auto add = [&](std::string what, auto preds, std::vector<std::string> projection,
                 std::vector<int32_t> keys) {
    cases.push_back({std::move(what), preds, std::move(projection), std::move(keys)});
  };
  using Preds = std::vector<std::unique_ptr<Predicate>>;
  add(
      "key >= 5 AND key <= 600",
      [&](Table* t) {
        Preds p;
        p.push_back(cmp(t, "key", Predicate::GREATER_EQUAL, 5));
        p.push_back(cmp(t, "key", Predicate::LESS_EQUAL, 600));
        return p;
      },
      {"key", "string_val"}, range_keys(5, 600));
  add("key = 12345",
      [&](Table* t) {
        Preds p;
        p.push_back(cmp(t, "key", Predicate::EQUAL, 12345));
        return p;
      },
      {}, {12345});
  add(
      "key < 10",
      [&](Table* t) {
        Preds p;
        p.push_back(cmp(t, "key", Predicate::LESS, 10));
        return p;
      },
      {"key", "int_val"}, range_keys(0, 9));
  add(
      "key > 999990",
      [&](Table* t) {
        Preds p;
        p.push_back(cmp(t, "key", Predicate::GREATER, 999990));
        return p;
      },
      {}, range_keys(999991, 999999));
  add("key > 2000000 (nothing)",
      [&](Table* t) {
        Preds p;
        p.push_back(cmp(t, "key", Predicate::GREATER, 2000000));
        return p;
      },
      {}, {});
  add("key IN (...)",
      [&](Table* t) {
        Preds p;
        p.push_back(t->NewInListPredicate(
            "key", {Value::FromInt(3), Value::FromInt(500000), Value::FromInt(999999),
                    Value::FromInt(1000001), Value::FromInt(-5)}));
        return p;
      },
      {}, {3, 500000, 999999});
  add("int_val IN (2, 4, 7)",
      [&](Table* t) {
        Preds p;
        p.push_back(t->NewInListPredicate(
            "int_val", {Value::FromInt(2), Value::FromInt(4), Value::FromInt(7)}));
        return p;
      },
      {"key", "int_val"}, {1, 2});
  add(
      "int_val >= 100 AND int_val < 110",
      [&](Table* t) {
        Preds p;
        p.push_back(cmp(t, "int_val", Predicate::GREATER_EQUAL, 100));
        p.push_back(cmp(t, "int_val", Predicate::LESS, 110));
        return p;
      },
      {}, range_keys(50, 54));
  add(
      "string_val IS NULL AND key < 50",
      [&](Table* t) {
        Preds p;
        p.push_back(t->NewIsNullPredicate("string_val"));
        p.push_back(cmp(t, "key", Predicate::LESS, 50));
        return p;
      },
      {}, null_keys);
  add(
      "string_val IS NOT NULL AND key < 50",
      [&](Table* t) {
        Preds p;
        p.push_back(t->NewIsNotNullPredicate("string_val"));
        p.push_back(cmp(t, "key", Predicate::LESS, 50));
        return p;
      },
      {"key", "string_val"}, not_null_keys);
  add("string_val = 'v778'",
      [&](Table* t) {
        Preds p;
        p.push_back(
            t->NewComparisonPredicate("string_val", Predicate::EQUAL, Value::FromString("v778")));
        return p;
      },
      {}, {778});
  add("string_val IN ('v1', 'v10', 'v777' (NULL row), 'x')",
      [&](Table* t) {
        Preds p;
        p.push_back(t->NewInListPredicate("string_val",
                                          {Value::FromString("v1"), Value::FromString("v10"),
                                           Value::FromString("v777"), Value::FromString("x")}));
        return p;
      },
      {"key", "string_val"}, {1, 10});
  add("key = 5, projection (int_val) only",
      [&](Table* t) {
        Preds p;
        p.push_back(cmp(t, "key", Predicate::EQUAL, 5));
        return p;
      },
      {"int_val"}, {5});

  for (ScanCase& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<std::string> projection =
        c.projection.empty() ? std::vector<std::string>{"key", "int_val", "string_val"}
                             : c.projection;
    auto has = [&](const char* col) {
      return std::find(projection.begin(), projection.end(), col) != projection.end();
    };
    std::vector<Row> want;
    for (int32_t k : c.keys) {
      Row r = Expected(k);
      if (!has("key")) r.key = 0;
      if (!has("int_val")) r.int_val = 0;
      if (!has("string_val")) r.string_val.reset();
      want.push_back(r);
    }
    std::vector<Row> got;
    ASSERT_OK(ScanRows(
        table.get(),
        [&](Scanner* sc) -> absl::Status {
          absl::Status st = sc->SetProjectedColumnNames(projection);
          for (auto& p : c.predicates(table.get())) {
            if (st.ok()) st = sc->AddConjunctPredicate(std::move(p));
          }
          return st;
        },
        &got));
    if (has("key")) got = SortedByKey(std::move(got));
    EXPECT_TRUE(got == want) << Diff(got, want);
  }
}

TEST_F(ClientClusterTest, WriteOperationKindsAndPerRowErrors) {
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("ops", 2, {}, &table));
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  std::map<int32_t, Row> want;
  for (int32_t k = 0; k < 100; ++k) {
    ASSERT_OK(ApplyOp(session.get(), table.get(), WriteOperation::INSERT, Expected(k)));
    want[k] = Expected(k);
  }
  ASSERT_OK(session->Flush());

  auto changed = [](int32_t key) {
    Row r;
    r.key = key;
    r.int_val = key * 2 + 1;
    r.string_val = StrCat("u", key);
    return r;
  };
  struct Step {
    WriteOperation::Type type;
    int32_t key;
    absl::StatusCode error;  // kOk: succeeds.
  };
  const Step steps[] = {
      {WriteOperation::INSERT, 50, absl::StatusCode::kAlreadyExists},
      {WriteOperation::INSERT_IGNORE, 51, absl::StatusCode::kOk},  // Row unchanged.
      {WriteOperation::UPDATE, 200, absl::StatusCode::kNotFound},
      {WriteOperation::UPDATE_IGNORE, 201, absl::StatusCode::kOk},  // Nothing happens.
      {WriteOperation::DELETE, 300, absl::StatusCode::kNotFound},
      {WriteOperation::DELETE_IGNORE, 301, absl::StatusCode::kOk},
      {WriteOperation::UPSERT, 10, absl::StatusCode::kOk},   // Updates.
      {WriteOperation::UPSERT, 500, absl::StatusCode::kOk},  // Inserts.
      {WriteOperation::UPDATE, 20, absl::StatusCode::kOk},
      {WriteOperation::DELETE, 30, absl::StatusCode::kOk},
      {WriteOperation::DELETE_IGNORE, 31, absl::StatusCode::kOk},
      {WriteOperation::UPDATE_IGNORE, 40, absl::StatusCode::kOk},
      {WriteOperation::INSERT_IGNORE, 600, absl::StatusCode::kOk},
  };
  for (const Step& st : steps) {
    ASSERT_OK(ApplyOp(session.get(), table.get(), st.type, changed(st.key)));
  }
  want[10] = changed(10);
  want[500] = changed(500);
  want[20] = changed(20);
  want.erase(30);
  want.erase(31);
  want[40] = changed(40);
  want[600] = changed(600);
  absl::Status flush = session->Flush();
  EXPECT_FALSE(flush.ok()) << "Flush must report that rows failed";
  bool overflowed = true;
  auto errors = session->GetPendingErrors(&overflowed);
  EXPECT_FALSE(overflowed);
  std::map<int32_t, std::pair<WriteOperation::Type, absl::StatusCode>> got_errors;
  for (const auto& e : errors) {
    int32_t key = -1;
    BASALT_EXPECT_OK(e->failed_op().row().GetInt32("key", &key));
    got_errors[key] = {e->failed_op().type(), e->status().code()};
    EXPECT_FALSE(e->was_possibly_successful());
  }
  std::map<int32_t, std::pair<WriteOperation::Type, absl::StatusCode>> want_errors;
  for (const Step& st : steps) {
    if (st.error != absl::StatusCode::kOk) want_errors[st.key] = {st.type, st.error};
  }
  EXPECT_EQ(got_errors, want_errors);
  EXPECT_EQ(session->CountPendingErrors(), 0);

  std::vector<Row> rows;
  ASSERT_OK(ScanRows(table.get(), nullptr, &rows));
  std::vector<Row> want_rows;
  for (const auto& [k, r] : want) want_rows.push_back(r);
  rows = SortedByKey(std::move(rows));
  EXPECT_TRUE(rows == want_rows) << Diff(rows, want_rows);

  // AUTO_FLUSH_SYNC: Apply returns the row's own error.
  auto sync = client_->NewSession();
  ASSERT_OK(sync->SetFlushMode(Session::AUTO_FLUSH_SYNC));
  EXPECT_EQ(ApplyOp(sync.get(), table.get(), WriteOperation::INSERT, Expected(1)).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ApplyOp(sync.get(), table.get(), WriteOperation::DELETE, Expected(30)).code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK(ApplyOp(sync.get(), table.get(), WriteOperation::INSERT, Expected(30)));
}

TEST_F(ClientClusterTest, SnapshotScanRepeatsAcrossRestartOfEveryProcess) {
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("snap", 2, {5000}, &table));
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::AUTO_FLUSH_BACKGROUND));
  for (int32_t k = 0; k < 10000; ++k) {
    ASSERT_OK(ApplyOp(session.get(), table.get(), WriteOperation::INSERT, Expected(k)));
  }
  ASSERT_OK(session->Flush());

  std::vector<Row> before;
  uint64_t snapshot = 0;
  ASSERT_OK(ScanRows(
      table.get(), [](Scanner* sc) { return sc->SetReadMode(Scanner::READ_AT_SNAPSHOT); }, &before,
      &snapshot));
  ASSERT_NE(snapshot, 0u);
  before = SortedByKey(std::move(before));
  ASSERT_EQ(before.size(), 10000u);

  // Changes after the snapshot: updates, deletes and inserts.
  for (int32_t k = 0; k < 100; ++k) {
    Row r = Expected(k);
    r.int_val = -1;
    ASSERT_OK(ApplyOp(session.get(), table.get(), WriteOperation::UPDATE, r));
    ASSERT_OK(ApplyOp(session.get(), table.get(), WriteOperation::DELETE, Expected(100 + k)));
  }
  for (int32_t k = 10000; k < 11000; ++k) {
    ASSERT_OK(ApplyOp(session.get(), table.get(), WriteOperation::INSERT, Expected(k)));
  }
  ASSERT_OK(session->Flush());
  session.reset();

  auto snapshot_scan = [&](std::vector<Row>* rows) {
    return ScanRows(
        table.get(),
        [&](Scanner* sc) -> absl::Status {
          absl::Status st = sc->SetReadMode(Scanner::READ_AT_SNAPSHOT);
          if (st.ok()) st = sc->SetSnapshotRaw(snapshot);
          return st;
        },
        rows);
  };
  std::vector<Row> again;
  ASSERT_OK(snapshot_scan(&again));
  again = SortedByKey(std::move(again));
  EXPECT_TRUE(again == before) << "before restart: " << Diff(again, before);

  const absl::Time t0 = absl::Now();
  ASSERT_OK(cluster_->Restart());
  LOG(INFO) << "restarted every process in " << absl::FormatDuration(absl::Now() - t0);
  again.clear();
  ASSERT_OK(snapshot_scan(&again));
  again = SortedByKey(std::move(again));
  EXPECT_TRUE(again == before) << "after restart: " << Diff(again, before);

  std::vector<Row> latest;
  ASSERT_OK(ScanRows(table.get(), nullptr, &latest));
  latest = SortedByKey(std::move(latest));
  std::vector<Row> want;
  for (int32_t k = 0; k < 11000; ++k) {
    if (k >= 100 && k < 200) continue;
    Row r = Expected(k);
    if (k < 100) r.int_val = -1;
    want.push_back(r);
  }
  EXPECT_TRUE(latest == want) << Diff(latest, want);
}

// Session::TryApply buffers without waiting or leaves the operation for Apply; row errors are
// Apply's.
TEST_F(ClientClusterTest, TryApplyBuffersRoutedRowsAndLeavesTheRestToApply) {
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("try_apply", 0, {}, &table));
  auto insert = [&](int32_t key) {
    auto op = table->NewInsert();
    BASALT_EXPECT_OK(op->mutable_row()->SetInt32("key", key));
    BASALT_EXPECT_OK(op->mutable_row()->SetInt32("int_val", 2 * key));
    return op;
  };
  auto session = client_->NewSession();  // AUTO_FLUSH_SYNC: every row waits, so none is taken.
  std::unique_ptr<WriteOperation> op = insert(0);
  bool applied = true;
  ASSERT_OK(session->TryApply(&op, &applied));
  EXPECT_FALSE(applied);
  ASSERT_NE(op, nullptr);
  ASSERT_OK(session->Apply(std::move(op)));  // Also caches the tablet's location.

  ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  for (int32_t key = 1; key <= 10; ++key) {
    op = insert(key);
    ASSERT_OK(session->TryApply(&op, &applied));
    EXPECT_TRUE(applied) << key;
    EXPECT_EQ(op, nullptr) << key;
  }
  EXPECT_EQ(session->CountBufferedOperations(), 10);
  op = table->NewInsert();  // No key: Apply's error, and the operation is consumed.
  ASSERT_OK(op->mutable_row()->SetInt32("int_val", 1));
  absl::Status s = session->TryApply(&op, &applied);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(op, nullptr);
  ASSERT_OK(session->Flush());

  ASSERT_OK(session->SetMutationBufferSpace(1));  // Full after one row: MANUAL_FLUSH refuses.
  op = insert(11);
  ASSERT_OK(session->TryApply(&op, &applied));
  op = insert(12);
  s = session->TryApply(&op, &applied);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  ASSERT_OK(session->Flush());
  std::vector<Row> rows;
  ASSERT_OK(ScanRows(table.get(), nullptr, &rows));
  EXPECT_EQ(rows.size(), 12u);
}

}  // namespace client_cluster_test_file
}  // namespace
}  // namespace basalt::client_test
