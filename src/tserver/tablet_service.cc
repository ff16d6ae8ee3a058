#include "tserver/tablet_service.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>

#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "cfile/block_manager.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/raft_config.h"
#include "proto/tserver.grpc.pb.h"
#include "proto/tserver.pb.h"
#include "rpc/frame_server.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "server/webserver.h"
#include "tserver/address_book.h"
#include "tserver/replica_report.h"
#include "tserver/request_checks.h"
#include "tserver/scanner.h"
#include "tserver/scanner_manager.h"
#include "tserver/tablet_checksum.h"
#include "tserver/ts_tablet_manager.h"
#include "tserver/tserver_errors.h"

namespace basalt {
namespace {

Counter* const kRowsScanned = MetricRegistry::Global()->GetCounter(
    "basalt_tserver_rows_scanned_total", "Rows returned by scans on this tablet server.");

// The configuration of a CreateTablet request and the members' addresses (where given).
absl::Status ParseConfig(const pb::RaftConfigPB& pb, const std::string& self, RaftConfig* config,
                         std::map<PeerId, std::string>* addresses,
                         std::map<PeerId, HostPort>* host_ports) {
  if (pb.peers_size() == 0) return absl::InvalidArgumentError("config: no peers");
  std::set<std::string> seen;
  for (int i = 0; i < pb.peers_size(); ++i) {
    const pb::RaftPeerPB& p = pb.peers(i);
    const std::string field = StrCat("config.peers[", i, "]");
    if (p.uuid().empty()) return absl::InvalidArgumentError(ToAbsl(StrCat(field, ": empty uuid")));
    if (!seen.insert(p.uuid()).second) {
      return absl::InvalidArgumentError(ToAbsl(StrCat(field, ": repeated uuid ", p.uuid())));
    }
    if (p.member_type() == pb::RaftPeerPB::VOTER) {
      config->voters.push_back(p.uuid());
    } else if (p.member_type() == pb::RaftPeerPB::NON_VOTER) {
      config->learners.push_back(p.uuid());
    } else {
      return absl::InvalidArgumentError(ToAbsl(StrCat(field, ": unknown member_type")));
    }
    if (p.has_address()) {
      if (p.address().host().empty() || p.address().port() == 0 || p.address().port() > 65535) {
        return absl::InvalidArgumentError(ToAbsl(StrCat(field, ": bad address")));
      }
      const HostPort hp = HostPort::FromPB(p.address());
      (*addresses)[p.uuid()] = hp.ToString();
      (*host_ports)[p.uuid()] = hp;
    }  // Without an address: learned later from the master's heartbeat responses.
  }
  if (!seen.contains(self)) {
    return absl::InvalidArgumentError(
        ToAbsl(StrCat("config: does not include this server (", self, ")")));
  }
  *config = NormalizeConfig(std::move(*config));
  return FieldError("config", ValidateConfig(*config));
}

// ---- The data path: Write, Scan, ScannerKeepAlive over either transport ----------------------

// What TabletServerService's data calls do, apart from the transport: gRPC and the frame RPC
// port (docs/frame_rpc.md) both call it. `deadline` is the caller's, at most
// default_rpc_timeout from the call's start. Thread-safe.
class TabletDataCalls {
 public:
  explicit TabletDataCalls(const TabletServiceContext& ctx) : ctx_(ctx) {}

  absl::Status Write(const pb::WriteRequestPB& request, absl::Time deadline,
                     pb::WriteResponsePB* response) {
    BASALT_RETURN_IF_ERROR(CheckTabletId(request.tablet_id()));
    if (!request.has_schema()) return absl::InvalidArgumentError("schema: missing");
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<TabletReplica> replica,
                            ctx_.tablet_manager->Lookup(request.tablet_id()));
    return replica->Write(request, response, deadline);
  }

  // On an error `response` is cleared: nothing of a failed scan reaches the client.
  absl::Status Scan(const pb::ScanRequestPB& request, absl::Time deadline,
                    pb::ScanResponsePB* response) {
    absl::Status s = DoScan(request, deadline, response);
    if (!s.ok()) response->Clear();
    return s;
  }

