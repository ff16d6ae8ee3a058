#pragma once

// Helpers for the tablet server's in-process tests: temp directories, servers on loopback
// ephemeral ports, gRPC stubs, and building/decoding writes and scan batches for the test
// schema (key INT32, int_val INT32 NOT NULL, s STRING NULL). Test-only; included by *_test.cc.

#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <glog/logging.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "common/env.h"
#include "common/partial_row.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/tablet_copy.grpc.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "proto/tserver.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "tserver/tablet_server.h"

namespace basalt {

// A fresh directory under ::testing::TempDir(), removed at destruction.
class TestDir {
 public:
  explicit TestDir(const std::string& prefix) {
    std::string tmpl = ::testing::TempDir() + prefix + ".XXXXXX";
    CHECK(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TestDir() { (void)Env::Default()->DeleteDirRecursively(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline Schema TestSchema() {
  return *Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("int_val", DataType::kInt32),
       ColumnSchema("s", DataType::kString, /*is_nullable=*/true)},
      1);
}

// One row of the test schema as read back.
struct TestRow {
  int32_t key = 0;
  int32_t int_val = 0;
  std::optional<std::string> s;
  bool operator==(const TestRow&) const = default;
};

inline void PrintTo(const TestRow& r, std::ostream* os) {
  *os << "(" << r.key << ", " << r.int_val << ", " << (r.s ? "\"" + *r.s + "\"" : "NULL") << ")";
}

inline std::string RowString(int32_t key) { return StrCat("row-", key); }

// A row the tests insert for `key`: int_val = key * 2, s = "row-<key>" (NULL for keys % 7 == 0).
inline TestRow ExpectedRow(int32_t key) {
  TestRow r{key, key * 2, RowString(key)};
  if (key % 7 == 0) r.s.reset();
  return r;
}

// Builds the row operations of a write request.
class WriteBuilder {
 public:
  explicit WriteBuilder(const Schema* schema) : schema_(schema), encoder_(&ops_) {}
  WriteBuilder& Add(RowOperationType type, int32_t key, std::optional<int32_t> int_val,
                    std::optional<std::optional<std::string>> s) {
    PartialRow row(schema_);
    CHECK(row.SetInt32("key", key).ok());
    if (int_val) CHECK(row.SetInt32("int_val", *int_val).ok());
    if (s) {
      if (s->has_value()) {
        CHECK(row.SetString("s", **s).ok());
      } else {
        CHECK(row.SetNull("s").ok());
      }
    }
    encoder_.Add(type, row);
    return *this;
  }
  // INSERT of ExpectedRow(key).
  WriteBuilder& Insert(int32_t key) {
    TestRow r = ExpectedRow(key);
    return Add(RowOperationType::kInsert, key, r.int_val, r.s);
  }
  WriteBuilder& Key(RowOperationType type, int32_t key) {
    return Add(type, key, std::nullopt, std::nullopt);
  }
  pb::WriteRequestPB Build(const std::string& tablet_id) const {
    pb::WriteRequestPB req;
    req.set_tablet_id(tablet_id);
    schema_->ToPB(req.mutable_schema());
    *req.mutable_row_operations() = ops_;
    return req;
  }

 private:
  const Schema* schema_;
  pb::RowOperationsPB ops_;
  RowOperationsEncoder encoder_;
};

// `req` with request id (client, seq, first incomplete) (exactly-once writes).
inline pb::WriteRequestPB WithRequestId(pb::WriteRequestPB req, const std::string& client,
                                        uint64_t seq, uint64_t first_incomplete) {
  req.mutable_request_id()->set_client_id(client);
  req.mutable_request_id()->set_seq_no(seq);
  req.mutable_request_id()->set_first_incomplete_seq_no(first_incomplete);
  return req;
}

// Decodes the test schema's columns from a batch projected as (key, int_val, s).
inline std::vector<TestRow> DecodeTestRows(const pb::ColumnarRowBlockPB& block) {
  std::vector<TestRow> rows(block.num_rows());
  EXPECT_EQ(block.columns_size(), 3);
  if (block.columns_size() != 3) return {};
  for (int64_t i = 0; i < block.num_rows(); ++i) {
    std::memcpy(&rows[i].key, block.columns(0).data().data() + 4 * i, 4);
    std::memcpy(&rows[i].int_val, block.columns(1).data().data() + 4 * i, 4);
    const auto& sc = block.columns(2);
    const bool null = !sc.null_bitmap().empty() && ((sc.null_bitmap()[i / 8] >> (i % 8)) & 1);
    if (!null) {
      uint32_t a, b;
      std::memcpy(&a, sc.offsets().data() + 4 * i, 4);
      std::memcpy(&b, sc.offsets().data() + 4 * (i + 1), 4);
      rows[i].s = sc.data().substr(a, b - a);
    }
  }
  return rows;
}

// gRPC stubs for one tablet server.
struct TsClient {
  explicit TsClient(const std::string& address)
      : channel(NewChannel(address)),
        ts(pb::TabletServerService::NewStub(channel)),
        admin(pb::TabletServerAdminService::NewStub(channel)),
        consensus(pb::ConsensusService::NewStub(channel)),
        copy(pb::TabletCopyService::NewStub(channel)) {}

  template <typename Req, typename Resp, typename Fn>
  absl::Status Call(Fn fn, const Req& req, Resp* resp, int timeout_ms = 10000) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    return FromGrpcStatus(fn(&ctx, req, resp));
  }
  absl::Status Write(const pb::WriteRequestPB& req, pb::WriteResponsePB* resp) {
    return Call(
        [&](grpc::ClientContext* c, const auto& rq, auto* rs) { return ts->Write(c, rq, rs); }, req,
        resp);
  }
  absl::Status Scan(const pb::ScanRequestPB& req, pb::ScanResponsePB* resp) {
    return Call(
        [&](grpc::ClientContext* c, const auto& rq, auto* rs) { return ts->Scan(c, rq, rs); }, req,
        resp);
  }
  absl::Status KeepAlive(const std::string& id) {
    pb::ScannerKeepAliveRequestPB req;
    req.set_scanner_id(id);
    pb::ScannerKeepAliveResponsePB resp;
    return Call([&](grpc::ClientContext* c, const auto& rq,
                    auto* rs) { return ts->ScannerKeepAlive(c, rq, rs); },
                req, &resp);
  }
  absl::Status ListTablets(pb::ListTabletsResponsePB* resp, bool schema = false) {
    pb::ListTabletsRequestPB req;
    req.set_need_schema_info(schema);
    return Call([&](grpc::ClientContext* c, const auto& rq,
                    auto* rs) { return ts->ListTablets(c, rq, rs); },
                req, resp);
  }
  absl::Status Checksum(const pb::ChecksumRequestPB& req, pb::ChecksumResponsePB* resp) {
    return Call(
        [&](grpc::ClientContext* c, const auto& rq, auto* rs) { return ts->Checksum(c, rq, rs); },
        req, resp);
  }
  absl::Status CreateTablet(const pb::CreateTabletRequestPB& req) {
    pb::CreateTabletResponsePB resp;
    return Call([&](grpc::ClientContext* c, const auto& rq,
                    auto* rs) { return admin->CreateTablet(c, rq, rs); },
                req, &resp);
  }
  absl::Status DeleteTablet(const pb::DeleteTabletRequestPB& req) {
    pb::DeleteTabletResponsePB resp;
    return Call([&](grpc::ClientContext* c, const auto& rq,
                    auto* rs) { return admin->DeleteTablet(c, rq, rs); },
                req, &resp);
  }
  absl::Status AlterSchema(const pb::AlterSchemaRequestPB& req, pb::AlterSchemaResponsePB* resp) {
    return Call([&](grpc::ClientContext* c, const auto& rq,
                    auto* rs) { return admin->AlterSchema(c, rq, rs); },
                req, resp);
  }

  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::TabletServerService::Stub> ts;
  std::unique_ptr<pb::TabletServerAdminService::Stub> admin;
  std::unique_ptr<pb::ConsensusService::Stub> consensus;
  std::unique_ptr<pb::TabletCopyService::Stub> copy;
};

// A CreateTablet request for the test schema over the whole key space (no partitioning).
inline pb::CreateTabletRequestPB CreateTabletRequest(
    const std::string& tablet_id, const std::vector<std::pair<std::string, HostPort>>& peers) {
  pb::CreateTabletRequestPB req;
  req.set_table_id("table-1");
  req.set_table_name("test_table");
  req.set_tablet_id(tablet_id);
  Schema schema = TestSchema();
  schema.ToPB(req.mutable_schema());
  req.mutable_partition_schema();  // Default: range on the key; one partition covers all.
  req.mutable_partition();
  for (const auto& [uuid, hp] : peers) {
    pb::RaftPeerPB* p = req.mutable_config()->add_peers();
    p->set_uuid(uuid);
    hp.ToPB(p->mutable_address());
  }
  return req;
}

inline pb::ColumnSchemaPB ProjectedColumn(const Schema& schema, const std::string& name) {
  pb::ColumnSchemaPB pb;
  const int idx = schema.find_column(name);
  Schema::ColumnToPB(schema.column(idx), schema.column_id(idx), schema.is_key_column(idx), &pb);
  return pb;
}

// Polls `cond` until it holds or `timeout` passes.
template <typename Fn>
bool WaitFor(Fn cond, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

inline TabletServerOptions TestServerOptions(const std::string& dir) {
  TabletServerOptions o;
  o.fs_data_dir = dir;
  o.rpc_bind_address = "127.0.0.1:0";
  o.rpc_reuse_port = false;  // No other process can share (and steal calls from) the port.
  o.raft_tick_interval_ms = 20;
  o.raft_election_ticks = 5;
  o.block_cache_capacity_bytes = 8 << 20;
  o.memory_limit_bytes = 1LL << 30;
  return o;
}

// The value of the sample `series` (name plus labels, exactly as rendered) in a Prometheus text
// body; -1 if absent.
inline double SampleValue(const std::string& body, const std::string& series) {
  const std::string needle = "\n" + series + " ";
  const size_t pos = body.find(needle);
  if (pos == std::string::npos) return -1;
  return std::strtod(body.c_str() + pos + needle.size(), nullptr);
}

inline std::optional<pb::ErrorDetailPB::Code> DetailCode(const absl::Status& s) {
  std::optional<pb::ErrorDetailPB> d = GetErrorDetail(s);
  if (!d) return std::nullopt;
  return d->code();
}

}  // namespace basalt
