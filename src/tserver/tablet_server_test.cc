// One TabletServer in process with single-replica tablets created through the admin RPC: writes,
// scans, scanners, checksums, restart and bootstrap, deletion, malformed requests.

#include "tserver/tablet_server.h"

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "common/injecting_env.h"
#include "common/key_encoder.h"
#include "common/metrics.h"
#include "common/status_test_util.h"
#include "consensus/server_log.h"
#include "tablet/tablet.h"
#include "tserver/scanner_manager.h"
#include "tserver/tablet_replica.h"
#include "tserver/ts_tablet_manager.h"
#include "tserver/tserver_test_util.h"

DECLARE_int64(fs_data_dirs_reserved_bytes);
DECLARE_int32(fs_target_data_dirs_per_tablet);
DECLARE_bool(log_per_server);

namespace basalt {
namespace {
namespace tablet_server_test_file {

constexpr char kTablet[] = "tablet-1";

class TabletServerTest : public ::testing::Test {
 protected:
  TabletServerTest() : dir_("tablet_server_test"), schema_(TestSchema()) {}

  void SetUp() override { StartServer(); }

  void StartServer(int scanner_ttl_ms = 60000, int64_t memory_limit_bytes = 0) {
    TabletServerOptions o =
        TestServerOptions(data_dir_override_.empty() ? dir_.path() : data_dir_override_);
    o.env = &env_;
    if (!wal_dir_override_.empty()) o.fs_wal_dir = wal_dir_override_;
    if (!extra_data_dirs_.empty()) {
      o.fs_data_dirs = {o.fs_data_dir};
      o.fs_data_dirs.insert(o.fs_data_dirs.end(), extra_data_dirs_.begin(), extra_data_dirs_.end());
    }
    o.scanner_ttl_ms = scanner_ttl_ms;
    if (memory_limit_bytes > 0) {
      o.memory_limit_bytes = memory_limit_bytes;
      o.enable_maintenance = false;  // The test flushes by hand.
    }
    server_ = std::make_unique<TabletServer>(o);
    BASALT_ASSERT_OK(server_->Start());
    client_ = std::make_unique<TsClient>(server_->advertised_address().ToString());
  }

  void RestartServer() {
    client_.reset();
    server_.reset();
    StartServer();
  }

  // Alters tablet kTablet to schema_ plus a nullable INT64 column "extra".
  absl::Status AddExtraColumn() {
    absl::StatusOr<Schema> altered =
        schema_.AddColumn(ColumnSchema("extra", DataType::kInt64, true));
    if (!altered.ok()) return altered.status();
    pb::AlterSchemaRequestPB req;
    req.set_dest_uuid(server_->uuid());
    req.set_tablet_id(kTablet);
    altered->ToPB(req.mutable_schema());
    pb::AlterSchemaResponsePB resp;
    return client_->AlterSchema(req, &resp);
  }

  // `req` is refused with SCHEMA_MISMATCH naming `tablet_version`, and so is its retry (a refused
  // request is not remembered as in progress).
  void ExpectRefusedTwiceForSchema(const pb::WriteRequestPB& req, uint32_t tablet_version) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      pb::WriteResponsePB r;
      absl::Status s = client_->Write(req, &r);
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_EQ(DetailCode(s), pb::ErrorDetailPB::SCHEMA_MISMATCH) << s;
      EXPECT_EQ(GetErrorDetail(s).value_or(pb::ErrorDetailPB()).schema_version(), tablet_version)
          << s;
    }
  }

  void CreateTablet(const std::string& id) {
    BASALT_ASSERT_OK(client_->CreateTablet(
        CreateTabletRequest(id, {{server_->uuid(), server_->advertised_address()}})));
    WaitForLeader(id);
  }

  void WaitForLeader(const std::string& id) {
    auto r = server_->tablet_manager()->Lookup(id);
    BASALT_ASSERT_OK(r);
    ASSERT_TRUE((*r)->WaitUntilRunning(absl::Seconds(10)));
    ASSERT_TRUE(WaitFor([&] {
      return (*r)->raft()->role() == RaftCore::Role::kLeader &&
             (*r)->GetStatus().last_applied_index > 0;
    }));
  }

  // Writes must succeed at the RPC level; returns the per-row errors by row index.
  std::map<int, absl::StatusCode> Write(const WriteBuilder& w, const std::string& id = kTablet) {
    pb::WriteResponsePB resp;
    absl::Status s;
    // A new leader may briefly not be ready.
    EXPECT_TRUE(WaitFor([&] {
      resp.Clear();
      s = client_->Write(w.Build(id), &resp);
      return !absl::IsUnavailable(s);
    }));
    BASALT_EXPECT_OK(s);
    EXPECT_GT(resp.timestamp(), 0u);
    std::map<int, absl::StatusCode> errors;
    for (const auto& e : resp.per_row_errors()) {
      errors[e.row_index()] = static_cast<absl::StatusCode>(e.error().code());
    }
    return errors;
  }

  void InsertRange(int32_t from, int32_t to, int32_t per_batch = 1000) {
    for (int32_t k = from; k < to; k += per_batch) {
      WriteBuilder w(&schema_);
      for (int32_t i = k; i < std::min(to, k + per_batch); ++i) w.Insert(i);
      ASSERT_TRUE(Write(w).empty());
    }
  }

  pb::ScanRequestPB NewScan(const std::string& id = kTablet) {
    pb::ScanRequestPB req;
    pb::NewScanRequestPB* n = req.mutable_new_scan_request();
    n->set_tablet_id(id);
    for (const char* c : {"key", "int_val", "s"}) {
      *n->add_projected_columns() = ProjectedColumn(schema_, c);
    }
    return req;
  }

  // Runs a scan to the end; returns the rows (and the number of calls in *calls).
  absl::StatusOr<std::vector<TestRow>> ScanAll(pb::ScanRequestPB req, int* calls = nullptr) {
    std::vector<TestRow> rows;
    pb::ScanResponsePB resp;
    BASALT_RETURN_IF_ERROR(client_->Scan(req, &resp));
    int n = 1;
    uint32_t seq = 0;
    while (true) {
      for (const TestRow& r : DecodeTestRows(resp.data())) rows.push_back(r);
      if (!resp.has_more_results()) break;
      pb::ScanRequestPB next;
      next.set_scanner_id(resp.scanner_id());
      next.set_call_seq_id(seq++);
      next.set_batch_size_bytes(req.batch_size_bytes());
      resp.Clear();
      BASALT_RETURN_IF_ERROR(client_->Scan(next, &resp));
      ++n;
    }
    if (calls != nullptr) *calls = n;
    return rows;
  }

  std::vector<TestRow> Expected(int32_t from, int32_t to) {
    std::vector<TestRow> out;
    for (int32_t k = from; k < to; ++k) out.push_back(ExpectedRow(k));
    return out;
  }

  static std::vector<TestRow> Sorted(std::vector<TestRow> rows) {
    std::sort(rows.begin(), rows.end(),
              [](const TestRow& a, const TestRow& b) { return a.key < b.key; });
    return rows;
  }