  absl::Status ScannerKeepAlive(const pb::ScannerKeepAliveRequestPB& request) {
    if (request.scanner_id().empty()) return absl::InvalidArgumentError("scanner_id: empty");
    return ctx_.scanner_manager->Get(request.scanner_id()).status();
  }

 private:
  absl::Status DoScan(const pb::ScanRequestPB& request, absl::Time deadline,
                      pb::ScanResponsePB* response) {
    if (request.has_new_scan_request() == !request.scanner_id().empty()) {
      return absl::InvalidArgumentError(
          "new_scan_request, scanner_id: exactly one of them must be set");
    }
    const size_t batch =
        request.batch_size_bytes() == 0
            ? ctx_.scanner_default_batch_size_bytes
            : std::min(request.batch_size_bytes(), ctx_.scanner_max_batch_size_bytes);
    if (request.has_new_scan_request()) {
      BASALT_RETURN_IF_ERROR(NewScan(request, batch, deadline, response));
    } else {
      BASALT_RETURN_IF_ERROR(ContinueScan(request, batch, response));
    }
    response->set_propagated_timestamp(ctx_.clock->Now().value());
    kRowsScanned->Increment(static_cast<uint64_t>(response->data().num_rows()));
    return absl::OkStatus();
  }

  absl::Status NewScan(const pb::ScanRequestPB& request, size_t batch, absl::Time deadline,
                       pb::ScanResponsePB* response) {
    const pb::NewScanRequestPB& nsr = request.new_scan_request();
    BASALT_RETURN_IF_ERROR(FieldError("new_scan_request", CheckTabletId(nsr.tablet_id())));
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<TabletReplica> replica,
                            ctx_.tablet_manager->Lookup(nsr.tablet_id()));
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> scanner,
                            Scanner::Open(std::move(replica), nsr, deadline));
    BASALT_RETURN_IF_ERROR(scanner->NextBatch(batch, response));
    if (scanner->has_more() && !request.close_scanner()) {
      BASALT_ASSIGN_OR_RETURN(std::string id, ctx_.scanner_manager->Register(std::move(scanner)));
      response->set_scanner_id(id);
    }
    return absl::OkStatus();
  }

  absl::Status ContinueScan(const pb::ScanRequestPB& request, size_t batch,
                            pb::ScanResponsePB* response) {
    const std::string& id = request.scanner_id();
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Scanner> scanner, ctx_.scanner_manager->Get(id));
    absl::MutexLock l(scanner->mu());
    if (request.close_scanner() && request.batch_size_bytes() == 0) {
      ctx_.scanner_manager->Remove(id);
      return absl::OkStatus();
    }
    BASALT_RETURN_IF_ERROR(scanner->Continue(request.call_seq_id(), batch, response));
    if (!scanner->has_more() || request.close_scanner()) {
      ctx_.scanner_manager->Remove(id);
    } else {
      response->set_scanner_id(id);
    }
    return absl::OkStatus();
  }

  const TabletServiceContext ctx_;
};

// ---- TabletServerService ------------------------------------------------------------------

class TabletServerServiceImpl final : public pb::TabletServerService::Service {
 public:
  explicit TabletServerServiceImpl(const TabletServiceContext& ctx) : ctx_(ctx), data_(ctx) {}

