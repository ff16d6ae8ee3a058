// Exactly-once DDL (docs/master.md "Exactly-once DDL"): DdlAnswers alone, then CreateTable,
// AlterTable and DeleteTable retried through a catalog manager: after success, after a restart,
// on a new leader of a three-master catalog; forgetting by watermark and by TTL; a damaged
// stored answer.

#include "master/ddl_answers.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/env.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "consensus/in_memory_transport.h"
#include "master/catalog_manager.h"
#include "master/master_test_util.h"
#include "master/sys_catalog.h"
#include "proto/master.pb.h"
#include "proto/master_catalog.pb.h"

DECLARE_int64(remember_ddl_responses_ttl_ms);

namespace basalt {
namespace {
namespace ddl_answers_test_file {

using master_test::CreateTableRequest;
using master_test::TestCatalog;

pb::RequestIdPB Id(uint64_t seq, uint64_t first_incomplete = 1,
                   const std::string& client = "client-a") {
  pb::RequestIdPB id;
  id.set_client_id(client);
  id.set_seq_no(seq);
  id.set_first_incomplete_seq_no(first_incomplete);
  return id;
}

pb::SysDdlAnswerEntryPB Answer(const pb::RequestIdPB& id, int64_t write_time_micros) {
  pb::SysDdlAnswerEntryPB a;
  *a.mutable_request_id() = id;
  a.set_method(pb::SysDdlAnswerEntryPB::CREATE_TABLE);
  a.set_write_time_micros(write_time_micros);
  return a;
}

// ---- DdlAnswers alone ---------------------------------------------------------------------------

TEST(DdlAnswersTest, FindsWhatBatchesInstalledAndForgetsWhatTheyDelete) {
  DdlAnswers answers;
  pb::SysCatalogWriteBatchPB batch;
  *batch.add_upsert_ddl_answers() = Answer(Id(1), 100);
  *batch.add_upsert_ddl_answers() = Answer(Id(2, 1, "client-b"), 100);
  answers.Apply(batch);
  EXPECT_EQ(answers.size(), 2u);
  const pb::SysDdlAnswerEntryPB* entry = nullptr;
  ASSERT_EQ(answers.Find(Id(1), &entry), DdlAnswers::Lookup::kAnswered);
  EXPECT_EQ(entry->request_id().seq_no(), 1u);
  EXPECT_EQ(answers.Find(Id(2), &entry), DdlAnswers::Lookup::kNew);  // Another client's 2.
  pb::SysCatalogWriteBatchPB del;
  *del.add_delete_ddl_answers() = Id(1);
  answers.Apply(del);
  EXPECT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers.Find(Id(1), &entry), DdlAnswers::Lookup::kNew);
  answers.Clear();
  EXPECT_EQ(answers.size(), 0u);
}

TEST(DdlAnswersTest, WatermarkReleasesLowerAnswersAndMakesThemStale) {
  DdlAnswers answers;
  pb::SysCatalogWriteBatchPB batch;
  for (uint64_t seq : {1, 2, 4}) *batch.add_upsert_ddl_answers() = Answer(Id(seq, 1), 100);
  answers.Apply(batch);
  // Request 5 says the client completed everything below 4.
  pb::SysCatalogWriteBatchPB next;
  *next.add_upsert_ddl_answers() = Answer(Id(5, 4), 100);
  answers.AddReleased(Id(5, 4), &next);
  ASSERT_EQ(next.delete_ddl_answers_size(), 2);
  EXPECT_EQ(next.delete_ddl_answers(0).seq_no(), 1u);
  EXPECT_EQ(next.delete_ddl_answers(1).seq_no(), 2u);
  answers.Apply(next);
  const pb::SysDdlAnswerEntryPB* entry = nullptr;
  EXPECT_EQ(answers.Find(Id(1), &entry), DdlAnswers::Lookup::kStale);
  EXPECT_EQ(answers.Find(Id(3), &entry), DdlAnswers::Lookup::kStale);
  EXPECT_EQ(answers.Find(Id(4), &entry), DdlAnswers::Lookup::kAnswered);
  EXPECT_EQ(answers.Find(Id(6), &entry), DdlAnswers::Lookup::kNew);
  // Another client's watermark releases nothing of this one.
  pb::SysCatalogWriteBatchPB other;
  answers.AddReleased(Id(9, 9, "client-b"), &other);
  EXPECT_EQ(other.delete_ddl_answers_size(), 0);
}

TEST(DdlAnswersTest, ExpiresAnswersWrittenBeforeTheCutoffAtMostMaxAtATime) {
  DdlAnswers answers;
  pb::SysCatalogWriteBatchPB batch;
  *batch.add_upsert_ddl_answers() = Answer(Id(1), 100);
  *batch.add_upsert_ddl_answers() = Answer(Id(2), 200);
  *batch.add_upsert_ddl_answers() = Answer(Id(1, 1, "client-b"), 150);
  answers.Apply(batch);
  pb::SysCatalogWriteBatchPB none;
  EXPECT_EQ(answers.AddExpired(100, 10, &none), 0);
  pb::SysCatalogWriteBatchPB one;
  EXPECT_EQ(answers.AddExpired(201, 1, &one), 1);
  EXPECT_EQ(one.delete_ddl_answers_size(), 1);
  pb::SysCatalogWriteBatchPB two;
  EXPECT_EQ(answers.AddExpired(151, 10, &two), 2);
  answers.Apply(two);
  const pb::SysDdlAnswerEntryPB* entry = nullptr;
  EXPECT_EQ(answers.Find(Id(2), &entry), DdlAnswers::Lookup::kAnswered);
  EXPECT_EQ(answers.size(), 1u);
}

// ---- Through the catalog manager ----------------------------------------------------------------

class ExactlyOnceDdlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    master_ = std::make_unique<TestCatalog>(JoinPath(tmp_.path(), "m"), "master",
                                            std::vector<std::string>(), &transport_, &clock_);
    ASSERT_NO_FATAL_FAILURE(Restart());
  }

