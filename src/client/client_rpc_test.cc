// Tests of sessions and scanners against in-process fake master and tablet server services:
// flush modes, the bounded buffer, the error collector, retries, scan continuation, limits, fault
// tolerance and malformed responses. (Tests against real daemons live in tests/.)

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/client_internal.h"
#include "client/elastic_thread_pool.h"
#include "common/arena.h"
#include "common/bitmap.h"
#include "common/key_encoder.h"
#include "common/partition.h"
#include "common/row_operations.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "grpcpp/grpcpp.h"
#include "proto/master.grpc.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"

namespace basalt::client {
namespace {
namespace client_rpc_test_file {

// key INT32 primary key, v INT32 NULL; 2 hash buckets on key, so 2 tablets.
constexpr int kNumTablets = 2;
constexpr int kNumServers = 3;
constexpr int kScanBatchRows = 30;

basalt::Schema TableSchema(uint32_t version = 0) {
  return basalt::Schema::Create({basalt::ColumnSchema("key", basalt::DataType::kInt32),
                                 basalt::ColumnSchema("v", basalt::DataType::kInt32, true)},
                                1, {10, 11}, version)
      .value();
}

absl::Status Detail(absl::Status s, pb::ErrorDetailPB::Code code, const std::string& leader = "") {
  pb::ErrorDetailPB d;
  d.set_code(code);
  d.set_leader_uuid(leader);
  return WithErrorDetail(std::move(s), d);
}

// The rows of one tablet, shared by its replicas (replication is not the point here).
struct Store {
  absl::Mutex mu;
  std::map<int32_t, std::optional<int32_t>> rows ABSL_GUARDED_BY(mu);
};

// A tablet server whose replicas all share per-tablet Stores. Failures are scripted per server.
class FakeTabletServer final : public pb::TabletServerService::Service {
 public:
  FakeTabletServer(std::string uuid, std::map<std::string, Store*> stores)
      : uuid_(std::move(uuid)), stores_(std::move(stores)) {}

  grpc::Status Write(grpc::ServerContext*, const pb::WriteRequestPB* req,
                     pb::WriteResponsePB* resp) override {
    {
      absl::MutexLock l(&mu_);
      writes_++;
      seqs_.push_back(req->request_id().seq_no());
      if (getenv("FAKE_DEBUG"))
        LOG(INFO) << uuid_ << " write " << req->tablet_id() << " rows "
                  << req->row_operations().rows().size();
      blocked_++;
      mu_.Await(absl::Condition(
          +[](bool* open) { return *open; }, &gate_open_));
      blocked_--;
      if (!write_failures_.empty()) {
        absl::Status s = write_failures_.front();
        write_failures_.pop_front();
        return ToGrpcStatus(s);
      }
    }
    auto it = stores_.find(req->tablet_id());
    if (it == stores_.end()) {
      return ToGrpcStatus(
          Detail(absl::NotFoundError("no tablet"), pb::ErrorDetailPB::TABLET_NOT_FOUND));
    }
    auto schema = basalt::Schema::FromPB(req->schema());
    if (!schema.ok()) return ToGrpcStatus(schema.status());
    Arena arena(4096);
    RowOperationsDecoder dec(&*schema, &arena);
    std::vector<DecodedRowOperation> ops;
    absl::Status s = dec.Decode(req->row_operations(), &ops);
    if (!s.ok()) return ToGrpcStatus(s);
    absl::MutexLock l(&it->second->mu);
    auto& rows = it->second->rows;
    for (size_t i = 0; i < ops.size(); i++) {
      int32_t key;
      std::memcpy(&key, ops[i].cell(0), 4);
      std::optional<int32_t> v;
      if (ops[i].IsSet(1) && !ops[i].IsNull(1)) v = *static_cast<const int32_t*>(ops[i].cell(1));
      absl::Status err;
      switch (ops[i].type) {
        case RowOperationType::kInsert:
          if (!rows.emplace(key, v).second) err = absl::AlreadyExistsError("key already present");
          break;
        case RowOperationType::kDelete:
          if (rows.erase(key) == 0) err = absl::NotFoundError("key not found");
          break;
        case RowOperationType::kDeleteIgnore:
          rows.erase(key);
          break;
        default:
          rows[key] = v;
      }
      if (!err.ok()) {
        auto* e = resp->add_per_row_errors();
        e->set_row_index(static_cast<int>(i));
        StatusToPB(err, e->mutable_error());
      }
    }
    resp->set_timestamp(1000);
    return grpc::Status::OK;
  }

  grpc::Status ScannerKeepAlive(grpc::ServerContext*, const pb::ScannerKeepAliveRequestPB* req,
                                pb::ScannerKeepAliveResponsePB*) override {
    absl::MutexLock l(&mu_);
    keep_alives_++;
    if (scanners_.count(req->scanner_id()) == 0) {
      return ToGrpcStatus(
          Detail(absl::NotFoundError("no scanner"), pb::ErrorDetailPB::SCANNER_EXPIRED));
    }
    return grpc::Status::OK;
  }

  grpc::Status Scan(grpc::ServerContext*, const pb::ScanRequestPB* req,
                    pb::ScanResponsePB* resp) override {
    absl::MutexLock l(&mu_);
    scans_++;
    if (!req->scanner_id().empty()) {
      if (req->close_scanner()) {
        scanners_.erase(req->scanner_id());
        return grpc::Status::OK;
      }
      auto it = scanners_.find(req->scanner_id());
      if (it == scanners_.end()) {
        return ToGrpcStatus(
            Detail(absl::NotFoundError("no scanner"), pb::ErrorDetailPB::SCANNER_EXPIRED));
      }
      const std::string tablet = it->second.tablet_id;
      auto not_slow = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return slow_tablet_ != tablet; };
      mu_.Await(absl::Condition(&not_slow));
      if (!scan_failures_.empty() && (failing_tablet_.empty() || failing_tablet_ == tablet)) {
        absl::Status s = scan_failures_.front();
        scan_failures_.pop_front();
        return ToGrpcStatus(s);
      }
      it = scanners_.find(req->scanner_id());  // Closed while this call waited?
      if (it == scanners_.end()) {
        return ToGrpcStatus(
            Detail(absl::NotFoundError("no scanner"), pb::ErrorDetailPB::SCANNER_EXPIRED));
      }
      return NextBatch(req->scanner_id(), &it->second, resp);
    }
    const pb::NewScanRequestPB& n = req->new_scan_request();
    new_scans_.push_back(n);
    auto store = stores_.find(n.tablet_id());
    if (store == stores_.end()) {
      return ToGrpcStatus(
          Detail(absl::NotFoundError("no tablet"), pb::ErrorDetailPB::TABLET_NOT_FOUND));
    }
    std::vector<std::pair<int32_t, std::optional<int32_t>>> rows;
    const basalt::Schema schema = TableSchema();
    std::optional<int32_t> after;
    if (!n.last_primary_key().empty()) {
      after = static_cast<int32_t>(DecodeKey(schema, n.last_primary_key()).value()[0].int_value());
    }
    {
      absl::MutexLock sl(&store->second->mu);
      for (const auto& [k, v] : store->second->rows) {
        if (after && k <= *after) continue;
        if (n.predicates_size() > 0 && n.predicates(0).has_equality()) {
          int32_t eq;
          std::memcpy(&eq, n.predicates(0).equality().value().data(), 4);
          if (k != eq) continue;
        }
        rows.emplace_back(k, v);
      }
    }
    const std::string id = StrCat(uuid_, "-", next_scanner_++);
    Scanner& sc = scanners_[id];
    sc.rows = std::move(rows);
    sc.num_columns = n.projected_columns_size();
    sc.tablet_id = n.tablet_id();
    resp->set_snap_timestamp(n.snap_timestamp() ? n.snap_timestamp() : 777);
    return NextBatch(id, &sc, resp);
  }