  grpc::Status Write(grpc::ServerContext* context, const pb::WriteRequestPB* request,
                     pb::WriteResponsePB* response) override {
    return ToGrpcStatus(data_.Write(*request, Deadline(context), response));
  }
  grpc::Status Scan(grpc::ServerContext* context, const pb::ScanRequestPB* request,
                    pb::ScanResponsePB* response) override {
    return ToGrpcStatus(data_.Scan(*request, Deadline(context), response));
  }
  grpc::Status ScannerKeepAlive(grpc::ServerContext* context,
                                const pb::ScannerKeepAliveRequestPB* request,
                                pb::ScannerKeepAliveResponsePB* response) override {
    return ToGrpcStatus(data_.ScannerKeepAlive(*request));
  }
  grpc::Status ListTablets(grpc::ServerContext* context, const pb::ListTabletsRequestPB* request,
                           pb::ListTabletsResponsePB* response) override {
    for (const auto& r : ctx_.tablet_manager->List()) {
      const std::shared_ptr<const Schema> schema = r->schema();
      ReplicaStatusToPB(r->GetStatus(), ctx_.server_uuid, *ctx_.address_book,
                        request->need_schema_info(), schema.get(), response->add_tablets());
    }
    for (const auto& [id, error] : ctx_.tablet_manager->Failed()) {
      FailedReplicaToPB(id, error, response->add_tablets());
    }
    for (const auto& [id, header] : ctx_.tablet_manager->Tombstones()) {
      TombstoneToPB(header, response->add_tablets());
    }
    if (ctx_.block_manager != nullptr) {
      for (const BlockManager::DirInfo& d : ctx_.block_manager->Dirs()) {
        pb::DataDirStatusPB* out = response->add_data_dirs();
        out->set_path(d.path);
        if (!d.error.ok()) out->set_error(d.error.ToString());
      }
    }
    if (ctx_.wal_dir_state) {
      const auto [path, state] = ctx_.wal_dir_state();
      response->mutable_wal_dir()->set_path(path);
      if (!state.ok()) response->mutable_wal_dir()->set_error(state.ToString());
    }
    return grpc::Status::OK;
  }
  grpc::Status Checksum(grpc::ServerContext* context, const pb::ChecksumRequestPB* request,
                        pb::ChecksumResponsePB* response) override {
    return ToGrpcStatus(DoChecksum(context, *request, response));
  }

 private:
  absl::Time Deadline(const grpc::ServerContext* context) const {
    return RpcDeadline(context, ctx_.default_rpc_timeout);
  }

  absl::Status DoChecksum(grpc::ServerContext* context, const pb::ChecksumRequestPB& request,
                          pb::ChecksumResponsePB* response) {
    BASALT_RETURN_IF_ERROR(CheckTabletId(request.tablet_id()));
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<TabletReplica> replica,
                            ctx_.tablet_manager->Lookup(request.tablet_id()));
    std::optional<HybridTime> ts(request.snap_timestamp() == 0
                                     ? HybridTime::kInvalid
                                     : HybridTime(request.snap_timestamp()));
    BASALT_ASSIGN_OR_RETURN(
        MvccSnapshot snap,
        replica->SnapshotForRead(&ts, RpcDeadline(context, ctx_.default_rpc_timeout)));
    BASALT_ASSIGN_OR_RETURN(TabletChecksum sum, ChecksumTablet(*replica->tablet(), snap));
    // Like a scan at an explicit snapshot: below the ancient history mark the rows may be wrong
    // (docs/tablet.md "History GC"). Checked once the iterator has pinned its stores.
    if (request.snap_timestamp() != 0) {
      BASALT_RETURN_IF_ERROR(replica->tablet()->CheckSnapshotNotTooOld(*ts));
    }
    response->set_checksum(sum.checksum);
    response->set_num_rows(sum.num_rows);
    response->set_snap_timestamp(ts->value());
    return absl::OkStatus();
  }

  const TabletServiceContext ctx_;
  TabletDataCalls data_;
};

// ---- TabletServerAdminService -------------------------------------------------------------

class TabletServerAdminServiceImpl final : public pb::TabletServerAdminService::Service {
 public:
  explicit TabletServerAdminServiceImpl(const TabletServiceContext& ctx) : ctx_(ctx) {}