  TestDir dir_;
  std::string data_dir_override_;  // Where the server keeps its data instead of dir_, if set.
  std::vector<std::string> extra_data_dirs_;  // More data directories (--fs_data_dirs), if any.
  std::string wal_dir_override_;              // A WAL directory of its own, if set.
  InjectingEnv env_{Env::Default()};          // Outlives the server.
  Schema schema_;
  std::unique_ptr<TabletServer> server_;
  std::unique_ptr<TsClient> client_;
};

TEST_F(TabletServerTest, WriteEveryOpTypeWithPerRowErrors) {
  CreateTablet(kTablet);
  InsertRange(0, 10);
  using T = RowOperationType;
  WriteBuilder w(&schema_);
  w.Insert(5)                                                       // 0: ALREADY_EXISTS
      .Add(T::kInsertIgnore, 6, 1, std::nullopt)                    // 1: ignored
      .Add(T::kUpdate, 1, 100, std::nullopt)                        // 2: ok
      .Add(T::kUpdate, 50, 100, std::nullopt)                       // 3: NOT_FOUND
      .Add(T::kUpdateIgnore, 51, 100, std::nullopt)                 // 4: ignored
      .Add(T::kUpsert, 2, 200, std::optional<std::string>())        // 5: update, s = NULL
      .Add(T::kUpsert, 20, 400, std::optional<std::string>("new"))  // 6: insert
      .Key(T::kDelete, 3)                                           // 7: ok
      .Key(T::kDelete, 30)                                          // 8: NOT_FOUND
      .Key(T::kDeleteIgnore, 31)                                    // 9: ignored
      .Add(T::kInsertIgnore, 21, 42, std::nullopt);                 // 10: inserted
  std::map<int, absl::StatusCode> errors = Write(w);
  EXPECT_EQ(errors, (std::map<int, absl::StatusCode>{{0, absl::StatusCode::kAlreadyExists},
                                                     {3, absl::StatusCode::kNotFound},
                                                     {8, absl::StatusCode::kNotFound}}));
  std::vector<TestRow> expected = Expected(0, 10);
  expected[1].int_val = 100;
  expected[2].int_val = 200;
  expected[2].s.reset();
  expected.erase(expected.begin() + 3);
  expected.push_back(TestRow{20, 400, "new"});
  expected.push_back(TestRow{21, 42, std::nullopt});
  pb::ScanRequestPB scan = NewScan();
  scan.mutable_new_scan_request()->set_ordered(true);
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(scan);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(*rows, expected);
}

TEST_F(TabletServerTest, ScanProjectionPredicatesBoundsLimitAndContinuation) {
  CreateTablet(kTablet);
  InsertRange(0, 5000);
  // Small batches: many continuation calls, ordered, every row once.
  pb::ScanRequestPB scan = NewScan();
  scan.set_batch_size_bytes(1000);
  scan.mutable_new_scan_request()->set_ordered(true);
  int calls = 0;
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(scan, &calls);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(*rows, Expected(0, 5000));
  EXPECT_GT(calls, 50);
  EXPECT_EQ(server_->scanner_manager()->num_scanners(), 0u);

  // Unordered: the same rows in some order.
  scan.mutable_new_scan_request()->set_ordered(false);
  rows = ScanAll(scan);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(Sorted(*rows), Expected(0, 5000));

  // Key bounds [100, 200) and a predicate int_val >= 300 (key >= 150); limit 20.
  pb::ScanRequestPB bounded = NewScan();
  pb::NewScanRequestPB* n = bounded.mutable_new_scan_request();
  n->set_ordered(true);
  n->set_start_primary_key(EncodeKey(schema_, std::vector<Datum>{Datum::Int32(100)}));
  n->set_stop_primary_key(EncodeKey(schema_, std::vector<Datum>{Datum::Int32(200)}));
  ColumnPredicate ge = *ColumnPredicate::Comparison(
      schema_.column(1), ColumnPredicate::Op::kGreaterEqual, Datum::Int32(300));
  ge.ToPB(n->add_predicates());
  rows = ScanAll(bounded);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(*rows, Expected(150, 200));
  n->set_limit(20);
  bounded.set_batch_size_bytes(100);
  rows = ScanAll(bounded);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(*rows, Expected(150, 170));

  // Projection of one column (s) with IS NULL: keys divisible by 7 in [0, 5000).
  pb::ScanRequestPB proj;
  pb::NewScanRequestPB* p = proj.mutable_new_scan_request();
  p->set_tablet_id(kTablet);
  *p->add_projected_columns() = ProjectedColumn(schema_, "int_val");
  ColumnPredicate::IsNull(schema_.column(2)).ToPB(p->add_predicates());
  pb::ScanResponsePB resp;
  BASALT_ASSERT_OK(client_->Scan(proj, &resp));
  EXPECT_FALSE(resp.has_more_results());
  ASSERT_EQ(resp.data().columns_size(), 1);
  EXPECT_EQ(resp.data().num_rows(), 715);  // ceil(5000 / 7)
  EXPECT_TRUE(resp.data().columns(0).null_bitmap().empty());
  EXPECT_EQ(resp.data().columns(0).data().size(), 715u * 4);

  // No columns: a count.
  pb::ScanRequestPB count;
  count.mutable_new_scan_request()->set_tablet_id(kTablet);
  resp.Clear();
  BASALT_ASSERT_OK(client_->Scan(count, &resp));
  EXPECT_EQ(resp.data().num_rows(), 5000);
  EXPECT_EQ(resp.data().columns_size(), 0);
}

TEST_F(TabletServerTest, ResumeAfterLastPrimaryKeyAtSnapshot) {
  CreateTablet(kTablet);
  InsertRange(0, 1000);
  pb::ScanRequestPB scan = NewScan();
  pb::NewScanRequestPB* n = scan.mutable_new_scan_request();
  n->set_ordered(true);
  n->set_read_mode(pb::READ_AT_SNAPSHOT);
  scan.set_batch_size_bytes(2000);
  pb::ScanResponsePB first;
  BASALT_ASSERT_OK(client_->Scan(scan, &first));
  ASSERT_TRUE(first.has_more_results());
  ASSERT_GT(first.snap_timestamp(), 0u);
  std::vector<TestRow> rows = DecodeTestRows(first.data());
  ASSERT_FALSE(rows.empty());
  // Rows written after the snapshot are not seen by the resumed scan.
  InsertRange(1000, 1100);
  pb::ScanRequestPB resume = NewScan();
  resume.mutable_new_scan_request()->set_ordered(true);
  resume.mutable_new_scan_request()->set_read_mode(pb::READ_AT_SNAPSHOT);
  resume.mutable_new_scan_request()->set_snap_timestamp(first.snap_timestamp());
  resume.mutable_new_scan_request()->set_last_primary_key(first.last_primary_key());
  absl::StatusOr<std::vector<TestRow>> rest = ScanAll(resume);
  BASALT_ASSERT_OK(rest);
  rows.insert(rows.end(), rest->begin(), rest->end());
  EXPECT_EQ(rows, Expected(0, 1000));
}

TEST_F(TabletServerTest, SnapshotScanOlderThanTheHistoryMarkIsRefused) {
  CreateTablet(kTablet);
  InsertRange(0, 10);
  pb::ScanRequestPB scan = NewScan();
  scan.mutable_new_scan_request()->set_read_mode(pb::READ_AT_SNAPSHOT);
  // Far below the ancient history mark (now - --tablet_history_max_age_sec, 900 s).
  scan.mutable_new_scan_request()->set_snap_timestamp(HybridTime::FromMicros(1).value());
  pb::ScanResponsePB resp;
  const absl::Status s = client_->Scan(scan, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("too old"), std::string::npos) << s;
  EXPECT_NE(s.message().find("--tablet_history_max_age_sec=900"), std::string::npos) << s;
  EXPECT_EQ(resp.data().num_rows(), 0);
  // A checksum at such a snapshot too.
  pb::ChecksumRequestPB sum;
  sum.set_tablet_id(kTablet);
  sum.set_snap_timestamp(HybridTime::FromMicros(1).value());
  pb::ChecksumResponsePB sum_resp;
  const absl::Status c = client_->Checksum(sum, &sum_resp);
  EXPECT_EQ(c.code(), absl::StatusCode::kInvalidArgument) << c;
  EXPECT_NE(c.message().find("too old"), std::string::npos) << c;
}

// A full disk (docs/tserver.md "Disk faults"): below the reserve, writes are refused with a
// retriable DISK_FULL naming the server and the directory, reads go on, a flush that meets ENOSPC
// fails without failing the replica, and everything resumes once space is freed, with nothing lost
// or corrupted (a restart reads every row back). On a real small tmpfs where the machine lets the
// test mount one (the free space and the reserve are then real), else with injected ENOSPC.
TEST_F(TabletServerTest, AFullDiskRefusesWritesUntilSpaceIsFreed) {
  TestDir mnt("disk_full_test");
  const bool tmpfs = mount("tmpfs", mnt.path().c_str(), "tmpfs", 0, "size=48m") == 0;
  if (!tmpfs) {
    std::cout << "mounting a tmpfs was refused (" << std::strerror(errno)
              << "); the full disk is injected instead" << std::endl;
  }
  const int64_t reserve_before = FLAGS_fs_data_dirs_reserved_bytes;
  FLAGS_fs_data_dirs_reserved_bytes = 16 << 20;
  client_.reset();
  server_.reset();
  data_dir_override_ = mnt.path() + "/data";
  StartServer();
  CreateTablet(kTablet);
  InsertRange(0, 1000);
  const std::string filler = mnt.path() + "/filler";
  if (tmpfs) {  // Leave 8 MiB free: below the reserve, far from ENOSPC.
    struct statvfs st;
    ASSERT_EQ(statvfs(mnt.path().c_str(), &st), 0) << std::strerror(errno);
    const uint64_t free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    ASSERT_GT(free_bytes, uint64_t{8} << 20);
    BASALT_ASSERT_OK(
        WriteStringToFile(Env::Default(), filler, std::string(free_bytes - (8 << 20), 'x'), true));
  } else {
    env_.SetEnospc(mnt.path(), 1.0);
  }
  // The monitor reads the free space again within a second; writes acknowledged meanwhile count.
  std::vector<TestRow> acked = Expected(0, 1000);
  int32_t next_key = 5000;
  absl::Status refused;
  auto write_next = [&] {
    WriteBuilder w(&schema_);
    w.Insert(next_key);
    pb::WriteResponsePB resp;
    absl::Status s = client_->Write(w.Build(kTablet), &resp);
    if (s.ok() && resp.per_row_errors_size() == 0) acked.push_back(ExpectedRow(next_key++));
    return s;
  };
  ASSERT_TRUE(WaitFor([&] {
    refused = write_next();
    return !refused.ok();
  }));
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_EQ(DetailCode(refused), pb::ErrorDetailPB::DISK_FULL) << refused;
  EXPECT_NE(refused.message().find(server_->uuid()), std::string::npos) << refused;
  EXPECT_NE(refused.message().find(data_dir_override_), std::string::npos) << refused;
  // Reads go on.
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan());
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(Sorted(*rows), Sorted(acked));
  // A flush that meets ENOSPC fails alone: the replica keeps running.
  auto replica = server_->tablet_manager()->Lookup(kTablet);
  BASALT_ASSERT_OK(replica);
  env_.SetEnospc(mnt.path(), 1.0);
  absl::Status flush = (*replica)->tablet()->FlushMemRowSet();
  EXPECT_TRUE(absl::IsResourceExhausted(flush)) << flush;
  EXPECT_EQ((*replica)->state(), ReplicaState::kRunning);
  // Space freed: writes resume by themselves.
  env_.SetEnospc("", 0);
  if (tmpfs) {
    BASALT_ASSERT_OK(Env::Default()->DeleteFile(filler));
  }
  ASSERT_TRUE(WaitFor([&] { return write_next().ok(); }));
  InsertRange(1000, 2000);
  BASALT_ASSERT_OK((*replica)->tablet()->FlushMemRowSet());
  replica = absl::StatusOr<std::shared_ptr<TabletReplica>>(nullptr);
  RestartServer();
  WaitForLeader(kTablet);
  rows = ScanAll(NewScan());
  BASALT_ASSERT_OK(rows);
  std::vector<TestRow> want = Expected(1000, 2000);
  want.insert(want.end(), acked.begin(), acked.end());
  EXPECT_EQ(Sorted(*rows), Sorted(want));
  client_.reset();
  server_.reset();
  FLAGS_fs_data_dirs_reserved_bytes = reserve_before;
  if (tmpfs) {
    EXPECT_EQ(umount2(mnt.path().c_str(), MNT_DETACH), 0) << std::strerror(errno);
  }
}