  // Opens (again) from disk and waits until the master leads.
  void Restart() {
    master_->Close();
    BASALT_ASSERT_OK(master_->Open());
    BASALT_ASSERT_OK(master_->catalog()->WaitUntilLeader(absl::Seconds(10)));
    BASALT_ASSERT_OK(master_->Heartbeats(3));
  }

  CatalogManager* cm() { return master_->cm(); }

  static pb::CreateTableRequestPB CreateWithId(const std::string& name, const pb::RequestIdPB& id) {
    pb::CreateTableRequestPB req = CreateTableRequest(name, {10});
    *req.mutable_request_id() = id;
    return req;
  }
  absl::StatusOr<std::string> Create(const pb::CreateTableRequestPB& req) {
    pb::CreateTableResponsePB resp;
    absl::Status s = cm()->CreateTable(req, &resp);
    if (!s.ok()) return s;
    return resp.table_id();
  }
  absl::StatusOr<uint32_t> AddColumn(const std::string& table, const std::string& column,
                                     const pb::RequestIdPB& id) {
    pb::AlterTableRequestPB req;
    req.mutable_table()->set_table_name(table);
    auto* col = req.add_steps()->mutable_add_column()->mutable_column();
    col->set_name(column);
    col->set_type(pb::INT64);
    col->set_is_nullable(true);
    *req.mutable_request_id() = id;
    pb::AlterTableResponsePB resp;
    absl::Status s = cm()->AlterTable(req, &resp);
    if (!s.ok()) return s;
    return resp.schema_version();
  }
  absl::Status Delete(const std::string& table, const pb::RequestIdPB& id) {
    pb::DeleteTableRequestPB req;
    req.mutable_table()->set_table_name(table);
    *req.mutable_request_id() = id;
    pb::DeleteTableResponsePB resp;
    return cm()->DeleteTable(req, &resp);
  }
  size_t NumTables() {
    pb::ListTablesResponsePB resp;
    BASALT_EXPECT_OK(cm()->ListTables(pb::ListTablesRequestPB(), &resp));
    return resp.tables_size();
  }
  // The answers stored in RocksDB (a catalog image reads every stored entry).
  std::vector<uint64_t> StoredSeqNos() {
    absl::StatusOr<pb::CatalogSnapshotPB> image = master_->catalog()->BuildSnapshot();
    BASALT_EXPECT_OK(image);
    std::vector<uint64_t> out;
    if (!image.ok()) return out;
    for (const auto& a : image->entries().upsert_ddl_answers()) {
      out.push_back(a.request_id().seq_no());
    }
    return out;
  }

  master_test::TempDir tmp_{"ddl_answers_test"};
  ManualClock clock_;
  InMemoryTransport transport_;
  std::unique_ptr<TestCatalog> master_;
};

