// `basalt tserver list`, `basalt tserver state enter_maintenance|exit_maintenance` and
// `basalt master list`.

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
  TableWriter w(
      format,
      {"uuid", "rpc_address", "http_address", "live", "ms_since_heartbeat", "replicas", "state"},
      ctx.out);
  for (const auto* s : servers) {
    w.AddRow({Cell::String(s->uuid()), Cell::String(Address(s->rpc_address())),
              Cell::String(Address(s->http_address())), Cell::Bool(s->live()),
              Cell::Number(std::to_string(s->millis_since_heartbeat())),
              Cell::Number(std::to_string(s->num_replicas())),
              Cell::String(s->maintenance_mode() ? "MAINTENANCE_MODE" : "NONE")});
  }
  w.Finish();
  return absl::OkStatus();
}

absl::Status ChangeState(const ActionContext& ctx, pb::ChangeTServerStateRequestPB::Change change) {
  pb::ChangeTServerStateRequestPB req;
  req.set_ts_uuid(ctx.args[1]);
  req.set_change(change);
  pb::ChangeTServerStateResponsePB resp;
  BASALT_RETURN_IF_ERROR(
      CallMaster(ctx.args[0], &pb::MasterService::Stub::ChangeTServerState, req, &resp));
  *ctx.out << "Tablet server " << ctx.args[1]
           << (change == pb::ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE
                   ? " is in maintenance mode: its replicas are not replaced while it is down"
                   : " left maintenance mode: its replicas are replaced again if it fails")
           << "\n";
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
            ListTabletServers}},
          {{"state",
            "Set a tablet server's state",
            {{"enter_maintenance",
              "Put a tablet server in maintenance mode (for a planned restart)",
              "While in maintenance mode, the server's replicas are never considered failed: "
              "nothing is evicted or re-replicated however long it is down, and it receives no "
              "replacement replicas. The state is kept in the catalog until exit_maintenance.",
              {MasterAddressesArg(), {"ts_uuid", "The tablet server's uuid (see tserver list)"}},
              {},
              [](const ActionContext& ctx) {
                return ChangeState(ctx, pb::ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE);
              }},
             {"exit_maintenance",
              "Take a tablet server out of maintenance mode",
              "Its replicas are replaced again when their leader reports them failed.",
              {MasterAddressesArg(), {"ts_uuid", "The tablet server's uuid (see tserver list)"}},
              {},
              [](const ActionContext& ctx) {
                return ChangeState(ctx, pb::ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE);
              }}}}}};
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