TEST_F(TabletServerTest, CallSeqIdRetryReturnsTheSameBatch) {
  CreateTablet(kTablet);
  InsertRange(0, 2000);
  pb::ScanRequestPB scan = NewScan();
  scan.set_batch_size_bytes(500);
  scan.mutable_new_scan_request()->set_ordered(true);
  pb::ScanResponsePB resp;
  BASALT_ASSERT_OK(client_->Scan(scan, &resp));
  const std::string id = resp.scanner_id();
  ASSERT_FALSE(id.empty());
  pb::ScanRequestPB next;
  next.set_scanner_id(id);
  next.set_call_seq_id(0);
  next.set_batch_size_bytes(500);
  pb::ScanResponsePB a, b;
  BASALT_ASSERT_OK(client_->Scan(next, &a));
  BASALT_ASSERT_OK(client_->Scan(next, &b));  // Retried: the same batch.
  EXPECT_GT(a.data().num_rows(), 0);
  a.clear_propagated_timestamp();  // The server's clock now: differs between calls.
  b.clear_propagated_timestamp();
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
  next.set_call_seq_id(5);
  pb::ScanResponsePB c;
  absl::Status s = client_->Scan(next, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  next.set_call_seq_id(1);
  BASALT_ASSERT_OK(client_->Scan(next, &c));
  ASSERT_GT(c.data().num_rows(), 0);
  EXPECT_EQ(DecodeTestRows(c.data()).front().key, DecodeTestRows(a.data()).back().key + 1);
  // Close explicitly.
  pb::ScanRequestPB close;
  close.set_scanner_id(id);
  close.set_close_scanner(true);
  BASALT_ASSERT_OK(client_->Scan(close, &c));
  EXPECT_EQ(server_->scanner_manager()->num_scanners(), 0u);
}

TEST_F(TabletServerTest, ScannerExpiresWithoutKeepAlive) {
  client_.reset();  // Restart with a short TTL.
  server_.reset();
  StartServer(/*scanner_ttl_ms=*/300);
  CreateTablet(kTablet);
  InsertRange(0, 500);
  pb::ScanRequestPB scan = NewScan();
  scan.set_batch_size_bytes(100);
  pb::ScanResponsePB resp;
  BASALT_ASSERT_OK(client_->Scan(scan, &resp));
  const std::string id = resp.scanner_id();
  // Keep-alives every 100 ms hold it open well past the TTL.
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    BASALT_ASSERT_OK(client_->KeepAlive(id)) << i;
  }
  pb::ScanRequestPB next;
  next.set_scanner_id(id);
  next.set_call_seq_id(0);
  BASALT_ASSERT_OK(client_->Scan(next, &resp));
  // Then left alone it expires (the reaper drops it).
  ASSERT_TRUE(WaitFor([&] { return server_->scanner_manager()->num_scanners() == 0; }));
  next.set_call_seq_id(1);
  absl::Status s = client_->Scan(next, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(DetailCode(s), pb::ErrorDetailPB::SCANNER_EXPIRED);
  EXPECT_EQ(DetailCode(client_->KeepAlive(id)), pb::ErrorDetailPB::SCANNER_EXPIRED);
}

TEST_F(TabletServerTest, ListTabletsAndChecksum) {
  CreateTablet(kTablet);
  CreateTablet("tablet-2");
  InsertRange(0, 300);
  pb::ListTabletsResponsePB list;
  BASALT_ASSERT_OK(client_->ListTablets(&list, /*schema=*/true));
  ASSERT_EQ(list.tablets_size(), 2);
  std::set<std::string> ids;
  for (const auto& t : list.tablets()) {
    ids.insert(t.tablet_id());
    EXPECT_EQ(t.state(), pb::TABLET_RUNNING);
    EXPECT_EQ(t.role(), pb::LEADER);
    EXPECT_EQ(t.leader_uuid(), server_->uuid());
    EXPECT_EQ(t.table_name(), "test_table");
    ASSERT_EQ(t.config().peers_size(), 1);
    EXPECT_EQ(t.config().peers(0).address().port(), static_cast<uint32_t>(server_->rpc_port()));
    EXPECT_EQ(t.schema().columns_size(), 3);
  }
  EXPECT_EQ(ids, (std::set<std::string>{kTablet, "tablet-2"}));

  pb::ChecksumRequestPB req;
  req.set_tablet_id(kTablet);
  pb::ChecksumResponsePB a, b;
  BASALT_ASSERT_OK(client_->Checksum(req, &a));
  EXPECT_EQ(a.num_rows(), 300u);
  EXPECT_NE(a.checksum(), 0u);
  // At the same snapshot after more writes (and a flush): the same checksum.
  InsertRange(300, 400);
  auto replica = *server_->tablet_manager()->Lookup(kTablet);
  BASALT_ASSERT_OK(replica->tablet()->FlushMemRowSet());
  req.set_snap_timestamp(a.snap_timestamp());
  BASALT_ASSERT_OK(client_->Checksum(req, &b));
  EXPECT_EQ(b.checksum(), a.checksum());
  EXPECT_EQ(b.num_rows(), 300u);
  req.set_snap_timestamp(0);
  BASALT_ASSERT_OK(client_->Checksum(req, &b));
  EXPECT_EQ(b.num_rows(), 400u);
  EXPECT_NE(b.checksum(), a.checksum());
}

TEST_F(TabletServerTest, RestartReplaysTheLog) {
  CreateTablet(kTablet);
  InsertRange(0, 2000);
  WriteBuilder w(&schema_);
  w.Add(RowOperationType::kUpdate, 10, -1, std::nullopt).Key(RowOperationType::kDelete, 11);
  ASSERT_TRUE(Write(w).empty());
  RestartServer();
  WaitForLeader(kTablet);
  std::vector<TestRow> expected = Expected(0, 2000);
  expected[10].int_val = -1;
  expected.erase(expected.begin() + 11);
  pb::ScanRequestPB scan = NewScan();
  scan.mutable_new_scan_request()->set_ordered(true);
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(scan);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(*rows, expected);
  // New writes after the restart work (timestamps continue above the replayed ones).
  InsertRange(2000, 2100);
}

TEST_F(TabletServerTest, RestartAfterFlushFindsEveryRow) {
  CreateTablet(kTablet);
  InsertRange(0, 1500);
  auto replica = *server_->tablet_manager()->Lookup(kTablet);
  BASALT_ASSERT_OK(replica->tablet()->FlushMemRowSet());
  replica.reset();
  InsertRange(1500, 3000);  // In the log only.
  WriteBuilder w(&schema_);
  w.Add(RowOperationType::kUpdate, 5, 7, std::nullopt);  // A flushed row, mutated after.
  ASSERT_TRUE(Write(w).empty());
  RestartServer();
  WaitForLeader(kTablet);
  std::vector<TestRow> expected = Expected(0, 3000);
  expected[5].int_val = 7;
  pb::ScanRequestPB scan = NewScan();
  scan.mutable_new_scan_request()->set_ordered(true);
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(scan);
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(*rows, expected);
  // Inserting a replayed key again is a duplicate.
  WriteBuilder dup(&schema_);
  dup.Insert(2999);
  EXPECT_EQ(Write(dup), (std::map<int, absl::StatusCode>{{0, absl::StatusCode::kAlreadyExists}}));
}

// An UPDATE of a flushed row sits in a DeltaMemStore when an ALTER arrives: the alter must make
// it durable first, or a restart would replay its entry (encoded for the old schema version)
// against the new schema and drop an acknowledged write.
TEST_F(TabletServerTest, UpdateBeforeAlterSurvivesRestart) {
  CreateTablet(kTablet);
  InsertRange(0, 100);
  {
    auto replica = *server_->tablet_manager()->Lookup(kTablet);
    BASALT_ASSERT_OK(replica->tablet()->FlushMemRowSet());
  }
  WriteBuilder w(&schema_);
  w.Add(RowOperationType::kUpdate, 5, 7, std::nullopt);  // Into the DiskRowSet's DMS.
  ASSERT_TRUE(Write(w).empty());
  BASALT_ASSERT_OK(AddExtraColumn());
  auto row5 = [&]() -> int32_t {
    pb::ScanRequestPB scan = NewScan();
    scan.mutable_new_scan_request()->set_ordered(true);
    absl::StatusOr<std::vector<TestRow>> rows = ScanAll(scan);
    BASALT_EXPECT_OK(rows);
    return rows.ok() && rows->size() > 5 ? (*rows)[5].int_val : -1;
  };
  EXPECT_EQ(row5(), 7);
  RestartServer();
  WaitForLeader(kTablet);
  EXPECT_EQ(row5(), 7) << "the acknowledged UPDATE was lost by the restart";
}

TEST_F(TabletServerTest, DeleteTabletRemovesItsFiles) {
  CreateTablet(kTablet);
  InsertRange(0, 1000);
  auto replica = *server_->tablet_manager()->Lookup(kTablet);
  BASALT_ASSERT_OK(replica->tablet()->FlushMemRowSet());
  replica.reset();
  Env* env = Env::Default();
  const std::string tablet_dir = JoinPath(JoinPath(dir_.path(), "tablets"), kTablet);
  ASSERT_TRUE(env->FileExists(tablet_dir));
  ASSERT_NE(server_->server_log(), nullptr);  // --log_per_server, the default.
  auto has_log = [&] { return server_->server_log()->HasGroup(kTablet); };
  ASSERT_TRUE(has_log());
  auto count_blocks = [&] {
    int n = 0;
    const std::string blocks = JoinPath(dir_.path(), "blocks");
    const std::vector<std::string> subs = *env->GetChildren(blocks);
    for (const std::string& sub : subs) {
      const std::string p = JoinPath(blocks, sub);
      if (sub == "." || sub == ".." || !*env->IsDirectory(p)) continue;
      const std::vector<std::string> files = *env->GetChildren(p);
      for (const std::string& f : files) n += (f != "." && f != "..");
    }
    return n;
  };
  ASSERT_GT(count_blocks(), 0);
  pb::DeleteTabletRequestPB del;
  del.set_dest_uuid(server_->uuid());
  del.set_tablet_id(kTablet);
  BASALT_ASSERT_OK(client_->DeleteTablet(del));
  EXPECT_FALSE(env->FileExists(tablet_dir));
  EXPECT_FALSE(has_log());
  EXPECT_EQ(count_blocks(), 0);
  absl::Status again = client_->DeleteTablet(del);
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(DetailCode(again), pb::ErrorDetailPB::TABLET_NOT_FOUND);
  // Gone after a restart too; the id can be reused.
  RestartServer();
  EXPECT_FALSE(has_log()) << "the dropped log came back";
  pb::ListTabletsResponsePB list;
  BASALT_ASSERT_OK(client_->ListTablets(&list));
  EXPECT_EQ(list.tablets_size(), 0);
  CreateTablet(kTablet);
  pb::ScanResponsePB resp;
  BASALT_ASSERT_OK(client_->Scan(NewScan(), &resp));
  EXPECT_EQ(resp.data().num_rows(), 0);
}

// The server log's group commit shows on /metrics: rounds written, the records in them, the
// replica logs it holds and its segments.
TEST_F(TabletServerTest, ServerLogShowsOnMetrics) {
  CreateTablet(kTablet);
  auto value = [](const std::string& series) {
    return SampleValue(MetricRegistry::Global()->RenderPrometheus(), series);
  };
  const double rounds = value("basalt_wal_server_rounds_total");
  const double records = value("basalt_wal_server_records_total");
  InsertRange(0, 500, 50);  // Ten batches, each a record.
  EXPECT_GE(value("basalt_wal_server_records_total") - records, 10);
  EXPECT_GE(value("basalt_wal_server_rounds_total") - rounds, 1);
  EXPECT_LE(value("basalt_wal_server_rounds_total") - rounds,
            value("basalt_wal_server_records_total") - records);
  EXPECT_EQ(value("basalt_wal_server_groups"), 1);
  EXPECT_GE(value("basalt_wal_server_segments"), 1);
}

// Replicas' own logs (wals/<id>/, --log_per_server=false) move into the server log at the next
// start with it, entries and all; going back to logs of their own is then refused, not started
// with empty logs.
TEST_F(TabletServerTest, ReplicaLogsMoveIntoTheServerLog) {
  gflags::FlagSaver saver;
  Env* env = Env::Default();
  FLAGS_log_per_server = false;
  RestartServer();
  ASSERT_EQ(server_->server_log(), nullptr);
  CreateTablet(kTablet);
  InsertRange(0, 1000);
  const std::string wal_dir = JoinPath(JoinPath(dir_.path(), "wals"), kTablet);
  ASSERT_TRUE(env->FileExists(wal_dir));
  auto count = [&]() -> int64_t {
    absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan());
    BASALT_EXPECT_OK(rows);
    return rows.ok() ? static_cast<int64_t>(rows->size()) : -1;
  };

  FLAGS_log_per_server = true;
  RestartServer();
  EXPECT_FALSE(env->FileExists(wal_dir));
  ASSERT_NE(server_->server_log(), nullptr);
  EXPECT_TRUE(server_->server_log()->HasGroup(kTablet));
  WaitForLeader(kTablet);
  EXPECT_EQ(count(), 1000);
  InsertRange(1000, 1100);
  // A move whose deletion of the old directory was cut short by a crash leaves it renamed, maybe
  // holding part of the old log: it is deleted, not moved in again over the complete copy.
  const std::string moved = wal_dir + ".moved";
  BASALT_ASSERT_OK(env->CreateDirs(moved));
  BASALT_ASSERT_OK(WriteStringToFile(env, JoinPath(moved, "wal-000000002"), "part", true));
  RestartServer();
  EXPECT_FALSE(env->FileExists(moved));
  WaitForLeader(kTablet);
  EXPECT_EQ(count(), 1100) << "rows written after the move were lost by a restart";

  FLAGS_log_per_server = false;
  client_.reset();
  server_.reset();
  {
    TabletServerOptions o = TestServerOptions(dir_.path());
    o.env = &env_;
    TabletServer refused(o);
    absl::Status s = refused.Start();
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    EXPECT_NE(s.message().find("server-wal"), std::string_view::npos) << s;
  }
  FLAGS_log_per_server = true;
  StartServer();
  WaitForLeader(kTablet);
  EXPECT_EQ(count(), 1100);
}