TEST_F(ExactlyOnceDdlTest, RetriedCreateTableGetsTheFirstAnswerAlsoAfterARestart) {
  const pb::CreateTableRequestPB req = CreateWithId("t", Id(1));
  absl::StatusOr<std::string> first = Create(req);
  BASALT_ASSERT_OK(first);
  absl::StatusOr<std::string> retry = Create(req);
  BASALT_ASSERT_OK(retry);
  EXPECT_EQ(*retry, *first);
  EXPECT_EQ(NumTables(), 1u);
  EXPECT_EQ(StoredSeqNos(), std::vector<uint64_t>{1});

  ASSERT_NO_FATAL_FAILURE(Restart());
  retry = Create(req);
  BASALT_ASSERT_OK(retry);
  EXPECT_EQ(*retry, *first);
  EXPECT_EQ(NumTables(), 1u);

  // Another request with the same content, or one without an id, is executed: the name is taken.
  EXPECT_EQ(Create(CreateWithId("t", Id(2))).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Create(CreateTableRequest("t", {10})).status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_F(ExactlyOnceDdlTest, RetriedAlterTableAddsTheColumnOnce) {
  BASALT_ASSERT_OK(Create(CreateWithId("t", Id(1))));
  absl::StatusOr<uint32_t> first = AddColumn("t", "c", Id(2));
  BASALT_ASSERT_OK(first);
  EXPECT_EQ(*first, 1u);
  absl::StatusOr<uint32_t> retry = AddColumn("t", "c", Id(2));
  BASALT_ASSERT_OK(retry);
  EXPECT_EQ(*retry, 1u);
  std::shared_ptr<const TableInfo> table = cm()->GetTableByName("t");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->schema_version(), 1u);
  int found = 0;
  for (const auto& col : table->pb.schema().columns()) found += col.name() == "c";
  EXPECT_EQ(found, 1);
  // A new request adding it again is executed, and fails.
  EXPECT_EQ(AddColumn("t", "c", Id(3)).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(ExactlyOnceDdlTest, RetriedDeleteTableAnswersOk) {
  BASALT_ASSERT_OK(Create(CreateWithId("t", Id(1))));
  BASALT_ASSERT_OK(Delete("t", Id(2)));
  BASALT_ASSERT_OK(Delete("t", Id(2)));
  ASSERT_NO_FATAL_FAILURE(Restart());
  BASALT_ASSERT_OK(Delete("t", Id(2)));
  EXPECT_EQ(Delete("t", Id(3)).code(), absl::StatusCode::kNotFound);
}

TEST_F(ExactlyOnceDdlTest, AnIdIsBoundToItsMethod) {
  BASALT_ASSERT_OK(Create(CreateWithId("t", Id(1))));
  absl::Status s = Delete("t", Id(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("CREATE_TABLE"), std::string::npos) << s;
  EXPECT_EQ(NumTables(), 1u);
}

TEST_F(ExactlyOnceDdlTest, MalformedIdsAreRefused) {
  absl::Status s = Create(CreateWithId("t", Id(1, 1, std::string(129, 'x')))).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = Create(CreateWithId("t", Id(1, 2))).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(NumTables(), 0u);
}

TEST_F(ExactlyOnceDdlTest, ConcurrentAttemptsOfOneRequestExecuteOnce) {
  const pb::CreateTableRequestPB req = CreateWithId("t", Id(1));
  constexpr int kAttempts = 4;
  std::vector<absl::StatusOr<std::string>> results(kAttempts, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kAttempts; ++i) {
    threads.emplace_back([&, i] { results[i] = Create(req); });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kAttempts; ++i) {
    BASALT_ASSERT_OK(results[i]) << "attempt " << i;
    EXPECT_EQ(*results[i], *results[0]) << "attempt " << i;
  }
  EXPECT_EQ(NumTables(), 1u);
}

TEST_F(ExactlyOnceDdlTest, TheWatermarkReleasesAnswersInTheSameWrite) {
  BASALT_ASSERT_OK(Create(CreateWithId("t1", Id(1, 1))));
  BASALT_ASSERT_OK(Create(CreateWithId("t2", Id(2, 1))));
  EXPECT_EQ(StoredSeqNos(), (std::vector<uint64_t>{1, 2}));
  // The client completed 1 and 2.
  BASALT_ASSERT_OK(Create(CreateWithId("t3", Id(3, 3))));
  EXPECT_EQ(StoredSeqNos(), std::vector<uint64_t>{3});
  // A late attempt of a released request is not executed again.
  absl::Status s = Create(CreateWithId("t1", Id(1, 1))).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  ASSERT_NO_FATAL_FAILURE(Restart());
  EXPECT_EQ(StoredSeqNos(), std::vector<uint64_t>{3});
  s = Create(CreateWithId("t1", Id(1, 1))).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(NumTables(), 3u);
}

TEST_F(ExactlyOnceDdlTest, AnswersOlderThanTheTtlAreForgottenThroughTheCatalog) {
  const pb::CreateTableRequestPB req = CreateWithId("t", Id(1));
  BASALT_ASSERT_OK(Create(req));
  cm()->ReconcileOnce();
  EXPECT_EQ(StoredSeqNos(), std::vector<uint64_t>{1});
  clock_.AdvanceMicros(FLAGS_remember_ddl_responses_ttl_ms * 1000 + 1);
  cm()->ReconcileOnce();
  EXPECT_EQ(StoredSeqNos(), std::vector<uint64_t>{});
  // Forgotten: a retry now is executed again.
  EXPECT_EQ(Create(req).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_NO_FATAL_FAILURE(Restart());
  EXPECT_EQ(StoredSeqNos(), std::vector<uint64_t>{});
}

// A stored answer whose response bytes do not parse (its framing checks out): its retries fail
// with DATA_LOSS naming the entry; the master and every other request are unaffected.
TEST_F(ExactlyOnceDdlTest, ADamagedStoredAnswerIsACleanError) {
  BASALT_ASSERT_OK(Create(CreateWithId("t", Id(1))));
  master_->Close();
  pb::SysDdlAnswerEntryPB bad = Answer(Id(1), clock_.NowMicros());
  bad.set_response("\xff\xff\xff");
  const std::string key = SysDdlAnswerKey("client-a", 1);
  {
    rocksdb::DB* db = nullptr;
    rocksdb::Status rs =
        rocksdb::DB::Open(rocksdb::Options(), JoinPath(master_->dir(), "catalog"), &db);
    ASSERT_TRUE(rs.ok()) << rs.ToString();
    std::unique_ptr<rocksdb::DB> owned(db);
    rs = db->Put(rocksdb::WriteOptions(), key, SysCatalog::EncodeValue(bad.SerializeAsString()));
    ASSERT_TRUE(rs.ok()) << rs.ToString();
  }
  ASSERT_NO_FATAL_FAILURE(Restart());
  absl::Status s = Create(CreateWithId("t", Id(1))).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(key), std::string::npos) << s;
  BASALT_EXPECT_OK(Create(CreateWithId("u", Id(2))));
}

// ---- A three-master catalog ---------------------------------------------------------------------

TEST(ExactlyOnceDdlMultiMasterTest, ANewLeaderAnswersARetryWithTheFirstAnswer) {
  master_test::TempDir tmp("ddl_answers_multi_test");
  ASSERT_FALSE(tmp.path().empty());
  ManualClock clock;
  InMemoryTransport transport;
  const std::vector<std::string> uuids = {"m0", "m1", "m2"};
  std::vector<std::unique_ptr<TestCatalog>> masters;
  for (const std::string& uuid : uuids) {
    masters.push_back(
        std::make_unique<TestCatalog>(JoinPath(tmp.path(), uuid), uuid, uuids, &transport, &clock));
    BASALT_ASSERT_OK(masters.back()->Open());
  }
  // The index of the ready leader among the open masters, waiting up to 30 s; -1 if none.
  auto leader = [&]() {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      for (size_t i = 0; i < masters.size(); ++i) {
        if (masters[i]->open() && masters[i]->catalog()->LeaderReadyTerm() != 0)
          return static_cast<int>(i);
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return -1;
  };
  for (auto& m : masters) BASALT_ASSERT_OK(m->Heartbeats(3));

  pb::CreateTableRequestPB req = CreateTableRequest("t", {10});
  *req.mutable_request_id() = Id(1);
  const int first = leader();
  ASSERT_GE(first, 0);
  pb::CreateTableResponsePB resp;
  BASALT_ASSERT_OK(masters[first]->cm()->CreateTable(req, &resp));
  const std::string table_id = resp.table_id();

  // The leader goes down as if its answer was lost; the client retries at the new leader.
  masters[first]->Close();
  const int second = leader();
  ASSERT_GE(second, 0);
  ASSERT_NE(second, first);
  pb::CreateTableResponsePB retry;
  BASALT_ASSERT_OK(masters[second]->cm()->CreateTable(req, &retry));
  EXPECT_EQ(retry.table_id(), table_id);
  pb::ListTablesResponsePB tables;
  BASALT_ASSERT_OK(masters[second]->cm()->ListTables(pb::ListTablesRequestPB(), &tables));
  EXPECT_EQ(tables.tables_size(), 1);
}

}  // namespace ddl_answers_test_file
}  // namespace
}  // namespace basalt