  std::string uuid_;
  std::map<std::string, Store*> stores_;
  absl::Mutex mu_;
  int writes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> seqs_ ABSL_GUARDED_BY(mu_);  // Of every Write, in arrival order.
  int blocked_ ABSL_GUARDED_BY(mu_) = 0;
  bool gate_open_ ABSL_GUARDED_BY(mu_) = true;
  std::deque<absl::Status> write_failures_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::Status> scan_failures_ ABSL_GUARDED_BY(mu_);
  int scans_ ABSL_GUARDED_BY(mu_) = 0;
  int keep_alives_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<pb::NewScanRequestPB> new_scans_ ABSL_GUARDED_BY(mu_);
  bool corrupt_scans_ ABSL_GUARDED_BY(mu_) = false;
  // Continuations of scans of this tablet wait until it changes.
  std::string slow_tablet_ ABSL_GUARDED_BY(mu_);
  // When set, scan_failures_ go to continuations of this tablet only.
  std::string failing_tablet_ ABSL_GUARDED_BY(mu_);

 private:
  struct Scanner {
    std::vector<std::pair<int32_t, std::optional<int32_t>>> rows;
    size_t pos = 0;
    int num_columns = 2;
    std::string tablet_id;
  };

  grpc::Status NextBatch(const std::string& id, Scanner* sc, pb::ScanResponsePB* resp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t end = std::min(sc->rows.size(), sc->pos + kScanBatchRows);
    auto* data = resp->mutable_data();
    data->set_num_rows(static_cast<int64_t>(end - sc->pos));
    std::string keys, values, nulls(BitmapSize(end - sc->pos), '\0');
    for (size_t i = sc->pos; i < end; i++) {
      keys.append(reinterpret_cast<const char*>(&sc->rows[i].first), 4);
      int32_t v = sc->rows[i].second.value_or(0);
      values.append(reinterpret_cast<const char*>(&v), 4);
      if (!sc->rows[i].second)
        nulls[(i - sc->pos) / 8] |= static_cast<char>(1 << ((i - sc->pos) % 8));
    }
    if (sc->num_columns >= 1) data->add_columns()->set_data(keys);
    if (sc->num_columns >= 2) {
      auto* c = data->add_columns();
      c->set_data(values);
      c->set_null_bitmap(nulls);
    }
    if (corrupt_scans_) data->add_columns();  // One column too many.
    if (end > sc->pos) {
      resp->set_last_primary_key(
          EncodeKey(TableSchema(), std::vector<Datum>{Datum::Int32(sc->rows[end - 1].first)}));
    }
    sc->pos = end;
    resp->set_has_more_results(end < sc->rows.size());
    if (resp->has_more_results()) resp->set_scanner_id(id);
    return grpc::Status::OK;
  }

  std::map<std::string, Scanner> scanners_ ABSL_GUARDED_BY(mu_);
  int next_scanner_ ABSL_GUARDED_BY(mu_) = 0;
};

class FakeMaster final : public pb::MasterService::Service {
 public:
  grpc::Status GetTableSchema(grpc::ServerContext*, const pb::GetTableSchemaRequestPB* req,
                              pb::GetTableSchemaResponsePB* resp) override {
    {
      absl::MutexLock l(&mu);
      schema_calls++;
      if (redirect_port > 0) {
        pb::ErrorDetailPB d;
        d.set_code(pb::ErrorDetailPB::NOT_THE_LEADER_MASTER);
        d.mutable_leader_address()->set_host("127.0.0.1");
        d.mutable_leader_address()->set_port(redirect_port);
        return ToGrpcStatus(WithErrorDetail(absl::UnavailableError("not the leader"), d));
      }
      if (not_ready > 0) {
        not_ready--;
        return ToGrpcStatus(
            Detail(absl::UnavailableError("loading"), pb::ErrorDetailPB::CATALOG_NOT_READY));
      }
    }
    if (req->table().table_name() != "t" && req->table().table_id() != "tid") {
      return ToGrpcStatus(
          Detail(absl::NotFoundError("no table"), pb::ErrorDetailPB::TABLE_NOT_FOUND));
    }
    resp->set_table_id("tid");
    resp->set_table_name("t");
    uint32_t version;
    {
      absl::MutexLock l(&mu);
      version = schema_version;
    }
    TableSchema(version).ToPB(resp->mutable_schema());
    partition_schema.ToPB(resp->mutable_partition_schema());
    resp->set_num_replicas(kNumServers);
    return grpc::Status::OK;
  }

  grpc::Status GetTableLocations(grpc::ServerContext*, const pb::GetTableLocationsRequestPB* req,
                                 pb::GetTableLocationsResponsePB* resp) override {
    absl::MutexLock l(&mu);
    lookups++;
    resp->set_ttl_millis(60000);
    for (const auto& loc : locations) {
      const auto& end = loc.partition().partition_key_end();
      if (!end.empty() && end <= req->partition_key_start()) continue;
      *resp->add_tablet_locations() = loc;
    }
    return grpc::Status::OK;
  }