// An aggregate scan answers partial rows (docs/aggregates.md "Partial rows"): here COUNT(*),
// SUM(int_val) and MIN(s) grouped by nothing; bad aggregate requests name their field.
TEST_F(TabletServerTest, AggregateScansAnswerPartialRowsAndRefuseBadRequests) {
  CreateTablet(kTablet);
  InsertRange(0, 100);
  pb::ScanRequestPB scan;
  pb::NewScanRequestPB* n = scan.mutable_new_scan_request();
  n->set_tablet_id(kTablet);
  n->add_aggregates()->set_function(pb::AggregatePB::COUNT_ALL);
  pb::AggregatePB* sum = n->add_aggregates();
  sum->set_function(pb::AggregatePB::SUM);
  sum->set_column("int_val");
  pb::AggregatePB* min = n->add_aggregates();
  min->set_function(pb::AggregatePB::MIN);
  min->set_column("s");
  // The input columns as this client knows them: group columns (none), then aggregated ones.
  *n->add_projected_columns() = ProjectedColumn(schema_, "int_val");
  *n->add_projected_columns() = ProjectedColumn(schema_, "s");
  pb::ColumnPredicatePB* p = n->add_predicates();
  p->set_column("key");
  p->mutable_range()->set_lower(std::string("\x0a\0\0\0", 4));  // key >= 10
  pb::ScanResponsePB resp;
  BASALT_ASSERT_OK(client_->Scan(scan, &resp));
  EXPECT_FALSE(resp.has_more_results());
  ASSERT_EQ(resp.data().num_rows(), 1);
  ASSERT_EQ(resp.data().columns_size(), 3);
  // COUNT is an INT64; an integer SUM's partial is a 128-bit integer (little-endian).
  int64_t count = 0, total = 0;
  ASSERT_EQ(resp.data().columns(1).data().size(), 16u);
  std::memcpy(&count, resp.data().columns(0).data().data(), 8);
  std::memcpy(&total, resp.data().columns(1).data().data(), 8);
  EXPECT_EQ(count, 90);
  int64_t want = 0;
  std::string least;
  for (int32_t k = 10; k < 100; ++k) {
    want += ExpectedRow(k).int_val;
    if (ExpectedRow(k).s && (least.empty() || *ExpectedRow(k).s < least)) least = *ExpectedRow(k).s;
  }
  EXPECT_EQ(total, want);
  EXPECT_EQ(resp.data().columns(2).data(), least);

  auto expect_bad = [&](const pb::ScanRequestPB& req, const std::string& needle) {
    absl::Status s = client_->Scan(req, &resp);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(std::string(s.message()).find(needle), std::string::npos) << s << " lacks " << needle;
  };
  pb::ScanRequestPB bad = scan;
  *bad.mutable_new_scan_request()->add_projected_columns() = ProjectedColumn(schema_, "key");
  expect_bad(bad, "projected_columns: an aggregate scan lists its 2 input column(s)");
  // An input column of another type than the tablet's (dropped and re-added since).
  bad = scan;
  bad.mutable_new_scan_request()->mutable_projected_columns(0)->set_type(pb::INT64);
  expect_bad(bad, "projected_columns[0]: column int_val is");
  bad = scan;
  std::swap(*bad.mutable_new_scan_request()->mutable_projected_columns(0),
            *bad.mutable_new_scan_request()->mutable_projected_columns(1));
  expect_bad(bad, "expected input column int_val");
  bad = scan;
  bad.mutable_new_scan_request()->set_limit(5);
  expect_bad(bad, "limit");
  bad = scan;
  bad.mutable_new_scan_request()->clear_aggregates();
  bad.mutable_new_scan_request()->add_group_by()->set_column("s");
  expect_bad(bad, "group_by");
  bad = scan;
  bad.mutable_new_scan_request()->mutable_aggregates(1)->set_column("s");
  expect_bad(bad, "aggregates[1]: sum needs a numeric column, 's' is STRING");
  bad = scan;
  bad.mutable_new_scan_request()->mutable_aggregates(2)->set_function(
      static_cast<pb::AggregatePB::Function>(77));
  expect_bad(bad, "aggregates[2]: unknown function 77");
  bad = scan;
  pb::GroupByPB* g = bad.mutable_new_scan_request()->add_group_by();
  g->set_column("int_val");
  g->set_bucket_width_micros(60);
  expect_bad(
      bad, "group_by[0] (GROUP BY time_bucket(int_val, 60)): time_bucket needs a UNIXTIME_MICROS");
}