  grpc::Status CreateTablet(grpc::ServerContext* context, const pb::CreateTabletRequestPB* request,
                            pb::CreateTabletResponsePB* response) override {
    return ToGrpcStatus(DoCreateTablet(*request));
  }
  grpc::Status DeleteTablet(grpc::ServerContext* context, const pb::DeleteTabletRequestPB* request,
                            pb::DeleteTabletResponsePB* response) override {
    absl::Status s = CheckDestUuid(request->dest_uuid(), ctx_.server_uuid);
    if (s.ok()) s = CheckTabletId(request->tablet_id());
    if (s.ok()) {
      ctx_.scanner_manager->RemoveTablet(request->tablet_id());
      std::optional<uint64_t> cas;
      if (request->has_cas_config_index()) cas = request->cas_config_index();
      s = ctx_.tablet_manager->DeleteTablet(request->tablet_id(),
                                            request->delete_type() == pb::TABLET_DATA_TOMBSTONED
                                                ? TsTabletManager::DeleteMode::kTombstone
                                                : TsTabletManager::DeleteMode::kDelete,
                                            cas);
      LOG_IF(INFO, s.ok()) << (request->delete_type() == pb::TABLET_DATA_TOMBSTONED
                                   ? "tombstoned tablet "
                                   : "deleted tablet ")
                           << request->tablet_id() << " (" << request->reason() << ")";
    }
    return ToGrpcStatus(s);
  }
  grpc::Status AlterSchema(grpc::ServerContext* context, const pb::AlterSchemaRequestPB* request,
                           pb::AlterSchemaResponsePB* response) override {
    return ToGrpcStatus(DoAlterSchema(context, *request, response));
  }
  grpc::Status LeaderStepDown(grpc::ServerContext* context,
                              const pb::LeaderStepDownRequestPB* request,
                              pb::LeaderStepDownResponsePB* response) override {
    absl::Status s = CheckDestUuid(request->dest_uuid(), ctx_.server_uuid);
    if (s.ok()) s = CheckTabletId(request->tablet_id());
    if (s.ok()) {
      absl::StatusOr<std::shared_ptr<TabletReplica>> r =
          ctx_.tablet_manager->Lookup(request->tablet_id());
      s = r.ok() ? (*r)->StepDown(request->new_leader_uuid()) : r.status();
    }
    return ToGrpcStatus(s);
  }

 private:
  absl::Status DoCreateTablet(const pb::CreateTabletRequestPB& request) {
    BASALT_RETURN_IF_ERROR(CheckDestUuid(request.dest_uuid(), ctx_.server_uuid));
    BASALT_RETURN_IF_ERROR(CheckTabletId(request.tablet_id()));
    if (request.table_id().empty()) return absl::InvalidArgumentError("table_id: empty");
    absl::StatusOr<Schema> schema = Schema::FromPB(request.schema());
    if (!schema.ok()) return FieldError("schema", schema.status());
    absl::StatusOr<PartitionSchema> ps =
        PartitionSchema::FromPB(request.partition_schema(), *schema);
    if (!ps.ok()) return FieldError("partition_schema", ps.status());
    absl::StatusOr<Partition> partition = Partition::FromPB(request.partition());
    if (!partition.ok()) return FieldError("partition", partition.status());
    if (partition->hash_buckets().size() != ps->hash_levels().size()) {
      return absl::InvalidArgumentError(
          "partition: the number of hash buckets differs from the partition schema's levels");
    }
    RaftConfig config;
    std::map<PeerId, std::string> addresses;
    std::map<PeerId, HostPort> host_ports;
    BASALT_RETURN_IF_ERROR(
        ParseConfig(request.config(), ctx_.server_uuid, &config, &addresses, &host_ports));
    for (const auto& [uuid, hp] : host_ports) ctx_.address_book->Set(uuid, hp);
    TabletReplicaMeta meta;
    meta.tablet_id = request.tablet_id();
    meta.table_id = request.table_id();
    meta.table_name = request.table_name();
    meta.partition = std::move(*partition);
    meta.partition_schema = std::move(*ps);
    // The master lists first the replica it wants to lead (PlacementPolicy::PutLeaderFirst).
    const PeerId first_campaigner =
        request.config().peers_size() > 0 ? request.config().peers(0).uuid() : PeerId();
    BASALT_RETURN_IF_ERROR(ctx_.tablet_manager->CreateTablet(std::move(meta), *schema, config,
                                                             addresses, first_campaigner));
    LOG(INFO) << "created tablet " << request.tablet_id() << " of table " << request.table_name()
              << " with " << ConfigToString(config);
    return absl::OkStatus();
  }