  PartitionSchema partition_schema;
  absl::Mutex mu;
  std::vector<pb::TabletLocationsPB> locations ABSL_GUARDED_BY(mu);
  int lookups ABSL_GUARDED_BY(mu) = 0;
  int schema_calls ABSL_GUARDED_BY(mu) = 0;
  int redirect_port ABSL_GUARDED_BY(mu) = 0;        // > 0: a follower pointing there.
  int not_ready ABSL_GUARDED_BY(mu) = 0;            // Answers CATALOG_NOT_READY this many times.
  uint32_t schema_version ABSL_GUARDED_BY(mu) = 0;  // The table's (same columns, any version).
};

struct Server {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

template <typename Service>
Server Serve(Service* service) {
  grpc::ServerBuilder b;
  ConfigureServerBuilder(&b);
  Server s;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &s.port);
  b.RegisterService(service);
  s.server = b.BuildAndStart();
  CHECK(s.server != nullptr && s.port > 0);
  return s;
}

class ClientRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const basalt::Schema schema = TableSchema();
    master_.partition_schema =
        PartitionSchema::Create(schema, {{{"key"}, kNumTablets, 0}}, {}).value();
    auto parts = master_.partition_schema.CreatePartitions({}, {});
    BASALT_ASSERT_OK(parts);
    ASSERT_EQ(parts->size(), static_cast<size_t>(kNumTablets));
    std::map<std::string, Store*> stores;
    for (int t = 0; t < kNumTablets; t++) stores["t" + std::to_string(t)] = &stores_[t];
    for (int i = 0; i < kNumServers; i++) {
      tservers_.push_back(std::make_unique<FakeTabletServer>("ts" + std::to_string(i), stores));
      servers_.push_back(Serve(tservers_.back().get()));
    }
    master_server_ = Serve(&master_);
    for (int t = 0; t < kNumTablets; t++) {
      pb::TabletLocationsPB loc;
      loc.set_tablet_id("t" + std::to_string(t));
      (*parts)[t].ToPB(loc.mutable_partition());
      for (int i = 0; i < kNumServers; i++) {
        auto* r = loc.add_replicas();
        r->set_ts_uuid("ts" + std::to_string(i));
        r->mutable_rpc_address()->set_host("127.0.0.1");
        r->mutable_rpc_address()->set_port(servers_[i].port);
        r->set_role(i == 0 ? pb::LEADER : pb::FOLLOWER);
      }
      absl::MutexLock l(&master_.mu);
      master_.locations.push_back(loc);
    }
    BASALT_ASSERT_OK(ClientBuilder()
                         .add_master_server_addr(StrCat("127.0.0.1:", master_server_.port))
                         .default_rpc_timeout(std::chrono::seconds(10))
                         .Build(&client_));
    BASALT_ASSERT_OK(client_->OpenTable("t", &table_));
  }

  void TearDown() override {
    table_.reset();
    client_.reset();
    for (auto& s : servers_) s.server->Shutdown();
    master_server_.server->Shutdown();
  }

  std::unique_ptr<WriteOperation> Insert(int32_t key, std::optional<int32_t> v = std::nullopt) {
    auto op = table_->NewInsert();
    CHECK(op->mutable_row()->SetInt32("key", key).ok());
    if (v) CHECK(op->mutable_row()->SetInt32("v", *v).ok());
    return op;
  }
  size_t RowCount() {
    size_t n = 0;
    for (auto& s : stores_) {
      absl::MutexLock l(&s.mu);
      n += s.rows.size();
    }
    return n;
  }
  // A new client (an empty meta cache) and its handle of table "t".
  void FreshClient(std::shared_ptr<Client>* client, std::shared_ptr<Table>* table) {
    BASALT_ASSERT_OK(ClientBuilder()
                         .add_master_server_addr(StrCat("127.0.0.1:", master_server_.port))
                         .Build(client));
    BASALT_ASSERT_OK((*client)->OpenTable("t", table));
  }
  // The request sequence numbers of every server's Writes.
  std::vector<uint64_t> Seqs() {
    std::vector<uint64_t> out;
    for (auto& ts : tservers_) {
      absl::MutexLock l(&ts->mu_);
      out.insert(out.end(), ts->seqs_.begin(), ts->seqs_.end());
    }
    return out;
  }
  int Writes(int server) {
    absl::MutexLock l(&tservers_[server]->mu_);
    return tservers_[server]->writes_;
  }
  void FailWrites(int server, std::vector<absl::Status> failures) {
    absl::MutexLock l(&tservers_[server]->mu_);
    for (auto& s : failures) tservers_[server]->write_failures_.push_back(s);
  }
  std::vector<int32_t> ScanKeys(Scanner* scanner) {
    std::vector<int32_t> keys;
    ScanBatch batch;
    while (scanner->HasMoreRows()) {
      absl::Status s = scanner->NextBatch(&batch);
      BASALT_EXPECT_OK(s);
      if (!s.ok()) break;
      for (int64_t i = 0; i < batch.NumRows(); i++) {
        int32_t k;
        BASALT_EXPECT_OK(batch.Row(i).GetInt32("key", &k));
        keys.push_back(k);
      }
    }
    return keys;
  }

  Store stores_[kNumTablets];
  std::vector<std::unique_ptr<FakeTabletServer>> tservers_;
  std::vector<Server> servers_;
  FakeMaster master_;
  Server master_server_;
  std::shared_ptr<Client> client_;
  std::shared_ptr<Table> table_;
};

TEST_F(ClientRpcTest, OpenTableReportsUnknownTables) {
  EXPECT_EQ(table_->id(), "tid");
  EXPECT_EQ(table_->schema().num_columns(), 2);
  std::shared_ptr<Table> t;
  EXPECT_EQ(client_->OpenTable("nope", &t).code(), absl::StatusCode::kNotFound);
}

TEST_F(ClientRpcTest, MasterProxyFollowsLeaderHintsAndWaitsForTheCatalog) {
  FakeMaster follower;
  {
    absl::MutexLock l(&follower.mu);
    follower.redirect_port = master_server_.port;
  }
  Server follower_server = Serve(&follower);
  {
    absl::MutexLock l(&master_.mu);
    master_.not_ready = 2;
    master_.schema_calls = 0;
  }
  // The follower is listed first, the leader not at all: its hint is the only way there.
  std::shared_ptr<Client> client;
  BASALT_ASSERT_OK(ClientBuilder()
                       .add_master_server_addr(StrCat("127.0.0.1:", follower_server.port))
                       .Build(&client));
  std::shared_ptr<Table> table;
  absl::Status s = client->OpenTable("t", &table);
  BASALT_EXPECT_OK(s);
  {
    absl::MutexLock l(&master_.mu);
    EXPECT_EQ(master_.schema_calls, 3);  // Two CATALOG_NOT_READY, then the answer.
  }
  {
    absl::MutexLock l(&follower.mu);
    EXPECT_EQ(follower.schema_calls, 1);
  }
  // The leader is remembered.
  BASALT_ASSERT_OK(client->OpenTable("t", &table));
  {
    absl::MutexLock l(&follower.mu);
    EXPECT_EQ(follower.schema_calls, 1);
  }
  follower_server.server->Shutdown();
}

