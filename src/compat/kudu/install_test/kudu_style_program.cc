// A program written against Kudu's C++ client API (kudu/client/client.h), compiled against the
// installed Basalt Kudu-compatibility headers only and run against a local cluster:
//   kudu_style_program <master address>
// It covers DDL (range partitions, splits, hash, alter, rename, delete), the three flush modes,
// the error collector, FlushAsync with a callback, every write operation, predicates, a
// fault-tolerant ordered scan and a columnar scan. Exits 1 with a message on any wrong result.

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kudu/client/callbacks.h"
#include "kudu/client/client.h"
#include "kudu/client/columnar_scan_batch.h"
#include "kudu/client/row_result.h"
#include "kudu/client/stubs.h"
#include "kudu/client/value.h"
#include "kudu/client/write_op.h"
#include "kudu/common/partial_row.h"
#include "kudu/util/monotime.h"
#include "kudu/util/slice.h"
#include "kudu/util/status.h"

using kudu::KuduPartialRow;
using kudu::MonoDelta;
using kudu::Slice;
using kudu::Status;
using kudu::client::KuduClient;
using kudu::client::KuduClientBuilder;
using kudu::client::KuduColumnarScanBatch;
using kudu::client::KuduColumnSchema;
using kudu::client::KuduError;
using kudu::client::KuduInsert;
using kudu::client::KuduPredicate;
using kudu::client::KuduRowResult;
using kudu::client::KuduScanBatch;
using kudu::client::KuduScanner;
using kudu::client::KuduSchema;
using kudu::client::KuduSchemaBuilder;
using kudu::client::KuduSession;
using kudu::client::KuduStatusCallback;
using kudu::client::KuduStatusMemberCallback;
using kudu::client::KuduTable;
using kudu::client::KuduTableAlterer;
using kudu::client::KuduTableCreator;
using kudu::client::KuduValue;
using kudu::client::KuduWriteOperation;
using kudu::client::sp::shared_ptr;