  absl::Status DoAlterSchema(grpc::ServerContext* context, const pb::AlterSchemaRequestPB& request,
                             pb::AlterSchemaResponsePB* response) {
    BASALT_RETURN_IF_ERROR(CheckDestUuid(request.dest_uuid(), ctx_.server_uuid));
    BASALT_RETURN_IF_ERROR(CheckTabletId(request.tablet_id()));
    if (!request.has_schema()) return absl::InvalidArgumentError("schema: missing");
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<TabletReplica> replica,
                            ctx_.tablet_manager->Lookup(request.tablet_id()));
    BASALT_ASSIGN_OR_RETURN(uint32_t version,
                            replica->AlterSchema(request.schema(), request.new_table_name(),
                                                 RpcDeadline(context, ctx_.default_rpc_timeout)));
    response->set_schema_version(version);
    return absl::OkStatus();
  }

  const TabletServiceContext ctx_;
};

// A frame RPC handler of TabletServerService method `name`: parses the request as a Req, runs
// `call` under the client's deadline (at most `default_timeout` from now), serializes the
// response; recorded in the RPC metrics.
template <typename Req, typename Resp, typename Call>
FrameServer::Handler FrameHandler(const std::string& name, absl::Duration default_timeout,
                                  Call call) {
  return WithRpcMetrics(
      StrCat("frame:/basalt.pb.TabletServerService/", name),
      [default_timeout, call](std::string_view bytes, absl::Time deadline,
                              std::string* out) -> absl::Status {
        Req req;
        Resp resp;
        if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
          return absl::InvalidArgumentError("request: not a valid message");
        }
        BASALT_RETURN_IF_ERROR(call(req, std::min(deadline, absl::Now() + default_timeout), &resp));
        if (!resp.SerializeToString(out)) {
          return absl::InternalError("response: cannot be serialized");
        }
        return absl::OkStatus();
      });
}

}  // namespace

FrameServer::Handler WithRpcMetrics(const std::string& method, FrameServer::Handler handler) {
  const RpcMethodMetrics metrics = GetRpcMethodMetrics(method);
  return [metrics, handler = std::move(handler)](std::string_view bytes, absl::Time deadline,
                                                 std::string* out) -> absl::Status {
    const absl::Time start = absl::Now();
    metrics.requests->Increment();
    metrics.in_flight->Add(1);
    absl::Status s = handler(bytes, deadline, out);
    if (!s.ok()) metrics.errors->Increment();
    metrics.duration->ObserveDuration(absl::Now() - start);
    metrics.in_flight->Add(-1);
    return s;
  };
}

void RegisterTabletFrameMethods(const TabletServiceContext& ctx, FrameServer* server) {
  auto data = std::make_shared<TabletDataCalls>(ctx);
  server->Register(pb::FRAME_WRITE, FrameHandler<pb::WriteRequestPB, pb::WriteResponsePB>(
                                        "Write", ctx.default_rpc_timeout,
                                        [data](const pb::WriteRequestPB& req, absl::Time deadline,
                                               pb::WriteResponsePB* resp) {
                                          return data->Write(req, deadline, resp);
                                        }));
  server->Register(pb::FRAME_SCAN, FrameHandler<pb::ScanRequestPB, pb::ScanResponsePB>(
                                       "Scan", ctx.default_rpc_timeout,
                                       [data](const pb::ScanRequestPB& req, absl::Time deadline,
                                              pb::ScanResponsePB* resp) {
                                         return data->Scan(req, deadline, resp);
                                       }));
  server->Register(
      pb::FRAME_SCANNER_KEEP_ALIVE,
      FrameHandler<pb::ScannerKeepAliveRequestPB, pb::ScannerKeepAliveResponsePB>(
          "ScannerKeepAlive", ctx.default_rpc_timeout,
          [data](const pb::ScannerKeepAliveRequestPB& req, absl::Time,
                 pb::ScannerKeepAliveResponsePB*) { return data->ScannerKeepAlive(req); }));
}

std::unique_ptr<grpc::Service> NewTabletServerService(const TabletServiceContext& ctx) {
  return std::make_unique<TabletServerServiceImpl>(ctx);
}

std::unique_ptr<grpc::Service> NewTabletServerAdminService(const TabletServiceContext& ctx) {
  return std::make_unique<TabletServerAdminServiceImpl>(ctx);
}

}  // namespace basalt