TEST_F(TabletServerTest, MalformedRequestsGetClearErrors) {
  CreateTablet(kTablet);
  InsertRange(0, 10);
  auto expect = [](const absl::Status& s, absl::StatusCode code,
                   std::optional<pb::ErrorDetailPB::Code> detail, const std::string& needle) {
    EXPECT_EQ(s.code(), code) << s;
    if (detail) {
      EXPECT_EQ(DetailCode(s), *detail) << s;
    }
    EXPECT_NE(std::string(s.message()).find(needle), std::string::npos) << s;
  };
  pb::WriteResponsePB wresp;
  // Unknown tablet.
  WriteBuilder w(&schema_);
  w.Insert(100);
  expect(client_->Write(w.Build("nope"), &wresp), absl::StatusCode::kNotFound,
         pb::ErrorDetailPB::TABLET_NOT_FOUND, "nope");
  // Bad row bytes: truncated and garbage.
  pb::WriteRequestPB bad = w.Build(kTablet);
  bad.mutable_row_operations()->mutable_rows()->resize(3);
  expect(client_->Write(bad, &wresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "row_operations");
  bad.mutable_row_operations()->set_rows(std::string(64, '\xff'));
  expect(client_->Write(bad, &wresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "row_operations");
  // A split row is not a write.
  WriteBuilder split(&schema_);
  split.Key(RowOperationType::kSplitRow, 5);
  expect(client_->Write(split.Build(kTablet), &wresp), absl::StatusCode::kInvalidArgument,
         std::nullopt, "not a write");
  // Schema mismatch: another column name.
  Schema other = *Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("other", DataType::kInt32),
       ColumnSchema("s", DataType::kString, true)},
      1);
  pb::WriteRequestPB mismatch = w.Build(kTablet);
  other.ToPB(mismatch.mutable_schema());
  expect(client_->Write(mismatch, &wresp), absl::StatusCode::kFailedPrecondition,
         pb::ErrorDetailPB::SCHEMA_MISMATCH, "schema");
  // A schema that does not parse; a missing schema.
  mismatch.mutable_schema()->mutable_columns(0)->set_type(static_cast<pb::DataType>(99));
  expect(client_->Write(mismatch, &wresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "schema");
  mismatch.clear_schema();
  expect(client_->Write(mismatch, &wresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "schema");

  pb::ScanResponsePB sresp;
  // Bad predicate: unknown column, and a value of the wrong size.
  pb::ScanRequestPB scan = NewScan();
  pb::ColumnPredicatePB* p = scan.mutable_new_scan_request()->add_predicates();
  p->set_column("missing");
  p->mutable_is_null();
  expect(client_->Scan(scan, &sresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "predicates[0]");
  p->set_column("int_val");
  p->mutable_equality()->set_value("abc");
  expect(client_->Scan(scan, &sresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "predicates[0]");
  // Bad projection: unknown column, wrong type, repeated column.
  scan = NewScan();
  scan.mutable_new_scan_request()->mutable_projected_columns(1)->set_name("zzz");
  expect(client_->Scan(scan, &sresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "projected_columns[1]");
  scan = NewScan();
  scan.mutable_new_scan_request()->mutable_projected_columns(1)->set_type(pb::INT64);
  expect(client_->Scan(scan, &sresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "projected_columns[1]");
  scan = NewScan();
  *scan.mutable_new_scan_request()->add_projected_columns() = ProjectedColumn(schema_, "key");
  expect(client_->Scan(scan, &sresp), absl::StatusCode::kInvalidArgument, std::nullopt, "repeated");
  // Bad read mode; both and neither of new scan and scanner id.
  scan = NewScan();
  scan.mutable_new_scan_request()->set_read_mode(static_cast<pb::ReadModePB>(42));
  expect(client_->Scan(scan, &sresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "read_mode");
  scan = NewScan();
  scan.set_scanner_id("x");
  expect(client_->Scan(scan, &sresp), absl::StatusCode::kInvalidArgument, std::nullopt,
         "exactly one");
  expect(client_->Scan(pb::ScanRequestPB(), &sresp), absl::StatusCode::kInvalidArgument,
         std::nullopt, "exactly one");
  // Garbage scanner id.
  pb::ScanRequestPB garbage;
  garbage.set_scanner_id(std::string("\x00\x01garbage\xff", 10));
  expect(client_->Scan(garbage, &sresp), absl::StatusCode::kNotFound,
         pb::ErrorDetailPB::SCANNER_EXPIRED, "scanner");
  // Admin: wrong dest uuid, bad tablet id, bad schema, config without this server.
  pb::CreateTabletRequestPB create =
      CreateTabletRequest("t2", {{server_->uuid(), server_->advertised_address()}});
  create.set_dest_uuid("someone-else");
  expect(client_->CreateTablet(create), absl::StatusCode::kFailedPrecondition,
         pb::ErrorDetailPB::WRONG_SERVER_UUID, "someone-else");
  create.set_dest_uuid(server_->uuid());
  create.set_tablet_id("../etc");
  expect(client_->CreateTablet(create), absl::StatusCode::kInvalidArgument, std::nullopt,
         "tablet_id");
  create.set_tablet_id("t2");
  create.mutable_schema()->clear_columns();
  expect(client_->CreateTablet(create), absl::StatusCode::kInvalidArgument, std::nullopt, "schema");
  create = CreateTabletRequest("t2", {{"another", HostPort{"127.0.0.1", 1}}});
  expect(client_->CreateTablet(create), absl::StatusCode::kInvalidArgument, std::nullopt, "config");
  create = CreateTabletRequest(kTablet, {{server_->uuid(), server_->advertised_address()}});
  expect(client_->CreateTablet(create), absl::StatusCode::kAlreadyExists, std::nullopt, kTablet);
  pb::DeleteTabletRequestPB del;
  del.set_tablet_id(kTablet);
  del.set_dest_uuid("wrong");
  expect(client_->DeleteTablet(del), absl::StatusCode::kFailedPrecondition,
         pb::ErrorDetailPB::WRONG_SERVER_UUID, "wrong");
  // The server still serves: the rows are all there.
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan());
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(Sorted(*rows), Expected(0, 10));
}

TEST_F(TabletServerTest, RowsOutsideThePartitionFailAlone) {
  pb::CreateTabletRequestPB create =
      CreateTabletRequest("ranged", {{server_->uuid(), server_->advertised_address()}});
  // Range partition [100, 200) of the key.
  create.mutable_partition()->set_partition_key_start(
      EncodeKey(schema_, std::vector<Datum>{Datum::Int32(100)}));
  create.mutable_partition()->set_partition_key_end(
      EncodeKey(schema_, std::vector<Datum>{Datum::Int32(200)}));
  BASALT_ASSERT_OK(client_->CreateTablet(create));
  WaitForLeader("ranged");
  WriteBuilder w(&schema_);
  w.Insert(99).Insert(100).Insert(150).Insert(200);
  EXPECT_EQ(Write(w, "ranged"),
            (std::map<int, absl::StatusCode>{{0, absl::StatusCode::kInvalidArgument},
                                             {3, absl::StatusCode::kInvalidArgument}}));
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan("ranged"));
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(Sorted(*rows), (std::vector<TestRow>{ExpectedRow(100), ExpectedRow(150)}));
}

TEST_F(TabletServerTest, WritesAreRefusedOnlyPastTheHardMemoryLimit) {
  client_.reset();
  server_.reset();
  StartServer(60000, /*memory_limit_bytes=*/8 << 20);
  CreateTablet(kTablet);
  // Fill the MemRowSet past the limit: writes slow down, then one is refused, retriably.
  absl::Status refused;
  int32_t key = 0;
  for (int batch = 0; batch < 400 && refused.ok(); ++batch) {
    WriteBuilder w(&schema_);
    for (int i = 0; i < 2000; ++i) w.Insert(key + i);
    pb::WriteResponsePB resp;
    refused = client_->Write(w.Build(kTablet), &resp);
    if (refused.ok()) key += 2000;
  }
  ASSERT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_EQ(DetailCode(refused), pb::ErrorDetailPB::SERVER_OVERLOADED);
  EXPECT_GT(server_->memory_budget()->GetStats().writes_rejected, 0);
  // An operator sees the throttling on /metrics.
  const std::string metrics = MetricRegistry::Global()->RenderPrometheus();
  for (const char* series :
       {"basalt_tserver_writes_refused_total{reason=\"memory_limit\"}",
        "basalt_tserver_writes_delayed_total", "basalt_tserver_write_delay_seconds_count",
        "basalt_tserver_memory_budget_used_bytes",
        "basalt_tserver_memory_budget_limit_bytes{limit=\"soft\"}"}) {
    EXPECT_NE(metrics.find(series), std::string::npos) << series << " missing";
  }
  EXPECT_EQ(metrics.find("basalt_tserver_writes_refused_total{reason=\"memory_limit\"} 0\n"),
            std::string::npos)
      << "no refusal counted";
  // Every acknowledged row is there.
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan());
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(Sorted(*rows), Expected(0, key));
  // Flushed (and, because Tablet reports its memory only after writes, restarted so the budget
  // sees the empty MemRowSet): writes are accepted again.
  auto replica = *server_->tablet_manager()->Lookup(kTablet);
  BASALT_ASSERT_OK(replica->tablet()->FlushMemRowSet());
  replica.reset();
  client_.reset();
  server_.reset();
  StartServer(60000, /*memory_limit_bytes=*/8 << 20);
  WaitForLeader(kTablet);
  InsertRange(key, key + 100, 100);
  rows = ScanAll(NewScan());
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(Sorted(*rows), Expected(0, key + 100));
}

TEST_F(TabletServerTest, CorruptReplicaFileFailsOnlyThatTablet) {
  CreateTablet(kTablet);
  CreateTablet("healthy");
  InsertRange(0, 10);
  client_.reset();
  server_.reset();
  const std::string path = JoinPath(JoinPath(JoinPath(dir_.path(), "tablets"), kTablet), "replica");
  std::string data;
  BASALT_ASSERT_OK(ReadFileToString(Env::Default(), path, &data));
  data[data.size() - 3] ^= 0x40;  // A flipped bit in the payload.
  BASALT_ASSERT_OK(WriteFileAtomically(Env::Default(), path, data));
  StartServer();
  pb::ListTabletsResponsePB list;
  BASALT_ASSERT_OK(client_->ListTablets(&list));
  std::map<std::string, pb::TabletStatusPB> by_id;
  for (const auto& t : list.tablets()) by_id[t.tablet_id()] = t;
  ASSERT_EQ(by_id.size(), 2u);
  EXPECT_EQ(by_id[kTablet].state(), pb::TABLET_FAILED);
  EXPECT_EQ(by_id[kTablet].error().code(), static_cast<int>(absl::StatusCode::kDataLoss));
  EXPECT_NE(by_id[kTablet].error().message().find("checksum"), std::string::npos);
  WriteBuilder w(&schema_);
  w.Insert(100);
  pb::WriteResponsePB resp;
  EXPECT_EQ(DetailCode(client_->Write(w.Build(kTablet), &resp)), pb::ErrorDetailPB::TABLET_FAILED);
  // The healthy tablet serves; truncated files fail the same clean way.
  WaitForLeader("healthy");
  EXPECT_TRUE(Write(WriteBuilder(&schema_).Insert(1), "healthy").empty());
  client_.reset();
  server_.reset();
  BASALT_ASSERT_OK(WriteFileAtomically(Env::Default(), path, data.substr(0, 5)));
  StartServer();
  EXPECT_EQ(DetailCode(client_->Write(w.Build(kTablet), &resp)), pb::ErrorDetailPB::TABLET_FAILED);
  // CreateTablet of a failed replica is not "already exists" (which the master takes as done).
  absl::Status again = client_->CreateTablet(
      CreateTabletRequest(kTablet, {{server_->uuid(), server_->advertised_address()}}));
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition) << again;
  EXPECT_NE(again.message().find("has failed"), std::string_view::npos) << again;
  // A failed replica can be deleted (and then created again).
  pb::DeleteTabletRequestPB del;
  del.set_tablet_id(kTablet);
  BASALT_ASSERT_OK(client_->DeleteTablet(del));
  CreateTablet(kTablet);
}

// Two data directories, a tablet's blocks in one of them: EIO in the second fails exactly the
// tablets whose blocks are there; the others serve on, also after a restart that finds the
// directory still failing (docs/tserver.md "Data directories").
TEST_F(TabletServerTest, AFailedDataDirFailsOnlyItsTablets) {
  gflags::FlagSaver saver;
  FLAGS_fs_target_data_dirs_per_tablet = 1;
  client_.reset();
  server_.reset();
  TestDir second("tablet_server_test_dir2");
  const std::string dir2 = second.path();
  extra_data_dirs_ = {dir2};
  StartServer();
  const std::vector<std::string> ids = {"t0", "t1", "t2", "t3"};
  std::map<std::string, int> dir_of;
  for (const std::string& id : ids) {
    CreateTablet(id);
    auto r = server_->tablet_manager()->Lookup(id);
    BASALT_ASSERT_OK(r);
    ASSERT_EQ((*r)->data_dirs().size(), 1u);
    dir_of[id] = (*r)->data_dirs()[0];
    for (int32_t k = 0; k < 20; ++k)
      ASSERT_TRUE(Write(WriteBuilder(&schema_).Insert(k), id).empty());
    BASALT_ASSERT_OK((*r)->tablet()->FlushMemRowSet());
    for (int32_t k = 20; k < 30; ++k)
      ASSERT_TRUE(Write(WriteBuilder(&schema_).Insert(k), id).empty());
  }
  // Balanced: two tablets in each directory.
  EXPECT_EQ(std::count_if(dir_of.begin(), dir_of.end(), [](auto& e) { return e.second == 1; }), 2);
  env_.SetEio(dir2 + "/", 1.0);
  // The first block operation there (a flush) fails the directory, and with it its tablets.
  for (const std::string& id : ids) {
    if (dir_of[id] != 1) continue;
    auto r = server_->tablet_manager()->Lookup(id);
    BASALT_ASSERT_OK(r);
    EXPECT_FALSE((*r)->tablet()->FlushMemRowSet().ok());
    break;
  }
  ASSERT_TRUE(WaitFor([&] {
    pb::ListTabletsResponsePB list;
    if (!client_->ListTablets(&list).ok()) return false;
    int failed = 0;
    for (const auto& t : list.tablets()) failed += t.state() == pb::TABLET_FAILED;
    return failed == 2;
  }));
  pb::ListTabletsResponsePB list;
  BASALT_ASSERT_OK(client_->ListTablets(&list));
  ASSERT_EQ(list.data_dirs_size(), 2);
  EXPECT_EQ(list.data_dirs(0).error(), "");
  EXPECT_NE(list.data_dirs(1).error().find("Input/output error"), std::string::npos)
      << list.data_dirs(1).error();
  for (const auto& t : list.tablets()) {
    if (dir_of[t.tablet_id()] == 1) {
      EXPECT_EQ(t.state(), pb::TABLET_FAILED) << t.tablet_id();
      EXPECT_NE(t.error().message().find(dir2), std::string::npos) << t.error().message();
    } else {
      EXPECT_EQ(t.state(), pb::TABLET_RUNNING) << t.tablet_id();
    }
  }
  // The others write, flush and scan on.
  for (const std::string& id : ids) {
    if (dir_of[id] != 0) continue;
    EXPECT_TRUE(Write(WriteBuilder(&schema_).Insert(100), id).empty());
    auto r = server_->tablet_manager()->Lookup(id);
    BASALT_ASSERT_OK(r);
    BASALT_EXPECT_OK((*r)->tablet()->FlushMemRowSet());
    absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan(id));
    BASALT_ASSERT_OK(rows);
    EXPECT_EQ(rows->size(), 31u);
  }
  // New tablets go to the working directory.
  CreateTablet("t4");
  auto t4 = server_->tablet_manager()->Lookup("t4");
  BASALT_ASSERT_OK(t4);
  EXPECT_EQ((*t4)->data_dirs(), std::vector<int>{0});
  t4 = absl::StatusOr<std::shared_ptr<TabletReplica>>(nullptr);
  // Restarted with the directory still failing: the server starts, the others serve.
  RestartServer();
  BASALT_ASSERT_OK(client_->ListTablets(&list));
  EXPECT_NE(list.data_dirs(1).error(), "");
  for (const auto& t : list.tablets()) {
    if (t.tablet_id() != "t4" && dir_of[t.tablet_id()] == 1) {
      EXPECT_EQ(t.state(), pb::TABLET_FAILED) << t.tablet_id();
      EXPECT_NE(t.error().message().find(dir2), std::string::npos) << t.error().message();
    }
  }
  for (const std::string& id : ids) {
    if (dir_of[id] != 0) continue;
    WaitForLeader(id);
    absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan(id));
    BASALT_ASSERT_OK(rows);
    EXPECT_EQ(rows->size(), 31u);
  }
  // A replica of the failed directory can be deleted.
  for (const std::string& id : ids) {
    if (dir_of[id] != 1) continue;
    pb::DeleteTabletRequestPB del;
    del.set_tablet_id(id);
    BASALT_EXPECT_OK(client_->DeleteTablet(del));
  }
  // The first directory holds every replica's metadata (and here the WAL): its failure fails all.
  server_->block_manager()->MarkDirFailed(0, absl::InternalError("injected: Input/output error"));
  ASSERT_TRUE(WaitFor([&] {
    pb::ListTabletsResponsePB l;
    if (!client_->ListTablets(&l).ok()) return false;
    for (const auto& t : l.tablets()) {
      if (t.state() == pb::TABLET_RUNNING) return false;
    }
    return true;
  }));
  env_.SetEio("", 0);
  client_.reset();
  server_.reset();
}

// The WAL directory (here apart from the data) fails: every replica depends on it, so all fail,
// including one that wrote nothing; the server says so and takes no new replica.
TEST_F(TabletServerTest, AFailedWalDirFailsEveryTablet) {
  client_.reset();
  server_.reset();
  TestDir wal("tablet_server_test_wal");
  wal_dir_override_ = wal.path();
  StartServer();
  CreateTablet("t0");
  CreateTablet("t1");
  EXPECT_TRUE(Write(WriteBuilder(&schema_).Insert(1), "t0").empty());
  pb::ListTabletsResponsePB list;
  BASALT_ASSERT_OK(client_->ListTablets(&list));
  EXPECT_EQ(list.wal_dir().path(), wal.path());
  EXPECT_EQ(list.wal_dir().error(), "");
  env_.SetEio(wal.path() + "/", 1.0);
  pb::WriteResponsePB resp;
  EXPECT_FALSE(client_->Write(WriteBuilder(&schema_).Insert(2).Build("t0"), &resp).ok());
  ASSERT_TRUE(WaitFor([&] {
    pb::ListTabletsResponsePB l;
    if (!client_->ListTablets(&l).ok()) return false;
    int failed = 0;
    for (const auto& t : l.tablets()) failed += t.state() == pb::TABLET_FAILED;
    return failed == 2;
  }));
  BASALT_ASSERT_OK(client_->ListTablets(&list));
  EXPECT_NE(list.wal_dir().error().find("Input/output error"), std::string::npos)
      << list.wal_dir().error();
  for (const auto& t : list.tablets()) {
    if (t.tablet_id() == "t1") {
      EXPECT_NE(t.error().message().find("WAL directory"), std::string::npos)
          << t.error().message();
    }
  }
  absl::Status create = client_->CreateTablet(
      CreateTabletRequest("t2", {{server_->uuid(), server_->advertised_address()}}));
  EXPECT_TRUE(absl::IsUnavailable(create)) << create;
  EXPECT_NE(create.message().find("WAL directory"), std::string::npos) << create;
  env_.SetEio("", 0);
  client_.reset();
  server_.reset();
}

// Exactly-once writes (docs/tserver.md): a retried request is answered with its first answer, not
// applied again: no ALREADY_EXISTS for the client's own inserts, an update retried after a later
// one does not undo it, also after a restart (from the WAL); below the client's watermark a
// request is refused.
TEST_F(TabletServerTest, ARetriedWriteIsAnsweredNotAppliedAgain) {
  CreateTablet(kTablet);
  auto send = [&](const pb::WriteRequestPB& req, pb::WriteResponsePB* resp) {
    resp->Clear();
    return client_->Write(req, resp);
  };
  const pb::WriteRequestPB insert =
      WithRequestId(WriteBuilder(&schema_).Insert(1).Insert(2).Insert(1).Build(kTablet), "c", 1, 1);
  pb::WriteResponsePB first;
  BASALT_ASSERT_OK(send(insert, &first));
  ASSERT_EQ(first.per_row_errors_size(), 1);  // Its own duplicate: a real error, kept.
  EXPECT_EQ(first.per_row_errors(0).row_index(), 2);
  pb::WriteResponsePB again;
  BASALT_ASSERT_OK(send(insert, &again));
  EXPECT_EQ(again.SerializeAsString(), first.SerializeAsString());
  // Without an id, the same rows are applied again: ALREADY_EXISTS for all.
  pb::WriteRequestPB anonymous = insert;
  anonymous.clear_request_id();
  pb::WriteResponsePB plain;
  BASALT_ASSERT_OK(send(anonymous, &plain));
  EXPECT_EQ(plain.per_row_errors_size(), 3);

  const pb::WriteRequestPB update10 = WithRequestId(
      WriteBuilder(&schema_).Add(RowOperationType::kUpdate, 1, 10, std::nullopt).Build(kTablet),
      "c", 2, 2);
  const pb::WriteRequestPB update20 = WithRequestId(
      WriteBuilder(&schema_).Add(RowOperationType::kUpdate, 1, 20, std::nullopt).Build(kTablet),
      "c", 3, 2);  // 2 is still incomplete for the client: it may retry it.
  pb::WriteResponsePB r10, r20, retried;
  BASALT_ASSERT_OK(send(update10, &r10));
  BASALT_ASSERT_OK(send(update20, &r20));
  BASALT_ASSERT_OK(send(update10, &retried));
  EXPECT_EQ(retried.timestamp(), r10.timestamp());
  auto value_of_1 = [&]() -> int32_t {
    absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan());
    EXPECT_TRUE(rows.ok()) << rows.status();
    for (const TestRow& r : rows.ok() ? *rows : std::vector<TestRow>{}) {
      if (r.key == 1) return r.int_val;
    }
    return -1;
  };
  EXPECT_EQ(value_of_1(), 20);

  // A restart answers from the WAL it replays.
  RestartServer();
  WaitForLeader(kTablet);
  BASALT_ASSERT_OK(send(update10, &retried));
  EXPECT_EQ(retried.timestamp(), r10.timestamp());
  EXPECT_EQ(value_of_1(), 20);
  // Flushed, the entries are not replayed any more: the answers come from the answers file.
  {
    auto replica = server_->tablet_manager()->Lookup(kTablet);
    BASALT_ASSERT_OK(replica);
    BASALT_ASSERT_OK((*replica)->tablet()->FlushMemRowSet());
    EXPECT_GE((*replica)->tablet()->PersistedDurableOpIndex(),
              static_cast<int64_t>((*replica)->GetStatus().last_applied_index) - 1);
  }
  RestartServer();
  WaitForLeader(kTablet);
  BASALT_ASSERT_OK(send(update10, &retried));
  EXPECT_EQ(retried.timestamp(), r10.timestamp());
  EXPECT_EQ(value_of_1(), 20);
  // The insert is below the watermark the updates carried (the client completed it).
  EXPECT_TRUE(absl::IsFailedPrecondition(send(insert, &again)));

  // Once the client says 1..3 are complete, they are forgotten and refused.
  pb::WriteResponsePB r;
  BASALT_ASSERT_OK(
      send(WithRequestId(WriteBuilder(&schema_).Insert(7).Build(kTablet), "c", 4, 4), &r));
  absl::Status stale = send(update10, &r);
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  EXPECT_EQ(value_of_1(), 20);
}