TEST_F(ClientRpcTest, ManualFlushSendsOnFlushAndCollectsRowErrors) {
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  for (int i = 0; i < 100; i++) BASALT_ASSERT_OK(session->Apply(Insert(i, i * 10)));
  BASALT_ASSERT_OK(session->Apply(Insert(5, 1)));  // A duplicate.
  EXPECT_EQ(session->CountBufferedOperations(), 101);
  EXPECT_EQ(Writes(0), 0);
  EXPECT_EQ(session->SetFlushMode(Session::AUTO_FLUSH_SYNC).code(),
            absl::StatusCode::kFailedPrecondition);
  absl::Status s = session->Flush();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown) << s;
  EXPECT_EQ(session->CountBufferedOperations(), 0);
  EXPECT_FALSE(session->HasPendingOperations());
  EXPECT_EQ(Writes(0), kNumTablets);  // One batch per tablet, to the leader.
  EXPECT_EQ(RowCount(), 100u);
  ASSERT_EQ(session->CountPendingErrors(), 1);
  bool overflowed = true;
  auto errors = session->GetPendingErrors(&overflowed);
  EXPECT_FALSE(overflowed);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]->status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(errors[0]->failed_op().ToString(), "INSERT (int32 key=5, int32 v=1)");
  EXPECT_FALSE(errors[0]->was_possibly_successful());
  EXPECT_EQ(session->CountPendingErrors(), 0);
  BASALT_EXPECT_OK(session->Flush());  // Nothing new failed.
  EXPECT_GT(client_->GetLatestObservedTimestamp(), 0u);
}

TEST_F(ClientRpcTest, ManualFlushRefusesOperationsWhenTheBufferIsFull) {
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  BASALT_ASSERT_OK(session->SetMutationBufferSpace(200));
  int applied = 0;
  absl::Status s;
  for (; applied < 1000; applied++) {
    s = session->Apply(Insert(applied));
    if (!s.ok()) break;
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_GT(applied, 5);
  EXPECT_LT(applied, 100);
  EXPECT_EQ(Writes(0), 0);
  BASALT_ASSERT_OK(session->Flush());
  EXPECT_EQ(RowCount(), static_cast<size_t>(applied));
  BASALT_EXPECT_OK(session->Apply(Insert(applied)));
  BASALT_ASSERT_OK(session->Close());
  EXPECT_EQ(session->Apply(Insert(5000)).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ClientRpcTest, SyncApplyReturnsTheRowsOutcome) {
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->Apply(Insert(1)));
  EXPECT_EQ(session->Apply(Insert(1)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(session->CountPendingErrors(), 1);
  auto del = table_->NewDelete();
  BASALT_ASSERT_OK(del->mutable_row()->SetInt32("key", 2));
  EXPECT_EQ(session->Apply(std::move(del)).code(), absl::StatusCode::kNotFound);
  auto del_ignore = table_->NewDeleteIgnore();
  BASALT_ASSERT_OK(del_ignore->mutable_row()->SetInt32("key", 2));
  BASALT_EXPECT_OK(session->Apply(std::move(del_ignore)));
  auto bad = table_->NewUpdate();  // Key only: rejected before sending.
  BASALT_ASSERT_OK(bad->mutable_row()->SetInt32("key", 1));
  EXPECT_EQ(session->Apply(std::move(bad)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RowCount(), 1u);
}

TEST_F(ClientRpcTest, BackgroundModeAppliesBackpressureWhenTheBufferIsFull) {
  {
    for (auto& ts : tservers_) {
      absl::MutexLock l(&ts->mu_);
      ts->gate_open_ = false;
    }
  }
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::AUTO_FLUSH_BACKGROUND));
  BASALT_ASSERT_OK(session->SetMutationBufferSpace(2000));
  constexpr int kRows = 2000;
  std::atomic<int> applied{0};
  std::thread writer([&] {
    for (int i = 0; i < kRows; i++) {
      BASALT_EXPECT_OK(session->Apply(Insert(i)));
      applied++;
    }
  });
  // Both tablets' first batches reach the leader and are held there.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (;;) {
    {
      absl::MutexLock l(&tservers_[0]->mu_);
      if (tservers_[0]->blocked_ == kNumTablets) break;
    }
    ASSERT_LT(absl::Now(), deadline);
    absl::SleepFor(absl::Milliseconds(5));
  }
  // While nothing completes, the writer cannot get far past the buffer's worth of rows.
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_LT(applied.load(), 400);
  EXPECT_TRUE(session->HasPendingOperations());
  {
    absl::MutexLock l(&tservers_[0]->mu_);
    tservers_[0]->gate_open_ = true;
  }
  writer.join();
  BASALT_ASSERT_OK(session->Flush());
  EXPECT_EQ(RowCount(), static_cast<size_t>(kRows));
  EXPECT_GT(Writes(0), 4);  // Many small batches.
}

TEST_F(ClientRpcTest, WritesFollowLeaderHintsAndRetryOverload) {
  // ts0 says ts1 leads; ts1 is overloaded twice, then takes the write.
  FailWrites(
      0, {Detail(absl::UnavailableError("not leader"), pb::ErrorDetailPB::NOT_THE_LEADER, "ts1"),
          Detail(absl::UnavailableError("not leader"), pb::ErrorDetailPB::NOT_THE_LEADER, "ts1")});
  FailWrites(1, {Detail(absl::UnavailableError("busy"), pb::ErrorDetailPB::SERVER_OVERLOADED),
                 Detail(absl::UnavailableError("busy"), pb::ErrorDetailPB::SERVER_OVERLOADED)});
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  for (int i = 0; i < 50; i++) BASALT_ASSERT_OK(session->Apply(Insert(i)));
  BASALT_ASSERT_OK(session->Flush());
  EXPECT_EQ(RowCount(), 50u);
  EXPECT_EQ(Writes(0), 2);
  EXPECT_EQ(Writes(1), 4);
  // The learned leader is used directly from now on.
  for (int i = 50; i < 60; i++) BASALT_ASSERT_OK(session->Apply(Insert(i)));
  BASALT_ASSERT_OK(session->Flush());
  EXPECT_EQ(Writes(0), 2);
  EXPECT_EQ(Writes(1), 6);
}

// A replica that failed (a storage fault) answers TABLET_FAILED: the client sends the batch to
// another replica, which took over, and a full disk (DISK_FULL) is retried until it has room.
TEST_F(ClientRpcTest, WritesMoveOffAFailedReplicaAndWaitOutAFullDisk) {
  FailWrites(0, {Detail(absl::FailedPreconditionError("tablet failed: EIO"),
                        pb::ErrorDetailPB::TABLET_FAILED)});
  for (int ts : {1, 2}) {  // Whichever replica the client turns to.
    FailWrites(ts, {Detail(absl::ResourceExhaustedError("the WAL directory is full"),
                           pb::ErrorDetailPB::DISK_FULL),
                    Detail(absl::ResourceExhaustedError("the WAL directory is full"),
                           pb::ErrorDetailPB::DISK_FULL)});
  }
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  for (int i = 0; i < 20; i++) BASALT_ASSERT_OK(session->Apply(Insert(i)));
  BASALT_ASSERT_OK(session->Flush());
  EXPECT_EQ(RowCount(), 20u);
  // ts0 leads every tablet; the one whose replica failed there went to another replica, which
  // answered DISK_FULL twice and then took the write: all three calls on the same replica.
  EXPECT_TRUE((Writes(1) == 3 && Writes(2) == 0) || (Writes(1) == 0 && Writes(2) == 3))
      << Writes(1) << " " << Writes(2);
}

TEST_F(ClientRpcTest, TabletNotFoundRefreshesLocations) {
  FailWrites(0, {Detail(absl::NotFoundError("gone"), pb::ErrorDetailPB::TABLET_NOT_FOUND)});
  int lookups_before;
  {
    absl::MutexLock l(&master_.mu);
    lookups_before = master_.lookups;
  }
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->Apply(Insert(1)));
  absl::MutexLock l(&master_.mu);
  EXPECT_GT(master_.lookups, lookups_before);
  EXPECT_EQ(RowCount(), 1u);
}

