// Writers that outlive ALTER TABLE (issue 15 item 2): a session writing through a table handle
// opened before a schema change keeps writing; the client re-encodes its rows for the new schema
// (columns matched by id) and fails only rows that set a dropped column, alone and saying why.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "testing/wait.h"
#include "tests/client_test_util.h"

namespace basalt::client_test {
namespace {
namespace client_alter_writer_test_file {

using client::ColumnSchema;
using client::Session;
using client::Table;
using client::Value;
using client::WriteOperation;

using ClientAlterWriterTest = ClientClusterTestBase;

// Inserts Expected(k) for k = 0, 1, ... through one AUTO_FLUSH_BACKGROUND session on the table
// handle it was given (never reopened), and after every 20th insert updates an earlier row's
// int_val to -key. Collects every per-row error.
class AlterWriter {
 public:
  explicit AlterWriter(std::shared_ptr<Table> table) : table_(std::move(table)) {}
  ~AlterWriter() { Stop(); }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int32_t inserted() const { return inserted_.load(); }
  // Waits until `n` more rows than now were inserted (applied to the session).
  absl::Status WaitForMore(int32_t n) const {
    const int32_t target = inserted() + n;
    return WaitFor(absl::Seconds(60), StrCat(target, " inserted rows"), [&] {
      const int32_t now = inserted();
      return now >= target ? absl::OkStatus() : absl::UnavailableError(StrCat(now, " so far"));
    });
  }
  std::vector<std::string> errors() const {
    absl::MutexLock l(&mu_);
    return errors_;
  }
  absl::Status status() const {
    absl::MutexLock l(&mu_);
    return status_;
  }

 private:
  void Run() {
    auto session = table_->client()->NewSession();
    absl::Status s = session->SetFlushMode(Session::AUTO_FLUSH_BACKGROUND);
    if (s.ok()) s = session->SetMutationBufferFlushInterval(50);
    for (int32_t k = 0; s.ok() && !stop_; ++k) {
      s = ApplyOp(session.get(), table_.get(), WriteOperation::INSERT, Expected(k));
      if (s.ok() && k % 20 == 19) {
        Row updated = Expected(k - 10);
        updated.int_val = -updated.key;
        s = ApplyOp(session.get(), table_.get(), WriteOperation::UPDATE, updated);
      }
      if (s.ok()) inserted_ = k + 1;
      // ~10,000 rows a second: the alters land between many small batches.
      if (k % 10 == 9) absl::SleepFor(absl::Milliseconds(1));
    }
    if (s.ok()) s = session->Flush();
    if (absl::IsUnknown(s)) s = absl::OkStatus();  // "N operation(s) failed": listed below.
    absl::MutexLock l(&mu_);
    status_ = s;
    for (const auto& e : session->GetPendingErrors()) {
      errors_.push_back(StrCat(e->failed_op().ToString(), ": ", e->status().ToString()));
    }
  }

  const std::shared_ptr<Table> table_;
  std::atomic<bool> stop_{false};
  std::atomic<int32_t> inserted_{0};
  std::thread thread_;
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> errors_ ABSL_GUARDED_BY(mu_);
};

TEST_F(ClientAlterWriterTest, AWriterKeepsWritingThroughAddDropRenameColumnAndRenameTable) {
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("alter_me", 3, {}, &table));
  {  // A column the writer never sets, dropped while it runs.
    auto alterer = client_->NewTableAlterer("alter_me");
    alterer->AddColumn("extra")->Type(ColumnSchema::INT64)->Nullable();
    ASSERT_OK(alterer->Alter());
  }
  std::shared_ptr<Table> with_extra;  // Opened before "extra" is dropped.
  ASSERT_OK(client_->OpenTable("alter_me", &with_extra));

  AlterWriter writer(table);
  writer.Start();
  ASSERT_OK(writer.WaitForMore(2000));
  {
    auto alterer = client_->NewTableAlterer("alter_me");
    alterer->AddColumn("added")->Type(ColumnSchema::INT32)->NotNull()->Default(Value::FromInt(5));
    alterer->AddColumn("note")->Type(ColumnSchema::STRING)->Nullable();
    ASSERT_OK(alterer->Alter());
  }
  ASSERT_OK(writer.WaitForMore(2000));
  {
    auto alterer = client_->NewTableAlterer("alter_me");
    alterer->AlterColumn("string_val")->RenameTo("label");
    ASSERT_OK(alterer->Alter());
  }
  ASSERT_OK(writer.WaitForMore(2000));
  {
    auto alterer = client_->NewTableAlterer("alter_me");
    alterer->RenameTo("altered");
    ASSERT_OK(alterer->Alter());
  }
  ASSERT_OK(writer.WaitForMore(2000));
  {
    auto alterer = client_->NewTableAlterer("altered");
    alterer->DropColumn("extra");
    ASSERT_OK(alterer->Alter());
  }
  ASSERT_OK(writer.WaitForMore(2000));
  writer.Stop();
  ASSERT_OK(writer.status());
  EXPECT_TRUE(writer.errors().empty())
      << writer.errors().size() << " rows failed, first: " << writer.errors()[0];
  const int32_t rows = writer.inserted();
  LOG(INFO) << rows << " rows written through five schema versions";

