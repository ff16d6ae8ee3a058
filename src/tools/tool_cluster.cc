// `basalt tserver list`, `basalt tserver state enter_maintenance|exit_maintenance` and
// `basalt master list`.

#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"
#include "tools/master_rpc.h"
#include "tools/tool_common.h"

namespace basalt::tools {

namespace {

std::string Address(const pb::HostPortPB& hp) {
  return hp.host().empty() ? "" : HostPort::FromPB(hp).ToString();
}

absl::Status ListTservers(const ActionContext& ctx) {
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

// Calls a membership RPC, retrying while the group has no ready leader (an election, or the
// leader handing over because it is the master being removed) until --timeout_ms.
template <typename Req, typename Resp>
absl::Status CallMembership(const std::string& master_addresses,
                            grpc::Status (pb::MasterService::Stub::*method)(grpc::ClientContext*,
                                                                            const Req&, Resp*),
                            const Req& req, Resp* resp) {
  const auto deadline = OperationDeadline();
  for (;;) {
    absl::Status s = CallMaster(master_addresses, method, req, resp);
    if (!absl::IsUnavailable(s) || std::chrono::system_clock::now() >= deadline) return s;
    // Bounded by --timeout_ms: the group elects a leader within seconds.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// The masters' addresses as --master_addresses wants them.
std::string MasterList(const pb::ListMastersResponsePB& resp) {
  std::string out;
  for (const auto& m : resp.masters()) {
    StrAppend(&out, out.empty() ? "" : ",", Address(m.rpc_address()));
  }
  return out;
}

absl::Status AddMaster(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(HostPort address, ParseHostPort(ctx.args[1], 7051));
  pb::AddMasterRequestPB req;
  address.ToPB(req.mutable_rpc_address());
  pb::AddMasterResponsePB resp;
  BASALT_RETURN_IF_ERROR(
      CallMembership(ctx.args[0], &pb::MasterService::Stub::AddMaster, req, &resp));
  *ctx.out << "added master " << resp.uuid() << " at " << address.ToString()
           << " as a non-voter; waiting until it has the catalog and votes" << std::endl;
  // The leader promotes it once it has caught up; ListMasters reports its role.
  const std::string all = StrCat(ctx.args[0], ",", address.ToString());
  std::string role = "UNKNOWN_ROLE";
  const auto deadline = OperationDeadline();
  for (;;) {
    pb::ListMastersResponsePB masters;
    if (CallMaster(all, &pb::MasterService::Stub::ListMasters, pb::ListMastersRequestPB(), &masters)
            .ok()) {
      for (const auto& m : masters.masters()) {
        if (m.uuid() == resp.uuid()) role = pb::RaftRolePB_Name(m.role());
      }
      if (role == "FOLLOWER" || role == "LEADER") {
        *ctx.out << "master " << resp.uuid() << " is a voter (" << role << ")\n"
                 << "give every master and tablet server --master_addresses=" << MasterList(masters)
                 << " before their next restart" << std::endl;
        return absl::OkStatus();
      }
    }
    if (std::chrono::system_clock::now() >= deadline) break;
    // Bounded by --timeout_ms.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return absl::DeadlineExceededError(
      StrCat("master ", resp.uuid(), " was added but is not a voter yet (role ", role,
             "); it is promoted once it has caught up: see `basalt master list`"));
}

absl::Status RemoveMaster(const ActionContext& ctx) {
  pb::RemoveMasterRequestPB req;
  // host:port, or a uuid (32 hex digits, no colon).
  if (ctx.args[1].find(':') != std::string::npos) {
    BASALT_ASSIGN_OR_RETURN(HostPort address, ParseHostPort(ctx.args[1], 7051));
    address.ToPB(req.mutable_rpc_address());
  } else {
    req.set_uuid(ctx.args[1]);
  }
  pb::RemoveMasterResponsePB resp;
  BASALT_RETURN_IF_ERROR(
      CallMembership(ctx.args[0], &pb::MasterService::Stub::RemoveMaster, req, &resp));
  *ctx.out << "removed master " << resp.uuid() << " from the catalog group; stop it and wipe its "
           << "directories before reusing its host" << std::endl;
  pb::ListMastersResponsePB masters;
  if (CallMaster(ctx.args[0], &pb::MasterService::Stub::ListMasters, pb::ListMastersRequestPB(),
                 &masters)
          .ok()) {
    *ctx.out << "give every master and tablet server --master_addresses=" << MasterList(masters)
             << " before their next restart" << std::endl;
  }
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
            ListTservers}},
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
            ListMasters},
           {"add",
            "Add a master to a running group of masters",
            "Start the new master first, with --master_addresses naming every master of the group "
            "and itself (it then waits to join). The leader master adds it as a non-voter, sends "
            "it the catalog, and promotes it to voter once it has caught up; this waits for that "
            "(up to --timeout_ms). Then give every master and tablet server the new "
            "--master_addresses before its next restart.",
            {MasterAddressesArg(), {"master_address", "The new master's RPC address, host:port"}},
            {"timeout_ms"},
            AddMaster},
           {"remove",
            "Remove a master from a running group of masters",
            "The master leaves the catalog group's Raft configuration (a leader hands its "
            "leadership to another master first). Stop the removed master afterwards and wipe "
            "its directories before reusing its host; give every remaining master and tablet "
            "server the new --master_addresses before its next restart. The group's last voter "
            "cannot be removed.",
            {MasterAddressesArg(),
             {"master", "The master to remove: its RPC address (host:port) or its uuid"}},
            {"timeout_ms"},
            RemoveMaster}}};
}

}  // namespace basalt::tools