// A leader hint naming a replica the cached locations do not list (added since, by a move or a
// repair): the client asks the master again instead of cycling through the known replicas,
// every one of which keeps pointing at the new leader, until its deadline.
TEST_F(ClientRpcTest, ALeaderHintOutsideTheCachedReplicasRefreshesLocations) {
  std::vector<pb::TabletLocationsPB> full;
  {
    absl::MutexLock l(&master_.mu);
    full = master_.locations;
    for (auto& loc : master_.locations) loc.mutable_replicas()->DeleteSubrange(2, 1);  // No ts2.
  }
  std::shared_ptr<Client> client;
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(FreshClient(&client, &table));
  auto session = client->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  session->SetTimeoutMillis(5000);
  for (int i = 0; i < 20; i++) {
    auto insert = table->NewInsert();
    BASALT_ASSERT_OK(insert->mutable_row()->SetInt32("key", i));
    BASALT_ASSERT_OK(session->Apply(std::move(insert)));
  }
  // Now ts2 leads every tablet, and the master lists it.
  const absl::Status hint =
      Detail(absl::UnavailableError("not leader"), pb::ErrorDetailPB::NOT_THE_LEADER, "ts2");
  for (int ts : {0, 1}) FailWrites(ts, std::vector<absl::Status>(50, hint));
  int lookups_before;
  {
    absl::MutexLock l(&master_.mu);
    master_.locations = full;
    lookups_before = master_.lookups;
  }
  BASALT_ASSERT_OK(session->Flush());
  EXPECT_EQ(RowCount(), 20u);
  EXPECT_EQ(Writes(2), kNumTablets);
  absl::MutexLock l(&master_.mu);
  EXPECT_GT(master_.lookups, lookups_before);
}

// SCHEMA_MISMATCH from a replica behind the batch's schema version (an alter it has not applied,
// a deposed leader) retries the same request, same id: a copy of it may still apply elsewhere.
// From a replica past it, the rows go re-encoded for the master's schema as a new request.
TEST_F(ClientRpcTest, SchemaMismatchKeepsTheRequestIdUnlessTheReplicaIsPastTheBatch) {
  auto mismatch = [](uint32_t tablet_version) {
    pb::ErrorDetailPB d;
    d.set_code(pb::ErrorDetailPB::SCHEMA_MISMATCH);
    d.set_schema_version(tablet_version);
    return WithErrorDetail(absl::FailedPreconditionError("schema"), d);
  };
  {
    absl::MutexLock l(&master_.mu);
    master_.schema_version = 1;  // The table was altered; the handle is at version 0.
  }
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  FailWrites(0, {mismatch(0)});  // ts0 leads, still at the batch's version: a stale replica.
  BASALT_ASSERT_OK(session->Apply(Insert(1)));
  BASALT_ASSERT_OK(session->Flush());
  std::vector<uint64_t> seqs = Seqs();
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_EQ(seqs[0], seqs[1]) << "a refusal by a replica behind the batch is not its answer";

  FailWrites(0, {mismatch(1)});  // Past the batch's version 0.
  BASALT_ASSERT_OK(session->Apply(Insert(2)));
  BASALT_ASSERT_OK(session->Flush());
  seqs = Seqs();
  ASSERT_EQ(seqs.size(), 4u);
  EXPECT_NE(seqs[2], seqs[3]) << "re-encoded rows go as a new request";
  EXPECT_EQ(RowCount(), 2u);
}

TEST_F(ClientRpcTest, TabletsWithoutReplicasAreLookedUpAgain) {
  std::vector<pb::TabletLocationsPB> full;
  {
    absl::MutexLock l(&master_.mu);
    full = master_.locations;
    for (auto& loc : master_.locations) loc.clear_replicas();
  }
  // A fresh client, so its cache holds the replica-less locations.
  std::shared_ptr<Client> client;
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(FreshClient(&client, &table));
  auto session = client->NewSession();
  auto insert = table->NewInsert();
  BASALT_ASSERT_OK(insert->mutable_row()->SetInt32("key", 1));
  absl::Status applied;
  std::thread writer([&] { applied = session->Apply(std::move(insert)); });
  // The writer keeps asking the master; then the replicas appear.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (;;) {
    {
      absl::MutexLock l(&master_.mu);
      if (master_.lookups >= 3) {
        master_.locations = full;
        break;
      }
    }
    ASSERT_LT(absl::Now(), deadline);
    absl::SleepFor(absl::Milliseconds(5));
  }
  writer.join();
  BASALT_EXPECT_OK(applied);
  EXPECT_EQ(RowCount(), 1u);
}

