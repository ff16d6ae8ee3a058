// `basalt tserver list` and `basalt master list`.

#include <gflags/gflags.h>

#include <algorithm>

#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"
#include "tools/master_rpc.h"
#include "tools/tool_common.h"

namespace basalt::tools {

namespace {

std::string Address(const pb::HostPortPB& hp) {
  return hp.host().empty() ? "" : StrCat(hp.host(), ":", hp.port());
}

absl::Status ListTabletServers(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(TableWriter::Format format, OutputFormat());
  pb::ListTabletServersResponsePB resp;
  BASALT_RETURN_IF_ERROR(CallMaster(ctx.args[0], &pb::MasterService::Stub::ListTabletServers,
                                    pb::ListTabletServersRequestPB(), &resp));
  std::vector<const pb::ListTabletServersResponsePB::ServerPB*> servers;
  for (const auto& s : resp.servers()) servers.push_back(&s);
  std::sort(servers.begin(), servers.end(),
            [](auto* a, auto* b) { return Address(a->rpc_address()) < Address(b->rpc_address()); });
  TableWriter w(format,
                {"uuid", "rpc_address", "http_address", "live", "ms_since_heartbeat", "replicas"},
                ctx.out);
  for (const auto* s : servers) {
    w.AddRow({Cell::String(s->uuid()), Cell::String(Address(s->rpc_address())),
              Cell::String(Address(s->http_address())), Cell::Bool(s->live()),
              Cell::Number(std::to_string(s->millis_since_heartbeat())),
              Cell::Number(std::to_string(s->num_replicas()))});
  }
  w.Finish();
  return absl::OkStatus();
}

absl::Status ListMasters(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(TableWriter::Format format, OutputFormat());
  pb::ListMastersResponsePB resp;
  BASALT_RETURN_IF_ERROR(CallMaster(ctx.args[0], &pb::MasterService::Stub::ListMasters,
                                    pb::ListMastersRequestPB(), &resp));
  TableWriter w(format, {"uuid", "rpc_address", "http_address", "role", "error"}, ctx.out);
  for (const auto& m : resp.masters()) {
    w.AddRow({Cell::String(m.uuid()), Cell::String(Address(m.rpc_address())),
              Cell::String(Address(m.http_address())), Cell::String(pb::RaftRolePB_Name(m.role())),
              Cell::String(m.error())});
  }
  w.Finish();
  return absl::OkStatus();
}

}  // namespace

Command TserverCommand() {
  return {"tserver",
          "Operate on tablet servers",
          {{"list",
            "List the tablet servers a cluster's master knows",
            "",
            {MasterAddressesArg()},
            {"format"},
            ListTabletServers}}};
}

Command MasterCommand() {
  return {"master",
          "Operate on masters",
          {{"list",
            "List a cluster's masters and their Raft roles",
            "",
            {MasterAddressesArg()},
            {"format"},
            ListMasters}}};
}

}  // namespace basalt::tools
