// `basalt tablet change_config add_replica|remove_replica|change_replica_type|move_replica`:
// membership changes of one tablet's Raft group, made by its leader (docs/cli.md).
//
// Every verb checks its arguments first (no RPC), then lists the tablet servers (master), finds
// the tablet's leader (ListTablets on every live server), reads the leader's consensus state
// (GetConsensusState) and checks the change against both (change_config_checks.h): bad input
// fails there, naming it, with nothing changed. The change goes to the leader
// (ConsensusService.ChangeConfig) with the committed configuration's index as cas_config_index,
// so that a change someone else made in between fails the call rather than being acted on with a
// stale view. ChangeConfig answers once the new configuration is committed.
//
// move_replica is MoveReplica (replica_move.h, shared with `cluster rebalance`): four steps, each
// within --timeout_ms, the steps' lines on stdout and the waiting on stderr.

#include <string>

#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tools/change_config_checks.h"
#include "tools/replica_move.h"
#include "tools/tool_common.h"

namespace basalt::tools {

namespace {

// What add_replica, remove_replica and change_replica_type did, for stdout.
std::string Report(const TabletView& view, const ConfigChange& change, uint64_t index) {
  const pb::RaftPeerPB* before = FindPeer(view.cstate.committed_config(), change.ts_uuid);
  switch (change.type) {
    case pb::ADD_PEER:
      return StrCat(
          "Added tablet server ", change.ts_uuid, " (", ServerAddress(view, change.ts_uuid),
          ") to tablet ", change.tablet_id,
          change.member_type == pb::RaftPeerPB::VOTER ? " as a learner" : " as a NON_VOTER",
          " (config index ", index, "); its leader copies the tablet to it",
          change.member_type == pb::RaftPeerPB::VOTER
              ? " and promotes it to VOTER once it has caught up"
              : "",
          "\n");
    case pb::REMOVE_PEER:
      return StrCat("Removed tablet server ", change.ts_uuid, " from tablet ", change.tablet_id,
                    " (config index ", index, ")\n");
    default:
      return StrCat("Made the replica of tablet ", change.tablet_id, " on tablet server ",
                    change.ts_uuid, " a ", ReplicaTypeName(change.member_type), " (was ",
                    before == nullptr ? "not a member" : ReplicaTypeName(before->member_type()),
                    "; config index ", index, ")\n");
  }
}

// add_replica, remove_replica, change_replica_type: one checked change.
absl::Status RunOneChange(const ActionContext& ctx, const ConfigChange& change) {
  BASALT_ASSIGN_OR_RETURN(TabletView view, LoadView(ctx.args[0], change.tablet_id));
  BASALT_RETURN_IF_ERROR(CheckChange(change, view.servers, view.cstate));
  BASALT_ASSIGN_OR_RETURN(uint64_t index,
                          SendChange(view, change, absl::FromChrono(OperationDeadline())));
  *ctx.out << Report(view, change, index);
  return absl::OkStatus();
}

absl::Status AddReplica(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(pb::RaftPeerPB::MemberType type, ParseReplicaType(ctx.args[3]));
  return RunOneChange(ctx, ConfigChange{pb::ADD_PEER, ctx.args[1], ctx.args[2], type});
}

absl::Status RemoveReplica(const ActionContext& ctx) {
  return RunOneChange(ctx, ConfigChange{pb::REMOVE_PEER, ctx.args[1], ctx.args[2]});
}

absl::Status ChangeReplicaType(const ActionContext& ctx) {
  BASALT_ASSIGN_OR_RETURN(pb::RaftPeerPB::MemberType type, ParseReplicaType(ctx.args[3]));
  return RunOneChange(ctx, ConfigChange{pb::MODIFY_PEER, ctx.args[1], ctx.args[2], type});
}

absl::Status MoveReplicaAction(const ActionContext& ctx) {
  const MoveLog log{[&ctx](const std::string& line) { *ctx.out << line; },
                    [&ctx](const std::string& line) { *ctx.err << line; }};
  return MoveReplica(ctx.args[0], ctx.args[1], ctx.args[2], ctx.args[3], log);
}

ArgDef TabletIdArg() { return {"tablet_id", "The tablet's id (see table describe)"}; }
ArgDef ReplicaTypeArg() { return {"replica_type", "VOTER or NON_VOTER"}; }

}  // namespace

Command TabletChangeConfigGroup() {
  return {
      "change_config",
      "Change a tablet's Raft configuration: add, remove, promote, demote or move a replica",
      {{"add_replica",
        "Add a replica of a tablet on a tablet server",
        "Asks the tablet's leader to add the tablet server. The new replica joins as a learner "
        "and gets a copy of the tablet from the leader; as VOTER, the leader promotes it once it "
        "has caught up. Returns once the configuration with the learner is committed.",
        {MasterAddressesArg(),
         TabletIdArg(),
         {"ts_uuid", "The tablet server to add (see tserver list); it must be live"},
         ReplicaTypeArg()},
        {"timeout_ms"},
        AddReplica},
       {"remove_replica",
        "Remove a tablet server's replica of a tablet",
        "Asks the tablet's leader to remove the replica. The leader's own replica cannot be "
        "removed: move leadership first (leader_step_down), or use move_replica.",
        {MasterAddressesArg(), TabletIdArg(), {"ts_uuid", "The tablet server to remove"}},
        {"timeout_ms"},
        RemoveReplica},
       {"change_replica_type",
        "Promote a replica to VOTER or demote it to NON_VOTER",
        "Asks the tablet's leader to change the replica's member type.",
        {MasterAddressesArg(),
         TabletIdArg(),
         {"ts_uuid", "The tablet server of the replica"},
         ReplicaTypeArg()},
        {"timeout_ms"},
        ChangeReplicaType},
       {"move_replica",
        "Move a voter replica of a tablet from one tablet server to another",
        "Adds a replica on to_ts_uuid, waits until it is a VOTER of the committed configuration "
        "(progress on stderr), moves leadership away from from_ts_uuid if it leads, then removes "
        "the replica on from_ts_uuid. Each step has --timeout_ms; if one fails, the error says "
        "how to finish or undo the move.",
        {MasterAddressesArg(),
         TabletIdArg(),
         {"from_ts_uuid", "The tablet server whose replica moves"},
         {"to_ts_uuid", "The tablet server that gets the replica; it must be live"}},
        {"timeout_ms"},
        MoveReplicaAction}}};
}

}  // namespace basalt::tools