TEST_F(ClientRpcTest, TimedOutBatchesFailEveryRow) {
  for (int i = 0; i < kNumServers; i++) {
    FailWrites(i, std::vector<absl::Status>(1000, Detail(absl::UnavailableError("busy"),
                                                         pb::ErrorDetailPB::SERVER_OVERLOADED)));
  }
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::AUTO_FLUSH_BACKGROUND));
  session->SetTimeoutMillis(300);
  for (int i = 0; i < 20; i++) BASALT_ASSERT_OK(session->Apply(Insert(i)));
  absl::Status s = session->Flush();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown) << s;
  auto errors = session->GetPendingErrors();
  ASSERT_EQ(errors.size(), 20u);
  std::set<std::string> failed;
  for (const auto& e : errors) {
    EXPECT_EQ(e->status().code(), absl::StatusCode::kDeadlineExceeded) << e->status();
    failed.insert(e->failed_op().ToString());
  }
  EXPECT_EQ(failed.size(), 20u);
  EXPECT_EQ(RowCount(), 0u);
}

class ClientScanTest : public ClientRpcTest {
 protected:
  // Continuations of scans of `tablet` on ts0 (which leads every tablet) wait until the next
  // call; "" lets them go.
  void SlowDown(const std::string& tablet) {
    absl::MutexLock l(&tservers_[0]->mu_);
    tservers_[0]->slow_tablet_ = tablet;
  }

  void SetUp() override {
    ClientRpcTest::SetUp();
    auto session = client_->NewSession();
    BASALT_ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
    for (int i = 0; i < 250; i++) {
      BASALT_ASSERT_OK(session->Apply(Insert(i, i % 7 == 0 ? std::nullopt : std::optional(i))));
    }
    BASALT_ASSERT_OK(session->Flush());
  }
};

TEST_F(ClientScanTest, ScansEveryTabletWithContinuationsAndLimits) {
  Scanner scanner(table_.get());
  BASALT_ASSERT_OK(scanner.Open());
  std::vector<int32_t> keys = ScanKeys(&scanner);
  std::sort(keys.begin(), keys.end());
  ASSERT_EQ(keys.size(), 250u);
  for (int i = 0; i < 250; i++) EXPECT_EQ(keys[i], i);
  EXPECT_EQ(scanner.SetLimit(3).code(), absl::StatusCode::kFailedPrecondition);

  Scanner limited(table_.get());
  BASALT_ASSERT_OK(limited.SetLimit(45));
  BASALT_ASSERT_OK(limited.SetProjectedColumnNames({"key"}));
  BASALT_ASSERT_OK(limited.Open());
  EXPECT_EQ(ScanKeys(&limited).size(), 45u);
  EXPECT_FALSE(limited.HasMoreRows());
  EXPECT_EQ(limited.GetProjectionSchema().num_columns(), 1);

  // An equality predicate on the hash column visits one tablet only.
  Scanner point(table_.get());
  BASALT_ASSERT_OK(point.AddConjunctPredicate(
      table_->NewComparisonPredicate("key", Predicate::EQUAL, Value::FromInt(17))));
  int scans_before;
  {
    absl::MutexLock l(&tservers_[0]->mu_);
    scans_before = static_cast<int>(tservers_[0]->new_scans_.size());
  }
  BASALT_ASSERT_OK(point.Open());
  EXPECT_EQ(ScanKeys(&point), std::vector<int32_t>{17});
  absl::MutexLock l(&tservers_[0]->mu_);
  EXPECT_EQ(static_cast<int>(tservers_[0]->new_scans_.size()), scans_before + 1);
  EXPECT_TRUE(tservers_[0]->new_scans_.back().predicates(0).has_equality());
}

// A scan of one tablet (a point lookup) runs on the caller's thread: scan workers would only add
// thread hand-offs. A scan of every tablet starts them (two tablets at once by default).
TEST_F(ClientScanTest, AScanOfOneTabletStartsNoWorkers) {
  internal::ElasticThreadPool* workers = internal::Access::Data(client_.get())->scan_workers.get();
  ASSERT_EQ(workers->num_threads(), 0);
  Scanner point(table_.get());
  BASALT_ASSERT_OK(point.AddConjunctPredicate(
      table_->NewComparisonPredicate("key", Predicate::EQUAL, Value::FromInt(17))));
  BASALT_ASSERT_OK(point.Open());
  EXPECT_EQ(ScanKeys(&point), std::vector<int32_t>{17});
  EXPECT_EQ(workers->num_threads(), 0);
  Scanner all(table_.get());
  BASALT_ASSERT_OK(all.Open());
  EXPECT_EQ(ScanKeys(&all).size(), 250u);
  EXPECT_GE(workers->num_threads(), 1);
}

TEST_F(ClientScanTest, FaultTolerantScanResumesOnAnotherReplica) {
  {
    absl::MutexLock l(&tservers_[0]->mu_);
    tservers_[0]->scan_failures_.push_back(absl::UnavailableError("server went away"));
  }
  Scanner scanner(table_.get());
  BASALT_ASSERT_OK(scanner.SetFaultTolerant());
  EXPECT_EQ(scanner.SetReadMode(Scanner::READ_LATEST).code(), absl::StatusCode::kInvalidArgument);
  BASALT_ASSERT_OK(scanner.Open());
  std::vector<int32_t> keys = ScanKeys(&scanner);
  ASSERT_EQ(keys.size(), 250u);
  std::set<int32_t> unique(keys.begin(), keys.end());
  EXPECT_EQ(unique.size(), 250u);  // No row twice, none skipped.
  EXPECT_EQ(scanner.GetSnapshotRaw(), 777u);
  // The resumed scan went to another replica, at the same snapshot, after the last key.
  absl::MutexLock l(&tservers_[1]->mu_);
  ASSERT_EQ(tservers_[1]->new_scans_.size(), 1u);
  const pb::NewScanRequestPB& resumed = tservers_[1]->new_scans_[0];
  EXPECT_EQ(resumed.snap_timestamp(), 777u);
  EXPECT_TRUE(resumed.ordered());
  EXPECT_EQ(resumed.read_mode(), pb::READ_AT_SNAPSHOT);
  EXPECT_FALSE(resumed.last_primary_key().empty());
}

