#include "master/sys_catalog.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "common/status_test_util.h"
#include "consensus/in_memory_transport.h"
#include "master/master_test_util.h"
#include "proto/master_catalog.pb.h"

namespace basalt {
namespace {
namespace sys_catalog_test_file {

using master_test::RecordingListener;

class SysCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }

  absl::StatusOr<std::unique_ptr<SysCatalog>> Open() {
    SysCatalogOptions o;
    o.data_dir = dir_;
    o.wal_dir = dir_;
    o.uuid = "master-1";
    o.tick_interval_ms = 10;
    return SysCatalog::Open(Env::Default(), o, &transport_, &listener_);
  }

  std::unique_ptr<SysCatalog> OpenAndLead() {
    auto c = Open();
    BASALT_EXPECT_OK(c);
    if (!c.ok()) return nullptr;
    BASALT_EXPECT_OK((*c)->Start());
    BASALT_EXPECT_OK((*c)->WaitUntilLeader(absl::Seconds(10)));
    return *std::move(c);
  }

  static pb::SysCatalogWriteBatchPB SampleBatch(const std::string& table_id) {
    pb::SysCatalogWriteBatchPB b;
    auto* t = b.add_upsert_tables();
    t->set_table_id(table_id);
    t->set_name("name-" + table_id);
    t->set_state(pb::SysTableEntryPB::CREATING);
    t->set_num_replicas(1);
    auto* tablet = b.add_upsert_tablets();
    tablet->set_tablet_id("tablet-" + table_id);
    tablet->set_table_id(table_id);
    tablet->mutable_config()->add_peers()->set_uuid("ts-1");
    return b;
  }

  // Overwrites one stored value directly in RocksDB (the catalog must be closed).
  void PutRaw(const std::string& key, const std::string& value) {
    rocksdb::DB* db = nullptr;
    rocksdb::Options opts;
    ASSERT_TRUE(rocksdb::DB::Open(opts, JoinPath(dir_, "catalog"), &db).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, value).ok());
    delete db;
  }

  master_test::TempDir tmp_{"sys_catalog_test"};
  const std::string dir_ = tmp_.path();
  InMemoryTransport transport_;
  RecordingListener listener_;
};

TEST_F(SysCatalogTest, WriteThenReloadAfterRestart) {
  uint64_t index = 0;
  {
    auto c = OpenAndLead();
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(listener_.loaded().upsert_tables_size(), 0);
    BASALT_ASSERT_OK(c->Write(SampleBatch("t1"), absl::Seconds(10)));
    BASALT_ASSERT_OK(c->Write(SampleBatch("t2"), absl::Seconds(10)));
    pb::SysCatalogWriteBatchPB del;
    del.add_delete_tablet_ids("tablet-t1");
    BASALT_ASSERT_OK(c->Write(del, absl::Seconds(10)));
    EXPECT_EQ(listener_.num_applied(), 3u);
    index = c->DurableIndex();
    EXPECT_GE(index, 3u);
  }
  auto c = OpenAndLead();
  ASSERT_NE(c, nullptr);
  EXPECT_GE(c->DurableIndex(), index);  // Plus the new leader's no-op.
  pb::SysCatalogWriteBatchPB loaded = listener_.loaded();
  ASSERT_EQ(loaded.upsert_tables_size(), 2);
  EXPECT_EQ(loaded.upsert_tables(0).table_id(), "t1");
  EXPECT_EQ(loaded.upsert_tables(1).name(), "name-t2");
  ASSERT_EQ(loaded.upsert_tablets_size(), 1);
  EXPECT_EQ(loaded.upsert_tablets(0).tablet_id(), "tablet-t2");
  // Nothing was re-applied from the log: RocksDB had it all.
  EXPECT_EQ(listener_.num_applied(), 3u);
  // And the catalog still takes writes.
  BASALT_ASSERT_OK(c->Write(SampleBatch("t3"), absl::Seconds(10)));
}

