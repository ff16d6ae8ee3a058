// `basalt tablet`: leader_step_down asks a tablet's current leader to step down (docs/cli.md);
// the change_config group is in tool_tablet_change_config.cc.

#include <gflags/gflags.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/tablet_rpc.h"
#include "tools/tool_common.h"

DEFINE_string(new_leader_uuid, "",
              "UUID of the replica leader_step_down transfers leadership to; empty: any replica "
              "may win the election that follows.");

namespace basalt::tools {

namespace {

absl::Status LeaderStepDown(const ActionContext& ctx) {
  const std::string& tablet_id = ctx.args[1];
  BASALT_ASSIGN_OR_RETURN(LeaderReplica leader, FindLeader(ctx.args[0], tablet_id));
  BASALT_RETURN_IF_ERROR(
      StepDownLeader(leader, tablet_id, FLAGS_new_leader_uuid, OperationDeadline()));
  *ctx.out << "Leader " << leader.uuid << " (" << leader.address << ", term " << leader.term
           << ") of tablet " << tablet_id << " stepped down"
           << (FLAGS_new_leader_uuid.empty() ? "" : StrCat(" in favour of ", FLAGS_new_leader_uuid))
           << "\n";
  return absl::OkStatus();
}

}  // namespace

Command TabletCommand() {
  return {"tablet",
          "Operate on tablets",
          {{"leader_step_down",
            "Make a tablet's leader step down",
            "Finds the replica that leads the tablet (asking every live tablet server) and asks "
            "it to step down; with --new_leader_uuid, to transfer leadership to that replica.",
            {MasterAddressesArg(), {"tablet_id", "The tablet's id (see table describe)"}},
            {"new_leader_uuid"},
            LeaderStepDown}},
          {TabletChangeConfigGroup()}};
}

}  // namespace basalt::tools