// One tablet at a time (the concurrent scan's keep-alive: ConcurrentKeepAliveReachesEvery...).
TEST_F(ClientScanTest, KeepAliveReachesTheServerHoldingTheScanner) {
  Scanner scanner(table_.get());
  BASALT_ASSERT_OK(scanner.SetMaxConcurrentTablets(1));
  BASALT_EXPECT_OK(scanner.KeepAlive());  // Not open: nothing to keep alive.
  BASALT_ASSERT_OK(scanner.Open());
  BASALT_ASSERT_OK(scanner.KeepAlive());
  {
    absl::MutexLock l(&tservers_[0]->mu_);
    EXPECT_EQ(tservers_[0]->keep_alives_, 1);
  }
  ScanKeys(&scanner);
  BASALT_EXPECT_OK(scanner.KeepAlive());  // Done: nothing open on the server.
  absl::MutexLock l(&tservers_[0]->mu_);
  EXPECT_EQ(tservers_[0]->keep_alives_, 1);
}

TEST_F(ClientScanTest, NonFaultTolerantScanReportsAFailedContinuation) {
  {
    absl::MutexLock l(&tservers_[0]->mu_);
    tservers_[0]->scan_failures_.push_back(absl::UnavailableError("server went away"));
  }
  Scanner scanner(table_.get());
  // One tablet at a time (a concurrent scan's failure: ConcurrentScanReturnsTheBatchesBefore...).
  BASALT_ASSERT_OK(scanner.SetMaxConcurrentTablets(1));
  BASALT_ASSERT_OK(scanner.Open());
  ScanBatch batch;
  BASALT_ASSERT_OK(scanner.NextBatch(&batch));
  absl::Status s = scanner.NextBatch(&batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(scanner.HasMoreRows());  // One tablet at a time: the caller may try again.
}

// The buffers of a batch the caller is done with take the next answer: no fresh memory (and
// page faults) per batch. One tablet at a time, so that the count of buffers is exact.
TEST_F(ClientScanTest, BatchesReuseTheBuffersOfTheBatchBefore) {
  Scanner scanner(table_.get());
  BASALT_ASSERT_OK(scanner.SetMaxConcurrentTablets(1));
  BASALT_ASSERT_OK(scanner.Open());
  ScanBatch batch;
  std::set<const void*> buffers;
  int batches = 0;
  int short_batches = 0;
  int64_t rows = 0;
  while (scanner.HasMoreRows()) {
    BASALT_ASSERT_OK(scanner.NextBatch(&batch));
    if (batch.NumRows() == 0) continue;
    batches++;
    if (batch.NumRows() < kScanBatchRows) short_batches++;
    rows += batch.NumRows();
    buffers.insert(batch.Column(0).data);
    for (int64_t i = 0; i < batch.NumRows(); i++) {  // The reused buffers hold the new rows.
      int32_t k;
      BASALT_ASSERT_OK(batch.Row(i).GetInt32("key", &k));
      ASSERT_GE(k, 0);
      ASSERT_LT(k, 250);
    }
  }
  EXPECT_EQ(rows, 250);
  ASSERT_GE(batches, 8);
  ASSERT_GT(short_batches, 0) << "a short batch would need other memory unless it reuses some";
  // The first answer and the one in flight when the first batch was handed over have their
  // own; every later one reuses a buffer from before.
  EXPECT_LE(buffers.size(), 2u) << batches << " batches";
}

// An unordered scan reads its tablets at once: while the server of one is slow to continue,
// every row of the other comes through; the slow tablet's rows follow once it answers.
TEST_F(ClientScanTest, ConcurrentScanReadsOtherTabletsWhileOneIsSlow) {
  SlowDown("t0");  // The scan's first tablet (lowest partition key).
  absl::Cleanup unblock = [this] { SlowDown(""); };
  size_t rows_t0, rows_t1;
  {
    absl::MutexLock l(&stores_[0].mu);
    rows_t0 = stores_[0].rows.size();
  }
  {
    absl::MutexLock l(&stores_[1].mu);
    rows_t1 = stores_[1].rows.size();
  }
  ASSERT_GT(rows_t0, static_cast<size_t>(kScanBatchRows)) << "t0 needs continuations";
  Scanner scanner(table_.get());
  EXPECT_EQ(scanner.SetMaxConcurrentTablets(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(scanner.SetMaxConcurrentTablets(Scanner::kMaxConcurrentTablets + 1).code(),
            absl::StatusCode::kInvalidArgument);
  BASALT_ASSERT_OK(scanner.SetMaxConcurrentTablets(4));
  BASALT_ASSERT_OK(scanner.SetTimeoutMillis(10000));  // One tablet at a time would time out.
  BASALT_ASSERT_OK(scanner.Open());
  EXPECT_EQ(scanner.SetMaxConcurrentTablets(2).code(), absl::StatusCode::kFailedPrecondition);
  std::vector<int32_t> keys;
  ScanBatch batch;
  // t0's first batch came with Open; then all of t1 while t0's continuations wait.
  while (keys.size() < kScanBatchRows + rows_t1) {
    ASSERT_TRUE(scanner.HasMoreRows());
    BASALT_ASSERT_OK(scanner.NextBatch(&batch));
    for (int64_t i = 0; i < batch.NumRows(); i++) {
      int32_t k;
      BASALT_ASSERT_OK(batch.Row(i).GetInt32("key", &k));
      keys.push_back(k);
    }
  }
  EXPECT_TRUE(scanner.HasMoreRows());
  SlowDown("");
  for (int32_t k : ScanKeys(&scanner)) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  ASSERT_EQ(keys.size(), 250u);
  for (int i = 0; i < 250; i++) EXPECT_EQ(keys[i], i);
}

// A concurrent scan's failure comes after the batches queued before it, and ends the scan.
TEST_F(ClientScanTest, ConcurrentScanReturnsTheBatchesBeforeAFailureThenEnds) {
  SlowDown("t0");
  absl::Cleanup unblock = [this] { SlowDown(""); };
  {
    absl::MutexLock l(&tservers_[0]->mu_);
    tservers_[0]->scan_failures_.push_back(absl::UnavailableError("server went away"));
    tservers_[0]->failing_tablet_ = "t0";
  }
  size_t rows_t1;
  {
    absl::MutexLock l(&stores_[1].mu);
    rows_t1 = stores_[1].rows.size();
  }
  Scanner scanner(table_.get());
  BASALT_ASSERT_OK(scanner.SetMaxConcurrentTablets(4));
  BASALT_ASSERT_OK(scanner.SetTimeoutMillis(10000));
  BASALT_ASSERT_OK(scanner.Open());
  ScanBatch batch;
  size_t rows = 0;
  // t0's first batch (from Open), then all of t1, while t0's continuation waits.
  while (rows < kScanBatchRows + rows_t1) {
    ASSERT_TRUE(scanner.HasMoreRows());
    BASALT_ASSERT_OK(scanner.NextBatch(&batch));
    rows += batch.NumRows();
  }
  ASSERT_EQ(rows, kScanBatchRows + rows_t1);
  SlowDown("");  // t0's continuation now fails.
  absl::Status s;
  while (scanner.HasMoreRows()) {
    s = scanner.NextBatch(&batch);
    if (!s.ok()) break;
    rows += batch.NumRows();
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(rows, kScanBatchRows + rows_t1);  // Nothing of t0 after the failure.
  EXPECT_FALSE(scanner.HasMoreRows());
  BASALT_EXPECT_OK(scanner.NextBatch(&batch));
  EXPECT_EQ(batch.NumRows(), 0);
}

// KeepAlive reaches the server-side scanner of every tablet whose worker waits for the caller.
TEST_F(ClientScanTest, ConcurrentKeepAliveReachesEveryWaitingTablet) {
  // Enough batches per tablet that neither is done when both workers wait (one worker may run
  // ahead by the whole queue: at most 4 batches of its tablet are gone by then).
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  for (int i = 250; i < 1000; i++) BASALT_ASSERT_OK(session->Apply(Insert(i)));
  BASALT_ASSERT_OK(session->Flush());
  for (auto& store : stores_) {
    absl::MutexLock l(&store.mu);
    ASSERT_GT(store.rows.size(), 6u * kScanBatchRows);
  }
  Scanner scanner(table_.get());
  // Two workers, room for two batches: each tablet's worker ends up holding another batch while
  // its server scanner stays open.
  BASALT_ASSERT_OK(scanner.SetMaxConcurrentTablets(2));
  BASALT_ASSERT_OK(scanner.Open());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (;;) {
    int before;
    {
      absl::MutexLock l(&tservers_[0]->mu_);
      before = tservers_[0]->keep_alives_;
    }
    BASALT_ASSERT_OK(scanner.KeepAlive());
    {
      absl::MutexLock l(&tservers_[0]->mu_);
      if (tservers_[0]->keep_alives_ - before == kNumTablets) break;
    }
    ASSERT_LT(absl::Now(), deadline) << "the workers never both waited";
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(ScanKeys(&scanner).size(), 1000u);
  BASALT_EXPECT_OK(scanner.KeepAlive());
}

// Closing a concurrent scan cancels the RPCs in flight instead of waiting them out.
TEST_F(ClientScanTest, ClosingAConcurrentScanCancelsItsRpcs) {
  SlowDown("t0");
  // Lets the server's handler finish before the server shuts down.
  absl::Cleanup unblock = [this] { SlowDown(""); };
  auto scanner = std::make_unique<Scanner>(table_.get());
  BASALT_ASSERT_OK(scanner->SetMaxConcurrentTablets(4));
  BASALT_ASSERT_OK(scanner->SetTimeoutMillis(60000));
  BASALT_ASSERT_OK(scanner->Open());
  ScanBatch batch;
  BASALT_ASSERT_OK(scanner->NextBatch(&batch));
  const absl::Time start = absl::Now();
  scanner->Close();
  scanner.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << "Close waited for a blocked RPC";
}

TEST_F(ClientScanTest, MalformedResponsesAreDataLoss) {
  for (auto& ts : tservers_) {
    absl::MutexLock l(&ts->mu_);
    ts->corrupt_scans_ = true;
  }
  Scanner scanner(table_.get());
  BASALT_ASSERT_OK(scanner.Open());
  ScanBatch batch;
  absl::Status s = scanner.NextBatch(&batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(batch.NumRows(), 0);
}

TEST_F(ClientRpcTest, BackgroundFlushIntervalSendsWithoutFlush) {
  auto session = client_->NewSession();
  BASALT_ASSERT_OK(session->SetFlushMode(Session::AUTO_FLUSH_BACKGROUND));
  BASALT_ASSERT_OK(session->SetMutationBufferFlushInterval(50));
  EXPECT_EQ(session->SetMutationBufferFlushInterval(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(session->SetMutationBufferFlushWatermark(1.5).code(),
            absl::StatusCode::kInvalidArgument);
  BASALT_ASSERT_OK(session->Apply(Insert(1)));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (RowCount() == 0) {
    ASSERT_LT(absl::Now(), deadline) << "the flusher never sent the row";
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(session->CountBufferedOperations(), 0);
}

TEST_F(ClientScanTest, RequestsCarryBoundsSnapshotsAndObservedTimestamps) {
  Scanner scanner(table_.get());
  auto lower = table_->schema().NewRow();
  EXPECT_EQ(scanner.AddLowerBound(*lower).code(), absl::StatusCode::kInvalidArgument);
  BASALT_ASSERT_OK(lower->SetInt32("key", 10));
  auto upper = table_->schema().NewRow();
  BASALT_ASSERT_OK(upper->SetInt32("key", 20));
  BASALT_ASSERT_OK(scanner.AddLowerBound(*lower));
  BASALT_ASSERT_OK(scanner.AddExclusiveUpperBound(*upper));
  BASALT_ASSERT_OK(scanner.SetReadMode(Scanner::READ_YOUR_WRITES));
  BASALT_ASSERT_OK(scanner.SetBatchSizeBytes(1234));
  BASALT_ASSERT_OK(scanner.Open());
  ScanKeys(&scanner);
  EXPECT_EQ(scanner.GetSnapshotRaw(), 777u);
  {
    absl::MutexLock l(&tservers_[0]->mu_);
    ASSERT_FALSE(tservers_[0]->new_scans_.empty());
    const pb::NewScanRequestPB& req = tservers_[0]->new_scans_.back();
    const basalt::Schema schema = TableSchema();
    EXPECT_EQ(req.start_primary_key(), EncodeKey(schema, std::vector<Datum>{Datum::Int32(10)}));
    EXPECT_EQ(req.stop_primary_key(), EncodeKey(schema, std::vector<Datum>{Datum::Int32(20)}));
    EXPECT_EQ(req.read_mode(), pb::READ_YOUR_WRITES);
    EXPECT_GE(req.propagated_timestamp(), 1000u);  // The fake's write timestamp.
    EXPECT_EQ(req.projected_columns_size(), 2);
  }
  // Bounds that exclude everything scan nothing.
  Scanner empty(table_.get());
  BASALT_ASSERT_OK(empty.AddLowerBound(*upper));
  BASALT_ASSERT_OK(empty.AddExclusiveUpperBound(*lower));
  BASALT_ASSERT_OK(empty.Open());
  EXPECT_FALSE(empty.HasMoreRows());
}

}  // namespace client_rpc_test_file
}  // namespace
}  // namespace basalt::client