TEST_F(SysCatalogTest, ValueFraming) {
  const std::string v = SysCatalog::EncodeValue("payload");
  auto d = SysCatalog::DecodeValue("k", v);
  BASALT_ASSERT_OK(d);
  EXPECT_EQ(*d, "payload");
  for (size_t i = 0; i < v.size(); ++i) {
    std::string bad = v;
    bad[i] ^= 0x20;
    EXPECT_EQ(SysCatalog::DecodeValue("k", bad).status().code(), absl::StatusCode::kDataLoss);
  }
  EXPECT_EQ(SysCatalog::DecodeValue("k", "abc").status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(SysCatalogTest, GarbledEntryIsDataLoss) {
  {
    auto c = OpenAndLead();
    ASSERT_NE(c, nullptr);
    BASALT_ASSERT_OK(c->Write(SampleBatch("t1"), absl::Seconds(10)));
  }
  std::string good =
      SysCatalog::EncodeValue(SampleBatch("t1").upsert_tables(0).SerializeAsString());
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x01;
  PutRaw("table/t1", flipped);
  auto c = Open();
  ASSERT_EQ(c.status().code(), absl::StatusCode::kDataLoss) << c.status();
  EXPECT_NE(c.status().message().find("table/t1"), std::string::npos) << c.status();
}

TEST_F(SysCatalogTest, UnparsableAndMisplacedEntriesAreDataLoss) {
  {
    auto c = OpenAndLead();
    ASSERT_NE(c, nullptr);
    BASALT_ASSERT_OK(c->Write(SampleBatch("t1"), absl::Seconds(10)));
  }
  // A valid checksum over bytes that are not a protobuf.
  PutRaw("tablet/tablet-t1", SysCatalog::EncodeValue("\xff\xff\xff\xff\xff"));
  EXPECT_EQ(Open().status().code(), absl::StatusCode::kDataLoss);
  // An entry under another entry's key.
  PutRaw("tablet/tablet-t1",
         SysCatalog::EncodeValue(SampleBatch("t9").upsert_tablets(0).SerializeAsString()));
  EXPECT_EQ(Open().status().code(), absl::StatusCode::kDataLoss);
  PutRaw("tablet/tablet-t1",
         SysCatalog::EncodeValue(SampleBatch("t1").upsert_tablets(0).SerializeAsString()));
  BASALT_EXPECT_OK(Open());
  // A short applied index, then an unknown key.
  PutRaw(kSysAppliedIndexKey, SysCatalog::EncodeValue("abc"));
  EXPECT_EQ(Open().status().code(), absl::StatusCode::kDataLoss);
  std::string idx(8, '\0');
  idx[0] = 1;
  PutRaw(kSysAppliedIndexKey, SysCatalog::EncodeValue(idx));
  PutRaw("zzz", "x");
  EXPECT_EQ(Open().status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(SysCatalogTest, DdlAnswersAreStoredUnderTheirIdAndChecked) {
  EXPECT_EQ(SysDdlAnswerKey("c1", 5), "ddl_answer/c1/00000000000000000005");
  pb::SysDdlAnswerEntryPB answer;
  answer.mutable_request_id()->set_client_id("c1");
  answer.mutable_request_id()->set_seq_no(5);
  answer.set_method(pb::SysDdlAnswerEntryPB::DELETE_TABLE);
  {
    auto c = OpenAndLead();
    ASSERT_NE(c, nullptr);
    pb::SysCatalogWriteBatchPB b = SampleBatch("t1");
    *b.add_upsert_ddl_answers() = answer;
    BASALT_ASSERT_OK(c->Write(b, absl::Seconds(10)));
  }
  const std::string key = SysDdlAnswerKey("c1", 5);
  {
    auto c = Open();
    BASALT_ASSERT_OK(c);
    ASSERT_EQ(listener_.loaded().upsert_ddl_answers_size(), 1);
    EXPECT_EQ(listener_.loaded().upsert_ddl_answers(0).SerializeAsString(),
              answer.SerializeAsString());
  }
  // A flipped byte, then an answer stored under another request's key.
  std::string flipped = SysCatalog::EncodeValue(answer.SerializeAsString());
  flipped[flipped.size() - 1] ^= 0x01;
  PutRaw(key, flipped);
  auto c = Open();
  ASSERT_EQ(c.status().code(), absl::StatusCode::kDataLoss) << c.status();
  EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status();
  PutRaw(SysDdlAnswerKey("c1", 6), SysCatalog::EncodeValue(answer.SerializeAsString()));
  PutRaw(key, SysCatalog::EncodeValue(answer.SerializeAsString()));
  c = Open();
  ASSERT_EQ(c.status().code(), absl::StatusCode::kDataLoss) << c.status();
  EXPECT_NE(c.status().message().find(SysDdlAnswerKey("c1", 6)), std::string::npos) << c.status();
}

TEST_F(SysCatalogTest, DeletedDdlAnswersAreGoneAfterARestart) {
  pb::SysDdlAnswerEntryPB answer;
  answer.mutable_request_id()->set_client_id("c1");
  answer.mutable_request_id()->set_seq_no(5);
  {
    auto c = OpenAndLead();
    ASSERT_NE(c, nullptr);
    pb::SysCatalogWriteBatchPB b = SampleBatch("t1");
    *b.add_upsert_ddl_answers() = answer;
    BASALT_ASSERT_OK(c->Write(b, absl::Seconds(10)));
    pb::SysCatalogWriteBatchPB del;
    *del.add_delete_ddl_answers() = answer.request_id();
    BASALT_ASSERT_OK(c->Write(del, absl::Seconds(10)));
  }
  auto c = Open();
  BASALT_ASSERT_OK(c);
  EXPECT_EQ(listener_.loaded().upsert_ddl_answers_size(), 0);
  EXPECT_EQ(listener_.loaded().upsert_tables_size(), 1);
}

TEST_F(SysCatalogTest, ListenerLoadErrorFailsOpen) {
  listener_.set_load_status(absl::DataLossError("bad schema"));
  auto c = Open();
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace sys_catalog_test_file
}  // namespace
}  // namespace basalt