// The answer check comes before the schema check: a write applied before an ALTER and retried
// after it gets its answer, not SCHEMA_MISMATCH (a client would re-encode the rows and send them
// as a new request: applied twice).
TEST_F(TabletServerTest, ARetryAfterAnAlterGetsItsFirstAnswer) {
  CreateTablet(kTablet);
  const pb::WriteRequestPB insert =
      WithRequestId(WriteBuilder(&schema_).Insert(1).Build(kTablet), "c", 1, 1);
  pb::WriteResponsePB first;
  BASALT_ASSERT_OK(client_->Write(insert, &first));
  BASALT_ASSERT_OK(AddExtraColumn());

  pb::WriteResponsePB again;
  BASALT_ASSERT_OK(client_->Write(insert, &again));
  EXPECT_EQ(again.SerializeAsString(), first.SerializeAsString());
  // A new request with the old schema is refused, and not remembered as in progress.
  const pb::WriteRequestPB second =
      WithRequestId(WriteBuilder(&schema_).Insert(2).Build(kTablet), "c", 2, 1);
  // The tablet's version, past the request's 0: its client may send the rows again re-encoded.
  ExpectRefusedTwiceForSchema(second, 1);
}

// A request for a newer schema version whose columns are this tablet's (a RENAME TABLE the replica
// has not applied yet: the client learned the version from the master first) is refused before it
// is replicated, naming the tablet's version, and nothing of it is remembered: the same request
// applies once the tablet is at that version. Accepted, its entry would have been stamped with
// the older version and applied nothing after the alter's entry, and every retry of it would have
// been answered that, for a version the client's rows were already past, until its timeout.
TEST_F(TabletServerTest, ARequestForANewerVersionWithTheSameColumnsIsRefusedUntilTheAlter) {
  CreateTablet(kTablet);
  pb::WriteRequestPB insert =
      WithRequestId(WriteBuilder(&schema_).Insert(1).Build(kTablet), "c", 1, 1);
  insert.mutable_schema()->set_version(1);
  ExpectRefusedTwiceForSchema(insert, 0);
  absl::StatusOr<std::vector<TestRow>> rows = ScanAll(NewScan());
  BASALT_ASSERT_OK(rows);
  EXPECT_TRUE(rows->empty());
  // The rename: version 1, the same columns.
  pb::AlterSchemaRequestPB alter;
  alter.set_dest_uuid(server_->uuid());
  alter.set_tablet_id(kTablet);
  schema_.ToPB(alter.mutable_schema());
  alter.mutable_schema()->set_version(1);
  alter.set_new_table_name("renamed");
  pb::AlterSchemaResponsePB altered;
  BASALT_ASSERT_OK(client_->AlterSchema(alter, &altered));
  ASSERT_EQ(altered.schema_version(), 1u);
  pb::WriteResponsePB r;
  BASALT_ASSERT_OK(client_->Write(insert, &r));
  EXPECT_EQ(r.per_row_errors_size(), 0);
  rows = ScanAll(NewScan());
  BASALT_ASSERT_OK(rows);
  EXPECT_EQ(rows->size(), 1u);
}

TEST_F(TabletServerTest, PropagatedTimestampOrdersWrites) {
  CreateTablet(kTablet);
  WriteBuilder w(&schema_);
  w.Insert(1);
  pb::WriteRequestPB req = w.Build(kTablet);
  const uint64_t future = server_->clock()->Now().value() + (uint64_t{1000} << 12);  // +1 ms.
  req.set_propagated_timestamp(future);
  pb::WriteResponsePB resp;
  ASSERT_TRUE(WaitFor([&] { return client_->Write(req, &resp).ok(); }));
  EXPECT_GT(resp.timestamp(), future);
  // Far in the future (an hour): refused, naming the field.
  req.set_propagated_timestamp(future + (uint64_t{3600} * 1000000 << 12));
  absl::Status s = client_->Write(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(std::string(s.message()).find("propagated_timestamp"), std::string::npos);
}

}  // namespace tablet_server_test_file
}  // namespace
}  // namespace basalt