// Assertions: print what went wrong (with the status) and exit 1.
#define EXPECT_OK(expr)                                                              \
  do {                                                                               \
    const Status _s = (expr);                                                        \
    if (!_s.ok()) Fail(__LINE__, std::string(#expr) + " returned " + _s.ToString()); \
  } while (0)
#define EXPECT_TRUE(cond, what)                                      \
  do {                                                               \
    if (!(cond)) Fail(__LINE__, std::string(#cond) + ": " + (what)); \
  } while (0)

[[noreturn]] void Fail(int line, const std::string& msg) {
  std::fprintf(stderr, "kudu_style_program:%d: FAILED: %s\n", line, msg.c_str());
  std::exit(1);
}

constexpr int kInitialRows = 10000;    // Keys [0, 10000), MANUAL_FLUSH.
constexpr int kBackgroundRows = 1000;  // Keys [10000, 11000), AUTO_FLUSH_BACKGROUND upserts.
constexpr int kTablets = 2 * 5;        // 2 hash buckets x (4 initial ranges + 1 added).

KuduSchema CreateSchema() {
  KuduSchema schema;
  KuduSchemaBuilder b;
  b.AddColumn("key")->Type(KuduColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("int_val")->Type(KuduColumnSchema::INT32)->NotNull();
  b.AddColumn("string_val")->Type(KuduColumnSchema::STRING)->Nullable();
  b.AddColumn("non_null_with_default")
      ->Type(KuduColumnSchema::INT32)
      ->NotNull()
      ->Default(KuduValue::FromInt(12345));
  KUDU_CHECK_OK(b.Build(&schema));
  return schema;
}

KuduPartialRow* KeyRow(const KuduSchema& schema, int key) {
  KuduPartialRow* row = schema.NewRow();
  KUDU_CHECK_OK(row->SetInt32("key", key));
  return row;
}

void CreateTable(const shared_ptr<KuduClient>& client, const std::string& name,
                 const KuduSchema& schema) {
  KuduTableCreator* creator = client->NewTableCreator();
  creator->table_name(name)
      .schema(&schema)
      .add_hash_partitions({"key"}, 2)
      .set_range_partition_columns({"key"})
      .add_range_partition(KeyRow(schema, 0), KeyRow(schema, kInitialRows))
      .num_replicas(3)
      .timeout(MonoDelta::FromSeconds(30));
  for (int split = 2500; split < kInitialRows; split += 2500) {
    creator->add_range_partition_split(KeyRow(schema, split));
  }
  EXPECT_OK(creator->Create());
  delete creator;

  // The same name again: AlreadyPresent.
  std::unique_ptr<KuduTableCreator> again(client->NewTableCreator());
  Status s = again->table_name(name).schema(&schema).Create();
  EXPECT_TRUE(s.IsAlreadyPresent(), s.ToString());
  bool in_progress = true;
  EXPECT_OK(client->IsCreateTableInProgress(name, &in_progress));
  EXPECT_TRUE(!in_progress, "create still in progress");
}

void AlterTable(const shared_ptr<KuduClient>& client, const std::string& name,
                const std::string& new_name) {
  const KuduSchema schema = CreateSchema();
  std::unique_ptr<KuduTableAlterer> alterer(client->NewTableAlterer(name));
  alterer->AddColumn("another_val")->Type(KuduColumnSchema::BOOL);
  alterer->AddColumn("tmp")
      ->Type(KuduColumnSchema::INT32)
      ->NotNull()
      ->Default(KuduValue::FromInt(5));
  alterer->AddRangePartition(KeyRow(schema, kInitialRows),
                             KeyRow(schema, kInitialRows + kBackgroundRows));
  EXPECT_OK(alterer->Alter());

  alterer.reset(client->NewTableAlterer(name));
  alterer->AlterColumn("tmp")->RenameTo("tmp2");
  alterer->RenameTo(new_name);
  EXPECT_OK(alterer->Alter());

  KuduSchema got;
  EXPECT_OK(client->GetTableSchema(new_name, &got));
  EXPECT_TRUE(got.HasColumn("tmp2", nullptr) && !got.HasColumn("tmp", nullptr), got.ToString());
  Status s = client->GetTableSchema(name, &got);
  EXPECT_TRUE(s.IsNotFound(), s.ToString());

  alterer.reset(client->NewTableAlterer(new_name));
  alterer->DropColumn("tmp2");
  EXPECT_OK(alterer->Alter());
  EXPECT_OK(client->GetTableSchema(new_name, &got));
  EXPECT_TRUE(got.num_columns() == 5 && !got.HasColumn("tmp2", nullptr), got.ToString());

  // What Basalt cannot store is refused, not dropped silently.
  alterer.reset(client->NewTableAlterer(new_name));
  s = alterer->SetOwner("someone")->Alter();
  EXPECT_TRUE(s.IsNotSupported(), s.ToString());
}

void InsertManualFlush(const shared_ptr<KuduTable>& table) {
  shared_ptr<KuduSession> session = table->client()->NewSession();
  EXPECT_OK(session->SetFlushMode(KuduSession::MANUAL_FLUSH));
  EXPECT_OK(session->SetExternalConsistencyMode(KuduSession::CLIENT_PROPAGATED));
  session->SetTimeoutMillis(30000);
  for (int i = 0; i < kInitialRows; i++) {
    KuduInsert* insert = table->NewInsert();
    KuduPartialRow* row = insert->mutable_row();
    KUDU_CHECK_OK(row->SetInt32("key", i));
    KUDU_CHECK_OK(row->SetInt32("int_val", i * 2));
    if (i % 2 == 0) KUDU_CHECK_OK(row->SetStringCopy("string_val", "s" + std::to_string(i)));
    KUDU_CHECK_OK(row->SetInt32("non_null_with_default", i * 5));
    EXPECT_OK(session->Apply(insert));
    if (i % 1000 == 999) EXPECT_OK(session->Flush());
  }
  EXPECT_OK(session->Flush());
  EXPECT_TRUE(!session->HasPendingOperations(), "operations left after Flush");
  EXPECT_TRUE(session->CountPendingErrors() == 0, "unexpected errors");

  // Duplicates go to the error collector; Flush reports them as an IOError.
  for (int i = 0; i < 10; i++) {
    KuduInsert* insert = table->NewInsert();
    KUDU_CHECK_OK(insert->mutable_row()->SetInt32("key", i));
    KUDU_CHECK_OK(insert->mutable_row()->SetInt32("int_val", 0));
    EXPECT_OK(session->Apply(insert));
  }
  // A row without its key fails in Apply and is kept with the errors too.
  KuduInsert* keyless = table->NewInsert();
  KUDU_CHECK_OK(keyless->mutable_row()->SetInt32("int_val", 0));
  Status s = session->Apply(keyless);
  EXPECT_TRUE(s.IsIllegalState(), s.ToString());
  s = session->Flush();
  EXPECT_TRUE(s.IsIOError(), s.ToString());
  EXPECT_TRUE(session->CountPendingErrors() == 11,
              std::to_string(session->CountPendingErrors()) + " errors");
  std::vector<KuduError*> errors;
  bool overflowed = true;
  session->GetPendingErrors(&errors, &overflowed);
  EXPECT_TRUE(!overflowed && errors.size() == 11, std::to_string(errors.size()));
  std::set<int> dup_keys;
  int illegal = 0;
  for (KuduError* e : errors) {
    if (e->status().IsIllegalState()) {
      illegal++;
    } else {
      EXPECT_TRUE(e->status().IsAlreadyPresent(), e->status().ToString());
      EXPECT_TRUE(e->failed_op().ToString().find("INSERT int32 key=") == 0,
                  e->failed_op().ToString());
      EXPECT_TRUE(e->failed_op().table() != nullptr, "failed op without table");
      int32_t key = -1;
      EXPECT_OK(e->failed_op().row().GetInt32("key", &key));
      dup_keys.insert(key);
      EXPECT_TRUE(!e->was_possibly_successful(), "a duplicate key is definite");
    }
    std::unique_ptr<KuduWriteOperation> op(e->release_failed_op());
    delete e;
  }
  EXPECT_TRUE(illegal == 1 && dup_keys.size() == 10 && *dup_keys.rbegin() == 9,
              "wrong failed operations");
  EXPECT_TRUE(session->CountPendingErrors() == 0, "errors left after GetPendingErrors");
  EXPECT_OK(session->Close());
}

// Signals the waiting thread when FlushAsync's callback ran, and on which thread.
class FlushWaiter {
 public:
  void Done(const Status& s) {
    std::lock_guard<std::mutex> l(mu_);
    status_ = s;
    thread_ = std::this_thread::get_id();
    done_ = true;
    cv_.notify_all();
  }
  bool Wait(Status* s, std::thread::id* thread) {
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, std::chrono::seconds(30), [this] { return done_; })) return false;
    *s = status_;
    *thread = thread_;
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Status status_;
  std::thread::id thread_;
};

void UpsertInBackground(const shared_ptr<KuduTable>& table) {
  shared_ptr<KuduSession> session = table->client()->NewSession();
  EXPECT_OK(session->SetFlushMode(KuduSession::AUTO_FLUSH_BACKGROUND));
  EXPECT_OK(session->SetMutationBufferSpace(1 << 20));
  EXPECT_OK(session->SetMutationBufferFlushWatermark(0.5));
  EXPECT_OK(session->SetMutationBufferFlushInterval(100));
  for (int i = kInitialRows; i < kInitialRows + kBackgroundRows; i++) {
    auto* upsert = table->NewUpsert();
    KUDU_CHECK_OK(upsert->mutable_row()->SetInt32(0, i));
    KUDU_CHECK_OK(upsert->mutable_row()->SetInt32(1, i * 2));
    EXPECT_OK(session->Apply(upsert));  // non_null_with_default takes its default.
  }
  FlushWaiter waiter;
  KuduStatusMemberCallback<FlushWaiter> cb(&waiter, &FlushWaiter::Done);
  session->FlushAsync(&cb);
  Status s;
  std::thread::id thread;
  EXPECT_TRUE(waiter.Wait(&s, &thread), "FlushAsync's callback did not run within 30 s");
  EXPECT_OK(s);
  EXPECT_TRUE(thread != std::this_thread::get_id(), "callback ran on the caller's thread");
  EXPECT_TRUE(session->CountPendingErrors() == 0, "errors after background upserts");
}

// FlushAsync, then at once the session, the table and the client are dropped: the callback still
// runs (Basalt may complete the flush after they are gone), on a live callback thread.
void FlushAsyncThenDropEverything(const std::string& master, const std::string& table_name) {
  shared_ptr<KuduClient> client;
  EXPECT_OK(KuduClientBuilder().add_master_server_addr(master).Build(&client));
  shared_ptr<KuduTable> table;
  EXPECT_OK(client->OpenTable(table_name, &table));
  shared_ptr<KuduSession> session = client->NewSession();
  EXPECT_OK(session->SetFlushMode(KuduSession::MANUAL_FLUSH));
  for (int i = 0; i < 10; i++) {
    auto* upsert = table->NewUpsert();
    KUDU_CHECK_OK(upsert->mutable_row()->SetInt32(0, i));
    KUDU_CHECK_OK(upsert->mutable_row()->SetInt32(1, i * 2));
    EXPECT_OK(session->Apply(upsert));
  }
  FlushWaiter waiter;
  KuduStatusMemberCallback<FlushWaiter> cb(&waiter, &FlushWaiter::Done);
  session->FlushAsync(&cb);
  session.reset();
  table.reset();
  client.reset();
  Status s;
  std::thread::id thread;
  EXPECT_TRUE(waiter.Wait(&s, &thread), "FlushAsync's callback did not run within 30 s");
  EXPECT_OK(s);
}

void MutateSync(const shared_ptr<KuduTable>& table) {
  shared_ptr<KuduSession> session = table->client()->NewSession();  // AUTO_FLUSH_SYNC.
  for (int i = 0; i < 100; i++) {
    auto* update = table->NewUpdate();
    KUDU_CHECK_OK(update->mutable_row()->SetInt32("key", i));
    KUDU_CHECK_OK(update->mutable_row()->SetInt32("int_val", -1));
    EXPECT_OK(session->Apply(update));
  }
  for (int i = 100; i < 200; i++) {
    auto* del = table->NewDelete();
    KUDU_CHECK_OK(del->mutable_row()->SetInt32("key", i));
    EXPECT_OK(session->Apply(del));
  }
  // The *Ignore forms succeed where the plain ones fail.
  auto* del_ignore = table->NewDeleteIgnore();
  KUDU_CHECK_OK(del_ignore->mutable_row()->SetInt32("key", 150));
  EXPECT_OK(session->Apply(del_ignore));
  auto* upd_ignore = table->NewUpdateIgnore();
  KUDU_CHECK_OK(upd_ignore->mutable_row()->SetInt32("key", 150));
  KUDU_CHECK_OK(upd_ignore->mutable_row()->SetInt32("int_val", 1));
  EXPECT_OK(session->Apply(upd_ignore));
  auto* ins_ignore = table->NewInsertIgnore();
  KUDU_CHECK_OK(ins_ignore->mutable_row()->SetInt32("key", 1));
  KUDU_CHECK_OK(ins_ignore->mutable_row()->SetInt32("int_val", 1));
  EXPECT_OK(session->Apply(ins_ignore));
  auto* ups_ignore = table->NewUpsertIgnore();
  KUDU_CHECK_OK(ups_ignore->mutable_row()->SetInt32("key", 2));
  KUDU_CHECK_OK(ups_ignore->mutable_row()->SetInt32("int_val", -1));
  EXPECT_OK(session->Apply(ups_ignore));

  // A failing row in AUTO_FLUSH_SYNC: IOError from Apply, the row's error in the collector.
  auto* dup = table->NewInsert();
  KUDU_CHECK_OK(dup->mutable_row()->SetInt32("key", 3));
  KUDU_CHECK_OK(dup->mutable_row()->SetInt32("int_val", 0));
  Status s = session->Apply(dup);
  EXPECT_TRUE(s.IsIOError(), s.ToString());
  std::vector<KuduError*> errors;
  session->GetPendingErrors(&errors, nullptr);
  EXPECT_TRUE(errors.size() == 1 && errors[0]->status().IsAlreadyPresent(),
              errors.empty() ? "no error" : errors[0]->status().ToString());
  for (KuduError* e : errors) delete e;
}

// Scans with `preds` (owned by the scanner), returning the number of rows.
int CountRows(const shared_ptr<KuduTable>& table, std::vector<KuduPredicate*> preds) {
  KuduScanner scanner(table.get());
  for (KuduPredicate* p : preds) EXPECT_OK(scanner.AddConjunctPredicate(p));
  EXPECT_OK(scanner.SetProjectedColumnNames({}));
  EXPECT_OK(scanner.Open());
  KuduScanBatch batch;
  int n = 0;
  while (scanner.HasMoreRows()) {
    EXPECT_OK(scanner.NextBatch(&batch));
    n += batch.NumRows();
  }
  return n;
}

constexpr int kExpectedRows = kInitialRows + kBackgroundRows - 100;  // 100 deleted.

void ScanOrdered(const shared_ptr<KuduTable>& table) {
  KuduScanner scanner(table.get());
  EXPECT_OK(scanner.SetSelection(KuduClient::LEADER_ONLY));
  EXPECT_OK(scanner.SetFaultTolerant());
  EXPECT_OK(scanner.SetBatchSizeBytes(64 * 1024));
  EXPECT_OK(scanner.Open());
  KuduScanBatch batch;
  int count = 0, last = -1, nulls = 0, descents = 0;
  std::set<int> seen;
  while (scanner.HasMoreRows()) {
    EXPECT_OK(scanner.NextBatch(&batch));
    for (KuduScanBatch::const_iterator it = batch.begin(); it != batch.end(); ++it) {
      KuduScanBatch::RowPtr row(*it);
      int32_t key, int_val, dflt;
      EXPECT_OK(row.GetInt32("key", &key));
      EXPECT_OK(row.GetInt32(1, &int_val));
      EXPECT_OK(row.GetInt32("non_null_with_default", &dflt));
      // Ordered per tablet, tablets one after the other (hash buckets make the key order
      // restart once per tablet).
      if (key < last) descents++;
      EXPECT_TRUE(seen.insert(key).second, "returned twice: " + std::to_string(key));
      last = key;
      const int want_val = key < 100 ? -1 : key * 2;
      EXPECT_TRUE(int_val == want_val, row.ToString());
      const int want_dflt = key < kInitialRows ? key * 5 : 12345;  // KuduValue default.
      EXPECT_TRUE(dflt == want_dflt, row.ToString());
      EXPECT_TRUE(row.IsNull("another_val"), row.ToString());
      if (row.IsNull("string_val")) {
        nulls++;
      } else {
        Slice s;
        EXPECT_OK(row.GetString("string_val", &s));
        EXPECT_TRUE(s == Slice("s" + std::to_string(key)), row.ToString());
      }
      count++;
    }
  }
  EXPECT_TRUE(count == kExpectedRows, std::to_string(count) + " rows");
  EXPECT_TRUE(descents < kTablets, std::to_string(descents) + " restarts of the key order");
  EXPECT_TRUE(batch.projection_schema() != nullptr && batch.projection_schema()->num_columns() == 5,
              "projection schema");
  // Odd keys below 10000 (minus 50 deleted) and all background rows have no string.
  EXPECT_TRUE(nulls == kInitialRows / 2 - 50 + kBackgroundRows, std::to_string(nulls));
}

void ScanWithPredicates(const shared_ptr<KuduTable>& table) {
  auto cmp = [&](const char* col, KuduPredicate::ComparisonOp op, int64_t v) {
    return table->NewComparisonPredicate(col, op, KuduValue::FromInt(v));
  };
  int n = CountRows(
      table, {cmp("key", KuduPredicate::GREATER_EQUAL, 500), cmp("key", KuduPredicate::LESS, 600)});
  EXPECT_TRUE(n == 100, std::to_string(n));
  n = CountRows(table, {cmp("int_val", KuduPredicate::EQUAL, -1)});
  EXPECT_TRUE(n == 100, std::to_string(n));
  std::vector<KuduValue*> in = {KuduValue::FromInt(1), KuduValue::FromInt(5),
                                KuduValue::FromInt(150), KuduValue::FromInt(10005)};
  n = CountRows(table, {table->NewInListPredicate("key", &in)});
  EXPECT_TRUE(n == 3 && in.empty(), std::to_string(n));
  n = CountRows(table, {table->NewIsNullPredicate("string_val")});
  EXPECT_TRUE(n == kInitialRows / 2 - 50 + kBackgroundRows, std::to_string(n));
  n = CountRows(table, {table->NewIsNotNullPredicate("string_val")});
  EXPECT_TRUE(n == kInitialRows / 2 - 50, std::to_string(n));
  // The background rows took the KuduValue default; so did no other row but key 2469 (x5).
  n = CountRows(table, {cmp("non_null_with_default", KuduPredicate::EQUAL, 12345)});
  EXPECT_TRUE(n == kBackgroundRows + 1, std::to_string(n));
  // A predicate on an unknown column fails in AddConjunctPredicate.
  KuduScanner scanner(table.get());
  Status s = scanner.AddConjunctPredicate(cmp("nope", KuduPredicate::EQUAL, 1));
  EXPECT_TRUE(!s.ok(), "predicate on an unknown column accepted");

  // Key bounds, a limit and the deprecated row vector.
  KuduScanner bounded(table.get());
  std::unique_ptr<KuduPartialRow> lower(table->schema().NewRow());
  KUDU_CHECK_OK(lower->SetInt32("key", 9990));
  std::unique_ptr<KuduPartialRow> upper(table->schema().NewRow());
  KUDU_CHECK_OK(upper->SetInt32("key", 10010));
  EXPECT_OK(bounded.AddLowerBound(*lower));
  EXPECT_OK(bounded.AddExclusiveUpperBound(*upper));
  EXPECT_OK(bounded.SetProjectedColumnIndexes({0}));
  EXPECT_OK(bounded.Open());
  int rows = 0;
  std::vector<KuduRowResult> results;
  while (bounded.HasMoreRows()) {
    EXPECT_OK(bounded.NextBatch(&results));
    rows += static_cast<int>(results.size());
  }
  EXPECT_TRUE(rows == 20, std::to_string(rows));
}

void ScanColumnar(const shared_ptr<KuduTable>& table) {
  KuduScanner scanner(table.get());
  EXPECT_OK(scanner.SetProjectedColumnNames({"key", "string_val"}));
  EXPECT_OK(scanner.SetRowFormatFlags(KuduScanner::COLUMNAR_LAYOUT));
  EXPECT_OK(scanner.Open());
  KuduColumnarScanBatch batch;
  int rows = 0, non_null = 0;
  int64_t key_sum = 0;
  while (scanner.HasMoreRows()) {
    EXPECT_OK(scanner.NextBatch(&batch));
    Slice keys, offsets, strings, bitmap;
    EXPECT_OK(batch.GetFixedLengthColumn(0, &keys));
    EXPECT_TRUE(keys.size() == 4u * batch.NumRows(), "key column size");
    EXPECT_OK(batch.GetVariableLengthColumn(1, &offsets, &strings));
    EXPECT_OK(batch.GetNonNullBitmapForColumn(1, &bitmap));
    Status s = batch.GetNonNullBitmapForColumn(0, &keys);
    EXPECT_TRUE(s.IsInvalidArgument(), "non-nullable column: " + s.ToString());
    EXPECT_OK(batch.GetFixedLengthColumn(0, &keys));
    EXPECT_OK(batch.GetNonNullBitmapForColumn(1, &bitmap));
    for (int i = 0; i < batch.NumRows(); i++) {
      int32_t key;
      std::memcpy(&key, keys.data() + 4 * i, 4);
      key_sum += key;
      const bool present = (bitmap[i / 8] >> (i % 8)) & 1;
      EXPECT_TRUE(present == (key < kInitialRows && key % 2 == 0), std::to_string(key));
      if (present) {
        uint32_t begin, end;
        std::memcpy(&begin, offsets.data() + 4 * i, 4);
        std::memcpy(&end, offsets.data() + 4 * (i + 1), 4);
        EXPECT_TRUE(Slice(strings.data() + begin, end - begin) == Slice("s" + std::to_string(key)),
                    std::to_string(key));
        non_null++;
      }
    }
    rows += batch.NumRows();
  }
  EXPECT_TRUE(rows == kExpectedRows, std::to_string(rows));
  EXPECT_TRUE(non_null == kInitialRows / 2 - 50, std::to_string(non_null));
  int64_t want = 0;
  for (int k = 0; k < kInitialRows + kBackgroundRows; k++) want += (k >= 100 && k < 200) ? 0 : k;
  EXPECT_TRUE(key_sum == want, std::to_string(key_sum));

  KuduScanner row_only(table.get());
  EXPECT_OK(row_only.Open());
  Status s = row_only.NextBatch(&batch);
  EXPECT_TRUE(s.IsIllegalState(), "columnar batch without COLUMNAR_LAYOUT: " + s.ToString());
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <master address>\n", argv[0]);
    return 2;
  }
  KUDU_LOG(INFO) << "client " << kudu::client::GetShortVersionString();
  EXPECT_TRUE(!kudu::client::GetAllVersionInfo().empty(), "version info");
  EXPECT_OK(kudu::client::DisableOpenSSLInitialization());
  kudu::client::SetVerboseLogLevel(0);

  shared_ptr<KuduClient> client;
  EXPECT_OK(KuduClientBuilder()
                .add_master_server_addr(argv[1])
                .default_admin_operation_timeout(MonoDelta::FromSeconds(30))
                .default_rpc_timeout(MonoDelta::FromSeconds(30))
                .Build(&client));
  EXPECT_TRUE(client->default_admin_operation_timeout() == MonoDelta::FromSeconds(30),
              client->default_admin_operation_timeout().ToString());
  std::vector<kudu::client::KuduTabletServer*> servers;
  EXPECT_OK(client->ListTabletServers(&servers));
  EXPECT_TRUE(servers.size() == 3, std::to_string(servers.size()) + " tablet servers");
  for (auto* ts : servers) delete ts;

  const std::string name = "db.kudu_compat_" + std::to_string(getpid());
  const std::string renamed = name + "_renamed";
  bool exists = true;
  EXPECT_OK(client->TableExists(name, &exists));
  EXPECT_TRUE(!exists, name + " exists already");
  const KuduSchema schema = CreateSchema();
  CreateTable(client, name, schema);
  AlterTable(client, name, renamed);

  shared_ptr<KuduTable> table;
  Status s = client->OpenTable(name, &table);
  EXPECT_TRUE(s.IsNotFound(), s.ToString());
  EXPECT_OK(client->OpenTable(renamed, &table));
  EXPECT_TRUE(table->name() == renamed && table->num_replicas() == 3, table->name());

  InsertManualFlush(table);
  UpsertInBackground(table);
  MutateSync(table);
  ScanOrdered(table);
  ScanWithPredicates(table);
  ScanColumnar(table);
  FlushAsyncThenDropEverything(argv[1], renamed);

  std::vector<std::string> tables;
  EXPECT_OK(client->ListTables(&tables, "kudu_compat_"));
  EXPECT_TRUE(tables.size() == 1 && tables[0] == renamed, "ListTables");
  EXPECT_OK(client->DeleteTable(renamed));
  s = client->OpenTable(renamed, &table);
  EXPECT_TRUE(s.IsNotFound(), s.ToString());
  std::printf("kudu_style_program: all checks passed\n");
  return 0;
}
