#pragma once

// Private to src/tools (.cc files only): calls a MasterService RPC directly, for what the
// client API does not expose (partitioning and tablet locations, the list of masters).

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "common/partition.h"
#include "common/schema.h"
#include "common/strings.h"
#include "proto/master.grpc.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "tools/tool_common.h"

namespace basalt::tools {

// Tries each master of `master_addresses` in turn (followers refuse most calls with UNAVAILABLE)
// until one answers OK or with another error (the leader's answer, returned as is); returns the
// last error otherwise (naming the master when it could not be reached).
// Each call has the --timeout_ms deadline.
template <typename Req, typename Resp>
absl::Status CallMaster(const std::string& master_addresses,
                        grpc::Status (pb::MasterService::Stub::*method)(grpc::ClientContext*,
                                                                        const Req&, Resp*),
                        const Req& req, Resp* resp) {
  absl::Status last = absl::InvalidArgumentError("no master address given");
  for (const auto& a : absl::StrSplit(master_addresses, ',')) {
    if (a.empty()) continue;
    auto stub = pb::MasterService::NewStub(NewChannel(std::string(a)));
    grpc::ClientContext ctx;
    ctx.set_deadline(OperationDeadline());
    resp->Clear();
    last = FromGrpcStatus((stub.get()->*method)(&ctx, req, resp));
    if (!absl::IsUnavailable(last) && !absl::IsDeadlineExceeded(last)) return last;
    last = absl::Status(last.code(), StrCat("master ", std::string(a), ": ", last.message()));
  }
  return last;
}

// A table's schema and partitioning as the master stores them (with column ids and the
// partition schema the client API does not expose).
struct MasterTableSchema {
  pb::GetTableSchemaResponsePB pb;
  Schema schema;
  PartitionSchema partition_schema;
};

// GetTableSchema of `table`, decoded. CallMaster's errors; the decoders' (a master answering
// garbage is INVALID_ARGUMENT / DATA_LOSS, never a crash).
absl::StatusOr<MasterTableSchema> GetMasterTableSchema(const std::string& master_addresses,
                                                       const std::string& table);

}  // namespace basalt::tools