  // A row that sets the dropped column fails alone, saying why; its neighbour is written.
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  auto bad = with_extra->NewInsert();
  ASSERT_OK(bad->mutable_row()->SetInt32("key", rows));
  ASSERT_OK(bad->mutable_row()->SetInt32("int_val", 1));
  ASSERT_OK(bad->mutable_row()->SetInt64("extra", 7));
  ASSERT_OK(session->Apply(std::move(bad)));
  ASSERT_OK(ApplyOp(session.get(), with_extra.get(), WriteOperation::INSERT, Expected(rows + 1)));
  EXPECT_EQ(session->Flush().code(), absl::StatusCode::kUnknown);
  auto errors = session->GetPendingErrors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]->status().code(), absl::StatusCode::kInvalidArgument) << errors[0]->status();
  EXPECT_NE(errors[0]->status().message().find("column 'extra' was dropped"), std::string::npos)
      << errors[0]->status();
  EXPECT_NE(errors[0]->failed_op().ToString().find("extra=7"), std::string::npos)
      << errors[0]->failed_op().ToString();

  // Every row is there with its values under the new names; the added column has its default.
  std::shared_ptr<Table> altered;
  ASSERT_OK(client_->OpenTable("altered", &altered));
  client::Scanner scanner(altered.get());
  ASSERT_OK(scanner.SetProjectedColumnNames({"key", "int_val", "label", "added"}));
  ASSERT_OK(scanner.SetFaultTolerant());
  ASSERT_OK(scanner.Open());
  std::vector<bool> seen(rows + 2, false);
  client::ScanBatch batch;
  int64_t count = 0;
  while (scanner.HasMoreRows()) {
    ASSERT_OK(scanner.NextBatch(&batch));
    for (int64_t i = 0; i < batch.NumRows(); ++i, ++count) {
      const int32_t key = static_cast<const int32_t*>(batch.Column(0).data)[i];
      ASSERT_TRUE(key >= 0 && key <= rows + 1 && key != rows) << "unexpected key " << key;
      ASSERT_FALSE(seen[key]) << "key " << key << " twice";
      seen[key] = true;
      Row want = Expected(key);
      // Updated rows: every 20th insert k updated k - 10; the last few may not have been.
      const bool updated = key + 10 < rows && (key + 10) % 20 == 19;
      const int32_t int_val = static_cast<const int32_t*>(batch.Column(1).data)[i];
      if (updated) {
        EXPECT_EQ(int_val, -key) << "key " << key;
      } else {
        EXPECT_EQ(int_val, want.int_val) << "key " << key;
      }
      client::ScanBatch::ColumnView label = batch.Column(2);
      if (want.string_val) {
        ASSERT_FALSE(label.IsNull(i)) << "key " << key;
        EXPECT_EQ(label.GetString(i), *want.string_val) << "key " << key;
      } else {
        EXPECT_TRUE(label.IsNull(i)) << "key " << key;
      }
      EXPECT_EQ(static_cast<const int32_t*>(batch.Column(3).data)[i], 5) << "key " << key;
    }
  }
  EXPECT_EQ(count, rows + 1);
}

// A client that cached a tablet's location before its range partition was dropped (by itself or
// by another client) skips the dropped range when it scans: plain, concurrent and aggregate scans
// all read the rows of the ranges that remain, and a write into the gap fails alone.
TEST_F(ClientAlterWriterTest, ScansSkipARangeDroppedAfterItsLocationWasCached) {
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("ranges", 0, {100, 200}, &table));
  auto session = client_->NewSession();
  for (int32_t key : {10, 150, 250}) {
    ASSERT_OK(ApplyOp(session.get(), table.get(), WriteOperation::INSERT, Expected(key)));
  }
  std::vector<Row> rows;
  ASSERT_OK(ScanRows(table.get(), nullptr, &rows));  // Caches every tablet's location.
  ASSERT_EQ(rows.size(), 3u);

  auto alterer = client_->NewTableAlterer("ranges");
  auto lower = table->schema().NewRow();
  auto upper = table->schema().NewRow();
  ASSERT_OK(lower->SetInt32("key", 100));
  ASSERT_OK(upper->SetInt32("key", 200));
  alterer->DropRangePartition(std::move(lower), std::move(upper));
  ASSERT_OK(alterer->Alter());
  // The dropped tablet's replicas are deleted after the alter: until then a scan may still read
  // it (as in Kudu). This test is about the time after.
  ASSERT_OK(WaitFor(absl::Seconds(30), "the dropped tablet's deletion", [&] {
    const size_t n = TabletIds("ranges").size();
    return n == 2 ? absl::OkStatus() : absl::UnavailableError(StrCat(n, " tablets"));
  }));

  for (int tablets : {1, 3}) {
    rows.clear();
    ASSERT_OK(ScanRows(
        table.get(), [&](client::Scanner* s) { return s->SetMaxConcurrentTablets(tablets); },
        &rows));
    std::vector<int32_t> keys;
    for (const Row& r : rows) keys.push_back(r.key);
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(keys, (std::vector<int32_t>{10, 250})) << tablets << " tablet(s) at once";
  }
  client::Scanner count(table.get());
  ASSERT_OK(count.AddAggregate(client::Scanner::COUNT_ALL, ""));
  ASSERT_OK(count.Open());
  client::ScanBatch batch;
  int64_t counted = -1;
  while (count.HasMoreRows()) {
    ASSERT_OK(count.NextBatch(&batch));
    if (batch.NumRows() > 0) {
      ASSERT_OK(batch.Row(0).GetInt64(0, &counted));
    }
  }
  EXPECT_EQ(counted, 2);

  ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  // Its lookup fails in Apply (which buffers nothing and collects the error).
  ASSERT_OK(ApplyOp(session.get(), table.get(), WriteOperation::INSERT, Expected(160)));
  ASSERT_OK(session->Flush());
  auto errors = session->GetPendingErrors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]->status().code(), absl::StatusCode::kNotFound) << errors[0]->status();
}

}  // namespace client_alter_writer_test_file
}  // namespace
}  // namespace basalt::client_test
